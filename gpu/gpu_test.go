package gpu

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/kernels/cuda"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// runCase runs data, cut into random tasks, through program pr (depth
// slots, submitted and waited in random order) and through the plan's CPU
// kernel, and requires equal results wherever the program says ok, and ok
// exactly where every fragment of the CPU's result lies in the pane range
// the program chose for the task and, with hashed groups, its groups fit
// the task's table. It returns the tasks run and how many fell back.
//
// pr must be compiled from a plan of its own (compilePlans): a hashed
// group state's table size follows its layout's history (the largest
// table grown so far), so the CPU's results and the program's are
// compared with one layout each, and one TaskResult each, with the same
// history: a task that falls back runs on the CPU kernel into the
// program's result, as the engine does.
func runCase(t *testing.T, r *rand.Rand, p *kernels.Plan, pr *program, data []byte, maxTuples int, msg string) (tasks, fallbacks int) {
	t.Helper()
	require.True(t, p.Stateless() || pr.sh.layout != p.Layout, "the program's plan must not be the CPU's")
	k := p.NewKernel()
	type inflight struct {
		data         []byte
		first        uint64
		base, npanes int64
		slots        int64
		i            int
	}
	busy := make([]*inflight, pr.Depth())
	var first uint64
	var got, want window.TaskResult
	wait := func(s int) {
		f := busy[s]
		busy[s] = nil
		got.Reset(pr.sh.layout)
		ok, err := pr.Wait(s, &got)
		require.NoError(t, err)
		want.Reset(p.Layout)
		k.Process(f.data, f.first, &want)
		m := fmt.Sprintf("%s, task %d (%d tuples from %d, panes [%d, +%d), %d slots)", msg, f.i, len(f.data)/p.TupleSize, f.first, f.base, f.npanes, f.slots)
		if p.Stateless() {
			require.True(t, ok, m)
		} else {
			fits := !pr.sh.hashed || groupsOf(&want) <= f.slots
			require.Equal(t, inRange(&want, f.base, f.npanes) && fits, ok, "%s: ok; CPU panes %v, %d groups", m, panes(&want), groupsOf(&want))
		}
		if ok {
			requireSameResult(t, &want, &got, m)
		} else {
			fallbacks++
			got.Reset(pr.sh.layout)
			k.Process(f.data, f.first, &got)
		}
	}
	for i, task := range cutTasks(r, data, p.TupleSize, maxTuples) {
		s := r.IntN(len(busy))
		if busy[s] != nil {
			wait(s)
		}
		require.NoError(t, pr.Submit(s, task, first))
		st := pr.slots[s].t
		busy[s] = &inflight{data: task, first: first, base: st.base, npanes: st.npanes, slots: st.slots, i: i}
		first += uint64(len(task) / p.TupleSize)
		tasks++
	}
	for _, s := range r.Perm(len(busy)) {
		if busy[s] != nil {
			wait(s)
		}
	}
	return tasks, fallbacks
}

func compileEmu(t *testing.T, dev Device, p *kernels.Plan, depth int) *program {
	t.Helper()
	pr, err := dev.Compile(p, depth)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, pr.Close()) })
	return pr.(*program)
}

// compilePlans compiles q twice: a plan for the CPU kernel and one for a
// program (see runCase).
func compilePlans(t testing.TB, q *query.Query, o kernels.Options) (cpu, dev *kernels.Plan) {
	t.Helper()
	cpu, err := kernels.CompileWith(q, o)
	require.NoError(t, err)
	dev, err = kernels.CompileWith(q, o)
	require.NoError(t, err)
	return cpu, dev
}

