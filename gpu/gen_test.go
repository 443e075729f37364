package gpu

// Random queries of the shapes with GPU kernels, random data, and the
// comparison of a Program's results with the CPU kernel's: shared by the
// emulator's tests and the cuda-tagged ones.

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// testSchema is a schema with every column type the kernels read. packed
// puts the columns at odd offsets in odd-sized tuples: misaligned loads.
type testSchema struct {
	s      *query.Schema
	packed bool
}

func newTestSchema(t testing.TB, packed bool) testSchema {
	attrs := []query.Attribute{
		{Name: "ts", Type: query.Int64, Offset: 0},
		{Name: "a", Type: query.Int32, Offset: 8},
		{Name: "b", Type: query.Int32, Offset: 12},
		{Name: "c", Type: query.Int64, Offset: 16},
		{Name: "x", Type: query.Float32, Offset: 24},
		{Name: "y", Type: query.Float64, Offset: 32},
		{Name: "k", Type: query.Bytes, Offset: 40, Size: 16},
	}
	size := 64
	if packed {
		attrs[1].Offset, attrs[2].Offset, attrs[3].Offset = 9, 13, 19
		attrs[4].Offset, attrs[5].Offset, attrs[6].Offset = 27, 31, 39
		size = 57
	}
	s, err := query.NewSchema(size, attrs...)
	require.NoError(t, err)
	return testSchema{s: s, packed: packed}
}

func (ts testSchema) off(name string) int {
	a, err := ts.s.Lookup(name)
	if err != nil {
		panic(err)
	}
	return a.Offset
}

// testTable is a static table of nkeys 16-byte keys whose values take
// nvals distinct values.
func testTable(r *rand.Rand, nkeys, nvals int) *query.StaticTable {
	t := &query.StaticTable{KeyWidth: 16, ValueWidth: 4}
	for i := range nkeys {
		k := make([]byte, 16)
		for j := range k {
			k[j] = byte(r.Uint32())
		}
		k[0] = byte(i) // distinct
		k[1] = byte(i >> 8)
		v := make([]byte, 4)
		binary.BigEndian.PutUint32(v, uint32(r.IntN(nvals)))
		t.Keys, t.Values = append(t.Keys, k), append(t.Values, v)
	}
	return t
}

var intCols = []string{"a", "b", "c"}

// randConst is an integer constant: mostly small, now and then one that
// divides by zero or -1, or overflows.
func randConst(r *rand.Rand) int64 {
	switch r.IntN(12) {
	case 0:
		return 0
	case 1:
		return -1
	case 2:
		return math.MinInt64
	case 3:
		return math.MaxInt64
	}
	return r.Int64N(16) - 4
}

// randInt is a random integer expression of depth up to depth: columns
// (int32 and int64), constants, + - * /.
func randInt(r *rand.Rand, depth int) query.Expr {
	switch n := r.IntN(10); {
	case depth > 0 && n < 4:
		return query.Arith{Op: query.ArithOp(1 + r.IntN(4)), L: randInt(r, depth-1), R: randInt(r, depth-1)}
	case n < 8:
		return query.C(append(intCols, "ts")[r.IntN(4)])
	}
	return query.Int(randConst(r))
}

// randNum is a random number: an integer expression, or arithmetic with
// float columns and constants (and integer operands converted).
func randNum(r *rand.Rand, depth int) query.Expr {
	switch n := r.IntN(10); {
	case depth > 0 && n < 3:
		return query.Arith{Op: query.ArithOp(1 + r.IntN(4)), L: randNum(r, depth-1), R: randNum(r, depth-1)}
	case n < 6:
		return randInt(r, depth)
	case n < 8:
		return query.C([]string{"x", "y"}[r.IntN(2)])
	}
	return query.Float([]float64{0, -0.5, 1.5, 3, math.Inf(1), 1e300}[r.IntN(6)])
}

// randBool is a random predicate: comparisons of numbers, AND, OR.
func randBool(r *rand.Rand, depth int) query.Expr {
	if depth > 0 && r.IntN(3) == 0 {
		terms := make([]query.Expr, 2+r.IntN(2))
		for i := range terms {
			terms[i] = randBool(r, depth-1)
		}
		if r.IntN(2) == 0 {
			return query.And(terms...)
		}
		return query.Or(terms...)
	}
	if r.IntN(3) == 0 {
		return randPred(r)
	}
	return query.Cmp(randNum(r, 2), query.CmpOp(1+r.IntN(6)), randNum(r, 1))
}

