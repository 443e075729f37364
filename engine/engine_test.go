package engine

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// The test stream: 32-byte tuples of event time, a filter column, a value and
// a 16-byte key joined to a group.
const testTuple = 32

func testSchema(t testing.TB) *query.Schema {
	s, err := query.NewSchema(testTuple,
		query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "kind", Type: query.Int32, Offset: 8},
		query.Attribute{Name: "val", Type: query.Int32, Offset: 12},
		query.Attribute{Name: "key", Type: query.Bytes, Offset: 16, Size: 16},
	)
	require.NoError(t, err)
	return s
}

type testTable struct {
	keys   [][]byte // join keys; the last one is not in the table
	groups [][]byte // group value of keys[i]
	// byColumns: GROUP BY the stream columns (kind, val) instead of the
	// joined value; the join still filters.
	byColumns bool
}

func newTestTable(r *rand.Rand, nkeys, ngroups int) testTable {
	var tt testTable
	gs := make([][]byte, ngroups)
	for i := range gs {
		gs[i] = randBytes(r, 16)
	}
	for range nkeys + 1 {
		tt.keys = append(tt.keys, randBytes(r, 16))
		tt.groups = append(tt.groups, gs[r.IntN(ngroups)])
	}
	return tt
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func groupBy(tt testTable) []query.Expr {
	if tt.byColumns {
		return []query.Expr{query.C("kind"), query.C("val")}
	}
	return []query.Expr{query.C("g")}
}

// columnKey is the engine's encoding of the key (kind, val): big-endian,
// sign bit flipped, so that byte order is value order.
func columnKey(t []byte) string {
	var k [8]byte
	binary.BigEndian.PutUint32(k[0:], binary.LittleEndian.Uint32(t[8:])^(1<<31))
	binary.BigEndian.PutUint32(k[4:], binary.LittleEndian.Uint32(t[12:])^(1<<31))
	return string(k[:])
}

func testQuery(s *query.Schema, w query.Window, tt testTable) *query.Query {
	n := len(tt.keys) - 1
	return &query.Query{
		Name: "t", Schema: s, Window: w,
		Where:   query.ColLt("kind", 3),
		Join:    &query.StaticJoin{Column: "key", Table: &query.StaticTable{KeyWidth: 16, ValueWidth: 16, Keys: tt.keys[:n], Values: tt.groups[:n]}, As: "g"},
		GroupBy: groupBy(tt),
		Aggregates: []query.Aggregate{
			{Func: query.Count}, {Func: query.Sum, Arg: query.C("val")}, {Func: query.Min, Arg: query.C("val")},
			{Func: query.Max, Arg: query.C("val")}, {Func: query.Max, Arg: query.C("ts")},
		},
	}
}

// genStream makes n tuples whose event time drifts forward with jitter
// (out-of-order tuples) and occasional big steps back (late tuples).
func genStream(r *rand.Rand, n int, tt testTable, step, jitter int64) []byte {
	b := make([]byte, n*testTuple)
	ts := r.Int64N(1000) - 500 // negative event times too
	for i := range n {
		t := b[i*testTuple : (i+1)*testTuple]
		ts += r.Int64N(step + 1)
		et := ts - r.Int64N(jitter+1)
		if r.IntN(50) == 0 {
			et -= r.Int64N(20 * (step + 1) * 10)
		}
		binary.LittleEndian.PutUint64(t[0:], uint64(et))
		binary.LittleEndian.PutUint32(t[8:], uint32(r.IntN(4)))
		// val in [-200, 200): grouped by (kind, val) (byColumns), a direct
		// table of 1200 slots and up. Of [-1000, 1000) it was 6000 and up,
		// each fragment's cleared and its keys written for every slot (a
		// fragment per pane a task touches, the task of one tuple too):
		// most of TestEngineMatchesNaive's time, through the same paths.
		binary.LittleEndian.PutUint32(t[12:], uint32(r.Int32N(400)-200))
		copy(t[16:], tt.keys[r.IntN(len(tt.keys))])
	}
	return b
}

type row struct {
	start, end int64
	key        string
	aggs       [5]int64
}

type counts struct{ tuples, filtered, unmatched, late, counted uint64 }

// naive evaluates the query by its definition, tuple by tuple, recomputing
// window membership from scratch: the oracle.
func naive(data []byte, w query.Window, tt testTable) ([]row, counts) {
	group := map[string]string{}
	for i, k := range tt.keys[:len(tt.keys)-1] {
		group[string(k)] = string(tt.groups[i])
	}
	type wk struct {
		w   int64
		key string
	}
	acc := map[wk]*[5]int64{}
	var c counts
	var wm int64
	hasWM := false
	for off := 0; off < len(data); off += testTuple {
		t := data[off : off+testTuple]
		ts := int64(binary.LittleEndian.Uint64(t))
		pos := ts // the tuple's window position
		if w.Type == query.Rows {
			pos = int64(off / testTuple)
		}
		prev, had := wm, hasWM
		if !hasWM || pos > wm {
			wm, hasWM = pos, true
		}
		c.tuples++
		if int32(binary.LittleEndian.Uint32(t[8:])) >= 3 {
			c.filtered++
			continue
		}
		g, ok := group[string(t[16:32])]
		if !ok {
			c.unmatched++
			continue
		}
		if tt.byColumns {
			g = columnKey(t)
		}
		// Windows containing pos, by brute force.
		last := pos / w.Slide
		for last*w.Slide > pos {
			last--
		}
		for (last+1)*w.Slide <= pos {
			last++
		}
		first := last
		for (first-1)*w.Slide+w.Size > pos {
			first--
		}
		if had && prev >= first*w.Slide+w.Size {
			c.late++
			continue
		}
		c.counted++
		v := int64(int32(binary.LittleEndian.Uint32(t[12:])))
		for win := first; win <= last; win++ {
			a := acc[wk{win, g}]
			if a == nil {
				acc[wk{win, g}] = &[5]int64{1, v, v, v, ts}
				continue
			}
			a[0]++
			a[1] += v
			a[2] = min(a[2], v)
			a[3] = max(a[3], v)
			a[4] = max(a[4], ts)
		}
	}
	var rows []row
	for k, a := range acc {
		rows = append(rows, row{start: k.w * w.Slide, end: k.w*w.Slide + w.Size, key: k.key, aggs: *a})
	}
	slices.SortFunc(rows, func(a, b row) int {
		if a.start != b.start {
			return int(a.start - b.start)
		}
		return cmpString(a.key, b.key)
	})
	return rows, c
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// runEngine feeds data in writes of random sizes (tuples split across writes).
func runEngine(t testing.TB, cfg Config, q *query.Query, data []byte, r *rand.Rand) ([]row, Stats, error) {
	var rows []row
	e, err := New(cfg, q, rowSink(&rows))
	require.NoError(t, err)
	for len(data) > 0 {
		n := min(len(data), 1+r.IntN(3*cfg.TaskSize))
		require.NoError(t, e.Write(data[:n]))
		data = data[n:]
	}
	st, err := e.Close()
	return rows, st, err
}

// rowSink appends every window's rows to *rows, checking that windows come
// in order and that GroupInt agrees with Key.
func rowSink(rows *[]row) Sink {
	lastStart := int64(-1 << 62)
	return func(w *Window) error {
		if w.Start <= lastStart {
			return fmt.Errorf("window %d emitted after window %d", w.Start, lastStart)
		}
		lastStart = w.Start
		for i := range w.Rows() {
			rw := row{start: w.Start, end: w.End, key: string(w.Key(i))}
			if len(w.plan.KeyParts) == 2 {
				var k [16]byte
				binary.LittleEndian.PutUint32(k[8:], uint32(w.GroupInt(i, 0)))
				binary.LittleEndian.PutUint32(k[12:], uint32(w.GroupInt(i, 1)))
				if got := columnKey(k[:]); got != rw.key {
					return fmt.Errorf("GroupInt decodes %x, Key is %x", got, rw.key)
				}
			}
			for a := range rw.aggs {
				rw.aggs[a] = w.Agg(i, a)
			}
			*rows = append(*rows, rw)
		}
		return nil
	}
}

// TestEngineMatchesNaive is the property test of the data path: random
// windows (tumbling and sliding, slides that do and do not divide the size,
// windows smaller than a task and spanning many), random task sizes, worker
// counts and write sizes, with out-of-order and late tuples, against the
// naive evaluator.
func TestEngineMatchesNaive(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	for seed := range seeds(4, 10, 40) {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		size := 1 + r.Int64N(400)
		slide := size
		if r.IntN(2) == 0 {
			slide = 1 + r.Int64N(size)
		}
		w := query.Sliding(size, slide)
		if seed%3 == 2 {
			w.Type = query.Rows
		}
		tt := newTestTable(r, 1+r.IntN(30), 1+r.IntN(8))
		tt.byColumns = seed%2 == 1
		data := genStream(r, 200+r.IntN(6000), tt, r.Int64N(6), r.Int64N(40))
		cfg := Config{
			Workers:    1 + r.IntN(4),
			Pin:        r.IntN(2) == 0,
			TaskSize:   testTuple * (1 + r.IntN(300)),
			BufferSize: 1 << 16,
		}
		for cfg.BufferSize < 2*cfg.TaskSize {
			cfg.BufferSize *= 2
		}
		name := fmt.Sprintf("seed%d/%s/columns%v/size%d/slide%d/workers%d/task%d", seed, w.Type, tt.byColumns, size, slide, cfg.Workers, cfg.TaskSize)
		t.Run(name, func(t *testing.T) {
			want, wc := naive(data, w, tt)
			for _, vec := range []bool{false, true} {
				cfg.Vectorised = vec
				got, st, err := runEngine(t, cfg, testQuery(testSchema(t), w, tt), data, r)
				require.NoError(t, err)
				assertRows(t, want, got)
				assert.Equal(t, wc, counts{st.Tuples, st.Filtered, st.Unmatched, st.Late, st.Counted})
				assert.Equal(t, st.Tuples, st.Filtered+st.Unmatched+st.Late+st.Counted)
			}
		})
	}
	assertNoLeak(t, base)
}

// assertNoLeak checks that the goroutines the test started are gone,
// waiting up to 2 s for them: the process's count back to base (taken with
// runtime.NumGoroutine at the test's start), or, for a test that parallel
// labeled, whose count the tests beside it change, no goroutine with its
// label but its own and its subtests'.
func assertNoLeak(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	if name, _, _ := strings.Cut(t.Name(), "/"); isParallel(name) {
		n, stacks := startedGoroutines(name)
		for n > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			n, stacks = startedGoroutines(name)
		}
		assert.Zero(t, n, "goroutines left behind:\n%s", stacks)
		return
	}
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), base, "goroutines left behind")
}

