package cpu

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// settleGoroutines waits until the goroutine count drops to want or the
// deadline passes, and returns the last count seen.
func settleGoroutines(want int) int {
	deadline := time.Now().Add(2 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stableGoroutines returns the goroutine count once goroutines left over by
// earlier tests have finished exiting (two equal samples 10ms apart).
func stableGoroutines() int {
	prev := runtime.NumGoroutine()
	for range 100 {
		time.Sleep(10 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == prev {
			return n
		}
		prev = n
	}
	return prev
}

// skipIfCannotPin skips the test when this environment forbids changing
// thread affinity (seccomp, restricted containers). It probes on a throwaway
// locked goroutine, whose thread dies with it.
func skipIfCannotPin(t *testing.T, cpu int) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the pinned thread is discarded
		errc <- PinCurrentThread(cpu)
	}()
	if err := <-errc; err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
			t.Skipf("cannot pin threads here: %v", err)
		}
		require.NoError(t, err, "probe pin to CPU %d", cpu)
	}
}

func TestAllowedCPUs(t *testing.T) {
	cpus := AllowedCPUs()
	require.NotEmpty(t, cpus)
	assert.True(t, slices.IsSorted(cpus), "not sorted: %v", cpus)
	assert.Len(t, slices.Compact(slices.Clone(cpus)), len(cpus), "duplicates: %v", cpus)
	assert.GreaterOrEqual(t, cpus[0], 0)
	// The runtime sizes GOMAXPROCS from the same startup mask.
	assert.Len(t, cpus, runtime.NumCPU())

	cpus[0] = -42
	assert.NotEqual(t, -42, AllowedCPUs()[0], "AllowedCPUs must return a copy")
}

func TestPinnedWorkersHaveOneCPUMask(t *testing.T) {
	allowed := AllowedCPUs()
	skipIfCannotPin(t, allowed[0])

	workers := min(len(allowed), 4) + 1 // +1 wraps around the CPU list
	masks := make([][]int, workers)
	var warns []string
	var mu sync.Mutex
	g, err := Start(Options{
		Workers: workers,
		Pin:     true,
		Warn: func(msg string) {
			mu.Lock()
			defer mu.Unlock()
			warns = append(warns, msg)
		},
	}, func(w int) {
		m, err := CurrentThreadCPUs()
		assert.NoError(t, err)
		masks[w] = m
	})
	require.NoError(t, err)
	g.Wait()

	assert.Empty(t, warns)
	pinned := g.Pinned()
	require.Len(t, pinned, workers)
	for w := range workers {
		want := allowed[w%len(allowed)]
		assert.Equal(t, want, pinned[w], "worker %d", w)
		assert.Equal(t, []int{want}, masks[w], "worker %d thread mask", w)
	}
}

func TestUnpinnedWorkersKeepAllowedMask(t *testing.T) {
	const workers = 3
	masks := make([][]int, workers)
	g, err := Start(Options{Workers: workers}, func(w int) {
		m, err := CurrentThreadCPUs()
		assert.NoError(t, err)
		masks[w] = m
	})
	require.NoError(t, err)
	g.Wait()

	assert.Equal(t, []int{-1, -1, -1}, g.Pinned())
	for w, m := range masks {
		assert.Equal(t, AllowedCPUs(), m, "worker %d", w)
	}
}

func TestPinFailureIsAWarning(t *testing.T) {
	good := AllowedCPUs()[0]
	skipIfCannotPin(t, good)

	var mu sync.Mutex
	var warns []string
	ran := make([]bool, 2)
	g, err := Start(Options{
		Workers: 2,
		Pin:     true,
		CPUs:    []int{good, 100000},
		Warn: func(msg string) {
			mu.Lock()
			defer mu.Unlock()
			warns = append(warns, msg)
		},
	}, func(w int) { ran[w] = true })
	require.NoError(t, err)
	g.Wait()

	assert.Equal(t, []int{good, -1}, g.Pinned())
	assert.Equal(t, []bool{true, true}, ran, "a worker that failed to pin must still run")
	require.Len(t, warns, 1)
	assert.Contains(t, warns[0], "worker 1")
	assert.Contains(t, warns[0], "100000")
}

func TestPinCurrentThreadErrors(t *testing.T) {
	errc := make(chan error, 2)
	go func() {
		runtime.LockOSThread() // thread discarded on exit even if a pin succeeded
		errc <- PinCurrentThread(100000)
		errc <- PinCurrentThread(-1)
	}()
	for _, cpu := range []string{"100000", "-1"} {
		err := <-errc
		require.Error(t, err)
		assert.ErrorIs(t, err, unix.EINVAL)
		assert.True(t, strings.Contains(err.Error(), "CPU "+cpu), "error %q should name CPU %s", err, cpu)
	}
}

func TestStartRejectsBadOptions(t *testing.T) {
	noop := func(int) {}
	for _, tc := range []struct {
		name string
		opts Options
		msg  string
	}{
		{"zero workers", Options{Workers: 0}, "Workers=0"},
		{"negative workers", Options{Workers: -3}, "Workers=-3"},
		{"empty CPU list", Options{Workers: 1, Pin: true, CPUs: []int{}}, "empty CPU list"},
	} {
		g, err := Start(tc.opts, noop)
		assert.Nil(t, g, tc.name)
		if assert.Error(t, err, tc.name) {
			assert.Contains(t, err.Error(), tc.msg, tc.name)
		}
	}
}

func TestWaitLeavesNoGoroutines(t *testing.T) {
	base := stableGoroutines()
	release := make(chan struct{})
	var running sync.WaitGroup
	running.Add(8)
	g, err := Start(Options{Workers: 8, Pin: true}, func(int) {
		running.Done()
		<-release
	})
	require.NoError(t, err)
	running.Wait()
	assert.GreaterOrEqual(t, runtime.NumGoroutine(), base+8, "workers should be alive")
	close(release)
	g.Wait()
	assert.LessOrEqual(t, settleGoroutines(base), base, "worker goroutines leaked")
}
