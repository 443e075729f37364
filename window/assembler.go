package window

import (
	"fmt"
	"math"
	"sort"
)

// Result is the result of one closed window (a task's is a TaskResult),
// handed to the sink in window order. Rows are the groups to emit: sorted
// by group key (ordinal order for dense groups, key order for hashed ones)
// and filtered by the assembler's filter; read them through State. State
// holds the whole window (its Touched is sorted by key too) and may be
// shared with later windows: sinks must not change it.
// A Result, its Rows and its State are only valid during the emit call.
type Result struct {
	// Window is the window's index (Spec), or a session's end (Sessions:
	// the order sessions close in).
	Window     int64
	Start, End int64 // Spec.Start and Spec.End: End is MaxInt64 where the window ends past it
	State      *GroupState
	Rows       []int32
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
//
// Windows are assembled incrementally: the panes of the current window sit
// in a two-stacks aggregator (twoStacks), so that sliding by one pane costs
// O(1) pane merges amortized, whatever the number of panes per window. A
// pane enters the aggregator when the first window holding it is emitted;
// by then its accumulator is sealed (a later fragment for it is late), so it
// never changes while held. Layouts whose words are all sums (COUNT, SUM,
// AVG: Layout.Invertible) slide by a running sum instead (runningSum: the
// entering pane added, the leaving one subtracted), whose groups stay in
// key order from window to window; hashed ones number their groups
// (groupDict), so that their panes and running state are arrays indexed by
// group id. Tumbling windows (one pane per window) emit the pane's own
// state.
type Assembler struct {
	spec     Spec
	layout   *Layout
	tumbling bool // one pane per window: no aggregator

	wm      int64 // watermark: largest event time merged so far
	next    int64 // windows before next have been emitted
	started bool  // next is valid

	live []paneAcc // open panes, sorted by pane
	// liveBuf is live's whole array: emit drops the closed panes off
	// live's front, and pane moves live back to liveBuf's start only when
	// it reaches its end, so that a slide does not shift every open pane.
	liveBuf []paneAcc
	free    []*GroupState
	// win holds live[:held()]: agg (two stacks) in general, sum (a running
	// sum) for invertible layouts; nil when tumbling.
	win slider
	agg *twoStacks
	sum *runningSum
	// dict numbers the groups of a hashed layout slid by sum: its pane
	// accumulators are id-indexed over it.
	dict *groupDict

	keep func(st *GroupState, group int32) bool
	rows []int32
	out  Result

	Counters Counters

	repins int // test hook: repin's renumberings
}

// NewAssembler returns an empty assembler.
func NewAssembler(spec Spec, l *Layout) *Assembler {
	a := &Assembler{spec: spec, layout: l, wm: math.MinInt64, tumbling: spec.Pane == spec.Size}
	if l.Hashed {
		l.byKey.Store(true)
	}
	switch {
	case a.tumbling:
	case l.Invertible():
		if l.Hashed {
			a.dict = newGroupDict()
		}
		a.sum = newRunningSum(l, a.dict)
		a.sum.clearPopped = true
		a.win = a.sum
	default:
		a.agg = newTwoStacks(l)
		a.win = a.agg
	}
	return a
}

// slider is a sliding-window aggregator over pane states: twoStacks or
// runningSum.
type slider interface {
	Len() int
	push(p *GroupState)
	pop() *GroupState
	query() *GroupState
	reset()
}

// SetFilter sets the filter on output rows (HAVING): a group of a window is
// emitted when keep(state, group) holds; a window left without rows is not
// emitted (nor counted). nil keeps every row. keep must not change st.
func (a *Assembler) SetFilter(keep func(st *GroupState, group int32) bool) { a.keep = keep }

// Watermark returns the largest event time merged so far (math.MinInt64
// before any tuple).
func (a *Assembler) Watermark() int64 { return a.wm }

// Merge merges the next task's result (callers go in task order) and emits
// the windows that the task's watermark closed. r is left as it was.
func (a *Assembler) Merge(r *TaskResult, emit func(*Result) error) error {
	return a.merge(r, emit, false)
}

// MergeTake is Merge for a caller that resets r before reading it again (the
// engine's result stage): it may take the storage of r's fragment states
// for its panes, giving them empty storage of its own, so that their rows
// are not copied.
func (a *Assembler) MergeTake(r *TaskResult, emit func(*Result) error) error {
	return a.merge(r, emit, true)
}

func (a *Assembler) merge(r *TaskResult, emit func(*Result) error, take bool) error {
	if r.Refused {
		// The result stage reports the refused tuple before merging; a
		// refused result is incomplete and never merged.
		return fmt.Errorf("window: merge of a task whose tuple %d (position %d) was refused", r.RefusedAt, r.RefusedPos)
	}
	if d := a.dict; d != nil && d.pin == 0 && d.n > 0 {
		a.repin(r)
	}
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
		// (The watermark MinInt64, also that of no tuple, seals no pane:
		// Open(p) >= p's start >= MinInt64.)
		if a.wm > a.spec.Open(f.Pane) {
			c.Late += f.Tuples
			continue
		}
		// A pane's first fragment is copied (slot for slot where the tables
		// are of one size), later ones merged; an id-indexed pane finds
		// each group's id.
		if acc := a.pane(f.Pane); a.dict != nil {
			if f.State.layout != a.layout {
				panic(fmt.Sprintf("window: merge of group states with different layouts (%p, %p)", f.State.layout, a.layout))
			}
			acc.absorb(f.State, take)
		} else if acc.Empty() {
			acc.CopyFrom(f.State)
		} else {
			acc.Merge(f.State)
		}
		c.Counted += f.Tuples
	}
	if r.Tuples > 0 && r.MaxTS > a.wm {
		a.wm = r.MaxTS
	}
	return a.emit(false, math.MaxInt64, emit)
}

