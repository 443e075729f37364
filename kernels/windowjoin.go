package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// WindowJoin is the operator of a window join (query.WindowJoin): it files
// each side's tuples, in stream order, into panes, and once both
// watermarks have passed a window's end closes the window into a JoinTask:
// the window's left and right tuples, copied out of the panes in position
// order. A task's pairs are computed by JoinTask.Run, outside the caller's
// lock, by whichever goroutine takes it (Take), so that the windows of one
// join are joined in parallel; Done hands the task back, and each window's
// output waits in a queue (Next) in window order, whatever order the tasks
// finish in. Its buffer comes back through Recycle.
//
// With a PairJoiner (the GPU's join program), JoinClosed has it compute
// each window's pairs as it closes the window (the program is not safe for
// concurrent use, and JoinClosed runs under the caller's lock); a window it
// refuses becomes a task.
//
// A WindowJoin is not safe for concurrent use: its caller (the engine's
// join stage) holds a lock around every call but JoinTask.Run.
type WindowJoin struct {
	j       *query.WindowJoin
	spec    window.Spec
	lowest  int64 // spec.LowestPane(): a tuple of a pane below it is refused
	rows    bool
	outSize int
	plan    *pairPlan
	pj      PairJoiner // nil: the pairs are computed by the tasks

	sides   [2]joinSide
	next    int64 // windows before next were closed
	started bool
	// queue holds the closed windows' tasks in window order, from head;
	// the ones from taken on wait to be taken.
	queue       []*JoinTask
	head, taken int
	runnable    int // tasks from taken on that are not done
	freeTasks   []*JoinTask
	free        [][]byte // output buffers
	windows     uint64
	joined      uint64 // windows done (Joined)
	outPairs    uint64
	// pjWindows counts the windows whose pairs the PairJoiner computed;
	// pjFallbacks the windows it refused (too many pairs).
	pjWindows, pjFallbacks uint64
}

// PairJoiner computes a window's pairs elsewhere (the GPU's join program).
type PairJoiner interface {
	// Join appends to out the pairs of the window whose left tuples are
	// left and right tuples right, in WindowJoin's order (left tuples
	// outer, right inner, pairs that fail WHERE left out), and returns
	// it. ok false: the pairs do not fit; out is returned unchanged and
	// the WindowJoin joins the window itself.
	Join(left, right [][]byte, out []byte) (res []byte, ok bool, err error)
}

type joinSide struct {
	tupleSize int
	wm        int64
	index     int64 // position of the next tuple in a row window
	done      bool
	panes     []joinPane // sorted by pane
	base      []joinPane // the array under panes, all of it (insert)
	spare     [][]byte   // the data buffers of dropped panes, for new ones
	hint      int        // the most bytes a dropped pane held: a new pane's capacity
	tuples    uint64
	late      uint64
	dropped   uint64 // tuples of the panes dropped
}

type joinPane struct {
	pane int64
	data []byte
}

// NewWindowJoin validates j and compiles its WHERE.
func NewWindowJoin(j *query.WindowJoin) (*WindowJoin, error) {
	if err := j.Validate(); err != nil {
		return nil, err
	}
	spec, err := window.NewSpec(j.Window)
	if err != nil {
		return nil, err
	}
	wj := &WindowJoin{
		j: j, spec: spec, lowest: spec.LowestPane(), rows: j.Window.Type == query.Rows,
		outSize: j.Left.TupleSize + j.Right.TupleSize,
	}
	if wj.plan, err = newPairPlan(j); err != nil {
		return nil, fmt.Errorf("join %q: %w", j.Name, err)
	}
	for i, s := range []*query.Schema{j.Left, j.Right} {
		wj.sides[i] = joinSide{tupleSize: s.TupleSize, wm: math.MinInt64}
	}
	return wj, nil
}

// UsePairJoiner makes pj compute the pairs of every window closed from now
// on (nil: the tasks compute them).
func (wj *WindowJoin) UsePairJoiner(pj PairJoiner) { wj.pj = pj }

// Refused is a tuple Add refused: its first window would start below
// math.MinInt64.
type Refused struct {
	Tuple uint64 // its index in its side's stream
	Pos   int64  // its position (event time, or its index in a row window)
}

