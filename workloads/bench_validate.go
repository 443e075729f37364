package workloads

// BenchConfig.Validate: the output captured and compared with the
// reference evaluator.

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/doubling"
	"github.com/saber-hx/saber-hx/reference"
)

// validateAll checks each part's output against the reference evaluator,
// one part after the other, with a progress line every 5 s on
// BenchConfig.Log. A cancelled ctx (SIGINT, SIGTERM) stops it: the parts
// not checked by then are not validated (ValidationInterrupted).
func (b *Bench) validateAll(ctx context.Context, res *BenchResult) {
	log := b.cfg.Log
	if log == nil {
		log = io.Discard
	}
	res.Validated = true
	start := time.Now()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for i, bp := range b.parts {
		pr := &res.Parts[i]
		fmt.Fprintf(log, "bench validating %s (%d of %d) against the reference evaluator\n", bp.name, i+1, len(b.parts))
		done := make(chan string, 1)
		// The reference evaluator cannot be stopped half-way; on a signal its
		// goroutine is left to finish on its own while the caller returns.
		st := pr.Whole
		go func() { done <- bp.validate(b.parts, st) }()
	wait:
		for {
			select {
			case pr.Mismatch = <-done:
				pr.Validated = pr.Mismatch == ""
				break wait
			case <-tick.C:
				fmt.Fprintf(log, "bench validating %s (%d of %d): %.0f s\n", bp.name, i+1, len(b.parts), time.Since(start).Seconds())
			case <-ctx.Done():
				res.Validated, res.ValidationInterrupted = false, true
				return
			}
		}
		res.Validated = res.Validated && pr.Validated
	}
}

// capture keeps the part's output for validation.
func (bp *benchPart) capture(sp *engine.Spec) {
	sp.Tuples = func(b []byte) error { bp.tuples = doubling.Append(bp.tuples, b...); return nil }
	if bp.q == nil || bp.q.Stateless() {
		return
	}
	q := bp.q
	sp.Windows = func(w *engine.Window) error {
		for i := range w.Rows() {
			row := reference.Row{Start: w.Start, End: w.End, Key: string(w.Key(i))}
			for a := range q.Aggregates {
				if w.AggIsFloat(a) {
					row.Values = append(row.Values, reference.Float(w.AggFloat(i, a)))
				} else {
					row.Values = append(row.Values, reference.Int(w.Agg(i, a)))
				}
			}
			bp.output.Rows = append(bp.output.Rows, row)
		}
		return nil
	}
}

// validate compares the part's output with the reference evaluator over
// the part's input: what its producers fed, or what the engine's upstream
// parts output (each upstream is validated on its own). "" when equal.
func (bp *benchPart) validate(parts []*benchPart, st engine.Stats) string {
	inputOf := func(i int, from engine.Ref) []byte {
		if up, ok := from.Spec(); ok {
			return parts[up].tuples // a part per spec, in order
		}
		return bp.inputs[i].input
	}
	if bp.j != nil {
		want, err := reference.EvaluateJoin(bp.j, inputOf(0, bp.spec.Upstream), inputOf(len(bp.inputs)-1, bp.spec.UpstreamRight))
		if err != nil {
			return "reference: " + err.Error()
		}
		if string(want.Tuples) != string(bp.tuples) {
			return fmt.Sprintf("join output differs: %d pair bytes, want %d", len(bp.tuples), len(want.Tuples))
		}
		if want.Counts.Late != st.Late || want.Counts.Tuples != st.Tuples {
			return fmt.Sprintf("join counts: %d tuples, %d late; want %d, %d", st.Tuples, st.Late, want.Counts.Tuples, want.Counts.Late)
		}
		return ""
	}
	want, err := reference.Evaluate(bp.q, inputOf(0, bp.spec.Upstream))
	if err != nil {
		return "reference: " + err.Error()
	}
	got := bp.output
	if bp.q.Stateless() {
		got.Tuples = bp.tuples
	}
	got.Counts = reference.Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
	// Float sums depend on the order of additions, which per-pane partial
	// aggregates change: floats compare within a relative 1e-6.
	return reference.Diff(bp.q, want, &got, 1e-6)
}
