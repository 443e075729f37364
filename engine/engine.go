// Package engine is the glue of saber-hx's data path for one query:
//
//	producer ──► buffer.Ring ──► dispatcher ──► scheduler.Queue ──► cpu workers ──► result stage ──► Sink
//
// The producer (the caller of Buffer/Commit or Write) fills the query's ring;
// the dispatcher, which runs on the producer's goroutine, cuts the ring into
// tasks of Config.TaskSize bytes, numbers them and queues them. Workers run
// the compiled kernel over a task's bytes and hand the task to the result
// stage, which merges task results strictly in task order (window.Assembler),
// emits closed windows to the Sink in window order and frees the task's
// bytes in the ring.
//
// The result stage has no goroutine of its own: whichever worker finishes
// the next task in order merges it and every consecutive task already
// finished (a TryLock, then a re-check after unlocking, so that no finished
// task is left behind). Per task that costs one channel operation to queue
// it, one to recycle it, and a lock; per tuple nothing.
package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saber-hx/saber-hx/buffer"
	"github.com/saber-hx/saber-hx/cpu"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/scheduler"
	"github.com/saber-hx/saber-hx/window"
)

// Config tunes the engine.
type Config struct {
	Workers    int              // CPU worker goroutines, >= 1
	Pin        bool             // pin each worker to its own core
	CPUs       []int            // cores to pin to; nil: the process's affinity mask
	TaskSize   int              // bytes per task, a multiple of the tuple size
	BufferSize int              // ring bytes: a power of two, at least 2 tasks
	Policy     scheduler.Policy // "" means fcfs
	Warn       func(msg string) // warnings (pinning refused); nil: dropped
}

// Validate checks cfg against a tuple size, naming the bad value and the
// valid range.
func (c Config) Validate(tupleSize int) error {
	switch {
	case c.Workers < 1:
		return fmt.Errorf("workers %d: need at least 1", c.Workers)
	case tupleSize <= 0:
		return fmt.Errorf("tuple size %d must be positive", tupleSize)
	case c.TaskSize < tupleSize || c.TaskSize%tupleSize != 0:
		return fmt.Errorf("task size %d: must be a positive multiple of the %d-byte tuple", c.TaskSize, tupleSize)
	case c.BufferSize <= 0 || bits.OnesCount(uint(c.BufferSize)) != 1:
		return fmt.Errorf("buffer size %d: must be a power of two", c.BufferSize)
	case c.BufferSize < 2*c.TaskSize:
		return fmt.Errorf("buffer size %d: must hold at least two tasks of %d bytes", c.BufferSize, c.TaskSize)
	}
	return nil
}

// Window is one closed window handed to the Sink: its rows in group-key
// order. It is only valid during the Sink call.
type Window struct {
	Query      string
	Start, End int64

	plan *kernels.Plan
	out  *window.Output
	key  [16]byte
}

// Rows is the number of rows (groups) in the window.
func (w *Window) Rows() int { return len(w.out.State.Touched) }

// Key returns the group key of row i (nil without GROUP BY): the joined
// value when grouping by a static join, else the GROUP BY columns encoded
// in key order (integers big-endian with the sign bit flipped; see
// GroupInt). The slice is valid until the next call.
func (w *Window) Key(i int) []byte {
	s := w.out.State.Touched[i]
	if w.plan.GroupCols == nil {
		return w.plan.GroupKeys[s]
	}
	k0, k1 := w.out.State.Key(s)
	binary.BigEndian.PutUint64(w.key[0:], k0)
	binary.BigEndian.PutUint64(w.key[8:], k1)
	last := w.plan.GroupCols[len(w.plan.GroupCols)-1]
	return w.key[:last.Pos+last.Size]
}

// GroupInt returns integer GROUP BY column j of row i.
func (w *Window) GroupInt(i, j int) int64 {
	return w.plan.GroupCols[j].DecodeInt(w.out.State.Key(w.out.State.Touched[i]))
}

// Agg returns aggregate a (in the query's order) of row i.
func (w *Window) Agg(i, a int) int64 {
	return w.out.State.Row(w.out.State.Touched[i])[w.plan.AggWord[a]]
}

// Sink receives closed windows in window order. An error stops the run.
type Sink func(w *Window) error

// Stats are the engine's counters. Tuples = Filtered + Unmatched + Late +
// Counted for every merged task.
type Stats struct {
	Tasks, Bytes                               uint64
	Tuples, Filtered, Unmatched, Late, Counted uint64
	Windows, Rows                              uint64
	Watermark                                  int64
	Pinned                                     []int // CPU of each worker, -1 where not pinned
}

// ErrAborted is returned by the producer side after Abort.
var ErrAborted = errors.New("engine: aborted")