// Add files side's tuples (0 left, 1 right), which follow the ones added
// before in stream order. It stops at a tuple whose first window would
// start below math.MinInt64 and returns it with ok false; the tuples before
// it are filed. Tuples behind the side's watermark by more than a window's
// reach are counted late and dropped. Add joins nothing: JoinClosed closes
// the windows, the tasks join them.
func (wj *WindowJoin) Add(side int, tuples []byte) (r Refused, ok bool) {
	sd := &wj.sides[side]
	ts := sd.tupleSize
	// The pane of the tuple before, its positions and its Open: the next
	// tuple mostly falls in it. run is where the tuples filed into pane p
	// and not yet copied begin (-1: none), copied in one append each.
	var p, pStart, pLast, open int64
	have, run := false, -1
	var pn *joinPane
	for o := 0; o+ts <= len(tuples); o += ts {
		pos := sd.index
		if !wj.rows {
			pos = int64(binary.LittleEndian.Uint64(tuples[o:]))
		}
		if !have || pos < pStart || pos > pLast {
			if run >= 0 {
				pn.data = append(pn.data, tuples[run:o]...)
				run = -1
			}
			np := wj.spec.PaneOf(pos)
			if np < wj.lowest {
				return Refused{Tuple: uint64(sd.index), Pos: pos}, false
			}
			p, pStart, pLast, open = np, wj.spec.PaneStart(np), wj.spec.PaneLast(np), wj.spec.Open(np)
			have, pn = true, nil
		}
		sd.index++
		sd.tuples++
		prev := sd.wm
		sd.wm = max(sd.wm, pos)
		if prev > open {
			if run >= 0 {
				pn.data = append(pn.data, tuples[run:o]...)
				run = -1
			}
			sd.late++
			continue
		}
		if run < 0 {
			if pn == nil {
				pn = sd.pane(p)
			}
			run = o
		}
	}
	if run >= 0 {
		pn.data = append(pn.data, tuples[run:len(tuples)/ts*ts]...)
	}
	return Refused{}, true
}

// Lead reports how far side runs ahead of the other: the bytes of tuples
// it holds in panes, and whether its watermark is past the other's by more
// than a window while the other's input goes on (the windows it holds
// tuples for wait for the other side). The engine holds such a side back.
func (wj *WindowJoin) Lead(side int) (held int, ahead bool) {
	sd, o := &wj.sides[side], &wj.sides[1-side]
	ahead = !o.done && sd.wm > o.wm && uint64(sd.wm)-uint64(o.wm) > uint64(wj.j.Window.Size)
	return int(sd.tuples-sd.late-sd.dropped) * sd.tupleSize, ahead
}

// Added is how many tuples side's input brought so far.
func (wj *WindowJoin) Added(side int) uint64 { return wj.sides[side].tuples }

// Joined is how many closed windows were joined so far (Done, or by the
// PairJoiner), empty ones included.
func (wj *WindowJoin) Joined() uint64 { return wj.joined }

// Finish marks side's input ended and reports whether both are.
func (wj *WindowJoin) Finish(side int) (all bool) {
	wj.sides[side].done = true
	return wj.sides[0].done && wj.sides[1].done
}

func (sd *joinSide) pane(p int64) *joinPane {
	if n := len(sd.panes); n > 0 && sd.panes[n-1].pane == p {
		return &sd.panes[n-1]
	}
	i, found := slices.BinarySearchFunc(sd.panes, p, func(a joinPane, p int64) int {
		switch {
		case a.pane < p:
			return -1
		case a.pane > p:
			return 1
		}
		return 0
	})
	if !found {
		pn := joinPane{pane: p}
		if n := len(sd.spare); n > 0 {
			pn.data, sd.spare = sd.spare[n-1][:0], sd.spare[:n-1]
		} else if sd.hint > 0 {
			pn.data = make([]byte, 0, sd.hint)
		}
		sd.insert(i, pn)
	}
	return &sd.panes[i]
}

// insert puts pn at index i of the panes. The panes are a window onto
// base that drop moves forward: when it reaches base's end, the panes move
// back to its start if they fill at most half of it, else to a base twice
// their size, so that neither dropping nor filing copies every pane each
// time (a side far ahead of the other holds thousands).
func (sd *joinSide) insert(i int, pn joinPane) {
	if n := len(sd.panes); n == cap(sd.panes) {
		if dead := cap(sd.base) - cap(sd.panes); dead >= n && dead > 0 {
			copy(sd.base, sd.panes)
			clear(sd.base[n : n+dead])
			sd.panes = sd.base[:n]
		} else {
			sd.base = make([]joinPane, 2*n+16)
			copy(sd.base, sd.panes)
			sd.panes = sd.base[:n]
		}
	}
	sd.panes = slices.Insert(sd.panes, i, pn)
}

// drop removes the first k panes, keeping their buffers for new panes.
func (sd *joinSide) drop(k int) {
	if k == 0 {
		return
	}
	for _, pn := range sd.panes[:k] {
		sd.dropped += uint64(len(pn.data) / sd.tupleSize)
		if pn.data != nil {
			sd.hint = max(sd.hint, len(pn.data))
			sd.spare = append(sd.spare, pn.data[:0])
		}
	}
	clear(sd.panes[:k])
	sd.panes = sd.panes[k:]
}