// randPred is a column-versus-constant comparison (the kernels' fast path).
func randPred(r *rand.Rand) query.Expr {
	col := intCols[r.IntN(len(intCols))]
	op := query.CmpOp(1 + r.IntN(6))
	k := query.Int(r.Int64N(16) - 4)
	if r.IntN(4) == 0 {
		return query.Cmp(k, op, query.C(col))
	}
	return query.Cmp(query.C(col), op, k)
}

func randWhere(r *rand.Rand) query.Expr {
	switch r.IntN(7) {
	case 0:
		return nil
	case 1:
		return randPred(r)
	case 2:
		return query.And(randPred(r), query.And(randPred(r), randPred(r)))
	case 3:
		return randBool(r, 2)
	case 4:
		return query.And(randPred(r), randBool(r, 1), query.And(randBool(r, 1), randPred(r)))
	}
	terms := make([]query.Expr, 1+r.IntN(3))
	for i := range terms {
		terms[i] = randPred(r)
	}
	return query.And(terms...)
}

// randProjection is a projection the GPU runs: an integer expression, a
// column of any number type, or a float constant (computed floats are
// refused: see analyseSelection).
func randProjection(r *rand.Rand) query.Expr {
	switch r.IntN(6) {
	case 0:
		return query.C([]string{"ts", "a", "b", "c", "x", "y"}[r.IntN(6)])
	case 1:
		return query.Float(1.25)
	}
	return randInt(r, 1+r.IntN(3))
}

// randKeys is a random GROUP BY of stream columns and integer
// expressions (hashed groups), at most 16 bytes of key.
func randKeys(r *rand.Rand) []query.Expr {
	keys := [][]query.Expr{
		{query.C("a")},
		{query.C("a"), query.C("b")},
		{query.C("c")},
		{query.C("k")},
		{query.Div(query.C("c"), query.Int(7))},
		{query.Add(query.C("a"), query.C("b")), query.C("a")},
		{query.C("b"), query.Mul(query.C("a"), query.Int(1<<40)), query.C("a")},
		{query.Div(query.C("ts"), query.Int(3))},
	}
	if r.IntN(3) == 0 {
		return []query.Expr{randInt(r, 2)}
	}
	return keys[r.IntN(len(keys))]
}

// randQuery returns a random query of a shape with GPU kernels.
func randQuery(r *rand.Rand, ts testSchema, table *query.StaticTable) *query.Query {
	q := &query.Query{Name: "rand", Schema: ts.s, Where: randWhere(r)}
	if r.IntN(4) == 0 {
		for range r.IntN(5) { // 0: SELECT *
			q.Project = append(q.Project, query.Projection{Expr: randProjection(r)})
		}
		return q
	}
	size := 1 + r.Int64N(100)
	slide := size
	if r.IntN(2) == 0 {
		slide = 1 + r.Int64N(size)
	}
	q.Window = query.Sliding(size, slide)
	if r.IntN(4) == 0 {
		q.Window.Type = query.Rows
		if r.IntN(2) == 0 {
			q.Window.Size *= 40
			q.Window.Slide *= 40
		}
	}
	switch r.IntN(5) {
	case 1:
		q.Join = &query.StaticJoin{Column: "k", Table: table, As: "v"}
	case 2:
		q.Join = &query.StaticJoin{Column: "k", Table: table, As: "v"}
		q.GroupBy = []query.Expr{query.C("v")}
	case 3:
		q.GroupBy = randKeys(r)
	case 4:
		q.Join = &query.StaticJoin{Column: "k", Table: table, As: "v"}
		q.GroupBy = randKeys(r)
	}
	funcs := []query.AggFunc{query.Count, query.Sum, query.Avg, query.Min, query.Max}
	args := []string{"ts", "a", "b", "c"}
	for i := range 1 + r.IntN(4) {
		ag := query.Aggregate{Func: funcs[r.IntN(len(funcs))], As: fmt.Sprintf("g%d", i)}
		if ag.Func != query.Count {
			ag.Arg = query.C(args[r.IntN(len(args))])
			if r.IntN(3) == 0 {
				ag.Arg = randInt(r, 2)
			}
		}
		q.Aggregates = append(q.Aggregates, ag)
	}
	return q
}

// dataGen shapes random event times: rising by up to step per tuple,
// jittered back by up to jitter, and now and then (one in lateEvery) far
// back by up to lateBy.
type dataGen struct {
	t0, step, jitter int64
	lateEvery        int
	lateBy           int64
}

func randGen(r *rand.Rand) dataGen {
	g := dataGen{t0: r.Int64N(400) - 200, step: r.Int64N(4), jitter: r.Int64N(20)}
	if r.IntN(2) == 0 {
		g.lateEvery, g.lateBy = 20+r.IntN(100), 1+r.Int64N(300)
	}
	return g
}