// TestEmulatorMatchesCPURandomQueries: random queries of every supported
// shape over random data (aligned and packed tuples, late and
// out-of-order tuples, negative event times, windows inside and across
// tasks) give the CPU kernel's results, task by task, with several tasks
// in flight.
func TestEmulatorMatchesCPURandomQueries(t *testing.T) {
	base := runtime.NumGoroutine()
	dev := NewEmulator()
	defer dev.Close()
	// The long run's 120, at most 30 under -short, 30 by default.
	n := testenv.Scale(30, 120)
	if testing.Short() {
		n = min(n, 30)
	}
	var tasks, fallbacks, aggs int
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		ts := newTestSchema(t, seed%3 == 2)
		table := testTable(r, 1+r.IntN(40), 1+r.IntN(12))
		q := randQuery(r, ts, table)
		vec := r.IntN(3) == 0
		p, pg := compilePlans(t, q, kernels.Options{Vectorised: vec})
		require.NoError(t, Supported(p), "seed %d", seed)
		pr := compileEmu(t, dev, pg, 1+r.IntN(4))
		data := randData(r, ts, table, randGen(r), r.IntN(3000))
		msg := fmt.Sprintf("seed %d, vectorised %v, where=%v window=%+v join=%v group=%v aggs=%v project=%v",
			seed, vec, q.Where, q.Window, q.Join != nil, q.GroupBy, q.Aggregates, q.Project)
		nt, nf := runCase(t, r, p, pr, data, 1+r.IntN(1200), msg)
		tasks += nt
		fallbacks += nf
		if !p.Stateless() {
			aggs += nt
		}
	}
	t.Logf("%d tasks (%d of aggregations), %d fell back", tasks, aggs, fallbacks)
	assert.Less(t, fallbacks, aggs/4, "the default pane range holds most tasks")
	require.NoError(t, dev.Close())
	assertNoLeak(t, base)
}

// TestEmulatorFallsBackExactly: with no slack and few panes per slot, many
// tasks have panes outside their output, and with small tables many tasks'
// hashed groups do not fit; ok is false exactly for those.
func TestEmulatorFallsBackExactly(t *testing.T) {
	dev := NewEmulator()
	defer dev.Close()
	var tasks, fallbacks int
	for seed := range 40 {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		ts := newTestSchema(t, false)
		table := testTable(r, 20, 5)
		var q *query.Query
		for q == nil || q.Stateless() {
			q = randQuery(r, ts, table)
		}
		p, pg := compilePlans(t, q, kernels.Options{})
		pr := compileEmu(t, dev, pg, 1+r.IntN(3))
		pr.slack = func(int64) int64 { return int64(r.IntN(2)) }
		pr.maxPanes = 1 + r.Int64N(6)
		pr.maxSlots = 16 << r.IntN(3)
		g := randGen(r)
		g.lateEvery, g.lateBy = 10, 100
		data := randData(r, ts, table, g, 500+r.IntN(2000))
		nt, nf := runCase(t, r, p, pr, data, 1+r.IntN(600), fmt.Sprintf("seed %d, window %+v", seed, q.Window))
		tasks += nt
		fallbacks += nf
	}
	t.Logf("%d tasks, %d fell back", tasks, fallbacks)
	assert.Greater(t, fallbacks, tasks/20)
	assert.Less(t, fallbacks, tasks)
}

