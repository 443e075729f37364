package engine

// WithResultParts is c with n partitions in a hashed aggregation's result
// stage (0: the engine's choice), for the benchmarks outside the package.
func WithResultParts(c Config, n int) Config {
	c.resultParts = n
	return c
}
