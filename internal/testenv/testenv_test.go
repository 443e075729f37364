package testenv

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMain(m *testing.M) { os.Exit(MainParallel(m, 7)) }

// TestMainParallel: MainParallel raised -test.parallel to its n, unless
// the command line gave one (then it is left as given).
func TestMainParallel(t *testing.T) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given {
		t.Skip("-test.parallel given: MainParallel leaves it")
	}
	want := strconv.Itoa(max(7, runtime.GOMAXPROCS(0))) // never lowered
	assert.Equal(t, want, flag.Lookup("test.parallel").Value.String())
}

func TestScale(t *testing.T) {
	if Full() {
		assert.Equal(t, 40, Scale(4, 40))
	} else {
		assert.Equal(t, 4, Scale(4, 40))
	}
}

// TestMainFreesLazily: TestMain (through MainParallel and Main) re-ran the
// binary with the runtime's lazy freeing in GODEBUG, the setting kept
// once, after what GODEBUG held before.
func TestMainFreesLazily(t *testing.T) {
	godebug := os.Getenv("GODEBUG")
	assert.Contains(t, godebug, "madvdontneed=", "the process was not re-executed with the setting")
	assert.Equal(t, 1, strings.Count(godebug, "madvdontneed="), godebug)
}
