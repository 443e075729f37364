package engine

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"time"

	"github.com/saber-hx/saber-hx/cpu"
	"github.com/saber-hx/saber-hx/scheduler"
)

// Config tunes the engine. Its zero value is the command line's defaults
// (saber-hx run and bench without flags): a zero Workers, TaskSize,
// BufferSize or Policy takes DefaultWorkers, DefaultTaskSize,
// DefaultBufferSizeFor or hls (see Defaults). Pin and MemPolicy have no
// "unset": the command line's --pin=auto and --mem-policy=preferred are
// its own choices.
type Config struct {
	Workers int  // CPU worker goroutines, >= 1; 0: DefaultWorkers(Mode)
	Pin     bool // pin each worker to its own core
	// CPUs is the cores to pin to, in worker order; nil: Placement over
	// the NUMA nodes (cpu.Topology.Plan), else the process's affinity
	// mask, over the CPUs that no other engine of the process has pinned
	// workers to (unpinned, with a warning, where too few are left).
	CPUs []int
	// Placement is the placement of pinned workers without CPUs: "" or
	// cpu.Compact, or cpu.Spread.
	Placement cpu.Placement
	// TaskSize is the bytes per task, a multiple of every input's tuple
	// size; 0: DefaultTaskSize.
	TaskSize int
	// BufferSize is the ring bytes per stream: a power of two, at least 2
	// tasks; 0: DefaultBufferSizeFor the workers and TaskSize.
	BufferSize int
	Warn       func(msg string) // warnings (pinning refused); nil: dropped
	// Started, if set, is called with the engine once Start has started
	// it, before Start returns: where a caller that does not start the
	// engine itself (ysb's runs) hands it to what watches it, such as a
	// metrics server.
	Started func(*Engine)

	// Scheduling (see scheduler and docs/scheduling.md).
	Policy          scheduler.Policy  // "" means hls
	Static          map[string]string // static: query name -> processor kind name
	SwitchThreshold int               // hls: 0 means scheduler.DefaultSwitchThreshold
	MonitorInterval time.Duration     // hls: 0 means scheduler.DefaultMonitorInterval
	// Placement: rings' memory on NUMA node MemNode with MemPolicy
	// (MemDefault: first touch; where the engine places pinned workers
	// itself, MemNode is the first worker's node), and the producers' core
	// (IngestCore, if PinIngest; for the producers Engine.Produce runs).
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

	// groups are the CPU processor kinds and their workers; nil means one
	// kind, "cpu", of Workers workers. Several CPU groups stand for
	// processors of different speeds (the tests use them, with an injected
	// delay). The GPU is a kind of its own (GPU below).
	groups []processorGroup
	// resultParts, if set, is the partitions of a hashed aggregation's
	// result stage (Engine.resultParts): the tests use it.
	resultParts int
	// lendMin, if set, is the smallest stateless output lent to the query
	// downstream rather than copied (handoff.go): the tests lower it, so
	// that their small tasks lend too.
	lendMin int

	// GPU is the device of the GPU processor kind, named "gpu"; nil means
	// no GPU kind (cpu mode). With a GPU and without GPUOnly (hybrid mode)
	// the kinds are the CPU kinds (kind 0, "cpu") and then the GPU, and Policy shares the tasks among them;
	// a query the GPU has no kernel for (GPU.Supports) runs on the CPU
	// kinds only, and Start says so once through Warn.
	//
	// The engine compiles one GPUProgram per query on the device and
	// closes them in CloseAll (or when Start fails); the device itself
	// belongs to whoever opened it (gpu.Open, gpu.NewEmulator: the
	// engine imports no GPU package), who closes it after CloseAll or a
	// failed Start.
	GPU GPU
	// GPUOnly (gpu mode): the GPU kind is the only processor kind (kind 0);
	// no CPU worker runs, Workers is ignored, and a query
	// without a GPU kernel is an ErrConfig. Needs GPU.
	GPUOnly bool
	// GPUDepth is the number of tasks in flight on the GPU at once (each on
	// its own slot: a CUDA stream and its buffers); 0 means
	// DefaultGPUDepth.
	GPUDepth int
}

// DefaultGPUDepth is the GPU pipeline depth when Config.GPUDepth is 0.
const DefaultGPUDepth = 4

// The defaults of a zero Config.TaskSize and BufferSize (the command line's
// --task-size and --buffer-size): a zero BufferSize is
// DefaultBufferSizeFor the workers and the task size, at least
// DefaultBufferSize. docs/performance.md has the measurements behind them.
const (
	DefaultTaskSize   = 1 << 20
	DefaultBufferSize = 4 << 20
)

// DefaultBufferSizeFor is the ring of a zero Config.BufferSize: the least
// power of two of at least DefaultBufferSize that holds two tasks per
// worker, so that every worker has a task of the stream to run while the
// producer fills the next ones (a ring of a few tasks would idle the
// workers of a big machine).
func DefaultBufferSizeFor(workers, taskSize int) int {
	size := DefaultBufferSize
	for (size < 2*workers*taskSize || size/2 < taskSize) && size < 1<<62 {
		size <<= 1
	}
	return size
}