func TestEdgeWindows(t *testing.T) {
	parallel(t)
	r := rand.New(rand.NewPCG(1, 2))
	tt := newTestTable(r, 5, 3)
	s := testSchema(t)
	for _, w := range []query.Window{
		query.Tumbling(1),      // windows of one time unit
		query.Sliding(7, 3),    // slide not dividing the size
		query.Sliding(1000, 1), // many windows per tuple
		query.Tumbling(1 << 40),
		{Type: query.Rows, Size: 1, Slide: 1},   // one tuple per window
		{Type: query.Rows, Size: 100, Slide: 7}, // count window sliding by 7 tuples
	} {
		data := genStream(r, 3000, tt, 3, 10)
		want, wc := naive(data, w, tt) // once for the three task sizes
		for _, task := range []int{testTuple, 7 * testTuple, 4096} {
			cfg := Config{Workers: 3, TaskSize: task, BufferSize: 1 << 14}
			got, st, err := runEngine(t, cfg, testQuery(s, w, tt), data, r)
			require.NoError(t, err)
			assertRows(t, want, got, "window %+v task %d", w, task)
			assert.Equal(t, wc, counts{st.Tuples, st.Filtered, st.Unmatched, st.Late, st.Counted})
		}
	}
}

func TestEmptyWindowsEmitNothing(t *testing.T) {
	parallel(t)
	r := rand.New(rand.NewPCG(3, 4))
	tt := newTestTable(r, 4, 2)
	// Two bursts far apart: the windows between are empty and not emitted.
	a := genStream(r, 100, tt, 1, 0)
	b := genStream(r, 100, tt, 1, 0)
	for i := 0; i < len(b); i += testTuple {
		binary.LittleEndian.PutUint64(b[i:], binary.LittleEndian.Uint64(b[i:])+1_000_000)
	}
	data := append(a, b...)
	w := query.Tumbling(10)
	want, _ := naive(data, w, tt)
	got, st, err := runEngine(t, Config{Workers: 2, TaskSize: 320, BufferSize: 4096}, testQuery(testSchema(t), w, tt), data, r)
	require.NoError(t, err)
	assertRows(t, want, got)
	assert.Less(t, st.Windows, uint64(100), "only windows with rows are emitted")
}

