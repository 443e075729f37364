package engine

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/saber-hx/saber-hx/scheduler"
)

// Buffer returns ring memory for the rest of the current task, blocking
// while the ring is full (back-pressure). Write whole tuples into a prefix
// of it and Commit their length.
func (s *Stream) Buffer() ([]byte, error) {
	if s.inClosed {
		return nil, errors.New("engine: Buffer after Close")
	}
	if s.upstream != "" {
		return nil, fmt.Errorf("engine: query %q takes its input from %q, not from a producer", s.win.Query, s.upstream)
	}
	if s.filled == 0 && len(s.gates) > 0 {
		s.waitJoins()
	}
	// Try first, so that only a wait reads the clock (Metrics'
	// back-pressure time).
	n := s.taskSize - s.filled
	b, ok, err := s.ring.TryReserve(n)
	if err == nil && !ok {
		start := time.Now()
		b, err = s.ring.Reserve(n)
		s.lat.waited(start)
	}
	if err != nil {
		if ferr := s.e.failed(); ferr != nil {
			return nil, ferr
		}
		return nil, err
	}
	return b, nil
}

// Commit publishes n bytes written into the last Buffer; a full task is
// dispatched.
func (s *Stream) Commit(n int) error {
	if s.unfilled {
		return fmt.Errorf("engine: query %q: Commit inside a task of %d bytes left to the fill function", s.win.Query, s.filled)
	}
	if s.upstream != "" {
		return fmt.Errorf("engine: query %q takes its input from %q, not from a producer", s.win.Query, s.upstream)
	}
	return s.commit(n)
}

func (s *Stream) commit(n int) error {
	if n < 0 || s.filled+n > s.taskSize {
		return fmt.Errorf("engine: commit of %d bytes with %d of %d in the task", n, s.filled, s.taskSize)
	}
	s.ring.Commit(n)
	if s.heap != nil {
		s.heapCommitted = s.heap.Written()
	}
	if s.filled == 0 {
		s.firstAt = nanotime()
	}
	s.filled += n
	if s.filled == s.taskSize {
		s.dispatch()
	} else if s.partialTimer != nil && !s.partialArmed.Load() && s.e.pausing() {
		// A chained stream's rows in a task not full while the input
		// pauses (wherever it was cut): the timer dispatches it
		// (flushPartial, under the feeder that pushes).
		s.armPartial(partialAge)
	}
	return nil
}

// SetFill makes the stream's input ingestible by the workers: fill writes
// the stream's bytes [pos, pos+len(dst)) into dst, whole tuples. After it,
// the producer may publish bytes with CommitUnfilled instead of writing
// them: the processor that runs their task calls fill just before it
// processes them, so the ingestion copy runs on every worker in parallel
// and leaves the task's bytes in that worker's cache for the kernel, where a
// single producer copying everything is the bottleneck of a pipeline on few
// cores (docs/performance.md). A CPU worker fills a buffer of its own
// (worker.ingestBuffer), the GPU processor the task's place in the ring:
// dst is not always ring memory. fill is called concurrently for different
// tasks, in any order: the input must stay addressable (a file, a replayed
// bundle), unlike a socket. Call it before the first Buffer.
func (s *Stream) SetFill(fill func(dst []byte, pos uint64)) { s.fill = fill }

// InFlight is the number of the stream's tasks dispatched and not yet
// merged: queued, running, or finished and waiting for an earlier task.
// For the producer: it lets it leave tasks to the workers (CommitUnfilled)
// only when they would otherwise wait.
func (s *Stream) InFlight() int { return int(s.nextID - s.next.Load()) }

// CommitUnfilled publishes n bytes of the last Buffer, as Commit, but
// leaves them for the stream's fill function (SetFill) to write when their
// task runs. A task's bytes are all written by the producer or all left
// unfilled: mixing Commit and CommitUnfilled inside a task is an error.
func (s *Stream) CommitUnfilled(n int) error {
	switch {
	case s.fill == nil:
		return fmt.Errorf("engine: query %q: CommitUnfilled without SetFill", s.win.Query)
	case s.filled > 0 && !s.unfilled:
		return fmt.Errorf("engine: query %q: CommitUnfilled inside a task of %d bytes written by Commit", s.win.Query, s.filled)
	}
	if s.upstream != "" {
		return fmt.Errorf("engine: query %q takes its input from %q, not from a producer", s.win.Query, s.upstream)
	}
	s.unfilled = true
	return s.commit(n)
}

