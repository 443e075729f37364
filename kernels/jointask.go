package kernels

// A window join's tasks: a closed window's tuples (or a batch of
// consecutive windows'), gathered out of the panes, whose pairs any worker
// computes without the join's lock.

import (
	"encoding/binary"
	"math"
	"slices"
)

// JoinTask is the pair computation of one closed window, or of a few
// consecutive ones (a batch: WindowJoin.openBatch), whose pairs it
// writes in window order into one output: their tuples, in the panes'
// memory, and that output. A batch takes, hands back and hands on its
// windows at once, so that the join's lock and its ordered hand-off are
// paid per batch rather than per window. Tasks are reused from window to
// window, with their buffers and compiled predicate.
type JoinTask struct {
	plan  *pairPlan
	wins  []taskWindow // in window order; their buffers reused
	out   []byte
	done  bool
	empty bool         // a window with no tuples on a side, queued to be released in order
	st    *pairState   // compiled at the first Run
	owner *JoinScratch // TakeFor's: where its output buffer goes back (Recycle)
	views [2][][]byte
	cands int // the pairs its windows compare (openBatch)
}

// taskWindow is one window of a task.
type taskWindow struct {
	w     int64
	sides [2]taskSide
	pairs int // the window's bytes of the task's output (run)
	// prepared: the sides' data are gathered (prepare); sortInTask:
	// and to be ordered by position (a range window's).
	prepared, sortInTask bool
}

// window returns the task's next window, its buffers reused, for
// closeWindow to fill.
func (t *JoinTask) window() *taskWindow {
	if n := len(t.wins); n < cap(t.wins) {
		t.wins = t.wins[:n+1]
	} else {
		t.wins = append(t.wins, taskWindow{})
	}
	return &t.wins[len(t.wins)-1]
}

type taskSide struct {
	chunks [][]byte // the window's tuples, runs in its panes' inputs, in order
	n      int      // their bytes
	data   []byte   // the tuples in position order: a chunk, buf or sorted
	buf    []byte   // the chunks copied into one
	sorted []byte   // sortByPosition's copy
	keys   []sortKey
}

// sortKey orders a range window's tuples by event time, ties by their
// order of arrival: a stable sort by an unstable one.
type sortKey struct {
	pos int64
	i   int32
}

func cmpSortKey(a, b sortKey) int {
	switch {
	case a.pos < b.pos:
		return -1
	case a.pos > b.pos:
		return 1
	}
	return int(a.i - b.i)
}

// gather sets data to the side's tuples: its one chunk as it is where
// borrow says the join only reads them (the panes' memory, which other
// windows read too), else the chunks copied into buf.
func (s *taskSide) gather(borrow bool) {
	if borrow && len(s.chunks) == 1 {
		s.data = s.chunks[0]
		return
	}
	b := slices.Grow(s.buf[:0], s.n)
	for _, c := range s.chunks {
		b = append(b, c...)
	}
	s.buf, s.data = b, b
}

// sortByPosition orders the side's tuples (ts bytes each) by event time,
// stably, into a copy of its own; tuples in order (the common case) are
// left as they are.
func (s *taskSide) sortByPosition(ts int) {
	d := s.data
	n := len(d) / ts
	sorted := true
	prev := int64(math.MinInt64)
	for o := 0; o < len(d); o += ts {
		p := int64(binary.LittleEndian.Uint64(d[o:]))
		if p < prev {
			sorted = false
			break
		}
		prev = p
	}
	if sorted {
		return
	}
	keys := slices.Grow(s.keys[:0], n)[:n]
	for i := range keys {
		keys[i] = sortKey{pos: int64(binary.LittleEndian.Uint64(d[i*ts:])), i: int32(i)}
	}
	slices.SortFunc(keys, cmpSortKey)
	dst := slices.Grow(s.sorted[:0], len(d))
	for _, k := range keys {
		o := int(k.i) * ts
		dst = append(dst, d[o:o+ts]...)
	}
	s.keys, s.sorted, s.data = keys, dst, dst
}

// prepare gathers each side's tuples and orders them by position where
// the window is to (sortInTask), once.
func (tw *taskWindow) prepare(p *pairPlan) {
	if tw.prepared {
		return
	}
	tw.prepared = true
	for i, ts := range [2]int{p.lts, p.rts} {
		s := &tw.sides[i]
		// The pairs' filter of one side's terms compacts that side's
		// tuples in place (pairState.keep): a copy of its own.
		s.gather(!p.special || len(p.side[i]) == 0)
		if tw.sortInTask {
			s.sortByPosition(ts)
		}
	}
}

// tupleViews returns the tuples of the task's one window as the
// PairJoiner takes them.
func (t *JoinTask) tupleViews(lts, rts int) (l, r [][]byte) {
	for i, ts := range [2]int{lts, rts} {
		v := t.views[i][:0]
		d := t.wins[0].sides[i].data
		for o := 0; o < len(d); o += ts {
			v = append(v, d[o:o+ts:o+ts])
		}
		t.views[i] = v
	}
	return t.views[0], t.views[1]
}

// Window is the task's (first) window.
func (t *JoinTask) Window() int64 { return t.wins[0].w }

// Run computes the windows' pairs: per window, left tuples outer, right
// ones inner, in position order, the pairs for which WHERE holds. It
// touches only the task: any goroutine may run it, without the
// WindowJoin's lock.
func (t *JoinTask) Run() {
	if t.st == nil {
		t.st = t.plan.newState()
	}
	t.run(t.st)
}

// RunWith is Run on the caller's scratch (WindowJoin.NewScratch), which
// it uses alone while it runs: a worker's own, so that the predicate's
// columns, ranks and bitmaps stay in its cache from window to window
// instead of following the task from core to core.
func (t *JoinTask) RunWith(s *JoinScratch) {
	t.run(s.st)
}

func (t *JoinTask) run(st *pairState) {
	t.out = t.out[:0]
	for i := range t.wins {
		tw := &t.wins[i]
		tw.prepare(t.plan)
		n := len(t.out)
		t.out = st.join(t.plan, tw.sides[0].data, tw.sides[1].data, t.out)
		tw.pairs = len(t.out) - n
	}
}

// JoinScratch is the working memory of a window's pair computation, for
// one goroutine at a time (JoinTask.RunWith), and the output buffers of
// the windows it ran, once handed back (free: under the WindowJoin's
// caller's lock, as TakeFor and Recycle are).
type JoinScratch struct {
	st   *pairState
	free [][]byte
}

// NewScratch returns scratch for the join's tasks.
func (wj *WindowJoin) NewScratch() *JoinScratch { return &JoinScratch{st: wj.plan.newState()} }
