// Package gpu is saber-hx's GPU processor: it runs a query's tasks on a
// GPU, producing exactly the CPU kernels' results (window.TaskResult: the
// same fragments, group rows, counters and output tuples as
// kernels.Plan.NewKernel().Process). Its CUDA kernels are kernels/cuda's
// (CUDA C and the PTX built from it); the device layer under it (device
// listing, page-locked memory, the gorgonia.org/cu bindings, behind the
// `cuda` build tag) is gpu/internal/device, of which Devices, Built,
// Available and ErrNotBuilt are re-exported for the command line. A build
// without the tag has the emulator only: Open returns an error wrapping
// ErrNotBuilt.
//
// # Data path
//
// A Device compiles a kernels.Plan into a Program with a number of slots
// (the pipeline depth). A slot is one task in flight: on the CUDA device a
// stream, page-locked staging buffers on the host and buffers on the
// device. Submit copies the task's bytes into the slot's staging buffer,
// enqueues the host-to-device copy, the kernels and the device-to-host copy
// of their output on the slot's stream, and returns; Wait waits for the
// stream and turns the device's output into the task's result (Finish and
// Unpack, its two halves, let the second run on another goroutine: see
// Unpacker). Several
// slots in flight overlap copies with kernels, as SABER's GPU pipeline does.
//
// An aggregation's kernels write, per pane of the task and per dense group,
// one row of 64-bit words (the count, the aggregate words, and the index of
// the group's first tuple in the pane, which gives window.GroupState's
// Touched order), plus per pane the index of its first tuple (the order of
// the task's fragments) and the task's counters. The output covers a range
// of panes [base, base+npanes) that the host chooses per task before the
// kernels run, from the positions of the task's first and last tuples with
// some slack for out-of-order tuples (see paneRange). A tuple whose pane
// falls outside the range is counted in the output's "outside" counter, and
// Wait then reports ok false: the caller runs that task on a CPU kernel
// instead. A selection's kernels compact the tuples that pass WHERE (or
// their projections' values) into an output buffer, in input order.
//
// Hashed groups (GROUP BY stream columns and integer expressions) have, per
// task, a device hash table over (pane, key), sized from the task's tuple
// count so that its groups fit: a group's entry holds its pane, its key
// (the CPU's 16-byte encoding), its row and the index of its first counted
// tuple. The host inserts the groups into the CPU's GroupStates itself, in
// the order the CPU kernel would (panes and groups merged by first tuple),
// which reproduces the CPU's Touched order and slot positions; a task
// whose groups overflow the table falls back like one whose panes fall
// outside the range.
//
// # Expressions
//
// WHERE (beyond its column-versus-constant terms, which have a fast path),
// projections, aggregate arguments and GROUP BY expressions are compiled on
// the host into small postfix programs (expr.go) that the kernels and the
// emulator interpret per tuple with exactly the CPU kernels' semantics:
// int64 arithmetic wrapping, integer division truncating with x/0 = 0,
// float64 operations rounded one by one, mixed comparisons in float64,
// AND and OR.
//
// # Shapes
//
// Supported says which plans have GPU kernels: aggregations with any WHERE
// the CPU runs, an optional static join on a 16-byte key, no groups,
// groups by the joined value, or hashed groups by integer and bytes columns
// and integer expressions (with or without the join), COUNT, SUM, AVG, MIN
// and MAX of integer expressions, range and row windows, tumbling and
// sliding; and stateless queries with any WHERE and SELECT * or a
// projection of integer expressions, columns and constants. Refused, with
// an error naming the operator: UDFs; aggregates of float expressions (a
// float sum depends on the order of its additions, which the device's
// atomics do not keep); projections that compute floats (a NaN result's
// bits are the CPU's instruction set's); expressions needing more than
// maxStack evaluation stack words; static joins on keys other than 16
// bytes.
//
// # The emulator
//
// NewEmulator returns a Device that runs the same algorithms as the CUDA
// kernels (kernels/cuda/kernels.cu) in Go, writing the same output buffers
// (poisoned before every task, so that what the kernels must initialise
// they do), which the same host code turns into results. It lets every part
// the GPU path shares with the CPU (layouts, pane ranges, the unpacking of
// fragments, the fallback, pipelining) be tested on machines without a GPU;
// the cuda-tagged tests check that the CUDA device writes what the emulator
// writes.
package gpu

