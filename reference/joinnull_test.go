package reference

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// TestWindowJoinStrings: a predicate of the new expressions across the two
// sides; NULL = NULL joins nothing; each side's NULL bits are read with its
// own schema.
func TestWindowJoinStrings(t *testing.T) {
	a := newArena(t)
	s := nullSchema(t)
	j := &query.WindowJoin{Name: "js", Left: s, Right: s, Window: query.Tumbling(10),
		Where: query.Cmp(query.C("l.s"), query.Eq, query.C("r.s"))}
	const long = "a key longer than twelve bytes"
	left := ndata(a, nt{ts: 1, s: sp("k1"), x: ip(1)}, nt{ts: 2}, nt{ts: 3, s: sp(long), x: ip(3)})
	right := ndata(a, nt{ts: 4, s: sp("k1")}, nt{ts: 5}, nt{ts: 6, s: sp(long)}, nt{ts: 7, s: sp("K1")})
	res, err := EvaluateJoin(j, left, right)
	require.NoError(t, err)
	row := func(lts int64, ls *string, lx *int64, rts int64, rs *string) []Value {
		str := func(p *string) Value {
			if p == nil {
				return Null(StringKind)
			}
			return Str(*p)
		}
		x := Null(IntKind)
		if lx != nil {
			x = Int(*lx)
		}
		n := func(k Kind) Value { return Null(k) }
		return []Value{
			Int(lts), x, n(FloatKind), str(ls), n(BoolKind), Int(0), n(TimeKind),
			Int(rts), n(IntKind), n(FloatKind), str(rs), n(BoolKind), Int(0), n(TimeKind),
		}
	}
	assert.Equal(t, [][]Value{
		row(1, sp("k1"), ip(1), 4, sp("k1")),
		row(3, sp(long), ip(3), 6, sp(long)),
	}, res.Values)
	assert.Len(t, res.Tuples, 2*128)
	assert.Equal(t, Counts{Tuples: 7, Counted: 7}, res.Counts)

	// r.x IS NULL and l.x IS NOT NULL: the right side's bit is its own
	// byte 56, not the left tuple's (which the concatenated schema would
	// name, its right NullBits unshifted).
	j.Where = query.And(query.IsNull{X: query.C("r.x")}, query.IsNull{X: query.C("l.x"), Not: true},
		query.Like{X: query.C("r.s"), Pattern: "k%"})
	left = ndata(a, nt{ts: 1, x: ip(1)})
	right = ndata(a, nt{ts: 2, s: sp("k2")}, nt{ts: 3, s: sp("k3"), x: ip(9)})
	res, err = EvaluateJoin(j, left, right)
	require.NoError(t, err)
	require.Len(t, res.Values, 1)
	assert.Equal(t, Int(2), res.Values[0][7])

	// A comparison that is NULL drops the pair, and its NOT too.
	j.Where = query.NotExpr{X: query.Cmp(query.C("l.x"), query.Lt, query.C("r.x"))}
	res, err = EvaluateJoin(j, ndata(a, nt{ts: 1}), ndata(a, nt{ts: 2, x: ip(1)}))
	require.NoError(t, err)
	assert.Empty(t, res.Values)
	assert.Empty(t, res.Tuples)
}

// TestStaticJoinStringPredicate: WHERE over strings before a static join.
func TestStaticJoinStringPredicate(t *testing.T) {
	a := newArena(t)
	s, err := query.NewSchema(41,
		query.Attribute{Name: "ts", Type: query.Int64},
		query.Attribute{Name: "id", Type: query.Bytes, Offset: 8, Size: 16},
		query.Attribute{Name: "name", Type: query.String, Offset: 24, Nullable: true, NullBit: 40 * 8},
	)
	require.NoError(t, err)
	tuple := func(ts int64, id byte, name *string) []byte {
		tu := make([]byte, 41)
		tu[0] = byte(ts)
		copy(tu[8:], idBytes(id))
		if name == nil {
			tu[40] = 1
		} else {
			a.putView(tu[24:40], *name)
		}
		return tu
	}
	var in []byte
	in = append(in, tuple(1, 1, sp("click on an advertisement"))...)
	in = append(in, tuple(2, 2, sp("view"))...)
	in = append(in, tuple(3, 3, sp("click"))...)
	in = append(in, tuple(4, 1, nil)...)
	in = append(in, tuple(5, 9, sp("click"))...) // not in the table
	q := &query.Query{Name: "sj", Schema: s, Window: query.Tumbling(10),
		Where:      query.Like{X: query.C("name"), Pattern: "click%"},
		Join:       &query.StaticJoin{Column: "id", Table: campaigns(), As: "campaign"},
		GroupBy:    []query.Expr{query.C("campaign")},
		Aggregates: []query.Aggregate{count()},
	}
	res := run(t, q, in)
	assert.Equal(t, []Row{row(0, 10, "c1", Int(2))}, res.Rows)
	assert.Equal(t, Counts{Tuples: 5, Filtered: 2, Unmatched: 1, Counted: 2}, res.Counts)
}
