package engine

import (
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// testLabel is the pprof label that parallel gives a test's goroutine.
const testLabel = "saber-hx-test"

// parallelTests holds the names of the tests parallel labeled.
var parallelTests sync.Map

// parallel runs t beside the package's other parallel tests (t.Parallel)
// and labels its goroutine with its name (a pprof label), a label every
// goroutine it starts inherits, its engines' and its subtests' too: the
// goroutines it leaves behind are told from the other tests'
// (assertNoLeak). A test that measures time or allocations, sets
// package-level state or the environment, or whose outcome a loaded
// machine sways, stays sequential: the sequential tests run alone, before
// the parallel ones.
//
// A test run as another's subtest (TestGPUUnpackInline runs some with an
// environment variable set) runs as its parent does.
func parallel(t *testing.T) {
	t.Helper()
	if strings.Contains(t.Name(), "/") {
		return
	}
	t.Parallel()
	parallelTests.Store(t.Name(), true)
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels(testLabel, t.Name())))
}

// isParallel reports whether parallel labeled test name (a top-level test).
func isParallel(name string) bool {
	_, ok := parallelTests.Load(name)
	return ok
}

// startedGoroutines is the number of goroutines labeled with test name
// but its own and its subtests' (those that testing.tRunner runs), and
// their stacks.
func startedGoroutines(name string) (int, string) {
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		panic(err)
	}
	label := fmt.Sprintf("# labels: {%q:%q}\n", testLabel, name)
	_, recs, _ := strings.Cut(b.String(), "\n") // "goroutine profile: total n"
	n := 0
	var stacks strings.Builder
	for rec := range strings.SplitSeq(recs, "\n\n") {
		if !strings.Contains(rec, label) || strings.Contains(rec, "testing.tRunner") {
			continue
		}
		count, _, _ := strings.Cut(rec, " @ ")
		c, err := strconv.Atoi(count)
		if err != nil {
			panic(fmt.Sprintf("a goroutine profile's record: %q", rec))
		}
		n += c
		stacks.WriteString(rec + "\n\n")
	}
	return n, stacks.String()
}

// TestStartedGoroutines: startedGoroutines counts the goroutines a
// labeled test started, not the test's own, nor another test's.
func TestStartedGoroutines(t *testing.T) {
	parallel(t)
	stop := make(chan struct{})
	done := make(chan struct{}, 2)
	for range 2 {
		go func() {
			<-stop
			done <- struct{}{}
		}()
	}
	n, stacks := startedGoroutines(t.Name())
	assert.Equal(t, 2, n, stacks)
	assert.Zero(t, func() int { n, _ := startedGoroutines("TestNoSuchTest"); return n }())
	close(stop)
	<-done
	<-done
	assertNoLeak(t, 0)
}
