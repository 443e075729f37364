package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/gpu"
	"github.com/saber-hx/saber-hx/internal/doubling"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/window"
)

// Every int64 event time: the engine (both CPU kernels, the GPU emulator)
// and the reference agree at both ends of int64, refusals included.

var int64TaskSizes, int64Workers = []int{randTuple, 7 * randTuple, 85 * randTuple}, []int{1, 3}

// collectAll runs q over data like collect, but on a failed run too: the
// producer stops at the first error, and the engine is always closed. It
// returns the output so far and the run's error.
func collectAll(t testing.TB, cfg Config, q *query.Query, data []byte, r *rand.Rand) (*reference.Result, error) {
	t.Helper()
	res := &reference.Result{}
	e, err := Start(cfg, []Spec{specInto(q, res)})
	require.NoError(t, err)
	for len(data) > 0 {
		n := min(len(data), 1+r.IntN(2*cfg.TaskSize))
		if e.Write(data[:n]) != nil {
			break // Close returns the run's error
		}
		data = data[n:]
	}
	st, err := e.Close()
	res.Counts = reference.Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
	return res, err
}

var byteOffset = regexp.MustCompile(`tuple (\d+) \(byte offset (\d+)\)`)

// refusedAt is the tuple index and byte offset a refusal names.
func refusedAt(t testing.TB, err error) (tuple, offset uint64) {
	t.Helper()
	m := byteOffset.FindStringSubmatch(err.Error())
	require.NotNil(t, m, "error %q names no byte offset", err)
	tu, _ := strconv.ParseUint(m[1], 10, 64)
	off, _ := strconv.ParseUint(m[2], 10, 64)
	return tu, off
}

// checkInt64Run requires the engine's result (got, err) to be the
// reference's (want, werr): the same output and counters, or both refusing
// the same tuple, the engine with an InputError (an ErrInput).
func checkInt64Run(t *testing.T, q *query.Query, data []byte, want *reference.Result, werr error, got *reference.Result, err error, msg string) {
	t.Helper()
	if werr != nil {
		require.Error(t, err, "%s: the reference refused: %v", msg, werr)
		require.ErrorIs(t, err, ErrInput, msg)
		var ie *InputError
		require.ErrorAs(t, err, &ie, msg)
		tu, off := refusedAt(t, werr)
		assert.Equal(t, off, ie.Offset, "%s: byte offset; reference: %v; engine: %v", msg, werr, err)
		assert.Equal(t, tu, ie.Tuple, msg)
		assert.Equal(t, int64(binary.LittleEndian.Uint64(data[off:])), ie.Pos, "%s: the tuple's event time", msg)
		return
	}
	require.NoError(t, err, msg)
	if d := reference.Diff(q, want, got, 1e-9); d != "" {
		t.Fatalf("%s: differs from the reference: %s", msg, d)
	}
}

// int64Window is a random window for positions near the ends of int64:
// small, YSB's, or of sizes up to MaxInt64, tumbling or sliding, with at
// most 8 windows per position for the large ones (the reference finds
// them one by one).
func int64Window(r *rand.Rand) query.Window {
	var size, slide int64
	switch r.IntN(5) {
	case 0:
		size = 1 + r.Int64N(4)
	case 1:
		size = 10000
	case 2:
		size = 1 + r.Int64N(math.MaxInt64)
	case 3:
		size = math.MaxInt64 - r.Int64N(3)
	default:
		size = 1 + r.Int64N(200)
	}
	slide = size
	if r.IntN(2) == 0 {
		if size <= 200 {
			slide = 1 + r.Int64N(size)
		} else {
			slide = max(1, size/(1+r.Int64N(8)))
		}
	}
	w := query.Sliding(size, slide)
	if r.IntN(5) == 0 {
		w.Type = query.Rows
	}
	return w
}

// int64Times overwrites the event times of data's tuples (randTuple bytes
// each): near MinInt64 (from just below the lowest accepted position), near
// MaxInt64 (saturating there), or jumping between both ends and zero;
// roughly rising, with jitter and some far-late tuples.
func int64Times(r *rand.Rand, data []byte, spec window.Spec) string {
	n := len(data) / randTuple
	span := int64(math.MaxInt64)
	if spec.Size < span/4 {
		span = 4 * spec.Size
	}
	step := max(1, span/int64(max(n, 1))*int64(1+r.IntN(3)))
	mode := []string{"min", "max", "mixed"}[r.IntN(3)]
	lo := spec.Lowest()
	cur := lo - min(r.Int64N(3), lo-math.MinInt64)
	if mode == "max" {
		cur = math.MaxInt64 - r.Int64N(span)
	}
	for i := range n {
		et := cur
		if j := r.Int64N(step + 1); r.IntN(4) == 0 && et-math.MinInt64 >= j {
			et -= j // jitter back
		}
		switch {
		case mode == "mixed" && r.IntN(10) == 0:
			et = []int64{math.MinInt64, lo, lo + r.Int64N(span), 0, math.MaxInt64, math.MaxInt64 - r.Int64N(span)}[r.IntN(6)]
		case r.IntN(50) == 0 && et-math.MinInt64 >= span/2:
			et -= r.Int64N(span / 2) // far late
		}
		binary.LittleEndian.PutUint64(data[i*randTuple:], uint64(et))
		if d := r.Int64N(step + 1); cur > math.MaxInt64-d {
			cur = math.MaxInt64
		} else {
			cur += d
		}
	}
	return mode
}

