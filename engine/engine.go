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
// goroutine that runs tasks on the device through package offload, several
// in flight (Config.GPUDepth), and hands them to the same result stages
// (gpu.go). Config.GPUOnly makes it the only kind (gpu mode); otherwise it
// shares the tasks with the CPU workers under the scheduling policy
// (hybrid mode), and runs no task of a query it has no kernel for.
package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saber-hx/saber-hx/buffer"
	"github.com/saber-hx/saber-hx/cpu"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/offload"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/scheduler"
	"github.com/saber-hx/saber-hx/window"
)

// Config tunes the engine.
type Config struct {
	Workers    int              // CPU worker goroutines, >= 1
	Pin        bool             // pin each worker to its own core
	CPUs       []int            // cores to pin to; nil: the process's affinity mask
	TaskSize   int              // bytes per task, a multiple of every input's tuple size
	BufferSize int              // ring bytes per stream: a power of two, at least 2 tasks
	Warn       func(msg string) // warnings (pinning refused); nil: dropped

	// Scheduling (see scheduler and docs/scheduling.md).
	Policy          scheduler.Policy  // "" means fcfs
	Static          map[string]string // static: query name -> processor kind name
	SwitchThreshold int               // hls: 0 means the default
	MonitorInterval time.Duration     // hls: 0 means the default
	// Placement: rings' memory on NUMA node MemNode with MemPolicy
	// (MemDefault: first touch), and the producers' core (IngestCore, if
	// PinIngest; see PinIngestion).
	MemNode    int
	MemPolicy  cpu.MemPolicy
	PinIngest  bool
	IngestCore int
	// Topology is the machine's, for per-node task queues when workers
	// are pinned; nil: the engine reads it (cpu.Discover). A caller that
	// has read it for placement passes it, so that it is read once.
	Topology *cpu.Topology

	// Vectorised forces the general vectorised kernels where a fused,
	// shape-specialised one would fit (see kernels.Options).
	Vectorised bool

	// Groups are the CPU processor kinds and their workers; nil means one
	// kind, "cpu", of Workers workers. Several CPU groups stand for
	// processors of different speeds (tests use them with an injected
	// delay). The GPU is a kind of its own (GPU below).
	Groups []ProcessorGroup

	// GPU is the device of the GPU processor kind, named "gpu"; nil means
	// no GPU kind (cpu mode). With a GPU and without GPUOnly (hybrid mode)
	// the kinds are the CPU kinds (kind 0, "cpu", unless Groups say
	// otherwise) and then the GPU, and Policy shares the tasks among them;
	// a query the GPU has no kernel for (offload.Supported) runs on the
	// CPU kinds only, and Start says so once through Warn.
	//
	// The engine compiles one offload.Program per query on the device and
	// closes them in CloseAll (or when Start fails); the device itself
	// belongs to whoever opened it (offload.Open, offload.NewEmulator),
	// who closes it after CloseAll or a failed Start.
	GPU offload.Device
	// GPUOnly (gpu mode): the GPU kind is the only processor kind (kind 0);
	// no CPU worker runs, Workers and Groups are ignored, and a query
	// without a GPU kernel is an ErrConfig. Needs GPU.
	GPUOnly bool
	// GPUDepth is the number of tasks in flight on the GPU at once (each on
	// its own slot: a CUDA stream and its buffers); 0 means
	// DefaultGPUDepth.
	GPUDepth int
}

// DefaultGPUDepth is the GPU pipeline depth when Config.GPUDepth is 0.
const DefaultGPUDepth = 4

// GPUKindName is the name of the GPU processor kind.
const GPUKindName = "gpu"

// Mode names the processor kinds cfg runs: "cpu" (no GPU), "gpu" (the GPU
// only) or "hybrid" (CPU workers and the GPU).
func (c Config) Mode() string {
	switch {
	case c.GPU == nil:
		return "cpu"
	case c.GPUOnly:
		return "gpu"
	}
	return "hybrid"
}

// gpuDepth is GPUDepth with its default.
func (c Config) gpuDepth() int {
	if c.GPUDepth == 0 {
		return DefaultGPUDepth
	}
	return c.GPUDepth
}

// ProcessorGroup is one processor kind and its workers.
type ProcessorGroup struct {
	Name    string
	Workers int
	delay   time.Duration // tests: added to every task of the group
}

// cpuGroups returns the CPU processor kinds: none in gpu mode.
func (c Config) cpuGroups() []ProcessorGroup {
	switch {
	case c.GPU != nil && c.GPUOnly:
		return nil
	case len(c.Groups) > 0:
		return c.Groups
	}
	return []ProcessorGroup{{Name: "cpu", Workers: c.Workers}}
}

