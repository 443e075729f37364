package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// groupData is n tuples of ts whose column c takes values in [0, distinct)
// (a in [-4, 12), b in [0, 9)), event times rising by one every perMs
// tuples, one tuple in lateEvery (0: none) moved back by up to lateBy.
func groupData(r *rand.Rand, ts testSchema, n int, distinct int64, perMs int, lateEvery int, lateBy int64) []byte {
	data := randData(r, ts, &query.StaticTable{}, dataGen{}, n)
	size := ts.s.TupleSize
	oc := ts.off("c")
	for i := range n {
		t := data[i*size:]
		e := int64(i / perMs)
		if lateEvery > 0 && r.IntN(lateEvery) == 0 {
			e -= r.Int64N(lateBy + 1)
		}
		binary.LittleEndian.PutUint64(t, uint64(e))
		binary.LittleEndian.PutUint64(t[oc:], uint64(r.Int64N(distinct)))
	}
	return data
}

// TestEmulatorHashedGroups: GROUP BY stream columns and expressions with
// few and many groups (more than a GroupState's initial 64, so that the
// CPU's tables grow while it runs, and later states start larger), panes
// inside and across tasks, late tuples, the program's result reused from
// task to task: the CPU's fragments, Touched order and slot positions. With
// small tables, the tasks whose groups do not fit fall back, exactly those.
func TestEmulatorHashedGroups(t *testing.T) {
	dev := NewEmulator()
	defer dev.Close()
	hashedGroupCases(t, func(t *testing.T, p *kernels.Plan, depth int) *program { return compileEmu(t, dev, p, depth) })

	// The cases grow the CPU's tables.
	ts := newTestSchema(t, false)
	q := &query.Query{Name: "grow", Schema: ts.s, Window: query.Tumbling(100), GroupBy: []query.Expr{query.C("c")},
		Aggregates: []query.Aggregate{{Func: query.Count}}}
	p := mustCompile(t, q)
	want := cpuResult(p, p.NewKernel(), groupData(rand.New(rand.NewPCG(1, 1)), ts, 4000, 1024, 8, 0, 0), 0)
	assert.Greater(t, groupsOf(want)/int64(len(want.Frags)), int64(64))
}

// compileFunc compiles a plan on a device under test.
type compileFunc func(t *testing.T, p *kernels.Plan, depth int) *program

func hashedGroupCases(t *testing.T, compile compileFunc) {
	ts := newTestSchema(t, true)
	aggs := []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("b")},
		{Func: query.Min, Arg: query.Sub(query.C("a"), query.C("c"))}, {Func: query.Max, Arg: query.C("ts")},
		{Func: query.Avg, Arg: query.Mul(query.C("c"), query.C("a"))}}
	var tasks, fallbacks, overflows int
	for i, c := range []struct {
		keys     []query.Expr
		win      query.Window
		distinct int64
		perMs    int
	}{
		{[]query.Expr{query.C("c")}, query.Tumbling(1000), 1, 8},
		{[]query.Expr{query.C("c")}, query.Tumbling(1000), 64, 8},
		{[]query.Expr{query.C("c")}, query.Tumbling(100), 1024, 8},
		{[]query.Expr{query.C("c")}, query.Sliding(400, 100), 5000, 20},
		{[]query.Expr{query.Div(query.C("c"), query.Int(3)), query.C("a")}, query.Sliding(60, 20), 700, 4},
		{[]query.Expr{query.C("b"), query.Mul(query.C("c"), query.Int(-7)), query.C("a")}, query.Tumbling(30), 300, 8},
		{[]query.Expr{query.C("k")}, query.Tumbling(50), 2, 8},
		{[]query.Expr{query.C("a")}, query.Window{Type: query.Rows, Size: 3000, Slide: 1000}, 10, 1},
	} {
		for _, small := range []bool{false, true} {
			r := rand.New(rand.NewPCG(uint64(i), 21))
			q := &query.Query{Name: "hashed", Schema: ts.s, Window: c.win, GroupBy: c.keys, Aggregates: aggs,
				Where: query.Cmp(query.C("b"), query.Ne, query.Int(4))}
			p, pg := compilePlans(t, q, kernels.Options{})
			require.True(t, p.Layout.Hashed)
			require.NoError(t, Supported(p))
			pr := compile(t, pg, 1+r.IntN(4))
			if small {
				pr.maxSlots = 64
			}
			data := groupData(r, ts, 30000, c.distinct, c.perMs, 40, 300)
			msg := fmt.Sprintf("case %d (group by %v, %d distinct, window %+v, small tables %v)", i, c.keys, c.distinct, c.win, small)
			nt, nf := runCase(t, r, p, pr, data, 1+r.IntN(4000), msg)
			tasks += nt
			if small {
				overflows += nf
			} else {
				fallbacks += nf
			}
		}
	}
	t.Logf("%d tasks, %d fell back with the default tables, %d with small ones", tasks, fallbacks, overflows)
	assert.Less(t, fallbacks, tasks/4, "pane ranges: far-late tuples on small panes")
	assert.Greater(t, overflows, fallbacks, "small tables add fallbacks")
}

