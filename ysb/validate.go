package ysb

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/saber-hx/saber-hx/engine"
)

// genIndexOfGroups maps the engine's group ordinals to the generator's
// campaign indexes (-1: a key that is no campaign's).
func genIndexOfGroups(keys [][]byte, gen *Generator) []int {
	byID := make(map[UUID]int)
	c := gen.Campaigns()
	for i, id := range c.CampaignIDs {
		byID[id] = i / gen.Config().AdsPerCampaign
	}
	idx := make([]int, len(keys))
	for g, k := range keys {
		i, ok := byID[UUID(k)]
		if !ok {
			i = -1
		}
		idx[g] = i
	}
	return idx
}

// validator checks the windows emitted against the generator, every one:
// each a WindowMs tumbling window, each campaign's row once with its
// count and latest view, and no window with a view left out (between two
// emitted, or after the last: finish).
type validator struct {
	gen      *Generator
	genIndex []int
	produced atomic.Uint64 // tuples handed to the engine so far
	exp      Expected
	seen     []bool // per campaign: a row in the window being checked
	windows  uint64
	next     int64 // start of the window after the last checked
	started  bool  // a window has been checked
}

func (v *validator) check(w *engine.Window) error {
	if w.End-w.Start != WindowMs || w.Start%WindowMs != 0 {
		return fmt.Errorf("%w: window [%d, %d), not one of the %d ms tumbling windows", ErrMismatch, w.Start, w.End, WindowMs)
	}
	if v.started && w.Start < v.next {
		return fmt.Errorf("%w: window %d after window %d", ErrMismatch, w.Start, v.next-WindowMs)
	}
	if err := v.noViewsBefore(w.Start); err != nil {
		return err
	}
	k0, k1 := v.gen.TupleRange(w.Start, WindowMs)
	k1 = min(k1, v.produced.Load())
	k0 = min(k0, k1)
	v.gen.Expected(k0, k1, &v.exp)
	want := 0
	for _, c := range v.exp.Count {
		if c > 0 {
			want++
		}
	}
	if w.Rows() != want {
		return fmt.Errorf("%w: window %d: %d rows, want %d", ErrMismatch, w.Start, w.Rows(), want)
	}
	if len(v.seen) != len(v.exp.Count) {
		v.seen = make([]bool, len(v.exp.Count))
	}
	clear(v.seen)
	for i := range w.Rows() {
		c := v.genIndex[w.Group(i)]
		if c < 0 || v.seen[c] {
			return fmt.Errorf("%w: window %d: campaign %x twice or not the generator's", ErrMismatch, w.Start, w.Key(i))
		}
		v.seen[c] = true
		if got, want := w.Agg(i, AggCount), v.exp.Count[c]; got != want {
			return fmt.Errorf("%w: window %d: campaign %x count %d, want %d", ErrMismatch, w.Start, w.Key(i), got, want)
		}
		if got, want := w.Agg(i, AggMaxEventTime), v.exp.MaxEventTime[c]; got != want {
			return fmt.Errorf("%w: window %d: campaign %x max_event_time %d, want %d", ErrMismatch, w.Start, w.Key(i), got, want)
		}
	}
	v.windows++
	v.next, v.started = w.Start+WindowMs, true
	return nil
}

// noViewsBefore checks that no view lies between the last window checked
// and start (from the first tuple where none was): those windows were
// not emitted.
func (v *validator) noViewsBefore(start int64) error {
	var k0 uint64
	if v.started {
		k0, _ = v.gen.TupleRange(v.next, 0)
	}
	k1, _ := v.gen.TupleRange(start, 0)
	k1 = min(k1, v.produced.Load())
	if k1 <= k0 {
		return nil
	}
	v.gen.Expected(k0, k1, &v.exp)
	for _, c := range v.exp.Count {
		if c > 0 {
			return fmt.Errorf("%w: views of tuples %d to %d in no window emitted (the windows before %d)", ErrMismatch, k0, k1, start)
		}
	}
	return nil
}

// finish checks, once every window is out, that no view of the tuples
// produced lies after the last window emitted.
func (v *validator) finish() error {
	return v.noViewsBefore(math.MaxInt64)
}
