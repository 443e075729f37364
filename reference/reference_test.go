package reference

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// The test schema: 48-byte tuples.
//
//	ts int64 @0, a int32 @8, g float32 @12, b int64 @16, f float64 @24,
//	id bytes[16] @32
func testSchema(t *testing.T) *query.Schema {
	s, err := query.NewSchema(48,
		query.Attribute{Name: "ts", Type: query.Int64},
		query.Attribute{Name: "a", Type: query.Int32, Offset: 8},
		query.Attribute{Name: "g", Type: query.Float32, Offset: 12},
		query.Attribute{Name: "b", Type: query.Int64, Offset: 16},
		query.Attribute{Name: "f", Type: query.Float64, Offset: 24},
		query.Attribute{Name: "id", Type: query.Bytes, Offset: 32, Size: 16},
	)
	require.NoError(t, err)
	return s
}

type tu struct {
	ts int64
	a  int32
	b  int64
	f  float64
	g  float32
	id byte // the id column is 16 bytes: id, then zeros
}

func idBytes(id byte) []byte {
	b := make([]byte, 16)
	b[0] = id
	return b
}

func (x tu) bytes() []byte {
	le := binary.LittleEndian
	t := make([]byte, 48)
	le.PutUint64(t[0:], uint64(x.ts))
	le.PutUint32(t[8:], uint32(x.a))
	le.PutUint32(t[12:], math.Float32bits(x.g))
	le.PutUint64(t[16:], uint64(x.b))
	le.PutUint64(t[24:], math.Float64bits(x.f))
	copy(t[32:], idBytes(x.id))
	return t
}

func data(ts ...tu) []byte {
	var d []byte
	for _, x := range ts {
		d = append(d, x.bytes()...)
	}
	return d
}

func row(start, end int64, key string, vals ...Value) Row {
	return Row{Start: start, End: end, Key: key, Values: vals}
}

func run(t *testing.T, q *query.Query, d []byte) *Result {
	t.Helper()
	require.NoError(t, q.Validate())
	res, err := Evaluate(q, d)
	require.NoError(t, err)
	c := res.Counts
	require.Equal(t, c.Tuples, c.Filtered+c.Unmatched+c.Late+c.Counted, "counts must classify every tuple once")
	return res
}

func count() query.Aggregate { return query.Aggregate{Func: query.Count, As: "n"} }

func agg(f query.AggFunc, arg query.Expr, as string) query.Aggregate {
	return query.Aggregate{Func: f, Arg: arg, As: as}
}

func ik4(v int64) string { return string(query.AppendIntKey(nil, v, 4)) }
func ik8(v int64) string { return string(query.AppendIntKey(nil, v, 8)) }

func TestTumblingRange(t *testing.T) {
	q := &query.Query{Name: "tumble", Schema: testSchema(t), Window: query.Tumbling(10),
		Aggregates: []query.Aggregate{count(), agg(query.Sum, query.C("b"), "s"), agg(query.Max, query.C("ts"), "mx")}}
	res := run(t, q, data(
		tu{ts: 1, b: 1},
		tu{ts: 5, b: 2},
		tu{ts: 3, b: 4},    // out of order, window [0,10) still open (W=5): counted
		tu{ts: 12, b: 8},   // opens [10,20)
		tu{ts: 9, b: 16},   // W=12 >= 10: late
		tu{ts: 25, b: 32},  // opens [20,30)
		tu{ts: 19, b: 64},  // W=25 >= 20: late
		tu{ts: 10, b: 128}, // still late
	))
	assert.Equal(t, []Row{
		row(0, 10, "", Int(3), Int(7), Int(5)),
		row(10, 20, "", Int(1), Int(8), Int(12)),
		row(20, 30, "", Int(1), Int(32), Int(25)),
	}, res.Rows)
	assert.Equal(t, Counts{Tuples: 8, Late: 3, Counted: 5}, res.Counts)
	assert.Nil(t, res.Tuples)
}

func TestNegativeEventTimes(t *testing.T) {
	q := &query.Query{Name: "neg", Schema: testSchema(t), Window: query.Tumbling(10),
		Aggregates: []query.Aggregate{count(), agg(query.Min, query.C("ts"), "mn")}}
	res := run(t, q, data(
		tu{ts: -1},  // [-10,0), not [0,10)
		tu{ts: -10}, // [-10,0)
		tu{ts: -11}, // [-20,-10), W=-1 >= -10: late
		tu{ts: 0},   // [0,10)
		tu{ts: -21}, // late
	))
	assert.Equal(t, []Row{
		row(-10, 0, "", Int(2), Int(-10)),
		row(0, 10, "", Int(1), Int(0)),
	}, res.Rows)
	assert.Equal(t, Counts{Tuples: 5, Late: 2, Counted: 3}, res.Counts)

	// Sliding over negative times: -3 lies in [-10,0) and [-5,5).
	q.Window = query.Sliding(10, 5)
	res = run(t, q, data(tu{ts: -3}))
	assert.Equal(t, []Row{
		row(-10, 0, "", Int(1), Int(-3)),
		row(-5, 5, "", Int(1), Int(-3)),
	}, res.Rows)
}

