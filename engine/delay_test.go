package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/gpu"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/window"
)

// Watermark delays (query.Window.Delay): the engine (both CPU kernels,
// every task size and worker count, the window join, the GPU emulator's
// fallback) against the reference, which applies the rule tuple by tuple.

// randDelay is a watermark delay for w: none, small, about the lateness of
// disorderedData, larger than the window, or huge (near MaxInt64).
func randDelay(r *rand.Rand, w query.Window) (int64, string) {
	switch r.IntN(6) {
	case 0:
		return 0, "zero"
	case 1:
		return 1 + r.Int64N(5), "small"
	case 2:
		return r.Int64N(300), "lateness"
	case 3:
		return w.Size + r.Int64N(3*w.Size), "over the window"
	case 4:
		return math.MaxInt64 - r.Int64N(3), "MaxInt64"
	}
	return math.MaxInt64/2 + r.Int64N(1<<40), "huge"
}

// disorderedData is randData with event times rising by up to step per
// tuple, each up to lateness behind, so that a delay about the lateness
// decides which tuples are late.
func disorderedData(r *rand.Rand, n int, lateness int64) []byte {
	data := randData(r, n)
	ts, step := r.Int64N(100)-50, 1+r.Int64N(4)
	for i := range n {
		ts += r.Int64N(step + 1)
		binary.LittleEndian.PutUint64(data[i*randTuple:], uint64(ts-r.Int64N(lateness+1)))
	}
	return data
}

// TestDelayMatchesReference: random queries (every operator), range and row
// windows, tumbling and sliding, with random delays (zero, small, about the
// input's lateness, larger than the window, near MaxInt64), over
// out-of-order inputs, both CPU kernels, several task sizes and worker
// counts: rows and counters are the reference's. Across the seeds, delays
// turned late tuples into counted ones.
func TestDelayMatchesReference(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	seeds := seeds(16, 20, 80)
	kinds := map[string]int{}
	var saved uint64 // tuples late without the delay, counted with it
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 16))
		q := randQuery(r, s)
		for q.Stateless() {
			q = randQuery(r, s)
		}
		var kind string
		q.Window.Delay, kind = randDelay(r, q.Window)
		kinds[kind]++
		require.NoError(t, q.Validate())
		data := disorderedData(r, 200+r.IntN(2000), r.Int64N(400))
		want, err := reference.Evaluate(q, data)
		require.NoError(t, err)
		q0 := *q
		q0.Window.Delay = 0
		want0, err := reference.Evaluate(&q0, data)
		require.NoError(t, err)
		require.LessOrEqual(t, want.Counts.Late, want0.Counts.Late, "seed %d: a delay makes no tuple late", seed)
		saved += want0.Counts.Late - want.Counts.Late
		for _, vec := range []bool{false, true} {
			for range 2 {
				cfg := Config{Workers: 1 + r.IntN(3), TaskSize: randTuple * (1 + r.IntN(150)), BufferSize: 1 << 14, Vectorised: vec}
				got, err := collect(t, cfg, q, data, r)
				require.NoError(t, err)
				if d := reference.Diff(q, want, got, 1e-9); d != "" {
					t.Fatalf("seed %d (%s), vectorised %v, workers %d, task %d, where=%v window=%+v group=%v aggs=%v having=%v:\n%s",
						seed, kind, vec, cfg.Workers, cfg.TaskSize, q.Where, q.Window, q.GroupBy, q.Aggregates, q.Having, d)
				}
			}
		}
	}
	t.Logf("delays %v; %d tuples late without their delay counted with it", kinds, saved)
	assert.Positive(t, saved, "the delays mattered")
	assertNoLeak(t, base)
}

