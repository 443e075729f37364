package query

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func schema(t *testing.T) *Schema {
	s, err := NewSchema(64,
		Attribute{Name: "ts", Type: Int64},
		Attribute{Name: "a", Type: Int32, Offset: 8},
		Attribute{Name: "b", Type: Int64, Offset: 16},
		Attribute{Name: "f", Type: Float64, Offset: 24},
		Attribute{Name: "id", Type: Bytes, Offset: 32, Size: 16},
		Attribute{Name: "wide", Type: Bytes, Offset: 48, Size: 16},
	)
	require.NoError(t, err)
	return s
}

func TestNewSchemaErrors(t *testing.T) {
	for _, tc := range []struct {
		attrs []Attribute
		size  int
		want  string
	}{
		{nil, 16, "no attributes"},
		{[]Attribute{{Name: "x", Type: Int32}}, 16, "must be the int64 event time"},
		{[]Attribute{{Name: "ts", Type: Int64}, {Name: "ts", Type: Int32, Offset: 8}}, 16, "defined twice"},
		{[]Attribute{{Name: "ts", Type: Int64}, {Name: "a", Type: Int32, Offset: 6}}, 16, "overlap"},
		{[]Attribute{{Name: "ts", Type: Int64}, {Name: "a", Type: Int64, Offset: 12}}, 16, "does not fit"},
		{[]Attribute{{Name: "ts", Type: Int64}, {Name: "a", Type: Bytes, Offset: 8}}, 16, "positive size"},
		{[]Attribute{{Name: "ts", Type: Int64}}, 0, "tuple size 0"},
	} {
		_, err := NewSchema(tc.size, tc.attrs...)
		assert.ErrorContains(t, err, tc.want)
	}
}

func TestValidate(t *testing.T) {
	s := schema(t)
	base := func() *Query {
		return &Query{Name: "q", Schema: s, Window: Tumbling(10), Aggregates: []Aggregate{{Func: Count, As: "n"}}}
	}
	require.NoError(t, base().Validate())
	for _, tc := range []struct {
		edit func(q *Query)
		want string
	}{
		{func(q *Query) { q.Window = Sliding(5, 10) }, "slide 10 larger than size 5"},
		{func(q *Query) { q.Window = Tumbling(0) }, "size 0 must be positive"},
		{func(q *Query) { q.Window.Type = 7 }, "unknown type"},
		{func(q *Query) { q.Window.Delay = -1 }, "watermark delay -1 is negative (valid: delay >= 0, in event-time units for a range window)"},
		{func(q *Query) { q.Window = Window{Type: Rows, Size: 4, Slide: 2, Delay: -5} }, "watermark delay -5 is negative (valid: delay >= 0, in tuples for a row window)"},
		{func(q *Query) { q.Where = ColEq("nope", 1) }, `no column "nope"`},
		{func(q *Query) { q.Where = Cmp(C("id"), Eq, Int(1)) }, "compares bytes with integer"},
		{func(q *Query) { q.Where = Add(C("a"), Int(1)) }, "not a predicate"},
		{func(q *Query) { q.Where = And(ColEq("a", 1), Add(C("a"), Int(1))) }, "not a predicate"},
		{func(q *Query) { q.Where = Or() }, "OR of no terms"},
		{func(q *Query) { q.GroupBy = []Expr{C("missing")} }, `group by: no column "missing"`},
		{func(q *Query) { q.GroupBy = []Expr{C("f")} }, "group keys are integers, timestamps, booleans, strings or bytes"},
		{func(q *Query) { q.GroupBy = []Expr{Div(C("f"), Int(2))} }, "group keys are integers, timestamps, booleans, strings or bytes"},
		{func(q *Query) { q.GroupBy = []Expr{C("id"), C("a")} }, "at most 16 bytes"},
		{func(q *Query) { q.Aggregates = []Aggregate{{Func: Sum, Arg: C("id")}} }, "not a number"},
		{func(q *Query) { q.Aggregates = []Aggregate{{Func: Sum}} }, "missing expression"},
		{func(q *Query) {
			q.Aggregates = []Aggregate{{Func: Count, As: "x"}, {Func: Max, Arg: C("a"), As: "x"}}
		}, `"x" used twice`},
		{func(q *Query) { q.Having = Cmp(C("zz"), Lt, Int(3)) }, `"zz" is neither`},
		{func(q *Query) { q.Having = Cmp(C("a"), Lt, Int(3)) }, `"a" is neither`},
		{func(q *Query) { q.Project = []Projection{{Expr: C("a")}} }, "a projection and aggregates"},
		{func(q *Query) { q.Aggregates = nil; q.GroupBy = []Expr{C("a")} }, "need at least one aggregate"},
		{func(q *Query) { q.Aggregates = nil; q.Project = []Projection{{Expr: Null{}}} }, "has no type"},
		{func(q *Query) { q.Where = Like{X: C("a"), Pattern: "x%"} }, "LIKE applies to strings"},
		{func(q *Query) { q.Aggregates = []Aggregate{{Func: Sum, Arg: Str("x")}} }, "not a number"},
		{func(q *Query) { q.Aggregates = []Aggregate{{Func: Count, Filter: C("a")}} }, "not a predicate"},
		{func(q *Query) {
			q.Join = &StaticJoin{Column: "a", Table: &StaticTable{KeyWidth: 16, ValueWidth: 1}, As: "x"}
		}, "the table has keys of 16 bytes"},
		{func(q *Query) {
			q.Join = &StaticJoin{Column: "id", As: "x", Table: &StaticTable{KeyWidth: 16, ValueWidth: 1,
				Keys: [][]byte{make([]byte, 16), make([]byte, 16)}, Values: [][]byte{{1}, {2}}}}
		}, "same key"},
	} {
		q := base()
		tc.edit(q)
		err := q.Validate()
		if assert.Error(t, err) {
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), `query "q"`)
		}
	}
	ok := []func(q *Query){
		func(q *Query) {
			q.GroupBy = []Expr{C("a"), Div(C("b"), Int(5280))}
			q.Window = Window{Type: Rows, Size: 100, Slide: 10}
			q.Aggregates = append(q.Aggregates, Aggregate{Func: Avg, Arg: C("f"), As: "avg_f"})
			q.Having = And(Cmp(C("avg_f"), Lt, Float(40)), Cmp(C("a"), Gt, Int(0)), Cmp(C("n"), Ge, Int(2)))
		},
		func(q *Query) {
			q.Aggregates = nil
			q.Window = Window{}
			q.Where = Or(ColLt("a", 3), Cmp(Mul(C("f"), Float(2)), Gt, C("b")))
			q.Project = []Projection{{Expr: Add(C("a"), C("f")), As: "s"}}
		},
	}
	for i, edit := range ok {
		q := base()
		edit(q)
		assert.NoError(t, q.Validate(), "case %d", i)
	}
}