func TestSlidingRange(t *testing.T) {
	q := &query.Query{Name: "slide", Schema: testSchema(t), Window: query.Sliding(10, 5),
		Aggregates: []query.Aggregate{count(), agg(query.Sum, query.C("b"), "s")}}
	res := run(t, q, data(
		tu{ts: 7, b: 1},  // [0,10), [5,15)
		tu{ts: 12, b: 2}, // [5,15), [10,20)
		tu{ts: 9, b: 4},  // first window [0,10): W=12 >= 10: late, counted in none (not even [5,15))
		tu{ts: 14, b: 8}, // [5,15), [10,20)
		tu{ts: 3, b: 16}, // [-5,5), [0,10): late
	))
	assert.Equal(t, []Row{
		row(0, 10, "", Int(1), Int(1)),
		row(5, 15, "", Int(3), Int(11)),
		row(10, 20, "", Int(2), Int(10)),
	}, res.Rows)
	assert.Equal(t, Counts{Tuples: 5, Late: 2, Counted: 3}, res.Counts)

	// Size not a multiple of slide: size 5, slide 3. 4 lies in [0,5) and [3,8).
	q.Window = query.Sliding(5, 3)
	res = run(t, q, data(tu{ts: 4, b: 1}, tu{ts: 6, b: 2}))
	assert.Equal(t, []Row{
		row(0, 5, "", Int(1), Int(1)),
		row(3, 8, "", Int(2), Int(3)),
		row(6, 11, "", Int(1), Int(2)),
	}, res.Rows)
}

func TestEveryTupleAdvancesWatermark(t *testing.T) {
	q := &query.Query{Name: "wm", Schema: testSchema(t), Window: query.Tumbling(10),
		Where:      query.ColEq("a", 1),
		Aggregates: []query.Aggregate{count()}}
	res := run(t, q, data(
		tu{ts: 1, a: 1},
		tu{ts: 50, a: 0}, // filtered, but W becomes 50
		tu{ts: 2, a: 1},  // late
		tu{ts: 55, a: 1},
	))
	assert.Equal(t, []Row{row(0, 10, "", Int(1)), row(50, 60, "", Int(1))}, res.Rows)
	assert.Equal(t, Counts{Tuples: 4, Filtered: 1, Late: 1, Counted: 2}, res.Counts)

	// The first tuple is never late, whatever its time.
	res = run(t, q, data(tu{ts: -1000, a: 1}))
	assert.Equal(t, []Row{row(-1000, -990, "", Int(1))}, res.Rows)
}

func TestRowWindows(t *testing.T) {
	q := &query.Query{Name: "rows", Schema: testSchema(t),
		Window:     query.Window{Type: query.Rows, Size: 3, Slide: 2},
		Where:      query.ColEq("a", 1),
		Aggregates: []query.Aggregate{count(), agg(query.Sum, query.C("b"), "s")}}
	// Event times run backwards: positions are input indexes, not times, so
	// nothing is late. Window -1 covers [-2,1): position 0 is in it.
	res := run(t, q, data(
		tu{ts: 100, a: 1, b: 1}, // 0: [-2,1), [0,3)
		tu{ts: 90, a: 0, b: 2},  // 1: filtered, but still position 1
		tu{ts: 80, a: 1, b: 4},  // 2: [0,3), [2,5)
		tu{ts: 70, a: 1, b: 8},  // 3: [2,5)
		tu{ts: 60, a: 1, b: 16}, // 4: [2,5), [4,7)
		tu{ts: 50, a: 1, b: 32}, // 5: [4,7)
	))
	assert.Equal(t, []Row{
		row(-2, 1, "", Int(1), Int(1)),
		row(0, 3, "", Int(2), Int(5)),
		row(2, 5, "", Int(3), Int(28)),
		row(4, 7, "", Int(2), Int(48)),
	}, res.Rows)
	assert.Equal(t, Counts{Tuples: 6, Filtered: 1, Counted: 5}, res.Counts)

	q.Window = query.Window{Type: query.Rows, Size: 2, Slide: 2}
	res = run(t, q, data(tu{a: 1, b: 1}, tu{a: 1, b: 2}, tu{a: 1, b: 4}))
	assert.Equal(t, []Row{row(0, 2, "", Int(2), Int(3)), row(2, 4, "", Int(1), Int(4))}, res.Rows)
}

