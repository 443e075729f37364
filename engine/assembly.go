package engine

import (
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/window"
)

// The parallel result stage of a hashed aggregation (window.Parts) or of
// keyed session windows (window.SessionParts): the groups are cut into
// partitions, and the ordered stage under mergeMu only links what the
// workers assembled and hands it on.
//
// A task's way through it:
//
//  1. The worker that ran it splits its fragments by partition
//     (Parts.Split, in finish) and files it in slots.
//  2. Each partition merges the tasks in order, under a lock of its own
//     (partStage.mu): its panes, its sliding windows and HAVING over its
//     groups, the windows' rows copied out where a sink or a downstream
//     query reads them. A worker that finishes a task tries every
//     partition, and merges in each the tasks ready there, as mergeReady
//     does for the whole stage: different workers merge different
//     partitions at once, one behind the other along the tasks.
//  3. The worker that merges a task's last partition assembles it, with
//     no lock: its windows linked from the partitions', their rows merged
//     in key order (strings' keys sorted by their strings) and encoded as
//     tuples where the output wants tuples; then it files it in ready.
//  4. mergeReady hands the assembled tasks on in task order under mergeMu:
//     the windows to the sinks and downstream, the counters, the ring.
//
// The partitions are cut by group because a sliding window's running
// state goes from window to window one pane at a time, a chain only the
// groups split (window.Parts). The tasks' order holds in each partition
// and in the hand-off, so windows leave once each, complete, in order,
// and the output is the one Assembler's, whatever the workers' timing.

// partsStage is a result stage cut into partitions that the engine
// drives as above: a hashed aggregation's (window.Parts, cut by group) or
// session windows' (window.SessionParts, cut by key).
type partsStage interface {
	window.Stage
	N() int
	SetRows(rows bool)
	SetFilters(newKeep func() func(st *window.GroupState, group int32) bool)
	Split(r *window.TaskResult, subs []window.TaskResult)
	MergePart(k int, sub *window.TaskResult, out *window.PartOut) error
	Assemble(outs []window.PartOut, dst *window.Assembled)
	AssembleRange(outs []window.PartOut, lo, hi int64, tmp []window.PartOut, dst *window.Assembled)
	Commit(a *window.Assembled)
	FlushLimit(n int64) (limit int64, ok bool)
	FlushPart(k int, limit int64, out *window.PartOut) error
}

// partStage is one partition's lock and progress.
type partStage struct {
	_    [cacheLine]byte
	mu   sync.Mutex
	next atomic.Uint64 // ID of the next task the partition merges
	_    [cacheLine - 16]byte
}

// partsTask is a task's part in a partitioned result stage.
type partsTask struct {
	left atomic.Int32        // partitions that have not merged the task
	subs []window.TaskResult // the split result, per partition
	outs []window.PartOut    // the windows each partition emitted
	linked
}

// linked are windows linked from the partitions' (step 3), ready to be
// handed on.
type linked struct {
	asm  window.Assembled
	rows []int32 // the windows' Result.Rows, in asm's rows
	enc  []byte  // the windows' rows as output tuples
	ends []int   // window i's tuples end at enc[ends[i]]
	// text is the windows' rows as Spec.Encoded encodes them, window i's
	// ending at text[textEnds[i]].
	text     []byte
	textEnds []int
	res      window.Result // a window's, handed to the sinks
	sort     []sortKey     // sortRows' scratch
	buf      []byte        // sortRows' scratch
	// cut is enc cut for the window join that the stream feeds (joinFeed).
	cut kernels.JoinCut
}

// resultParts is how many partitions a hashed aggregation's result stage
// has: one per worker is what can merge at once; twice that evens out
// partitions of unequal work. One worker gains nothing from them.
func (e *Engine) resultParts() int {
	if e.cfg.resultParts > 0 {
		return min(e.cfg.resultParts, window.MaxParts)
	}
	workers := e.cfg.cpuWorkers()
	if workers < 2 {
		return 1
	}
	return min(2*workers, window.MaxParts)
}

// initParts readies a partitioned stream's tasks once the graph is made:
// rows are copied out of the partitions only where something reads them.
func (s *Stream) initParts() {
	if s.parts == nil {
		return
	}
	s.partRows = s.spec.Windows != nil || s.sinksTuples() || len(s.downstream) > 0
	s.parts.SetRows(s.partRows) // the flush's, at the end of the input
	s.pstages = make([]partStage, s.parts.N())
	s.ready = make([]atomic.Pointer[task], len(s.slots))
	for _, t := range s.records[:s.made] {
		s.initTaskParts(t)
	}
}

// initTaskParts readies task record t of a partitioned stream, after
// initParts (newRecord's later records too).
func (s *Stream) initTaskParts(t *task) {
	n := len(s.pstages)
	t.parts.subs = make([]window.TaskResult, n)
	t.parts.outs = make([]window.PartOut, n)
	for k := range t.parts.outs {
		t.parts.outs[k].Rows = s.partRows
	}
}