// TestEmulatorTaskSizes: every task size around the block size, for a
// sliding window with a join grouped by its value and every aggregate.
func TestEmulatorTaskSizes(t *testing.T) {
	dev := NewEmulator()
	defer dev.Close()
	r := rand.New(rand.NewPCG(3, 3))
	ts := newTestSchema(t, true)
	table := testTable(r, 30, 7)
	q := &query.Query{
		Name: "sizes", Schema: ts.s, Window: query.Sliding(40, 10),
		Where:   query.And(query.ColGe("a", -2), query.ColNe("b", 3)),
		Join:    &query.StaticJoin{Column: "k", Table: table, As: "v"},
		GroupBy: []query.Expr{query.C("v")},
		Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("c")},
			{Func: query.Min, Arg: query.C("a")}, {Func: query.Max, Arg: query.C("ts")}, {Func: query.Avg, Arg: query.C("b")}},
	}
	p, err := kernels.Compile(q)
	require.NoError(t, err)
	k := p.NewKernel()
	pr := compileEmu(t, dev, p, 1)
	g := dataGen{t0: -50, step: 1, jitter: 5, lateEvery: 30, lateBy: 60}
	fallbacks := 0
	for _, n := range []int{0, 1, 2, 31, 32, 33, 255, 256, 257, 511, 512, 513, 1000, 4097} {
		data := randData(r, ts, table, g, n)
		first := uint64(r.IntN(1000))
		require.NoError(t, pr.Submit(0, data, first))
		base, npanes := pr.slots[0].t.base, pr.slots[0].t.npanes
		var got window.TaskResult
		got.Reset(p.Layout)
		ok, err := pr.Wait(0, &got)
		require.NoError(t, err)
		want := cpuResult(p, k, data, first)
		require.Equal(t, inRange(want, base, npanes), ok, "n %d", n)
		if ok {
			requireSameResult(t, want, &got, fmt.Sprintf("n %d", n))
		} else {
			fallbacks++
		}
	}
	assert.Less(t, fallbacks, 4)
}

// TestEmulatorYSB: the YSB query on YSB-shaped data, the fused
// kernel's shape the GPU kernels generalise.
func TestEmulatorYSB(t *testing.T) {
	q, data := ysbShape(t, rand.New(rand.NewPCG(7, 7)), 8<<20)
	p, pg := compilePlans(t, q, kernels.Options{})
	require.NoError(t, Supported(p))
	dev := NewEmulator()
	defer dev.Close()
	pr := compileEmu(t, dev, pg, 4)
	r := rand.New(rand.NewPCG(1, 1))
	nt, nf := runCase(t, r, p, pr, data, (256<<10)/ysbTupleSize, "ysb")
	assert.Zero(t, nf, "of %d tasks", nt)
}

// TestEmulatorRowsWindowsAcrossTasks: ROWS windows take positions from
// first, not from the data: a task's panes are exactly those of its
// indexes, and never fall back.
func TestEmulatorRowsWindows(t *testing.T) {
	dev := NewEmulator()
	defer dev.Close()
	r := rand.New(rand.NewPCG(9, 9))
	ts := newTestSchema(t, false)
	q := &query.Query{
		Name: "rows", Schema: ts.s, Window: query.Window{Type: query.Rows, Size: 7, Slide: 3},
		Where:      query.ColLt("a", 8),
		Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("ts")}},
	}
	p, pg := compilePlans(t, q, kernels.Options{})
	pr := compileEmu(t, dev, pg, 3)
	data := randData(r, ts, &query.StaticTable{}, randGen(r), 5000)
	nt, nf := runCase(t, r, p, pr, data, 700, "rows")
	assert.Zero(t, nf, "of %d tasks", nt)
}

// TestPipelineOrders: with every slot in flight, waiting in any order
// gives each slot its own task's result; a busy slot refuses a second
// task, a free one refuses Wait.
func TestPipelineOrders(t *testing.T) {
	dev := NewEmulator()
	defer dev.Close()
	r := rand.New(rand.NewPCG(4, 4))
	ts := newTestSchema(t, false)
	table := testTable(r, 10, 3)
	q := &query.Query{
		Name: "pipe", Schema: ts.s, Window: query.Tumbling(25),
		Join: &query.StaticJoin{Column: "k", Table: table, As: "v"}, GroupBy: []query.Expr{query.C("v")},
		Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Max, Arg: query.C("c")}},
	}
	p, err := kernels.Compile(q)
	require.NoError(t, err)
	k := p.NewKernel()
	const depth = 4
	pr := compileEmu(t, dev, p, depth)
	assert.Equal(t, depth, pr.Depth())
	for round := range 20 {
		datas := make([][]byte, depth)
		for s := range depth {
			g := randGen(r)
			g.lateEvery = 0 // no fallback
			datas[s] = randData(r, ts, table, g, r.IntN(2000))
			require.NoError(t, pr.Submit(s, datas[s], uint64(s)))
		}
		assert.ErrorContains(t, pr.Submit(r.IntN(depth), datas[0], 0), "busy")
		for _, s := range r.Perm(depth) {
			var got window.TaskResult
			got.Reset(p.Layout)
			ok, err := pr.Wait(s, &got)
			require.NoError(t, err)
			require.True(t, ok)
			requireSameResult(t, cpuResult(p, k, datas[s], uint64(s)), &got, fmt.Sprintf("round %d slot %d", round, s))
		}
	}
	var r0 window.TaskResult
	_, err = pr.Wait(0, &r0)
	assert.ErrorContains(t, err, "no task")
	assert.ErrorContains(t, pr.Submit(depth, nil, 0), "out of range")
	assert.ErrorContains(t, pr.Submit(0, make([]byte, ts.s.TupleSize+1), 0), "whole")
}

