package engine

import (
	"slices"
	"sync/atomic"
	"time"
)

// A window join closes a window only once both sides' watermarks passed
// it, so a side whose input comes faster than the other's keeps its
// tuples in panes until the other catches up: without a bound its memory
// grows with its lead, and every new pane is memory touched for the first
// time (Nexmark q8's person side ran thousands of windows ahead of its
// auction side: docs/performance.md). Holding the side's result stage
// back is no answer: that is a worker, which the other side may need, and
// with one worker the only one. The producer of a stream that the side
// descends from is no worker: it waits in Buffer, before its next task,
// while the side is ahead, and the workers meanwhile finish what is
// queued and move the other side.

// joinGate is a window-join side that a stream's producer feeds.
type joinGate struct {
	js   *joinStage
	side int
}

// sideLead is a join side's state for the producers that feed it.
type sideLead struct {
	// ahead: the side holds more than a ring's bytes in panes and its
	// watermark leads the other's by more than a window (WindowJoin.Lead).
	ahead atomic.Bool
	// caughtUp is rung when ahead turns false (one ring waits).
	caughtUp chan struct{}
	// gaveUp is the other side's progress when a producer last stopped
	// waiting for it in vain (under js.mu): no producer waits again until
	// it moves.
	gaveUp struct {
		set bool
		at  uint64
	}
	// idle is how long a producer waits for the other side to move
	// (gateIdle; longer in tests).
	idle time.Duration
}

// gateIdle is how long a producer waits for the other side to move before
// it goes on regardless: that side may have no input for a while (a quiet
// topic), or move only when this producer does (both sides written by one
// producer that was not marked SameProducer).
const gateIdle = 20 * time.Millisecond

// gateLook bounds a wait between two looks at the other side's progress.
const gateLook = time.Millisecond

// gateJoins finds each join side's roots and gives every stream without
// upstream the join sides it feeds, except a side whose other side it
// feeds too (it would wait for itself).
func (e *Engine) gateJoins() {
	for _, en := range e.entries {
		js := en.join
		if js == nil {
			continue
		}
		js.roots = [2][]*Stream{js.sides[0].roots(nil), js.sides[1].roots(nil)}
		for side := range js.lead {
			js.lead[side].caughtUp, js.lead[side].idle = make(chan struct{}, 1), gateIdle
			for _, r := range js.roots[side] {
				if !slices.Contains(js.roots[1-side], r) {
					r.gates = append(r.gates, joinGate{js: js, side: side})
				}
			}
		}
	}
}

// roots appends the streams without upstream that s descends from (s
// itself where it has none), each once.
func (s *Stream) roots(dst []*Stream) []*Stream {
	if len(s.ups) == 0 {
		if !slices.Contains(dst, s) {
			dst = append(dst, s)
		}
		return dst
	}
	for _, u := range s.ups {
		dst = u.roots(dst)
	}
	return dst
}

// waitJoins holds s's producer while a join side it feeds runs ahead, the
// wait counted as back-pressure (Metrics).
func (s *Stream) waitJoins() {
	for _, g := range s.gates {
		if !g.js.lead[g.side].ahead.Load() {
			continue
		}
		start := time.Now()
		if g.js.waitLead(g.side) {
			s.lat.waited(start)
		}
	}
}

// updateLeads sets each side's ahead, ringing caughtUp where it turns
// false. It runs under mu, after tuples are filed or windows closed.
func (js *joinStage) updateLeads() {
	if js.e == nil {
		return
	}
	limit := js.e.cfg.BufferSize
	for side := range js.lead {
		held, ahead := js.op.Lead(side)
		on := ahead && held > limit
		l := &js.lead[side]
		if l.ahead.Load() == on {
			continue
		}
		l.ahead.Store(on)
		if !on {
			select {
			case l.caughtUp <- struct{}{}:
			default:
			}
		}
	}
}

// waitLead waits, on a producer, while side runs ahead, unless both sides
// have one producer (sidesShareProducer), or until the other side has not
// moved for gateIdle. It reports whether it waited.
func (js *joinStage) waitLead(side int) bool {
	l := &js.lead[side]
	if !l.ahead.Load() || js.sidesShareProducer() {
		return false
	}
	js.mu.Lock()
	moved := js.op.Added(1-side) + js.op.Joined()
	gaveUp := l.gaveUp.set && l.gaveUp.at == moved
	js.mu.Unlock()
	if gaveUp {
		return false
	}
	js.producerWaits.Add(1)
	t := time.NewTimer(gateLook)
	defer t.Stop()
	since := time.Now()
	for l.ahead.Load() && js.e.failed() == nil {
		select {
		case <-l.caughtUp:
		case <-t.C:
			t.Reset(gateLook)
		}
		js.mu.Lock()
		now := js.op.Added(1-side) + js.op.Joined()
		switch {
		case now != moved:
			moved, since = now, time.Now()
		case time.Since(since) > l.idle:
			l.gaveUp.set, l.gaveUp.at = true, now
			js.mu.Unlock()
			return true
		}
		js.mu.Unlock()
	}
	return true
}
