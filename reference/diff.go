package reference

import (
	"fmt"
	"math"

	"github.com/saber-hx/saber-hx/query"
)

// Diff returns "" when got equals want, else a description of the first
// difference. For an aggregation rows are compared in order: window bounds
// and key exactly, values by sameValue. For a stateless query whose output
// schema has a String or a Nullable attribute the output is compared value
// by value (the bytes of a view are a pointer, a NULL's slot may hold
// anything): each side's Values, or, where a side has none, its Tuples
// decoded (DecodeTuples: the views must still be valid). For any other
// stateless query the output tuples are compared byte for byte. Counts are
// compared exactly, after the output.
//
// sameValue: a NULL equals only a NULL; otherwise the kinds must be the
// same, integers, timestamps and booleans equal exactly, strings and bytes
// byte for byte, and floats within relative tolerance tol
// (|a-b| <= tol*max(1,|a|,|b|); equal values, including equal infinities,
// and two NaNs match; an infinity matches only itself, a NaN only a NaN).
func Diff(q *query.Query, want, got *Result, tol float64) string {
	if want == nil || got == nil {
		if want == got {
			return ""
		}
		return fmt.Sprintf("want result %v, got %v", want != nil, got != nil)
	}
	if q.Stateless() {
		out, err := q.OutputSchema()
		if err != nil {
			return fmt.Sprintf("output schema: %v", err)
		}
		if valueLevel(out) {
			if d := diffValues(out, want, got, tol); d != "" {
				return d
			}
		} else if d := diffTuples(q, want.Tuples, got.Tuples); d != "" {
			return d
		}
	} else if d := diffRows(q, want.Rows, got.Rows, tol); d != "" {
		return d
	}
	if want.Counts != got.Counts {
		return fmt.Sprintf("counts differ: want %+v, got %+v", want.Counts, got.Counts)
	}
	return ""
}

// valuesOf is r's output values: Values, or its Tuples decoded.
func valuesOf(s *query.Schema, r *Result) ([][]Value, error) {
	if r.Values != nil || r.Tuples == nil {
		return r.Values, nil
	}
	return DecodeTuples(s, r.Tuples)
}

func diffValues(s *query.Schema, want, got *Result, tol float64) string {
	wv, err := valuesOf(s, want)
	if err != nil {
		return fmt.Sprintf("want: %v", err)
	}
	gv, err := valuesOf(s, got)
	if err != nil {
		return fmt.Sprintf("got: %v", err)
	}
	n := min(len(wv), len(gv))
	for i := 0; i < n; i++ {
		if len(wv[i]) != len(gv[i]) {
			return fmt.Sprintf("output tuple %d: want %d values, got %d", i, len(wv[i]), len(gv[i]))
		}
		for j := range wv[i] {
			if !sameValue(wv[i][j], gv[i][j], tol) {
				name := ""
				if j < len(s.Attrs) {
					name = fmt.Sprintf(" (%q)", s.Attrs[j].Name)
				}
				return fmt.Sprintf("output tuple %d: attribute %d%s: want %v, got %v", i, j, name, wv[i][j], gv[i][j])
			}
		}
	}
	if len(wv) > n {
		return fmt.Sprintf("output: want %d tuples, got %d: tuple %d %v missing", len(wv), len(gv), n, wv[n])
	}
	if len(gv) > n {
		return fmt.Sprintf("output: want %d tuples, got %d: tuple %d %v unexpected", len(wv), len(gv), n, gv[n])
	}
	return ""
}

func diffTuples(q *query.Query, want, got []byte) string {
	size := max(1, OutputTupleSize(q))
	n := min(len(want), len(got))
	for i := 0; i < n; i++ {
		if want[i] != got[i] {
			t := i / size
			lo, hi := t*size, (t+1)*size
			return fmt.Sprintf("output tuple %d differs at byte %d: want %x, got %x", t, i-lo, want[lo:min(hi, len(want))], got[lo:min(hi, len(got))])
		}
	}
	if len(want) != len(got) {
		return fmt.Sprintf("output: want %d bytes (%d tuples), got %d bytes (%d tuples)", len(want), len(want)/size, len(got), len(got)/size)
	}
	return ""
}

func rowString(r Row) string {
	return fmt.Sprintf("window [%d, %d) key %x", r.Start, r.End, r.Key)
}

func diffRows(q *query.Query, want, got []Row, tol float64) string {
	n := min(len(want), len(got))
	for i := 0; i < n; i++ {
		w, g := want[i], got[i]
		if w.Start != g.Start || w.End != g.End || w.Key != g.Key {
			return fmt.Sprintf("row %d: want %s, got %s", i, rowString(w), rowString(g))
		}
		if len(w.Values) != len(g.Values) {
			return fmt.Sprintf("row %d (%s): want %d values, got %d", i, rowString(w), len(w.Values), len(g.Values))
		}
		for j := range w.Values {
			if !sameValue(w.Values[j], g.Values[j], tol) {
				name := ""
				if j < len(q.Aggregates) {
					name = fmt.Sprintf(" (%s %q)", q.Aggregates[j].Func, q.Aggregates[j].As)
				}
				return fmt.Sprintf("row %d (%s): value %d%s: want %v, got %v", i, rowString(w), j, name, w.Values[j], g.Values[j])
			}
		}
	}
	if len(want) > n {
		return fmt.Sprintf("want %d rows, got %d: row %d (%s) missing", len(want), len(got), n, rowString(want[n]))
	}
	if len(got) > n {
		return fmt.Sprintf("want %d rows, got %d: row %d (%s) unexpected", len(want), len(got), n, rowString(got[n]))
	}
	return ""
}

func sameValue(a, b Value, tol float64) bool {
	if a.Null || b.Null {
		return a.Null && b.Null
	}
	if a.kind() != b.kind() {
		return false
	}
	switch a.kind() {
	case FloatKind:
	case StringKind, BytesKind:
		return a.Str == b.Str
	default:
		return a.I == b.I
	}
	if a.F == b.F || (math.IsNaN(a.F) && math.IsNaN(b.F)) {
		return true
	}
	if math.IsInf(a.F, 0) || math.IsInf(b.F, 0) {
		return false // an infinity equals only itself
	}
	return math.Abs(a.F-b.F) <= tol*max(1, math.Abs(a.F), math.Abs(b.F))
}