func TestExprTypes(t *testing.T) {
	scope := SchemaScope(schema(t))
	for _, tc := range []struct {
		e    Expr
		want ValueType
	}{
		{Add(C("a"), C("b")), IntValue},
		{Add(C("a"), C("f")), FloatValue},
		{Div(Int(1), Float(2)), FloatValue},
		{Cmp(C("a"), Lt, Float(2)), BoolValue},
		{C("id"), BytesValue},
	} {
		got, err := TypeOf(tc.e, scope)
		require.NoError(t, err, "%s", tc.e)
		assert.Equal(t, tc.want, got, "%s", tc.e)
	}
	assert.Equal(t, "((a + 1) < 3 OR b >= 0)", Or(Cmp(Add(C("a"), Int(1)), Lt, Int(3)), ColGe("b", 0)).String())
}

func TestIntKeyOrder(t *testing.T) {
	vals := []int64{-1 << 40, -5, -1, 0, 1, 7, 1 << 40}
	for _, w := range []int{4, 8} {
		var prev []byte
		for _, v := range vals {
			if w == 4 && (v < -1<<31 || v >= 1<<31) {
				continue
			}
			k := AppendIntKey(nil, v, w)
			require.Len(t, k, w)
			assert.Equal(t, v, DecodeIntKey(k, w))
			if prev != nil {
				assert.Less(t, string(prev), string(k), "byte order follows value order")
			}
			prev = k
		}
	}
}

func TestCmpOpMirror(t *testing.T) {
	for op, want := range map[CmpOp]CmpOp{Eq: Eq, Ne: Ne, Lt: Gt, Le: Ge, Gt: Lt, Ge: Le} {
		assert.Equal(t, want, op.Mirror(), "%v", op)
		assert.Equal(t, op, op.Mirror().Mirror(), "%v twice", op)
	}
}

func TestHoldsAndColumnConst(t *testing.T) {
	for op, want := range map[CmpOp][3]bool{Eq: {false, true, false}, Ne: {true, false, true}, Lt: {true, false, false}, Le: {true, true, false}, Gt: {false, false, true}, Ge: {false, true, true}} {
		for i, b := range []int64{2, 1, 0} {
			assert.Equal(t, want[i], Holds(op, int64(1), b), "1 %v %d", op, b)
			assert.Equal(t, want[i], Holds(op, 1.0, float64(b)), "1.0 %v %d", op, b)
		}
	}
	col, op, k, ok := ColumnConst(Cmp(C("a"), Lt, Int(3)))
	assert.True(t, ok)
	assert.Equal(t, [3]any{"a", Lt, int64(3)}, [3]any{col, op, k})
	col, op, k, ok = ColumnConst(Cmp(Int(3), Lt, C("a")))
	assert.True(t, ok)
	assert.Equal(t, [3]any{"a", Gt, int64(3)}, [3]any{col, op, k}, "3 < a is a > 3")
	for _, e := range []Expr{Cmp(C("a"), Lt, C("b")), Cmp(C("a"), Lt, Float(1)), Add(C("a"), Int(1)), Cmp(Add(C("a"), Int(1)), Eq, Int(0))} {
		_, _, _, ok := ColumnConst(e)
		assert.False(t, ok, "%v", e)
	}
}

