package engine

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/scheduler"
)

// TestLatencyHistogramCumulative: the histogram Metrics exports counts from
// the start, cumulative per bucket, and reset (the end of a warm-up) clears
// only what the quantiles read.
func TestLatencyHistogramCumulative(t *testing.T) {
	var h latencyHist
	lat := []time.Duration{0, 1, 2, 3, 1000, 1023, 1024, time.Millisecond, time.Second}
	var sum time.Duration
	for _, d := range lat {
		h.record(d)
		sum += max(d, 1)
	}
	c := h.cumulative()
	assert.Equal(t, uint64(len(lat)), c.Count)
	assert.Equal(t, sum, c.Sum)
	assert.Equal(t, c.Count, c.Buckets[LatencyBuckets-1])
	// The oracle: bucket i counts every latency up to its bound.
	for i := range LatencyBuckets {
		var want uint64
		for _, d := range lat {
			if max(d, 1) <= LatencyBucketBound(i) {
				want++
			}
		}
		assert.Equal(t, want, c.Buckets[i], "bucket %d (<= %v)", i, LatencyBucketBound(i))
	}
	assert.Equal(t, time.Duration(1), LatencyBucketBound(0))
	assert.Equal(t, time.Duration(1023), LatencyBucketBound(9))

	h.reset()
	assert.Zero(t, h.quantile(0.5), "quantiles start over")
	assert.Equal(t, c, h.cumulative(), "the histogram does not")
	h.record(3 * time.Microsecond)
	assert.Equal(t, LatencyBucketBound(11), h.quantile(0.99), "only the latency since the reset")
	assert.Equal(t, c.Count+1, h.cumulative().Count)
	assert.Zero(t, testing.AllocsPerRun(100, func() { h.record(time.Millisecond) }))
}

// TestMetricsOfARun: after a run on two processor kinds, the per-kind
// tasks add up to the merged tasks and agree with the scheduler's, the
// latency histogram holds one latency per merged task, the ring is empty,
// and ResetLatency leaves the histogram alone.
func TestMetricsOfARun(t *testing.T) {
	s := randSchema(t)
	q := &query.Query{Name: "agg", Schema: s, Window: query.Sliding(40, 10),
		GroupBy:    []query.Expr{query.C("b")},
		Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("c")}}}
	// fcfs: whichever kind is free takes the next task, so that the slow
	// kind mostly runs some; the fast one may still drain the queue before
	// the slow one first asks, so its busy time is checked where it ran.
	const delay = 100 * time.Microsecond
	cfg := Config{TaskSize: randTuple * 16, BufferSize: 1 << 13, Policy: scheduler.FCFS,
		groups: []processorGroup{{Name: "fast", Workers: 1}, {Name: "slow", Workers: 1, delay: delay}}}
	e, err := Start(cfg, []Spec{{Query: q, Windows: func(*Window) error { return nil }}})
	require.NoError(t, err)
	st := e.Stream(0)
	m0 := st.Metrics()
	assert.Equal(t, []KindMetrics{{Kind: "fast"}, {Kind: "slow"}}, m0.Kinds, "before the first task")
	assert.Equal(t, uint64(1<<13), m0.RingSize)

	data := randData(rand.New(rand.NewPCG(3, 4)), 5000)
	require.NoError(t, st.Write(data[:len(data)/2]))
	st.ResetLatency()
	mid := st.Metrics()
	require.NoError(t, st.Write(data[len(data)/2:]))
	stats, err := e.CloseAll()
	require.NoError(t, err)
	m := st.Metrics()

	assert.Equal(t, stats[0].Tasks, m.Latency.Count, "one latency per merged task")
	assert.GreaterOrEqual(t, m.Latency.Count, mid.Latency.Count, "ResetLatency leaves the histogram")
	assert.Equal(t, m.Latency.Count, m.Latency.Buckets[LatencyBuckets-1])
	assert.Positive(t, m.Latency.Sum)
	for i := 1; i < LatencyBuckets; i++ {
		assert.LessOrEqual(t, m.Latency.Buckets[i-1], m.Latency.Buckets[i], "cumulative")
	}
	assert.Zero(t, m.RingUsed, "every task merged")
	assert.Equal(t, uint64(1<<13), m.RingSize)

	sched := e.Scheduling()
	require.Len(t, m.Kinds, 2)
	var tasks uint64
	for k, km := range m.Kinds {
		assert.Equal(t, sched.Kinds[k], km.Kind)
		assert.Equal(t, sched.Tasks[k][0], km.Tasks, "kind %s: the scheduler's count", km.Kind)
		if km.Tasks > 0 {
			assert.Positive(t, km.Busy, "kind %s", km.Kind)
		}
		assert.GreaterOrEqual(t, km.Tasks, mid.Kinds[k].Tasks, "kind %s grows", km.Kind)
		tasks += km.Tasks
	}
	assert.Equal(t, stats[0].Tasks, tasks, "every task run by one kind")
	// The slow kind's delay, per task, is busy time.
	assert.GreaterOrEqual(t, m.Kinds[1].Busy, time.Duration(m.Kinds[1].Tasks)*delay, "slow kind, %d tasks", m.Kinds[1].Tasks)
}