// Engine runs one query. The producer methods (Buffer, Commit, Write, Close)
// must be called from one goroutine.
type Engine struct {
	cfg    Config
	plan   *kernels.Plan
	kernel kernels.Kernel
	sink   Sink

	ring    *buffer.Ring
	queue   scheduler.Queue
	workers *cpu.Group
	free    chan *scheduler.Task // recycled tasks; its capacity bounds tasks in flight

	// Producer and dispatcher.
	taskStart uint64 // ring offset of the task being filled
	filled    int    // bytes of it committed
	nextID    uint64
	closed    bool

	// Result stage.
	slots   []atomic.Pointer[scheduler.Task] // finished tasks by ID & mask
	mask    uint64
	mergeMu sync.Mutex
	next    atomic.Uint64 // ID of the next task to merge
	asm     *window.Assembler
	win     Window
	emitFn  func(*window.Output) error

	errMu sync.Mutex
	err   error

	tasks, bytes                               atomic.Uint64
	tuples, filtered, unmatched, late, counted atomic.Uint64
	windows, rows                              atomic.Uint64
	watermark                                  atomic.Int64
}

// New compiles q, allocates its ring and starts the workers.
func New(cfg Config, q *query.Query, sink Sink) (*Engine, error) {
	kernel, plan, err := kernels.Compile(q)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(plan.TupleSize); err != nil {
		return nil, err
	}
	if cfg.Policy == "" {
		cfg.Policy = scheduler.FCFS
	}
	if sink == nil {
		sink = func(*Window) error { return nil }
	}
	// Every task in flight holds TaskSize bytes of the ring but the last,
	// partial one: that bounds the tasks in flight.
	inFlight := cfg.BufferSize/cfg.TaskSize + 1
	queue, err := scheduler.New(cfg.Policy, inFlight)
	if err != nil {
		return nil, err
	}
	ring, err := buffer.NewRing(cfg.BufferSize)
	if err != nil {
		return nil, fmt.Errorf("ring for query %q: %w", q.Name, err)
	}
	nslots := 1 << bits.Len(uint(inFlight))
	e := &Engine{
		cfg: cfg, plan: plan, kernel: kernel, sink: sink,
		ring: ring, queue: queue,
		free:  make(chan *scheduler.Task, inFlight),
		slots: make([]atomic.Pointer[scheduler.Task], nslots),
		mask:  uint64(nslots - 1),
		asm:   window.NewAssembler(plan.Spec, plan.Layout),
		win:   Window{Query: q.Name, plan: plan},
	}
	e.emitFn = e.emit
	// A task spans two panes whenever it crosses a window boundary: give
	// each task two group states up front where they are small, so that
	// steady state is reached without allocating in the run.
	spares := 0
	if plan.Layout.Groups*plan.Layout.Words()*8 <= 1<<20 {
		spares = 2
	}
	for range inFlight {
		t := &scheduler.Task{}
		t.Result.Prealloc(plan.Layout, spares)
		e.free <- t
	}
	e.watermark.Store(e.asm.Watermark())
	e.workers, err = cpu.Start(cpu.Options{Workers: cfg.Workers, Pin: cfg.Pin, CPUs: cfg.CPUs, Warn: cfg.Warn}, e.work)
	if err != nil {
		ring.Close()
		return nil, err
	}
	return e, nil
}

// Plan returns the compiled query.
func (e *Engine) Plan() *kernels.Plan { return e.plan }

// work is a worker's loop.
func (e *Engine) work(id int) {
	p := scheduler.Processor{Kind: 0, ID: id}
	layout := e.plan.Layout
	for t := e.queue.Pop(p); t != nil; t = e.queue.Pop(p) {
		t.Result.Reset(layout)
		if e.failed() == nil {
			e.kernel.Process(t.Data, t.Start/uint64(e.plan.TupleSize), &t.Result)
		}
		e.finish(t)
	}
}

// finish hands a processed task to the result stage and merges every task
// that is next in order.
func (e *Engine) finish(t *scheduler.Task) {
	e.slots[t.ID&e.mask].Store(t)
	for {
		if !e.mergeMu.TryLock() {
			return // the holder re-checks after unlocking
		}
		n := e.next.Load()
		for {
			s := &e.slots[n&e.mask]
			t := s.Load()
			if t == nil || t.ID != n {
				break
			}
			s.Store(nil)
			e.merge(t)
			n++
			e.next.Store(n)
		}
		e.mergeMu.Unlock()
		// A task that finished while we held the lock found it taken and
		// left its merge to us. Only the slot's emptiness may be read here:
		// a task seen after unlocking may already be merged and recycled by
		// another worker. With fewer tasks in flight than slots, a full slot
		// at next's index holds task next (or a later merger moved next on,
		// and the extra TryLock round is harmless).
		if e.slots[e.next.Load()&e.mask].Load() == nil {
			return
		}
	}
}

// merge runs under mergeMu, in task order.
func (e *Engine) merge(t *scheduler.Task) {
	if e.failed() == nil {
		if err := e.asm.Merge(&t.Result, e.emitFn); err != nil {
			e.fail(err)
		}
	}
	e.ring.Free(t.Start + uint64(len(t.Data)))
	e.publish()
	e.tasks.Add(1)
	e.bytes.Add(uint64(len(t.Data)))
	t.Data = nil
	e.free <- t
}

