package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/saber-hx/saber-hx/query"
)

// TestCmpSelHolds: the vectorised comparison (one loop per operator, the
// switch outside it) keeps exactly the rows for which query.Holds, the
// scalar definition the fused kernel and HAVING use, holds, for integers
// and floats (NaN and infinities included).
func TestCmpSelHolds(t *testing.T) {
	ints := []int64{math.MinInt64, -3, -1, 0, 1, 2, 3, math.MaxInt64}
	flts := []float64{math.Inf(-1), -2.5, -0.0, 0, 1, 2.5, math.Inf(1), math.NaN()}
	for _, op := range []query.CmpOp{query.Eq, query.Ne, query.Lt, query.Le, query.Gt, query.Ge} {
		checkCmpSel(t, op, ints)
		checkCmpSel(t, op, flts)
	}
}

// checkCmpSel runs cmpSel over every pair of vals.
func checkCmpSel[T int64 | float64](t *testing.T, op query.CmpOp, vals []T) {
	t.Helper()
	var a, b []T
	var sel []int32
	for _, x := range vals {
		for _, y := range vals {
			sel = append(sel, int32(len(a)))
			a, b = append(a, x), append(b, y)
		}
	}
	got := cmpSel(op, a, b, sel)
	j := 0
	for i := range a {
		want := query.Holds(op, a[i], b[i])
		kept := j < len(got) && got[j] == int32(i)
		if kept {
			j++
		}
		if kept != want {
			t.Errorf("%v %v %v: cmpSel kept %v, Holds says %v", a[i], op, b[i], kept, want)
		}
	}
	if j != len(got) {
		t.Errorf("%v: cmpSel returned rows out of order or not asked for: %v", op, got)
	}
}

// TestColRangeHolds: the comparison of an integer column with a constant,
// as an interval read in place (a WHERE's term, over a selection or, first,
// over every tuple), keeps exactly the rows for which query.Holds holds,
// for every operator, over the int32 and int64 ranges' edges and constants
// beyond them, either side of the operator.
func TestColRangeHolds(t *testing.T) {
	const ts = 24 // a int32 at offset 12, b int64 at offset 16
	s, err := query.NewSchema(ts, query.Attribute{Name: "ts", Type: query.Int64}, query.Attribute{Name: "a", Type: query.Int32, Offset: 12}, query.Attribute{Name: "b", Type: query.Int64, Offset: 16})
	if err != nil {
		t.Fatal(err)
	}
	vals := []int64{math.MinInt64, math.MinInt32 - 1, math.MinInt32, math.MinInt32 + 1, -3, -1, 0, 1, 2, 3, math.MaxInt32 - 1, math.MaxInt32, math.MaxInt32 + 1, math.MaxInt64 - 1, math.MaxInt64}
	data := make([]byte, len(vals)*ts)
	for i, v := range vals {
		binary.LittleEndian.PutUint32(data[i*ts+12:], uint32(int32(v)))
		binary.LittleEndian.PutUint64(data[i*ts+16:], uint64(v))
	}
	odd := func(i int) bool { return i%2 == 1 }
	for _, col := range []string{"a", "b"} {
		for _, op := range []query.CmpOp{query.Eq, query.Ne, query.Lt, query.Le, query.Gt, query.Ge} {
			for _, c := range vals {
				for _, mirrored := range []bool{false, true} {
					e := query.Cmp(query.C(col), op, query.Int(c))
					if mirrored {
						e = query.Cmp(query.Int(c), op.Mirror(), query.C(col))
					}
					p, err := compilePred(e, s)
					if err != nil || !p.ranged {
						t.Fatalf("%v: compiled %v, ranged %v", e, err, p != nil && p.ranged)
					}
					var wantAll, wantOdd []int32
					for i, v := range vals {
						if col == "a" {
							v = int64(int32(v))
						}
						if query.Holds(op, v, c) {
							wantAll = append(wantAll, int32(i))
							if odd(i) {
								wantOdd = append(wantOdd, int32(i))
							}
						}
					}
					all, _ := selectRows(p, make([]int32, len(vals)), data, ts)
					var sel []int32
					for i := range vals {
						if odd(i) {
							sel = append(sel, int32(i))
						}
					}
					some := p.filter(data, ts, sel)
					if !slices.Equal(all, wantAll) || !slices.Equal(some, wantOdd) {
						t.Errorf("%v: kept %v of all (want %v), %v of the odd rows (want %v)", e, all, wantAll, some, wantOdd)
					}
				}
			}
		}
	}
}

// TestAndOfRangesHolds: a conjunction of interval terms (tested up to four
// per pass, before the other terms) and of a term of another kind keeps
// exactly the rows every term holds for, by query.Holds, whether it
// starts from every tuple or from a selection.
func TestAndOfRangesHolds(t *testing.T) {
	const ts = 24
	s, err := query.NewSchema(ts, query.Attribute{Name: "ts", Type: query.Int64}, query.Attribute{Name: "a", Type: query.Int32, Offset: 12}, query.Attribute{Name: "b", Type: query.Int64, Offset: 16})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(8, 8))
	const n = 500
	a, b := make([]int64, n), make([]int64, n)
	data := make([]byte, n*ts)
	for i := range n {
		a[i], b[i] = r.Int64N(9)-4, r.Int64N(9)-4
		binary.LittleEndian.PutUint32(data[i*ts+12:], uint32(int32(a[i])))
		binary.LittleEndian.PutUint64(data[i*ts+16:], uint64(b[i]))
	}
	ops := []query.CmpOp{query.Eq, query.Ne, query.Lt, query.Le, query.Gt, query.Ge}
	for range 300 {
		type term struct {
			col   string
			op    query.CmpOp
			c     int64
			colAB bool // a <= b, not an interval
		}
		var terms []term
		var exprs []query.Expr
		for range 1 + r.IntN(9) {
			tm := term{col: []string{"a", "b"}[r.IntN(2)], op: ops[r.IntN(6)], c: r.Int64N(7) - 3}
			e := query.Cmp(query.C(tm.col), tm.op, query.Int(tm.c))
			if r.IntN(6) == 0 {
				tm.colAB, e = true, query.Cmp(query.C("a"), query.Le, query.C("b"))
			}
			terms, exprs = append(terms, tm), append(exprs, e)
		}
		e := query.And(exprs...)
		p, err := compilePred(e, s)
		if err != nil {
			t.Fatal(err)
		}
		holds := func(i int) bool {
			for _, tm := range terms {
				v := a[i]
				if tm.col == "b" {
					v = b[i]
				}
				if (tm.colAB && a[i] > b[i]) || (!tm.colAB && !query.Holds(tm.op, v, tm.c)) {
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
			t.Fatalf("%v: kept %v of all (want %v), %v of a selection (want %v)", e, all, wantAll, got, wantSome)
		}
	}
}
