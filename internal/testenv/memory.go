package testenv

import (
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// lazyFree is the GODEBUG setting that has the Go runtime give freed
// memory back to the kernel with MADV_FREE, which the kernel reclaims
// only under memory pressure, instead of MADV_DONTNEED (Go's default on
// Linux), which drops the pages at once.
const lazyFree = "madvdontneed=0"

// Main runs m (a package's TestMain: os.Exit(testenv.Main(m))) in a
// process whose runtime frees memory lazily: it re-executes the test
// binary once with lazyFree added to GODEBUG, a setting the runtime reads
// only at start. A package's tests make and drop thousands of engines;
// memory the runtime gave back and took again cost a page fault per page,
// microseconds each on a VM, and was a third of the suite's system time
// (docs/performance.md, "The test suite"). Where the binary cannot be
// re-executed, or GODEBUG already names the setting, the tests run as
// they are: GODEBUG=madvdontneed=1 keeps the process (under a debugger)
// and Go's default.
//
// It also collects garbage at testGCPercent rather than Go's 100, unless
// GOGC is set: a test process lives seconds and its live heap is small,
// so the collections that keep its peak near twice that heap cost CPU and
// spare memory that nothing else wants.
func Main(m *testing.M) int {
	if reexecLazyFree() {
		return 1 // not reached: Exec replaced the process
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(testGCPercent)
	}
	return m.Run()
}

// testGCPercent is the tests' GOGC: at 400 the engine's, the kernels'
// and the SQL compiler's tests took 15 to 20% less CPU than at 100
// (docs/performance.md, "The test suite").
const testGCPercent = 400

// reexecVar marks the re-executed process.
const reexecVar = "SABER_HX_TEST_REEXEC"

// reexecLazyFree re-executes the process with lazyFree in GODEBUG, unless
// GODEBUG already sets madvdontneed; it returns only where it did not.
func reexecLazyFree() bool {
	godebug := os.Getenv("GODEBUG")
	if strings.Contains(godebug, "madvdontneed=") || os.Getenv(reexecVar) != "" {
		return false // set, or set by us and lost: never a second time
	}
	exe, err := os.Executable()
	if err != nil {
		return false
	}
	if godebug != "" {
		godebug += ","
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") })
	env = append(env, "GODEBUG="+godebug+lazyFree, reexecVar+"=1")
	return syscall.Exec(exe, os.Args, env) == nil
}
