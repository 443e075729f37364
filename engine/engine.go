// Package engine is the glue of saber-hx's data path:
//
//	producer ──► buffer.Ring ──► dispatcher ──► scheduler.Queue ──► cpu workers ──► result stage ──► sink
//
// An Engine runs one or more queries on one set of CPU workers. Each query
// has a Stream: its own ring, dispatcher and result stage. The producer of a
// stream (the caller of Buffer/Commit or Write) fills its ring; the
// dispatcher, which runs on the producer's goroutine, cuts the ring into
// tasks of Config.TaskSize bytes, numbers them and queues them. Workers run
// the query's kernel over a task's bytes and hand the task to its stream's
// result stage, which merges task results strictly in task order
// (window.Assembler for aggregations, concatenation for stateless queries),
// hands windows or tuples to the output in order, and frees the task's bytes
// in the ring.
//
// A result stage has no goroutine of its own: whichever worker finishes the
// next task in order merges it and every consecutive task already finished
// (a TryLock, then a re-check after unlocking, so that no finished task is
// left behind). Per task that costs one channel operation to queue it, one
// to recycle it, and a lock; per tuple nothing.
//
// With Config.GPU the GPU is a processor kind of its own ("gpu"): one
// goroutine that runs tasks on the device (GPU: the interface the engine
// consumes, which package gpu's devices satisfy), several in flight
// (Config.GPUDepth), and hands them to the same result stages (gpu.go).
// Config.GPUOnly makes it the only kind (gpu mode); otherwise it
// shares the tasks with the CPU workers under the scheduling policy
// (hybrid mode), and runs no task of a query it has no kernel for.
//
// The files, one job each:
//
//	config.go      Config, its validation and defaults; the error kinds (ErrConfig, ErrInput, ErrAborted)
//	engine.go      the Engine and its lifecycle: Start, the first failure, Abort, CloseAll's drain
//	graph.go       the specs as a graph: streams, window joins, chaining (Upstream: a Ref, Output(i)) and the push downstream
//	handoff.go     a stateless query's output lent to the one query it feeds: positions pushed in order, bytes copied by that query's workers
//	placement.go   NUMA discovery, the workers' default placement, the rings' memory placement, the producer's pinning (Produce)
//	scheduling.go  the wiring to package scheduler: processor kinds, Runnable, static bindings
//	stream.go      the Stream: its fields grouped by owner, and its construction
//	dispatch.go    the producer side: Buffer, Commit, Write, the ingestion hooks, dispatch
//	feed.go        Feed: the producer loop of a generated or replayed input (ysb, bench)
//	worker.go      the CPU worker's loop, its ingestion buffer, and help (what a waiting worker does)
//	gpu.go         the GPU processor kind: the interfaces it consumes of a device (GPU), its worker
//	ingest.go      who performs the ingestion copy (--ingest)
//	result.go      the ordered result stage: finish, merge, emit, flush
//	output.go      the output view handed to a Sink (Window, its result columns by name) and the output tuples' encoding
//	join.go        the window join stage of two streams (the operator is kernels.WindowJoin)
//	stats.go       Stats and the seqlock that publishes them; latency.go: the latency histogram
//	metrics.go     Metrics: what a metrics server reads (latency buckets, back-pressure, ring fill, per kind busy time)
//	progress.go    Progress: what is fully out, for a source that commits offsets
//	snapshot.go    Snapshot and Restore: the streams' state at a task boundary, for checkpoints
package engine

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/saber-hx/saber-hx/cpu"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/scheduler"
)