// randData makes n tuples of schema ts whose keys are mostly table's.
func randData(r *rand.Rand, ts testSchema, table *query.StaticTable, g dataGen, n int) []byte {
	size := ts.s.TupleSize
	b := make([]byte, n*size)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	oa, ob, oc, ox, oy, ok := ts.off("a"), ts.off("b"), ts.off("c"), ts.off("x"), ts.off("y"), ts.off("k")
	et := g.t0
	for i := range n {
		t := b[i*size : (i+1)*size]
		et += r.Int64N(g.step + 1)
		e := et - r.Int64N(g.jitter+1)
		if g.lateEvery > 0 && r.IntN(g.lateEvery) == 0 {
			e -= r.Int64N(g.lateBy + 1)
		}
		binary.LittleEndian.PutUint64(t[0:], uint64(e))
		binary.LittleEndian.PutUint32(t[oa:], uint32(r.Int32N(16)-4))
		binary.LittleEndian.PutUint32(t[ob:], uint32(r.Int32N(9))) // 0: division by zero
		v := r.Int64N(16) - 4
		switch r.IntN(40) {
		case 0, 1, 2, 3:
			v = int64(r.Uint64()) // large values: sums and products wrap
		case 4:
			v = math.MinInt64 // MinInt64 / -1
		case 5:
			v = math.MaxInt64
		}
		binary.LittleEndian.PutUint64(t[oc:], uint64(v))
		x := math.Float32bits(float32(r.IntN(64))/4 - 3)
		y := math.Float64bits(r.Float64()*100 - 20)
		if r.IntN(50) == 0 {
			// Special floats: NaNs with payloads (signalling ones
			// too), infinities, -0.
			specials32 := []uint32{0x7fc00001, 0xff800123, 0x7f800001, 0x7f800000, 0xff800000, 0x80000000}
			specials64 := []uint64{0x7ff8000000000001, 0xfff0000000000123, 0x7ff0000000000000, 0xfff0000000000000, 1 << 63}
			x, y = specials32[r.IntN(len(specials32))], specials64[r.IntN(len(specials64))]
		}
		binary.LittleEndian.PutUint32(t[ox:], x)
		binary.LittleEndian.PutUint64(t[oy:], y)
		if len(table.Keys) > 0 && r.IntN(8) != 0 {
			copy(t[ok:ok+16], table.Keys[r.IntN(len(table.Keys))])
		}
	}
	return b
}

// cpuResult is what the plan's CPU kernel makes of a task.
func cpuResult(p *kernels.Plan, k kernels.Kernel, data []byte, first uint64) *window.TaskResult {
	r := &window.TaskResult{}
	r.Reset(p.Layout)
	k.Process(data, first, r)
	return r
}

// requireSameResult fails unless got is want: counters, output tuples,
// fragments in order, and in each the touched groups in order (hashed
// ones: the same slots, with the same keys), their rows, and every other
// row zero.
func requireSameResult(t testing.TB, want, got *window.TaskResult, msg string) {
	t.Helper()
	require.Equal(t, want.Tuples, got.Tuples, "%s: tuples", msg)
	require.Equal(t, want.MaxTS, got.MaxTS, "%s: max ts", msg)
	require.Equal(t, want.Filtered, got.Filtered, "%s: filtered", msg)
	require.Equal(t, want.Unmatched, got.Unmatched, "%s: unmatched", msg)
	require.Equal(t, want.Late, got.Late, "%s: late", msg)
	require.Equal(t, len(want.Out), len(got.Out), "%s: output bytes", msg)
	require.True(t, slices.Equal(want.Out, got.Out), "%s: output tuples differ", msg)
	require.Equal(t, len(want.Frags), len(got.Frags), "%s: fragments (want panes %v, got %v)", msg, panes(want), panes(got))
	for i := range want.Frags {
		w, g := want.Frags[i], got.Frags[i]
		// The checks below through testify (a stack walk a call) only
		// where the fragments differ: the emulator's tests compare many.
		if w.Pane == g.Pane && w.Tuples == g.Tuples && reflect.DeepEqual(w.State.Touched, g.State.Touched) &&
			reflect.DeepEqual(w.State.Vals, g.State.Vals) && w.State.Layout().Hashed == g.State.Layout().Hashed && sameKeys(w.State, g.State) {
			continue
		}
		require.Equal(t, w.Pane, g.Pane, "%s: fragment %d pane", msg, i)
		require.Equal(t, w.Tuples, g.Tuples, "%s: fragment %d (pane %d) tuples", msg, i, w.Pane)
		require.Equal(t, w.State.Touched, g.State.Touched, "%s: pane %d touched groups", msg, w.Pane)
		require.Equal(t, w.State.Vals, g.State.Vals, "%s: pane %d rows", msg, w.Pane)
		require.Equal(t, w.State.Layout().Hashed, g.State.Layout().Hashed, "%s: pane %d layout", msg, w.Pane)
		if w.State.Layout().Hashed {
			for _, s := range w.State.Touched {
				k0, k1 := w.State.Key(s)
				g0, g1 := g.State.Key(s)
				require.Equal(t, [2]uint64{k0, k1}, [2]uint64{g0, g1}, "%s: pane %d slot %d key", msg, w.Pane, s)
			}
		}
	}
}

