package engine

import (
	"bytes"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saber-hx/saber-hx/buffer"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/scheduler"
	"github.com/saber-hx/saber-hx/window"
)

// cacheLine is the false-sharing granule on amd64 (and most arm64 parts),
// as in package buffer.
const cacheLine = 64

// Stream is one query's ring, dispatcher and result stage. Its producer
// methods (Buffer, Commit, Write) must be called from one goroutine.
//
// Its fields are grouped by who writes them, each group on cache lines of
// its own (as buffer.Ring's counters): the producer commits many times per
// task and the merger writes its state once per task, on other cores, and
// neither should invalidate the lines the other writes or the read-only
// lines every worker reads (plan, ring, slots) to run and finish a task.
type Stream struct {
	_ [cacheLine]byte // keep our lines off whatever precedes us in its span

	// Set by newStream and Start (gpuErr, the chaining), read-only while
	// tasks run: shared by every goroutine.
	e      *Engine
	id     int
	plan   *kernels.Plan
	layout *window.Layout
	spec   Spec
	ring   *buffer.Ring
	// heap holds the long strings of the tuples in ring (strings.go); nil
	// where the input has no String attribute. heapAttrs are those the
	// query reads, blankAttrs those it does not (copyStrings).
	heap       *buffer.Ring
	heapAttrs  []query.Attribute
	blankAttrs []query.Attribute
	// inputStable: the stream's input is aggregations' rows, whose
	// strings outlive it (stableInputs): push copies none.
	inputStable bool
	// outBlank are the String columns of a stateless query's output that
	// no query downstream reads: the worker that ran a task empties their
	// long strings (narrowViews).
	outBlank []query.Attribute
	// records are the stream's tasks, by Task.Ref: the first
	// preallocRecords made by newStream, the rest by the producer when it
	// first needs them (newRecord); a record is read by the workers only
	// once the queue hands its task over.
	records []*task
	free    chan *task // recycled tasks (the producer takes, the merger gives back); its capacity bounds tasks in flight
	// room is rung when a merge freed ring and heap space: a push that
	// found them full waits on it (worker.waitBell).
	room     chan struct{}
	taskSize int
	// pool lends the tasks' results their group states (an aggregation's),
	// given back at each task's merge: they grow with the tasks being run
	// and merged, not with the records in flight.
	pool *window.StatePool
	node int // index of the NUMA node of the ring's memory (0 if unknown)
	// gpuErr is why the GPU cannot run the query (nil: it can, or there is
	// no GPU).
	gpuErr error
	// Chaining.
	upstream   string    // the query that feeds this stream; "": an external producer
	downstream []*Stream // take this stream's output tuples
	ups        []*Stream // feed this stream: its upstream query's stream, or both of its upstream join's
	// producer is the group of streams one producer writes (SameProducer),
	// 0 for none; set before the producer writes, read by the workers.
	producer atomic.Int64
	// feeder is the lock its upstream pushes into this stream under (the
	// upstream's mergeMu, or its join's drainMu): what Snapshot takes to
	// dispatch the task the upstream left partly filled.
	feeder *sync.Mutex
	// feedJoin is the window join whose output feeds the stream (feeder
	// is its drainMu); nil: an upstream query's stream does.
	feedJoin *joinStage
	// The partial task's timer (flushPartial, under feeder): armed while
	// rows wait in a task too young to dispatch, it marks the stream due
	// for a worker (worker.flushDue). Made by connect; its flags are
	// partialState's.
	partialTimer *time.Timer
	joinSide     *joinStage
	chain        *chainMarks // a chained stream's (markChains); nil: none
	side         int         // 0 left, 1 right
	// joinFeed is the window join's side stream that this stateless
	// query's output goes to, added to the join by this stream's result
	// stage rather than pushed through that stream (feedJoins); nil: none.
	joinFeed *Stream
	// hand is the lent input of a stream fed by a stateless query alone
	// (lendOutputs, handoff.go); nil: its input is copied into its ring.
	hand *handOff
	// gates are the window-join sides this stream's producer feeds
	// (gateJoins; only for a stream without upstream): Buffer waits while
	// one runs ahead of its other side.
	gates []joinGate
	right *Stream // a join's left input: the right one
	// ready holds finished tasks by ID & mask: the slice is read-only, its
	// elements are stored by the finishing worker and taken by the merger.
	ready []atomic.Pointer[task]
	mask  uint64
	// A hashed aggregation's or keyed sessions' partitioned result stage
	// (assembly.go), nil for others: slots hold its finished tasks for
	// the partitions, which move them to ready once assembled.
	parts    partsStage
	pstages  []partStage
	slots    []atomic.Pointer[task]
	partRows bool // the partitions copy their rows out (initParts)

	_ [cacheLine]byte
	producerState

	_ [cacheLine]byte
	mergerState

	_ [cacheLine]byte
	published

	_ [cacheLine]byte
	partialState

	_ [cacheLine]byte // keep our lines off whatever follows us in its span
}

