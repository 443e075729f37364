// Package testenv holds the switches that decide which tests run where.
//
// `go test ./...` is the developer's loop and must stay short on a 2-core
// machine; CI runs every test besides. A test that takes long (a server
// outage waited out, several kill -9 restarts, a property test's full
// set of seeds) calls Long, or reads Full, so that the plain command
// leaves it out (or runs a smaller share of it) and `.ci/run`, which sets
// SABER_HX_LONG_TESTS=1, runs all of it.
package testenv

import (
	"os"
	"testing"
)

// LongVar is the environment variable that turns the long tests on.
const LongVar = "SABER_HX_LONG_TESTS"

// Full reports whether the long tests run: SABER_HX_LONG_TESTS=1.
func Full() bool { return os.Getenv(LongVar) == "1" }

// Long skips t unless the long tests run, saying how to run it.
func Long(t testing.TB) {
	t.Helper()
	if !Full() {
		t.Skipf("a long test: runs with %s=1 (as .ci/run sets)", LongVar)
	}
}

// Scale is n where the long tests run, else short (a property test's
// seeds or rounds: the plain run checks a share, CI all of them).
func Scale(short, n int) int {
	if Full() {
		return n
	}
	return short
}