// TestCloseWithTasksInFlight: Close waits for the slots in flight and
// leaves no goroutine; the program refuses work afterwards; closing the
// device closes the programs still open.
func TestCloseWithTasksInFlight(t *testing.T) {
	testCloseWithTasksInFlight(t, NewEmulator, 20000)
}

// testCloseWithTasksInFlight is TestCloseWithTasksInFlight on the device
// open returns, with tasks of n tuples; the device refuses work after its
// Close.
func testCloseWithTasksInFlight(t *testing.T, open func() Device, n int) {
	base := runtime.NumGoroutine()
	dev := open()
	r := rand.New(rand.NewPCG(5, 5))
	ts := newTestSchema(t, false)
	q := &query.Query{Name: "close", Schema: ts.s, Window: query.Tumbling(10), Aggregates: []query.Aggregate{{Func: query.Count}}}
	p, err := kernels.Compile(q)
	require.NoError(t, err)
	data := randData(r, ts, &query.StaticTable{}, randGen(r), n)
	for range 3 {
		pr, err := dev.Compile(p, 4)
		require.NoError(t, err)
		for s := range 4 {
			require.NoError(t, pr.Submit(s, data, 0))
		}
		require.NoError(t, pr.Close())
		require.NoError(t, pr.Close(), "a second Close is a no-op")
		assert.ErrorContains(t, pr.Submit(0, data, 0), "closed")
	}
	pr, err := dev.Compile(p, 2)
	require.NoError(t, err)
	require.NoError(t, pr.Submit(1, data, 0))
	require.NoError(t, dev.Close())
	assert.ErrorContains(t, pr.Submit(0, data, 0), "closed")
	_, err = dev.Compile(p, 2)
	assert.ErrorContains(t, err, "closed")
	assertNoLeak(t, base)
}

func assertNoLeak(t *testing.T, base int) {
	t.Helper()
	for range 100 {
		if runtime.NumGoroutine() <= base {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), base, "goroutines left behind")
}