// Validate checks cfg against a tuple size, naming the bad value and the
// valid range.
func (c Config) Validate(tupleSize int) error {
	switch {
	case c.GPUDepth < 0:
		return fmt.Errorf("GPU pipeline depth %d: must be >= 1 (0: default %d)", c.GPUDepth, DefaultGPUDepth)
	case len(c.Groups) == 0 && c.Workers < 1 && !c.GPUOnly:
		return fmt.Errorf("workers %d: need at least 1", c.Workers)
	case tupleSize <= 0:
		return fmt.Errorf("tuple size %d must be positive", tupleSize)
	case c.TaskSize < tupleSize || c.TaskSize%tupleSize != 0:
		return fmt.Errorf("task size %d: must be a positive multiple of the %d-byte tuple", c.TaskSize, tupleSize)
	case c.BufferSize <= 0 || bits.OnesCount(uint(c.BufferSize)) != 1:
		return fmt.Errorf("buffer size %d: must be a power of two", c.BufferSize)
	case c.TaskSize > c.BufferSize/2: // not 2*TaskSize, which a huge task size overflows
		return fmt.Errorf("buffer size %d: must hold at least two tasks of %d bytes", c.BufferSize, c.TaskSize)
	}
	return nil
}

// Window is one closed window handed to a Sink: its rows in group-key
// order. It is only valid during the Sink call.
type Window struct {
	Query string
	// Start and End bound the window's positions, [Start, End); End is
	// math.MaxInt64 for a window that ends past it (such a window closes
	// only at the end of the input).
	Start, End int64

	plan *kernels.Plan
	out  *window.Output
	key  [16]byte
}

// Rows is the number of rows (groups) in the window.
func (w *Window) Rows() int { return len(w.out.Rows) }

// Key returns the group key of row i (nil without GROUP BY): the joined
// value when grouping by a static join, else the GROUP BY values encoded as
// query.AppendIntKey and raw bytes, concatenated (see GroupInt). The slice
// is valid until the next call.
func (w *Window) Key(i int) []byte {
	s := w.out.Rows[i]
	if !w.plan.Layout.Hashed {
		return w.plan.GroupKeys[s]
	}
	k0, k1 := w.out.State.Key(s)
	binary.BigEndian.PutUint64(w.key[0:], k0)
	binary.BigEndian.PutUint64(w.key[8:], k1)
	last := w.plan.KeyParts[len(w.plan.KeyParts)-1]
	return w.key[:last.Pos+last.Width]
}

// GroupInt returns integer GROUP BY value j of row i.
func (w *Window) GroupInt(i, j int) int64 {
	kp := w.plan.KeyParts[j]
	return query.DecodeIntKey(w.Key(i)[kp.Pos:], kp.Width)
}

// Group returns the group ordinal of row i: for dense groups the index of
// its key in the plan's GroupKeys; for hashed groups a slot, meaningful only
// during this call.
func (w *Window) Group(i int) int32 { return w.out.Rows[i] }

// Agg returns integer aggregate a (in the query's order) of row i; a float
// aggregate is truncated (use AggFloat).
func (w *Window) Agg(i, a int) int64 {
	v, f, isFloat := w.plan.AggValue(w.out.State.Row(w.out.Rows[i]), a)
	if isFloat {
		return int64(f)
	}
	return v
}

// AggFloat returns aggregate a of row i as a float.
func (w *Window) AggFloat(i, a int) float64 {
	v, f, isFloat := w.plan.AggValue(w.out.State.Row(w.out.Rows[i]), a)
	if isFloat {
		return f
	}
	return float64(v)
}

// AggIsFloat reports whether aggregate a is a float.
func (w *Window) AggIsFloat(a int) bool { return w.plan.Aggs[a].Float }

// Sink receives closed windows in window order. An error stops the run.
type Sink func(w *Window) error

// TupleSink receives a stateless query's output tuples, in input order, one
// task's worth per call; tuples is only valid during the call. An error
// stops the run.
type TupleSink func(tuples []byte) error

// Spec is one query of an engine and where its output goes.
type Spec struct {
	Query   *query.Query
	Windows Sink      // aggregations: each closed window
	Tuples  TupleSink // output tuples (query.OutputSchema): a stateless query's, or one per aggregation row
	// From names an earlier query of the same engine whose output tuples
	// are this query's input (SABER's connectTo): its output schema must
	// have this query's input layout. Such a stream has no producer of its
	// own.
	From string

	// Join, instead of Query, makes this entry a window join of two
	// streams: Stream(i) is its left input and Stream(i).Right() its right
	// one, fed by producers or, with From and FromRight, by earlier
	// queries. Its output goes to Tuples and to queries that name it.
	Join      *query.WindowJoin
	FromRight string
}

// Stats are a stream's counters. Tuples = Filtered + Unmatched + Late +
// Counted for every merged task; a stateless query counts its output tuples
// as Counted.
type Stats struct {
	Query                                      string
	Tasks, Bytes                               uint64
	Tuples, Filtered, Unmatched, Late, Counted uint64
	Windows, Rows                              uint64
	Watermark                                  int64
	Pinned                                     []int // CPU of each worker, -1 where not pinned
	// Task latency, dispatched to merged (its windows emitted), since the
	// start or the last ResetLatency: quantiles exact to a factor of two.
	LatencyP50, LatencyP99 time.Duration
	// GPUFallbackTasks are the tasks the GPU kind took but ran on its CPU
	// kernel, because the GPU program could not hold their result (a
	// tuple's pane outside the range its output covers, which near the
	// ends of int64 is cut to the panes the device computes exactly:
	// offload's Program.Wait said ok false).
	GPUFallbackTasks uint64
}

// ErrConfig marks the errors of Start that come from its arguments (an
// invalid query, configuration or binding), as opposed to the system.
var ErrConfig = errors.New("invalid configuration")

