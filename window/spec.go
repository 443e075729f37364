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
// current one in stream order; window w closes when the watermark minus the
// window's delay (query.Window.Delay, 0 by default) reaches its end. A tuple
// is late, and counted in no window, when the first window that contains it
// has closed. For tumbling windows that is exactly "its window
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
//
// Every int64 position is handled exactly, without wrap-around:
//
//   - A position is refused as bad input when the first window containing
//     it starts below math.MinInt64 (its start is not an int64): positions
//     below Lowest(), panes below LowestPane(). Every window containing an
//     accepted position starts at an int64, and so does each of its panes.
//
//   - A window may end past math.MaxInt64: no watermark reaches its end, so
//     it closes only at the end of the input (Closed is false). End reports
//     such an end as math.MaxInt64.
//
//   - Delay (>= 0) postpones closing: window w closes when the watermark
//     minus Delay reaches its end, that is when the watermark reaches
//     End(w)+Delay; where that sum lies past math.MaxInt64 no watermark
//     closes it either.
//
// The methods below are exact for the windows and panes of accepted
// positions; they never overflow, saturating where a bound is past the
// int64 range.
type Spec struct {
	Size, Slide, Pane int64
	Delay             int64 // the watermark delay, >= 0 (query.Window.Delay)
}

// NewSpec checks w and returns its pane arithmetic.
func NewSpec(w query.Window) (Spec, error) {
	if err := w.Validate(); err != nil {
		return Spec{}, err
	}
	return Spec{Size: w.Size, Slide: w.Slide, Pane: gcd(w.Size, w.Slide), Delay: w.Delay}, nil
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

// PaneOf returns the pane holding position x.
func (s Spec) PaneOf(x int64) int64 { return FloorDiv(x, s.Pane) }

// PaneStart is the first position of pane p (p >= LowestPane()).
func (s Spec) PaneStart(p int64) int64 { return p * s.Pane }

// PaneLast is the last position of pane p: PaneStart(p)+Pane-1, or
// math.MaxInt64 for the pane holding it (which may reach past it).
func (s Spec) PaneLast(p int64) int64 {
	if p >= s.PaneOf(math.MaxInt64) {
		return math.MaxInt64
	}
	return p*s.Pane + (s.Pane - 1) // exact also for the pane holding MinInt64, whose start is not an int64
}

// Lowest is the smallest accepted position: the first window containing a
// position below it starts below math.MinInt64. It is the end of the
// window before the lowest window whose start is an int64.
func (s Spec) Lowest() int64 {
	first := (math.MinInt64 / s.Slide) * s.Slide // the smallest multiple of Slide >= MinInt64 (/ truncates toward zero)
	return first + (s.Size - s.Slide)            // Slide <= Size
}

// LowestPane is the pane of Lowest(): the smallest pane whose first window
// starts at an int64.
func (s Spec) LowestPane() int64 { return s.Lowest() / s.Pane } // exact: Pane divides Slide and Size

// Accepted reports whether position x is accepted: x >= Lowest().
func (s Spec) Accepted(x int64) bool { return x >= s.Lowest() }

// Start is the first position of window w.
func (s Spec) Start(w int64) int64 { return w * s.Slide }

// End is the end of window w, or math.MaxInt64 where it lies past it.
func (s Spec) End(w int64) int64 {
	start := w * s.Slide
	if start > math.MaxInt64-s.Size {
		return math.MaxInt64
	}
	return start + s.Size
}

// Closed reports whether watermark wm minus Delay has reached the end of
// window w (wm >= End(w)+Delay, exactly); never for a window that ends past
// math.MaxInt64, nor where End(w)+Delay lies past it.
func (s Spec) Closed(w, wm int64) bool {
	start := w * s.Slide
	if start > math.MaxInt64-s.Size {
		return false
	}
	end := start + s.Size
	// wm-end as uint64 is exact where end <= wm (the difference is below
	// 2^64), and Delay >= 0.
	return end <= wm && uint64(wm)-uint64(end) >= uint64(s.Delay)
}

// FirstWindow is the first window containing pane p (p >= LowestPane();
// below it, where the window's index is not an int64 either, it saturates
// at math.MinInt64).
func (s Spec) FirstWindow(p int64) int64 {
	// With k panes per slide and m per window, window w holds panes
	// [w*k, w*k+m): the first holding p is floor((p-m)/k)+1, computed as
	// floor(p/k) + floor((p mod k - m)/k) + 1 so that p-m cannot overflow.
	if s.Slide == s.Pane {
		// k = 1 (tumbling windows, or a slide that divides the size):
		// p-m+1 without its divisions, which a window join's filing and
		// closing pay per pane.
		m := s.Size / s.Pane
		if p < math.MinInt64+(m-1) {
			return math.MinInt64
		}
		return p - (m - 1)
	}
	k, m := s.Slide/s.Pane, s.Size/s.Pane
	r := p % k
	if r < 0 {
		r += k
	}
	a, b := FloorDiv(p, k), FloorDiv(r-m, k)+1 // b <= 0: r < k <= m
	if a < math.MinInt64-b {
		return math.MinInt64
	}
	return a + b
}

// LastWindow is the last window containing pane p.
func (s Spec) LastWindow(p int64) int64 {
	if s.Slide == s.Pane {
		return p
	}
	return FloorDiv(p, s.Slide/s.Pane)
}

// Open is the largest watermark at which pane p still accepts tuples: the
// end of its first window plus Delay minus one, math.MaxInt64 where that
// end plus Delay lies past math.MaxInt64 (no watermark closes it). A tuple
// of pane p is late when the watermark before it is > Open(p): the delay is
// folded into this per-pane bound, so that a kernel's per-tuple test stays
// one compare.
func (s Spec) Open(p int64) int64 {
	start := s.FirstWindow(p) * s.Slide
	if start > math.MaxInt64-s.Size {
		return math.MaxInt64
	}
	last := start + (s.Size - 1) // the first window's last position
	if last > math.MaxInt64-s.Delay {
		return math.MaxInt64
	}
	return last + s.Delay
}

// PaneSpan returns the panes [lo, last] of window w (last inclusive: the
// window's last pane may be the pane holding math.MaxInt64, whose successor
// is not a pane).
func (s Spec) PaneSpan(w int64) (lo, last int64) {
	lo = s.Start(w) / s.Pane // exact: Pane divides Slide
	top, m := s.PaneOf(math.MaxInt64), s.Size/s.Pane
	if lo > top-(m-1) {
		return lo, top
	}
	return lo, lo + (m - 1)
}
