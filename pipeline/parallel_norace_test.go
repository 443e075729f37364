//go:build !race

package pipeline

// parallelTests is how many tests TestMain runs at once: more than there
// are cores, as many wait on Kafka and Redis servers.
const parallelTests = 4
