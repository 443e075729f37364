package gpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
)

// sided gives every column of e the prefix l. or r. (at random).
func sided(r *rand.Rand, e query.Expr) query.Expr {
	switch e := e.(type) {
	case query.Column:
		return query.C([]string{query.LeftPrefix, query.RightPrefix}[r.IntN(2)] + e.Name)
	case query.Arith:
		return query.Arith{Op: e.Op, L: sided(r, e.L), R: sided(r, e.R)}
	case query.Compare:
		return query.Compare{Op: e.Op, L: sided(r, e.L), R: sided(r, e.R)}
	case query.AndExpr:
		ts := make([]query.Expr, len(e.Terms))
		for i, t := range e.Terms {
			ts[i] = sided(r, t)
		}
		return query.AndExpr{Terms: ts}
	case query.OrExpr:
		ts := make([]query.Expr, len(e.Terms))
		for i, t := range e.Terms {
			ts[i] = sided(r, t)
		}
		return query.OrExpr{Terms: ts}
	}
	return e
}

// randJoinWhere is a join predicate: equalities and inequalities of int
// columns across the sides, arithmetic, AND, OR, or none.
func randJoinWhere(r *rand.Rand) query.Expr {
	eq := func() query.Expr {
		c := intCols[r.IntN(len(intCols))]
		return query.Cmp(query.C(query.LeftPrefix+c), query.CmpOp(1+r.IntN(6)), query.C(query.RightPrefix+intCols[r.IntN(len(intCols))]))
	}
	switch r.IntN(7) {
	case 0:
		return nil
	case 1:
		return query.Cmp(query.C("l.a"), query.Eq, query.C("r.a"))
	case 2:
		return query.And(eq(), sided(r, randPred(r)))
	case 3:
		return sided(r, randBool(r, 2))
	case 4:
		return query.Or(eq(), query.And(eq(), sided(r, randBool(r, 1))))
	case 5:
		return query.Cmp(query.Add(query.C("l.b"), query.C("r.c")), query.Lt, query.Mul(query.C("r.a"), query.Int(2)))
	}
	return query.And(sided(r, randBool(r, 1)), eq(), sided(r, randBool(r, 1)))
}

// randSide is n tuples of schema ts with small int values (so that
// equalities across the sides hold now and then) and odd floats.
func randSide(r *rand.Rand, ts testSchema, n int) [][]byte {
	out := make([][]byte, n)
	floats := []float64{0, math.Copysign(0, -1), 1.5, -3, math.Inf(-1), math.NaN(), 1e300}
	for i := range out {
		t := make([]byte, ts.s.TupleSize)
		for j := range t {
			t[j] = byte(r.Uint32())
		}
		binary.LittleEndian.PutUint64(t[ts.off("ts"):], uint64(r.Int64N(1000)))
		binary.LittleEndian.PutUint32(t[ts.off("a"):], uint32(int32(r.IntN(9)-4)))
		binary.LittleEndian.PutUint32(t[ts.off("b"):], uint32(int32(r.IntN(9)-4)))
		c := r.Int64N(9) - 4
		if r.IntN(20) == 0 {
			c = randConst(r)
		}
		binary.LittleEndian.PutUint64(t[ts.off("c"):], uint64(c))
		binary.LittleEndian.PutUint32(t[ts.off("x"):], math.Float32bits(float32(floats[r.IntN(len(floats))])))
		binary.LittleEndian.PutUint64(t[ts.off("y"):], math.Float64bits(floats[r.IntN(len(floats))]))
		out[i] = t
	}
	return out
}

// cpuJoin is the oracle: the engine's nested loops, each pair filtered by
// the CPU kernels' join filter.
func cpuJoin(t testing.TB, j *query.WindowJoin, left, right [][]byte) []byte {
	var f *kernels.Filter
	if j.Where != nil {
		var err error
		f, err = kernels.NewFilter(j.Where, j.OutputSchemaUnchecked())
		require.NoError(t, err)
	}
	lts, rts := j.Left.TupleSize, j.Right.TupleSize
	var out []byte
	for _, lt := range left {
		for _, rt := range right {
			pair := append(append([]byte{}, lt[:lts]...), rt[:rts]...)
			if f == nil || len(f.Keep(pair, len(pair))) == 1 {
				out = append(out, pair...)
			}
		}
	}
	return out
}