// finishParts is finish's for a partitioned stream: t is split, filed,
// and merged into every partition that can take it now.
func (s *Stream) finishParts(t *task, w *worker) {
	s.parts.Split(&t.result, t.parts.subs)
	n := len(s.pstages)
	t.parts.left.Store(int32(n))
	// Start at a partition of the task's own, so that workers finishing
	// tasks one after the other go different ways round. (Read before t is
	// filed: then other workers may hand it on and recycle it.)
	first := int(t.ID % uint64(n))
	s.slots[t.ID&s.mask].Store(t)
	for i := range n {
		s.mergePart((first+i)%n, w)
	}
}

// mergePart merges every task that is next in order in partition k,
// unless another worker is merging there, and assembles the tasks whose
// last partition that was.
func (s *Stream) mergePart(k int, w *worker) {
	ps := &s.pstages[k]
	for {
		if !ps.mu.TryLock() {
			return // the holder re-checks after unlocking
		}
		n := ps.next.Load()
		var last *task // merged last in all the partitions: assembled inline
		for {
			t := s.slots[n&s.mask].Load()
			if t == nil || t.ID != n {
				break
			}
			s.mergeInto(k, t)
			n++
			ps.next.Store(n)
			if t.parts.left.Add(-1) == 0 {
				if w == nil {
					s.assemble(t) // no worker to keep a list on: rare (none today)
					continue
				}
				if last != nil {
					w.assemble = append(w.assemble, last)
				}
				last = t
			}
		}
		ps.mu.Unlock()
		if w != nil {
			// Not under the partition's lock: another worker may merge it
			// on meanwhile.
			for _, t := range w.assemble {
				s.assemble(t)
			}
			clear(w.assemble)
			w.assemble = w.assemble[:0]
		}
		if last != nil {
			s.assemble(last)
		}
		// As mergeReady's: a task filed while we held the lock found it
		// taken and left its merge here to us.
		if s.slots[ps.next.Load()&s.mask].Load() == nil {
			return
		}
	}
}

// mergeInto merges t into partition k; its windows wait in t's outs.
func (s *Stream) mergeInto(k int, t *task) {
	out := &t.parts.outs[k]
	if t.result.Refused || s.e.failed() != nil {
		out.Reset() // the hand-off reports the refusal, or hands nothing on
		return
	}
	if err := s.parts.MergePart(k, &t.parts.subs[k], out); err != nil {
		s.e.fail(err)
	}
}

// assemble links t's windows from its partitions' (step 3) and files it
// for the hand-off. Only the caller touches t: every partition is done
// with it, and the hand-off has not seen it.
func (s *Stream) assemble(t *task) {
	p := &t.parts
	s.parts.Assemble(p.outs, &p.asm)
	s.finishLinked(&p.linked)
	// Nothing reads t's group states, nor its splits', once every
	// partition merged it: back to their pools here, on the worker, not in
	// the ordered hand-off (merge finds none left).
	var buf [16]*window.GroupState
	states := t.result.TakeStates(buf[:0])
	for k := range p.subs {
		states = p.subs[k].TakeStates(states)
	}
	window.GiveBack(states)
	// The slot first: once t is ready it may be handed on, recycled and
	// its record filed again, for a later task, in the same slot.
	s.slots[t.ID&s.mask].Store(nil)
	s.ready[t.ID&s.mask].Store(t)
}

// finishLinked sorts the rows of p's windows of strings' keys by their
// strings, and encodes them as tuples where the output wants tuples: the
// per-row work left of the hand-off, done before it by whoever linked p.
func (s *Stream) finishLinked(p *linked) {
	a := &p.asm
	p.enc, p.ends = p.enc[:0], p.ends[:0]
	p.text, p.textEnds = p.text[:0], p.textEnds[:0]
	if a.Rows {
		n := int(a.RowsOut)
		if len(p.rows) < n {
			p.rows = make([]int32, n+n/4)
		}
		tuples := s.sinksTuples() || len(s.downstream) > 0
		if tuples {
			// Every row is one output tuple: room for them all at once,
			// not doubled towards it (an end of input's flush can hand
			// on every window still open).
			p.enc = slices.Grow(p.enc, n*s.plan.OutTupleSize)
		}
		e := s.spec.Encoded
		for i := range a.Wins {
			a.Result(i, &p.res, p.rows)
			if s.plan.StringKeys() && len(p.res.Rows) > 1 {
				p.sort, p.buf = sortRows(s.plan, &p.res, p.sort, p.buf)
			}
			if tuples {
				from := len(p.enc)
				p.enc = s.encodeRows(p.enc, &p.res)
				p.ends = append(p.ends, len(p.enc))
				if e != nil {
					p.text = e.Encode(p.text, p.enc[from:])
					p.textEnds = append(p.textEnds, len(p.text))
				}
			}
		}
	}
	if d := s.joinFeed; d != nil {
		d.joinSide.op.Cut(d.side, p.enc, &p.cut)
	}
}

