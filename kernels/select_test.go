package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// TestDivRangeHolds: `int32 column / constant op constant`, compiled as an
// interval of the column, keeps exactly the rows for which query.Holds
// holds of Go's quotient, for every operator, either side, divisors of
// either sign (0, ±1, powers of two, the int32 extremes and beyond) and
// constants around the quotients' edges, over every tuple and over a
// selection; an int64 column is not rewritten (its quotient by -1 wraps).
func TestDivRangeHolds(t *testing.T) {
	const ts = 24 // a int32 at 12, b int64 at 16
	s, err := query.NewSchema(ts, query.Attribute{Name: "ts", Type: query.Int64}, query.Attribute{Name: "a", Type: query.Int32, Offset: 12}, query.Attribute{Name: "b", Type: query.Int64, Offset: 16})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(15, 16))
	vals := []int64{math.MinInt32, math.MinInt32 + 1, math.MaxInt32, math.MaxInt32 - 1}
	for v := int64(-2100); v <= 2100; v++ {
		vals = append(vals, v)
	}
	for range 400 {
		vals = append(vals, int64(int32(r.Uint32())))
	}
	n := len(vals)
	data := make([]byte, n*ts)
	for i, v := range vals {
		binary.LittleEndian.PutUint32(data[i*ts+12:], uint32(int32(v)))
	}
	var some []int32
	for i := range n {
		if r.IntN(3) != 0 {
			some = append(some, int32(i))
		}
	}
	divs := []int64{1000, -1000, 1001, 7, -7, 1, -1, 2, -2, 1024, 0, math.MaxInt32, math.MinInt32, math.MaxInt32 + 1, math.MinInt64, math.MaxInt64}
	for _, c := range divs {
		ks := []int64{math.MinInt64, math.MaxInt64, -3, -2, -1, 0, 1, 2, 3, math.MinInt32, math.MaxInt32}
		if c != 0 {
			ks = append(ks, math.MinInt32/c, math.MaxInt32/c, math.MinInt32/c-1, math.MaxInt32/c+1)
		}
		for _, k := range ks {
			for _, op := range []query.CmpOp{query.Eq, query.Ne, query.Lt, query.Le, query.Gt, query.Ge} {
				for _, mirrored := range []bool{false, true} {
					q := query.Div(query.C("a"), query.Int(c))
					e := query.Cmp(q, op, query.Int(k))
					if mirrored {
						e = query.Cmp(query.Int(k), op.Mirror(), q)
					}
					p, err := compilePred(e, s)
					require.NoError(t, err)
					require.True(t, p.ranged, "%v", e)
					var wantAll, wantSome []int32
					for i, v := range vals {
						if query.Holds(op, goQuo(v, c), k) {
							wantAll = append(wantAll, int32(i))
						}
					}
					for _, i := range some {
						if query.Holds(op, goQuo(vals[i], c), k) {
							wantSome = append(wantSome, i)
						}
					}
					all, _ := selectRows(p, make([]int32, n), data, ts)
					got := p.filter(data, ts, slices.Clone(some))
					if !slices.Equal(all, wantAll) || !slices.Equal(got, wantSome) {
						t.Fatalf("%v: kept %d of all (want %d), %d of a selection (want %d)", e, len(all), len(wantAll), len(got), len(wantSome))
					}
				}
			}
		}
	}
	p, err := compilePred(query.Cmp(query.Div(query.C("b"), query.Int(-1)), query.Eq, query.Int(0)), s)
	require.NoError(t, err)
	assert.False(t, p.ranged, "an int64 column's quotient is not rewritten")
}

// TestSelectWorkloadAllRanged: a WHERE of SELECT_16's shape (the
// workloads package's selectPredicates: comparisons of int32 columns with
// constants, `a / 1000 = 0` among them) compiles to intervals alone: no
// term evaluates an expression.
func TestSelectWorkloadAllRanged(t *testing.T) {
	s, err := query.NewSchema(32, query.Attribute{Name: "timestamp", Type: query.Int64},
		query.Attribute{Name: "a1", Type: query.Int32, Offset: 8}, query.Attribute{Name: "a2", Type: query.Int32, Offset: 12},
		query.Attribute{Name: "a3", Type: query.Int32, Offset: 16})
	require.NoError(t, err)
	preds := []query.Expr{query.ColLt("a1", 500)}
	for i := range 15 {
		a := query.C([]string{"a2", "a3"}[i%2])
		switch i % 6 {
		case 0:
			preds = append(preds, query.Cmp(a, query.Ge, query.Int(0)))
		case 1:
			preds = append(preds, query.Cmp(a, query.Lt, query.Int(1000)))
		case 2:
			preds = append(preds, query.Cmp(a, query.Ne, query.Int(-1)))
		case 3:
			preds = append(preds, query.Cmp(a, query.Le, query.Int(999)))
		case 4:
			preds = append(preds, query.Cmp(a, query.Gt, query.Int(-1)))
		case 5:
			preds = append(preds, query.Cmp(query.Div(a, query.Int(1000)), query.Eq, query.Int(0)))
		}
	}
	p, err := compilePred(query.And(preds...), s)
	require.NoError(t, err)
	assert.Empty(t, p.terms)
	assert.Len(t, p.ranges, 16)
}
