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

// TestCmpColConstHolds: the comparison of an int32 column with a constant,
// read in place, keeps exactly the rows for which query.Holds holds, for
// every operator, over the int32 range's edges and constants beyond it.
func TestCmpColConstHolds(t *testing.T) {
	const ts = 12 // the column at offset 4 of 12-byte tuples
	col := []int32{math.MinInt32, -3, -1, 0, 1, 2, 3, math.MaxInt32}
	consts := []int64{math.MinInt64, math.MinInt32 - 1, math.MinInt32, -1, 0, 2, math.MaxInt32, math.MaxInt32 + 1}
	data := make([]byte, len(col)*ts)
	for i, v := range col {
		binary.LittleEndian.PutUint32(data[i*ts+4:], uint32(v))
	}
	for _, op := range []query.CmpOp{query.Eq, query.Ne, query.Lt, query.Le, query.Gt, query.Ge} {
		for _, c := range consts {
			sel := []int32{0, 1, 2, 3, 4, 5, 6, 7}
			got := cmpColConst(op, data[4:], ts, c, sel)
			var want []int32
			for i, v := range col {
				if query.Holds(op, int64(v), c) {
					want = append(want, int32(i))
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("column %v %v: kept %v, want %v", op, c, got, want)
			}
		}
	}
}
