package kernels

import (
	"math"
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