// Write copies p (any length; tuples may span calls) into the ring. Where
// the input has string columns p must be whole tuples, whose long strings
// are copied into the stream's own heap: they may live in memory another
// stream frees (a source that feeds several queries writes the same
// tuples to each).
func (s *Stream) Write(p []byte) error { return s.write(p, true) }

// WriteShared is Write for tuples whose long strings stay where they are
// until the stream is closed (a replayed bundle's): their views are kept
// as written, and nothing is copied into the stream's heap.
func (s *Stream) WriteShared(p []byte) error { return s.write(p, false) }

func (s *Stream) write(p []byte, copyStrings bool) error {
	if s.heap != nil {
		if len(p)%s.plan.TupleSize != 0 || s.filled%s.plan.TupleSize != 0 {
			return fmt.Errorf("engine: query %q: Write of %d bytes: a stream with strings takes whole tuples", s.win.Query, len(p))
		}
	}
	for len(p) > 0 {
		b, err := s.Buffer()
		if err != nil {
			return err
		}
		n := copy(b, p)
		p = p[n:]
		done := 0
		if s.heap != nil && copyStrings {
			var err error
			if done, err = s.copyStrings(b[:n], s.Strings); err != nil {
				return err
			}
		}
		if err := s.Commit(n - done); err != nil {
			return err
		}
	}
	return nil
}

// dispatch queues the task being filled.
func (s *Stream) dispatch() {
	var t *task
	select {
	case t = <-s.free:
	default:
		if s.made < len(s.records) {
			t = s.newRecord()
			break
		}
		// Every record in flight: wait for the merger to recycle one.
		start := time.Now()
		t = <-s.free
		s.lat.waited(start)
	}
	t.ID = s.nextID
	t.Start = s.taskStart
	t.Data = s.ring.Slice(s.taskStart, s.filled)
	t.Dispatched = scheduler.Nanotime()
	t.Node = s.node
	t.fill = nil
	if s.unfilled {
		t.fill = s.fill
	}
	t.handed = false
	if s.hand != nil {
		t.handFirst, t.handLast, t.handed = s.hand.cut(s.taskStart, s.taskStart+uint64(s.filled))
	}
	if s.heap != nil {
		t.heapEnd = s.heapCommitted
	}
	t.partial, s.cutShort = s.cutShort, false
	s.nextID++
	s.taskStart += uint64(s.filled)
	s.filled, s.unfilled = 0, false
	s.e.queue.Push(&t.Task)
}

// partialAge is how long an aggregation's rows wait downstream for a task
// to fill before flushPartial dispatches it as it is.
const partialAge = 2e6 // ns

// flushPartial dispatches the task being filled, of rows an aggregation
// upstream emitted (or of a query's output over such a task), where a task
// record is free (never waiting for one: it runs in the upstream's result
// stage). An aggregation's rows are few next to its input: a task of them
// waits to fill for many windows, and the queries downstream (a join with
// the stream the rows came from, as Nexmark's q7) would hold all their
// other input meanwhile. It runs under s.feeder.
//
// Not before the task's first rows are partialAge old: a task of rows from
// every merge would cost more than the rows (Nexmark's q8 ran at half its
// speed so). Where they are younger, or every record is in flight, the
// partial timer brings a worker back to it (flushDue): no later merge may
// come while the input pauses.
func (s *Stream) flushPartial() {
	if s.filled == 0 || s.unfilled || s.filled%s.plan.TupleSize != 0 || s.inClosed {
		return
	}
	age := nanotime() - s.firstAt
	if age < partialAge || (len(s.free) == 0 && s.made == len(s.records)) {
		if s.e.pausing() {
			s.armPartial(time.Duration(max(partialAge-age, partialAge/4)))
		}
		return
	}
	s.cutShort = true
	s.dispatch()
}

// The partial task's timer is made stopped, with the chain (connect),
// before any goroutine may arm it.
func (s *Stream) initPartial() {
	s.partialTimer = time.AfterFunc(time.Duration(math.MaxInt64), s.partialTimeout)
	s.partialTimer.Stop()
}

