package testenv

import "slices"

// Append is append that doubles a full slice's capacity. A test that
// collects an engine's output batch by batch into one slice appends
// megabytes: append's growth by a quarter past 256 elements copied them
// several times over, much of some tests' time.
func Append[T any](s []T, v ...T) []T {
	if cap(s)-len(s) < len(v) {
		s = slices.Grow(s, max(len(s), len(v)))
	}
	return append(s, v...)
}
