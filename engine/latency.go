package engine

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// latencyHist is a histogram of task latencies (dispatched to merged, its
// windows emitted) in power-of-two buckets of nanoseconds, with atomic
// counters: one add per task, readable while the run goes on. Quantiles are
// read as the upper bound of their bucket, so they are exact to within a
// factor of two; Reset starts a measured interval (after a warm-up).
type latencyHist struct {
	buckets [64]atomic.Uint64
}

func (h *latencyHist) record(d time.Duration) {
	if d < 1 {
		d = 1
	}
	h.buckets[bits.Len64(uint64(d))-1].Add(1)
}

func (h *latencyHist) reset() {
	for i := range h.buckets {
		h.buckets[i].Store(0)
	}
}

// quantile returns the upper bound of the bucket holding quantile q.
func (h *latencyHist) quantile(q float64) time.Duration {
	var counts [64]uint64
	var total uint64
	for i := range h.buckets {
		counts[i] = h.buckets[i].Load()
		total += counts[i]
	}
	if total == 0 {
		return 0
	}
	rank := uint64(q*float64(total-1)) + 1
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			return time.Duration(uint64(1)<<(i+1) - 1)
		}
	}
	return 0
}