// partialState is the partial task's timer's flags: written by the timer's
// goroutine, the pushes and the worker that flushes, on lines of their
// own, off those every worker reads per task.
type partialState struct {
	partialArmed   atomic.Bool
	partialDue     atomic.Bool
	partialStopped atomic.Bool // the input has ended
}

// producerState is the dispatcher's: written only by the stream's producer
// (the caller of Buffer, Commit and Write; for a chained stream, its
// upstream's merger, in push), and read by CloseAll after the producers
// returned.
type producerState struct {
	fill      func(dst []byte, pos uint64) // SetFill: ingestion by the workers
	unfilled  bool                         // the task being filled is left to fill
	taskStart uint64                       // ring offset of the task being filled
	filled    int                          // bytes of it committed
	nextID    uint64                       // ID of the next task to dispatch
	made      int                          // records made (newRecord)
	inClosed  bool
	cutShort  bool  // the next dispatch is flushPartial's (task.partial)
	firstAt   int64 // nanotime of the first commit into the task being filled
	// heapCommitted is where the string heap stood at the last commit:
	// past it lie only the strings of tuples not committed yet (those of
	// a batch whose strings Strings or a push's copy is still placing),
	// which belong to the next task, whatever is dispatched before them.
	heapCommitted uint64
	// helper runs tasks for Snapshot while it drains chained queries and
	// joins (stream 0's, made at the first such snapshot).
	helper *worker
}

// mergerState is the result stage's: written under mergeMu by whichever
// worker merges (Stream.finish), but next, which the producer reads
// (InFlight) and the merger stores atomically. win.Query and win.plan are
// set once by newStream and read anywhere (error messages).
type mergerState struct {
	mergeMu sync.Mutex
	next    atomic.Uint64 // ID of the next task to merge
	asm     window.Stage  // an aggregation's: panes and windows, or sessions
	win     Window
	emitFn  func(*window.Result) error // s.emit, bound once: no closure per task
	outBuf  []byte                     // an aggregation's rows encoded as tuples
	encBuf  []byte                     // Spec.Encoded's encoding made in order
	// outSchema is an aggregation's output schema; outGeneral says
	// encodeNumeric cannot write it (strings, booleans, NULLs).
	outSchema  *query.Schema
	outGeneral bool
	// sortKeys and sortBuf are sortRows', reused.
	sortKeys []sortKey
	sortBuf  []byte
	worker   *worker // the worker merging now (for emit)
	flushed  bool
}

// published holds the counters Stats reads from any goroutine: stored by
// the merger under the seqlock seq (publish), but gpuFallback, which the
// GPU worker adds to, and lat, whose quantiles ResetLatency restarts.
type published struct {
	lat                                        latencyHist
	seq                                        atomic.Uint64 // odd while publish changes the counters
	tasks, bytes                               atomic.Uint64
	tuples, filtered, unmatched, late, counted atomic.Uint64
	windows, rows                              atomic.Uint64
	watermark                                  atomic.Int64
	complete                                   atomic.Int64          // Progress's Complete, an aggregation's
	restored                                   atomic.Pointer[Stats] // RestoredStats; set once, by Restore
	gpuFallback                                atomic.Uint64         // tasks the GPU kind ran on its CPU fallback kernel
}