// TestMetricsBackPressure: a producer far ahead of a slow sink waits for
// ring space, and the wait is counted; a producer that never fills the
// ring waits for nothing.
func TestMetricsBackPressure(t *testing.T) {
	base := runtime.NumGoroutine()
	s := randSchema(t)
	q := &query.Query{Name: "tumble", Schema: s, Window: query.Tumbling(1),
		Aggregates: []query.Aggregate{{Func: query.Count}}}
	slow := func(*Window) error { time.Sleep(50 * time.Microsecond); return nil }
	e, err := Start(Config{Workers: 1, TaskSize: randTuple * 8, BufferSize: 1 << 12},
		[]Spec{{Query: q, Windows: slow}, {Query: q, Windows: func(*Window) error { return nil }}})
	require.NoError(t, err)
	// 4000 tuples in the long run, 1000 in the default one: 48 KB, 12
	// rings' worth, before a sink that sleeps for each window.
	data := randData(rand.New(rand.NewPCG(5, 6)), testenv.Scale(1000, 4000))
	st := e.Stream(0)
	var last Metrics
	for o := 0; o < len(data); o += len(data) / 8 {
		require.NoError(t, st.Write(data[o:min(o+len(data)/8, len(data))]))
		m := st.Metrics()
		assert.GreaterOrEqual(t, m.BackPressure, last.BackPressure, "monotone")
		assert.GreaterOrEqual(t, m.BackPressureWaits, last.BackPressureWaits, "monotone")
		assert.LessOrEqual(t, m.RingUsed, m.RingSize)
		last = m
	}
	// The second stream's whole input fits in its ring.
	require.NoError(t, e.Stream(1).Write(data[:40*randTuple]))
	_, err = e.CloseAll()
	require.NoError(t, err)
	m := st.Metrics()
	assert.Positive(t, m.BackPressure, "a ring of %d bytes before a slow sink: the producer waited", m.RingSize)
	assert.Positive(t, m.BackPressureWaits)
	idle := e.Stream(1).Metrics()
	assert.Zero(t, idle.BackPressure)
	assert.Zero(t, idle.BackPressureWaits)
	assertNoLeak(t, base)
}