// configError wraps err as an ErrConfig.
type configError struct{ err error }

func (e configError) Error() string   { return e.err.Error() }
func (e configError) Unwrap() []error { return []error{e.err, ErrConfig} }
func asConfigError(err error) error {
	if err == nil {
		return nil
	}
	return configError{err}
}

// ErrInput marks the errors of a run that come from its input, as opposed
// to the configuration or the system: a tuple the engine refuses
// (InputError). The command line maps it to exit status 2.
var ErrInput = errors.New("bad input")

// InputError is a tuple refused as bad input: its position is in no window
// whose start is representable in int64 (a range window's event time within
// a window of math.MinInt64: the first window containing it would start
// below it). It names the tuple by its byte offset in the query's input
// stream. errors.Is(err, ErrInput) holds.
type InputError struct {
	Query  string // the query (or window join) whose input it is
	Input  string // "" for a query's input; "left" or "right" for a window join's
	Offset uint64 // byte offset of the tuple in that input stream
	Tuple  uint64 // its index in that stream (Offset / tuple size)
	Pos    int64  // its position: the event time (range windows), else the index
	Rows   bool   // a row window: Pos is the index
}

func (e *InputError) Error() string {
	in := ""
	if e.Input != "" {
		in = " " + e.Input + " input"
	}
	what := "event time"
	if e.Rows {
		what = "position"
	}
	return fmt.Sprintf("query %q%s: tuple %d (byte offset %d): %s %d lies in a window starting below the int64 range",
		e.Query, in, e.Tuple, e.Offset, what, e.Pos)
}

// Unwrap makes an InputError an ErrInput.
func (e *InputError) Unwrap() error { return ErrInput }

// ErrAborted is returned by the producer side after Abort.
var ErrAborted = errors.New("engine: aborted")

// Engine runs queries on a shared set of CPU workers.
type Engine struct {
	cfg Config
	// NUMA (pinned workers on a machine of several nodes): the index of
	// each node ID, and of each CPU's node; nil on one node.
	nodeIndex map[int]int
	cpuNode   map[int]int
	ringNodes []int     // node IDs of the workers' CPUs, in order: stream i's ring goes on ringNodes[i % len]
	cpus      []int     // the CPUs the workers are pinned to, in worker order (cycled)
	streams   []*Stream // every input stream; a window join has two
	entries   []entry   // per Spec
	queue     scheduler.Queue
	workers   *cpu.Group // nil in gpu mode: no CPU worker
	gpu       *gpuWorker // nil without a GPU
	gpuKind   int        // the GPU's processor kind; -1 without a GPU
	closed    bool

	errMu sync.Mutex
	err   error
}

// New starts an engine for one query whose windows go to sink. The Engine's
// producer methods then act on that query's stream.
func New(cfg Config, q *query.Query, sink Sink) (*Engine, error) {
	return Start(cfg, []Spec{{Query: q, Windows: sink}})
}

// Start compiles the queries, allocates their rings and starts the workers.
func Start(cfg Config, specs []Spec) (*Engine, error) {
	if len(specs) == 0 {
		return nil, asConfigError(errors.New("engine: no query"))
	}
	if cfg.GPUOnly && cfg.GPU == nil {
		return nil, asConfigError(errors.New("engine: gpu mode (GPUOnly) without a GPU device"))
	}
	if cfg.Policy == "" {
		cfg.Policy = scheduler.FCFS
	}
	e := &Engine{cfg: cfg, gpuKind: -1}
	if cfg.Mode() != "gpu" {
		e.discoverNodes()
	}
	for _, sp := range specs {
		if err := e.add(sp); err != nil {
			e.releaseRings()
			return nil, asConfigError(err)
		}
	}
	cpuOnly, err := e.checkGPU()
	if err != nil {
		e.releaseRings()
		return nil, asConfigError(err)
	}
	capacity := 0
	for _, s := range e.streams {
		capacity += cap(s.free)
	}
	if e.queue, err = e.newQueue(capacity); err != nil {
		e.releaseRings()
		return nil, asConfigError(err)
	}
	if cfg.Warn != nil {
		for _, s := range cpuOnly {
			cfg.Warn(fmt.Sprintf("query %q runs on the CPU only: %s", s.win.Query, s.gpuReason()))
		}
	}
	total := 0
	for _, g := range cfg.cpuGroups() {
		total += g.Workers
	}
	if cfg.GPU != nil {
		if err := e.startGPU(total); err != nil {
			e.releaseRings()
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
			e.releaseRings()
			return nil, err
		}
	}
	return e, nil
}

// checkGPU finds, with a GPU, the streams it has no kernel for
// (Stream.gpuErr): in gpu mode that is an error naming the query and the
// operator; in hybrid mode they are returned, to be run on the CPU only.
func (e *Engine) checkGPU() (cpuOnly []*Stream, err error) {
	if e.cfg.GPU == nil {
		return nil, nil
	}
	for _, s := range e.streams {
		s.gpuErr = offload.Supported(s.plan)
		if s.gpuErr == nil {
			continue
		}
		if e.cfg.GPUOnly {
			return nil, fmt.Errorf("gpu mode: query %q cannot run on the GPU: %s; run it in hybrid mode (--mode hybrid), where the CPU workers run the queries the GPU cannot", s.win.Query, s.gpuReason())
		}
		cpuOnly = append(cpuOnly, s)
	}
	return cpuOnly, nil
}

