package engine

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/saber-hx/saber-hx/scheduler"
)

// Metrics are a stream's counters for monitoring beyond Stats (package
// metrics exports them to Prometheus). Unlike Stats' latency quantiles
// they count from Start on and ResetLatency leaves them alone, so that a
// scraper only ever sees them grow. For a window join's left stream they
// are both inputs'.
type Metrics struct {
	// Latency is the histogram of task latencies (dispatched to merged)
	// that Stats' quantiles are read from.
	Latency LatencyHistogram
	// BackPressure is the time the stream's producer waited in Buffer for
	// ring space or for a window-join side it feeds to stop running ahead
	// of the other (joingate.go), or in dispatch for a task record (every
	// one in flight);
	// BackPressureWaits counts those waits. A chained stream's upstream
	// waits for ring space by helping the workers: not counted.
	BackPressure      time.Duration
	BackPressureWaits uint64
	// RingUsed is the ring's bytes committed and not yet freed (queued,
	// running or waiting to be merged); RingSize its capacity.
	RingUsed, RingSize uint64
	// Kinds are the tasks run and busy time per processor kind, in the
	// order of Engine.Scheduling's Kinds (the CPU kinds, then "gpu").
	Kinds []KindMetrics
	// SerialTime and WorkerTime are Stats' (the serial_fraction's parts),
	// from the start.
	SerialTime, WorkerTime time.Duration
}

// KindMetrics are a stream's tasks run by one processor kind and their busy
// time, as reported to the scheduler (for the GPU, the busy time its
// worker describes: the device's share of the wall clock, fallbacks
// included).
type KindMetrics struct {
	Kind  string
	Tasks uint64
	Busy  time.Duration
}

// LatencyBuckets is the number of buckets of a LatencyHistogram.
const LatencyBuckets = 64

// LatencyHistogram is a cumulative histogram of task latencies:
// Buckets[i] counts the tasks whose latency is at most
// LatencyBucketBound(i), so Buckets[LatencyBuckets-1] == Count.
type LatencyHistogram struct {
	Count   uint64
	Sum     time.Duration
	Buckets [LatencyBuckets]uint64
}

// LatencyBucketBound is the upper bound, inclusive, of bucket i: latencies
// are counted in power-of-two buckets of nanoseconds. The last two are
// bounded by the largest Duration.
func LatencyBucketBound(i int) time.Duration {
	if i >= LatencyBuckets-2 {
		return math.MaxInt64
	}
	return time.Duration(uint64(1)<<(i+1) - 1)
}

// streamCounters are a stream's counters for Metrics beyond the latency
// histogram. They ride in the stream's latencyHist (see there), each group
// on lines of its own: the producer writes backPressure on its slow path,
// the workers read kinds per task.
type streamCounters struct {
	_            [cacheLine]byte
	backPressure atomic.Int64 // nanoseconds; written by the producer only
	waits        atomic.Uint64
	_            [cacheLine - 16]byte
	// kinds is made at the stream's first task (Start would be the place,
	// but the stream's fields are not this file's).
	kinds atomic.Pointer[[]kindCounter]
	_     [cacheLine - 8]byte
	// clock is the stream's serial_fraction (clock.go): added to once per
	// task and serial section by whichever worker.
	clock serialClock
	_     [cacheLine - 16]byte
}

// kindCounter is one processor kind's tasks and busy time on a stream: one
// line each, as different kinds' workers add to them.
type kindCounter struct {
	tasks, busy atomic.Uint64 // busy in nanoseconds
	_           [cacheLine - 16]byte
}

// done reports task t, run by p in busy, to the queue and counts it for
// Metrics: every processor's Done goes through here.
func (e *Engine) done(p scheduler.Processor, t *task, busy time.Duration) {
	e.streams[t.Query].lat.countTask(e, p.Kind, busy)
	e.queue.Done(p, &t.Task, busy)
}

func (c *streamCounters) countTask(e *Engine, kind int, busy time.Duration) {
	ks := c.kinds.Load()
	if ks == nil {
		made := make([]kindCounter, len(e.kindNames()))
		c.kinds.CompareAndSwap(nil, &made)
		ks = c.kinds.Load()
	}
	if kind < 0 || kind >= len(*ks) {
		return
	}
	k := &(*ks)[kind]
	k.tasks.Add(1)
	if busy > 0 {
		k.busy.Add(uint64(busy))
	}
}

// waited counts a wait of the producer that began at start.
func (c *streamCounters) waited(start time.Time) {
	c.backPressure.Add(int64(time.Since(start)))
	c.waits.Add(1)
}

// kindNames are the processor kinds' names in the queue's order (newQueue).
func (e *Engine) kindNames() []string {
	var names []string
	for _, g := range e.cfg.cpuGroups() {
		names = append(names, g.Name)
	}
	if e.cfg.GPU != nil {
		names = append(names, GPUKindName)
	}
	return names
}

// Metrics returns the stream's counters for monitoring; safe from any
// goroutine, also after CloseAll. It allocates (Kinds): call it per
// scrape, not per task.
func (s *Stream) Metrics() Metrics {
	m := s.metrics()
	if s.right != nil {
		r := s.right.metrics()
		m.Latency.Count += r.Latency.Count
		m.Latency.Sum += r.Latency.Sum
		for i := range m.Latency.Buckets {
			m.Latency.Buckets[i] += r.Latency.Buckets[i]
		}
		m.BackPressure += r.BackPressure
		m.BackPressureWaits += r.BackPressureWaits
		m.RingUsed += r.RingUsed
		m.RingSize += r.RingSize
		for i := range m.Kinds {
			m.Kinds[i].Tasks += r.Kinds[i].Tasks
			m.Kinds[i].Busy += r.Kinds[i].Busy
		}
	}
	return m
}

func (s *Stream) metrics() Metrics {
	m := Metrics{
		BackPressure:      time.Duration(s.lat.backPressure.Load()),
		BackPressureWaits: s.lat.waits.Load(),
		RingSize:          uint64(s.ring.Size()),
	}
	// Freed before Written: read the other way round, a Free between the
	// two loads could make the difference negative.
	freed := s.ring.Freed()
	m.RingUsed = s.ring.Written() - freed
	m.Latency = s.lat.cumulative()
	if s.joinSide == nil || s.right != nil {
		m.SerialTime, m.WorkerTime = s.clock().times()
	}
	names := s.e.kindNames()
	m.Kinds = make([]KindMetrics, len(names))
	ks := s.lat.kinds.Load()
	for i, n := range names {
		m.Kinds[i].Kind = n
		if ks != nil && i < len(*ks) {
			m.Kinds[i].Tasks = (*ks)[i].tasks.Load()
			m.Kinds[i].Busy = time.Duration((*ks)[i].busy.Load())
		}
	}
	return m
}