// JoinClosed closes every window whose end both watermarks passed (all of
// them when all is set), in window order, into tasks (Take), or with a
// PairJoiner has it join them. When the PairJoiner fails on a window, the
// window becomes a task, the PairJoiner is dropped (every later window
// becomes a task too), and JoinClosed returns the window and the error
// once it has closed the rest: the caller fails its run and closes the
// PairJoiner.
func (wj *WindowJoin) JoinClosed(all bool) (failed int64, err error) {
	s := wj.spec
	limit := int64(math.MaxInt64)
	for i := range wj.sides {
		if !wj.sides[i].done {
			limit = min(limit, wj.sides[i].wm)
		}
	}
	if limit == math.MinInt64 {
		return 0, nil // closes nothing
	}
	for {
		first, any := int64(math.MaxInt64), false
		for i := range wj.sides {
			if ps := wj.sides[i].panes; len(ps) > 0 {
				first, any = min(first, s.FirstWindow(ps[0].pane)), true
			}
		}
		if !any {
			return failed, err
		}
		w := first
		if wj.started && wj.next > w {
			w = wj.next
		}
		if !all && !s.Closed(w, limit) {
			return failed, err
		}
		if werr := wj.closeWindow(w); werr != nil && err == nil {
			failed, err = w, werr
		}
		// Every window up to w is done; w+1 saturates (w == MaxInt64
		// holds the last pane, removed below).
		wj.next, wj.started = w+1, true
		if w == math.MaxInt64 {
			wj.next = w
		}
		for i := range wj.sides {
			sd := &wj.sides[i]
			k := 0
			for k < len(sd.panes) && s.LastWindow(sd.panes[k].pane) <= w {
				k++
			}
			sd.drop(k)
		}
	}
}

// closeWindow copies window w's tuples into a task (left tuples ordered by
// position, stably, then right ones) and queues it, or has the PairJoiner
// compute its pairs. It returns the PairJoiner's error, having dropped it
// and queued the window as a task.
func (wj *WindowJoin) closeWindow(w int64) error {
	lo, last := wj.spec.PaneSpan(w)
	var t *JoinTask
	if n := len(wj.freeTasks); n > 0 {
		t, wj.freeTasks = wj.freeTasks[n-1], wj.freeTasks[:n-1]
	} else {
		t = &JoinTask{plan: wj.plan}
	}
	for i := range t.sides {
		ts := &t.sides[i]
		ts.data = wj.sides[i].gather(ts.data[:0], lo, last)
		if !wj.rows {
			ts.sortByPosition(wj.sides[i].tupleSize)
		}
	}
	if len(t.sides[0].data) == 0 || len(t.sides[1].data) == 0 {
		wj.freeTasks = append(wj.freeTasks, t)
		return nil
	}
	t.w, t.done = w, false
	wj.queue = append(wj.queue, t)
	var err error
	if wj.pj != nil {
		wj.outBuffer(t)
		// The PairJoiner runs here, and the task is done: Take skips it.
		l, r := t.tupleViews(wj.sides[0].tupleSize, wj.sides[1].tupleSize)
		res, ok, jerr := wj.pj.Join(l, r, t.out)
		switch {
		case jerr != nil:
			// The caller fails the run; the window is joined by its
			// task meanwhile.
			wj.pj, err = nil, jerr
		case ok:
			wj.pjWindows++
			t.out = res
			wj.Done(t)
			return nil
		default:
			wj.pjFallbacks++
		}
	}
	wj.runnable++
	return err
}

// gather appends the side's tuples in panes [lo, last] to dst.
func (sd *joinSide) gather(dst []byte, lo, last int64) []byte {
	for _, pn := range sd.panes {
		if pn.pane > last {
			break
		}
		if pn.pane >= lo {
			dst = append(dst, pn.data...)
		}
	}
	return dst
}

// Take returns the next closed window's task to run (JoinTask.Run, without
// the caller's lock), or nil when none waits. Hand it back with Done.
func (wj *WindowJoin) Take() *JoinTask {
	for wj.taken < len(wj.queue) {
		t := wj.queue[wj.taken]
		wj.taken++
		if !t.done { // done: the PairJoiner's
			wj.runnable--
			wj.outBuffer(t)
			return t
		}
	}
	return nil
}

// outBuffer gives t a recycled output buffer, if there is one (and t has
// none: the PairJoiner refused its window). Buffers go to tasks as they
// start rather than as windows close, so that a catching-up side closing
// many windows at once does not hold a buffer for each.
func (wj *WindowJoin) outBuffer(t *JoinTask) {
	if n := len(wj.free); t.out == nil && n > 0 {
		t.out, wj.free = wj.free[n-1][:0], wj.free[:n-1]
	}
}