// TestSupportedNamesWhatIsMissing: shapes without GPU kernels are refused,
// by Supported and by Compile, naming the operator.
func TestSupportedNamesWhatIsMissing(t *testing.T) {
	ts := newTestSchema(t, false)
	s8, err := query.NewSchema(24, query.Attribute{Name: "ts", Type: query.Int64}, query.Attribute{Name: "k", Type: query.Bytes, Offset: 8, Size: 8},
		query.Attribute{Name: "a", Type: query.Int32, Offset: 16})
	require.NoError(t, err)
	table8 := &query.StaticTable{KeyWidth: 8, ValueWidth: 1, Keys: [][]byte{make([]byte, 8)}, Values: [][]byte{{1}}}
	count := []query.Aggregate{{Func: query.Count}}
	win := query.Tumbling(10)
	// deep nests 17 additions to the right: 18 stack words.
	deep := query.C("a")
	for range 17 {
		deep = query.Add(query.C("b"), deep)
	}
	for _, c := range []struct {
		q    query.Query
		want string
	}{
		{query.Query{Aggregates: []query.Aggregate{{Func: query.Sum, Arg: query.C("y")}}, Window: win}, "SUM(y) over a float expression (float aggregates"},
		{query.Query{Aggregates: []query.Aggregate{{Func: query.Min, Arg: query.C("x")}}, Window: win}, "MIN(x) over a float expression"},
		{query.Query{Aggregates: []query.Aggregate{{Func: query.Avg, Arg: query.Mul(query.C("a"), query.C("x"))}}, Window: win}, "AVG((a * x)) over a float expression"},
		{query.Query{Project: []query.Projection{{Expr: query.Add(query.C("x"), query.Int(1))}}}, "projection (x + 1) (float arithmetic"},
		{query.Query{Project: []query.Projection{{Expr: query.C("a")}, {Expr: query.Mul(query.C("a"), query.Float(2.5))}}}, "projection (a * 2.5) (float arithmetic"},
		{query.Query{Project: []query.Projection{{Expr: deep}}}, "projection " + deep.String() + " (needs 18 evaluation stack words, the GPU has 16)"},
		{query.Query{Where: query.Cmp(deep, query.Gt, query.Int(0))}, "WHERE term " + deep.String() + " > 0: needs 18 evaluation stack words"},
		{query.Query{GroupBy: []query.Expr{deep}, Aggregates: count, Window: win}, "GROUP BY " + deep.String() + " (needs 18"},
		{query.Query{Aggregates: []query.Aggregate{{Func: query.Max, Arg: deep}}, Window: win}, "MAX(" + deep.String() + ") (needs 18"},
		{query.Query{UDF: &query.UDF{Name: "f", Output: ts.s, Fn: func(in []byte, ts int, out []byte) []byte { return out }}}, "UDF f (user code runs on the CPU only)"},
		// The device's panes are fixed; a session spec's pane is 0, which
		// Compile divided by (a panic that killed the process).
		{query.Query{Aggregates: count, Window: query.Sessions(10)}, "a session window"},
	} {
		q := c.q
		q.Name, q.Schema = "q", ts.s
		requireNoKernel(t, &q, c.want)
	}
	requireNoKernel(t, &query.Query{Name: "q", Schema: s8, Window: win, Aggregates: count,
		Join: &query.StaticJoin{Column: "k", Table: table8, As: "v"}}, "static join on a 8-byte key")
}

func requireNoKernel(t *testing.T, q *query.Query, want string) {
	t.Helper()
	p, err := kernels.Compile(q)
	require.NoError(t, err, want)
	err = Supported(p)
	require.ErrorIs(t, err, ErrNoKernel)
	assert.Contains(t, err.Error(), `query "q": `+want)
	_, cerr := NewEmulator().Compile(p, 2)
	require.ErrorIs(t, cerr, ErrNoKernel)
	assert.Contains(t, cerr.Error(), want)
}

