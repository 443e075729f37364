package offload

import "github.com/saber-hx/saber-hx/window"

// The device-format outputs: what the kernels of kernels/cuda/offload.cu
// write and the emulator mirrors, and the parameters the host passes them.
// Keep in step with offload.cu.

// blockDim is the threads per block of every launch (one thread per tuple).
const blockDim = 256

// An aggregation's output is one buffer of 64-bit words:
//
//	[0, hdrWords)                      the task's counters (hdr*)
//	[hdrWords, hdrWords+npanes)        per pane: the index of its first tuple
//	                                   that passed WHERE and the join (noIndex:
//	                                   none), which orders the fragments
//	[hdrWords+npanes, ...)             per pane and group, pane-major, a row of
//	                                   rowWords: the count, the aggregate words
//	                                   (AggAdd as two's complement, AggMin and
//	                                   AggMax biased: see bias), then the index
//	                                   of the row's first tuple (noIndex: none),
//	                                   which orders the groups in Touched
//
// agg_init writes every word of it before the tuples are read.
const (
	hdrFiltered  = 0 // failed WHERE
	hdrUnmatched = 1 // passed WHERE, no partner in the static join
	hdrLate      = 2 // matched, late against the task's own watermark
	hdrOutside   = 3 // matched, but its pane is outside [base, base+npanes): the host falls back
	hdrMaxPos    = 4 // the task's largest position (event time, or stream index), biased
	hdrWords     = 8
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
//	aggregate  offset | wide<<32 | kind<<40 (window.AggKind)
//	projection offset | type<<32 (query.Type)
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
		w = append(w, uint64(a.off)|b2u(a.wide)<<32|uint64(a.kind)<<40)
	}
	return w
}

func (sh *shape) projWords() []uint64 {
	w := make([]uint64, 0, len(sh.project))
	for _, p := range sh.project {
		w = append(w, uint64(p.off)|uint64(p.typ)<<32)
	}
	return w
}

// initRow is the value agg_init gives each word of a row: the identity of
// its fold.
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

// aggOutWords is the size in words of an aggregation's output for npanes.
func (sh *shape) aggOutWords(npanes int64) int64 {
	return hdrWords + npanes*(1+int64(sh.groups)*int64(sh.rowWords()))
}