// Runnable is how many tasks wait to be taken.
func (wj *WindowJoin) Runnable() int { return wj.runnable }

// Done takes back a task Take returned, once it ran: its window's output
// joins the queue of Next.
func (wj *WindowJoin) Done(t *JoinTask) {
	t.done = true
	wj.joined++
	if len(t.out) > 0 {
		wj.windows++
		wj.outPairs += uint64(len(t.out) / wj.outSize)
	}
}

// Pending is how many closed windows' outputs are not yet taken off the
// queue by Next: waiting to be taken, running, or joined.
func (wj *WindowJoin) Pending() int { return len(wj.queue) - wj.head }

// Ready reports whether Next has a window's output, or an empty window to
// drop: whether the oldest pending window is joined.
func (wj *WindowJoin) Ready() bool {
	return wj.head < len(wj.queue) && wj.queue[wj.head].done
}

// Next takes the oldest closed window's output (its pairs, each the left
// tuple's bytes then the right one's) off the queue once it is joined; ok
// false when none is (or none waits). Windows without pairs are skipped.
// Hand the buffer back with Recycle once it is used.
func (wj *WindowJoin) Next() (out []byte, ok bool) {
	for wj.Ready() {
		t := wj.queue[wj.head]
		wj.queue[wj.head] = nil
		wj.head++
		wj.taken = max(wj.taken, wj.head) // past a PairJoiner's task
		if wj.head == len(wj.queue) {
			wj.queue, wj.head, wj.taken = wj.queue[:0], 0, 0
		} else if wj.head >= 64 && 2*wj.head >= len(wj.queue) {
			n := copy(wj.queue, wj.queue[wj.head:])
			clear(wj.queue[n:])
			wj.queue, wj.taken, wj.head = wj.queue[:n], wj.taken-wj.head, 0
		}
		out, t.out = t.out, nil
		wj.freeTasks = append(wj.freeTasks, t)
		if len(out) > 0 {
			return out, true
		}
		if out != nil {
			wj.free = append(wj.free, out)
		}
	}
	return nil, false
}

// Recycle takes back a buffer Next returned, for a later window's output.
func (wj *WindowJoin) Recycle(out []byte) { wj.free = append(wj.free, out) }

// WindowJoinStats are a WindowJoin's counters, both inputs together.
type WindowJoinStats struct {
	Tuples  uint64 // tuples added
	Late    uint64 // of them, dropped as late
	Windows uint64 // windows with at least one pair
	Pairs   uint64 // output pairs
	// PairJoined counts the windows whose pairs the PairJoiner computed,
	// PairFallbacks the ones it refused (too many pairs), joined by tasks.
	PairJoined, PairFallbacks uint64
}

// Stats returns the counters (of the windows done so far).
func (wj *WindowJoin) Stats() WindowJoinStats {
	st := WindowJoinStats{Windows: wj.windows, Pairs: wj.outPairs, PairJoined: wj.pjWindows, PairFallbacks: wj.pjFallbacks}
	for _, sd := range wj.sides {
		st.Tuples += sd.tuples
		st.Late += sd.late
	}
	return st
}

// JoinTask is one closed window's pair computation: its tuples, copied out
// of the panes, and its output. Tasks are reused from window to window,
// with their buffers and compiled predicate.
type JoinTask struct {
	plan  *pairPlan
	w     int64
	sides [2]taskSide
	out   []byte
	done  bool
	st    *pairState // compiled at the first Run
	views [2][][]byte
}

type taskSide struct {
	data  []byte // the window's tuples in position order
	spare []byte // the sort's second buffer
	keys  []sortKey
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

// sortByPosition orders the side's tuples (ts bytes each) by event time,
// stably; tuples in order (the common case) are left as they are.
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
	dst := slices.Grow(s.spare[:0], len(d))
	for _, k := range keys {
		o := int(k.i) * ts
		dst = append(dst, d[o:o+ts]...)
	}
	s.keys, s.spare, s.data = keys, d, dst
}

// tupleViews returns the task's tuples as the PairJoiner takes them.
func (t *JoinTask) tupleViews(lts, rts int) (l, r [][]byte) {
	for i, ts := range [2]int{lts, rts} {
		v := t.views[i][:0]
		d := t.sides[i].data
		for o := 0; o < len(d); o += ts {
			v = append(v, d[o:o+ts:o+ts])
		}
		t.views[i] = v
	}
	return t.views[0], t.views[1]
}

// Window is the task's window.
func (t *JoinTask) Window() int64 { return t.w }