// publish copies the assembler's counters where Stats can read them.
func (e *Engine) publish() {
	c := &e.asm.Counters
	e.tuples.Store(c.Tuples)
	e.filtered.Store(c.Filtered)
	e.unmatched.Store(c.Unmatched)
	e.late.Store(c.Late)
	e.counted.Store(c.Counted)
	e.windows.Store(c.Windows)
	e.rows.Store(c.Rows)
	e.watermark.Store(e.asm.Watermark())
}

func (e *Engine) emit(o *window.Output) error {
	e.win.Start, e.win.End, e.win.out = o.Start, o.End, o
	if err := e.sink(&e.win); err != nil {
		return fmt.Errorf("query %q window [%d, %d): %w", e.win.Query, o.Start, o.End, err)
	}
	return nil
}

// fail records the first error and unblocks the producer.
func (e *Engine) fail(err error) {
	e.errMu.Lock()
	if e.err == nil {
		e.err = err
	}
	e.errMu.Unlock()
	e.ring.Cancel()
}

func (e *Engine) failed() error {
	e.errMu.Lock()
	defer e.errMu.Unlock()
	return e.err
}

// Abort stops the run with err (ErrAborted if nil); safe from any goroutine.
// The producer's next call returns the error; Close still must be called.
func (e *Engine) Abort(err error) {
	if err == nil {
		err = ErrAborted
	}
	e.fail(err)
}

// Buffer returns ring memory for the rest of the current task, blocking
// while the ring is full (back-pressure). Write whole tuples into a prefix
// of it and Commit their length.
func (e *Engine) Buffer() ([]byte, error) {
	if e.closed {
		return nil, errors.New("engine: Buffer after Close")
	}
	b, err := e.ring.Reserve(e.cfg.TaskSize - e.filled)
	if err != nil {
		if ferr := e.failed(); ferr != nil {
			return nil, ferr
		}
		return nil, err
	}
	return b, nil
}

// Commit publishes n bytes written into the last Buffer; a full task is
// dispatched.
func (e *Engine) Commit(n int) error {
	if n < 0 || e.filled+n > e.cfg.TaskSize {
		return fmt.Errorf("engine: commit of %d bytes with %d of %d in the task", n, e.filled, e.cfg.TaskSize)
	}
	e.ring.Commit(n)
	e.filled += n
	if e.filled == e.cfg.TaskSize {
		return e.dispatch()
	}
	return nil
}

// Write copies p (any length; tuples may span calls) into the ring.
func (e *Engine) Write(p []byte) error {
	for len(p) > 0 {
		b, err := e.Buffer()
		if err != nil {
			return err
		}
		n := copy(b, p)
		p = p[n:]
		if err := e.Commit(n); err != nil {
			return err
		}
	}
	return nil
}

// dispatch queues the task being filled.
func (e *Engine) dispatch() error {
	t := <-e.free
	t.ID = e.nextID
	t.Start = e.taskStart
	t.Data = e.ring.Slice(e.taskStart, e.filled)
	t.Dispatched = time.Now().UnixNano()
	e.nextID++
	e.taskStart += uint64(e.filled)
	e.filled = 0
	e.queue.Push(t)
	return nil
}

// Close flushes the last partial task, waits for every task, emits every
// open window (the end of input closes them) and releases the ring.
func (e *Engine) Close() (Stats, error) {
	if e.closed {
		return e.Stats(), errors.New("engine: closed twice")
	}
	e.closed = true
	var tail error
	if e.filled%e.plan.TupleSize != 0 {
		tail = fmt.Errorf("input ends inside a tuple: %d trailing bytes", e.filled%e.plan.TupleSize)
		e.fail(tail)
	} else if e.filled > 0 {
		e.dispatch()
	}
	e.queue.Close()
	e.workers.Wait()
	e.mergeMu.Lock()
	if e.next.Load() != e.nextID && e.failed() == nil {
		e.fail(fmt.Errorf("engine: %d of %d tasks merged after the workers stopped", e.next.Load(), e.nextID))
	}
	if e.failed() == nil {
		if err := e.asm.Flush(e.emitFn); err != nil {
			e.fail(err)
		}
	}
	e.publish()
	e.mergeMu.Unlock()
	e.ring.Close()
	return e.Stats(), e.failed()
}

// Stats returns a snapshot of the counters; safe from any goroutine.
func (e *Engine) Stats() Stats {
	return Stats{
		Tasks: e.tasks.Load(), Bytes: e.bytes.Load(),
		Tuples: e.tuples.Load(), Filtered: e.filtered.Load(), Unmatched: e.unmatched.Load(),
		Late: e.late.Load(), Counted: e.counted.Load(),
		Windows: e.windows.Load(), Rows: e.rows.Load(),
		Watermark: e.watermark.Load(),
		Pinned:    e.workers.Pinned(),
	}
}

// Group returns the group ordinal of row i: for dense groups the index of
// its key in the plan's GroupKeys; for hashed groups a slot, meaningful only
// during this call.
func (w *Window) Group(i int) int32 { return w.out.State.Touched[i] }
