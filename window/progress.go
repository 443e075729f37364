package window

import "math"

// Complete is the event time below which every window is done: emitted,
// or closed by the watermark while it held no pane. A position x lies in
// windows up to floor(x/Slide), so every window of x is done exactly when
// x < Start(w), w the first window not done. Windows before next were
// emitted; with no pane live, every window the watermark closed is done
// too, so that input the query filtered out entirely does not hold the
// bound back. Before anything is done nothing is complete
// (math.MinInt64). A source that commits its input's offsets (at least
// once) commits a record only when its event time is below Complete: the
// windows it counts in are all out.
func (a *Assembler) Complete() int64 {
	w, ok := a.next, a.started
	if len(a.live) == 0 {
		if c, closed := a.firstOpen(); closed && (!ok || c > w) {
			w, ok = c, true
		}
	}
	if !ok {
		return math.MinInt64
	}
	if w > math.MaxInt64/a.spec.Slide {
		return math.MaxInt64
	}
	if w < math.MinInt64/a.spec.Slide {
		return math.MinInt64
	}
	return a.spec.Start(w)
}

// firstOpen is the first window the watermark has not closed, ok false
// when there is no watermark yet or no window is closed.
func (a *Assembler) firstOpen() (w int64, ok bool) {
	s := a.spec
	if a.wm < math.MinInt64+sizeDelay(s.Size, s.Delay) {
		return 0, false // no watermark, or wm - Size - Delay below the int64 range
	}
	// Window w is closed when w*Slide + Size + Delay <= wm: the first open
	// one is floor((wm - Size - Delay) / Slide) + 1.
	w = FloorDiv(a.wm-s.Size-s.Delay, s.Slide) + 1
	for w > math.MinInt64 && s.Closed(w, a.wm) { // exactness at the edges
		w++
	}
	return w, true
}

// sizeDelay is size+delay, saturated at math.MaxInt64.
func sizeDelay(size, delay int64) int64 {
	if delay > math.MaxInt64-size {
		return math.MaxInt64
	}
	return size + delay
}
