package ysb

import (
	"fmt"
	"sync/atomic"

	"github.com/saber-hx/saber-hx/engine"
)

// genIndexOfGroups maps the engine's group ordinals to the generator's
// campaign indexes.
func genIndexOfGroups(keys [][]byte, gen *Generator) []int {
	byID := make(map[UUID]int)
	c := gen.Campaigns()
	for i, id := range c.CampaignIDs {
		byID[id] = i / gen.Config().AdsPerCampaign
	}
	idx := make([]int, len(keys))
	for g, k := range keys {
		idx[g] = byID[UUID(k)]
	}
	return idx
}

// validator checks each emitted window against the generator.
type validator struct {
	gen      *Generator
	genIndex []int
	produced atomic.Uint64 // tuples handed to the engine so far
	exp      Expected
	windows  uint64
}

func (v *validator) check(w *engine.Window) error {
	k0, k1 := v.gen.TupleRange(w.Start, w.End-w.Start)
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
		return fmt.Errorf("%w: %d rows, want %d", ErrMismatch, w.Rows(), want)
	}
	for i := range w.Rows() {
		c := v.genIndex[w.Group(i)]
		if got, want := w.Agg(i, AggCount), v.exp.Count[c]; got != want {
			return fmt.Errorf("%w: campaign %x count %d, want %d", ErrMismatch, w.Key(i), got, want)
		}
		if got, want := w.Agg(i, AggMaxEventTime), v.exp.MaxEventTime[c]; got != want {
			return fmt.Errorf("%w: campaign %x max_event_time %d, want %d", ErrMismatch, w.Key(i), got, want)
		}
	}
	v.windows++
	return nil
}