// Run computes the window's pairs: left tuples outer, right ones inner,
// in position order, the pairs for which WHERE holds. It touches only the
// task: any goroutine may run it, without the WindowJoin's lock.
func (t *JoinTask) Run() {
	if t.st == nil {
		t.st = t.plan.newState()
	}
	t.out = t.st.join(t.plan, t.sides[0].data, t.sides[1].data, t.out[:0])
}

// pairPlan is a window join's WHERE compiled for the pair loop, once per
// join; each task compiles its own pairState from it (the vectorised
// expressions hold registers).
//
// A conjunction of comparisons that each compare an expression of the left
// tuple with one of the right tuple (cross terms: l.a < r.a), or involve one
// side only, runs specialised: one-side terms filter that side's tuples
// before the loop, each cross term's two operands are evaluated once per
// window into typed slices (one value per tuple), and the pairs are found
// left tuple by left tuple with one loop per operator and type over the
// right side's values, no call per pair. A comparison of the difference
// (or sum) of two int32 columns of opposite sides with an integer constant
// (JOIN_r's l.a - r.a >= -1000) is a cross term too: l.a >= r.a - 1000 is
// exact where no int64 can overflow, which int32 columns and a constant
// within ±2^60 guarantee. Any other WHERE (OR, arithmetic over both sides)
// is evaluated over chunks of candidate pairs, as before.
type pairPlan struct {
	lts, rts int
	special  bool
	cross    []crossTerm
	side     [2][]query.Expr // one-side terms (constant-only ones on the left)
	schemas  [2]*query.Schema
	where    query.Expr // the general path's predicate
	out      *query.Schema
	emit     emitter
}

type crossTerm struct {
	op   query.CmpOp
	l, r query.Expr // over the left and the right tuple
}

// maxRewriteConst bounds the constant of a rewritten difference, so that
// an int32 column plus or minus it cannot overflow.
const maxRewriteConst = 1 << 60

func newPairPlan(j *query.WindowJoin) (*pairPlan, error) {
	p := &pairPlan{lts: j.Left.TupleSize, rts: j.Right.TupleSize, out: j.OutputSchemaUnchecked(),
		emit: emitterFor(j.Left.TupleSize, j.Right.TupleSize)}
	for i, s := range []*query.Schema{j.Left, j.Right} {
		prefix := [2]string{query.LeftPrefix, query.RightPrefix}[i]
		ss := &query.Schema{TupleSize: s.TupleSize}
		for _, a := range s.Attrs {
			a.Name = prefix + a.Name
			ss.Attrs = append(ss.Attrs, a)
		}
		p.schemas[i] = ss
	}
	p.special = true
	if j.Where != nil {
		for _, term := range conjuncts(j.Where, nil) {
			if !p.addTerm(term) {
				p.special = false
				break
			}
		}
	}
	if !p.special {
		p.cross, p.side, p.where = nil, [2][]query.Expr{}, j.Where
	}
	// Compile once here: what fails to compile fails the join now, not a
	// task later.
	if _, err := p.compile(); err != nil {
		return nil, err
	}
	return p, nil
}

// conjuncts appends the terms of e's top-level ANDs to ts.
func conjuncts(e query.Expr, ts []query.Expr) []query.Expr {
	if a, ok := e.(query.AndExpr); ok && len(a.Terms) > 0 {
		for _, t := range a.Terms {
			ts = conjuncts(t, ts)
		}
		return ts
	}
	return append(ts, e)
}

// sidesOf is the sides e reads: bit 0 the left tuple, bit 1 the right one.
func sidesOf(e query.Expr) int {
	switch e := e.(type) {
	case query.Column:
		switch {
		case len(e.Name) >= 2 && e.Name[:2] == query.LeftPrefix:
			return 1
		case len(e.Name) >= 2 && e.Name[:2] == query.RightPrefix:
			return 2
		}
		return 3
	case query.Arith:
		return sidesOf(e.L) | sidesOf(e.R)
	case query.Compare:
		return sidesOf(e.L) | sidesOf(e.R)
	case query.AndExpr:
		m := 0
		for _, t := range e.Terms {
			m |= sidesOf(t)
		}
		return m
	case query.OrExpr:
		m := 0
		for _, t := range e.Terms {
			m |= sidesOf(t)
		}
		return m
	}
	return 0
}