// task is the engine's record of one task: the scheduler's part, which the
// queue orders (its ID, query and bytes), and what only the engine reads:
// how its bytes are ingested and its result. A stream owns a fixed set of
// them (Stream.records), recycled through Stream.free: no allocation per
// task. A task the queue hands back finds its record by Ref (taskOf).
type task struct {
	scheduler.Task
	// fill, if set, writes the task's len(Data) bytes before it runs (pos:
	// the stream offset of Data[0], as Start): the stream is ingested by
	// the processor that runs the task (Stream.CommitUnfilled), into Data
	// or into a buffer of its own (a CPU worker's).
	fill func(dst []byte, pos uint64)
	// handed: the task's bytes are the hand-off entries [handFirst,
	// handLast) of its stream's (handOff.fill), some of them lent.
	handed              bool
	handFirst, handLast uint64
	// lendable: a stateless task's output may be lent to the query
	// downstream (Stream.lendable, asked by the worker that ran it).
	lendable bool
	result   window.TaskResult
	// heapEnd is where the stream's string heap stood at the task's last
	// commit (producerState.heapCommitted): the merge frees it up to
	// there.
	heapEnd uint64
	// partial: flushPartial cut the task short, of rows an aggregation
	// emitted; its output is handed on as promptly (merge).
	partial bool
	// parts is the task's in a partitioned result stage (assembly.go).
	parts partsTask
	// enc is a stateless query's output encoded for Spec.Encoded by the
	// worker that ran the task (encoded set), for the merge to write.
	enc     []byte
	encoded bool
	// cut is the output cut into panes' runs where a window join files
	// it (cutJoinInput).
	cut kernels.JoinCut
}

// taskOf is the record of a task the queue handed back.
func (e *Engine) taskOf(t *scheduler.Task) *task { return e.streams[t.Query].records[t.Ref] }