// TestMetricsOfAJoin: a window join's stream counts both inputs.
func TestMetricsOfAJoin(t *testing.T) {
	s := randSchema(t)
	j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Tumbling(20),
		Where: query.Cmp(query.C("l.a"), query.Lt, query.C("r.a"))}
	r := rand.New(rand.NewPCG(7, 8))
	left, right := randData(r, 700), randData(r, 500)
	cfg := Config{Workers: 2, TaskSize: randTuple * 10, BufferSize: 1 << 13}
	e, err := Start(cfg, []Spec{{Join: j, Tuples: func([]byte) error { return nil }}})
	require.NoError(t, err)
	errs := make(chan error, 2)
	go func() { errs <- e.Stream(0).Write(left) }()
	go func() { errs <- e.Stream(0).Right().Write(right) }()
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	stats, err := e.CloseAll()
	require.NoError(t, err)
	m := e.Stream(0).Metrics()
	l, rt := e.Stream(0).metrics(), e.Stream(0).Right().metrics()
	assert.Equal(t, l.Latency.Count+rt.Latency.Count, m.Latency.Count)
	assert.Equal(t, stats[0].Tasks, m.Latency.Count, "both inputs' tasks")
	assert.Equal(t, uint64(2<<13), m.RingSize, "two rings")
	require.Len(t, m.Kinds, 1)
	assert.Equal(t, stats[0].Tasks, m.Kinds[0].Tasks)
}

// TestMetricsCountersDoNotAllocate: what a task and a wait add costs no
// allocation once the stream's per-kind counters exist (the task path as a
// whole: TestTaskPathDoesNotAllocate).
func TestMetricsCountersDoNotAllocate(t *testing.T) {
	s := randSchema(t)
	e, err := Start(Config{Workers: 1, TaskSize: randTuple * 8, BufferSize: 1 << 12},
		[]Spec{{Query: &query.Query{Name: "sel", Schema: s, Where: query.ColGe("a", 0)}}})
	require.NoError(t, err)
	st := e.Stream(0)
	st.lat.countTask(e, 0, time.Microsecond)
	start := time.Now()
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		st.lat.countTask(e, 0, time.Microsecond)
		st.lat.waited(start)
	}))
	_, err = e.CloseAll()
	require.NoError(t, err)
	assert.Equal(t, uint64(1+101), st.Metrics().Kinds[0].Tasks, "AllocsPerRun runs once more, to warm up")
	assert.Equal(t, uint64(101), st.Metrics().BackPressureWaits)
}

// TestMetricsOfTheGPUKind: the GPU worker's tasks count for the "gpu" kind
// (kernelGPU: the engine's GPU worker over the CPU kernel), in gpu and
// hybrid modes, as the scheduler counts them.
func TestMetricsOfTheGPUKind(t *testing.T) {
	s := randSchema(t)
	q := &query.Query{Name: "agg", Schema: s, Window: query.Tumbling(30),
		Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Max, Arg: query.C("c")}}}
	data := randData(rand.New(rand.NewPCG(1, 1)), 3000)
	for _, only := range []bool{true, false} {
		cfg := Config{Workers: 1, TaskSize: randTuple * 16, BufferSize: 1 << 13, GPU: kernelGPU{}, GPUOnly: only}
		e, err := Start(cfg, []Spec{{Query: q, Windows: func(*Window) error { return nil }}})
		require.NoError(t, err)
		require.NoError(t, e.Stream(0).Write(data))
		stats, err := e.CloseAll()
		require.NoError(t, err)
		m := e.Stream(0).Metrics()
		sched := e.Scheduling()
		require.Len(t, m.Kinds, len(sched.Kinds), "gpu only %v", only)
		var tasks uint64
		for k, km := range m.Kinds {
			assert.Equal(t, sched.Kinds[k], km.Kind)
			assert.Equal(t, sched.Tasks[k][0], km.Tasks, "kind %s", km.Kind)
			tasks += km.Tasks
		}
		assert.Equal(t, stats[0].Tasks, tasks)
		gpu := m.Kinds[len(m.Kinds)-1]
		assert.Equal(t, GPUKindName, gpu.Kind)
		if only {
			assert.Equal(t, stats[0].Tasks, gpu.Tasks, "gpu mode: every task on the GPU")
			assert.Positive(t, gpu.Busy)
		}
	}
}
