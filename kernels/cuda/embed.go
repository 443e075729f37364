// Package cuda holds saber-hx's CUDA kernels as PTX, embedded as text: it
// needs neither cgo nor the `cuda` build tag, so every build carries the
// kernels and a GPU processor (in a `-tags cuda` build) loads them with the
// driver API (cuModuleLoadData, gorgonia.org/cu's LoadData), which
// JIT-compiles the PTX for the GPU at hand.
//
// The CUDA C sources are the .cu files next to this one; the PTX is
// generated from them by build/ptx.sh and committed (CI checks it is up to
// date where nvcc is installed: build/ptx.sh --check). Every kernel
// parameter is 64-bit, as gorgonia.org/cu's Function.Launch requires; the
// sources document each kernel's parameters, grid and output layout.
package cuda

import _ "embed"

// YSB is ysb.ptx: the kernels for YSB's shape over one task
// (YSBEntries), reproducing the fused CPU kernel's pane fragments.
//
//go:embed ysb.ptx
var YSB string

// Select is select.ptx: selection with stream compaction of the tuples
// whose int32 column equals a constant (SelectEntries).
//
//go:embed select.ptx
var Select string

// Offload is offload.ptx: the kernels of package offload, driven by
// descriptor arrays and expression programs (predicates, the join table,
// aggregate words, group key parts, projections), for an aggregation with
// dense or hashed groups (OffloadAggEntries), a selection with
// compaction (OffloadSelEntries) and a window join's pairs
// (OffloadJoinEntries). offload.cu documents their parameters,
// the programs' instructions and the output layout.
//
//go:embed offload.ptx
var Offload string

// Kernel entry points, in launch order.
var (
	YSBEntries        = []string{"ysb_block_max", "ysb_aggregate", "ysb_finish"}
	SelectEntries     = []string{"select_eq_i32_count", "select_eq_i32_compact"}
	OffloadAggEntries = []string{"agg_init", "agg_block_max", "agg_tuples"}
	OffloadSelEntries = []string{"sel_count", "sel_compact"}
	// OffloadJoinEntries compute a window join's pairs (package offload's
	// JoinProgram).
	OffloadJoinEntries = []string{"join_count", "join_compact"}
)

// Counters of ysb_aggregate: indexes into its counters array (five
// unsigned 64-bit words, zeroed before ysb_block_max).
const (
	CounterFiltered  = 0
	CounterUnmatched = 1
	CounterLate      = 2
	CounterOutside   = 3 // kept tuples whose pane had no room: redo the task on the CPU
	CounterMaxTS     = 4 // the task's max event time, int64 after ysb_finish
	NumCounters      = 5
)

// YSBRowWords is the number of 64-bit words of a ysb_aggregate group row:
// count, then max(event_time).
const YSBRowWords = 2
