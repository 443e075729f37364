package engine

import (
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/saber-hx/saber-hx/buffer"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/scheduler"
	"github.com/saber-hx/saber-hx/window"
)

// Stream is one query's ring, dispatcher and result stage. Its producer
// methods (Buffer, Commit, Write) must be called from one goroutine.
type Stream struct {
	e      *Engine
	id     int
	plan   *kernels.Plan
	layout *window.Layout
	spec   Spec

	ring     *buffer.Ring
	free     chan *scheduler.Task         // recycled tasks; its capacity bounds tasks in flight
	fill     func(dst []byte, pos uint64) // SetFill: ingestion by the workers
	unfilled bool                         // the task being filled is left to fill
	taskSize int
	node     int // index of the NUMA node of the ring's memory (0 if unknown)

	// GPU: why it cannot run the query (nil: it can, or there is no GPU),
	// and the tasks it ran on its CPU fallback kernel.
	gpuErr      error
	gpuFallback atomic.Uint64

	// Producer and dispatcher.
	taskStart uint64 // ring offset of the task being filled
	filled    int    // bytes of it committed
	nextID    uint64
	inClosed  bool

	// Chaining.
	upstream   string    // the query that feeds this stream; "": an external producer
	downstream []*Stream // take this stream's output tuples
	joinSide   *joinStage
	side       int     // 0 left, 1 right
	right      *Stream // a join's left input: the right one
	outBuf     []byte  // an aggregation's rows encoded as tuples
	worker     *worker // the worker merging now (for emit)
	flushed    bool

	// Result stage.
	slots   []atomic.Pointer[scheduler.Task] // finished tasks by ID & mask
	mask    uint64
	mergeMu sync.Mutex
	next    atomic.Uint64 // ID of the next task to merge
	asm     *window.Assembler
	win     Window
	emitFn  func(*window.Output) error

	lat                                        latencyHist
	seq                                        atomic.Uint64 // odd while publish changes the counters
	tasks, bytes                               atomic.Uint64
	tuples, filtered, unmatched, late, counted atomic.Uint64
	windows, rows                              atomic.Uint64
	watermark                                  atomic.Int64
}

func (e *Engine) newStream(sp Spec) (*Stream, error) {
	id := len(e.streams)
	if sp.Query == nil {
		return nil, fmt.Errorf("engine: spec %d has no query", len(e.entries))
	}
	plan, err := kernels.CompileWith(sp.Query, kernels.Options{Vectorised: e.cfg.Vectorised})
	if err != nil {
		return nil, err
	}
	// A chained query's tuples are its upstream's output: its tasks are the
	// configured size rounded down to whole tuples.
	cfg := e.cfg
	if sp.From != "" && cfg.TaskSize >= plan.TupleSize {
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
	ring, err := e.newRing(memNode)
	if err != nil {
		return nil, fmt.Errorf("ring for query %q: %w", sp.Query.Name, err)
	}
	nslots := 1 << bits.Len(uint(inFlight))
	s := &Stream{
		e: e, id: id, plan: plan, layout: plan.Layout, spec: sp, taskSize: cfg.TaskSize,
		node:  e.nodeIndex[memNode],
		ring:  ring,
		free:  make(chan *scheduler.Task, inFlight),
		slots: make([]atomic.Pointer[scheduler.Task], nslots),
		mask:  uint64(nslots - 1),
		win:   Window{Query: sp.Query.Name, plan: plan},
	}
	s.watermark.Store(-1 << 63)
	spares := 0
	if !plan.Stateless() {
		s.asm = window.NewAssembler(plan.Spec, plan.Layout)
		s.emitFn = s.emit
		if plan.Query.Having != nil {
			s.asm.SetFilter(plan.Having())
		}
		// A task spans two panes whenever it crosses a window boundary:
		// give each task two group states up front where they are small,
		// so that steady state is reached without allocating in the run.
		if plan.Layout.Groups*plan.Layout.Words()*8 <= 1<<20 {
			spares = 2
		}
	}
	for range inFlight {
		t := &scheduler.Task{Query: id}
		if plan.Stateless() {
			t.Result.Out = make([]byte, 0, cfg.TaskSize/plan.TupleSize*plan.OutTupleSize)
		}
		t.Result.Prealloc(plan.Layout, spares)
		s.free <- t
	}
	e.streams = append(e.streams, s)
	return s, nil
}

// Right returns a window join's right input (nil for other streams).
func (s *Stream) Right() *Stream { return s.right }

// Plan returns the stream's compiled query.
func (s *Stream) Plan() *kernels.Plan { return s.plan }
