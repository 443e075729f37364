package reference

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

var (
	tv = Bool(true)
	fv = Bool(false)
	nv = Null(BoolKind)
)

// TestKleene: AND, OR and NOT's truth tables over TRUE, FALSE and NULL.
func TestKleene(t *testing.T) {
	vals := []query.Expr{T, F, N}
	and := [3][3]Value{
		{tv, fv, nv}, // TRUE AND x
		{fv, fv, fv}, // FALSE AND x
		{nv, fv, nv}, // NULL AND x
	}
	or := [3][3]Value{
		{tv, tv, tv},
		{tv, fv, nv},
		{tv, nv, nv},
	}
	for i, a := range vals {
		for j, b := range vals {
			same(t, and[i][j], ev(t, query.And(a, b)), "%s AND %s", a, b)
			same(t, or[i][j], ev(t, query.Or(a, b)), "%s OR %s", a, b)
		}
	}
	for i, want := range []Value{fv, tv, nv} {
		same(t, want, ev(t, query.NotExpr{X: vals[i]}), "NOT %s", vals[i])
	}
	// More terms: any FALSE decides AND, any TRUE decides OR, else NULL
	// where a term is.
	same(t, fv, ev(t, query.And(T, N, F)))
	same(t, nv, ev(t, query.And(T, N, T)))
	same(t, tv, ev(t, query.And(T, T, T)))
	same(t, tv, ev(t, query.Or(F, N, T)))
	same(t, nv, ev(t, query.Or(F, N, F)))
	same(t, fv, ev(t, query.Or(F, F, F)))
	// NOT of a comparison with NULL is NULL, not TRUE.
	same(t, nv, ev(t, query.NotExpr{X: query.Cmp(I(1), query.Lt, NI)}))
}

func TestCompareNull(t *testing.T) {
	for _, op := range []query.CmpOp{query.Eq, query.Ne, query.Lt, query.Le, query.Gt, query.Ge} {
		same(t, nv, ev(t, query.Cmp(I(1), op, NI)), "1 %s NULL", op)
		same(t, nv, ev(t, query.Cmp(NI, op, I(1))), "NULL %s 1", op)
		same(t, nv, ev(t, query.Cmp(NI, op, NI)), "NULL %s NULL", op)
		same(t, nv, ev(t, query.Cmp(S("a"), op, NS)), "'a' %s NULL", op)
		same(t, nv, ev(t, query.Cmp(query.Null{}, op, Fl(1))), "untyped NULL %s 1.0", op)
	}
	same(t, tv, ev(t, query.IsNull{X: NI}))
	same(t, fv, ev(t, query.IsNull{X: NI, Not: true}))
	same(t, fv, ev(t, query.IsNull{X: I(1)}))
	same(t, tv, ev(t, query.IsNull{X: I(1), Not: true}))
	same(t, tv, ev(t, query.IsNull{X: query.Cmp(I(1), query.Eq, NI)})) // (1 = NULL) IS NULL
	same(t, fv, ev(t, query.IsNull{X: S("")}))                         // the empty string is not NULL
}

