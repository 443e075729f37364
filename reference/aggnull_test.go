package reference

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

func aggf(f query.AggFunc, arg query.Expr, as string, filter query.Expr) query.Aggregate {
	return query.Aggregate{Func: f, Arg: arg, As: as, Filter: filter}
}

// TestAggregatesSkipNulls: COUNT(x) counts the values that are not NULL,
// COUNT(*) every tuple; SUM, AVG, MIN and MAX skip NULLs and are NULL over
// none; MIN and MAX of a timestamp are timestamps.
func TestAggregatesSkipNulls(t *testing.T) {
	a := newArena(t)
	q := &query.Query{Name: "nulls", Schema: nullSchema(t), Window: query.Tumbling(10),
		Aggregates: []query.Aggregate{
			count(),
			agg(query.Count, query.C("x"), "nx"),
			agg(query.Sum, query.C("x"), "sx"),
			agg(query.Avg, query.C("x"), "ax"),
			agg(query.Min, query.C("x"), "mn"),
			agg(query.Max, query.C("x"), "mx"),
			agg(query.Min, query.C("at"), "amin"),
			agg(query.Max, query.C("at"), "amax"),
			agg(query.Sum, query.C("f"), "sf"),
			agg(query.Count, query.C("s"), "ns"),
		}}
	res := run(t, q, ndata(a,
		nt{ts: 1, x: ip(1), at: ip(100), s: sp("a")},
		nt{ts: 2, f: fp(0.5), s: sp("")}, // x, at NULL; the empty string is a value
		nt{ts: 3, x: ip(3), at: ip(50)},
		nt{ts: 4, at: ip(70), f: fp(1.5)},
		// [10, 20): nothing but NULLs.
		nt{ts: 11},
		nt{ts: 12},
	))
	assert.Equal(t, []Row{
		row(0, 10, "", Int(4), Int(2), Int(4), Float(2), Int(1), Int(3), Time(50), Time(100), Float(2), Int(2)),
		row(10, 20, "", Int(2), Int(0), Null(IntKind), Null(FloatKind), Null(IntKind), Null(IntKind), Null(TimeKind), Null(TimeKind), Null(FloatKind), Int(0)),
	}, res.Rows)
	assert.Equal(t, Counts{Tuples: 6, Counted: 6}, res.Counts)
	for _, ag := range q.Aggregates[2:9] {
		assert.True(t, q.AggNullable(ag), "%s %s can be NULL", ag.Func, ag.As)
	}
}

// TestFilter: FILTER (WHERE cond) aggregates only the tuples for which cond
// is TRUE (not FALSE, not NULL); the group still has its row when the
// filter takes none, its COUNT 0 and its SUM NULL.
func TestFilter(t *testing.T) {
	a := newArena(t)
	k1 := query.Cmp(query.C("k"), query.Gt, I(1))
	q := &query.Query{Name: "filter", Schema: nullSchema(t), Window: query.Tumbling(10),
		Where: query.Cmp(query.C("k"), query.Ge, I(0)),
		Aggregates: []query.Aggregate{
			count(),
			aggf(query.Count, nil, "c1", k1),
			aggf(query.Sum, query.C("x"), "s1", query.C("b")), // a boolean column as the condition
			aggf(query.Count, query.C("x"), "cx", k1),
			aggf(query.Max, query.C("x"), "ma", query.Like{X: query.C("s"), Pattern: "a%"}),
			aggf(query.Avg, query.C("x"), "av", query.NotExpr{X: query.C("b")}),
		}}
	res := run(t, q, ndata(a,
		nt{ts: 1, k: 1, b: bp(true), x: ip(10), s: sp("ab")},
		nt{ts: 2, k: 2, x: ip(20), s: sp("b")},     // b NULL: not in s1, nor in av (NOT NULL is NULL)
		nt{ts: 3, k: 3, b: bp(false), s: sp("ax")}, // x NULL
		nt{ts: 4, k: 5, b: bp(true), x: ip(5)},     // s NULL: LIKE is NULL
		nt{ts: 5, k: -1, b: bp(true), x: ip(1000)}, // filtered by WHERE
		nt{ts: 11, k: 0, b: bp(false), x: ip(7), s: sp("zz")},
	))
	assert.Equal(t, []Row{
		row(0, 10, "", Int(4), Int(3), Int(15), Int(2), Int(10), Null(FloatKind)),
		row(10, 20, "", Int(1), Int(0), Null(IntKind), Int(0), Null(IntKind), Float(7)),
	}, res.Rows)
	assert.Equal(t, Counts{Tuples: 6, Filtered: 1, Counted: 5}, res.Counts)
}