func TestWhereAndOrColumnComparisons(t *testing.T) {
	q := &query.Query{Name: "where", Schema: testSchema(t),
		Where: query.Or(
			query.And(query.Cmp(query.C("a"), query.Gt, query.Int(0)), query.Cmp(query.C("b"), query.Lt, query.C("f"))),
			query.Cmp(query.C("a"), query.Eq, query.C("b")),
		)}
	in := []tu{
		{ts: 1, a: 1, b: 2, f: 2.5},  // AND holds
		{ts: 2, a: 1, b: 3, f: 2.5},  // b < f fails, a != b
		{ts: 3, a: -1, b: -1, f: 0},  // AND fails (a > 0), a == b (int32 vs int64)
		{ts: 4, a: 0, b: 5, f: 9},    // a > 0 fails, a != b
		{ts: 5, a: 2, b: 2, f: -1.5}, // both: AND fails, a == b
	}
	res := run(t, q, data(in...))
	assert.Equal(t, data(in[0], in[2], in[4]), res.Tuples)
	assert.Equal(t, Counts{Tuples: 5, Filtered: 2, Counted: 3}, res.Counts)
	assert.Nil(t, res.Rows)
	assert.Equal(t, 48, OutputTupleSize(q))

	// Every comparison operator, int against int and int against float.
	for _, tc := range []struct {
		op         query.CmpOp
		r          query.Expr
		wantPassed []int64
	}{
		{query.Eq, query.Int(2), []int64{2}},
		{query.Ne, query.Int(2), []int64{1, 3}},
		{query.Lt, query.Int(2), []int64{1}},
		{query.Le, query.Int(2), []int64{1, 2}},
		{query.Gt, query.Int(2), []int64{3}},
		{query.Ge, query.Int(2), []int64{2, 3}},
		{query.Lt, query.Float(2.5), []int64{1, 2}},
		{query.Gt, query.Float(1.5), []int64{2, 3}},
		{query.Eq, query.Float(2), []int64{2}},
	} {
		q := &query.Query{Name: "cmp", Schema: testSchema(t), Where: query.Cmp(query.C("b"), tc.op, tc.r)}
		var want []tu
		for _, b := range tc.wantPassed {
			want = append(want, tu{b: b})
		}
		res := run(t, q, data(tu{b: 1}, tu{b: 2}, tu{b: 3}))
		assert.Equal(t, data(want...), res.Tuples, "b %s %s", tc.op, tc.r)
	}
}

