package window

import "math"

// Complete is the event time below which every window is done: each window
// holding an earlier position has been emitted (or held nothing). A
// position x lies in windows up to floor(x/Slide), so every window of x is
// before next exactly when x < Start(next). Before the first window is
// done nothing is complete (math.MinInt64). A source that commits its
// input's offsets (at least once) commits a record only when its event
// time is below Complete: the windows it counts in are all out.
func (a *Assembler) Complete() int64 {
	if !a.started {
		return math.MinInt64
	}
	if a.next > math.MaxInt64/a.spec.Slide {
		return math.MaxInt64
	}
	if a.next < math.MinInt64/a.spec.Slide {
		return math.MinInt64
	}
	return a.spec.Start(a.next)
}