// TestSupportedShapes: the shapes with GPU kernels: random ones, and
// those that were refused before expressions and hashed groups ran on the
// GPU.
func TestSupportedShapes(t *testing.T) {
	ts := newTestSchema(t, false)
	r := rand.New(rand.NewPCG(8, 8))
	for range 300 {
		table := testTable(r, 5, 2)
		q := randQuery(r, ts, table)
		p, err := kernels.Compile(q)
		require.NoError(t, err)
		require.NoError(t, Supported(p), "where=%v window=%+v group=%v aggs=%v project=%v", q.Where, q.Window, q.GroupBy, q.Aggregates, q.Project)
	}
	count := []query.Aggregate{{Func: query.Count}}
	win := query.Tumbling(10)
	// 16 additions to the right: 17 stack words, but the constant on the
	// right of each is an immediate operand.
	long := query.C("a")
	for range 40 {
		long = query.Add(long, query.Mul(query.C("b"), query.Int(3)))
	}
	for _, q := range []query.Query{
		{Where: query.Or(query.ColEq("a", 1), query.ColEq("b", 2)), Aggregates: count, Window: win},
		{Where: query.Cmp(query.C("a"), query.Lt, query.C("b")), Aggregates: count, Window: win},
		{Where: query.Cmp(query.C("x"), query.Lt, query.Int(3))},
		{Where: query.Cmp(query.Add(query.C("a"), query.Int(1)), query.Lt, query.Int(3))},
		{Where: query.Cmp(long, query.Lt, query.C("y"))},
		{GroupBy: []query.Expr{query.C("a")}, Aggregates: count, Window: win},
		{GroupBy: []query.Expr{query.Add(query.C("a"), query.C("b"))}, Aggregates: count, Window: win},
		{GroupBy: []query.Expr{query.C("k")}, Aggregates: count, Window: win},
		{Aggregates: []query.Aggregate{{Func: query.Avg, Arg: query.Mul(query.C("a"), query.C("c"))}}, Window: win},
		{Project: []query.Projection{{Expr: query.Add(query.C("a"), query.Int(1))}, {Expr: query.C("x")}, {Expr: query.Float(2)}, {Expr: long}}},
	} {
		q.Name, q.Schema = "q", ts.s
		require.NoError(t, Supported(mustCompile(t, &q)), "where=%v group=%v aggs=%v project=%v", q.Where, q.GroupBy, q.Aggregates, q.Project)
	}
	_, err := NewEmulator().Compile(mustCompile(t, &query.Query{Name: "d", Schema: ts.s}), 0)
	assert.ErrorContains(t, err, "depth 0")
}

func mustCompile(t *testing.T, q *query.Query) *kernels.Plan {
	p, err := kernels.Compile(q)
	require.NoError(t, err)
	return p
}

// TestPaneRange: the pane range of a task covers its first and last
// tuples' panes with slack, within maxPanes, and exactly the indexes' panes
// for ROWS windows.
func TestPaneRange(t *testing.T) {
	ts := newTestSchema(t, false)
	p := mustCompile(t, &query.Query{Name: "pr", Schema: ts.s, Window: query.Sliding(100, 10), Aggregates: []query.Aggregate{{Func: query.Count}}})
	pr := compileEmu(t, NewEmulator(), p, 1)
	tuples := func(ets ...int64) []byte {
		b := make([]byte, len(ets)*ts.s.TupleSize)
		for i, e := range ets {
			binary.LittleEndian.PutUint64(b[i*ts.s.TupleSize:], uint64(e))
		}
		return b
	}
	base, n := pr.paneRange(nil, 0)
	assert.Equal(t, [2]int64{0, 0}, [2]int64{base, n})
	base, n = pr.paneRange(tuples(5), 0)
	assert.Equal(t, [2]int64{-2, 5}, [2]int64{base, n})
	base, n = pr.paneRange(tuples(-5, 0, 1000), 0)
	assert.Equal(t, [2]int64{-1 - 14, 102 + 28}, [2]int64{base, n}, "span 102 panes, slack 2+102/8")
	base, n = pr.paneRange(tuples(1000, 0, -5), 0)
	assert.Equal(t, [2]int64{-15, 130}, [2]int64{base, n}, "last before first")
	pr.maxPanes = 50
	base, n = pr.paneRange(tuples(-5, 1000), 0)
	assert.Equal(t, [2]int64{-1, 50}, [2]int64{base, n}, "span beyond maxPanes")
	base, n = pr.paneRange(tuples(-1<<62, 1<<62), 0)
	assert.Equal(t, [2]int64{window.FloorDiv(-1<<62, 10), 50}, [2]int64{base, n}, "huge span")

	q := &query.Query{Name: "rows", Schema: ts.s, Window: query.Window{Type: query.Rows, Size: 6, Slide: 4}, Aggregates: []query.Aggregate{{Func: query.Count}}}
	pr = compileEmu(t, NewEmulator(), mustCompile(t, q), 1)
	base, n = pr.paneRange(tuples(9, 9, 9, 9, 9), 7) // positions 7..11, panes of 2
	assert.Equal(t, [2]int64{3, 3}, [2]int64{base, n})
}