// TestEmulatorExpressionEdgeCases: programs in WHERE, projections,
// aggregate arguments and keys over values that divide by zero and by -1,
// overflow, convert to float inexactly, and NaNs, infinities and -0.
func TestEmulatorExpressionEdgeCases(t *testing.T) {
	dev := NewEmulator()
	defer dev.Close()
	data := expressionEdgeCases(t, func(t *testing.T, p *kernels.Plan, depth int) *program { return compileEmu(t, dev, p, depth) })

	// The interpreter itself, on constants: Go's results.
	ts := newTestSchema(t, false)
	I, F := query.Int, query.Float
	c := &exprCompiler{s: ts.s}
	for _, tc := range []struct {
		e    query.Expr
		want uint64
	}{
		{query.Div(I(math.MinInt64), I(-1)), 1 << 63},
		{query.Div(I(7), I(0)), 0},
		{query.Div(I(-7), I(2)), uint64(1<<64 - 3)},
		{query.Mul(I(math.MaxInt64), I(2)), uint64(1<<64 - 2)},
		{query.Add(I(1<<53+1), F(0)), math.Float64bits(1 << 53)},
		{query.Div(I(1), F(0)), math.Float64bits(math.Inf(1))},
		{query.Cmp(F(math.NaN()), query.Ne, F(math.NaN())), 1},
		{query.Cmp(F(math.NaN()), query.Eq, F(math.NaN())), 0},
		{query.Or(query.Cmp(I(1), query.Gt, I(2)), query.Cmp(I(3), query.Le, F(3))), 1},
		{query.And(query.Cmp(I(1), query.Lt, I(2)), query.Cmp(I(3), query.Lt, F(3))), 0},
	} {
		start, _, err := c.program(tc.e)
		require.NoError(t, err)
		assert.Equal(t, tc.want, evalCode(c.code[start:], data[:ts.s.TupleSize]), "%s", tc.e)
	}
}