// handOff hands an assembled task's windows on, in order (step 4): it
// runs under mergeMu, as emit does.
func (s *Stream) handOff(t *task) error { return s.handOffLinked(&t.parts.linked) }

func (s *Stream) handOffLinked(p *linked) error {
	a := &p.asm
	if a.Rows {
		from, textFrom := 0, 0
		for i := range a.Wins {
			// The Result only points into a and p.rows, which assemble
			// made: set again, with the rows in the order assemble left.
			pw := &a.Wins[i]
			p.res = window.Result{Window: pw.W, Start: pw.Start, End: pw.End, State: a.State(), Rows: p.rows[pw.From:pw.To]}
			if s.spec.Windows != nil {
				s.win.Start, s.win.End, s.win.res = pw.Start, pw.End, &p.res
				if err := s.spec.Windows(&s.win); err != nil {
					return windowError(s, pw.Start, pw.End, err)
				}
			}
			if len(p.ends) > 0 && s.joinFeed == nil {
				to := p.ends[i]
				var text []byte
				encoded := len(p.textEnds) > 0
				if encoded {
					text, textFrom = p.text[textFrom:p.textEnds[i]], p.textEnds[i]
				}
				if err := s.outputEncoded(p.enc[from:to], text, encoded, nil, nil); err != nil {
					return err
				}
				from = to
			}
		}
		if d := s.joinFeed; d != nil && len(p.enc) > 0 {
			// Every window's rows at once, the join taking the buffer.
			if err := d.addFed(&p.enc, nil, &p.cut, s.worker); err != nil {
				return err
			}
		}
	}
	s.parts.Commit(a)
	return nil
}

// flushParts emits every window still open, as the end of the input
// closes them, in steps of window.FlushStep windows (so that the rows of
// a window of thousands of panes' thousands of windows are not all held
// at once): each step flushes the partitions at once and links its
// windows in ranges at once, one goroutine each, then hands them on in
// order. It runs under mergeMu, once every task is handed on, from
// CloseAll, where the workers are done or busy elsewhere: goroutines of
// its own do the partitions' work. It returns the time the caller waited
// for them (wall) and what they worked (work), for the serial_fraction.
func (s *Stream) flushParts() (wall, work int64, err error) {
	p := s.parts
	n := p.N()
	outs := make([]window.PartOut, n)
	rows := s.spec.Windows != nil || s.sinksTuples() || len(s.downstream) > 0
	for k := range outs {
		outs[k].Rows = rows
	}
	step := int64(window.FlushStep)
	if !rows {
		step = math.MaxInt64 // nothing is held: one step
	}
	ranges := min(n, window.FlushStep)
	links := make([]linked, ranges)
	tmp := make([][]window.PartOut, ranges)
	for i := range tmp {
		tmp[i] = make([]window.PartOut, n)
	}
	errs := make([]error, n)
	var busy atomic.Int64
	parallel := func(m int, f func(i int)) {
		t0 := nanotime()
		var wg sync.WaitGroup
		for i := range m {
			wg.Go(func() {
				g0 := nanotime()
				f(i)
				busy.Add(nanotime() - g0)
			})
		}
		wg.Wait()
		wall += nanotime() - t0
	}
	for {
		limit, ok := p.FlushLimit(step)
		if !ok {
			break
		}
		parallel(n, func(k int) { errs[k] = p.FlushPart(k, limit, &outs[k]) })
		if err := errors.Join(errs...); err != nil {
			return wall, busy.Load(), err
		}
		// The step's windows, cut into ranges of about as many each.
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for k := range outs {
			if ws := outs[k].Wins; len(ws) > 0 {
				lo, hi = min(lo, ws[0].W), max(hi, ws[len(ws)-1].W)
			}
		}
		if lo > hi {
			continue // windows without rows only
		}
		// Range i: windows lo+i*per to lo+(i+1)*per-1, the last up to hi
		// (in unsigned arithmetic: hi-lo may pass math.MaxInt64).
		span := uint64(hi) - uint64(lo)
		per := span/uint64(ranges) + 1
		parallel(ranges, func(i int) {
			l := &links[i]
			from := uint64(i) * per
			if from > span {
				p.AssembleRange(outs, 1, 0, tmp[i], &l.asm) // none
			} else {
				to := min(from+per-1, span)
				p.AssembleRange(outs, lo+int64(from), lo+int64(to), tmp[i], &l.asm)
			}
			s.finishLinked(l)
		})
		for i := range links {
			if err := s.handOffLinked(&links[i]); err != nil {
				return wall, busy.Load(), err
			}
		}
	}
	return wall, busy.Load(), nil
}