import (
	"errors"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// ErrNoKernel is wrapped by Compile/Supported errors naming the operator of a
// query that has no GPU kernel, e.g. `query "q": GROUP BY (a + b): no GPU kernel`.
var ErrNoKernel = errors.New("no GPU kernel")

// Supported returns nil if p's shape has GPU kernels, else an error wrapping
// ErrNoKernel that names what is missing. Same answer in every build.
func Supported(p *kernels.Plan) error {
	_, err := analyse(p)
	return err
}

// SupportedJoin returns nil if window join j's WHERE has a GPU form, else
// an error (wrapping ErrNoKernel where the WHERE has none). Same answer in
// every build.
func SupportedJoin(j *query.WindowJoin) error {
	_, err := analyseJoin(j)
	return err
}

// Device runs programs on one GPU (or on its emulation). It is an
// engine.GPU (the interface the engine consumes of a device, which this
// package does not import): Program and JoinProgram are aliases of the
// very interface literals that engine.GPUProgram and engine.GPUJoinProgram
// are, and engine_test.go asserts it.
type Device interface {
	Name() string
	// Supports is Supported(p).
	Supports(p *kernels.Plan) error
	// Compile returns a Program for p with depth slots, or an error (wrapping
	// ErrNoKernel when Supported(p) != nil).
	Compile(p *kernels.Plan, depth int) (Program, error)
	// SupportsJoin is SupportedJoin(j).
	SupportsJoin(j *query.WindowJoin) error
	// CompileJoin returns a JoinProgram computing window join j's pairs
	// (join.go), or an error (wrapping ErrNoKernel when its WHERE has no
	// GPU form).
	CompileJoin(j *query.WindowJoin) (JoinProgram, error)
	// Close closes the programs and join programs still open.
	Close() error
}

// Program runs one query's tasks, up to Depth at once, each on its own slot
// (a CUDA stream plus its pinned staging and device buffers). One goroutine
// owns a Program: it is not safe for concurrent use.
//
// It is an alias of an interface literal, identical to engine.GPUProgram's
// (keep the two in step: a Device must be an engine.GPU).
type Program = interface {
	Depth() int
	// Submit starts the task data (whole tuples; first is the stream index
	// of its first tuple, for ROWS windows) on free slot s and returns without
	// waiting for the GPU. data stays valid and unchanged until Wait(s) returns.
	Submit(s int, data []byte, first uint64) error
	// Wait blocks until slot s's task is done and fills r (already Reset by
	// the caller with p's layout) exactly as p.NewKernel().Process would:
	// same fragments (panes, group rows, counts), Out, counters. ok false
	// means the kernel's output could not hold the task (e.g. panes outside
	// the range the slot's output buffer covers): r is then unspecified and
	// the caller runs the task on a CPU kernel instead. Slot s is free after.
	Wait(s int, r *window.TaskResult) (ok bool, err error)
	// Close waits for every slot and frees the program's buffers and streams.
	Close() error
}

// Unpacker is Wait in two halves, which every Program a Device compiles
// also has (assert it: p.(Unpacker)), identical to engine.GPUUnpacker.
// Finish(s) blocks until slot s's task is done on the device and keeps its
// output in the slot, which stays busy; Unpack(s, r) then fills r as Wait
// would and frees the slot. Unpack is host code on the slot's own buffers:
// it may run on another goroutine than the one that calls Submit, Finish
// and Unpack on the other slots, at the same time, so that unpacking one
// task overlaps the device's work on the others (the calls on one slot
// one after another, none concurrent with Close).
type Unpacker = interface {
	Finish(s int) error
	Unpack(s int, r *window.TaskResult) (ok bool, err error)
}

// Open opens GPU ordinal dev. Without the cuda build tag it returns an error
// wrapping gpu.ErrNotBuilt (which says how to build with CUDA).
func Open(dev int) (Device, error) { return open(dev) }