// expressionEdgeCases runs its queries on compile's device and returns
// their data.
func expressionEdgeCases(t *testing.T, compile compileFunc) []byte {
	ts := newTestSchema(t, false)
	ints := []int64{math.MinInt64, math.MinInt64 + 1, -1 << 53, -7, -1, 0, 1, 2, 3, 1<<53 + 1, math.MaxInt64 - 1, math.MaxInt64}
	int32s := []int32{math.MinInt32, -7, -1, 0, 1, 2, math.MaxInt32}
	f32s := []uint32{0x7fc00001, 0xff800123, 0x7f800001, 0x7f800000, 0xff800000, 0x80000000, 0, math.Float32bits(1.5), math.Float32bits(-3)}
	f64s := []uint64{0x7ff8000000000001, 0xfff0000000000123, 0x7ff0000000000000, 0xfff0000000000000, 1 << 63, 0,
		math.Float64bits(9.223372036854775807e18), math.Float64bits(-2.5), math.Float64bits(1e308)}
	r := rand.New(rand.NewPCG(31, 31))
	n := 20000
	size := ts.s.TupleSize
	data := make([]byte, n*size)
	for i := range n {
		tp := data[i*size:]
		binary.LittleEndian.PutUint64(tp, uint64(i/10))
		binary.LittleEndian.PutUint32(tp[ts.off("a"):], uint32(int32s[r.IntN(len(int32s))]))
		binary.LittleEndian.PutUint32(tp[ts.off("b"):], uint32(int32s[r.IntN(len(int32s))]))
		binary.LittleEndian.PutUint64(tp[ts.off("c"):], uint64(ints[r.IntN(len(ints))]))
		binary.LittleEndian.PutUint32(tp[ts.off("x"):], f32s[r.IntN(len(f32s))])
		binary.LittleEndian.PutUint64(tp[ts.off("y"):], f64s[r.IntN(len(f64s))])
	}
	C, I, F := query.C, query.Int, query.Float
	projections := []query.Expr{
		query.Div(C("c"), C("b")), query.Div(C("c"), C("a")), query.Div(C("c"), I(-1)), query.Div(C("a"), I(0)),
		query.Mul(C("c"), C("c")), query.Add(C("c"), C("c")), query.Sub(C("a"), C("c")), query.Mul(C("a"), C("b")),
		query.Div(I(math.MinInt64), C("a")), C("x"), C("y"), F(math.Copysign(0, -1)), F(math.NaN()), C("a"), C("c"),
	}
	predicates := []query.Expr{
		query.Cmp(C("x"), query.Ne, C("x")), // NaN
		query.Cmp(C("y"), query.Eq, C("y")),
		query.Cmp(C("c"), query.Eq, F(9.223372036854775807e18)), // MaxInt64 converts to 2^63
		query.Cmp(C("c"), query.Lt, C("y")),
		query.Cmp(query.Div(C("y"), C("x")), query.Ge, I(0)),
		query.Cmp(query.Mul(C("x"), C("c")), query.Le, F(math.Inf(1))),
		query.Cmp(query.Sub(C("y"), C("y")), query.Eq, F(0)), // inf - inf: NaN
		query.Cmp(query.Div(C("c"), C("b")), query.Gt, I(0)),
		query.Cmp(query.Div(C("c"), I(-1)), query.Lt, I(0)),
		query.Cmp(query.Add(C("c"), I(1)), query.Lt, C("c")), // overflow
		query.Or(query.Cmp(query.Div(C("a"), C("b")), query.Eq, I(0)), query.Cmp(C("x"), query.Gt, F(1))),
		query.And(query.Cmp(C("a"), query.Ne, I(0)), query.Cmp(query.Div(F(1), C("a")), query.Lt, F(0.25))),
	}
	var queries []*query.Query
	for _, w := range predicates {
		queries = append(queries, &query.Query{Name: "where", Schema: ts.s, Where: w},
			&query.Query{Name: "whereproj", Schema: ts.s, Where: w, Project: []query.Projection{{Expr: C("c")}, {Expr: query.Div(C("c"), C("b"))}}})
	}
	for _, e := range projections {
		queries = append(queries, &query.Query{Name: "proj", Schema: ts.s, Project: []query.Projection{{Expr: e}, {Expr: C("a")}}})
	}
	for _, e := range projections[:9] {
		queries = append(queries,
			&query.Query{Name: "arg", Schema: ts.s, Window: query.Tumbling(7), Where: query.Cmp(C("y"), query.Ge, I(0)),
				Aggregates: []query.Aggregate{{Func: query.Sum, Arg: e}, {Func: query.Min, Arg: e}, {Func: query.Max, Arg: e}, {Func: query.Avg, Arg: e}}},
			&query.Query{Name: "key", Schema: ts.s, Window: query.Sliding(20, 5), GroupBy: []query.Expr{e},
				Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Max, Arg: C("c")}}})
	}
	for i, q := range queries {
		p, pg := compilePlans(t, q, kernels.Options{})
		require.NoError(t, Supported(p), "%d: %v %v %v %v", i, q.Where, q.Project, q.GroupBy, q.Aggregates)
		pr := compile(t, pg, 2)
		msg := fmt.Sprintf("query %d %s: where %v project %v group %v aggs %v", i, q.Name, q.Where, q.Project, q.GroupBy, q.Aggregates)
		_, nf := runCase(t, r, p, pr, data, 3000, msg)
		assert.Zero(t, nf, msg)
	}

	return data
}