// Flush emits every window still open: the end of the input closes them all.
func (a *Assembler) Flush(emit func(*Result) error) error {
	return a.emit(true, math.MaxInt64, emit)
}

// pane returns the accumulator of pane p, inserting it in order.
func (a *Assembler) pane(p int64) *GroupState {
	i := sort.Search(len(a.live), func(i int) bool { return a.live[i].pane >= p })
	if i < a.held() {
		// A pane held by the aggregator changes, or a pane lands before
		// them. The lateness rule rules this out between flushes; should it
		// happen (a merge after Flush), rebuild the window from scratch.
		a.win.reset()
	}
	if i < len(a.live) && a.live[i].pane == p {
		return a.live[i].state
	}
	var st *GroupState
	switch n := len(a.free); {
	case n > 0:
		st, a.free = a.free[n-1], a.free[:n-1]
	case a.dict != nil:
		st = newIDState(a.layout, a.dict)
	default:
		st = NewGroupState(a.layout)
	}
	if n := len(a.live); n == cap(a.live) && 2*n <= cap(a.liveBuf) {
		copy(a.liveBuf, a.live)
		clear(a.liveBuf[n:])
		a.live = a.liveBuf[:n]
	}
	if c := cap(a.live); len(a.live) == c {
		a.live = append(a.live, paneAcc{})
		a.liveBuf = a.live[:cap(a.live)]
	} else {
		a.live = a.live[:len(a.live)+1]
	}
	copy(a.live[i+1:], a.live[i:])
	a.live[i] = paneAcc{pane: p, state: st}
	return st
}

// held is the number of panes the aggregator holds: live[:held()].
func (a *Assembler) held() int {
	if a.win == nil {
		return 0
	}
	return a.win.Len()
}

// emit emits the windows that the watermark closed (all of them when all is
// set, but for those from limit on where limit is not math.MaxInt64: a
// flush in steps), skipping windows that hold no pane.
func (a *Assembler) emit(all bool, limit int64, emit func(*Result) error) error {
	s := a.spec
	for len(a.live) > 0 {
		w := a.nextWindow()
		if !all && !s.Closed(w, a.wm) {
			return nil
		}
		if limit != math.MaxInt64 && w >= limit {
			return nil
		}
		lo, last := s.PaneSpan(w)
		var st *GroupState
		if a.tumbling {
			st = a.live[0].state // the window's only pane
		} else {
			// The aggregator holds live[:held()], the panes of the last
			// emitted window that are still live: they all lie in w, the
			// window after it. A window that does not overlap them (after a
			// jump over empty windows) starts afresh.
			if a.win.Len() > 0 && a.live[0].pane < lo {
				a.win.reset()
			}
			for n := a.win.Len(); n < len(a.live) && a.live[n].pane <= last; n++ {
				a.win.push(a.live[n].state)
			}
			st = a.win.query()
		}
		if st != nil && !st.Empty() {
			if err := a.emitWindow(w, st, emit); err != nil {
				return err
			}
		}
		// Every window up to w is done. w+1 saturates: w == MaxInt64
		// (Slide 1) holds the last pane, removed below, so nothing is live
		// after it.
		a.next, a.started = w+1, true
		if w == math.MaxInt64 {
			a.next = w
		}
		held := a.held()
		k := 0 // panes whose last window was w
		for k < len(a.live) && s.LastWindow(a.live[k].pane) <= w {
			if k < held {
				a.win.pop()
			}
			a.release(a.live[k].state)
			k++
		}
		clear(a.live[:k])
		a.live = a.live[k:]
	}
	return nil
}

// nextWindow is the next window emit looks at (live must hold a pane).
func (a *Assembler) nextWindow() int64 {
	w := a.spec.FirstWindow(a.live[0].pane)
	if a.started && a.next > w {
		w = a.next
	}
	return w
}

// release resets a pane accumulator that leaves the live panes and keeps it
// for reuse.
func (a *Assembler) release(st *GroupState) {
	if a.dict != nil {
		st.releaseIDs()
	} else {
		st.Reset()
	}
	a.free = append(a.free, st)
}

// emitWindow sorts st's groups, filters them into Rows and emits window w if
// any row is left.
func (a *Assembler) emitWindow(w int64, st *GroupState, emit func(*Result) error) error {
	if st.ids == nil {
		st.SortTouched() // an id-indexed state lists its groups in key order
	}
	rows := st.Touched // read-only for the sink
	if a.keep != nil {
		rows = a.rows[:0]
		for _, g := range st.Touched {
			if a.keep(st, g) {
				rows = append(rows, g)
			}
		}
		a.rows = rows
	}
	if len(rows) == 0 {
		return nil
	}
	a.out = Result{Window: w, Start: a.spec.Start(w), End: a.spec.End(w), State: st, Rows: rows}
	a.Counters.Windows++
	a.Counters.Rows += uint64(len(rows))
	return emit(&a.out)
}

// Stage is a query's result stage as the engine drives it: an Assembler
// (panes and windows) or Sessions (session windows).
type Stage interface {
	MergeTake(r *TaskResult, emit func(*Result) error) error
	Flush(emit func(*Result) error) error
	AppendSnapshot(dst []byte) []byte
	RestoreSnapshot(b []byte) ([]byte, error)
	Watermark() int64
	Complete() int64
	Counts() *Counters
	SetFilter(keep func(st *GroupState, group int32) bool)
}

// Counts are the counters (Counters).
func (a *Assembler) Counts() *Counters { return &a.Counters }