// TestDelayCountsLateTuples: a hand-made case with exact counts. Tumbling
// windows of 10 over event times 1 5 3 12 9 25 19 10 8: with delay 0 the
// tuples 9, 19, 10 and 8 are late (the watermark before each has reached
// its window's end); delay 3 counts 9 (12-3 < 10); delay 6 counts 19 and 10
// as well (25-6 < 20); delay 16 counts 8 (25-16 < 10): none is late.
func TestDelayCountsLateTuples(t *testing.T) {
	parallel(t)
	s := randSchema(t)
	ets := []int64{1, 5, 3, 12, 9, 25, 19, 10, 8}
	data := make([]byte, len(ets)*randTuple)
	for i, et := range ets {
		binary.LittleEndian.PutUint64(data[i*randTuple:], uint64(et))
		binary.LittleEndian.PutUint64(data[i*randTuple+16:], uint64(1)<<i) // c: which tuples a sum holds
	}
	for _, tc := range []struct {
		delay  int64
		late   uint64
		counts []int64 // per window [0,10), [10,20), [20,30)
		sums   []int64
	}{
		{0, 4, []int64{3, 1, 1}, []int64{0b111, 0b1000, 0b100000}},
		{2, 4, []int64{3, 1, 1}, []int64{0b111, 0b1000, 0b100000}},
		{3, 3, []int64{4, 1, 1}, []int64{0b10111, 0b1000, 0b100000}},
		{6, 1, []int64{4, 3, 1}, []int64{0b10111, 0b11001000, 0b100000}},
		{16, 0, []int64{5, 3, 1}, []int64{0b100010111, 0b11001000, 0b100000}},
		{math.MaxInt64, 0, []int64{5, 3, 1}, []int64{0b100010111, 0b11001000, 0b100000}},
	} {
		w := query.Tumbling(10)
		w.Delay = tc.delay
		q := &query.Query{Name: "delay", Schema: s, Window: w,
			Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}, {Func: query.Sum, Arg: query.C("c"), As: "s"}}}
		var rows []reference.Row
		for i := range tc.counts {
			rows = append(rows, reference.Row{Start: int64(10 * i), End: int64(10*i + 10), Key: "",
				Values: []reference.Value{reference.Int(tc.counts[i]), reference.Int(tc.sums[i])}})
		}
		want := &reference.Result{Rows: rows, Counts: reference.Counts{Tuples: 9, Late: tc.late, Counted: 9 - tc.late}}
		ref, err := reference.Evaluate(q, data)
		require.NoError(t, err)
		require.Empty(t, reference.Diff(q, want, ref, 0), "delay %d: the reference", tc.delay)
		r := rand.New(rand.NewPCG(uint64(tc.delay), 3))
		for _, vec := range []bool{false, true} {
			for _, task := range []int{randTuple, 2 * randTuple, 4 * randTuple, 9 * randTuple} {
				for _, workers := range []int{1, 3} {
					cfg := Config{Workers: workers, TaskSize: task, BufferSize: 1 << 12, Vectorised: vec}
					got, err := collect(t, cfg, q, data, r)
					require.NoError(t, err)
					assert.Empty(t, reference.Diff(q, want, got, 0), "delay %d, vectorised %v, task %d, workers %d", tc.delay, vec, task, workers)
				}
			}
		}
	}
}

// TestDelayInt64EdgesMatchReference: TestInt64EdgesMatchReference with
// delays up to MaxInt64: windows of sizes up to MaxInt64 over event times
// near both ends of int64; no bound wraps around, refusals included.
func TestDelayInt64EdgesMatchReference(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	seeds := seeds(8, 10, 40)
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 17))
		q := randQuery(r, s)
		for q.Stateless() {
			q = randQuery(r, s)
		}
		q.Window = int64Window(r)
		q.Window.Delay = []int64{1, 7, q.Window.Size, math.MaxInt64 / 2, math.MaxInt64 - 1, math.MaxInt64, r.Int64(), int64(r.Uint64() >> 1)}[r.IntN(8)]
		require.NoError(t, q.Validate())
		spec, err := window.NewSpec(q.Window)
		require.NoError(t, err)
		data := randData(r, 50+r.IntN(500))
		mode := int64Times(r, data, spec)
		want, werr := reference.Evaluate(q, data)
		for _, vec := range []bool{false, true} {
			for _, task := range int64TaskSizes {
				workers := int64Workers[r.IntN(len(int64Workers))]
				cfg := Config{Workers: workers, TaskSize: task, BufferSize: 1 << 14, Vectorised: vec}
				got, err := collectAll(t, cfg, q, data, r)
				checkInt64Run(t, q, data, want, werr, got, err, fmt.Sprintf("seed %d, %s, vectorised %v, task %d, workers %d, where=%v window=%+v group=%v aggs=%v having=%v",
					seed, mode, vec, task, workers, q.Where, q.Window, q.GroupBy, q.Aggregates, q.Having))
			}
		}
	}
	assertNoLeak(t, base)
}

