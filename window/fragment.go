package window

import (
	"math"
	"sync"

	"github.com/saber-hx/saber-hx/strview"
)

// Fragment is one task's partial aggregate of one pane: the tuples of the
// task that fell into the pane and were not late inside the task.
type Fragment struct {
	Pane   int64
	Tuples uint64 // tuples aggregated into State
	State  *GroupState
}

// TaskResult is what a processor returns for one task: its fragments and its
// counters. It is owned by the task and reused across tasks: Reset keeps the
// group states, so that steady state allocates nothing.
type TaskResult struct {
	Tuples    uint64 // tuples in the task
	MaxTS     int64  // largest event time in the task (the task's watermark)
	Filtered  uint64 // failed the selection
	Unmatched uint64 // no partner in a static join
	Late      uint64 // late against the watermark inside the task
	Frags     []Fragment
	// Out holds a stateless query's output tuples, in input order; its
	// storage is reused across tasks.
	Out []byte
	// Strings holds the bytes of the long strings the kernel computed for
	// Out's tuples (their views point here): valid until the next Reset,
	// after the result stage has handed Out on.
	Strings strview.Arena
	// Refused is set when the kernel refused a tuple as bad input: one that
	// passed WHERE and the join and whose position is below Spec.Lowest()
	// (its first window starts below math.MinInt64). RefusedAt is the
	// first such tuple's index in the task, RefusedPos its position. The
	// kernel stops there, so the rest of the result is incomplete: the
	// result stage fails the run instead of merging it.
	Refused    bool
	RefusedAt  int
	RefusedPos int64

	layout      *Layout
	spare       []*GroupState // states not in Frags, for reuse
	spareDirect []*GroupState // direct tables not in Frags
	// spareViews are Parts.Split's views not in Frags (resetSub).
	spareViews []*GroupState
	// pool, where set (SetPool), lends the states that spare and
	// spareDirect lack, and gets them all back once the task is merged
	// (TakeStates, GiveBack).
	pool *StatePool
}

// StatePool lends group states of one layout to the task results that
// use it (TaskResult.SetPool), so that states live with the tasks being
// run and merged rather than with every task record. A ring of tiny tasks
// has thousands of records in flight; a state kept by each made memory,
// and each record's first task (a direct table's arrays allocated, its
// keys written), grow with the records rather than with the workers. A
// result takes states as its kernel asks for them and gives them back
// uncleared once it is merged (TakeStates, GiveBack); the result that
// takes a state clears it, on its own worker. The lock is taken per
// fragment and per task, never per tuple.
type StatePool struct {
	layout *Layout
	mu     sync.Mutex
	states []*GroupState // as NewGroupState makes them, or grown by Lookup
	direct []*GroupState // direct tables (DirectFragment), of any slots
}

// NewStatePool returns an empty pool of layout l's states.
func NewStatePool(l *Layout) *StatePool { return &StatePool{layout: l} }

// Prealloc makes n states of the pool's layout ready, so that the first
// tasks that cross a pane boundary do not allocate.
func (p *StatePool) Prealloc(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.states) < n {
		p.states = append(p.states, NewGroupState(p.layout))
	}
}

// Len is the number of states the pool holds: direct tables and others.
func (p *StatePool) Len() (states, direct int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.states), len(p.direct)
}

// take returns a cleared state of the pool (a direct table where direct
// is set), or nil where it has none; p may be nil.
func (p *StatePool) take(direct bool) *GroupState {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	list := &p.states
	if direct {
		list = &p.direct
	}
	var st *GroupState
	if n := len(*list); n > 0 {
		st = (*list)[n-1]
		(*list)[n-1] = nil
		*list = (*list)[:n-1]
	}
	p.mu.Unlock()
	if st != nil {
		st.Reset()
	}
	return st
}

// SetPool makes r take the states its spares lack from p, for
// TakeStates to give back; r's layout becomes p's.
func (r *TaskResult) SetPool(p *StatePool) {
	r.Reset(p.layout)
	r.pool = p
}

// States is the number of group states r holds: its fragments' and its
// spares' (a partition's views, which hold no rows, aside).
func (r *TaskResult) States() int {
	n := len(r.spare) + len(r.spareDirect)
	for i := range r.Frags {
		if !r.Frags[i].State.view {
			n++
		}
	}
	return n
}

// TakeStates moves r's group states, its fragments' and its spares', to
// dst and returns it, once nothing reads them (the task is merged),
// leaving r with no fragment: GiveBack returns them to r's pool. So a
// merge, in its ordered stage, only moves pointers, and gives the states
// back (a lock the workers taking states share) once it has let go of
// the stage. Views (Parts.Split) stay with r, letting go of the tables
// they read. A result without a pool keeps its states for its next task
// (Reset), and dst is returned as it is.
func (r *TaskResult) TakeStates(dst []*GroupState) []*GroupState {
	p := r.pool
	if p == nil {
		return dst
	}
	for i := range r.Frags {
		if st := r.Frags[i].State; st.view {
			r.spareViews = append(r.spareViews, dropView(st))
		} else {
			st.pool = p
			dst = append(dst, st)
		}
	}
	for _, st := range r.spare {
		st.pool = p
	}
	for _, st := range r.spareDirect {
		st.pool = p
	}
	dst = append(append(dst, r.spare...), r.spareDirect...)
	clear(r.Frags)
	clear(r.spare)
	clear(r.spareDirect)
	r.Frags, r.spare, r.spareDirect = r.Frags[:0], r.spare[:0], r.spareDirect[:0]
	return dst
}

