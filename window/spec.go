// Package window holds the arithmetic of event-time windows and the window
// fragments that decouple window semantics from task size.
//
// A window definition (size, slide) is cut into panes of gcd(size, slide)
// time units. A kernel aggregates each task's tuples per pane into
// fragments; the result stage (Assembler) merges the fragments of tasks
// strictly in task order into per-pane accumulators and assembles every
// window from its panes once the watermark has passed its end. Because a
// pane never straddles a task boundary in a way that matters (a pane's
// fragments from several tasks are merged, in order), any task size works
// with any window size: many tasks per window, many windows per task.
//
// Lateness. The watermark is the largest event time of all tuples before the
// current one in stream order; window w closes when the watermark reaches its
// end. A tuple is late, and counted in no window, when the first window that
// contains it has closed. For tumbling windows that is exactly "its window
// has closed"; for sliding windows it keeps every pane's contribution
// all-or-nothing, so that windows can be assembled from pane aggregates. Each
// kernel judges lateness against the watermark inside its own task, and the
// Assembler drops (and counts as late) the fragments of panes that the
// watermark of earlier tasks had already sealed; together that is exactly the
// single-threaded rule, whatever the task size or worker count.
package window

import (
	"math"

	"github.com/saber-hx/saber-hx/query"
)

// Spec is a window in pane arithmetic. Window w covers positions
// [w*Slide, w*Slide+Size); pane p covers [p*Pane, (p+1)*Pane). A position is
// the event time for a range window and the tuple's index in the input
// stream for a row window, so one arithmetic serves both.
type Spec struct {
	Size, Slide, Pane int64
}

// NewSpec checks w and returns its pane arithmetic.
func NewSpec(w query.Window) (Spec, error) {
	if err := w.Validate(); err != nil {
		return Spec{}, err
	}
	return Spec{Size: w.Size, Slide: w.Slide, Pane: gcd(w.Size, w.Slide)}, nil
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// FloorDiv is a/b rounded toward negative infinity (b > 0), so that negative
// event times fall into the right window.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// PaneOf returns the pane holding event time ts.
func (s Spec) PaneOf(ts int64) int64 { return FloorDiv(ts, s.Pane) }

// Start and End bound window w.
func (s Spec) Start(w int64) int64 { return w * s.Slide }
func (s Spec) End(w int64) int64   { return w*s.Slide + s.Size }

// FirstWindow is the first window containing pane p.
func (s Spec) FirstWindow(p int64) int64 { return FloorDiv(p*s.Pane-s.Size, s.Slide) + 1 }

// LastWindow is the last window containing pane p.
func (s Spec) LastWindow(p int64) int64 { return FloorDiv(p*s.Pane, s.Slide) }

// Seal is the event time at which pane p stops accepting tuples: the end of
// its first window. A tuple of pane p is late when the watermark is >= Seal(p).
func (s Spec) Seal(p int64) int64 { return s.End(s.FirstWindow(p)) }

// LastClosed is the last window whose end is <= watermark wm.
func (s Spec) LastClosed(wm int64) int64 {
	if wm == math.MinInt64 {
		return math.MinInt64
	}
	return FloorDiv(wm-s.Size, s.Slide)
}

// PanesOf returns the panes [lo, hi) of window w.
func (s Spec) PanesOf(w int64) (lo, hi int64) {
	lo = s.Start(w) / s.Pane // exact: Pane divides Slide
	return lo, lo + s.Size/s.Pane
}
