// Package cuda holds the kernels of saber-hx's GPU processor
// (package gpu) as PTX, embedded as text: it needs neither cgo nor the
// `cuda` build tag, so every build carries the kernels and the GPU
// processor (in a `-tags cuda` build) loads them with the driver API
// (cuModuleLoadData, gorgonia.org/cu's LoadData), which JIT-compiles the PTX
// for the GPU at hand. The CPU processor's kernels are package kernels'
// (the directory above): kernels/ holds the kernels of both processors.
//
// The CUDA C source is kernels.cu next to this one (with common.cuh); the
// PTX is generated from it by build/ptx.sh and committed (CI checks it is up
// to date where nvcc is installed: build/ptx.sh --check). Every kernel
// parameter is 64-bit, as gorgonia.org/cu's Function.Launch requires; the
// source documents each kernel's parameters, grid and output layout.
package cuda

import _ "embed"

// PTX is kernels.ptx: the kernels of package gpu, driven by descriptor
// arrays and expression programs (predicates, the join table, aggregate
// words, group key parts, projections), for an aggregation with dense or
// hashed groups (AggEntries), a selection with compaction (SelEntries) and a
// window join's pairs (JoinEntries), with the scan of per-block partials
// they share (ScanEntries). kernels.cu documents their parameters, the
// programs' instructions and the output layout.
//
//go:embed kernels.ptx
var PTX string

// Kernel entry points, in launch order.
var (
	AggEntries = []string{"agg_init", "agg_block_max", "agg_tuples"}
	SelEntries = []string{"sel_count", "sel_compact", "sel_compact_flags"}
	// JoinEntries compute a window join's pairs (package gpu's
	// JoinProgram).
	JoinEntries = []string{"join_count", "join_compact"}
	// ScanEntries serve the three: the exclusive scan of a kernel's
	// per-block partials (launched between agg_block_max and agg_tuples,
	// sel_count and the compaction, join_count and join_compact).
	ScanEntries = []string{"scan_blocks"}
)
