package cpu

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
)

// Options configures Start.
type Options struct {
	// Workers is the number of worker goroutines; at least 1.
	Workers int
	// Pin pins worker i to CPUs[i % len(CPUs)].
	Pin bool
	// CPUs is the list to pin to; nil means AllowedCPUs().
	CPUs []int
	// Warn, if not nil, is told when a worker fails to pin itself; the
	// worker then runs unpinned. It is called from the worker goroutines,
	// possibly concurrently, so it must be safe for concurrent use.
	Warn func(msg string)
}

// Group is a set of worker goroutines, optionally each locked to its own OS
// thread and pinned to a CPU.
type Group struct {
	wg     sync.WaitGroup
	pinned []int // per worker: the CPU it is pinned to, or -1; written before Start returns
}

// Start runs opts.Workers goroutines. With opts.Pin, each locks itself to
// its OS thread and never unlocks, so that when fn returns the runtime
// destroys the thread rather than reusing a thread with a narrowed affinity
// mask for other goroutines, and pins itself; a pinning failure is reported
// to opts.Warn and the worker runs unpinned (still locked). Without
// opts.Pin the workers are plain goroutines. Finally each calls fn(worker)
// with worker in [0, Workers).
//
// Start returns once every worker has attempted its pinning, so Pinned is
// complete when Start returns. It fails if Workers < 1 or the CPU list is
// empty.
func Start(opts Options, fn func(worker int)) (*Group, error) {
	if opts.Workers < 1 {
		return nil, fmt.Errorf("cpu: start workers: Workers=%d, need at least 1", opts.Workers)
	}
	if fn == nil {
		return nil, errors.New("cpu: start workers: nil worker function")
	}
	cpus := opts.CPUs
	if cpus == nil {
		cpus = AllowedCPUs()
	} else {
		cpus = slices.Clone(cpus) // the caller may reuse its slice
	}
	if len(cpus) == 0 {
		return nil, errors.New("cpu: start workers: empty CPU list")
	}

	g := &Group{pinned: make([]int, opts.Workers)}
	var started sync.WaitGroup
	started.Add(opts.Workers)
	g.wg.Add(opts.Workers)
	for w := range opts.Workers {
		go func() {
			defer g.wg.Done()
			g.pinned[w] = -1
			if opts.Pin {
				// Deliberately never unlocked; see Start. An unpinned worker
				// is not locked either: a locked goroutine can only run on
				// its own thread, so every wake-up of it is an OS thread
				// switch, which costs more than it gives when workers and
				// producers outnumber the cores (measured: docs/numa.md).
				runtime.LockOSThread()
				cpu := cpus[w%len(cpus)]
				if err := PinCurrentThread(cpu); err != nil {
					if opts.Warn != nil {
						opts.Warn(fmt.Sprintf("cpu: worker %d runs unpinned: %v", w, err))
					}
				} else {
					g.pinned[w] = cpu
				}
			}
			started.Done()
			fn(w)
		}()
	}
	started.Wait()
	return g, nil
}

// Wait blocks until every worker function has returned.
func (g *Group) Wait() { g.wg.Wait() }

// Pinned returns, per worker, the CPU it is pinned to, or -1 where it is not
// pinned (Pin unset or pinning failed). The slice is a copy.
func (g *Group) Pinned() []int { return slices.Clone(g.pinned) }