// TestInt64EdgesIssue12: issue 12's cases, on both CPU kernels, every task
// size and worker count: the topmost window holds its tuples and is emitted
// at the end with End MaxInt64, [0, MaxInt64] keeps its top row, the lowest
// windows start at multiples of the slide, and a tuple whose first window
// would start below MinInt64 is refused, naming its byte offset.
func TestInt64EdgesIssue12(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	tuples := func(ets ...int64) []byte {
		b := make([]byte, len(ets)*randTuple)
		for i, e := range ets {
			binary.LittleEndian.PutUint64(b[i*randTuple:], uint64(e))
			binary.LittleEndian.PutUint32(b[i*randTuple+8:], uint32(i%3)) // a
		}
		return b
	}
	const low = -9223372036854770000
	top := int64(math.MaxInt64 / 10000 * 10000)
	aggs := []query.Aggregate{{Func: query.Count, As: "n"}, {Func: query.Max, Arg: query.C("ts"), As: "m"}}
	for _, tc := range []struct {
		name   string
		w      query.Window
		ets    []int64
		rows   int   // rows of the reference's output
		offset int64 // -1: accepted; else the refused tuple's byte offset
	}{
		{"top", query.Tumbling(10000), []int64{math.MaxInt64 - 100, math.MaxInt64 - 50}, 1, -1},
		{"0 and top", query.Tumbling(10000), []int64{0, math.MaxInt64}, 2, -1},
		{"top then late", query.Tumbling(1), []int64{math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64}, 1, -1},
		{"sliding top", query.Sliding(10000, 2500), []int64{math.MaxInt64 - 9999, math.MaxInt64, top}, 8, -1}, // top is late: its first window ends at top+2500
		{"low", query.Tumbling(10000), []int64{low, low + 1, low + 10000}, 2, -1},
		{"MinInt64", query.Tumbling(10000), []int64{low, 5, math.MinInt64, 7}, 0, 2 * randTuple},
		{"MinInt64 first", query.Tumbling(3), []int64{math.MinInt64}, 0, 0},
		{"MinInt64 of one", query.Tumbling(1), []int64{math.MinInt64, math.MaxInt64}, 2, -1},
		{"sliding low", query.Sliding(20000, 10000), []int64{low + 10000, low}, 0, randTuple},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &query.Query{Name: "i12", Schema: s, Window: tc.w, Aggregates: aggs}
			data := tuples(tc.ets...)
			want, werr := reference.Evaluate(q, data)
			if tc.offset >= 0 {
				require.Error(t, werr)
				assert.Contains(t, werr.Error(), fmt.Sprintf("(byte offset %d)", tc.offset))
			} else {
				require.NoError(t, werr)
				require.Len(t, want.Rows, tc.rows)
			}
			r := rand.New(rand.NewPCG(1, 2))
			for _, vec := range []bool{false, true} {
				for _, task := range int64TaskSizes {
					for _, workers := range int64Workers {
						cfg := Config{Workers: workers, TaskSize: task, BufferSize: 1 << 14, Vectorised: vec}
						got, err := collectAll(t, cfg, q, data, r)
						checkInt64Run(t, q, data, want, werr, got, err, fmt.Sprintf("vectorised %v, task %d, workers %d", vec, task, workers))
					}
				}
			}
		})
	}
	assertNoLeak(t, base)
}

// TestInt64EdgesMatchReference: random queries (every operator), range and
// row windows, tumbling and sliding, of random sizes up to MaxInt64, over
// event times near MinInt64, near MaxInt64 and mixed, every task size and
// worker count, both CPU kernels: the engine's output is the reference's,
// or both refuse the same tuple.
func TestInt64EdgesMatchReference(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	seeds := seeds(10, 15, 60)
	modes := map[string]int{}
	refused := 0
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 12))
		q := randQuery(r, s)
		for q.Stateless() {
			q = randQuery(r, s)
		}
		q.Window = int64Window(r)
		require.NoError(t, q.Validate())
		spec, err := window.NewSpec(q.Window)
		require.NoError(t, err)
		data := randData(r, 50+r.IntN(700))
		mode := int64Times(r, data, spec)
		modes[mode]++
		want, werr := reference.Evaluate(q, data)
		if werr != nil {
			refused++
			require.Contains(t, werr.Error(), "lies in a window starting below the int64 range", "seed %d", seed)
		}
		for _, vec := range []bool{false, true} {
			for _, task := range int64TaskSizes {
				for _, workers := range int64Workers {
					cfg := Config{Workers: workers, TaskSize: task, BufferSize: 1 << 14, Vectorised: vec}
					got, err := collectAll(t, cfg, q, data, r)
					checkInt64Run(t, q, data, want, werr, got, err, fmt.Sprintf("seed %d, %s, vectorised %v, task %d, workers %d, where=%v window=%+v group=%v aggs=%v having=%v",
						seed, mode, vec, task, workers, q.Where, q.Window, q.GroupBy, q.Aggregates, q.Having))
				}
			}
		}
	}
	t.Logf("modes %v, %d of %d refused", modes, refused, seeds)
	assert.Positive(t, refused)
	assert.Less(t, refused, seeds)
	assertNoLeak(t, base)
}