// gpuReason is why the GPU cannot run the stream's query, without the
// query's name (offload's errors start with it).
func (s *Stream) gpuReason() string {
	if s.gpuErr == nil {
		return ""
	}
	return strings.TrimPrefix(s.gpuErr.Error(), fmt.Sprintf("query %q: ", s.win.Query))
}

// discoverNodes finds the NUMA nodes when workers are pinned on a machine
// with several: then tasks wait in per-node queues (scheduler.Config.Nodes)
// and workers prefer the tasks whose ring is on their node.
func (e *Engine) discoverNodes() {
	if !e.cfg.Pin {
		return
	}
	topo := e.cfg.Topology
	if topo == nil {
		var err error
		if topo, err = cpu.Discover(); err != nil {
			return
		}
	}
	if len(topo.Nodes) < 2 {
		return
	}
	e.nodeIndex, e.cpuNode = map[int]int{}, map[int]int{}
	for i, n := range topo.Nodes {
		e.nodeIndex[n.ID] = i
	}
	for _, c := range topo.CPUs {
		e.cpuNode[c.ID] = e.nodeIndex[c.Node]
	}
	e.cpus = e.cfg.CPUs
	if len(e.cpus) == 0 {
		e.cpus = cpu.AllowedCPUs() // where cpu.Start pins the workers by default
	}
	for _, c := range e.cpus {
		if n := topo.NodeOfCPU(c); n >= 0 && !slices.Contains(e.ringNodes, n) {
			e.ringNodes = append(e.ringNodes, n)
		}
	}
}

// newQueue makes the scheduler's queue: one kind per processor group, one
// query per stream (a window join's two inputs are bound together).
//
// With a GPU, the GPU is the last kind (the only one in gpu mode), with one
// processor: its rate in the throughput matrix is the whole device's (see
// gpuWorker.report), so hls must not divide its backlog further. A query
// the GPU has no kernel for is not runnable by it (scheduler's Runnable).
func (e *Engine) newQueue(capacity int) (scheduler.Queue, error) {
	groups := e.cfg.cpuGroups()
	qc := scheduler.Config{
		Policy: e.cfg.Policy, Queries: len(e.streams), Capacity: capacity,
		SwitchThreshold: e.cfg.SwitchThreshold, MonitorInterval: e.cfg.MonitorInterval,
		Nodes: len(e.nodeIndex),
	}
	for _, g := range groups {
		if g.Workers < 1 {
			return nil, fmt.Errorf("processor group %q: %d workers, need at least 1", g.Name, g.Workers)
		}
		if e.cfg.GPU != nil && g.Name == GPUKindName {
			return nil, fmt.Errorf("processor group %q: the name of the GPU kind", g.Name)
		}
		qc.KindNames = append(qc.KindNames, g.Name)
		qc.Workers = append(qc.Workers, g.Workers)
	}
	if e.cfg.GPU != nil {
		e.gpuKind = len(qc.KindNames)
		qc.KindNames = append(qc.KindNames, GPUKindName)
		qc.Workers = append(qc.Workers, 1)
		if len(groups) > 0 {
			for _, s := range e.streams {
				row := make([]bool, len(qc.KindNames))
				for k := range row {
					row[k] = k != e.gpuKind || s.gpuErr == nil
				}
				qc.Runnable = append(qc.Runnable, row)
			}
		}
	}
	qc.Kinds = len(qc.KindNames)
	if len(e.cfg.Static) > 0 {
		qc.Static = map[int]int{}
		for name, kind := range e.cfg.Static {
			k := slices.Index(qc.KindNames, kind)
			if k < 0 {
				return nil, fmt.Errorf("static binding %s=%s: no processor kind %q (valid: %s)", name, kind, kind, strings.Join(qc.KindNames, ", "))
			}
			found := false
			for _, s := range e.streams {
				if s.specName() == name {
					if k == e.gpuKind && s.gpuErr != nil {
						return nil, fmt.Errorf("static binding %s=%s: query %q has no GPU kernel (%s); bind it to a CPU kind", name, kind, s.win.Query, s.gpuReason())
					}
					qc.Static[s.id] = k
					found = true
				}
			}
			if !found {
				return nil, fmt.Errorf("static binding %s=%s: no query %q (valid: %s)", name, kind, name, strings.Join(e.specNames(), ", "))
			}
		}
	}
	return scheduler.NewQueue(qc)
}

// specNames are the names of the queries and joins, in order.
func (e *Engine) specNames() []string {
	var n []string
	for _, en := range e.entries {
		n = append(n, en.stream.specName())
	}
	return n
}

// specName is the name of the query or join the stream belongs to.
func (s *Stream) specName() string {
	if s.joinSide != nil {
		return s.joinSide.j.Name
	}
	return s.win.Query
}

// Scheduling returns the scheduler's counters: tasks and bytes per kind and
// query (queries by stream: a window join has two), and the throughput
// matrix.
func (e *Engine) Scheduling() scheduler.Stats { return e.queue.Stats() }

