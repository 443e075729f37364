//go:build race

package pipeline

// parallelTests is the least number of tests TestMain runs at once:
// under the race detector, whose instrumented code keeps the cores busy,
// 1 leaves -test.parallel at its default, GOMAXPROCS (MainParallel never
// lowers it). CI's race pass once ran four of these at once beside other
// packages, and a test waiting 10 s on a commit every second saw none.
const parallelTests = 1
