// ysb.cu: saber-hx's kernels for YSB's query shape (select, static join,
// per-group count and max over panes) on one task in device memory.
// Compiled to PTX by build/ptx.sh (ysb.ptx, committed and embedded by
// embed.go); a GPU processor loads the PTX with the driver API.
// select.cu has the selection-with-compaction kernels.
//
// Conventions (every kernel here):
//  - Every parameter is 64 bits wide (pointers, long long, unsigned long
//    long): gorgonia.org/cu's Function.Launch copies 8 bytes per parameter.
//  - One thread per tuple, blockDim.x a multiple of 32 and at most 1024,
//    a 1-D grid of ceil(n / blockDim.x) blocks. Every thread of a block,
//    also those past n, must reach the __syncthreads: nobody returns early.
//  - Multi-kernel schemes pass per-block partials through global memory and
//    must be launched on the same stream with the same grid and block size.
//  - Tuples are little-endian, tuple_size bytes each, packed; loads of
//    misaligned columns are assembled from bytes.
//
// The YSB pipeline over one task, reproducing kernels/fused.go's output:
//   1. ysb_block_max      per-block max event time (and the task's MaxTS)
//   2. ysb_aggregate      per tuple: the watermark before it (exclusive
//                         prefix max over the task: the max of the blocks
//                         before plus an in-block scan), selection, join,
//                         pane, lateness, then atomics into the pane's rows
//   3. ysb_finish         turns the biased max words back into int64
// Output: npanes panes relative to base_pane, each ngroups dense rows of two
// 64-bit words, [count, max(event_time)], pane-major:
//   out[((pane - base_pane) * ngroups + group) * 2 + word]
// zeroed by the host before step 2 (cuMemsetD32 / cuMemsetD8). A row with
// count 0 is untouched (both words 0), as in window.GroupState.
//
// The signed max trick: CUDA's 64-bit atomicMax works on unsigned long long
// (a signed overload exists only on newer toolkits and we want one form).
// Flipping the sign bit, u = (unsigned)x ^ 0x8000000000000000, maps int64
// onto uint64 preserving order (INT64_MIN -> 0, -1 -> 0x7fff.., 0 -> 0x8000..,
// INT64_MAX -> 0xffff..), so atomicMax on the biased words is a signed max,
// and a zeroed word is the biased INT64_MIN: the identity of max, which is
// why the host need not initialise the max words. ysb_finish flips them back.
//
// Counters (unsigned long long, zeroed by the host before step 1):
//   counters[0] filtered   failed `int32 column == filter_value`
//   counters[1] unmatched  passed, but the key is not in the join table
//   counters[2] late       matched, but the watermark before it (inside the
//                          task) is >= the seal of its pane
//   counters[3] outside    matched, not late, but its pane is outside
//                          [base_pane, base_pane + npanes): the output has no
//                          room for it, so the host must redo the task on the
//                          CPU (or again with a wider pane range)
//   counters[4] max_ts     the task's largest event time (window.TaskResult
//                          MaxTS), biased until ysb_finish; INT64_MIN for an
//                          empty task
// tuples aggregated into a pane = the sum of its rows' counts.

#include "common.cuh"

enum { C_FILTERED = 0, C_UNMATCHED = 1, C_LATE = 2, C_OUTSIDE = 3, C_MAXTS = 4 };

// mix is the murmur3 64-bit finaliser, as kernels/join.go.
__device__ __forceinline__ u64 mix(u64 k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	return k ^ (k >> 33);
}

