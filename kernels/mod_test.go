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

// TestModMatchesReference: MOD(x, c) of an integer x (a column of either
// width, nullable, or an expression) and a constant c, compiled into one
// pass (vMod), gives the reference evaluator's value (NULL for a NULL x)
// for every tuple, over every tuple or a selection, x and c at their
// edges (powers of two, negatives, -1 and MinInt64); MOD by 0 or by a
// column takes the row evaluator and gives the same.
func TestModMatchesReference(t *testing.T) {
	const ts = 28 // a int32 at 8, b int64 at 12, n nullable int64 at 20
	s, err := query.NewSchema(ts+1, query.Attribute{Name: "ts", Type: query.Int64}, query.Attribute{Name: "a", Type: query.Int32, Offset: 8},
		query.Attribute{Name: "b", Type: query.Int64, Offset: 12}, query.Attribute{Name: "n", Type: query.Int64, Offset: 20, Nullable: true, NullBit: ts * 8})
	require.NoError(t, err)
	size := s.TupleSize
	edges := []int64{math.MinInt64, math.MinInt64 + 1, math.MinInt32, -1024, -7, -3, -1, 0, 1, 2, 3, 7, 1000, math.MaxInt32, math.MaxInt64 - 1, math.MaxInt64}
	r := rand.New(rand.NewPCG(8, 88))
	const n = 300
	data := make([]byte, n*size)
	for i := range n {
		t := data[i*size:]
		a, b := edges[r.IntN(len(edges))], edges[r.IntN(len(edges))]
		if r.IntN(2) == 0 {
			a, b = r.Int64N(2001)-1000, int64(r.Uint64())
		}
		binary.LittleEndian.PutUint32(t[8:], uint32(int32(a)))
		binary.LittleEndian.PutUint64(t[12:], uint64(b))
		binary.LittleEndian.PutUint64(t[20:], uint64(r.Int64N(100_001)-50_000))
		if r.IntN(5) == 0 {
			t[ts] = 1
		}
	}
	var odd, all []int32
	for i := range n {
		all = append(all, int32(i))
		if i%2 == 1 {
			odd = append(odd, int32(i))
		}
	}
	mod := func(x, c query.Expr) query.Expr { return query.Call{Fn: "mod", Args: []query.Expr{x, c}} }
	cs := append(edges, 10000, 1<<20, -(1 << 20))
	for range 300 {
		c := cs[r.IntN(len(cs))]
		var x query.Expr = query.C([]string{"a", "b", "n"}[r.IntN(3)])
		if r.IntN(4) == 0 {
			x = query.Add(x, query.Int(r.Int64N(10)))
		}
		e, vectorised := mod(x, query.Int(c)), c != 0
		switch r.IntN(8) {
		case 0:
			e = mod(query.Call{Fn: "abs", Args: []query.Expr{x}}, query.Int(c)) // over the row evaluator's register
		case 1:
			e, vectorised = mod(x, query.C("a")), false
		}
		for _, sel := range [][]int32{all, odd} {
			v, err := compileExpr(e, s)
			require.NoError(t, err)
			require.Equal(t, vectorised, v.kind == vMod, "%v", e)
			v.eval(data, size, sel)
			for _, i := range sel {
				want, err := reference.EvalNum(e, s, data[int(i)*size:int(i+1)*size])
				require.NoError(t, err)
				null := v.nulls != nil && v.nulls[i]
				if !assert.Equal(t, want.Null, null, "%v, tuple %d", e, i) || null {
					continue
				}
				if v.float {
					assert.Equal(t, want.F, v.flts[i], "%v, tuple %d", e, i)
				} else {
					assert.Equal(t, want.I, v.ints[i], "%v, tuple %d", e, i)
				}
			}
		}
	}
}
