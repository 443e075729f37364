package cpu

import (
	"fmt"
	"slices"
	"sync"
)

// The CPUs that pinned workers of this process hold. Each engine plans its
// own placement; without a process-wide record, two engines in one process
// (an embedding program's pipelines, tests run side by side) would each pin
// their workers from the first CPU on, stacking them on the same cores
// while others idle.
var claims struct {
	sync.Mutex
	n map[int]int // CPU -> number of workers pinned to it
}

// Claim is a set of CPUs held for pinned workers until Release.
type Claim struct {
	cpus []int // with repeats: one entry per worker
	once sync.Once
}

// CPUs is the claimed CPUs, one per worker, in worker order.
func (c *Claim) CPUs() []int { return slices.Clone(c.cpus) }

// Release gives the CPUs back; later calls do nothing.
func (c *Claim) Release() {
	if c == nil {
		return
	}
	c.once.Do(func() {
		claims.Lock()
		defer claims.Unlock()
		for _, id := range c.cpus {
			if claims.n[id]--; claims.n[id] <= 0 {
				delete(claims.n, id)
			}
		}
	})
}

// ClaimCPUs claims cpus as they are (a placement the caller named):
// automatic placements after it avoid them.
func ClaimCPUs(cpus []int) *Claim {
	claims.Lock()
	defer claims.Unlock()
	return claimLocked(slices.Clone(cpus))
}

func claimLocked(cpus []int) *Claim {
	if claims.n == nil {
		claims.n = map[int]int{}
	}
	for _, id := range cpus {
		claims.n[id]++
	}
	return &Claim{cpus: cpus}
}

// ClaimFree claims n CPUs for n workers from order (each CPU once, in the
// order a placement would take them), skipping the CPUs other claims hold,
// in one step so that engines started at once do not take the same ones.
// With none held elsewhere, n beyond len(order) wraps around (workers share
// CPUs in order, as Topology.Plan). Where other claims leave fewer than n,
// it claims nothing and says why: pinning workers onto CPUs another engine's
// workers hold would make them wait for each other, where the scheduler
// would run them elsewhere.
func ClaimFree(order []int, n int) (*Claim, error) {
	if n < 1 || len(order) == 0 {
		return nil, fmt.Errorf("cpu: claim %d CPUs of %d", n, len(order))
	}
	claims.Lock()
	defer claims.Unlock()
	free := make([]int, 0, len(order))
	for _, id := range order {
		if claims.n[id] == 0 {
			free = append(free, id)
		}
	}
	if len(free) < n && len(free) < len(order) {
		return nil, fmt.Errorf("cpu: %d workers to pin, %d of the %d CPUs free (other engines of this process have pinned workers to %s)",
			n, len(free), len(order), FormatCPUList(claimedLocked()))
	}
	plan := make([]int, n)
	for i := range plan {
		plan[i] = free[i%len(free)]
	}
	return claimLocked(plan), nil
}

// Claimed lists the CPUs that pinned workers hold, ascending.
func Claimed() []int {
	claims.Lock()
	defer claims.Unlock()
	return claimedLocked()
}

func claimedLocked() []int {
	ids := make([]int, 0, len(claims.n))
	for id := range claims.n {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