// TestHavingNullable: HAVING over an aggregate that can be NULL keeps a
// group only where it is TRUE; IS NULL sees the NULL.
func TestHavingNullable(t *testing.T) {
	a := newArena(t)
	in := ndata(a,
		nt{ts: 1, k: 1, x: ip(5)},
		nt{ts: 2, k: 1, x: ip(-1)},
		nt{ts: 3, k: 2}, // k 2: every x NULL
		nt{ts: 4, k: 3, x: ip(1)},
	)
	q := &query.Query{Name: "having", Schema: nullSchema(t), Window: query.Tumbling(10),
		GroupBy:    []query.Expr{query.C("k")},
		Aggregates: []query.Aggregate{count(), agg(query.Sum, query.C("x"), "s")},
	}
	for _, c := range []struct {
		having query.Expr
		keys   []int64
	}{
		{query.Cmp(query.C("s"), query.Gt, I(2)), []int64{1}},
		{query.Cmp(query.C("s"), query.Le, I(2)), []int64{3}},
		{query.NotExpr{X: query.Cmp(query.C("s"), query.Gt, I(2))}, []int64{3}},
		{query.IsNull{X: query.C("s")}, []int64{2}},
		{query.Or(query.IsNull{X: query.C("s")}, query.Cmp(query.C("k"), query.Eq, I(3))), []int64{2, 3}},
	} {
		q.Having = c.having
		res := run(t, q, in)
		var keys []int64
		for _, r := range res.Rows {
			keys = append(keys, query.DecodeIntKey([]byte(r.Key), 4))
		}
		assert.Equal(t, c.keys, keys, "HAVING %s", c.having)
	}

	// A nullable GROUP BY column in HAVING, read from the group's tuples.
	q = &query.Query{Name: "having-s", Schema: nullSchema(t), Window: query.Tumbling(10),
		GroupBy:    []query.Expr{query.C("s")},
		Aggregates: []query.Aggregate{count()},
		Having:     query.And(query.IsNull{X: query.C("s"), Not: true}, query.Cmp(query.C("n"), query.Gt, I(1))),
	}
	res := run(t, q, ndata(a, nt{ts: 1}, nt{ts: 2}, nt{ts: 3, s: sp("a")}, nt{ts: 4, s: sp("b")}, nt{ts: 5, s: sp("b")}))
	assert.Equal(t, []Row{row(0, 10, string(query.AppendStringKey(nil, []byte("b"), false)), Int(2))}, res.Rows)
}

func sk(s string) string { return string(query.AppendStringKey(nil, []byte(s), false)) }

