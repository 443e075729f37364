package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// TestAffineMatchesReference: `column * k1 + k2` and its parts, compiled
// into one pass (vAffine), give the reference evaluator's value for every
// tuple, over every tuple or a selection, int32 and int64 columns at their
// edges, constants at theirs (wrapping products and sums), either side;
// shapes outside it (floats, `k - x`, `(x + k1) + k2`) take the general
// path and give the same values.
func TestAffineMatchesReference(t *testing.T) {
	const ts = 24 // a int32 at 8, b int64 at 12, f float32 at 20
	s, err := query.NewSchema(ts, query.Attribute{Name: "ts", Type: query.Int64}, query.Attribute{Name: "a", Type: query.Int32, Offset: 8},
		query.Attribute{Name: "b", Type: query.Int64, Offset: 12}, query.Attribute{Name: "f", Type: query.Float32, Offset: 20})
	require.NoError(t, err)
	edges := []int64{math.MinInt64, math.MinInt64 + 1, math.MinInt32, -3, -1, 0, 1, 2, 3, math.MaxInt32, math.MaxInt64 - 1, math.MaxInt64}
	r := rand.New(rand.NewPCG(4, 44))
	const n = 300
	data := make([]byte, n*ts)
	for i := range n {
		a, b := edges[r.IntN(len(edges))], edges[r.IntN(len(edges))]
		if r.IntN(2) == 0 {
			a, b = r.Int64N(2001)-1000, int64(r.Uint64())
		}
		binary.LittleEndian.PutUint32(data[i*ts+8:], uint32(int32(a)))
		binary.LittleEndian.PutUint64(data[i*ts+12:], uint64(b))
		binary.LittleEndian.PutUint32(data[i*ts+20:], math.Float32bits(float32(r.NormFloat64())))
	}
	var odd, all []int32
	for i := range n {
		all = append(all, int32(i))
		if i%2 == 1 {
			odd = append(odd, int32(i))
		}
	}
	k := func() query.Expr { return query.Int(edges[r.IntN(len(edges))]) }
	for range 400 {
		x := query.C([]string{"a", "b"}[r.IntN(2)])
		var e query.Expr
		affine := true
		switch r.IntN(9) {
		case 0:
			e = query.Mul(x, k())
		case 1:
			e = query.Mul(k(), x)
		case 2:
			e = query.Add(x, k())
		case 3:
			e = query.Add(k(), query.Mul(x, k()))
		case 4:
			e = query.Sub(query.Mul(k(), x), k())
		case 5:
			e = query.Add(query.Mul(x, k()), k())
		case 6:
			e, affine = query.Sub(k(), x), false
		case 7:
			e, affine = query.Add(query.Add(x, k()), k()), false
		default:
			e, affine = query.Add(query.Mul(query.C("f"), k()), k()), false
		}
		for _, sel := range [][]int32{all, odd} {
			v, err := compileExpr(e, s)
			require.NoError(t, err)
			require.Equal(t, affine, v.kind == vAffine, "%v", e)
			v.eval(data, ts, sel)
			for _, i := range sel {
				want, err := reference.EvalNum(e, s, data[int(i)*ts:int(i+1)*ts])
				require.NoError(t, err)
				if v.float {
					assert.Equal(t, want.F, v.flts[i], "%v, tuple %d", e, i)
				} else {
					assert.Equal(t, want.I, v.ints[i], "%v, tuple %d", e, i)
				}
			}
		}
	}
}
