package engine

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/scheduler"
	"github.com/saber-hx/saber-hx/window"
)

// finish hands a processed task to the result stage and merges every task
// that is next in order.
func (s *Stream) finish(t *task, w *worker) {
	if s.outBlank != nil {
		s.blankOutput(t.result.Out)
	}
	// A regular join copies the strings it keeps itself, in Cut (below):
	// its input's need no pinning, only the unread ones emptying.
	if s.joinSide != nil && len(s.heapAttrs) > 0 && !t.result.Refused && !s.joinSide.j.Regular {
		s.pinJoinInput(t.result.Out, &t.result.Strings, nil)
	}
	if d := s.joinFeed; d != nil && s.parts == nil && !t.result.Refused {
		d.prepareFed(t, w)
	} else {
		s.cutJoinInput(t)
	}
	t.lendable = false
	if len(s.downstream) == 1 && s.downstream[0].hand != nil && !t.result.Refused {
		d := s.downstream[0]
		t.lendable = d.hand.lends(t.result.Out) && d.lendable(t.result.Out)
	}
	t.encoded = false
	if e := s.spec.Encoded; e != nil && s.parts == nil && s.asm == nil && s.joinSide == nil && !t.result.Refused {
		// The sink's encoding of a stateless query's output, here rather
		// than in the ordered merge.
		t.enc, t.encoded = e.Encode(t.enc[:0], t.result.Out), true
	}
	if s.parts != nil {
		// The partitions' merges push nowhere: they need no deferring.
		s.finishParts(t, w)
	} else {
		s.ready[t.ID&s.mask].Store(t)
	}
	if w != nil && w.pushing > s.id+1 {
		// The worker waits for a later stream's ring (worker.pushing):
		// the merge waits until it no longer does.
		w.deferMerge(s)
		return
	}
	s.mergeReady(w)
	if w != nil {
		w.drainDeferred()
	}
}

// mergeReady merges every finished task that is next in order, unless
// another worker is merging: ready holds the finished tasks (of a
// partitioned stage, the assembled ones).
func (s *Stream) mergeReady(w *worker) {
	if w != nil {
		w.merging++
		defer func() {
			if w.merging--; w.merging == 0 {
				w.runDueJoins()
			}
		}()
	}
	for {
		if !s.mergeMu.TryLock() {
			return // the holder re-checks after unlocking
		}
		sc := w.beginSerial()
		n := s.next.Load()
		first := n
		var released *[]*window.GroupState
		base := 0
		if w != nil {
			released, base = &w.released, len(w.released)
		}
		for {
			sl := &s.ready[n&s.mask]
			t := sl.Load()
			if t == nil || t.ID != n {
				break
			}
			sl.Store(nil)
			s.merge(t, w, released)
			n++
			s.next.Store(n)
		}
		w.endSerial(sc, s.clock())
		s.mergeMu.Unlock()
		if w != nil {
			// The merged tasks' group states, back to the pools now that
			// the ordered stage is let go.
			window.GiveBack(w.released[base:])
			clear(w.released[base:])
			w.released = w.released[:base]
		}
		if n != first {
			// The room the merges made, told out of the ordered stage:
			// waking a producer or worker that sleeps is a system call.
			s.ring.Wake()
			ringBell(s.room)
		}
		// A task that finished while we held the lock found it taken and
		// left its merge to us. Only the slot's emptiness may be read here:
		// a task seen after unlocking may already be merged and recycled by
		// another worker. With fewer tasks in flight than slots, a full slot
		// at next's index holds task next (or a later merger moved next on,
		// and the extra TryLock round is harmless).
		if s.ready[s.next.Load()&s.mask].Load() == nil {
			return
		}
	}
}

// merge runs under mergeMu, in task order.
func (s *Stream) merge(t *task, w *worker, released *[]*window.GroupState) {
	var counted *window.TaskResult // a stateless query's counters to add
	if s.e.failed() == nil {
		var err error
		s.worker = w
		switch {
		case t.result.Refused:
			err = s.refused(t)
		case s.parts != nil:
			err = s.handOff(t)
		case s.asm != nil:
			err = s.asm.MergeTake(&t.result, s.emitFn)
		default:
			// The result stage of a stateless query: the task's output
			// handed on in order.
			counted = &t.result
			if s.joinSide != nil {
				err = s.joinSide.add(s.side, &t.result.Out, true, &t.result.Strings, &t.cut, w)
			} else if d := s.joinFeed; d != nil {
				err = d.addFed(&t.result.Out, &t.result.Strings, &t.cut, w)
			} else {
				var lend *[]byte
				if t.lendable {
					lend = &t.result.Out
				}
				err = s.outputEncoded(t.result.Out, t.enc, t.encoded, &t.enc, lend)
			}
		}
		if err != nil {
			s.e.fail(err)
		}
		if s.asm != nil || t.partial {
			for _, d := range s.downstream {
				d.flushPartial()
			}
		}
	}
	if s.hand != nil {
		// Before the ring's Free: the producer reserves no position past
		// the ring's size ahead of an entry not yet released (newHandOff).
		s.hand.release(t.Start + uint64(len(t.Data)))
	}
	s.ring.Release(t.Start + uint64(len(t.Data))) // mergeReady wakes the producer
	if s.heap != nil {
		s.heap.Free(t.heapEnd)
	}
	s.lat.record(time.Duration(scheduler.Nanotime() - t.Dispatched))
	s.publish(t, counted)
	if s.chain != nil {
		s.markChain(t)
	}
	// The task's group states leave it, so that a record waiting in
	// s.free, or queued, holds none: into released, which the merging
	// worker gives back to the pool once it lets go of mergeMu, or
	// straight back where there is no worker. (A partitioned stage's
	// tasks gave theirs back as they were assembled.)
	if s.parts == nil {
		if released == nil {
			t.result.Release()
		} else {
			*released = t.result.TakeStates(*released)
		}
	}
	t.Data = nil
	s.free <- t
}