// chained: the stream takes an upstream's output, not a producer's.
func (e *Engine) newStream(sp Spec, chained bool) (*Stream, error) {
	id := len(e.streams)
	if sp.Query == nil {
		return nil, fmt.Errorf("engine: spec %d has no query", len(e.entries))
	}
	if sp.DictColumns != nil && chained {
		return nil, fmt.Errorf("engine: spec %d (%s): dictionary-encoded columns (Spec.DictColumns) are a producer's, and its tuples are an upstream's", len(e.entries), sp.Query.Name)
	}
	plan, err := kernels.CompileWith(sp.Query, kernels.Options{Vectorised: e.cfg.Vectorised, DictColumns: sp.DictColumns})
	if err != nil {
		return nil, err
	}
	// A chained query's tuples are its upstream's output: its tasks are the
	// configured size rounded down to whole tuples.
	cfg := e.cfg
	if chained && cfg.TaskSize >= plan.TupleSize {
		cfg.TaskSize -= cfg.TaskSize % plan.TupleSize
	}
	if err := cfg.Validate(plan.TupleSize); err != nil {
		return nil, fmt.Errorf("query %q: %w", sp.Query.Name, err)
	}
	// Every task in flight holds TaskSize bytes of the ring but the last,
	// partial one: that bounds the tasks in flight.
	inFlight := cfg.BufferSize/cfg.TaskSize + 1
	memNode := e.cfg.MemNode
	if len(e.ringNodes) > 0 {
		memNode = e.ringNodes[id%len(e.ringNodes)]
	}
	ring, err := e.newRing(e.cfg.BufferSize, memNode)
	if err != nil {
		return nil, fmt.Errorf("ring for query %q: %w", sp.Query.Name, err)
	}
	nslots := 1 << bits.Len(uint(inFlight))
	s := &Stream{
		e: e, id: id, plan: plan, layout: plan.Layout, spec: sp, taskSize: cfg.TaskSize,
		node:    e.nodeIndex[memNode],
		ring:    ring,
		records: make([]*task, inFlight),
		free:    make(chan *task, inFlight),
		room:    make(chan struct{}, 1),
		ready:   make([]atomic.Pointer[task], nslots),
		mask:    uint64(nslots - 1),
	}
	if s.heap, s.heapAttrs, s.blankAttrs, err = e.newHeap(plan.Query, sp.DictColumns, memNode); err != nil {
		ring.Close()
		return nil, fmt.Errorf("query %q: %w", sp.Query.Name, err)
	}
	s.win = Window{Query: sp.Query.Name, plan: plan}
	s.watermark.Store(-1 << 63)
	s.complete.Store(-1 << 63)
	if !plan.Stateless() {
		if w := plan.Query.Window; w.Type == query.Session {
			var keyOrder func() func(a, b []byte) int
			if plan.StringKeys() {
				keyOrder = func() func(a, b []byte) int {
					var ab, bb []byte
					return func(a, b []byte) int {
						ab, bb = plan.AppendCanonicalKey(ab[:0], a), plan.AppendCanonicalKey(bb[:0], b)
						return bytes.Compare(ab, bb)
					}
				}
			}
			if n := e.resultParts(); n > 1 && plan.Layout.Hashed {
				sp := window.NewSessionParts(w.Size, w.Delay, plan.Layout, n)
				sp.SetKeyOrder(keyOrder)
				s.parts, s.asm = sp, sp
				s.slots = make([]atomic.Pointer[task], nslots)
			} else {
				ss := window.NewSessions(w.Size, w.Delay, plan.Layout)
				if keyOrder != nil {
					ss.SetKeyOrder(keyOrder())
				}
				s.asm = ss
			}
		} else if n := e.resultParts(); n > 1 && plan.Layout.Hashed {
			s.parts = window.NewParts(plan.Spec, plan.Layout, n)
			s.asm = s.parts
			s.slots = make([]atomic.Pointer[task], nslots)
		} else {
			s.asm = window.NewAssembler(plan.Spec, plan.Layout)
		}
		s.emitFn = s.emit
		if s.outSchema, err = plan.Query.OutputSchema(); err != nil {
			return nil, err
		}
		s.outGeneral = generalOutput(s.outSchema) || plan.Query.Window.Type == query.Session
		if plan.Query.Having != nil {
			if s.parts != nil {
				s.parts.SetFilters(plan.Having) // one filter per partition
			} else {
				s.asm.SetFilter(plan.Having())
			}
		}
		// A task spans two panes whenever it crosses a window boundary:
		// two group states per record up front where they are small, so
		// that steady state is reached without allocating in the run.
		s.pool = window.NewStatePool(plan.Layout)
		if plan.Layout.Groups*plan.Layout.Words()*8 <= 1<<20 {
			s.pool.Prealloc(2 * min(inFlight, preallocRecords))
		}
	}
	for range min(inFlight, preallocRecords) {
		s.free <- s.newRecord()
	}
	e.streams = append(e.streams, s)
	return s, nil
}

// preallocRecords bounds the task records newStream makes, and the group
// states it readies for them (Stream.pool): the records of a ring of the
// default sizes, and more than run at once on any machine. Tiny tasks in
// a big ring allow thousands of records in flight, whose making up front
// would cost more than the run; past the bound the producer makes a
// record when every record is in flight and the ring has room for more
// (dispatch). A record holds no group state of its own: its task takes
// them from the pool as it runs and gives them back at its merge.
const preallocRecords = 64

// newRecord makes the stream's next task record. Producer only (and
// newStream).
func (s *Stream) newRecord() *task {
	i := s.made
	// One allocation per task record, not one array of them: records run
	// on different workers, and each its own allocation keeps their
	// results' writes off each other's lines.
	t := &task{Task: scheduler.Task{Query: s.id, Ref: i}}
	if s.plan.Stateless() {
		t.result.Out = make([]byte, 0, s.taskSize/s.plan.TupleSize*s.plan.OutTupleSize)
	}
	if s.pool != nil {
		t.result.SetPool(s.pool)
	} else {
		t.result.Reset(s.plan.Layout)
	}
	if s.pstages != nil {
		s.initTaskParts(t)
	}
	s.records[i] = t
	s.made++
	return t
}

// Right returns a window join's right input (nil for other streams).
func (s *Stream) Right() *Stream { return s.right }

// Plan returns the stream's compiled query.
func (s *Stream) Plan() *kernels.Plan { return s.plan }
