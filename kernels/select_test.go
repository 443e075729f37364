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
// constants, `a / 1000 = 0` among them) compiles to intervals alone, no
// term evaluating an expression, one per column, the first term's column
// first.
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
	require.Len(t, p.ranges, 3)
	assert.Equal(t, []int{8, 12, 16}, []int{p.ranges[0].off, p.ranges[1].off, p.ranges[2].off})
	assert.Len(t, p.ranges32, 3)
}

// TestRange32MatchesColRange: an int32 column's interval as a cyclic
// range32 holds for exactly the values its colRange holds for, for every
// operator and constants at and beyond the int32 edges (the empty and full
// intervals among them), and for the quotients' intervals.
func TestRange32MatchesColRange(t *testing.T) {
	s, err := query.NewSchema(16, query.Attribute{Name: "ts", Type: query.Int64}, query.Attribute{Name: "a", Type: query.Int32, Offset: 8})
	require.NoError(t, err)
	vs := []int64{math.MinInt32, math.MinInt32 + 1, math.MinInt32 + 2, -2, -1, 0, 1, 2, math.MaxInt32 - 2, math.MaxInt32 - 1, math.MaxInt32}
	ks := []int64{math.MinInt64, math.MinInt64 + 1, math.MinInt32 - 2, math.MaxInt64, math.MaxInt64 - 1, math.MaxInt32 + 2}
	ks = append(ks, vs...)
	var exprs []query.Expr
	for _, k := range ks {
		for _, op := range []query.CmpOp{query.Eq, query.Ne, query.Lt, query.Le, query.Gt, query.Ge} {
			exprs = append(exprs, query.Cmp(query.C("a"), op, query.Int(k)),
				query.Cmp(query.Div(query.C("a"), query.Int(3)), op, query.Int(k)))
		}
	}
	r := rand.New(rand.NewPCG(3, 2))
	for range 200 {
		vs = append(vs, int64(int32(r.Uint32())))
	}
	for _, e := range exprs {
		p, err := compilePred(e, s)
		require.NoError(t, err)
		require.True(t, p.ranged, "%v", e)
		r32, ok := range32Of(p.rng)
		require.True(t, ok, "%v", e)
		for _, v := range vs {
			want := (uint64(v-p.rng.lo) <= p.rng.span) != p.rng.neg
			got := uint64(uint32(v)-r32.lo) < r32.n
			if got != want {
				t.Fatalf("%v at %d: range32 %v, colRange %v (%+v from %+v)", e, v, got, want, r32, p.rng)
			}
		}
	}
}

// TestAndOfInt32RangesHolds: a conjunction of int32 intervals only (tested
// as range32s, up to four per pass) keeps exactly the rows every term
// holds for by query.Holds, from every tuple or from a selection.
func TestAndOfInt32RangesHolds(t *testing.T) {
	const ts = 16 // a int32 at 8, b int32 at 12
	s, err := query.NewSchema(ts, query.Attribute{Name: "ts", Type: query.Int64}, query.Attribute{Name: "a", Type: query.Int32, Offset: 8}, query.Attribute{Name: "b", Type: query.Int32, Offset: 12})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(16, 15))
	const n = 600
	vals := [2][]int64{make([]int64, n), make([]int64, n)}
	edge := []int64{math.MinInt32, math.MaxInt32, math.MinInt32 + 1, math.MaxInt32 - 1}
	data := make([]byte, n*ts)
	for i := range n {
		for c := range 2 {
			v := r.Int64N(13) - 6
			if r.IntN(8) == 0 {
				v = edge[r.IntN(len(edge))]
			}
			vals[c][i] = v
			binary.LittleEndian.PutUint32(data[i*ts+8+4*c:], uint32(int32(v)))
		}
	}
	// Mostly permissive terms, so that long conjunctions keep rows and every
	// term of a pass decides some.
	ops := []query.CmpOp{query.Eq, query.Ne, query.Ne, query.Ne, query.Lt, query.Le, query.Gt, query.Ge, query.Lt, query.Le, query.Gt, query.Ge}
	consts := append([]int64{math.MinInt64, math.MaxInt64, math.MinInt32 - 1, math.MaxInt32 + 1}, edge...)
	long := 0
	for range 400 {
		type term struct {
			col, div int
			op       query.CmpOp
			k        int64
		}
		var terms []term
		var exprs []query.Expr
		for range 1 + r.IntN(11) {
			tm := term{col: r.IntN(2), div: 1, op: ops[r.IntN(len(ops))], k: r.Int64N(13) - 6}
			switch tm.op {
			case query.Lt, query.Le:
				tm.k = r.Int64N(9)
			case query.Gt, query.Ge:
				tm.k = -r.Int64N(9)
			}
			if r.IntN(8) == 0 {
				tm.k = consts[r.IntN(len(consts))]
			}
			var x query.Expr = query.C([]string{"a", "b"}[tm.col])
			if r.IntN(4) == 0 {
				tm.div = []int{2, -3, 1000}[r.IntN(3)]
				x = query.Div(x, query.Int(int64(tm.div)))
			}
			terms, exprs = append(terms, tm), append(exprs, query.Cmp(x, tm.op, query.Int(tm.k)))
		}
		e := query.And(exprs...)
		p, err := compilePred(e, s)
		require.NoError(t, err)
		if len(terms) > 1 {
			require.NotEmpty(t, p.ranges32, "%v", e)
			require.Empty(t, p.terms, "%v", e)
		}
		holds := func(i int) bool {
			for _, tm := range terms {
				if !query.Holds(tm.op, vals[tm.col][i]/int64(tm.div), tm.k) {
					return false
				}
			}
			return true
		}
		var wantAll, some, wantSome []int32
		for i := range n {
			if holds(i) {
				wantAll = append(wantAll, int32(i))
			}
			if r.IntN(3) != 0 {
				some = append(some, int32(i))
				if holds(i) {
					wantSome = append(wantSome, int32(i))
				}
			}
		}
		all, _ := selectRows(p, make([]int32, n), data, ts)
		got := p.filter(data, ts, some)
		if !slices.Equal(all, wantAll) || !slices.Equal(got, wantSome) {
			t.Fatalf("%v: kept %d of all (want %d), %d of a selection (want %d)", e, len(all), len(wantAll), len(got), len(wantSome))
		}
		if len(terms) >= 9 && len(wantAll) > 0 {
			long++
		}
	}
	assert.Greater(t, long, 20, "conjunctions of three passes that keep rows")
}

