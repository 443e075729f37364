package window

import (
	"math"
	"sort"
)

// Output is one closed window, handed to the sink in window order. State's
// Touched is sorted by group ordinal. Output and State are only valid during
// the emit call.
type Output struct {
	Window     int64
	Start, End int64
	State      *GroupState
}

// Counters add up: every tuple of every merged task is exactly one of
// Filtered, Unmatched, Late or Counted.
type Counters struct {
	Tuples, Filtered, Unmatched, Late, Counted uint64
	Windows, Rows                              uint64 // windows emitted (with at least one row), rows in them
}

type paneAcc struct {
	pane  int64
	state *GroupState
}

// Assembler is the window half of the result stage: it merges task results
// strictly in task order and emits every window once, complete, in window
// order. It is not safe for concurrent use; the result stage serialises it.
type Assembler struct {
	spec   Spec
	layout *Layout

	wm      int64 // watermark: largest event time merged so far
	next    int64 // windows before next have been emitted
	started bool  // next is valid

	live    []paneAcc // open panes, sorted by pane
	free    []*GroupState
	scratch *GroupState // window assembled from several panes
	out     Output

	Counters Counters
}

// NewAssembler returns an empty assembler.
func NewAssembler(spec Spec, l *Layout) *Assembler {
	return &Assembler{spec: spec, layout: l, wm: math.MinInt64, scratch: NewGroupState(l)}
}

// Watermark returns the largest event time merged so far (math.MinInt64
// before any tuple).
func (a *Assembler) Watermark() int64 { return a.wm }

// Merge merges the next task's result (callers go in task order) and emits
// the windows that the task's watermark closed.
func (a *Assembler) Merge(r *TaskResult, emit func(*Output) error) error {
	c := &a.Counters
	c.Tuples += r.Tuples
	c.Filtered += r.Filtered
	c.Unmatched += r.Unmatched
	c.Late += r.Late
	for i := range r.Frags {
		f := &r.Frags[i]
		if f.Tuples == 0 {
			continue
		}
		// Sealed by an earlier task: every tuple of this fragment is late.
		if a.wm != math.MinInt64 && a.wm >= a.spec.Seal(f.Pane) {
			c.Late += f.Tuples
			continue
		}
		a.pane(f.Pane).Merge(f.State)
		c.Counted += f.Tuples
	}
	if r.Tuples > 0 && r.MaxTS > a.wm {
		a.wm = r.MaxTS
	}
	return a.emit(a.spec.LastClosed(a.wm), false, emit)
}

// Flush emits every window still open: the end of the input closes them all.
func (a *Assembler) Flush(emit func(*Output) error) error {
	return a.emit(0, true, emit)
}

// pane returns the accumulator of pane p, inserting it in order.
func (a *Assembler) pane(p int64) *GroupState {
	i := sort.Search(len(a.live), func(i int) bool { return a.live[i].pane >= p })
	if i < len(a.live) && a.live[i].pane == p {
		return a.live[i].state
	}
	var st *GroupState
	if n := len(a.free); n > 0 {
		st, a.free = a.free[n-1], a.free[:n-1]
	} else {
		st = NewGroupState(a.layout)
	}
	a.live = append(a.live, paneAcc{})
	copy(a.live[i+1:], a.live[i:])
	a.live[i] = paneAcc{pane: p, state: st}
	return st
}

// emit emits windows up to last (all of them when all is set), skipping
// windows that hold no pane.
func (a *Assembler) emit(last int64, all bool, emit func(*Output) error) error {
	s := a.spec
	for len(a.live) > 0 {
		w := s.FirstWindow(a.live[0].pane)
		if a.started && a.next > w {
			w = a.next
		}
		if !all && w > last {
			return nil
		}
		_, hi := s.PanesOf(w)
		n := 0 // live panes in window w: a prefix of live
		for n < len(a.live) && a.live[n].pane < hi {
			n++
		}
		st := a.live[0].state
		if n > 1 {
			st = a.scratch
			st.Reset()
			for _, pa := range a.live[:n] {
				st.Merge(pa.state)
			}
		}
		if n > 0 && !st.Empty() {
			st.SortTouched()
			a.out = Output{Window: w, Start: s.Start(w), End: s.End(w), State: st}
			a.Counters.Windows++
			a.Counters.Rows += uint64(len(st.Touched))
			if err := emit(&a.out); err != nil {
				return err
			}
		}
		a.next, a.started = w+1, true
		k := 0 // panes whose last window was w
		for k < len(a.live) && s.LastWindow(a.live[k].pane) <= w {
			st := a.live[k].state
			st.Reset()
			a.free = append(a.free, st)
			k++
		}
		a.live = append(a.live[:0], a.live[k:]...)
	}
	return nil
}
