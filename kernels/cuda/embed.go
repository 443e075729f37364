// Package cuda holds saber-hx's CUDA kernels as PTX, embedded as text: it
// needs neither cgo nor the `cuda` build tag, so every build carries the
// kernels and a GPU processor (in a `-tags cuda` build) loads them with the
// driver API (cuModuleLoadData, gorgonia.org/cu's LoadData), which
// JIT-compiles the PTX for the GPU at hand.
//
// The CUDA C source is offload.cu next to this one (with common.cuh); the
// PTX is generated from it by build/ptx.sh and committed (CI checks it is up
// to date where nvcc is installed: build/ptx.sh --check). Every kernel
// parameter is 64-bit, as gorgonia.org/cu's Function.Launch requires; the
// source documents each kernel's parameters, grid and output layout.
package cuda

import _ "embed"

// Offload is offload.ptx: the kernels of package offload, driven by
// descriptor arrays and expression programs (predicates, the join table,
// aggregate words, group key parts, projections), for an aggregation with
// dense or hashed groups (OffloadAggEntries), a selection with
// compaction (OffloadSelEntries) and a window join's pairs
// (OffloadJoinEntries), with the scan of per-block partials they share
// (OffloadScanEntries). offload.cu documents their parameters,
// the programs' instructions and the output layout.
//
//go:embed offload.ptx
var Offload string

// Kernel entry points, in launch order.
var (
	OffloadAggEntries = []string{"agg_init", "agg_block_max", "agg_tuples"}
	OffloadSelEntries = []string{"sel_count", "sel_compact", "sel_compact_flags"}
	// OffloadJoinEntries compute a window join's pairs (package offload's
	// JoinProgram).
	OffloadJoinEntries = []string{"join_count", "join_compact"}
	// OffloadScanEntries serve the three: the exclusive scan of a
	// kernel's per-block partials (launched between agg_block_max and
	// agg_tuples, sel_count and the compaction, join_count and
	// join_compact).
	OffloadScanEntries = []string{"scan_blocks"}
)