// addTerm files one term of the conjunction; false: the pair loop cannot
// run it.
func (p *pairPlan) addTerm(term query.Expr) bool {
	switch m := sidesOf(term); m {
	case 0, 1:
		p.side[0] = append(p.side[0], term)
		return true
	case 2:
		p.side[1] = append(p.side[1], term)
		return true
	}
	c, ok := term.(query.Compare)
	if !ok {
		return false
	}
	ml, mr := sidesOf(c.L), sidesOf(c.R)
	switch {
	case ml == 1 && mr == 2:
		p.cross = append(p.cross, crossTerm{op: c.Op, l: c.L, r: c.R})
		return true
	case ml == 2 && mr == 1:
		p.cross = append(p.cross, crossTerm{op: c.Op.Mirror(), l: c.R, r: c.L})
		return true
	}
	// (X - Y) op k, (X + Y) op k, or k op (...): the constant on the right.
	a, op, k := c.L, c.Op, c.R
	if mr == 3 {
		a, op, k = c.R, c.Op.Mirror(), c.L
	}
	ar, ok1 := a.(query.Arith)
	kc, ok2 := k.(query.IntConst)
	if !ok1 || !ok2 || kc.V > maxRewriteConst || kc.V < -maxRewriteConst || (ar.Op != query.OpSub && ar.Op != query.OpAdd) {
		return false
	}
	x, ok1 := ar.L.(query.Column)
	y, ok2 := ar.R.(query.Column)
	if !ok1 || !ok2 || !p.isInt32(x.Name) || !p.isInt32(y.Name) {
		return false
	}
	switch {
	case ar.Op == query.OpAdd && sidesOf(x) != sidesOf(y):
		// l + r op k: l op k - r.
		if sidesOf(x) == 2 {
			x, y = y, x
		}
		p.cross = append(p.cross, crossTerm{op: op, l: x, r: query.Sub(query.Int(kc.V), y)})
	case ar.Op == query.OpSub && sidesOf(x) == 1 && sidesOf(y) == 2:
		// l - r op k: l op r + k.
		p.cross = append(p.cross, crossTerm{op: op, l: x, r: query.Add(y, query.Int(kc.V))})
	case ar.Op == query.OpSub && sidesOf(x) == 2 && sidesOf(y) == 1:
		// r - l op k: l - r op' -k (op' mirrored), l op' r - k.
		p.cross = append(p.cross, crossTerm{op: op.Mirror(), l: y, r: query.Add(x, query.Int(-kc.V))})
	default:
		return false
	}
	return true
}

func (p *pairPlan) isInt32(name string) bool {
	a, err := p.out.Lookup(name)
	return err == nil && a.Type == query.Int32
}

// pairState is a task's compiled pairPlan, with the buffers of its loop.
type pairState struct {
	cross  []crossState
	side   [2]*Filter
	filter *Filter // the general path's
	pairs  []byte  // the general path's chunk of candidate pairs
	iota   []int32 // 0, 1, ...: a chunk's selection of every tuple
	sel    []int32 // the right tuples paired with one left tuple
	all    []int32 // 0, 1, ... over the right side, for no cross term
}

// crossState is a cross term's operands, compiled and evaluated over the
// window's left and right tuples (as integers, or floats where either is).
type crossState struct {
	op     query.CmpOp
	float  bool
	l, r   *vexpr
	li, ri []int64
	lf, rf []float64
}

func (p *pairPlan) newState() *pairState {
	st, err := p.compile()
	if err != nil {
		panic(fmt.Sprintf("kernels: window join predicate compiled at NewWindowJoin fails now: %v", err))
	}
	return st
}

func (p *pairPlan) compile() (*pairState, error) {
	st := &pairState{iota: make([]int32, chunk)}
	for i := range st.iota {
		st.iota[i] = int32(i)
	}
	if !p.special {
		if p.where != nil {
			f, err := NewFilter(p.where, p.out)
			if err != nil {
				return nil, err
			}
			st.filter = f
		}
		st.pairs = make([]byte, 0, FilterChunk*(p.lts+p.rts))
		return st, nil
	}
	for i, terms := range p.side {
		if len(terms) == 0 {
			continue
		}
		e := terms[0]
		if len(terms) > 1 {
			e = query.And(terms...)
		}
		f, err := NewFilter(e, p.schemas[i])
		if err != nil {
			return nil, err
		}
		st.side[i] = f
	}
	for _, c := range p.cross {
		l, err := compileExpr(c.l, p.schemas[0])
		if err != nil {
			return nil, err
		}
		r, err := compileExpr(c.r, p.schemas[1])
		if err != nil {
			return nil, err
		}
		cs := crossState{op: c.op, float: l.float || r.float}
		if cs.float {
			l, r = toFloat(l), toFloat(r)
		}
		cs.l, cs.r = l, r
		st.cross = append(st.cross, cs)
	}
	return st, nil
}