func le64(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

func TestArithmeticProjection(t *testing.T) {
	q := &query.Query{Name: "proj", Schema: testSchema(t), Project: []query.Projection{
		{Expr: query.Div(query.C("b"), query.C("a")), As: "b/a"},                            // int, x/0 == 0, truncation
		{Expr: query.Add(query.C("a"), query.C("f")), As: "a+f"},                            // int + float = float
		{Expr: query.Div(query.C("f"), query.Int(0)), As: "f/0"},                            // IEEE: ±Inf
		{Expr: query.Mul(query.C("g"), query.Int(2)), As: "g*2"},                            // float32 read as float
		{Expr: query.Div(query.Int(-7), query.Int(2)), As: "-7/2"},                          // -3
		{Expr: query.Add(query.Int(math.MaxInt64), query.C("a")), As: "wrap"},               // wrapping
		{Expr: query.Div(query.C("b"), query.Float(2)), As: "b/2.0"},                        // float division
		{Expr: query.Sub(query.Int(7), query.Div(query.C("b"), query.Int(0))), As: "7-b/0"}, // 7
	}}
	require.NoError(t, q.Validate())
	assert.Equal(t, 8+8*8, OutputTupleSize(q))
	res := run(t, q, data(
		tu{ts: 100, a: 0, b: 9, f: 1.5, g: 0.25},
		tu{ts: -5, a: 2, b: -9, f: -3, g: -1.5},
	))
	f := math.Float64bits
	neg3 := int64(-3)
	minInt := int64(math.MinInt64)
	maxInt := int64(math.MaxInt64)
	neg5, neg4 := int64(-5), int64(-4)
	want := le64(100, 0, f(1.5), f(math.Inf(1)), f(0.5), uint64(neg3), uint64(maxInt), f(4.5), 7)
	want = append(want, le64(uint64(neg5), uint64(neg4), f(-1), f(math.Inf(-1)), f(-3), uint64(neg3), uint64(minInt+1), f(-4.5), 7)...)
	assert.Equal(t, want, res.Tuples)
	assert.Equal(t, Counts{Tuples: 2, Counted: 2}, res.Counts)

	// x/0 == 0 inside WHERE too, and arithmetic comparisons mixing types.
	q = &query.Query{Name: "div0", Schema: testSchema(t),
		Where: query.And(
			query.Cmp(query.Div(query.C("b"), query.C("a")), query.Eq, query.Int(0)),
			query.Cmp(query.Add(query.C("b"), query.C("g")), query.Gt, query.Float(1)),
		)}
	in := []tu{
		{ts: 1, a: 0, b: 5, g: 0.5},  // 5/0 == 0, 5.5 > 1
		{ts: 2, a: 2, b: 5, g: 0.5},  // 5/2 == 2
		{ts: 3, a: 0, b: 0, g: 0.5},  // 0.5 > 1 fails
		{ts: 4, a: 10, b: 5, g: 0.5}, // 5/10 == 0, 5.5 > 1
	}
	res = run(t, q, data(in...))
	assert.Equal(t, data(in[0], in[3]), res.Tuples)
	assert.Equal(t, Counts{Tuples: 4, Filtered: 2, Counted: 2}, res.Counts)
}

func TestStatelessProjectionWithWhere(t *testing.T) {
	q := &query.Query{Name: "p", Schema: testSchema(t), Where: query.ColGe("b", 0),
		Project: []query.Projection{{Expr: query.C("a"), As: "a"}, {Expr: query.C("f"), As: "f"}}}
	res := run(t, q, data(tu{ts: 7, a: -2, b: 1, f: 0.5}, tu{ts: 8, b: -1}, tu{ts: 9, a: 3, b: 0, f: 2}))
	m2 := int64(-2)
	assert.Equal(t, le64(7, uint64(m2), math.Float64bits(0.5), 9, 3, math.Float64bits(2)), res.Tuples)
	assert.Equal(t, Counts{Tuples: 3, Filtered: 1, Counted: 2}, res.Counts)
	assert.Equal(t, 24, OutputTupleSize(q))
}

func campaigns() *query.StaticTable {
	return &query.StaticTable{KeyWidth: 16, ValueWidth: 2,
		Keys:   [][]byte{idBytes(1), idBytes(2), idBytes(3)},
		Values: [][]byte{[]byte("c1"), []byte("c2"), []byte("c1")}}
}

func TestStaticJoin(t *testing.T) {
	q := &query.Query{Name: "join", Schema: testSchema(t), Window: query.Tumbling(10),
		Where:      query.ColEq("a", 1),
		Join:       &query.StaticJoin{Column: "id", Table: campaigns(), As: "camp"},
		GroupBy:    []query.Expr{query.C("camp")},
		Aggregates: []query.Aggregate{count(), agg(query.Max, query.C("ts"), "mx")}}
	res := run(t, q, data(
		tu{ts: 1, a: 1, id: 1},
		tu{ts: 2, a: 1, id: 2},
		tu{ts: 4, a: 1, id: 9},  // unknown key: unmatched
		tu{ts: 3, a: 1, id: 3},  // c1 again
		tu{ts: 5, a: 0, id: 9},  // WHERE comes first: filtered, not unmatched
		tu{ts: 50, a: 1, id: 7}, // unmatched, but advances W
		tu{ts: 6, a: 1, id: 1},  // late
	))
	assert.Equal(t, []Row{
		row(0, 10, "c1", Int(2), Int(3)),
		row(0, 10, "c2", Int(1), Int(2)),
	}, res.Rows)
	assert.Equal(t, Counts{Tuples: 7, Filtered: 1, Unmatched: 2, Late: 1, Counted: 3}, res.Counts)

	// Without GROUP BY the join only filters.
	q.GroupBy = nil
	res = run(t, q, data(tu{ts: 1, a: 1, id: 1}, tu{ts: 2, a: 1, id: 4}))
	assert.Equal(t, []Row{row(0, 10, "", Int(1), Int(1))}, res.Rows)
	assert.Equal(t, Counts{Tuples: 2, Unmatched: 1, Counted: 1}, res.Counts)
}

func TestGroupKeys(t *testing.T) {
	s := testSchema(t)

	// int32: 4-byte keys, negative values sort first.
	q := &query.Query{Name: "k32", Schema: s, Window: query.Tumbling(100),
		GroupBy: []query.Expr{query.C("a")}, Aggregates: []query.Aggregate{count(), agg(query.Sum, query.C("b"), "s")}}
	res := run(t, q, data(tu{a: 2, b: 1}, tu{a: -1, b: 2}, tu{a: 1, b: 4}, tu{a: -1, b: 8}))
	assert.Equal(t, []Row{
		row(0, 100, "\x7f\xff\xff\xff", Int(2), Int(10)),
		row(0, 100, "\x80\x00\x00\x01", Int(1), Int(4)),
		row(0, 100, "\x80\x00\x00\x02", Int(1), Int(1)),
	}, res.Rows)

	// int64 column and an arithmetic expression: 8 bytes each, concatenated.
	q.GroupBy = []query.Expr{query.C("b"), query.Add(query.C("a"), query.Int(1))}
	res = run(t, q, data(tu{a: 1, b: 5}, tu{a: 1, b: 5}, tu{a: 0, b: 5}, tu{a: 1, b: -5}))
	assert.Equal(t, []Row{
		row(0, 100, ik8(-5)+ik8(2), Int(1), Int(-5)),
		row(0, 100, ik8(5)+ik8(1), Int(1), Int(5)),
		row(0, 100, ik8(5)+ik8(2), Int(2), Int(10)),
	}, res.Rows)
	assert.Equal(t, "\x7f\xff\xff\xff\xff\xff\xff\xfb", ik8(-5))

	// int32 and int64 together: 4 + 8 bytes.
	q.GroupBy = []query.Expr{query.C("a"), query.C("b")}
	res = run(t, q, data(tu{a: 3, b: 1}, tu{a: 3, b: 1}))
	assert.Equal(t, []Row{row(0, 100, ik4(3)+ik8(1), Int(2), Int(2))}, res.Rows)

	// bytes column: raw bytes.
	q.GroupBy = []query.Expr{query.C("id")}
	res = run(t, q, data(tu{id: 2, b: 1}, tu{id: 1, b: 2}, tu{id: 2, b: 4}))
	assert.Equal(t, []Row{
		row(0, 100, string(idBytes(1)), Int(1), Int(2)),
		row(0, 100, string(idBytes(2)), Int(2), Int(5)),
	}, res.Rows)

	// Keys sort within a window; windows first.
	q.GroupBy = []query.Expr{query.C("a")}
	res = run(t, q, data(tu{ts: 150, a: 1, b: 1}, tu{ts: 120, a: 0, b: 1}, tu{ts: 199, a: -3, b: 1}))
	assert.Equal(t, []Row{
		row(100, 200, ik4(-3), Int(1), Int(1)),
		row(100, 200, ik4(0), Int(1), Int(1)),
		row(100, 200, ik4(1), Int(1), Int(1)),
	}, res.Rows)
}

func TestAggregates(t *testing.T) {
	q := &query.Query{Name: "aggs", Schema: testSchema(t), Window: query.Tumbling(10),
		Aggregates: []query.Aggregate{
			count(),
			agg(query.Sum, query.C("b"), "sb"),
			agg(query.Sum, query.C("f"), "sf"),
			agg(query.Avg, query.C("b"), "ab"),
			agg(query.Avg, query.C("f"), "af"),
			agg(query.Min, query.C("b"), "minb"),
			agg(query.Max, query.C("b"), "maxb"),
			agg(query.Min, query.C("f"), "minf"),
			agg(query.Max, query.C("f"), "maxf"),
			agg(query.Min, query.C("a"), "mina"),
			agg(query.Sum, query.C("g"), "sg"),
			agg(query.Sum, query.Mul(query.C("b"), query.Float(0.5)), "sbh"),
		}}
	res := run(t, q, data(
		tu{ts: 1, a: 5, b: 3, f: 1.5, g: 0.25},
		tu{ts: 2, a: -7, b: -4, f: -2.25, g: 0.5},
		tu{ts: 3, a: 0, b: 10, f: 0.5, g: 1},
		tu{ts: 11, a: 1, b: 4, f: 2, g: 2}, // a second window, alone
	))
	assert.Equal(t, []Row{
		row(0, 10, "", Int(3), Int(9), Float(-0.25), Float(3), Float(-0.25/3),
			Int(-4), Int(10), Float(-2.25), Float(1.5), Int(-7), Float(1.75), Float(4.5)),
		row(10, 20, "", Int(1), Int(4), Float(2), Float(4), Float(2),
			Int(4), Int(4), Float(2), Float(2), Int(1), Float(2), Float(2)),
	}, res.Rows)

	// Integer SUM wraps; AVG divides the wrapped sum.
	q.Aggregates = []query.Aggregate{agg(query.Sum, query.C("b"), "s"), agg(query.Avg, query.C("b"), "a")}
	res = run(t, q, data(tu{ts: 1, b: math.MaxInt64}, tu{ts: 2, b: 1}))
	assert.Equal(t, []Row{row(0, 10, "", Int(math.MinInt64), Float(float64(math.MinInt64)/2))}, res.Rows)

	// AVG of integers is a float: 1, 2 -> 1.5.
	res = run(t, q, data(tu{ts: 1, b: 1}, tu{ts: 2, b: 2}))
	assert.Equal(t, []Row{row(0, 10, "", Int(3), Float(1.5))}, res.Rows)
}

func TestHaving(t *testing.T) {
	q := &query.Query{Name: "having", Schema: testSchema(t), Window: query.Tumbling(10),
		GroupBy:    []query.Expr{query.C("a")},
		Aggregates: []query.Aggregate{count(), agg(query.Avg, query.C("f"), "af")},
		Having: query.And(
			query.Cmp(query.C("n"), query.Ge, query.Int(2)),  // an aggregate
			query.Cmp(query.C("a"), query.Ne, query.Int(-7)), // a GROUP BY column
		)}
	res := run(t, q, data(
		tu{ts: 1, a: 1, f: 1},
		tu{ts: 2, a: 1, f: 2},  // a=1: count 2: kept
		tu{ts: 3, a: -7, f: 1}, // a=-7: count 2 but a == -7: dropped
		tu{ts: 4, a: -7, f: 1},
		tu{ts: 5, a: 3, f: 1},  // a=3: count 1: dropped
		tu{ts: 12, a: 1, f: 4}, // [10,20): a=1 count 1: dropped, window absent
	))
	assert.Equal(t, []Row{row(0, 10, ik4(1), Int(2), Float(1.5))}, res.Rows)
	assert.Equal(t, Counts{Tuples: 6, Counted: 6}, res.Counts)

	// HAVING on a float aggregate, OR with a GROUP BY column.
	q.Having = query.Or(query.Cmp(query.C("af"), query.Gt, query.Float(1.2)), query.ColEq("a", 3))
	res = run(t, q, data(
		tu{ts: 1, a: 1, f: 1}, tu{ts: 2, a: 1, f: 2}, // af 1.5: kept
		tu{ts: 3, a: 2, f: 1}, tu{ts: 4, a: 2, f: 1.2}, // af 1.1: dropped
		tu{ts: 5, a: 3, f: 0}, // a == 3: kept
	))
	assert.Equal(t, []Row{
		row(0, 10, ik4(1), Int(2), Float(1.5)),
		row(0, 10, ik4(3), Int(1), Float(0)),
	}, res.Rows)
}

func TestErrors(t *testing.T) {
	q := &query.Query{Name: "e", Schema: testSchema(t), Window: query.Tumbling(10), Aggregates: []query.Aggregate{count()}}
	_, err := Evaluate(q, make([]byte, 48*2+3))
	assert.ErrorContains(t, err, "3 trailing bytes")

	q.Window = query.Sliding(5, 10)
	_, err = Evaluate(q, nil)
	assert.ErrorContains(t, err, "larger than size")

	// A window whose start does not fit in int64: refused, naming the
	// tuple's byte offset and event time.
	q.Window = query.Tumbling(10)
	_, err = Evaluate(q, data(tu{ts: 5}, tu{ts: math.MinInt64}))
	assert.ErrorContains(t, err, "tuple 1 (byte offset 48): event time -9223372036854775808 lies in a window starting below the int64 range")

	// No input: no rows, no tuples.
	res, err := Evaluate(q, nil)
	require.NoError(t, err)
	assert.Equal(t, &Result{}, res)
}

func TestWindowsOfBruteForce(t *testing.T) {
	// Cross-check the search against the definition over a range of windows.
	for _, w := range []query.Window{query.Tumbling(1), query.Tumbling(7), query.Sliding(10, 5), query.Sliding(7, 3), query.Sliding(9, 1)} {
		for pos := int64(-40); pos <= 40; pos++ {
			var want []int64
			for k := int64(-100); k <= 100; k++ {
				if k*w.Slide <= pos && pos < k*w.Slide+w.Size {
					want = append([]int64{k}, want...)
				}
			}
			bs, err := windowsOf(pos, w, "event time")
			require.NoError(t, err)
			var got []int64
			for _, b := range bs {
				got = append(got, b.w)
				require.Equal(t, b.w*w.Slide, b.start)
				require.Equal(t, b.w*w.Slide+w.Size, b.end)
				require.False(t, b.past)
			}
			require.Equal(t, want, got, "pos %d window %+v", pos, w)
		}
	}
}

// TestWindowsOfSmallMatchesBig: the int64 search gives the unbounded one's
// windows wherever windowsOf takes it, up to the bound of small values.
func TestWindowsOfSmallMatchesBig(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 40))
	edge := []int64{1<<40 - 1, -(1<<40 - 1), 0, 1, -1}
	for i := range 20000 {
		size := 1 + r.Int64N(1000)
		if i%4 == 0 {
			size = 1 + r.Int64N(1<<40-1)
		}
		slide := 1 + r.Int64N(size)
		if i%7 == 0 {
			slide = size + 1 + r.Int64N(size) // hops with gaps: positions in no window
		}
		pos := r.Int64N(1<<41) - 1<<40
		if i%10 == 0 {
			pos = edge[i/10%len(edge)]
		}
		w := query.Window{Size: size, Slide: slide}
		if !small(pos) || size > 1<<20 && size/slide > 1<<10 {
			continue // big.Int's walk over a million windows: slow, not different
		}
		want, err := windowsOfBig(pos, w, "event time")
		if err != nil {
			assert.Empty(t, windowsOfSmall(pos, w), "pos %d window %+v: %v", pos, w, err)
			continue
		}
		require.Equal(t, want, windowsOfSmall(pos, w), "pos %d window %+v", pos, w)
		for _, b := range want {
			for _, wm := range []int64{pos, pos + size, b.start + size - 1, b.start + size, -(1<<40 - 1)} {
				w.Delay = r.Int64N(100)
				assert.Equal(t, lateBig(wm, b, w), late(wm, b, w), "wm %d %+v %+v", wm, b, w)
			}
		}
	}
}