// TestTaskRecordsMadeOnDemand: a ring of thousands of one-tuple tasks
// starts with preallocRecords task records; the producer makes more while
// every record is in flight (here: held by a sink that waits), and the
// windows are the naive evaluation's.
func TestTaskRecordsMadeOnDemand(t *testing.T) {
	parallel(t)
	r := rand.New(rand.NewPCG(5, 6))
	tt := newTestTable(r, 4, 2)
	data := genStream(r, 1000, tt, 1, 0)
	w := query.Tumbling(10)
	want, _ := naive(data, w, tt)
	var rows []row
	sink, release := rowSink(&rows), make(chan struct{})
	e, err := New(Config{Workers: 2, TaskSize: testTuple, BufferSize: 1 << 16}, testQuery(testSchema(t), w, tt), func(w *Window) error {
		<-release
		return sink(w)
	})
	require.NoError(t, err)
	s := e.streams[0]
	require.Len(t, s.records, 1<<16/testTuple+1)
	assert.Equal(t, preallocRecords, s.made, "records made at the start")
	require.NoError(t, e.Write(data))
	assert.Greater(t, s.made, preallocRecords, "records made while the sink held the first window")
	close(release)
	_, err = e.Close()
	require.NoError(t, err)
	assertRows(t, want, rows)
}