// armPartial arms the partial task's timer to fire in d, unless it is
// armed; from any goroutine (the feeder's holder, a producer's pause).
func (s *Stream) armPartial(d time.Duration) {
	if !s.partialArmed.Load() && s.partialArmed.CompareAndSwap(false, true) {
		s.partialTimer.Reset(d)
	}
}

// partialTimeout marks the stream due and wakes a worker to flush it: a
// worker may take s.feeder, which a timer's goroutine may not (its
// holders leave to it the merges that found it taken, a worker's job). A
// wake reaches only a worker that waits, and one about to wait misses it:
// the timer fires again until a worker has taken the stream up (flushDue
// stops it).
func (s *Stream) partialTimeout() {
	if s.partialStopped.Load() {
		return
	}
	s.partialDue.Store(true)
	s.e.partialsDue.Store(true)
	s.e.wakeOne()
	s.partialTimer.Reset(partialAge)
}

// stopPartial stops the partial task's timer for good. Under s.feeder.
func (s *Stream) stopPartial() {
	s.partialStopped.Store(true)
	s.partialTimer.Stop()
}

// flushDue flushes the partial tasks of the streams whose timer fired, as
// their upstream's merge would: under the feeder lock, taken only where
// free (its holder is merging and comes back to the task), and then takes
// up what a worker that found the lock taken left to it, as a holder must.
func (w *worker) flushDue() {
	e := w.e
	// A load first: every worker looks after every task, and a swap
	// would write the flag's line each time.
	if !e.partialsDue.Load() || !e.partialsDue.Swap(false) {
		return
	}
	for _, s := range e.streams {
		if !s.partialDue.Swap(false) {
			continue
		}
		if !s.feeder.TryLock() {
			s.partialDue.Store(true)
			e.partialsDue.Store(true)
			continue
		}
		s.partialArmed.Store(false)
		s.partialTimer.Stop()
		s.flushPartial()
		s.feeder.Unlock()
		if js := s.feedJoin; js != nil {
			if err := js.drain(w); err != nil {
				e.fail(err)
			}
		} else {
			s.ups[0].mergeReady(w)
		}
	}
}

// Flush dispatches the task being filled now, however few bytes it holds
// (none: nothing to do), so that a live source whose records trickle in
// sees them merged and their windows emitted without waiting for a task
// to fill: call it when the input pauses (a Kafka source's linger), not
// per record, as each call may cut a small task. It also opens the pause
// window, in which the queries chained below send on what they hold
// (pause). The bytes committed must be whole tuples.
func (s *Stream) Flush() error {
	switch {
	case s.inClosed:
		return errors.New("engine: Flush after Close")
	case s.upstream != "":
		return fmt.Errorf("engine: query %q takes its input from %q, not from a producer", s.win.Query, s.upstream)
	case s.filled%s.plan.TupleSize != 0:
		return fmt.Errorf("engine: query %q: Flush inside a tuple: %d bytes of a %d-byte tuple committed", s.win.Query, s.filled%s.plan.TupleSize, s.plan.TupleSize)
	case s.filled > 0:
		// Marked partial: the input pauses, and the queries downstream
		// flush what they hold of it too (flushPartial).
		s.cutShort = true
		s.dispatch()
	}
	s.e.pause()
	return nil
}

// pauseWindow is how long after a producer's Flush (its input paused)
// the chained streams' partial timers run: long enough for rows to cross
// a chain of queries, task by task. A steady input, which no producer
// flushes, runs none (they cost Nexmark's q7 a tenth of its speed).
const pauseWindow = time.Second

// pause starts (or extends) the pause window and arms every chained
// stream's partial timer: the rows the input left in their tasks go on
// without more input, whatever task boundary it paused on.
func (e *Engine) pause() {
	e.pausedUntil.Store(nanotime() + int64(pauseWindow))
	for _, s := range e.streams {
		if s.partialTimer != nil {
			s.armPartial(partialAge)
		}
	}
}

// pausing says whether a producer paused within the pause window.
func (e *Engine) pausing() bool { return nanotime() < e.pausedUntil.Load() }

// closeInput flushes the last partial task.
func (s *Stream) closeInput() {
	if s.inClosed {
		return
	}
	s.inClosed = true
	if r := s.filled % s.plan.TupleSize; r != 0 {
		s.e.fail(fmt.Errorf("query %q: input ends inside a tuple: %d trailing bytes", s.win.Query, r))
	} else if s.filled > 0 {
		s.dispatch()
	}
}