// floor_div is window.FloorDiv: division rounding toward minus infinity.
__device__ __forceinline__ i64 floor_div(i64 a, i64 b)
{
	i64 q = a / b;
	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

// seal is window.Spec.Seal: the end of the first window containing pane p.
__device__ __forceinline__ i64 seal_of(i64 p, i64 pane, i64 size, i64 slide)
{
	i64 first_window = floor_div(p * pane - size, slide) + 1;
	return first_window * slide + size;
}

// event_time is tuple i's time: its int64 column at off_time, or, for a
// ROWS window (rows != 0), its position first + i.
__device__ __forceinline__ i64 event_time(const u8 *tuples, i64 i, i64 tuple_size, i64 off_time, i64 rows, i64 first)
{
	if (rows)
		return first + i;
	return (i64)load_u64(tuples + i * tuple_size + off_time);
}

// ysb_block_max writes the largest event time of block b's tuples, biased,
// to block_max[b], and raises counters[C_MAXTS] to the task's max.
extern "C" __global__ void ysb_block_max(const u8 *tuples, i64 n, i64 tuple_size, i64 off_time, i64 rows, i64 first,
					 u64 *block_max, u64 *counters)
{
	i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	u64 v = i < n ? bias(event_time(tuples, i, tuple_size, off_time, rows, first)) : 0;
	v = block_reduce_max(v);
	if (threadIdx.x == 0) {
		block_max[blockIdx.x] = v;
		atomicMax(&counters[C_MAXTS], v);
	}
}

// ysb_aggregate classifies every tuple and aggregates the kept ones. The
// join table is kernels/join.go's: parallel arrays hi, lo, ord of mask+1
// slots (ord -1: empty), linear probing from mix(lo ^ mix(hi)) & mask, the
// key being the 16 bytes at off_key as two little-endian words (hi first).
// The group is the key's ordinal (dense_join != 0, YSB: the campaign), else
// group 0. Windows: pane, size, slide in event-time units (slide and size
// multiples of pane, as window.Spec).
extern "C" __global__ void ysb_aggregate(const u8 *tuples, i64 n, i64 tuple_size, i64 off_time, i64 rows, i64 first,
					 i64 off_filter, i64 filter_value, i64 off_key, const u64 *hi, const u64 *lo,
					 const int *ord, u64 mask, i64 dense_join, i64 ngroups, i64 pane, i64 size,
					 i64 slide, i64 base_pane, i64 npanes, const u64 *block_max, u64 *out,
					 u64 *counters)
{
	i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	bool valid = i < n;
	i64 et = valid ? event_time(tuples, i, tuple_size, off_time, rows, first) : (i64)SIGN_BIT;

	// The watermark before tuple i: the max over the blocks before this one,
	// then over the threads before this one in the block.
	u64 m = 0;
	for (u64 j = threadIdx.x; j < blockIdx.x; j += blockDim.x)
		m = umax(m, block_max[j]);
	u64 prefix = block_reduce_max(m);
	u64 in_block = block_exclusive_max_scan(valid ? bias(et) : 0);
	i64 prev = unbias(umax(prefix, in_block));

	bool filtered = false, unmatched = false, late = false, outside = false;
	if (valid) {
		const u8 *t = tuples + i * tuple_size;
		if ((i64)(int)load_u32(t + off_filter) != filter_value) {
			filtered = true;
		} else {
			u64 khi = load_u64(t + off_key), klo = load_u64(t + off_key + 8);
			u64 s = mix(klo ^ mix(khi)) & mask;
			int o;
			for (;;) {
				o = ord[s];
				if (o < 0 || (hi[s] == khi && lo[s] == klo))
					break;
				s = (s + 1) & mask;
			}
			if (o < 0) {
				unmatched = true;
			} else {
				i64 p = floor_div(et, pane);
				if (prev >= seal_of(p, pane, size, slide)) {
					late = true;
				} else if (p < base_pane || p - base_pane >= npanes) {
					outside = true;
				} else {
					i64 g = dense_join ? (i64)o : 0;
					u64 *row = out + ((p - base_pane) * ngroups + g) * 2;
					atomicAdd(&row[0], 1ULL);
					atomicMax(&row[1], bias(et));
				}
			}
		}
	}
	warp_count(&counters[C_FILTERED], filtered);
	warp_count(&counters[C_UNMATCHED], unmatched);
	warp_count(&counters[C_LATE], late);
	warp_count(&counters[C_OUTSIDE], outside);
}

// ysb_finish turns the biased max words of the nrows rows with a non-zero
// count back into int64, and the biased counters[C_MAXTS]. Any grid covering
// nrows threads.
extern "C" __global__ void ysb_finish(u64 *out, i64 nrows, u64 *counters)
{
	i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	if (r < nrows && out[r * 2] != 0)
		out[r * 2 + 1] ^= SIGN_BIT;
	if (r == 0)
		counters[C_MAXTS] ^= SIGN_BIT;
}