// TestHashedUnpackReplaysTheCPU: the program's result is reused from task
// to task; its spare states have grown (or not) as the CPU's have, so the
// groups land in the same slots. Two programs on one plan, one per
// TaskResult, keep in step with two CPU kernels.
func TestHashedUnpackReplaysTheCPU(t *testing.T) {
	dev := NewEmulator()
	defer dev.Close()
	ts := newTestSchema(t, false)
	q := &query.Query{Name: "replay", Schema: ts.s, Window: query.Sliding(40, 10), GroupBy: []query.Expr{query.C("c")},
		Aggregates: []query.Aggregate{{Func: query.Count}}}
	p, pg := compilePlans(t, q, kernels.Options{})
	k := p.NewKernel()
	pr := compileEmu(t, dev, pg, 1)
	r := rand.New(rand.NewPCG(2, 2))
	var want, got window.TaskResult
	for round := range 30 {
		distinct := []int64{3, 200, 2000}[r.IntN(3)]
		data := groupData(r, ts, 500+r.IntN(3000), distinct, 1+r.IntN(30), 20, 80)
		require.NoError(t, pr.Submit(0, data, 0))
		got.Reset(pg.Layout)
		ok, err := pr.Wait(0, &got)
		require.NoError(t, err)
		want.Reset(p.Layout)
		k.Process(data, 0, &want)
		if !ok {
			got.Reset(pg.Layout)
			k.Process(data, 0, &got)
			continue
		}
		requireSameResult(t, &want, &got, fmt.Sprintf("round %d, %d distinct", round, distinct))
	}

	// On fresh layouts: pane 0 holds 1000 groups, pane 1 three. The CPU
	// grows pane 0's table (and its layout's high-water mark) before pane
	// 1's first tuple, so pane 1's table starts large. With early, a late
	// tuple of pane -1 comes before the growth: pane -1's (empty) state is
	// created small.
	for _, early := range []bool{false, true} {
		p, pg := compilePlans(t, q, kernels.Options{})
		pr := compileEmu(t, dev, pg, 1)
		var n int
		data := make([]byte, 0, 1100*ts.s.TupleSize)
		add := func(et, c int64) {
			tp := make([]byte, ts.s.TupleSize)
			binary.LittleEndian.PutUint64(tp, uint64(et))
			binary.LittleEndian.PutUint64(tp[ts.off("c"):], uint64(c))
			data = append(data, tp...)
			n++
		}
		for i := range int64(1000) {
			add(i/100, i)
			if early && i == 10 {
				add(-5, 0)
			}
		}
		for i := range int64(30) {
			add(10+i/10, i%3)
		}
		require.NoError(t, pr.Submit(0, data, 0))
		var want, got window.TaskResult
		got.Reset(pg.Layout)
		ok, err := pr.Wait(0, &got)
		require.NoError(t, err)
		require.True(t, ok)
		want.Reset(p.Layout)
		p.NewKernel().Process(data, 0, &want)
		requireSameResult(t, &want, &got, fmt.Sprintf("early %v", early))
		size := map[int64]int{}
		for _, f := range want.Frags {
			size[f.Pane] = len(f.State.Vals)
		}
		assert.Greater(t, len(want.Frags[0].State.Touched), 64)
		assert.Equal(t, size[0], size[1], "pane 1's table starts as large as pane 0's grew")
		if early {
			assert.Less(t, size[-1], size[0], "pane -1's table was created before pane 0's grew")
		}
	}
}