func TestConfigValidate(t *testing.T) {
	parallel(t)
	ok := Config{Workers: 1, TaskSize: 256, BufferSize: 1024}
	require.NoError(t, ok.Validate(128))
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Workers: 0, TaskSize: 256, BufferSize: 1024}, "workers 0"},
		{Config{Workers: 1, TaskSize: 100, BufferSize: 1024}, "task size 100"},
		{Config{Workers: 1, TaskSize: 256, BufferSize: 1000}, "power of two"},
		{Config{Workers: 1, TaskSize: 1024, BufferSize: 1024}, "two tasks"},
		{Config{Workers: 2, TaskSize: 1 << 40, BufferSize: 1 << 41}, "more than the"},
	} {
		assert.ErrorContains(t, tc.cfg.Validate(128), tc.want)
	}
	// A ring and a task per worker within the memory, and one byte over.
	big := Config{Workers: 3, TaskSize: 1 << 20, BufferSize: 1 << 22}
	assert.NoError(t, big.fitsMemory(7<<20))
	assert.EqualError(t, big.fitsMemory(7<<20-1), "buffer size 4194304 and a task of 1048576 bytes per worker (3 workers): "+
		"7.0 MiB, more than the 7.0 MiB of memory this process may use (smaller tasks or buffer fit)")
	assert.NoError(t, big.fitsMemory(0), "memory unknown")
	assert.Positive(t, machineMemory())
}

func TestSinkErrorStopsRun(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	r := rand.New(rand.NewPCG(5, 6))
	tt := newTestTable(r, 4, 2)
	data := genStream(r, 20000, tt, 2, 0)
	boom := fmt.Errorf("boom")
	e, err := New(Config{Workers: 2, TaskSize: 640, BufferSize: 4096}, testQuery(testSchema(t), query.Tumbling(5), tt),
		func(*Window) error { return boom })
	require.NoError(t, err)
	werr := e.Write(data)
	_, cerr := e.Close()
	assert.ErrorIs(t, cerr, boom)
	if werr != nil {
		assert.ErrorIs(t, werr, boom)
	}
	assertNoLeak(t, base)
}

func TestTrailingBytesRefused(t *testing.T) {
	parallel(t)
	r := rand.New(rand.NewPCG(7, 8))
	tt := newTestTable(r, 4, 2)
	e, err := New(Config{Workers: 1, TaskSize: 640, BufferSize: 4096}, testQuery(testSchema(t), query.Tumbling(5), tt), nil)
	require.NoError(t, err)
	require.NoError(t, e.Write(genStream(r, 10, tt, 1, 0)[:300]))
	_, err = e.Close()
	assert.ErrorContains(t, err, "12 trailing bytes")
}

// assertRows compares row lists by their first difference: a full diff of
// thousands of rows would take longer than the test.
func assertRows(t *testing.T, want, got []row, msg ...any) {
	t.Helper()
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			assert.Fail(t, fmt.Sprintf("row %d differs:\nwant %+v\ngot  %+v", i, want[i], got[i]), msg...)
			return
		}
	}
	assert.Equal(t, len(want), len(got), msg...)
}

// TestStatsWaitsForPublish: Stats does not return counters that publish is
// in the middle of changing (seq odd), nor a mix of two publishes, so that
// a snapshot always adds up.
func TestStatsWaitsForPublish(t *testing.T) {
	parallel(t)
	r := rand.New(rand.NewPCG(21, 22))
	tt := newTestTable(r, 8, 3)
	e, err := New(Config{Workers: 1, TaskSize: testTuple * 7, BufferSize: 1 << 12}, testQuery(testSchema(t), query.Tumbling(20), tt), nil)
	require.NoError(t, err)
	s := e.Stream(0)
	// A publish under way: tuples counted, their classification not yet.
	s.seq.Add(1)
	s.tuples.Store(10)
	got := make(chan Stats)
	go func() { got <- s.Stats() }()
	select {
	case st := <-got:
		t.Fatalf("Stats returned during a publish: %+v", st)
	case <-time.After(50 * time.Millisecond):
	}
	s.filtered.Store(4)
	s.counted.Store(6)
	s.seq.Add(1)
	st := <-got
	assert.Equal(t, uint64(10), st.Tuples)
	assert.Equal(t, st.Tuples, st.Filtered+st.Unmatched+st.Late+st.Counted)
	s.tuples.Store(0)
	s.filtered.Store(0)
	s.counted.Store(0)
	_, err = e.Close()
	require.NoError(t, err)
}