// join appends to out the pairs of the window whose tuples are left and
// right (in position order) and returns it.
func (st *pairState) join(p *pairPlan, left, right, out []byte) []byte {
	if !p.special {
		return st.joinChunks(p, left, right, out)
	}
	lts, rts := p.lts, p.rts
	left = st.keep(st.side[0], left, lts)
	right = st.keep(st.side[1], right, rts)
	nl, nr := len(left)/lts, len(right)/rts
	if nl == 0 || nr == 0 {
		return out
	}
	for i := range st.cross {
		c := &st.cross[i]
		if c.float {
			c.lf = evalAll(c.l, left, lts, c.lf[:0], st.iota, func(v *vexpr) []float64 { return v.flts })
			c.rf = evalAll(c.r, right, rts, c.rf[:0], st.iota, func(v *vexpr) []float64 { return v.flts })
		} else {
			c.li = evalAll(c.l, left, lts, c.li[:0], st.iota, func(v *vexpr) []int64 { return v.ints })
			c.ri = evalAll(c.r, right, rts, c.ri[:0], st.iota, func(v *vexpr) []int64 { return v.ints })
		}
	}
	if cap(st.sel) < nr {
		st.sel = make([]int32, nr)
	}
	if len(st.cross) == 0 {
		if len(st.all) < nr {
			st.all = make([]int32, nr)
			for j := range st.all {
				st.all[j] = int32(j)
			}
		}
		for i := range nl {
			out = p.emit(out, left[i*lts:(i+1)*lts], right, rts, st.all[:nr])
		}
		return out
	}
	c0, rest := &st.cross[0], st.cross[1:]
	for i := range nl {
		var sel []int32
		if c0.float {
			sel = cmpFirst(c0.op, c0.lf[i], c0.rf, st.sel[:nr])
		} else {
			sel = cmpFirst(c0.op, c0.li[i], c0.ri, st.sel[:nr])
		}
		for k := range rest {
			if len(sel) == 0 {
				break
			}
			c := &rest[k]
			if c.float {
				sel = cmpNarrow(c.op, c.lf[i], c.rf, sel)
			} else {
				sel = cmpNarrow(c.op, c.li[i], c.ri, sel)
			}
		}
		if len(sel) > 0 {
			out = p.emit(out, left[i*lts:(i+1)*lts], right, rts, sel)
		}
	}
	return out
}

// keep compacts data (tuples of ts bytes) to the tuples f passes, in
// order, in place; f nil passes every tuple.
func (st *pairState) keep(f *Filter, data []byte, ts int) []byte {
	if f == nil {
		return data
	}
	w := 0
	for c := 0; c < len(data); c += FilterChunk * ts {
		part := data[c:min(len(data), c+FilterChunk*ts)]
		for _, i := range f.Keep(part, ts) {
			o := c + int(i)*ts
			w += copy(data[w:w+ts], data[o:o+ts])
		}
	}
	return data[:w]
}

// evalAll evaluates v over every tuple of data, a chunk at a time, and
// appends the values (reg: v's register) to dst.
func evalAll[T number](v *vexpr, data []byte, ts int, dst []T, iota []int32, reg func(*vexpr) []T) []T {
	for c := 0; c < len(data); c += chunk * ts {
		part := data[c:min(len(data), c+chunk*ts)]
		n := len(part) / ts
		v.eval(part, ts, iota[:n])
		dst = append(dst, reg(v)[:n]...)
	}
	return dst
}

// cmpFirst writes into sel (len(g) long) the indexes j for which a op g[j]
// holds, in order, and returns them: one loop per operator, the index
// written whether or not it holds and kept by advancing, no branch per
// pair. The writes go through a pointer: n <= j < len(sel), which the
// compiler cannot prove, and its bounds check would double the loop.
func cmpFirst[T number](op query.CmpOp, a T, g []T, sel []int32) []int32 {
	sel = sel[:len(g)]
	if len(g) == 0 {
		return sel
	}
	p := unsafe.Pointer(unsafe.SliceData(sel))
	n := 0
	switch op {
	case query.Eq:
		for j, v := range g {
			*(*int32)(unsafe.Add(p, 4*n)) = int32(j)
			n += b2i(a == v)
		}
	case query.Ne:
		for j, v := range g {
			*(*int32)(unsafe.Add(p, 4*n)) = int32(j)
			n += b2i(a != v)
		}
	case query.Lt:
		for j, v := range g {
			*(*int32)(unsafe.Add(p, 4*n)) = int32(j)
			n += b2i(a < v)
		}
	case query.Le:
		for j, v := range g {
			*(*int32)(unsafe.Add(p, 4*n)) = int32(j)
			n += b2i(a <= v)
		}
	case query.Gt:
		for j, v := range g {
			*(*int32)(unsafe.Add(p, 4*n)) = int32(j)
			n += b2i(a > v)
		}
	default:
		for j, v := range g {
			*(*int32)(unsafe.Add(p, 4*n)) = int32(j)
			n += b2i(a >= v)
		}
	}
	return sel[:n]
}

