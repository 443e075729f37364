package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// TestArithAllMatchesSelected: an expression evaluated over every tuple of
// a chunk (the loops over ranges, constants as scalars) gives, tuple by
// tuple, what it gives over a selection of that tuple alone (the loops
// over selections): integer division by zero (0) and by constants, float
// division by zero, constants either side.
func TestArithAllMatchesSelected(t *testing.T) {
	s, err := query.NewSchema(24,
		query.Attribute{Name: "ts", Type: query.Int64},
		query.Attribute{Name: "a", Type: query.Int32, Offset: 8},
		query.Attribute{Name: "b", Type: query.Int64, Offset: 12},
		query.Attribute{Name: "f", Type: query.Float32, Offset: 20},
	)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(4, 4))
	const n = 300
	data := make([]byte, n*24)
	for i := range n {
		t := data[i*24:]
		binary.LittleEndian.PutUint32(t[8:], uint32(r.Int32N(7)-3))
		b := r.Int64N(9) - 4
		if r.IntN(10) == 0 {
			b = []int64{math.MinInt64, math.MaxInt64, -1}[r.IntN(3)]
		}
		binary.LittleEndian.PutUint64(t[12:], uint64(b))
		binary.LittleEndian.PutUint32(t[20:], math.Float32bits(float32(r.NormFloat64())))
	}
	a, b, f := query.C("a"), query.C("b"), query.C("f")
	exprs := []query.Expr{
		query.Add(query.Mul(a, query.Int(3)), query.Int(2)),
		query.Div(b, query.Int(0)), query.Div(b, query.Int(7)), query.Div(b, a), query.Div(query.Int(100), a),
		query.Sub(query.Int(5), b), query.Sub(b, query.Int(5)), query.Sub(f, query.Float(0.5)), query.Add(f, a), query.Mul(b, b), query.Div(f, query.Int(0)), query.Div(f, a),
		query.Add(query.Mul(query.Sub(f, b), query.Float(1.5)), query.Int(2)), query.Div(query.Int(1), f),
	}
	for _, e := range exprs {
		full, err := compileExpr(e, s)
		require.NoError(t, err)
		one, err := compileExpr(e, s)
		require.NoError(t, err)
		sel := make([]int32, n)
		for i := range sel {
			sel[i] = int32(i)
		}
		full.eval(data, 24, sel)
		for i := range n {
			one.eval(data, 24, []int32{int32(i)})
			if full.float {
				want, got := one.flts[i], full.flts[i]
				assert.True(t, want == got || (math.IsNaN(want) && math.IsNaN(got)), "%v, tuple %d: %v, want %v", e, i, got, want)
			} else {
				assert.Equal(t, one.ints[i], full.ints[i], "%v, tuple %d", e, i)
			}
		}
	}
}
