package gpu

import "github.com/saber-hx/saber-hx/window"

// The device-format outputs: what the kernels of kernels/cuda/kernels.cu
// write and the emulator mirrors, and the parameters the host passes them.
// Keep in step with kernels.cu.

// blockDim is the threads per block of every launch (one thread per tuple).
const blockDim = 256

// kernelParams is the number of (64-bit) parameters of each kernel of
// kernels.cu: the CUDA device's launch checks its arguments against it,
// and a test checks it against kernels.ptx.
var kernelParams = map[string]int{
	"agg_init":      5,
	"agg_block_max": 7,
	"agg_tuples":    31,
	"sel_count":     9,
	"sel_compact":   12,
	// sel_compact_flags is sel_compact reading WHERE's outcome from the
	// flags sel_count wrote (one evaluation per tuple); sel_compact
	// evaluates it again (SABER_HX_GPU_SEL=twopass).
	"sel_compact_flags": 10,
	"join_count":        8,
	"join_compact":      10,
	// scan_blocks turns a kernel's per-block partials into their exclusive
	// scan (sum or max) for the kernel after: one block.
	"scan_blocks": 3,
}

// An aggregation's output is one buffer of 64-bit words:
//
//	[0, hdrWords)                      the task's counters (hdr*)
//	[hdrWords, hdrWords+npanes)        per pane: the index of its first tuple
//	                                   that passed WHERE and the join (noIndex:
//	                                   none), which orders the fragments
//	[hdrWords+npanes, ...)             dense groups: per pane and group,
//	                                   pane-major, a row of rowWords: the
//	                                   count, the aggregate words (AggAdd as
//	                                   two's complement, AggMin and AggMax
//	                                   biased: see bias), then the index of the
//	                                   row's first tuple (noIndex: none), which
//	                                   orders the groups in Touched;
//	                                   hashed groups: hdr[hdrEntries] entries
//	                                   of entryWords, in no particular order:
//	                                   the pane's offset in [0, npanes), the
//	                                   key's two words, then the row as above
//
// agg_init writes every word of it before the tuples are read, but for
// the entries, which the tuple that claims one writes. Hashed groups are
// found through a table of a power of two slots (task.slots) per task:
// a slot is 0 (empty), slotBusy (being claimed), or slotEntry + the
// index of its entry; at most task.entries entries (min(n, slots)).
const (
	hdrFiltered  = 0 // failed WHERE
	hdrUnmatched = 1 // passed WHERE, no partner in the static join
	hdrLate      = 2 // matched, late against the task's own watermark
	hdrOutside   = 3 // matched, but its pane is outside [base, base+npanes): the host falls back
	hdrMaxPos    = 4 // the task's largest position (event time, or stream index), biased
	hdrOverflow  = 5 // hashed groups: counted tuples whose group found no slot: the host falls back
	hdrEntries   = 6 // hashed groups: entries claimed
	hdrWords     = 8
)

const (
	slotBusy  = 1
	slotEntry = 2
)

// noIndex is an unset first-tuple index (the identity of atomicMin).
const noIndex = ^uint64(0)

const signBit = uint64(1) << 63

// bias maps int64 onto uint64 keeping the order, so that unsigned 64-bit
// atomicMin/atomicMax compute signed ones; bias(math.MinInt64) is 0.
func bias(x int64) uint64 { return uint64(x) ^ signBit }

func unbias(u uint64) int64 { return int64(u ^ signBit) }

// A selection's counters: selCount is the number of tuples written to the
// output buffer (those that passed WHERE), in input order.
const (
	selCount    = 0
	selCounters = 2
)

// Packed descriptors, one 64-bit word each (two for a predicate), as the
// kernels read them from device memory.
//
//	predicate  word 0: offset | wide<<32 | op<<40; word 1: the constant
//	aggregate  offset | wide<<32 | kind<<40 (window.AggKind) | expr<<48;
//	           with expr, offset is the start of the argument's program
//	projection the start of the projection's program
//	key part   pos | width<<8 | bytes<<16 | offset<<32: a bytes column at
//	           offset, else the start of an integer program
func (sh *shape) predWords() []uint64 {
	w := make([]uint64, 0, 2*len(sh.preds))
	for _, p := range sh.preds {
		w = append(w, uint64(p.off)|b2u(p.wide)<<32|uint64(p.op)<<40, uint64(p.c))
	}
	return w
}

func (sh *shape) aggWords() []uint64 {
	w := make([]uint64, 0, len(sh.aggs))
	for _, a := range sh.aggs {
		w = append(w, uint64(a.off)|b2u(a.wide)<<32|uint64(a.kind)<<40|b2u(a.expr)<<48)
	}
	return w
}

func (sh *shape) projWords() []uint64 {
	w := make([]uint64, 0, len(sh.project))
	for _, start := range sh.project {
		w = append(w, uint64(start))
	}
	return w
}

func (sh *shape) keyWords() []uint64 {
	w := make([]uint64, 0, len(sh.keys))
	for _, k := range sh.keys {
		w = append(w, uint64(k.pos)|uint64(k.width)<<8|b2u(k.bytes)<<16|uint64(k.off)<<32)
	}
	return w
}

// initRow is the value agg_init (or a hashed group's claimant) gives each
// word of a row: the identity of its fold.
func (sh *shape) initRow() []uint64 {
	r := make([]uint64, sh.rowWords())
	for w, a := range sh.aggs {
		if a.kind == window.AggMin {
			r[1+w] = ^uint64(0) // biased MaxInt64
		} // AggAdd: 0; AggMax: biased MinInt64, 0 too
	}
	r[len(r)-1] = noIndex
	return r
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// aggOutWords is the size in words of an aggregation's output for npanes
// (and, with hashed groups, entries entries).
func (sh *shape) aggOutWords(npanes, entries int64) int64 {
	n := hdrWords + npanes*(1+int64(sh.groups)*int64(sh.rowWords()))
	if sh.hashed {
		n += entries * int64(sh.entryWords())
	}
	return n
}

// tableHash is the home of a hashed group's key in the task's table
// (kernels.cu's table_hash): any hash serves, since the host inserts the
// groups into the CPU's GroupState itself.
func tableHash(off, k0, k1 uint64) uint64 {
	return mix(k1 ^ mix(k0^off*0x9e3779b97f4a7c15))
}
