package kernels

import (
	"encoding/binary"
	"math"
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