// TestColShorthands: each Col shorthand is column op integer constant, as
// ColumnConst reads it back.
func TestColShorthands(t *testing.T) {
	for _, tc := range []struct {
		e    Expr
		op   CmpOp
		text string
	}{
		{ColEq("a", 3), Eq, "a = 3"},
		{ColNe("a", 3), Ne, "a != 3"},
		{ColLt("a", 3), Lt, "a < 3"},
		{ColLe("a", 3), Le, "a <= 3"},
		{ColGt("a", 3), Gt, "a > 3"},
		{ColGe("a", 3), Ge, "a >= 3"},
	} {
		col, op, k, ok := ColumnConst(tc.e)
		assert.True(t, ok, "%v", tc.e)
		assert.Equal(t, [3]any{"a", tc.op, int64(3)}, [3]any{col, op, k}, "%v", tc.e)
		assert.Equal(t, tc.text, tc.e.String())
	}
}

// TestWindowDelay: a delay of zero or more is valid, on queries and window
// joins alike; a negative one is refused on both.
func TestWindowDelay(t *testing.T) {
	w := Tumbling(10)
	for _, d := range []int64{0, 1, 10, 1 << 62, math.MaxInt64} {
		w.Delay = d
		require.NoError(t, w.Validate(), "delay %d", d)
	}
	s := schema(t)
	j := &WindowJoin{Name: "j", Left: s, Right: s, Window: Window{Type: Range, Size: 10, Slide: 5, Delay: -3}}
	err := j.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `join "j": window: watermark delay -3 is negative`)
	j.Window.Delay = 3
	require.NoError(t, j.Validate())
}

// TestReads: a query reads the attributes its expressions name, wherever
// they are (WHERE, a projection, GROUP BY, an aggregate's argument and
// FILTER, HAVING, deep inside CASE, IN and calls), the lookup join's key,
// and every attribute where it passes tuples on whole or to a UDF.
func TestReads(t *testing.T) {
	s, err := NewSchema(64, Attribute{Name: "ts", Type: Int64},
		Attribute{Name: "a", Type: Int64, Offset: 8}, Attribute{Name: "b", Type: String, Offset: 16},
		Attribute{Name: "c", Type: String, Offset: 32}, Attribute{Name: "d", Type: Int64, Offset: 48})
	require.NoError(t, err)
	lower := func(x Expr) Expr { return Call{Fn: "lower", Args: []Expr{x}} }
	for _, c := range []struct {
		name  string
		q     Query
		reads []string
	}{
		{"select star", Query{}, []string{"ts", "a", "b", "c", "d"}},
		{"select star where", Query{Where: Cmp(C("a"), Gt, Int(1))}, []string{"ts", "a", "b", "c", "d"}},
		{"udf", Query{UDF: &UDF{}}, []string{"ts", "a", "b", "c", "d"}},
		{"projection", Query{Project: []Projection{{Expr: Case{Whens: []When{{
			Cond: InList{X: lower(C("b")), List: []Expr{Str("x")}}, Then: Str("1")}}, Else: C("d")}}}},
			[]string{"b", "d"}},
		{"where and projection", Query{Where: Or(IsNull{X: C("c")}, Cmp(C("a"), Lt, Int(0))),
			Project: []Projection{{Expr: C("d")}}}, []string{"a", "c", "d"}},
		{"aggregation", Query{GroupBy: []Expr{lower(C("b"))},
			Aggregates: []Aggregate{{Func: Count, As: "n"}, {Func: Sum, Arg: C("d"), Filter: Like{X: C("c"), Pattern: "x%"}}},
			Having:     Cmp(C("n"), Gt, Int(1))}, []string{"b", "c", "d"}},
		{"count only", Query{Aggregates: []Aggregate{{Func: Count, As: "n"}}}, nil},
	} {
		q := c.q
		q.Schema = s
		var got []string
		for _, a := range s.Attrs {
			if q.Reads(a.Name) {
				got = append(got, a.Name)
			}
		}
		assert.Equal(t, c.reads, got, c.name)
	}
}