// QueryNames are the names of the queue's queries (the streams), in the
// order of Scheduling's counters.
func (e *Engine) QueryNames() []string {
	n := make([]string, len(e.streams))
	for i, s := range e.streams {
		n[i] = s.win.Query
	}
	return n
}

// entry is what one Spec started: a query's stream, or a window join.
type entry struct {
	stream *Stream
	join   *joinStage
}

func (e *Engine) add(sp Spec) error {
	if sp.Join == nil {
		s, err := e.newStream(sp)
		if err == nil && sp.From != "" {
			err = e.connect(s, sp.From)
		}
		if err == nil {
			e.entries = append(e.entries, entry{stream: s})
		}
		return err
	}
	j := sp.Join
	js, err := newJoinStage(e, j, sp)
	if err != nil {
		return err
	}
	var sides [2]*Stream
	for i, side := range []struct {
		schema *query.Schema
		suffix string
		from   string
	}{{j.Left, ".left", sp.From}, {j.Right, ".right", sp.FromRight}} {
		s, err := e.newStream(Spec{Query: &query.Query{Name: j.Name + side.suffix, Schema: side.schema}, From: side.from})
		if err == nil && side.from != "" {
			err = e.connect(s, side.from)
		}
		if err != nil {
			return err
		}
		s.joinSide, s.side = js, i
		sides[i] = s
	}
	sides[0].right = sides[1]
	e.entries = append(e.entries, entry{stream: sides[0], join: js})
	return nil
}

// connect makes s the downstream of the earlier query or join named from.
func (e *Engine) connect(s *Stream, from string) error {
	for _, en := range e.entries {
		var out *query.Schema
		var err error
		switch {
		case en.join != nil && en.join.j.Name == from:
			out, err = en.join.j.OutputSchema()
		case en.join == nil && en.stream.win.Query == from:
			out, err = en.stream.plan.Query.OutputSchema()
		default:
			continue
		}
		if err != nil {
			return err
		}
		if err := query.SameLayout(out, s.plan.Query.Schema); err != nil {
			return fmt.Errorf("query %q takes the output of %q: %w", s.win.Query, from, err)
		}
		if en.join != nil {
			en.join.down = append(en.join.down, s)
		} else {
			en.stream.downstream = append(en.stream.downstream, s)
		}
		s.upstream = from
		return nil
	}
	return fmt.Errorf("query %q: no earlier query %q to take input from", s.win.Query, from)
}