// TestInt64EdgesGPUEmulator: queries the GPU runs, on the emulator (gpu
// mode: every task on the device or its CPU fallback), over event times
// near both ends of int64: the results are the reference's (the device's
// wrapping arithmetic is never used where it differs: those tasks fall
// back), refusals included.
func TestInt64EdgesGPUEmulator(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	seeds := seeds(6, 10, 40)
	var fallbacks, tasks uint64
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 13))
		q := randGPUQuery(r, s)
		for q.Stateless() || !gpuSupported(t, q) {
			q = randGPUQuery(r, s)
		}
		q.Window = int64Window(r)
		require.True(t, gpuSupported(t, q))
		spec, err := window.NewSpec(q.Window)
		require.NoError(t, err)
		data := randData(r, 50+r.IntN(700))
		mode := int64Times(r, data, spec)
		want, werr := reference.Evaluate(q, data)
		for _, depth := range []int{1, 3} {
			dev := gpu.NewEmulator()
			cfg := Config{Workers: 1, TaskSize: randTuple * (1 + r.IntN(60)), BufferSize: 1 << 14, GPU: dev, GPUOnly: true, GPUDepth: depth}
			got, err := collectAll(t, cfg, q, data, r)
			msg := fmt.Sprintf("seed %d, %s, depth %d, task %d, where=%v window=%+v aggs=%v", seed, mode, depth, cfg.TaskSize, q.Where, q.Window, q.Aggregates)
			checkInt64Run(t, q, data, want, werr, got, err, msg)
			require.NoError(t, dev.Close())
		}
		// The fallbacks, counted on a run that succeeds.
		if werr == nil {
			dev := gpu.NewEmulator()
			e, err := Start(Config{Workers: 1, TaskSize: randTuple * 16, BufferSize: 1 << 14, GPU: dev, GPUOnly: true}, []Spec{{Query: q, Windows: func(*Window) error { return nil }}})
			require.NoError(t, err)
			require.NoError(t, e.Write(data))
			st, err := e.Close()
			require.NoError(t, err)
			fallbacks += st.GPUFallbackTasks
			tasks += st.Tasks
			require.NoError(t, dev.Close())
		}
	}
	t.Logf("%d of %d tasks fell back to the CPU", fallbacks, tasks)
	assert.Less(t, fallbacks, tasks, "the device ran tasks near the edges")
	assertNoLeak(t, base)
}

// TestInt64EdgesWindowJoin: a window join at both ends of int64 against
// the reference, and a refused tuple of its right input.
func TestInt64EdgesWindowJoin(t *testing.T) {
	parallel(t)
	s := randSchema(t)
	tuples := func(ets ...int64) []byte {
		b := make([]byte, len(ets)*randTuple)
		for i, e := range ets {
			binary.LittleEndian.PutUint64(b[i*randTuple:], uint64(e))
		}
		return b
	}
	j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Sliding(10, 5)}
	for _, tc := range []struct {
		left, right []byte
		refused     string
	}{
		{tuples(math.MaxInt64-12, math.MaxInt64, math.MaxInt64-3), tuples(math.MaxInt64-7, math.MaxInt64), ""},
		{tuples(math.MinInt64+10, math.MinInt64+12), tuples(math.MinInt64 + 13), ""}, // the lowest accepted time is MinInt64+8
		{tuples(0, 1), tuples(2, math.MinInt64+3), `query "j" right input: tuple 1 (byte offset 48)`},
	} {
		want, werr := reference.EvaluateJoin(j, tc.left, tc.right)
		var out []byte
		e, err := Start(Config{Workers: 2, TaskSize: randTuple, BufferSize: 1 << 12}, []Spec{{Join: j, Tuples: func(b []byte) error { out = doubling.Append(out, b...); return nil }}})
		require.NoError(t, err)
		l, rr := e.Stream(0), e.Stream(0).Right()
		werrL, werrR := l.Write(tc.left), rr.Write(tc.right)
		_, err = e.CloseAll()
		if tc.refused != "" {
			require.Error(t, werr)
			assert.Contains(t, werr.Error(), "right input: tuple 1 (byte offset 48)")
			require.ErrorIs(t, err, ErrInput)
			assert.ErrorContains(t, err, tc.refused)
			continue
		}
		require.NoError(t, errors.Join(werr, werrL, werrR, err))
		assert.Equal(t, want.Tuples, out)
		assert.NotEmpty(t, out)
	}
}