// Engine runs queries on a shared set of CPU workers.
type Engine struct {
	cfg Config
	// producerGroups numbers SameProducer's groups.
	producerGroups atomic.Int64
	// NUMA (pinned workers on a machine of several nodes): the index of
	// each node ID, and of each CPU's node; nil on one node.
	nodeIndex map[int]int
	cpuNode   map[int]int
	ringNodes []int      // node IDs of the workers' CPUs, in order: stream i's ring goes on ringNodes[i % len]
	cpus      []int      // the CPUs the workers are pinned to, in worker order (cycled)
	claim     *cpu.Claim // the pinned workers' CPUs, held until they stop
	// ingestClaim holds Config.IngestCore (PinIngest) for the engine's life.
	ingestClaim *cpu.Claim
	streams     []*Stream // every input stream; a window join has two
	entries     []entry   // per Spec
	// copies are the TupleEncoder.Copy of the specs that have one, which
	// the workers run after each task (worker.copyOutputs).
	copies  []func()
	queue   scheduler.Queue
	workers *cpu.Group // nil in gpu mode: no CPU worker
	gpu     *gpuWorker // nil without a GPU
	gpuKind int        // the GPU's processor kind; -1 without a GPU
	closed  bool

	// err is the run's first error (fail), read per task by every worker
	// (failed): a load, where a lock would move its line between workers
	// at each task. errMu makes the first fail the one kept.
	errMu sync.Mutex
	err   atomic.Pointer[error]
	// failedCh is closed by the first fail: a producer that waits on
	// something other than the rings (a live source's next record) stops
	// on it.
	failedCh chan struct{}
	// partialsDue is set where a stream's partial timer fired
	// (Stream.partialTimeout): the workers look for it between tasks.
	partialsDue atomic.Bool
	// pausedUntil is the end of the pause window (nanotime; pause).
	pausedUntil atomic.Int64
}

// Start compiles the queries, allocates their rings and starts the workers.
func Start(cfg Config, specs []Spec) (*Engine, error) {
	if len(specs) == 0 {
		return nil, asConfigError(errors.New("engine: no query"))
	}
	if cfg.GPUOnly && cfg.GPU == nil {
		return nil, asConfigError(errors.New("engine: gpu mode (GPUOnly) without a GPU device"))
	}
	cfg = cfg.Defaults()
	claim, err := placeWorkers(&cfg)
	if err != nil {
		return nil, asConfigError(err)
	}
	e := &Engine{cfg: cfg, gpuKind: -1, claim: claim, failedCh: make(chan struct{})}
	if cfg.PinIngest {
		// Other engines' automatic placements avoid the producer's CPU.
		e.ingestClaim = cpu.ClaimCPUs([]int{cfg.IngestCore})
	}
	if cfg.Mode() != "gpu" {
		e.discoverNodes()
	}
	for _, sp := range specs {
		if err := e.add(sp); err != nil {
			e.release()
			return nil, asConfigError(err)
		}
		if sp.Encoded != nil && sp.Encoded.Copy != nil {
			e.copies = append(e.copies, sp.Encoded.Copy)
		}
	}
	e.narrowJoinSides()
	e.narrowViews()
	e.stableInputs()
	e.markChains()
	e.feedJoins()
	e.lendOutputs()
	e.gateJoins()
	for _, s := range e.streams {
		s.initParts()
	}
	cpuOnly, err := e.checkGPU()
	if err != nil {
		e.release()
		return nil, asConfigError(err)
	}
	capacity := 0
	for _, s := range e.streams {
		capacity += cap(s.free)
	}
	if e.queue, err = e.newQueue(capacity); err != nil {
		e.release()
		return nil, asConfigError(err)
	}
	if cfg.Warn != nil {
		for _, s := range cpuOnly {
			cfg.Warn(fmt.Sprintf("query %q runs on the CPU only: %s", s.win.Query, s.gpuReason()))
		}
	}
	total := cfg.cpuWorkers()
	if cfg.GPU != nil {
		if err := e.startGPU(total); err != nil {
			e.release()
			return nil, err
		}
	}
	if total > 0 {
		e.workers, err = cpu.Start(cpu.Options{Workers: total, Pin: cfg.Pin, CPUs: cfg.CPUs, Warn: cfg.Warn}, e.work)
		if err != nil {
			if e.gpu != nil {
				e.queue.Close()
				<-e.gpu.done
			}
			e.release()
			return nil, err
		}
	}
	if cfg.Started != nil {
		cfg.Started(e)
	}
	return e, nil
}