// HybridBufferSizeFor is the ring of a zero Config.BufferSize in hybrid mode:
// 32 tasks per CPU worker, up to 512 MiB, and never less than
// DefaultBufferSizeFor. The ring holds the tasks the CPU workers finish
// while a task the GPU runs, older than theirs, holds up the ordered
// result stage: a GPU task's round trip lasts tens of CPU tasks. On
// sixteen cores with an H200 (docs/gpu.md), 32 MiB rings ran hybrid mode
// at 0.4-0.5x cpu mode and 512 MiB ones at 0.8-1.5x.
func HybridBufferSizeFor(workers, taskSize int) int {
	size := DefaultBufferSizeFor(workers, taskSize)
	for size < 16*2*workers*taskSize && size < maxHybridBuffer {
		size <<= 1
	}
	return size
}

const maxHybridBuffer = 512 << 20

// DefaultWorkers is the workers of a zero Config.Workers in mode (Mode), as
// the command line's --workers: one per CPU this process may use, one fewer
// in hybrid mode, where the GPU worker needs a CPU of its own. The CPUs it
// may use are those of its affinity mask, at most GOMAXPROCS: the Go
// runtime sets that from a container's CPU quota (cgroup cpu.max), which
// a pod limited to 2 CPUs on a 64-core node has; 64 workers there would
// be throttled in turn, each ring sized for them.
func DefaultWorkers(mode string) int {
	return defaultWorkers(mode, min(len(cpu.AllowedCPUs()), runtime.GOMAXPROCS(0)))
}

func defaultWorkers(mode string, cpus int) int {
	if mode == "hybrid" && cpus > 1 {
		return cpus - 1
	}
	return max(cpus, 1)
}

// Defaults returns c with its zero fields' defaults filled in (see Config):
// what Start runs.
func (c Config) Defaults() Config {
	if c.Workers == 0 && len(c.groups) == 0 {
		c.Workers = DefaultWorkers(c.Mode())
	}
	if c.TaskSize == 0 {
		c.TaskSize = DefaultTaskSize
	}
	if c.BufferSize == 0 {
		workers := c.cpuWorkers()
		c.BufferSize = DefaultBufferSizeFor(max(workers, 1), c.TaskSize)
		if c.Mode() == "hybrid" {
			c.BufferSize = HybridBufferSizeFor(max(workers, 1), c.TaskSize)
		}
	}
	if c.Policy == "" {
		c.Policy = scheduler.HLS
	}
	return c
}

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

// cpuWorkers is the CPU workers of every CPU group.
func (c Config) cpuWorkers() int {
	workers := 0
	for _, g := range c.cpuGroups() {
		workers += g.Workers
	}
	return workers
}

// gpuDepth is GPUDepth with its default.
func (c Config) gpuDepth() int {
	if c.GPUDepth == 0 {
		return DefaultGPUDepth
	}
	return c.GPUDepth
}

// processorGroup is one processor kind and its workers.
type processorGroup struct {
	Name    string
	Workers int
	delay   time.Duration // tests: added to every task of the group
}

// cpuGroups returns the CPU processor kinds: none in gpu mode.
func (c Config) cpuGroups() []processorGroup {
	switch {
	case c.GPU != nil && c.GPUOnly:
		return nil
	case len(c.groups) > 0:
		return c.groups
	}
	return []processorGroup{{Name: "cpu", Workers: c.Workers}}
}

// Validate checks cfg as given against a tuple size, naming the bad value
// and the valid range: a zero Workers, TaskSize or BufferSize is an error
// here (the command line's --task-size 0 is). Start validates
// cfg.Defaults(): check that for what Start runs.
func (c Config) Validate(tupleSize int) error {
	switch {
	case c.GPUDepth < 0:
		return fmt.Errorf("GPU pipeline depth %d: must be >= 1 (0: default %d)", c.GPUDepth, DefaultGPUDepth)
	case len(c.groups) == 0 && c.Workers < 1 && !c.GPUOnly:
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
	return c.fitsMemory(machineMemory())
}

// fitsMemory refuses a ring and a task's buffer per worker (the memory a
// run of one query holds at least) larger than mem bytes (0: unknown).
func (c Config) fitsMemory(mem uint64) error {
	workers := uint64(max(c.cpuWorkers(), 1))
	need := uint64(c.BufferSize) + workers*uint64(c.TaskSize) // both below 2^63: no overflow
	if mem == 0 || need <= mem {
		return nil
	}
	return fmt.Errorf("buffer size %d and a task of %d bytes per worker (%d workers): %s, more than the %s of memory this process may use (smaller tasks or buffer fit)",
		c.BufferSize, c.TaskSize, workers, memSize(need), memSize(mem))
}

// memSize is b in MiB, or GiB from one up.
func memSize(b uint64) string {
	if b >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
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