func (e *Engine) releaseRings() {
	for _, s := range e.streams {
		s.ring.Close()
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

// Plan returns the first query's compiled plan.
func (e *Engine) Plan() *kernels.Plan { return e.streams[0].plan }

// Buffer, Commit and Write act on the first query's stream.
func (e *Engine) Buffer() ([]byte, error) { return e.streams[0].Buffer() }
func (e *Engine) Commit(n int) error      { return e.streams[0].Commit(n) }
func (e *Engine) Write(p []byte) error    { return e.streams[0].Write(p) }

// Stats returns the first query's counters.
func (e *Engine) Stats() Stats { return e.streams[0].Stats() }

// worker is what runs tasks and what a result stage runs on: a CPU worker
// goroutine, the GPU worker (gpu set: its CPU kernels are its fallback),
// or the goroutine of CloseAll while it flushes chained queries. It has
// one CPU kernel per query.
type worker struct {
	e       *Engine
	proc    scheduler.Processor // Kind -1: runs no task (CloseAll's helper in gpu mode)
	delay   time.Duration
	kernels []kernels.Kernel
	gpu     *gpuWorker
	// ingest holds the bytes of the task being run when the worker
	// ingests them itself (Stream.SetFill): one task's worth, reused, so
	// that they stay in the worker's cache. Allocated at the first such
	// task, on the worker's thread: on its NUMA node where it is pinned.
	ingest []byte
}

// newWorker returns CPU worker id, or with id -1 CloseAll's helper: a
// worker of the first CPU kind, or in gpu mode one that runs no task.
func (e *Engine) newWorker(id int) *worker {
	groups := e.cfg.cpuGroups()
	if len(groups) == 0 {
		return &worker{e: e, proc: scheduler.Processor{Kind: -1, ID: id}}
	}
	kind, first := 0, 0
	for k, g := range groups {
		if id >= first && id < first+g.Workers {
			kind = k
		}
		first += g.Workers
	}
	w := &worker{e: e, proc: scheduler.Processor{Kind: kind, ID: id}, kernels: make([]kernels.Kernel, len(e.streams))}
	if cpus := e.cpus; e.cpuNode != nil && len(cpus) > 0 && id >= 0 {
		w.proc.Node = e.cpuNode[cpus[id%len(cpus)]]
	}
	w.delay = groups[kind].delay
	for i, s := range e.streams {
		w.kernels[i] = s.plan.NewKernel()
	}
	return w
}

// work is a worker's loop; its kernels are made on the worker's own thread.
func (e *Engine) work(id int) {
	w := e.newWorker(id)
	for t := e.queue.Pop(w.proc); t != nil; t = e.queue.Pop(w.proc) {
		w.run(t)
	}
}

// run processes t and hands it to its stream's result stage.
func (w *worker) run(t *scheduler.Task) {
	s := w.e.streams[t.Query]
	t.Result.Reset(s.layout)
	start := time.Now()
	if w.e.failed() == nil {
		data := t.Data
		if t.Fill != nil {
			data = w.ingestBuffer(len(data))
			t.Fill(data, t.Start)
		}
		w.kernels[t.Query].Process(data, t.Start/uint64(s.plan.TupleSize), &t.Result)
		if w.delay > 0 {
			time.Sleep(w.delay)
		}
	}
	w.e.queue.Done(w.proc, t, time.Since(start))
	s.finish(t, w)
}

// ingestBuffer returns the worker's buffer for n bytes of a task it
// ingests. The ingestion copy could write the task's place in the ring
// instead, but the ring's lines then come from L3 to be written (a 4 MiB
// ring reuses a place only every 16 tasks) and go back dirty: with the
// bundle read, three lines of L3 traffic per line ingested, against one
// into a buffer that stays in L2. That gave 1.17-1.29x on YSB with two
// workers (docs/performance.md). The ring's bytes of such a task are never
// written; its place in the ring still bounds how far the producer runs
// ahead.
//
// One buffer serves every task the worker runs, also when run re-enters
// through help (a chained query's push into a full ring, from finish): that
// happens only after Process, when the buffer's bytes are no longer read
// (fragments and output tuples are copies).
func (w *worker) ingestBuffer(n int) []byte {
	if cap(w.ingest) < n {
		w.ingest = make([]byte, max(n, w.e.cfg.TaskSize))
	}
	return w.ingest[:n]
}

// help runs one queued task, if there is one: what a worker does instead of
// waiting for a downstream ring, so that chained queries cannot deadlock
// even on one worker. The GPU worker takes one step of its pipeline
// instead (gpuWorker.help).
func (w *worker) help() {
	if w.gpu != nil {
		w.gpu.help()
		return
	}
	if w.proc.Kind >= 0 {
		if t := w.e.queue.TryPop(w.proc); t != nil {
			w.run(t)
			return
		}
	}
	time.Sleep(20 * time.Microsecond)
}

// fail records the first error and unblocks every producer.
func (e *Engine) fail(err error) {
	e.errMu.Lock()
	if e.err == nil {
		e.err = err
	}
	e.errMu.Unlock()
	for _, s := range e.streams {
		s.ring.Cancel()
	}
}

func (e *Engine) failed() error {
	e.errMu.Lock()
	defer e.errMu.Unlock()
	return e.err
}

// Abort stops the run with err (ErrAborted if nil); safe from any goroutine.
// The producers' next calls return the error; Close still must be called.
func (e *Engine) Abort(err error) {
	if err == nil {
		err = ErrAborted
	}
	e.fail(err)
}

// Close ends the first stream's input and, see CloseAll, the engine; it
// returns the first stream's counters.
func (e *Engine) Close() (Stats, error) {
	st, err := e.CloseAll()
	return st[0], err
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
		s.closeInput()
		if len(s.downstream) == 0 && s.joinSide == nil {
			continue
		}
		if w == nil {
			w = e.newWorker(-1)
		}
		for s.next.Load() != s.nextID && e.failed() == nil {
			w.help()
		}
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
	e.releaseRings()
	return e.stats(), e.failed()
}

func (e *Engine) stats() []Stats {
	st := make([]Stats, len(e.entries))
	for i, en := range e.entries {
		st[i] = en.stream.Stats()
	}
	return st
}

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

// newRing allocates a stream's ring on NUMA node node where the kernel lets
// us (a warning otherwise: placement is an optimisation). On a machine of
// several nodes with pinned workers, streams go round-robin over the
// workers' nodes (MemNode is then the first's).
func (e *Engine) newRing(node int) (*buffer.Ring, error) {
	if e.cfg.MemPolicy == cpu.MemDefault {
		return buffer.NewRing(e.cfg.BufferSize)
	}
	r, err := buffer.NewRingOnNode(e.cfg.BufferSize, node, e.cfg.MemPolicy)
	if err == nil {
		return r, nil
	}
	if e.cfg.Warn != nil {
		e.cfg.Warn(fmt.Sprintf("ring memory not placed on node %d: %v", node, err))
	}
	return buffer.NewRing(e.cfg.BufferSize)
}

// RingNode reports the NUMA node of stream i's ring memory (-1 if unknown).
func (e *Engine) RingNode(i int) int {
	n, err := e.entries[i].stream.ring.Node()
	if err != nil {
		return -1
	}
	return n
}

// PinIngestion locks the calling goroutine to its thread and pins the
// thread to cfg.IngestCore (nothing unless PinIngest). Call it at the start of
// a producer goroutine that then exits: the thread is not unlocked, so that
// the runtime retires it with its narrowed affinity instead of reusing it.
func (c Config) PinIngestion() error {
	if !c.PinIngest {
		return nil
	}
	runtime.LockOSThread()
	return cpu.PinCurrentThread(c.IngestCore)
}

// Right returns a window join's right input (nil for other streams).
func (s *Stream) Right() *Stream { return s.right }

// Plan returns the stream's compiled query.
func (s *Stream) Plan() *kernels.Plan { return s.plan }

// finish hands a processed task to the result stage and merges every task
// that is next in order.
func (s *Stream) finish(t *scheduler.Task, w *worker) {
	s.slots[t.ID&s.mask].Store(t)
	for {
		if !s.mergeMu.TryLock() {
			return // the holder re-checks after unlocking
		}
		n := s.next.Load()
		for {
			sl := &s.slots[n&s.mask]
			t := sl.Load()
			if t == nil || t.ID != n {
				break
			}
			sl.Store(nil)
			s.merge(t, w)
			n++
			s.next.Store(n)
		}
		s.mergeMu.Unlock()
		// A task that finished while we held the lock found it taken and
		// left its merge to us. Only the slot's emptiness may be read here:
		// a task seen after unlocking may already be merged and recycled by
		// another worker. With fewer tasks in flight than slots, a full slot
		// at next's index holds task next (or a later merger moved next on,
		// and the extra TryLock round is harmless).
		if s.slots[s.next.Load()&s.mask].Load() == nil {
			return
		}
	}
}

// merge runs under mergeMu, in task order.
func (s *Stream) merge(t *scheduler.Task, w *worker) {
	var counted *window.TaskResult // a stateless query's counters to add
	if s.e.failed() == nil {
		var err error
		s.worker = w
		switch {
		case t.Result.Refused:
			err = s.refused(t)
		case s.asm != nil:
			err = s.asm.Merge(&t.Result, s.emitFn)
		default:
			// The result stage of a stateless query: the task's output
			// handed on in order.
			counted = &t.Result
			err = s.output(t.Result.Out)
		}
		if err != nil {
			s.e.fail(err)
		}
	}
	s.ring.Free(t.Start + uint64(len(t.Data)))
	s.lat.record(time.Duration(time.Now().UnixNano() - t.Dispatched))
	s.publish(t, counted)
	t.Data = nil
	s.free <- t
}

// refused is the InputError of task t's refused tuple.
func (s *Stream) refused(t *scheduler.Task) error {
	ts := uint64(s.plan.TupleSize)
	i := uint64(t.Result.RefusedAt)
	return &InputError{Query: s.win.Query, Offset: t.Start + i*ts, Tuple: t.Start/ts + i,
		Pos: t.Result.RefusedPos, Rows: s.plan.Query.Window.Type == query.Rows}
}

// output hands output tuples to the TupleSink and the downstream queries.
func (s *Stream) output(tuples []byte) error {
	if len(tuples) == 0 {
		return nil
	}
	if s.joinSide != nil {
		return s.joinSide.add(s.side, tuples, s.worker)
	}
	if s.spec.Tuples != nil {
		if err := s.spec.Tuples(tuples); err != nil {
			return fmt.Errorf("query %q output: %w", s.win.Query, err)
		}
	}
	for _, d := range s.downstream {
		if err := d.push(tuples, s.worker); err != nil {
			return err
		}
	}
	return nil
}

// push writes an upstream query's output into this stream's ring. It runs on
// a worker inside the upstream's result stage, so it must not block: while
// the ring is full, the worker runs other tasks (the ones that free it).
func (s *Stream) push(p []byte, w *worker) error {
	for len(p) > 0 {
		b, ok, err := s.ring.TryReserve(s.taskSize - s.filled)
		if err != nil {
			if ferr := s.e.failed(); ferr != nil {
				return ferr
			}
			return err
		}
		if !ok {
			w.help()
			continue
		}
		n := copy(b, p)
		p = p[n:]
		if err := s.commit(n); err != nil {
			return err
		}
	}
	return nil
}

// encodeRows appends the rows of window o as output tuples
// (query.OutputSchema).
func (s *Stream) encodeRows(dst []byte, o *window.Output) []byte {
	p := s.plan
	for _, g := range o.Rows {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(o.Start))
		if p.Layout.Hashed {
			var kb [16]byte
			k0, k1 := o.State.Key(g)
			binary.BigEndian.PutUint64(kb[0:], k0)
			binary.BigEndian.PutUint64(kb[8:], k1)
			for _, kp := range p.KeyParts {
				if kp.Int {
					dst = binary.LittleEndian.AppendUint64(dst, uint64(query.DecodeIntKey(kb[kp.Pos:], kp.Width)))
				} else {
					dst = append(dst, kb[kp.Pos:kp.Pos+kp.Width]...)
				}
			}
		} else if len(p.Query.GroupBy) > 0 {
			dst = append(dst, p.GroupKeys[g]...)
		}
		row := o.State.Row(g)
		for a := range p.Aggs {
			i, f, isFloat := p.AggValue(row, a)
			if isFloat {
				i = int64(math.Float64bits(f))
			}
			dst = binary.LittleEndian.AppendUint64(dst, uint64(i))
		}
	}
	return dst
}

// publish copies the assembler's counters where Stats can read them.
//
// It runs under mergeMu (one writer) and brackets the stores with seq, odd
// while they change, so that Stats reads one consistent snapshot (the
// counters add up) without taking the lock a Sink may be running under.
// t, if set, is the task just merged; r, if set, a stateless task's
// counters to add.
func (s *Stream) publish(t *scheduler.Task, r *window.TaskResult) {
	s.seq.Add(1)
	defer s.seq.Add(1)
	if t != nil {
		s.tasks.Add(1)
		s.bytes.Add(uint64(len(t.Data)))
	}
	if r != nil {
		s.tuples.Add(r.Tuples)
		s.filtered.Add(r.Filtered)
		s.counted.Add(r.Tuples - r.Filtered)
		s.watermark.Store(max(s.watermark.Load(), r.MaxTS))
	}
	if s.asm == nil {
		return
	}
	c := &s.asm.Counters
	s.tuples.Store(c.Tuples)
	s.filtered.Store(c.Filtered)
	s.unmatched.Store(c.Unmatched)
	s.late.Store(c.Late)
	s.counted.Store(c.Counted)
	s.windows.Store(c.Windows)
	s.rows.Store(c.Rows)
	s.watermark.Store(s.asm.Watermark())
}

func (s *Stream) emit(o *window.Output) error {
	if s.spec.Windows != nil {
		s.win.Start, s.win.End, s.win.out = o.Start, o.End, o
		if err := s.spec.Windows(&s.win); err != nil {
			return fmt.Errorf("query %q window [%d, %d): %w", s.win.Query, o.Start, o.End, err)
		}
	}
	if s.spec.Tuples != nil || len(s.downstream) > 0 {
		s.outBuf = s.encodeRows(s.outBuf[:0], o)
		return s.output(s.outBuf)
	}
	return nil
}

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
	b, err := s.ring.Reserve(s.taskSize - s.filled)
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
	s.filled += n
	if s.filled == s.taskSize {
		s.dispatch()
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

// Write copies p (any length; tuples may span calls) into the ring.
func (s *Stream) Write(p []byte) error {
	for len(p) > 0 {
		b, err := s.Buffer()
		if err != nil {
			return err
		}
		n := copy(b, p)
		p = p[n:]
		if err := s.Commit(n); err != nil {
			return err
		}
	}
	return nil
}

// dispatch queues the task being filled.
func (s *Stream) dispatch() {
	t := <-s.free
	t.ID = s.nextID
	t.Start = s.taskStart
	t.Data = s.ring.Slice(s.taskStart, s.filled)
	t.Dispatched = time.Now().UnixNano()
	t.Node = s.node
	t.Fill = nil
	if s.unfilled {
		t.Fill = s.fill
	}
	s.nextID++
	s.taskStart += uint64(s.filled)
	s.filled, s.unfilled = 0, false
	s.e.queue.Push(t)
}

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

// finishAll runs after the workers stopped: every window still open is
// emitted.
func (s *Stream) finishAll() {
	s.mergeMu.Lock()
	defer s.mergeMu.Unlock()
	if s.next.Load() != s.nextID && s.e.failed() == nil {
		s.e.fail(fmt.Errorf("engine: query %q: %d of %d tasks merged after the workers stopped", s.win.Query, s.next.Load(), s.nextID))
	}
	s.flushLocked(nil)
	s.publish(nil, nil)
}

// flush emits every window still open, once the stream's tasks are merged.
func (s *Stream) flush(w *worker) {
	s.mergeMu.Lock()
	defer s.mergeMu.Unlock()
	s.flushLocked(w)
	s.publish(nil, nil)
}

func (s *Stream) flushLocked(w *worker) {
	if s.flushed || s.asm == nil || s.e.failed() != nil {
		return
	}
	s.flushed = true
	s.worker = w
	if err := s.asm.Flush(s.emitFn); err != nil {
		s.e.fail(err)
	}
}

// Stats returns a snapshot of the counters; safe from any goroutine. For a
// window join's left stream they are the join's: both inputs' tuples, the
// late ones, the windows joined and the pairs output (Rows).
func (s *Stream) Stats() Stats {
	if s.right != nil {
		l, r := s.stats(), s.right.stats()
		tuples, late, windows, pairs := s.joinSide.stats()
		return Stats{
			Query: s.joinSide.j.Name, Tasks: l.Tasks + r.Tasks, Bytes: l.Bytes + r.Bytes,
			Tuples: tuples, Late: late, Counted: tuples - late, Windows: windows, Rows: pairs,
			Watermark: min(l.Watermark, r.Watermark), Pinned: l.Pinned,
			GPUFallbackTasks: l.GPUFallbackTasks + r.GPUFallbackTasks,
		}
	}
	return s.stats()
}

// ResetLatency starts a new measured interval of the task latencies (the
// end of a warm-up).
func (s *Stream) ResetLatency() { s.lat.reset() }

func (s *Stream) stats() Stats {
	st := Stats{
		LatencyP50: s.lat.quantile(0.5), LatencyP99: s.lat.quantile(0.99),
		Query:  s.win.Query,
		Pinned: []int{}, // gpu mode: no CPU worker
	}
	if s.e.workers != nil {
		st.Pinned = s.e.workers.Pinned()
	}
	for {
		v := s.seq.Load()
		if v%2 == 1 { // publish is between its stores
			runtime.Gosched()
			continue
		}
		st.Tasks, st.Bytes = s.tasks.Load(), s.bytes.Load()
		st.Tuples, st.Filtered, st.Unmatched = s.tuples.Load(), s.filtered.Load(), s.unmatched.Load()
		st.Late, st.Counted = s.late.Load(), s.counted.Load()
		st.Windows, st.Rows = s.windows.Load(), s.rows.Load()
		st.Watermark = s.watermark.Load()
		st.GPUFallbackTasks = s.gpuFallback.Load()
		if s.seq.Load() == v {
			return st
		}
	}
}