// release closes the rings and gives back the workers' CPUs: the engine
// is done, or never started.
func (e *Engine) release() {
	e.claim.Release()
	e.ingestClaim.Release()
	for _, en := range e.entries {
		// A regular join's state lies outside the Go heap: returned here,
		// where no pair it output is read any more.
		if js := en.join; js != nil {
			if rj, ok := js.op.(*kernels.RegularJoin); ok {
				js.mu.Lock()
				rj.Free()
				js.mu.Unlock()
			}
		}
	}
	for _, s := range e.streams {
		s.ring.Close()
		if s.heap != nil {
			s.heap.Close()
		}
	}
}

// Stream returns the stream of Spec i (a window join's left input).
func (e *Engine) Stream(i int) *Stream { return e.entries[i].stream }

// Streams returns the stream of every Spec, in order.
func (e *Engine) Streams() []*Stream {
	s := make([]*Stream, len(e.entries))
	for i, en := range e.entries {
		s[i] = en.stream
	}
	return s
}

// fail records the first error and unblocks every producer.
func (e *Engine) fail(err error) {
	e.errMu.Lock()
	if e.err.Load() == nil {
		e.err.Store(&err)
		close(e.failedCh)
	}
	e.errMu.Unlock()
	for _, s := range e.streams {
		s.ring.Cancel()
		if s.heap != nil {
			s.heap.Cancel()
		}
	}
}

func (e *Engine) failed() error {
	if p := e.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Failed is closed once the run fails (an output's error, Abort): the
// producers' next writes return the error, and a producer waiting on
// anything else should stop too.
func (e *Engine) Failed() <-chan struct{} { return e.failedCh }

// Abort stops the run with err (ErrAborted if nil); safe from any goroutine.
// The producers' next calls return the error; Close still must be called.
func (e *Engine) Abort(err error) {
	if err == nil {
		err = ErrAborted
	}
	e.fail(err)
}

// CloseAll ends every stream's input (flushing its last partial task),
// waits for every task, emits every open window (the end of input closes
// them) and releases the rings. Call it after every producer has returned.
func (e *Engine) CloseAll() ([]Stats, error) {
	if e.closed {
		return e.stats(), errors.New("engine: closed twice")
	}
	e.closed = true
	// Streams come in an order where a query's upstream is before it: end
	// each input, wait for its tasks, and flush its windows (the end of
	// input closes them) into its downstream before ending that one's.
	var w *worker
	for _, s := range e.streams {
		if s.feeder != nil {
			// A worker may flush its partial task meanwhile (flushDue).
			s.feeder.Lock()
			s.closeInput()
			s.stopPartial()
			s.feeder.Unlock()
		} else {
			s.closeInput()
		}
		if len(s.downstream) == 0 && s.joinSide == nil {
			continue
		}
		if w == nil {
			w = e.newWorker(-1)
		}
		w.helpUntil(func() bool { return s.next.Load() == s.nextID })
		s.flush(w)
		if s.joinSide != nil && e.failed() == nil {
			if err := s.joinSide.finishSide(s.side, w); err != nil {
				e.fail(err)
			}
		}
	}
	e.queue.Close()
	if e.workers != nil {
		e.workers.Wait()
	}
	if e.gpu != nil {
		<-e.gpu.done // every slot drained, the programs closed
	}
	for _, s := range e.streams {
		s.finishAll()
	}
	e.release()
	return e.stats(), e.failed()
}

func (e *Engine) stats() []Stats {
	st := make([]Stats, len(e.entries))
	for i, en := range e.entries {
		st[i] = en.stream.Stats()
	}
	return st
}