// lateBig is late in unbounded integers, as the reference computed it
// before its int64 path.
func lateBig(wm int64, b bound, win query.Window) bool {
	end := new(big.Int).Add(big.NewInt(b.start), big.NewInt(win.Size))
	return new(big.Int).Sub(big.NewInt(wm), big.NewInt(win.Delay)).Cmp(end) >= 0
}

func diffFixture(t *testing.T) (*query.Query, *Result) {
	q := &query.Query{Name: "d", Schema: testSchema(t), Window: query.Tumbling(10),
		GroupBy:    []query.Expr{query.C("a")},
		Aggregates: []query.Aggregate{count(), agg(query.Avg, query.C("f"), "af")}}
	want := &Result{Rows: []Row{
		row(0, 10, ik4(1), Int(2), Float(1.5)),
		row(10, 20, ik4(2), Int(1), Float(1000)),
	}, Counts: Counts{Tuples: 3, Counted: 3}}
	return q, want
}

func clone(r *Result) *Result {
	c := &Result{Counts: r.Counts, Tuples: append([]byte(nil), r.Tuples...)}
	for _, x := range r.Rows {
		x.Values = append([]Value(nil), x.Values...)
		c.Rows = append(c.Rows, x)
	}
	return c
}

func TestDiffRows(t *testing.T) {
	q, want := diffFixture(t)
	assert.Equal(t, "", Diff(q, want, clone(want), 1e-9))

	// Within tolerance: 1000 vs 1000+1e-7 with tol 1e-9 (relative: 1e-6 allowed).
	got := clone(want)
	got.Rows[1].Values[1] = Float(1000 + 1e-7)
	assert.Equal(t, "", Diff(q, want, got, 1e-9))
	// Outside tolerance.
	got.Rows[1].Values[1] = Float(1000.01)
	d := Diff(q, want, got, 1e-9)
	assert.Contains(t, d, "row 1")
	assert.Contains(t, d, "window [10, 20)")
	assert.Contains(t, d, fmt.Sprintf("key %x", ik4(2)))
	assert.Contains(t, d, "value 1")
	assert.Contains(t, d, "1000 (float)")
	assert.Contains(t, d, "1000.01 (float)")
	// Near zero the tolerance is absolute: tol*1.
	got = clone(want)
	got.Rows[0].Values[1] = Float(1.5 + 5e-10)
	assert.Equal(t, "", Diff(q, want, got, 1e-9))
	got.Rows[0].Values[1] = Float(1.5 + 5e-9)
	assert.Contains(t, Diff(q, want, got, 1e-9), "row 0")

	// The first difference is reported: row 0 before row 1.
	got = clone(want)
	got.Rows[0].Values[0] = Int(3)
	got.Rows[1].Values[0] = Int(5)
	d = Diff(q, want, got, 1e-9)
	assert.Contains(t, d, "row 0")
	assert.Contains(t, d, "value 0")
	assert.Contains(t, d, "want 2 (int), got 3 (int)")
	assert.NotContains(t, d, "row 1")

	// Integers compare exactly, whatever the tolerance.
	got = clone(want)
	got.Rows[0].Values[0] = Int(3)
	assert.Contains(t, Diff(q, want, got, 0.9), "row 0")
	// A float where an integer is wanted is a difference.
	got.Rows[0].Values[0] = Float(2)
	assert.Contains(t, Diff(q, want, got, 1), "want 2 (int), got 2 (float)")

	// A different key or window.
	got = clone(want)
	got.Rows[1].Key = ik4(3)
	d = Diff(q, want, got, 0)
	assert.Contains(t, d, "row 1")
	assert.Contains(t, d, fmt.Sprintf("got window [10, 20) key %x", ik4(3)))
	got = clone(want)
	got.Rows[0].Start, got.Rows[0].End = 10, 20
	assert.Contains(t, Diff(q, want, got, 0), "row 0: want window [0, 10)")

	// Missing and extra rows.
	got = clone(want)
	got.Rows = got.Rows[:1]
	assert.Contains(t, Diff(q, want, got, 0), "want 2 rows, got 1: row 1")
	assert.Contains(t, Diff(q, got, want, 0), "want 1 rows, got 2: row 1")

	// Counts compare exactly.
	got = clone(want)
	got.Counts.Late, got.Counts.Counted = 1, 2
	assert.Contains(t, Diff(q, want, got, 1), "counts differ")

	// NaN equals NaN; equal infinities match.
	got, want2 := clone(want), clone(want)
	want2.Rows[0].Values[1], got.Rows[0].Values[1] = Float(math.NaN()), Float(math.NaN())
	want2.Rows[1].Values[1], got.Rows[1].Values[1] = Float(math.Inf(1)), Float(math.Inf(1))
	assert.Equal(t, "", Diff(q, want2, got, 0))
	got.Rows[1].Values[1] = Float(math.Inf(-1))
	assert.Contains(t, Diff(q, want2, got, 1), "row 1")
}