// TestDelayWindowJoinMatchesReference: random window joins with delays over
// out-of-order inputs fed concurrently: pairs and counters are the
// reference's.
func TestDelayWindowJoinMatchesReference(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	n := seeds(6, 8, 30)
	var saved uint64
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 18))
		j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: randWindow(r, 60)}
		j.Window.Delay, _ = randDelay(r, j.Window)
		if r.IntN(2) == 0 {
			j.Where = query.Cmp(query.C("l.a"), query.Lt, query.C("r.a"))
		}
		lateness := r.Int64N(200)
		left, right := disorderedData(r, 100+r.IntN(400), lateness), disorderedData(r, 100+r.IntN(400), lateness)
		want, err := reference.EvaluateJoin(j, left, right)
		require.NoError(t, err)
		j0 := *j
		j0.Window.Delay = 0
		want0, err := reference.EvaluateJoin(&j0, left, right)
		require.NoError(t, err)
		saved += want0.Counts.Late - want.Counts.Late
		cfg := Config{Workers: 1 + r.IntN(3), TaskSize: randTuple * (1 + r.IntN(40)), BufferSize: 1 << 13}
		got, st := runJoin(t, cfg, j, left, right)
		msg := fmt.Sprintf("seed %d, window %+v, where %v, workers %d, task %d", seed, j.Window, j.Where, cfg.Workers, cfg.TaskSize)
		assert.Equal(t, len(want.Tuples), len(got), "%s: pairs", msg)
		assert.True(t, string(want.Tuples) == string(got), "%s: pairs differ", msg)
		assert.Equal(t, want.Counts, reference.Counts{Tuples: st.Tuples, Late: st.Late, Counted: st.Counted}, msg)
	}
	t.Logf("%d tuples late without their delay joined with it", saved)
	assert.Positive(t, saved)
	assertNoLeak(t, base)
}

// TestDelayGPUFallsBack: the device knows no watermark delay, so a query
// with one runs every task on the CPU fallback, with the reference's
// output; the same query without a delay runs on the device.
func TestDelayGPUFallsBack(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	var tasks0, fallbacks0 uint64 // without a delay
	for seed := range 12 {
		r := rand.New(rand.NewPCG(uint64(seed), 19))
		q := randGPUQuery(r, s)
		for q.Stateless() || !gpuSupported(t, q) {
			q = randGPUQuery(r, s)
		}
		delay, _ := randDelay(r, q.Window)
		data := disorderedData(r, 300+r.IntN(1000), r.Int64N(300))
		for _, d := range []int64{0, max(delay, 1)} {
			q.Window.Delay = d
			require.True(t, gpuSupported(t, q))
			want, err := reference.Evaluate(q, data)
			require.NoError(t, err)
			dev := gpu.NewEmulator()
			cfg := Config{Workers: 1, TaskSize: randTuple * (1 + r.IntN(60)), BufferSize: 1 << 14, GPU: dev, GPUOnly: true, GPUDepth: 1 + r.IntN(3)}
			res := &reference.Result{}
			e, err := Start(cfg, []Spec{specInto(q, res)})
			require.NoError(t, err)
			require.NoError(t, e.Write(data))
			st, err := e.Close()
			require.NoError(t, err)
			res.Counts = reference.Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
			msg := fmt.Sprintf("seed %d, window %+v, task %d, where=%v aggs=%v", seed, q.Window, cfg.TaskSize, q.Where, q.Aggregates)
			assert.Empty(t, reference.Diff(q, want, res, 1e-9), msg)
			if d == 0 {
				tasks0, fallbacks0 = tasks0+st.Tasks, fallbacks0+st.GPUFallbackTasks
			} else {
				assert.Equal(t, st.Tasks, st.GPUFallbackTasks, "%s: every task fell back", msg)
			}
			require.NoError(t, dev.Close())
		}
	}
	assert.Less(t, fallbacks0, tasks0, "without a delay the device ran tasks")
	assertNoLeak(t, base)
}