// refused is the InputError of task t's refused tuple.
func (s *Stream) refused(t *task) error {
	ts := uint64(s.plan.TupleSize)
	i := uint64(t.result.RefusedAt)
	return &InputError{Query: s.win.Query, Offset: t.Start + i*ts, Tuple: t.Start/ts + i,
		Pos: t.result.RefusedPos, Rows: s.plan.Query.Window.Type == query.Rows}
}

func (s *Stream) emit(o *window.Result) error {
	if s.plan.StringKeys() && len(o.Rows) > 1 {
		s.sortKeys, s.sortBuf = sortRows(s.plan, o, s.sortKeys, s.sortBuf)
	}
	if s.spec.Windows != nil {
		s.win.Start, s.win.End, s.win.res = o.Start, o.End, o
		if err := s.spec.Windows(&s.win); err != nil {
			return windowError(s, o.Start, o.End, err)
		}
	}
	if s.sinksTuples() || len(s.downstream) > 0 {
		s.outBuf = s.encodeRows(s.outBuf[:0], o)
		return s.output(s.outBuf)
	}
	return nil
}

// finishAll runs after the workers stopped: every window still open is
// emitted.
func (s *Stream) finishAll() {
	s.mergeMu.Lock()
	defer s.mergeMu.Unlock()
	var w *worker // the workers have stopped
	sc := w.beginSerial()
	defer func() { w.endSerial(sc, s.clock()) }()
	if s.next.Load() != s.nextID && s.e.failed() == nil {
		s.e.fail(fmt.Errorf("engine: query %q: %d of %d tasks merged after the workers stopped", s.win.Query, s.next.Load(), s.nextID))
	}
	s.flushLocked(nil, &sc)
	s.publish(nil, nil)
}

// flush emits every window still open, once the stream's tasks are merged.
func (s *Stream) flush(w *worker) {
	s.mergeMu.Lock()
	if w != nil {
		w.merging++
	}
	sc := w.beginSerial()
	s.flushLocked(w, &sc)
	s.publish(nil, nil)
	w.endSerial(sc, s.clock())
	s.mergeMu.Unlock()
	if w != nil {
		w.merging--
		w.drainDeferred()
	}
}

// flushLocked runs in serial section sc of w.
func (s *Stream) flushLocked(w *worker, sc *section) {
	if s.flushed || s.asm == nil || s.e.failed() != nil {
		return
	}
	s.flushed = true
	s.worker = w
	var err error
	if s.parts != nil {
		for i := range s.pstages {
			s.pstages[i].mu.Lock()
			defer s.pstages[i].mu.Unlock()
		}
		var wall, work int64
		wall, work, err = s.flushParts()
		w.parallelWork(sc, wall, work, s.clock())
	} else {
		err = s.asm.Flush(s.emitFn)
	}
	if err != nil {
		s.e.fail(err)
	}
}

// windowError is the error of the sink of s's window [start, end).
func windowError(s *Stream, start, end int64, err error) error {
	return fmt.Errorf("query %q window [%d, %d): %w", s.win.Query, start, end, err)
}

// sortRows orders a window's rows by their canonical keys: a string key
// is the number the kernels gave it, which follows the workers' timing, so
// that key bytes would order the rows differently from run to run. keys
// and buf are scratch, returned for reuse.
func sortRows(p *kernels.Plan, o *window.Result, keys []sortKey, buf []byte) ([]sortKey, []byte) {
	keys, buf = keys[:0], buf[:0]
	for _, g := range o.Rows {
		kb := o.State.KeyBytes(g)
		n := len(buf)
		buf = p.AppendCanonicalKey(buf, kb[:])
		keys = append(keys, sortKey{row: g, from: n, to: len(buf)})
	}
	slices.SortFunc(keys, func(a, b sortKey) int { return bytes.Compare(buf[a.from:a.to], buf[b.from:b.to]) })
	for i, k := range keys {
		o.Rows[i] = k.row
	}
	return keys, buf
}

// sortKey is a row and the span of its canonical key in sortBuf.
type sortKey struct {
	row      int32
	from, to int
}