func TestCompareTypes(t *testing.T) {
	cases := []struct {
		l    query.Expr
		op   query.CmpOp
		r    query.Expr
		want bool
	}{
		// Strings: byte-wise, code point order.
		{S("a"), query.Lt, S("b"), true},
		{S("B"), query.Lt, S("a"), true},
		{S("ab"), query.Lt, S("abc"), true},
		{S(""), query.Lt, S("a"), true},
		{S("é"), query.Gt, S("z"), true},
		{S("a\x00"), query.Gt, S("a"), true},
		{S("abc"), query.Eq, S("abc"), true},
		{S("abc"), query.Ne, S("abC"), true},
		{S("abc"), query.Ge, S("abd"), false},
		// Timestamps with timestamps and integers (milliseconds).
		{Ts(5), query.Lt, Ts(6), true},
		{Ts(5), query.Eq, I(5), true},
		{I(4), query.Ge, Ts(5), false},
		{Ts(-1), query.Lt, Ts(0), true},
		// Numbers: a float with an integer as floats; NaN false but for <>.
		{I(1), query.Eq, Fl(1), true},
		{I(math.MaxInt64), query.Lt, I(math.MinInt64), false},
		{Fl(math.NaN()), query.Eq, Fl(math.NaN()), false},
		{Fl(math.NaN()), query.Ne, Fl(math.NaN()), true},
		{Fl(math.NaN()), query.Lt, I(1), false},
		{Fl(math.NaN()), query.Ge, I(1), false},
	}
	for _, c := range cases {
		same(t, Bool(c.want), ev(t, query.Cmp(c.l, c.op, c.r)), "%s %s %s", c.l, c.op, c.r)
	}
	// Booleans compare with = and <> (false before true otherwise); the
	// IR's typing keeps them out of Compare today, the evaluator takes them.
	for _, c := range []struct {
		op   query.CmpOp
		l, r Value
		want Value
	}{
		{query.Eq, tv, tv, tv}, {query.Eq, tv, fv, fv}, {query.Ne, tv, fv, tv},
		{query.Ne, fv, fv, fv}, {query.Lt, fv, tv, tv}, {query.Eq, nv, tv, nv},
	} {
		got, err := compareOp(c.op, c.l, c.r, query.Cmp(T, c.op, T))
		require.NoError(t, err)
		same(t, c.want, got, "%v %s %v", c.l, c.op, c.r)
	}
	_, err := compareOp(query.Eq, Str("1"), Int(1), query.Cmp(S("1"), query.Eq, I(1)))
	assert.ErrorContains(t, err, "do not compare")
}

func TestArithTimesAndNulls(t *testing.T) {
	runTable(t, []fcase{
		{query.Add(Ts(1000), I(500)), Time(1500)}, // ts + INTERVAL
		{query.Add(I(500), Ts(1000)), Time(1500)},
		{query.Sub(Ts(1000), I(1500)), Time(-500)},
		{query.Sub(Ts(1000), Ts(400)), Int(600)}, // a span
		{query.Add(I(1), NI), Null(IntKind)},
		{query.Mul(NF, I(2)), Null(FloatKind)},
		{query.Add(NT, I(2)), Null(TimeKind)},
		{query.Sub(Ts(1), NT), Null(IntKind)},
		{query.Div(I(7), I(0)), Int(0)},
		{query.Div(NI, I(0)), Null(IntKind)},
	})
}

func TestInList(t *testing.T) {
	in := func(x query.Expr, not bool, list ...query.Expr) query.Expr {
		return query.InList{X: x, List: list, Not: not}
	}
	runTable(t, []fcase{
		{in(I(1), false, I(1), I(2)), tv},
		{in(I(3), false, I(1), I(2)), fv},
		{in(I(3), false, I(1), NI), nv}, // no match, a NULL in the list
		{in(I(1), false, I(1), NI), tv}, // a match decides
		{in(I(1), false, NI, I(1)), tv},
		{in(NI, false, I(1)), nv}, // a NULL X
		{in(NI, false, NI), nv},
		{in(I(3), true, I(1), I(2)), tv},
		{in(I(1), true, I(1)), fv},
		{in(I(3), true, I(1), NI), nv}, // NOT IN with a NULL: never TRUE
		{in(NI, true, I(1)), nv},
		{in(I(1), false, Fl(1)), tv}, // as floats
		{in(S("a"), false, S("b"), S("a")), tv},
		{in(S("A"), false, S("a")), fv}, // case-sensitive
		{in(Ts(5), false, I(4), I(5)), tv},
	})
}