func TestDiffTuples(t *testing.T) {
	q := &query.Query{Name: "s", Schema: testSchema(t), Project: []query.Projection{{Expr: query.C("b"), As: "b"}}}
	want := run(t, q, data(tu{ts: 1, b: 2}, tu{ts: 3, b: 4}))
	assert.Equal(t, le64(1, 2, 3, 4), want.Tuples)
	assert.Equal(t, "", Diff(q, want, clone(want), 0))

	got := clone(want)
	got.Tuples[16+9] = 1 // tuple 1, byte 9
	d := Diff(q, want, got, 1)
	assert.Contains(t, d, "output tuple 1 differs at byte 9")

	got = clone(want)
	got.Tuples = got.Tuples[:16]
	assert.Contains(t, Diff(q, want, got, 0), "want 32 bytes (2 tuples), got 16 bytes (1 tuples)")

	got = clone(want)
	got.Counts.Filtered++
	assert.Contains(t, Diff(q, want, got, 0), "counts differ")
}

// TestAgainstDefinition evaluates a pseudo-random stream and checks every
// row against a recount straight from the definition, window by window.
func TestAgainstDefinition(t *testing.T) {
	q := &query.Query{Name: "def", Schema: testSchema(t), Window: query.Sliding(12, 4),
		Where:      query.ColNe("a", 0),
		GroupBy:    []query.Expr{query.C("a")},
		Aggregates: []query.Aggregate{count(), agg(query.Sum, query.C("b"), "s")}}
	var in []tu
	x := uint64(12345)
	next := func(n int64) int64 {
		x = x*6364136223846793005 + 1442695040888963407
		return int64(x>>33) % n
	}
	for i := 0; i < 300; i++ {
		in = append(in, tu{ts: int64(i)/2 - 20 + next(15) - 7, a: int32(next(3)), b: next(100)})
	}
	res := run(t, q, data(in...))

	// Classify each tuple: counted iff a != 0 and the first window holding it
	// has not closed under the maximum of the earlier times.
	type cell struct {
		start int64
		a     int32
	}
	want := map[cell][2]int64{}
	var late uint64
	for i, x := range in {
		wm, have := int64(0), false
		for _, y := range in[:i] {
			if !have || y.ts > wm {
				wm, have = y.ts, true
			}
		}
		if x.a == 0 {
			continue
		}
		var starts []int64
		for s := int64(-200); s <= 400; s += 4 {
			if s <= x.ts && x.ts < s+12 {
				starts = append(starts, s)
			}
		}
		require.Len(t, starts, 3)
		if have && wm >= starts[0]+12 {
			late++
			continue
		}
		for _, s := range starts {
			c := want[cell{s, x.a}]
			want[cell{s, x.a}] = [2]int64{c[0] + 1, c[1] + x.b}
		}
	}
	require.Len(t, res.Rows, len(want))
	assert.Equal(t, late, res.Counts.Late)
	assert.NotZero(t, late)
	for _, r := range res.Rows {
		c := want[cell{r.Start, int32(query.DecodeIntKey([]byte(r.Key), 4))}]
		assert.Equal(t, r.End, r.Start+12)
		assert.Equal(t, []Value{Int(c[0]), Int(c[1])}, r.Values, "window %d key %x", r.Start, r.Key)
	}
}