// GiveBack returns states that TakeStates took to the pools of the results
// they were taken from, uncleared (the result that takes one clears it).
func GiveBack(states []*GroupState) {
	var p *StatePool
	for _, st := range states {
		if st.pool != p {
			if p != nil {
				p.mu.Unlock()
			}
			p = st.pool
			p.mu.Lock()
		}
		if st.direct != 0 {
			p.direct = append(p.direct, st)
		} else {
			p.states = append(p.states, st)
		}
	}
	if p != nil {
		p.mu.Unlock()
	}
}

// Release is TakeStates and GiveBack at once.
func (r *TaskResult) Release() {
	var buf [8]*GroupState
	GiveBack(r.TakeStates(buf[:0]))
}

// Reset prepares r for a task of layout l.
func (r *TaskResult) Reset(l *Layout) {
	if r.layout != l {
		r.Frags, r.spare, r.spareDirect, r.layout = r.Frags[:0], r.spare[:0], r.spareDirect[:0], l
		if r.pool != nil && r.pool.layout != l {
			r.pool = nil
		}
	}
	for i := range r.Frags {
		st := r.Frags[i].State
		st.Reset()
		if st.direct != 0 {
			r.spareDirect = append(r.spareDirect, st)
		} else {
			r.spare = append(r.spare, st)
		}
	}
	r.Frags = r.Frags[:0]
	r.Out = r.Out[:0]
	r.Strings.Reset()
	r.Tuples, r.MaxTS, r.Filtered, r.Unmatched, r.Late = 0, math.MinInt64, 0, 0, 0
	r.Refused, r.RefusedAt, r.RefusedPos = false, 0, 0
}

// Refuse records tuple i of the task, at position pos, as refused (the
// first one only).
func (r *TaskResult) Refuse(i int, pos int64) {
	if !r.Refused {
		r.Refused, r.RefusedAt, r.RefusedPos = true, i, pos
	}
}

// Prealloc resets r for layout l and keeps n spare group states ready, so
// that the first tasks that cross a pane boundary do not allocate.
func (r *TaskResult) Prealloc(l *Layout, n int) {
	r.Reset(l)
	for len(r.spare) < n {
		r.spare = append(r.spare, NewGroupState(l))
	}
}

// Fragment returns the state of pane p, adding a fragment for it if the task
// has none yet. Kernels call it when a tuple leaves the current pane, not per
// tuple.
func (r *TaskResult) Fragment(p int64) *GroupState {
	for i := range r.Frags {
		if r.Frags[i].Pane == p {
			return r.Frags[i].State
		}
	}
	var st *GroupState
	if n := len(r.spare); n > 0 {
		st, r.spare = r.spare[n-1], r.spare[:n-1]
	} else if st = r.pool.take(false); st == nil {
		st = NewGroupState(r.layout)
	}
	r.Frags = append(r.Frags, Fragment{Pane: p, State: st})
	return st
}

// DirectFragment is Fragment for a kernel that computes its groups' slots
// itself (a hashed layout whose key parts are small integers: a dense
// index of them): where the task has no fragment for pane p yet, it adds
// one whose state is a direct table of slots slots under the kernel's
// mapping number mapping (not 0). A fragment the task has already is
// returned as it is, direct under another mapping or not direct at all:
// the kernel checks Direct before writing into it, and Undirect makes it
// a probed table. The kernel writes a direct table's rows as a probed
// table's (count word first, Touched listing its slots), and each slot's
// key in Keys (or every slot's key at once: SetKeysFor).
func (r *TaskResult) DirectFragment(p int64, slots int, mapping uint32) *GroupState {
	for i := range r.Frags {
		if r.Frags[i].Pane == p {
			return r.Frags[i].State
		}
	}
	st := r.spareDirectState(slots)
	if len(st.Keys) < 2*slots {
		st.Keys = make([]uint64, 2*slots)
		st.keysFor = 0
	}
	st.direct, st.mask, st.dslots = mapping, 0, int32(slots)
	r.Frags = append(r.Frags, Fragment{Pane: p, State: st})
	return st
}

// spareDirectState is a direct table's state for slots slots: a spare
// one, or a new one, its Vals and Touched ready (its Keys are the
// caller's to size and fill).
func (r *TaskResult) spareDirectState(slots int) *GroupState {
	var st *GroupState
	if n := len(r.spareDirect); n > 0 {
		st, r.spareDirect = r.spareDirect[n-1], r.spareDirect[:n-1]
	} else if st = r.pool.take(true); st == nil {
		st = &GroupState{layout: r.layout, words: r.layout.Words()}
	}
	// Vals and Keys are sized apart: an assembler may have swapped Vals
	// for storage of another size (Assembler.MergeTake), and a pane may
	// have taken Vals and left storage of its own.
	if len(st.Vals) < slots*st.words {
		st.Vals = make([]int64, slots*st.words)
	}
	if st.Touched == nil {
		st.Touched = make([]int32, 0, min(slots, 1024))
	}
	return st
}

// Count adds a kernel's counters for n tuples whose largest event time is
// maxTS.
func (r *TaskResult) Count(n uint64, maxTS int64, filtered, unmatched, late uint64) {
	r.Tuples += n
	r.MaxTS = max(r.MaxTS, maxTS)
	r.Filtered += filtered
	r.Unmatched += unmatched
	r.Late += late
}

// AddTuples counts n tuples aggregated into pane p's fragment.
func (r *TaskResult) AddTuples(p int64, n uint64) {
	for i := range r.Frags {
		if r.Frags[i].Pane == p {
			r.Frags[i].Tuples += n
			return
		}
	}
	panic("window: AddTuples for a pane without fragment")
}