// TestGroupKeyForms: each GROUP BY value's canonical form (query/key.go),
// and rows ordered by them: NULL first.
func TestGroupKeyForms(t *testing.T) {
	a := newArena(t)
	s := nullSchema(t)
	const long = "this string is longer than twelve bytes"
	grouped := func(name string, g ...query.Expr) *query.Query {
		return &query.Query{Name: name, Schema: s, Window: query.Tumbling(100), GroupBy: g, Aggregates: []query.Aggregate{count()}}
	}
	keysOf := func(res *Result) (keys []string, counts []int64) {
		for _, r := range res.Rows {
			keys = append(keys, r.Key)
			counts = append(counts, r.Values[0].I)
		}
		return keys, counts
	}

	// Strings: the byte 0 for NULL; else 1, the bytes with 0 escaped as
	// 0 0xFF, and 0 0. Their byte order is the strings' (NULL first).
	res := run(t, grouped("s", query.C("s")), ndata(a,
		nt{ts: 1, s: sp("ab")}, nt{ts: 2}, nt{ts: 3, s: sp("a")}, nt{ts: 4, s: sp("")},
		nt{ts: 5, s: sp("a\x00")}, nt{ts: 6, s: sp("a")}, nt{ts: 7, s: sp(long)}, nt{ts: 8},
		nt{ts: 9, s: sp(long[:13])},
	))
	keys, counts := keysOf(res)
	assert.Equal(t, []string{"\x00", "\x01\x00\x00", "\x01a\x00\x00", "\x01a\x00\xff\x00\x00", "\x01ab\x00\x00", sk(long[:13]), sk(long)}, keys)
	assert.Equal(t, []int64{2, 1, 2, 1, 1, 1, 1}, counts)

	// A string expression.
	res = run(t, grouped("upper", query.Call{Fn: "upper", Args: []query.Expr{query.C("s")}}), ndata(a,
		nt{ts: 1, s: sp("ab")}, nt{ts: 2, s: sp("AB")}, nt{ts: 3}))
	keys, counts = keysOf(res)
	assert.Equal(t, []string{"\x00", sk("AB")}, keys)
	assert.Equal(t, []int64{1, 2}, counts)

	// Booleans: 0 NULL, 1 false, 2 true; a column and a condition.
	res = run(t, grouped("b", query.C("b")), ndata(a, nt{ts: 1, b: bp(true)}, nt{ts: 2, b: bp(false)}, nt{ts: 3}, nt{ts: 4, b: bp(true)}))
	keys, counts = keysOf(res)
	assert.Equal(t, []string{"\x00", "\x01", "\x02"}, keys)
	assert.Equal(t, []int64{1, 1, 2}, counts)
	xpos := query.Cmp(query.C("x"), query.Gt, I(0))
	res = run(t, grouped("x>0", xpos), ndata(a, nt{ts: 1, x: ip(1)}, nt{ts: 2, x: ip(-1)}, nt{ts: 3}))
	keys, _ = keysOf(res)
	assert.Equal(t, []string{"\x00", "\x01", "\x02"}, keys)

	// A nullable integer: a byte 0 and zeros for NULL, else 1 and
	// AppendIntKey; q.KeyWidth bytes.
	q := grouped("x", query.C("x"))
	require.True(t, q.KeyNullable(query.C("x")))
	res = run(t, q, ndata(a, nt{ts: 1, x: ip(7)}, nt{ts: 2}, nt{ts: 3, x: ip(-5)}, nt{ts: 4, x: ip(0)}))
	keys, _ = keysOf(res)
	nk := func(v int64) string { return string(query.AppendNullableIntKey(nil, v, 8, false)) }
	assert.Equal(t, []string{string(make([]byte, 9)), nk(-5), nk(0), nk(7)}, keys)
	assert.Equal(t, "\x01\x80\x00\x00\x00\x00\x00\x00\x07", nk(7))
	for _, k := range keys {
		assert.Len(t, k, q.KeyWidth(query.C("x")))
	}

	// A nullable timestamp, and arithmetic on it: as a nullable integer.
	res = run(t, grouped("at", query.Add(query.C("at"), I(1))), ndata(a, nt{ts: 1, at: ip(10)}, nt{ts: 2}))
	keys, _ = keysOf(res)
	assert.Equal(t, []string{string(make([]byte, 9)), nk(11)}, keys)

	// Several keys: concatenated in GROUP BY order (an int32 in 4 bytes).
	res = run(t, grouped("k,s", query.C("k"), query.C("s")), ndata(a,
		nt{ts: 1, k: 2, s: sp("a")}, nt{ts: 2, k: 1, s: sp("b")}, nt{ts: 3, k: 1}, nt{ts: 4, k: 2, s: sp("a")}))
	keys, counts = keysOf(res)
	assert.Equal(t, []string{ik4(1) + "\x00", ik4(1) + sk("b"), ik4(2) + sk("a")}, keys)
	assert.Equal(t, []int64{1, 1, 2}, counts)
	res = run(t, grouped("s,b", query.C("s"), query.C("b")), ndata(a,
		nt{ts: 1, s: sp("a"), b: bp(true)}, nt{ts: 2, s: sp("a")}, nt{ts: 3, b: bp(false)}))
	keys, _ = keysOf(res)
	assert.Equal(t, []string{"\x00\x01", sk("a") + "\x00", sk("a") + "\x02"}, keys)
}
