package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// WindowJoin is the operator of a window join (query.WindowJoin): it files
// each side's tuples, in stream order, into panes, and once both
// watermarks have passed a window's end closes the window into a JoinTask:
// the window's left and right tuples, which the task gathers out of the
// panes in position order. A task's pairs are computed by JoinTask.Run,
// outside the caller's lock, by whichever goroutine takes it (Take), so
// that the windows of one join are joined in parallel; Done hands the task
// back, and each window's output waits in a queue (Next) in window order,
// whatever order the tasks finish in. Its buffer comes back through
// Recycle.
//
// A pane holds its tuples where the Add that brought them put them: runs
// of an input's buffer (joinstrings.go, sharedInput), which AddOwned takes
// from the caller as it is, so that filing a tuple, under the caller's
// lock, copies nothing; the copies into a window's task are made by the
// task.
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
	lent        int      // outputs Next handed out and Recycle did not take back
	lentFrom    int64    // the first window of the outputs lent since lent was last 0
	emptyQueued int      // queued windows with no tuples on a side (Taken)
	// pendingWins and runnableWins are Pending and Runnable in windows.
	pendingWins, runnableWins int
	windows                   uint64
	joined                    uint64 // windows done (Joined)
	outPairs                  uint64
	// pjWindows counts the windows whose pairs the PairJoiner computed;
	// pjFallbacks the windows it refused (too many pairs).
	pjWindows, pjFallbacks uint64
	// noBatch makes every window a task of its own (tests);
	// candsJoined and bytesJoined count the pairs of tuples the tasks
	// done compared and the bytes of output they wrote (openBatch), since
	// the start or the last restore.
	noBatch                         bool
	candsJoined, bytesJoined, tasks uint64

	// Inputs (joinstrings.go): the windows closed and released, the
	// retired panes' inputs waiting for them, the input being filed, and
	// free ones.
	closed, released_ uint64
	unreleased        int         // windows handed on while an output was lent (released)
	held              []heldInput // from heldHead on
	heldHead          int
	adding            *sharedInput
	// shared are each side's free inputs: a side's inputs take the
	// buffers of the tasks that feed it and give them back, so a side's
	// free buffers are of its tasks' sizes (one list for both handed a
	// side of one row per task the other side's megabyte buffers, which
	// its panes then held).
	shared [2][]*sharedInput
	// cut is fileInput's, for inputs no worker cut (Add, AddOwned).
	cut JoinCut
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
	strs      []query.Attribute // the String attributes, whose long strings panes keep
	wm        int64
	index     int64 // position of the next tuple in a row window
	done      bool
	panes     []joinPane // sorted by pane
	base      []joinPane // the array under panes, all of it (insert)
	// spareChunks and spareRefs are dropped panes' lists, for new ones.
	spareChunks [][][]byte
	spareRefs   [][]*sharedInput
	tuples      uint64
	late        uint64
	dropped     uint64 // tuples of the panes dropped
}