// TestKernelParams: kernelParams (which the CUDA device's launches are
// checked against) is what kernels.ptx declares, kernel by kernel.
func TestKernelParams(t *testing.T) {
	entry := regexp.MustCompile(`(?s)\.visible \.entry (\w+)\((.*?)\)`)
	got := map[string]int{}
	for _, m := range entry.FindAllStringSubmatch(cuda.PTX, -1) {
		got[m[1]] = strings.Count(m[2], ".param")
	}
	assert.Equal(t, kernelParams, got)
	assert.ElementsMatch(t, append(append(append(append([]string{}, cuda.AggEntries...), cuda.SelEntries...), cuda.JoinEntries...), cuda.ScanEntries...), slices.Collect(maps.Keys(kernelParams)))
}

// TestDescriptorCodes: the codes the descriptors and programs carry are
// the ones kernels/cuda/kernels.cu's enums name (CMP_*, AGG_*, OP_*,
// H_*, SLOT_*), and the launch size.
func TestDescriptorCodes(t *testing.T) {
	src, err := os.ReadFile("../kernels/cuda/kernels.cu")
	require.NoError(t, err)
	enum := map[string]int64{}
	for _, m := range regexp.MustCompile(`\b([A-Z][A-Z0-9_]*) = (0x[0-9a-f]+|\d+)\b`).FindAllStringSubmatch(string(src), -1) {
		v, err := strconv.ParseInt(m[2], 0, 64)
		require.NoError(t, err)
		enum[m[1]] = v
	}
	for name, want := range map[string]int64{
		"CMP_EQ": int64(query.Eq), "CMP_NE": int64(query.Ne), "CMP_LT": int64(query.Lt),
		"CMP_LE": int64(query.Le), "CMP_GT": int64(query.Gt), "CMP_GE": int64(query.Ge),
		"AGG_ADD": int64(window.AggAdd), "AGG_MIN": int64(window.AggMin), "AGG_MAX": int64(window.AggMax),
		"OP_END": opEnd, "OP_LD_I32": opLdI32, "OP_LD_I64": opLdI64, "OP_LD_F32": opLdF32, "OP_LD_F64": opLdF64,
		"OP_CONST": opConst, "OP_I2F": opI2F, "OP_IADD": opIAdd, "OP_ISUB": opISub, "OP_IMUL": opIMul, "OP_IDIV": opIDiv,
		"OP_FADD": opFAdd, "OP_FSUB": opFSub, "OP_FMUL": opFMul, "OP_FDIV": opFDiv, "OP_ICMP": opICmp, "OP_FCMP": opFCmp,
		"OP_AND": opAnd, "OP_OR": opOr, "OP_REQUIRE": opRequire, "OPF_K": opK, "MAX_STACK": maxStack,
		"H_FILTERED": hdrFiltered, "H_UNMATCHED": hdrUnmatched, "H_LATE": hdrLate, "H_OUTSIDE": hdrOutside,
		"H_MAXPOS": hdrMaxPos, "H_OVERFLOW": hdrOverflow, "H_ENTRIES": hdrEntries, "HDR_WORDS": hdrWords,
		"SLOT_BUSY": slotBusy, "SLOT_ENTRY": slotEntry,
	} {
		v, ok := enum[name]
		if assert.True(t, ok, "kernels.cu has no %s", name) {
			assert.Equal(t, want, v, "kernels.cu's %s", name)
		}
	}
	// The arithmetic opcodes follow query.ArithOp's order (expr.go adds
	// Op - OpAdd to opIAdd and opFAdd).
	assert.Equal(t, []query.ArithOp{1, 2, 3, 4}, []query.ArithOp{query.OpAdd, query.OpSub, query.OpMul, query.OpDiv})
	assert.Equal(t, 256, blockDim)
	assert.Equal(t, uint64(0), bias(math.MinInt64))
	assert.Equal(t, int64(-5), unbias(bias(-5)))
	assert.Less(t, bias(-1), bias(0))
}