// TestRanges32SelMatchesEachRange: up to twenty int32 ranges tested four
// or eight per pass keep exactly the tuples each range, tested alone,
// keeps.
func TestRanges32SelMatchesEachRange(t *testing.T) {
	const ts = 24 // four int32 columns at 8, 12, 16, 20
	r := rand.New(rand.NewPCG(20, 26))
	const n = 700
	data := make([]byte, n*ts)
	edge := []uint32{0, 1, 1 << 31, 1<<31 - 1, math.MaxUint32}
	for i := range n {
		for c := range 4 {
			v := uint32(r.IntN(40))
			if r.IntN(10) == 0 {
				v = edge[r.IntN(len(edge))]
			}
			binary.LittleEndian.PutUint32(data[i*ts+8+4*c:], v)
		}
	}
	for range 300 {
		rs := make([]range32, 1+r.IntN(20))
		for j := range rs {
			// Mostly wide ranges (so that long lists keep tuples), a few
			// empty, full or wrapping.
			rs[j] = range32{off: 8 + 4*r.IntN(4), lo: uint32(r.IntN(3)), n: uint64(36 + r.IntN(10))}
			switch r.IntN(12) {
			case 0:
				rs[j].n = 0
			case 1:
				rs[j].n = 1 << 32
			case 2:
				rs[j].lo, rs[j].n = math.MaxUint32-2, 1<<32-3
			}
		}
		var sel, want []int32
		for i := range n {
			if r.IntN(4) == 0 {
				continue
			}
			sel = append(sel, int32(i))
			keep := true
			for _, rg := range rs {
				v := binary.LittleEndian.Uint32(data[i*ts+rg.off:])
				keep = keep && uint64(v-rg.lo) < rg.n
			}
			if keep {
				want = append(want, int32(i))
			}
		}
		got := ranges32Sel(data, ts, rs, sel)
		if !slices.Equal(got, want) {
			t.Fatalf("%+v: kept %d, want %d", rs, len(got), len(want))
		}
	}
}

// TestMergedRangesHoldAtEdges: conjunctions of comparisons of one int64
// and one int32 column with constants at and beyond their edges, merged
// into one interval per column and the exclusions left inside it, keep
// exactly the rows every comparison holds for by query.Holds.
func TestMergedRangesHoldAtEdges(t *testing.T) {
	const ts = 24 // a int32 at 12, b int64 at 16
	s, err := query.NewSchema(ts, query.Attribute{Name: "ts", Type: query.Int64}, query.Attribute{Name: "a", Type: query.Int32, Offset: 12}, query.Attribute{Name: "b", Type: query.Int64, Offset: 16})
	require.NoError(t, err)
	edges := []int64{math.MinInt64, math.MinInt64 + 1, math.MinInt64 + 2, math.MinInt32 - 1, math.MinInt32, math.MinInt32 + 1, -2, -1, 0, 1, 2,
		math.MaxInt32 - 1, math.MaxInt32, math.MaxInt32 + 1, math.MaxInt64 - 2, math.MaxInt64 - 1, math.MaxInt64}
	n := len(edges) * len(edges)
	data := make([]byte, n*ts)
	vals := make([][2]int64, n)
	for i := range n {
		a, b := int64(int32(edges[i%len(edges)])), edges[i/len(edges)]
		vals[i] = [2]int64{a, b}
		binary.LittleEndian.PutUint32(data[i*ts+12:], uint32(int32(a)))
		binary.LittleEndian.PutUint64(data[i*ts+16:], uint64(b))
	}
	ops := []query.CmpOp{query.Eq, query.Ne, query.Lt, query.Le, query.Gt, query.Ge}
	r := rand.New(rand.NewPCG(7, 77))
	for range 3000 {
		type term struct {
			col int
			op  query.CmpOp
			k   int64
		}
		var terms []term
		var exprs []query.Expr
		for range 1 + r.IntN(5) {
			tm := term{col: r.IntN(2), op: ops[r.IntN(6)], k: edges[r.IntN(len(edges))]}
			terms = append(terms, tm)
			exprs = append(exprs, query.Cmp(query.C([]string{"a", "b"}[tm.col]), tm.op, query.Int(tm.k)))
		}
		e := query.And(exprs...)
		p, err := compilePred(e, s)
		require.NoError(t, err)
		var want []int32
		for i, v := range vals {
			keep := true
			for _, tm := range terms {
				keep = keep && query.Holds(tm.op, v[tm.col], tm.k)
			}
			if keep {
				want = append(want, int32(i))
			}
		}
		all, _ := selectRows(p, make([]int32, n), data, ts)
		if !slices.Equal(all, want) {
			t.Fatalf("%v: kept %v, want %v (ranges %+v)", e, all, want, p.ranges)
		}
	}
}