type joinPane struct {
	pane int64
	// chunks are the pane's tuples, in the order they came: runs of the
	// inputs of refs, which hold their memory and their long strings.
	chunks [][]byte
	n      int // bytes in chunks
	refs   []*sharedInput
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
		wj.sides[i] = joinSide{tupleSize: s.TupleSize, wm: math.MinInt64, strs: stringAttrs(s)}
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
//
// Add copies the tuples and their long strings, which the join keeps
// (AddOwned takes the caller's memory instead).
func (wj *WindowJoin) Add(side int, tuples []byte) (r Refused, ok bool) {
	in := wj.newInput(side)
	in.tuples = append(in.tuples, tuples...)
	wj.pinStrings(&wj.sides[side], in)
	return wj.addInput(side, in, nil)
}

// fileInput files the tuples of wj.adding, as Add says: row windows' by
// arithmetic (fileRows), time windows' cut into runs here, under the
// lock, where no worker cut them before (Cut, fileCut).
func (wj *WindowJoin) fileInput(side int) (r Refused, ok bool) {
	if wj.rows {
		return wj.fileRows(side)
	}
	wj.Cut(side, wj.adding.tuples, &wj.cut)
	return wj.fileCut(side, &wj.cut)
}

// fileRows is fileInput for row windows, whose positions are the side's
// tuple indexes: a pane's tuples are one run whose bounds are sums, filed
// without reading a tuple, by fileCut's rule.
func (wj *WindowJoin) fileRows(side int) (r Refused, ok bool) {
	tuples := wj.adding.tuples
	sd := &wj.sides[side]
	ts := sd.tupleSize
	n := int64(len(tuples) / ts)
	for i := int64(0); i < n; {
		pos := sd.index
		p := wj.spec.PaneOf(pos)
		if p < wj.lowest {
			return Refused{Tuple: uint64(sd.index), Pos: pos}, false
		}
		// The run: pos up to the pane's last position or the input's end.
		cnt := n - i
		if rest := uint64(wj.spec.PaneLast(p)) - uint64(pos); rest < uint64(cnt) {
			cnt = int64(rest) + 1
		}
		// A tuple is late if the watermark before it passed its pane's
		// Open. Within the run the tuples' own indexes never do (a pane's
		// Open is at or past its last position), so the run is late whole,
		// where the side's watermark before it did, or not at all.
		if sd.wm > wj.spec.Open(p) {
			sd.late += uint64(cnt)
		} else {
			wj.file(sd, sd.pane(p), tuples[i*int64(ts):(i+cnt)*int64(ts)])
		}
		sd.index += cnt
		sd.tuples += uint64(cnt)
		sd.wm = max(sd.wm, pos+cnt-1)
		i += cnt
	}
	return Refused{}, true
}

// JoinCut is a side's input cut into runs of tuples of one pane each
// (Cut): off the join's lock by the worker that made the input, so that
// the join, under its lock, files it run by run (AddOwnedCut) rather
// than read every tuple. Its storage is reused from input to input.
type JoinCut struct {
	runs []cutRun
	n    int64 // the tuples cut: all of them, or those before a refused one
	max  int64 // their largest position
	// refused: the tuple after the n cut is refused, at position pos.
	refused bool
	pos     int64
	// reg is a regular join's input prepared off its lock
	// (RegularJoin.Cut).
	reg regBatch
}

// cutRun is a run of one pane's tuples, bytes from up to to of the input.
// From lateAt on, the positions of the input's tuples before each passed
// the pane's Open: late whatever the side's watermark; the run's tuples
// before it are late only where the side's watermark before the input
// passed Open.
type cutRun struct {
	pane, open       int64
	from, lateAt, to int
}

// Cut cuts side's input tuples into c for AddOwnedCut, or leaves c empty
// for row windows, whose runs fileRows finds by arithmetic. It reads only
// what the join was made with: any goroutine may cut while another holds
// the join.
func (wj *WindowJoin) Cut(side int, tuples []byte, c *JoinCut) {
	c.runs, c.n, c.max, c.refused = c.runs[:0], 0, math.MinInt64, false
	if wj.rows {
		return
	}
	ts := wj.sides[side].tupleSize
	local := int64(math.MinInt64) // the largest position before the tuple
	var run *cutRun
	var pStart, pLast int64
	for o := 0; o+ts <= len(tuples); o += ts {
		pos := int64(binary.LittleEndian.Uint64(tuples[o:]))
		if run == nil || pos < pStart || pos > pLast {
			p := wj.spec.PaneOf(pos)
			if p < wj.lowest {
				c.refused, c.pos = true, pos
				break
			}
			pStart, pLast = wj.spec.PaneStart(p), wj.spec.PaneLast(p)
			c.runs = append(c.runs, cutRun{pane: p, open: wj.spec.Open(p), from: o, lateAt: -1})
			run = &c.runs[len(c.runs)-1]
		}
		if run.lateAt < 0 && local > run.open {
			run.lateAt = o
		}
		run.to = o + ts
		local = max(local, pos)
		c.n++
	}
	for i := range c.runs {
		if r := &c.runs[i]; r.lateAt < 0 {
			r.lateAt = r.to
		}
	}
	c.max = local
}

// fileCut files wj.adding's tuples run by run of c (Cut of these
// tuples): a run whole, up to its lateAt, or not at all where the side's
// watermark before the input passed its pane's Open; the rest is late.
func (wj *WindowJoin) fileCut(side int, c *JoinCut) (r Refused, ok bool) {
	tuples := wj.adding.tuples
	sd := &wj.sides[side]
	ts := sd.tupleSize
	w0 := sd.wm
	for i := range c.runs {
		run := &c.runs[i]
		filed := run.lateAt
		if w0 > run.open {
			filed = run.from
		}
		if filed > run.from {
			wj.file(sd, sd.pane(run.pane), tuples[run.from:filed])
		}
		sd.late += uint64((run.to - filed) / ts)
	}
	sd.index += c.n
	sd.tuples += uint64(c.n)
	if c.n > 0 {
		sd.wm = max(w0, c.max)
	}
	if c.refused {
		return Refused{Tuple: uint64(sd.index), Pos: c.pos}, false
	}
	return Refused{}, true
}

// file appends tuples, a run of wj.adding's, to pane pn of side sd: the
// pane refers to them where they are and holds their input.
func (wj *WindowJoin) file(sd *joinSide, pn *joinPane, tuples []byte) {
	if pn.chunks == nil {
		if m := len(sd.spareChunks); m > 0 {
			pn.chunks, sd.spareChunks = sd.spareChunks[m-1], sd.spareChunks[:m-1]
		}
	}
	pn.chunks = append(pn.chunks, tuples)
	pn.n += len(tuples)
	if k := len(pn.refs); k == 0 || pn.refs[k-1] != wj.adding {
		if pn.refs == nil {
			if m := len(sd.spareRefs); m > 0 {
				pn.refs, sd.spareRefs = sd.spareRefs[m-1], sd.spareRefs[:m-1]
			}
		}
		pn.refs = append(pn.refs, wj.adding)
		wj.adding.refs++
	}
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
	n := len(sd.panes)
	switch {
	case n > 0 && sd.panes[n-1].pane == p:
		return &sd.panes[n-1]
	case n == 0 || sd.panes[n-1].pane < p: // a new last pane, the common case
		sd.insert(n, joinPane{pane: p})
		return &sd.panes[n]
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
		sd.insert(i, joinPane{pane: p})
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

// retire counts a pane's n bytes of tuples dropped, its last window
// closed (drop, and closeWindow for a pane whose tuples its task takes).
func (sd *joinSide) retire(n int) {
	sd.dropped += uint64(n / sd.tupleSize)
}

// drop removes the first k panes, keeping their lists for new panes
// (their inputs are held until their windows are released).
func (wj *WindowJoin) drop(sd *joinSide, k int) {
	if k == 0 {
		return
	}
	for i := range sd.panes[:k] {
		pn := &sd.panes[i]
		sd.retire(pn.n)
		if pn.chunks != nil {
			clear(pn.chunks)
			sd.spareChunks = append(sd.spareChunks, pn.chunks[:0])
		}
		wj.holdRefs(sd, pn)
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
			wj.drop(sd, k)
		}
	}
}

// closeWindow copies window w's tuples into a task (left tuples, then
// right ones, which the task orders by position, stably): the open batch
// (openBatch), or a new task that it queues, or has the PairJoiner
// compute its pairs. It returns the PairJoiner's error, having dropped it
// and queued the window as a task.
func (wj *WindowJoin) closeWindow(w int64) error {
	lo, last := wj.spec.PaneSpan(w)
	t := wj.openBatch()
	fresh := t == nil
	if fresh {
		if n := len(wj.freeTasks); n > 0 {
			t, wj.freeTasks = wj.freeTasks[n-1], wj.freeTasks[:n-1]
		} else {
			t = &JoinTask{plan: wj.plan}
		}
		t.wins, t.cands = t.wins[:0], 0
	}
	tw := t.window()
	var takenRefs [2]joinPane
	for i := range tw.sides {
		ts := &tw.sides[i]
		sd := &wj.sides[i]
		if pn := sd.soleLast(lo, last, wj.spec, w); pn != nil {
			// The pane's last window: the task takes its list, and its
			// inputs are held as a dropped pane's, once this window
			// counts as closed.
			ts.chunks, pn.chunks = pn.chunks, ts.chunks[:0]
			ts.n, pn.n = pn.n, 0
			sd.retire(ts.n)
			takenRefs[i].refs, pn.refs = pn.refs, nil
		} else {
			ts.chunks, ts.n = sd.gather(ts.chunks[:0], lo, last)
		}
	}
	// The task gathers its tuples out of the chunks and, for a range
	// window, puts them in position order (prepare), on the worker that
	// runs it: here, under the caller's lock, the copies and the check
	// of the order were a serial stage of every tuple.
	tw.w, tw.pairs, tw.prepared, tw.sortInTask = w, 0, false, !wj.rows
	wj.closed++
	wj.holdRefs(&wj.sides[0], &takenRefs[0])
	wj.holdRefs(&wj.sides[1], &takenRefs[1])
	t.cands += (tw.sides[0].n / wj.sides[0].tupleSize) * (tw.sides[1].n / wj.sides[1].tupleSize)
	if !fresh {
		wj.pendingWins++
		wj.runnableWins++
		return nil // joined with the batch's windows before it
	}
	if tw.sides[0].n == 0 || tw.sides[1].n == 0 {
		if wj.head == len(wj.queue) {
			wj.freeTasks = append(wj.freeTasks, t)
			wj.released(1)
			return nil
		}
		// Windows before it wait to be handed on: it is released after
		// them (Next skips it), as releaseHeld's count of windows
		// released in order needs; released now, it would free the
		// strings of panes that their tasks may still read.
		t.done, t.out, t.empty = true, t.out[:0], true
		wj.queue = append(wj.queue, t)
		wj.pendingWins++
		wj.emptyQueued++
		return nil
	}
	t.done = false
	wj.queue = append(wj.queue, t)
	wj.pendingWins++
	var err error
	if wj.pj != nil {
		wj.outBuffer(t, nil)
		// The PairJoiner runs here, and the task is done: Take skips it.
		tw.prepare(wj.plan)
		l, r := t.tupleViews(wj.sides[0].tupleSize, wj.sides[1].tupleSize)
		res, ok, jerr := wj.pj.Join(l, r, t.out)
		switch {
		case jerr != nil:
			// The caller fails the run; the window is joined by its
			// task meanwhile.
			wj.pj, err = nil, jerr
		case ok:
			wj.pjWindows++
			t.out, tw.pairs = res, len(res)
			wj.Done(t)
			return nil
		default:
			wj.pjFallbacks++
		}
	}
	wj.runnable++
	wj.runnableWins++
	return err
}

// A task takes windows until they compare batchPairs pairs of tuples (a
// window's left tuples times its right ones), their output is expected to
// reach batchBytes, or they are batchWindows (windows with an empty side
// compare none). A window of 128 tuples a side compares 16,384 pairs in
// about as many nanoseconds on a core; the lock, the hand-off and the
// task's bookkeeping around it cost a few hundred, paid once for a batch.
// The output bound keeps a task's output near the cache of the core that
// writes it: JOIN_1's windows, whose pairs are half a MiB, go two by two
// (four at a time, they ran 0.9x in the VM's fast mode;
// docs/performance.md, twenty-fourth session).
const (
	batchPairs   = 1 << 16
	batchBytes   = 1 << 20
	batchWindows = 1024
)

// openBatch returns the task the next closed window may join: the last
// one queued, while no worker took it, it is not done (the PairJoiner's,
// or an empty window's) and it has room; nil where there is none. With a
// PairJoiner, every window is a task of its own.
func (wj *WindowJoin) openBatch() *JoinTask {
	n := len(wj.queue)
	if wj.pj != nil || wj.noBatch || n == 0 || n-1 < wj.taken {
		return nil
	}
	t := wj.queue[n-1]
	if t.done || t.cands >= batchPairs || len(t.wins) >= batchWindows || wj.outputOf(t.cands) >= batchBytes {
		return nil
	}
	return t
}

// outputOf is the output expected of windows that compare cands pairs of
// tuples, at the rate of the windows joined so far (before any: more than
// a batch's).
func (wj *WindowJoin) outputOf(cands int) float64 {
	if wj.candsJoined == 0 {
		return math.Inf(1)
	}
	return float64(cands) * float64(wj.bytesJoined) / float64(wj.candsJoined)
}

// soleLast returns the pane of the window w spanning panes [lo, last]
// when the window has one pane and that pane is in no later window (a
// tumbling window's), nil otherwise: JoinClosed drops it once w is closed.
func (sd *joinSide) soleLast(lo, last int64, s window.Spec, w int64) *joinPane {
	if lo != last || len(sd.panes) == 0 || sd.panes[0].pane != lo || s.LastWindow(lo) > w {
		return nil
	}
	return &sd.panes[0]
}

// gather appends the chunks of the side's panes [lo, last] to dst, and
// returns it and their bytes.
func (sd *joinSide) gather(dst [][]byte, lo, last int64) ([][]byte, int) {
	n := 0
	for _, pn := range sd.panes {
		if pn.pane > last {
			break
		}
		if pn.pane >= lo {
			dst = append(dst, pn.chunks...)
			n += pn.n
		}
	}
	return dst, n
}

// Take returns the next task of closed windows to run (JoinTask.Run, without
// the caller's lock), or nil when none waits. Hand it back with Done.
func (wj *WindowJoin) Take() *JoinTask { return wj.TakeFor(nil) }

// TakeFor is Take for a task to run on scratch s (JoinTask.RunWith): its
// output goes into a buffer that a window run on s wrote before, where s
// has one, so that a worker writes its windows' pairs into memory its own
// cache holds rather than into buffers last written on other cores.
func (wj *WindowJoin) TakeFor(s *JoinScratch) *JoinTask {
	for wj.taken < len(wj.queue) {
		t := wj.queue[wj.taken]
		wj.taken++
		if !t.done { // done: the PairJoiner's
			wj.runnable--
			wj.runnableWins -= len(t.wins)
			wj.outBuffer(t, s)
			return t
		}
	}
	return nil
}

// outBuffer gives t a recycled output buffer, if there is one (and t has
// none: the PairJoiner refused its window), s's first. Buffers go to tasks
// as they start rather than as windows close, so that a catching-up side
// closing many windows at once does not hold a buffer for each.
func (wj *WindowJoin) outBuffer(t *JoinTask, s *JoinScratch) {
	t.owner = s
	if t.out != nil {
		return
	}
	if s != nil {
		if n := len(s.free); n > 0 {
			t.out, s.free = s.free[n-1][:0], s.free[:n-1]
			return
		}
	}
	if n := len(wj.free); n > 0 {
		t.out, wj.free = wj.free[n-1][:0], wj.free[:n-1]
	}
}

// Runnable is how many tasks wait to be taken.
func (wj *WindowJoin) Runnable() int { return wj.runnable }

// Done takes back a task Take returned, once it ran: its window's output
// joins the queue of Next.
func (wj *WindowJoin) Done(t *JoinTask) {
	t.done = true
	wj.candsJoined += uint64(t.cands)
	wj.bytesJoined += uint64(len(t.out))
	wj.tasks++
	wj.joined += uint64(len(t.wins))
	for i := range t.wins {
		if t.wins[i].pairs > 0 {
			wj.windows++
		}
	}
	wj.outPairs += uint64(len(t.out) / wj.outSize)
}

// Pending is how many tasks' outputs (a closed window's, or a batch's) are
// not yet taken off the queue by Next: waiting to be taken, running, or
// joined.
func (wj *WindowJoin) Pending() int { return len(wj.queue) - wj.head }

// Taken is how many closed windows were taken and not handed on: running,
// or joined and waiting for an older one (in tasks of a window or a
// batch). Windows with no tuples on a side, queued only to be released in
// order, are not counted: they hold no output.
func (wj *WindowJoin) Taken() int { return wj.pendingWins - wj.runnableWins - wj.emptyQueued }

// OldestWaits reports whether the oldest pending task waits to be taken.
// No window after it can be handed on before it runs, so a bound on the
// windows taken (Taken) must not keep it waiting: with a PairJoiner the
// windows after one it refused are joined at once and count as Taken.
func (wj *WindowJoin) OldestWaits() bool {
	return wj.taken == wj.head && wj.head < len(wj.queue) && !wj.queue[wj.head].done
}

// RunnableWindows is how many windows the tasks that wait to be taken
// hold.
func (wj *WindowJoin) RunnableWindows() int { return wj.runnableWins }

// Ready reports whether Next has a window's output, or an empty window to
// drop: whether the oldest pending window is joined.
func (wj *WindowJoin) Ready() bool {
	return wj.head < len(wj.queue) && wj.queue[wj.head].done
}

// JoinOutput is a joined task's output as Next hands it out: its pairs,
// each the left tuple's bytes then the right one's, in a buffer that
// Recycle takes back (to the scratch whose task wrote it, if any).
type JoinOutput struct {
	Pairs   []byte
	owner   *JoinScratch
	windows int // the windows whose pairs they are (a batch's)
}

// Next takes the oldest closed window's output (or a batch's: its
// windows' pairs in window order) off the queue once it is joined; ok
// false when none is (or none waits). Windows without pairs are skipped.
// Hand it back with Recycle once it is used.
func (wj *WindowJoin) Next() (o JoinOutput, ok bool) {
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
		out, owner, windows := t.out, t.owner, len(t.wins)
		wj.pendingWins -= windows
		t.out, t.owner = nil, nil
		wj.freeTasks = append(wj.freeTasks, t)
		if len(out) > 0 {
			if wj.lent == 0 {
				wj.lentFrom = t.wins[0].w
			}
			wj.lent++
			return JoinOutput{Pairs: out, owner: owner, windows: windows}, true
		}
		if t.empty {
			t.empty = false
			wj.emptyQueued--
		}
		if out != nil {
			wj.giveBack(out, owner)
		}
		wj.released(windows)
	}
	return JoinOutput{}, false
}

// Unreleased is the oldest window whose pairs may not be handed on yet:
// the first of an output lent (Next, not yet Recycled), or of the oldest
// window queued, or the first window not closed. Every window before it
// was closed and its output taken back (or it had none); ok is false
// where no window was closed yet. Windows start in window order, and a
// tuple filed is never of a closed window (Add's lateness): a tuple whose
// position lies before Unreleased's start is in no window still to come.
func (wj *WindowJoin) Unreleased() (w int64, ok bool) {
	switch {
	case wj.lent > 0:
		return wj.lentFrom, true
	case wj.head < len(wj.queue):
		return wj.queue[wj.head].wins[0].w, true
	}
	return wj.next, wj.started
}

// Watermark is side's largest position filed so far (late tuples
// included), math.MinInt64 before any.
func (wj *WindowJoin) Watermark(side int) int64 { return wj.sides[side].wm }

// Recycle takes back an output Next returned, for a later window's output.
// The strings of its pairs are then free: call it once they are used.
func (wj *WindowJoin) Recycle(o JoinOutput) {
	wj.lent--
	wj.giveBack(o.Pairs, o.owner)
	wj.released(o.windows)
}

// scratchBuffers bounds the output buffers a scratch keeps (a worker has
// a few windows taken at a time); the others go to every worker's pool, so
// that a worker that stops joining does not hold buffers the others need.
const scratchBuffers = 4

// giveBack puts an output buffer back: on scratch s (nil: none) while it
// has room, else in the pool.
func (wj *WindowJoin) giveBack(out []byte, s *JoinScratch) {
	if s != nil && len(s.free) < scratchBuffers {
		s.free = append(s.free, out)
		return
	}
	wj.free = append(wj.free, out)
}

// WindowJoinStats are a WindowJoin's counters, both inputs together.
type WindowJoinStats struct {
	Tuples  uint64 // tuples added
	Late    uint64 // of them, dropped as late
	Windows uint64 // windows with at least one pair
	Pairs   uint64 // output pairs
	Tasks   uint64 // tasks done (since the start or the last restore): a window each, or a batch
	// PairJoined counts the windows whose pairs the PairJoiner computed,
	// PairFallbacks the ones it refused (too many pairs), joined by tasks.
	PairJoined, PairFallbacks uint64
}

// Stats returns the counters (of the windows done so far).
func (wj *WindowJoin) Stats() WindowJoinStats {
	st := WindowJoinStats{Windows: wj.windows, Pairs: wj.outPairs, Tasks: wj.tasks, PairJoined: wj.pjWindows, PairFallbacks: wj.pjFallbacks}
	for _, sd := range wj.sides {
		st.Tuples += sd.tuples
		st.Late += sd.late
	}
	return st
}
