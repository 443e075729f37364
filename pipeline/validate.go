package pipeline

// Options.Validate: every query's output checked against the reference
// evaluator (package reference) over the tuples the run read.

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/doubling"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/sql"
	"github.com/saber-hx/saber-hx/strview"
)

// validator keeps what the run read and emitted, strings and all, for the
// reference evaluator: each source's tuples as fed, each query's output
// tuples and, for an aggregation, its rows. Memory grows with the input:
// the caller bounds it (a file, events.num, a short Duration).
type validator struct {
	mu      sync.Mutex
	strings *strview.Arena
	inputs  map[string][]byte // by source
	outs    []validated       // by query
}

type validated struct {
	tuples []byte
	rows   []reference.Row
}

func newValidator(queries int) *validator {
	return &validator{strings: strview.NewArena(0), inputs: map[string][]byte{}, outs: make([]validated, queries)}
}

// keep appends tuples of schema s to dst, their long strings copied into
// the validator's arena (the engine frees its own as it goes).
func (v *validator) keep(dst, tuples []byte, s *query.Schema) []byte {
	start := len(dst)
	dst = doubling.Append(dst, tuples...)
	var strs []query.Attribute
	for _, a := range s.Attrs {
		if a.Type == query.String {
			strs = append(strs, a)
		}
	}
	if len(strs) == 0 {
		return dst
	}
	for o := start; o+s.TupleSize <= len(dst); o += s.TupleSize {
		t := dst[o : o+s.TupleSize]
		for _, a := range strs {
			view := t[a.Offset : a.Offset+strview.Size]
			if strview.Len(view) > strview.MaxInline && !a.IsNull(t) {
				strview.PutRef(view, v.strings.Copy(strview.Bytes(view)))
			}
		}
	}
	return dst
}

// fed records tuples that source src fed, before they are committed.
func (v *validator) fed(src *sql.Source, tuples []byte) {
	v.mu.Lock()
	v.inputs[src.Name] = v.keep(v.inputs[src.Name], tuples, src.Schema)
	v.mu.Unlock()
}

// wrap makes spec i of query q keep its output as well as hand it on.
func (v *validator) wrap(i int, q *sql.Query, sp *engine.Spec) {
	next := sp.Tuples
	out := &v.outs[i]
	sp.Tuples = func(b []byte) error {
		v.mu.Lock()
		out.tuples = v.keep(out.tuples, b, q.Output)
		v.mu.Unlock()
		if next != nil {
			return next(b)
		}
		return nil
	}
	aq := sp.Query
	if aq == nil || aq.Stateless() {
		return
	}
	sp.Windows = func(w *engine.Window) error {
		v.mu.Lock()
		defer v.mu.Unlock()
		for r := range w.Rows() {
			row := reference.Row{Start: w.Start, End: w.End, Key: string(w.CanonicalKey(r))}
			for a, ag := range aq.Aggregates {
				var val reference.Value
				switch aq.AggType(ag) {
				case query.FloatValue:
					val = reference.Float(w.AggFloat(r, a))
				case query.TimeValue:
					val = reference.Time(w.Agg(r, a))
				default:
					val = reference.Int(w.Agg(r, a))
				}
				if w.AggNull(r, a) {
					val = reference.Null(val.Kind)
				}
				row.Values = append(row.Values, val)
			}
			out.rows = append(out.rows, row)
		}
		return nil
	}
}

// check compares every query's output with the reference evaluator's over
// the query's input (a source's tuples as fed, or the output of the view
// it reads, itself checked on its own): "" where they are equal, else
// what differs, per query.
func (v *validator) check(prog *sql.Program, stats []engine.Stats) []string {
	mismatch := make([]string, len(prog.Queries))
	input := func(source string, from engine.Ref) []byte {
		if i, ok := from.Spec(); ok {
			return v.outs[i].tuples
		}
		return v.inputs[source]
	}
	for i, q := range prog.Queries {
		st := stats[i]
		counts := reference.Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
		if j := q.Spec.Join; j != nil {
			want, err := reference.EvaluateJoin(j, input(q.Input, q.Spec.Upstream), input(q.InputRight, q.Spec.UpstreamRight))
			if err != nil {
				mismatch[i] = "reference: " + err.Error()
				continue
			}
			got, err := reference.DecodeTuples(q.Output, v.outs[i].tuples)
			if err != nil {
				mismatch[i] = "output: " + err.Error()
				continue
			}
			if j.Regular {
				// A regular join outputs each pair when the later of its
				// tuples arrives: the pairs, in an order of the sides'
				// arrivals.
				sortValues(want.Values)
				sortValues(got)
			}
			if d := sameValues(want.Values, got); d != "" {
				mismatch[i] = d
			} else if want.Counts.Tuples != st.Tuples || want.Counts.Late != st.Late {
				mismatch[i] = fmt.Sprintf("join counts: %d tuples, %d late; want %d, %d", st.Tuples, st.Late, want.Counts.Tuples, want.Counts.Late)
			}
			continue
		}
		want, err := reference.Evaluate(q.Spec.Query, input(q.Input, q.Spec.Upstream))
		if err != nil {
			mismatch[i] = "reference: " + err.Error()
			continue
		}
		got := &reference.Result{Rows: v.outs[i].rows, Counts: counts}
		if q.Spec.Query.Stateless() {
			got.Tuples = v.outs[i].tuples
			if got.Tuples == nil {
				got.Tuples = []byte{}
			}
		}
		// Float sums depend on the order of additions, which partial
		// aggregates per pane and per task change.
		mismatch[i] = reference.Diff(q.Spec.Query, want, got, 1e-9)
	}
	return mismatch
}

// sortValues sorts rows by their printed values.
func sortValues(rows [][]reference.Value) {
	keys := make(map[*reference.Value]string, len(rows))
	for _, r := range rows {
		if len(r) > 0 {
			keys[&r[0]] = fmt.Sprint(r)
		}
	}
	key := func(r []reference.Value) string {
		if len(r) == 0 {
			return ""
		}
		return keys[&r[0]]
	}
	slices.SortStableFunc(rows, func(a, b []reference.Value) int { return strings.Compare(key(a), key(b)) })
}

// sameValues compares a join's output values with the reference's, in
// order: "" where equal.
func sameValues(want, got [][]reference.Value) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d output tuples, want %d", len(got), len(want))
	}
	for i := range want {
		if len(want[i]) != len(got[i]) {
			return fmt.Sprintf("output tuple %d: %d values, want %d", i, len(got[i]), len(want[i]))
		}
		for k := range want[i] {
			if want[i][k] != got[i][k] {
				return fmt.Sprintf("output tuple %d, value %d: %+v, want %+v", i, k, got[i][k], want[i][k])
			}
		}
	}
	return ""
}

func (v *validator) free() { v.strings.Free() }