func randJoin(r *rand.Rand, t testing.TB) *query.WindowJoin {
	l, rt := newTestSchema(t, r.IntN(2) == 0), newTestSchema(t, r.IntN(2) == 0)
	return &query.WindowJoin{Name: "j", Left: l.s, Right: rt.s, Window: query.Tumbling(10), Where: randJoinWhere(r)}
}

// TestEmulatorJoinMatchesCPU: the emulator's join program's pairs (its
// device buffers poisoned before every window) are the CPU's nested loops
// with the CPU join filter, on random windows of 0..300 tuples a side and
// random predicates; the output is appended to what out held.
func TestEmulatorJoinMatchesCPU(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 77))
	dev := NewEmulator()
	defer dev.Close()
	// The long run's 60, at most 20 under -short, 12 by default.
	cases := testenv.Scale(12, 60)
	if testing.Short() {
		cases = min(cases, 20)
	}
	for c := range cases {
		j := randJoin(r, t)
		msg := fmt.Sprintf("case %d: WHERE %v", c, j.Where)
		jp, err := dev.CompileJoin(j)
		require.NoError(t, err, msg)
		for w := range 3 {
			sizes := []int{0, 1, 2, 255, 256, 257, r.IntN(301), r.IntN(301)}
			nl, nr := sizes[r.IntN(len(sizes))], sizes[r.IntN(len(sizes))]
			left := randSide(r, testSchema{s: j.Left, packed: j.Left.TupleSize == 57}, nl)
			right := randSide(r, testSchema{s: j.Right, packed: j.Right.TupleSize == 57}, nr)
			prefix := []byte("prefix")
			got, ok, err := jp.Join(left, right, prefix)
			require.NoError(t, err, msg)
			require.True(t, ok, msg)
			want := append([]byte("prefix"), cpuJoin(t, j, left, right)...)
			require.True(t, string(want) == string(got), "%s window %d (%dx%d): %d bytes, want %d", msg, w, nl, nr, len(got), len(want))
		}
		require.NoError(t, jp.Close())
	}
}

// TestEmulatorJoinRefuses: a predicate deeper than the evaluation stack
// has no GPU kernel; a window whose pairs exceed the output buffer is
// left to the CPU (ok false, out unchanged); a closed program errs.
func TestEmulatorJoinRefuses(t *testing.T) {
	dev := NewEmulator()
	defer dev.Close()
	ts := newTestSchema(t, false)
	deep := query.Expr(query.C("l.a"))
	for range maxStack + 1 {
		deep = query.Add(query.C("r.a"), deep)
	}
	j := &query.WindowJoin{Name: "deep", Left: ts.s, Right: ts.s, Window: query.Tumbling(10), Where: query.Cmp(deep, query.Gt, query.Int(0))}
	_, err := dev.CompileJoin(j)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrNoKernel), "%v", err)

	// A regular join has no GPU kernel: its index is filed in order.
	key := slices.IndexFunc(ts.s.Attrs, func(a query.Attribute) bool { return a.Type == query.Int64 && a.Logical == query.Plain })
	require.GreaterOrEqual(t, key, 0)
	j = &query.WindowJoin{Name: "regular", Left: ts.s, Right: ts.s, Regular: true, LeftKey: key, RightKey: key}
	require.NoError(t, j.Validate())
	_, err = dev.CompileJoin(j)
	assert.True(t, errors.Is(err, ErrNoKernel), "%v", err)
	assert.ErrorIs(t, SupportedJoin(j), ErrNoKernel)

	j = &query.WindowJoin{Name: "big", Left: ts.s, Right: ts.s, Window: query.Tumbling(10)}
	jp, err := dev.CompileJoin(j)
	require.NoError(t, err)
	n := int(math.Sqrt(maxJoinOutBytes/float64(2*ts.s.TupleSize))) + 2
	side := randSide(rand.New(rand.NewPCG(1, 2)), ts, n)
	out, ok, err := jp.Join(side, side, []byte("x"))
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, "x", string(out))
	out, ok, err = jp.Join(side[:3], side[:2], nil)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Len(t, out, 6*2*ts.s.TupleSize)
	require.NoError(t, jp.Close())
	_, _, err = jp.Join(side[:3], side[:2], nil)
	assert.Error(t, err)
}