func TestLike(t *testing.T) {
	like := func(x, p string) query.Expr { return query.Like{X: S(x), Pattern: p} }
	esc := func(x, p string, e rune) query.Expr { return query.Like{X: S(x), Pattern: p, Escape: e} }
	runTable(t, []fcase{
		{like("abc", "abc"), tv},
		{like("abc", "a%"), tv},
		{like("abc", "%c"), tv},
		{like("abc", "%b%"), tv},
		{like("abc", "_b_"), tv},
		{like("abc", "a_"), fv},
		{like("abc", "a__"), tv},
		{like("abc", "a___"), fv},
		{like("", "%"), tv},
		{like("", "_"), fv},
		{like("", ""), tv},
		{like("a", ""), fv},
		{like("xaybz", "%a%b%"), tv},
		{like("xbyaz", "%a%b%"), fv},
		{like("ABC", "abc"), fv}, // case-sensitive
		{like("héllo", "h_llo"), tv},
		{like("日本語", "__語"), tv},
		{like("a\xffb", "a_b"), tv}, // an invalid byte is one character
		{like("a%b", "a%b"), tv},
		{like("a.*b", "a.*b"), tv}, // no regular expression
		{like("axb", "a.*b"), fv},
		{esc("a%", "a!%", '!'), tv},
		{esc("ab", "a!%", '!'), fv},
		{esc("a_", "a!_", '!'), tv},
		{esc("ab", "a!_", '!'), fv},
		{esc("a!", "a!!", '!'), tv},
		{esc("ab", "a!b", '!'), tv}, // an escaped ordinary character is itself
		{esc("a%", "a\\%", '\\'), tv},
		{esc("aé%", "_é#%", '#'), tv},
		{query.Like{X: S("abc"), Pattern: "a%", Not: true}, fv},
		{query.Like{X: S("abc"), Pattern: "b%", Not: true}, tv},
		{query.Like{X: NS, Pattern: "%"}, nv},
		{query.Like{X: NS, Pattern: "%", Not: true}, nv},
	})
	_, err := noCols.eval(esc("a", "a!", '!'))
	assert.ErrorContains(t, err, "escape")
}

func TestCaseWhen(t *testing.T) {
	cs := func(els query.Expr, whens ...query.When) query.Expr { return query.Case{Whens: whens, Else: els} }
	runTable(t, []fcase{
		{cs(nil, query.When{Cond: N, Then: I(1)}, query.When{Cond: T, Then: I(2)}), Int(2)}, // NULL is not TRUE
		{cs(nil, query.When{Cond: F, Then: I(1)}), Null(IntKind)},                           // no ELSE: NULL
		{cs(I(3), query.When{Cond: F, Then: I(1)}, query.When{Cond: N, Then: I(2)}), Int(3)},
		{cs(I(3), query.When{Cond: T, Then: I(1)}, query.When{Cond: T, Then: I(2)}), Int(1)}, // the first
		{cs(Fl(2.5), query.When{Cond: T, Then: I(1)}), Float(1)},                             // of the CASE's type
		{cs(NS, query.When{Cond: T, Then: S("x")}), Str("x")},
		{cs(S("y"), query.When{Cond: F, Then: query.Null{}}), Str("y")},
		{cs(nil, query.When{Cond: T, Then: query.Null{}}, query.When{Cond: T, Then: Ts(3)}), Null(TimeKind)},
		{cs(nil, query.When{Cond: query.Cmp(I(1), query.Eq, NI), Then: I(1)}), Null(IntKind)},
	})
}

// TestWhereKeepsOnlyTrue: a condition that is NULL drops the tuple, and so
// does its negation.
func TestWhereKeepsOnlyTrue(t *testing.T) {
	a := newArena(t)
	s := nullSchema(t)
	in := []nt{{ts: 1, x: ip(5)}, {ts: 2}, {ts: 3, x: ip(0)}}
	for _, c := range []struct {
		where    query.Expr
		want     []int64 // output event times
		nullKept bool    // whether the tuple whose x is NULL passes
	}{
		{query.Cmp(query.C("x"), query.Gt, I(1)), []int64{1}, false},
		{query.NotExpr{X: query.Cmp(query.C("x"), query.Gt, I(1))}, []int64{3}, false},
		{query.Or(query.Cmp(query.C("x"), query.Gt, I(1)), query.IsNull{X: query.C("x")}), []int64{1, 2}, true},
		{query.InList{X: query.C("x"), List: []query.Expr{I(5), NI}, Not: true}, nil, false}, // NULL in the list: never TRUE
	} {
		q := &query.Query{Name: "w", Schema: s, Where: c.where}
		res := run(t, q, ndata(a, in...))
		var got []int64
		for _, v := range res.Values {
			got = append(got, v[0].I)
		}
		assert.Equal(t, c.want, got, "%s", c.where)
		assert.Equal(t, Counts{Tuples: 3, Filtered: uint64(3 - len(c.want)), Counted: uint64(len(c.want))}, res.Counts)
		ok, err := EvalPred(c.where, s, ndata(a, in[1]))
		require.NoError(t, err)
		assert.Equal(t, c.nullKept, ok, "EvalPred on the NULL tuple: %s", c.where)
	}
}
