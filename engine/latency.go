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
// factor of two; reset starts a measured interval (after a warm-up).
//
// The buckets count from the start (Stream.Metrics exports them as a
// histogram that must only grow): reset keeps a copy of them in base,
// which quantile subtracts.
//
// It also carries the stream's other counters for Stream.Metrics
// (streamCounters, metrics.go), so that they need no field of the
// stream's own.
type latencyHist struct {
	buckets [LatencyBuckets]atomic.Uint64
	sum     atomic.Uint64 // nanoseconds, from the start
	base    [LatencyBuckets]atomic.Uint64
	streamCounters
}

func (h *latencyHist) record(d time.Duration) {
	if d < 1 {
		d = 1
	}
	h.buckets[bits.Len64(uint64(d))-1].Add(1)
	h.sum.Add(uint64(d))
}

func (h *latencyHist) reset() {
	for i := range h.buckets {
		h.base[i].Store(h.buckets[i].Load())
	}
}

// quantile returns the upper bound of the bucket holding quantile q of the
// latencies since the last reset.
func (h *latencyHist) quantile(q float64) time.Duration {
	var counts [LatencyBuckets]uint64
	var total uint64
	for i := range h.buckets {
		// base first: it is a past value of the bucket, which only grows,
		// so the difference cannot wrap even while reset runs.
		b := h.base[i].Load()
		counts[i] = h.buckets[i].Load() - b
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
			return LatencyBucketBound(i)
		}
	}
	return 0
}

// cumulative reads the histogram from the start, as Prometheus wants it:
// each bucket counting every latency up to its bound. Count is the last
// bucket's, so that the two agree although tasks are recorded meanwhile;
// Sum is read after the buckets and may be a few tasks ahead of them.
func (h *latencyHist) cumulative() LatencyHistogram {
	var l LatencyHistogram
	var seen uint64
	for i := range h.buckets {
		seen += h.buckets[i].Load()
		l.Buckets[i] = seen
	}
	l.Count = seen
	l.Sum = time.Duration(h.sum.Load())
	return l
}