// cmpNarrow keeps the indexes j of sel for which a op g[j] holds, in place.
func cmpNarrow[T number](op query.CmpOp, a T, g []T, sel []int32) []int32 {
	n := 0
	switch op {
	case query.Eq:
		for _, j := range sel {
			sel[n] = j
			n += b2i(a == g[j])
		}
	case query.Ne:
		for _, j := range sel {
			sel[n] = j
			n += b2i(a != g[j])
		}
	case query.Lt:
		for _, j := range sel {
			sel[n] = j
			n += b2i(a < g[j])
		}
	case query.Le:
		for _, j := range sel {
			sel[n] = j
			n += b2i(a <= g[j])
		}
	case query.Gt:
		for _, j := range sel {
			sel[n] = j
			n += b2i(a > g[j])
		}
	default:
		for _, j := range sel {
			sel[n] = j
			n += b2i(a >= g[j])
		}
	}
	return sel[:n]
}

// b2i is 1 for true: the compiler makes it a SETcc, not a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// emitter appends to out, for each right tuple j of sel, the pair of lt
// and the right tuple j of right (rts bytes each), and returns it.
type emitter func(out, lt, right []byte, rts int, sel []int32) []byte

// emitterFor is the pair emission for tuples of lts and rts bytes: for
// equal sizes of 8 to 64 bytes in steps of 8 a copy of two fixed-size
// arrays per pair, moves the compiler inlines, against two calls of
// memmove with a copy.
func emitterFor(lts, rts int) emitter {
	if lts == rts {
		switch lts {
		case 8:
			return emitFixed[[8]byte]
		case 16:
			return emitFixed[[16]byte]
		case 24:
			return emitFixed[[24]byte]
		case 32:
			return emitFixed[[32]byte]
		case 40:
			return emitFixed[[40]byte]
		case 48:
			return emitFixed[[48]byte]
		case 56:
			return emitFixed[[56]byte]
		case 64:
			return emitFixed[[64]byte]
		}
	}
	return emitPairs
}

type tupleArray interface {
	[8]byte | [16]byte | [24]byte | [32]byte | [40]byte | [48]byte | [56]byte | [64]byte
}

// emitFixed is emitPairs for left and right tuples of T's size.
func emitFixed[T tupleArray](out, lt, right []byte, rts int, sel []int32) []byte {
	var z T
	ts := int(unsafe.Sizeof(z))
	o := len(out)
	out = slices.Grow(out, len(sel)*2*ts)[:o+len(sel)*2*ts]
	l := *(*T)(unsafe.Pointer(unsafe.SliceData(lt[:ts])))
	r := unsafe.Pointer(unsafe.SliceData(right))
	nr := len(right) / ts
	for _, j := range sel {
		if int(j) >= nr {
			panic("kernels: pair index out of range")
		}
		d := (*[2]T)(unsafe.Pointer(unsafe.SliceData(out[o : o+2*ts])))
		d[0] = l
		d[1] = *(*T)(unsafe.Add(r, int(j)*ts))
		o += 2 * ts
	}
	return out
}

// emitPairs is the emitter of any tuple sizes.
func emitPairs(out, lt, right []byte, rts int, sel []int32) []byte {
	lts := len(lt)
	ps := lts + rts
	o := len(out)
	out = slices.Grow(out, len(sel)*ps)[:o+len(sel)*ps]
	for _, j := range sel {
		d := out[o : o+ps : o+ps]
		copy(d, lt)
		r := int(j) * rts
		copy(d[lts:], right[r:r+rts])
		o += ps
	}
	return out
}

// joinChunks is the general path: every pair of left and right tuples,
// filtered a chunk of pairs at a time by WHERE.
func (st *pairState) joinChunks(p *pairPlan, left, right, out []byte) []byte {
	lts, rts, ps := p.lts, p.rts, p.lts+p.rts
	pairs := st.pairs[:0]
	flush := func() {
		if len(pairs) == 0 {
			return
		}
		if st.filter == nil {
			out = append(out, pairs...)
		} else {
			for _, i := range st.filter.Keep(pairs, ps) {
				out = append(out, pairs[int(i)*ps:int(i+1)*ps]...)
			}
		}
		pairs = pairs[:0]
	}
	for lo := 0; lo < len(left); lo += lts {
		lt := left[lo : lo+lts]
		for ro := 0; ro < len(right); ro += rts {
			pairs = append(pairs, lt...)
			pairs = append(pairs, right[ro:ro+rts]...)
			if len(pairs) == cap(pairs) {
				flush()
			}
		}
	}
	flush()
	st.pairs = pairs
	return out
}
