package engine

import (
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/saber-hx/saber-hx/cpu"
	"github.com/saber-hx/saber-hx/scheduler"
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
	// a query the GPU has no kernel for (GPU.Supports) runs on the CPU
	// kinds only, and Start says so once through Warn.
	//
	// The engine compiles one GPUProgram per query on the device and
	// closes them in CloseAll (or when Start fails); the device itself
	// belongs to whoever opened it (offload.Open, offload.NewEmulator: the
	// engine imports no GPU package), who closes it after CloseAll or a
	// failed Start.
	GPU GPU
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