// sameKeys is whether w's and g's touched slots hold the same keys (a
// hashed layout's; true for a dense one).
func sameKeys(w, g *window.GroupState) bool {
	if !w.Layout().Hashed {
		return true
	}
	for _, s := range w.Touched {
		k0, k1 := w.Key(s)
		g0, g1 := g.Key(s)
		if k0 != g0 || k1 != g1 {
			return false
		}
	}
	return true
}

func panes(r *window.TaskResult) []int64 {
	var p []int64
	for _, f := range r.Frags {
		p = append(p, f.Pane)
	}
	return p
}

// groupsOf is the groups r's fragments hold: as many as a task's hashed
// groups claim entries on the device.
func groupsOf(r *window.TaskResult) int64 {
	var n int64
	for _, f := range r.Frags {
		n += int64(len(f.State.Touched))
	}
	return n
}

// inRange reports whether every fragment of r is in [base, base+npanes):
// whether a program whose output covered that range must succeed.
func inRange(r *window.TaskResult, base, npanes int64) bool {
	for _, f := range r.Frags {
		if uint64(f.Pane-base) >= uint64(npanes) {
			return false
		}
	}
	return true
}

// cutTasks cuts data into tasks of random whole-tuple sizes up to maxTuples.
func cutTasks(r *rand.Rand, data []byte, tupleSize, maxTuples int) [][]byte {
	var tasks [][]byte
	for len(data) > 0 {
		n := min(len(data)/tupleSize, r.IntN(maxTuples+1)) * tupleSize
		tasks = append(tasks, data[:n:n])
		data = data[n:]
	}
	return tasks
}

// ysbTupleSize and ysbShape stand for package ysb, which tests here cannot
// import (ysb imports engine, which imports gpu): YSB's 128-byte tuple
// (event_time at 0, ad_id at 40, event_type at 60), its query (views, the
// static join of ad to campaign, COUNT and MAX(event_time) per campaign per
// 10 s tumbling window) and its data (tuple k: ad k mod 1000, event type
// k mod 3, event time k/10 ms), with random ids.
const ysbTupleSize = 128

func ysbShape(t testing.TB, r *rand.Rand, bytes int) (*query.Query, []byte) {
	s, err := query.NewSchema(ysbTupleSize,
		query.Attribute{Name: "event_time", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "ad_id", Type: query.Bytes, Offset: 40, Size: 16},
		query.Attribute{Name: "event_type", Type: query.Int32, Offset: 60},
	)
	require.NoError(t, err)
	const ads, adsPerCampaign = 1000, 10
	table := &query.StaticTable{KeyWidth: 16, ValueWidth: 16}
	var campaign []byte
	for i := range ads {
		if i%adsPerCampaign == 0 {
			campaign = binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, r.Uint64()), r.Uint64())
		}
		ad := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, r.Uint64()), r.Uint64())
		table.Keys, table.Values = append(table.Keys, ad), append(table.Values, campaign)
	}
	q := &query.Query{
		Name: "ysb", Schema: s, Window: query.Tumbling(10000),
		Where:   query.ColEq("event_type", 0),
		Join:    &query.StaticJoin{Column: "ad_id", Table: table, As: "campaign_id"},
		GroupBy: []query.Expr{query.C("campaign_id")},
		Aggregates: []query.Aggregate{
			{Func: query.Count, As: "count"},
			{Func: query.Max, Arg: query.C("event_time"), As: "max_event_time"},
		},
	}
	data := make([]byte, bytes/ysbTupleSize*ysbTupleSize)
	for k := range len(data) / ysbTupleSize {
		tp := data[k*ysbTupleSize:]
		binary.LittleEndian.PutUint64(tp, uint64(k/10))
		copy(tp[40:56], table.Keys[k%ads])
		binary.LittleEndian.PutUint32(tp[60:], uint32(k%3))
	}
	return q, data
}
