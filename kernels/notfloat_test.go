package kernels

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// TestNotFloatComparisonWhere: WHERE's push-down of NOT (pushNot) keeps
// NOT over an ordering comparison of floats, whose opposite comparison
// differs for NaN: the vectorised predicate keeps the tuples the
// reference's WHERE does, NaN, ±Inf and NULL among them.
func TestNotFloatComparisonWhere(t *testing.T) {
	const ts = 32 // x float64 at 8, n int64 at 16, NULL bits at byte 24
	s, err := query.NewSchema(ts, query.Attribute{Name: "ts", Type: query.Int64},
		query.Attribute{Name: "x", Type: query.Float64, Offset: 8, Nullable: true, NullBit: 24 * 8},
		query.Attribute{Name: "n", Type: query.Int64, Offset: 16, Nullable: true, NullBit: 24*8 + 1})
	require.NoError(t, err)
	xs := []float64{math.NaN(), 0, 0.5, 1, 2, math.Inf(1), math.Inf(-1), -1}
	var data []byte
	for i, x := range xs {
		for k := range 3 {
			tu := make([]byte, ts)
			binary.LittleEndian.PutUint64(tu[8:], math.Float64bits(x))
			binary.LittleEndian.PutUint64(tu[16:], uint64(int64(i%3-1)))
			switch k {
			case 1:
				s.Attrs[1].SetNull(tu, true)
			case 2:
				s.Attrs[2].SetNull(tu, true)
			}
			data = append(data, tu...)
		}
	}
	n := len(data) / ts
	x, num := query.C("x"), query.C("n")
	cmp := func(l query.Expr, op query.CmpOp, r query.Expr) query.Expr { return query.Compare{Op: op, L: l, R: r} }
	not := func(e query.Expr) query.Expr { return query.NotExpr{X: e} }
	exprs := []query.Expr{
		not(cmp(x, query.Lt, query.Float(1))),
		not(cmp(x, query.Le, query.Int(1))),
		not(cmp(x, query.Gt, num)),
		not(cmp(query.Float(0.5), query.Ge, x)),
		not(cmp(x, query.Eq, query.Float(1))),
		not(cmp(x, query.Ne, x)),
		not(query.And(cmp(x, query.Ge, query.Float(0)), cmp(x, query.Le, query.Float(1)))),
		not(query.Or(cmp(x, query.Lt, query.Float(0)), cmp(num, query.Gt, query.Int(0)))),
		not(not(cmp(x, query.Lt, query.Float(1)))),
		not(cmp(num, query.Lt, query.Int(0))),
		query.And(not(cmp(x, query.Ge, query.Float(0))), cmp(num, query.Ge, query.Int(0))),
	}
	for _, e := range exprs {
		var keep []int32
		for i := range n {
			ok, err := reference.EvalPred(e, s, data[i*ts:(i+1)*ts])
			require.NoError(t, err, "%s", e)
			if ok {
				keep = append(keep, int32(i))
			}
		}
		p, err := compilePred(e, s)
		require.NoError(t, err, "%s", e)
		got, _ := selectRows(p, make([]int32, 0, chunk), data, ts)
		assert.Equal(t, keep, got, "WHERE %s", e)
	}
	// the reference's NOT is NOT: NaN is not below 1, and not at or above
	for _, op := range []query.CmpOp{query.Lt, query.Le, query.Gt, query.Ge} {
		v, err := reference.Eval(not(cmp(x, op, query.Float(1))), s, data[:ts])
		require.NoError(t, err)
		assert.Equal(t, reference.Bool(true), v, "NOT (NaN %s 1)", op)
	}
}
