// offload.cu: the kernels of saber-hx's GPU offload (package offload): an
// aggregation of the fused CPU kernel's shape and a selection with
// compaction, driven by descriptor arrays in device memory, so that one
// module serves every query of those shapes. Compiled to offload.ptx by
// build/ptx.sh. package offload's emulator (offload/emukernels.go) is the
// same algorithm in Go, kernel by kernel: keep the two in step.
//
// Conventions as in ysb.cu: every parameter 64-bit; one thread per tuple,
// blockDim.x a multiple of 32 and at most 1024 (the host launches 256), a
// 1-D grid of ceil(n / blockDim.x) blocks for the per-tuple kernels, every
// thread reaching every __syncthreads; kernels that pass per-block partials
// through global memory run on one stream with the same grid. Arithmetic on
// positions and panes wraps as Go's int64 does (done on unsigned values:
// signed overflow is undefined in C++).
//
// Descriptors (64-bit words, built by offload/format.go):
//   predicate   two words: offset | wide<<32 | op<<40 (query.CmpOp), then
//               the int64 constant; `int32/int64 column op constant`, the
//               column sign-extended to int64; a task's predicates are a
//               conjunction
//   aggregate   offset | wide<<32 | kind<<40 (window.AggKind: 1 add, 2 min,
//               3 max), the int32/int64 column folded into row word 1+w
//   projection  offset | type<<32 (query.Type: 1 int32, 2 int64, 3 float32,
//               4 float64), written as int64 or float64
//
// An aggregation over one task: agg_init, agg_block_max, agg_tuples. Its
// output, one buffer of 64-bit words:
//   [0, 8)                   counters: filtered, unmatched, late, outside,
//                            the largest position (biased), 3 unused
//   [8, 8+npanes)            per pane of [base, base+npanes): the index of
//                            its first tuple that passed WHERE and the join,
//                            late or not (~0: none)
//   [8+npanes, ...)          per pane and group (pane-major) a row of
//                            row_words words: count, the aggregate words
//                            (add: two's complement; min, max: biased, see
//                            ysb.cu), and the index of the row's first
//                            counted tuple (~0: none)
// A matched tuple whose pane is outside [base, base+npanes) counts as
// outside and nowhere else: the host then runs the task on the CPU.
//
// A selection over one task: sel_count, sel_compact; the host zeroes the
// counters before. Output: the passing tuples (or their event time and
// projected columns) in input order, and counters[0] = how many.

#include "common.cuh"

enum { H_FILTERED = 0, H_UNMATCHED = 1, H_LATE = 2, H_OUTSIDE = 3, H_MAXPOS = 4, HDR_WORDS = 8 };
enum { OP_EQ = 1, OP_NE = 2, OP_LT = 3, OP_LE = 4, OP_GT = 5, OP_GE = 6 };
enum { AGG_ADD = 1, AGG_MIN = 2, AGG_MAX = 3 };
enum { T_INT32 = 1, T_INT64 = 2, T_FLOAT32 = 3, T_FLOAT64 = 4 };
#define NO_INDEX 0xffffffffffffffffULL

// Wrapping int64 arithmetic.
__device__ __forceinline__ i64 wadd(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
__device__ __forceinline__ i64 wsub(i64 a, i64 b) { return (i64)((u64)a - (u64)b); }
__device__ __forceinline__ i64 wmul(i64 a, i64 b) { return (i64)((u64)a * (u64)b); }

// mix is the murmur3 64-bit finaliser, as kernels/join.go.
__device__ __forceinline__ u64 mix(u64 k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	return k ^ (k >> 33);
}

// floor_div is window.FloorDiv (b > 0).
__device__ __forceinline__ i64 floor_div(i64 a, i64 b)
{
	i64 q = a / b;
	if ((a % b != 0) && (a < 0))
		q--;
	return q;
}

// seal_of is window.Spec.Seal: the end of the first window containing pane p.
__device__ __forceinline__ i64 seal_of(i64 p, i64 pane, i64 size, i64 slide)
{
	i64 fw = wadd(floor_div(wsub(wmul(p, pane), size), slide), 1);
	return wadd(wmul(fw, slide), size);
}

// position is tuple i's window position: its event time (the int64 at
// offset 0), or its stream index first + i for a ROWS window.
__device__ __forceinline__ i64 position(const u8 *tuples, i64 i, i64 tuple_size, i64 rows, i64 first)
{
	if (rows)
		return wadd(first, i);
	return (i64)load_u64(tuples + i * tuple_size);
}

// col_value loads an int32 (sign-extended) or int64 column.
__device__ __forceinline__ i64 col_value(const u8 *t, u64 off, bool wide)
{
	if (wide)
		return (i64)load_u64(t + off);
	return (i64)(int)load_u32(t + off);
}

// passes reports whether every predicate holds for tuple t.
__device__ bool passes(const u8 *t, const u64 *preds, i64 npreds)
{
	for (i64 j = 0; j < npreds; j++) {
		u64 d = __ldg(&preds[2 * j]);
		i64 c = (i64)__ldg(&preds[2 * j + 1]);
		i64 v = col_value(t, d & 0xffffffffULL, (d >> 32) & 1);
		bool ok;
		switch ((d >> 40) & 0xff) {
		case OP_EQ: ok = v == c; break;
		case OP_NE: ok = v != c; break;
		case OP_LT: ok = v < c; break;
		case OP_LE: ok = v <= c; break;
		case OP_GT: ok = v > c; break;
		default: ok = v >= c; break;
		}
		if (!ok)
			return false;
	}
	return true;
}

// min_index lowers *p to i: a plain read first, since the word only ever
// decreases and most tuples come after the first (a stale read costs an
// atomic, never a wrong value).
__device__ __forceinline__ void min_index(u64 *p, u64 i)
{
	if (i < *(volatile u64 *)p)
		atomicMin(p, i);
}

// agg_init writes the initial value of every word of the output: counters
// 0 (the largest position: biased INT64_MIN, 0), first indexes ~0, row words
// init_row[word]. Any grid (grid-stride loop).
extern "C" __global__ void agg_init(u64 *out, i64 npanes, i64 groups, i64 row_words, const u64 *init_row)
{
	i64 total = HDR_WORDS + npanes * (1 + groups * row_words);
	for (i64 w = (i64)blockIdx.x * blockDim.x + threadIdx.x; w < total; w += (i64)gridDim.x * blockDim.x) {
		u64 v;
		if (w < HDR_WORDS)
			v = 0;
		else if (w < HDR_WORDS + npanes)
			v = NO_INDEX;
		else
			v = __ldg(&init_row[(w - HDR_WORDS - npanes) % row_words]);
		out[w] = v;
	}
}

// agg_block_max writes block b's largest position, biased, to block_max[b],
// and raises out[H_MAXPOS] to it.
extern "C" __global__ void agg_block_max(const u8 *tuples, i64 n, i64 tuple_size, i64 rows, i64 first,
					 u64 *block_max, u64 *out)
{
	i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	u64 v = i < n ? bias(position(tuples, i, tuple_size, rows, first)) : 0;
	v = block_reduce_max(v);
	if (threadIdx.x == 0) {
		block_max[blockIdx.x] = v;
		atomicMax(&out[H_MAXPOS], v);
	}
}

// agg_tuples classifies every tuple and folds the counted ones into their
// pane's group row. The watermark before tuple i is the largest position
// of the tuples before it: the max of the blocks before (block_max), then
// an exclusive scan within the block. The join table is kernels/join.go's
// (parallel arrays of join_mask+1 slots, ord -1 empty, linear probing from
// mix(lo ^ mix(hi))), keyed by the 16 bytes at join_off (< 0: no join);
// the group is the key's ordinal where dense_join, else 0.
extern "C" __global__ void agg_tuples(const u8 *tuples, i64 n, i64 tuple_size, i64 rows, i64 first,
				      const u64 *preds, i64 npreds, const u64 *join_hi, const u64 *join_lo,
				      const int *join_ord, u64 join_mask, i64 join_off, i64 dense_join, const u64 *aggs,
				      i64 naggs, i64 groups, i64 row_words, i64 pane, i64 size, i64 slide, i64 base,
				      i64 npanes, const u64 *block_max, u64 *out)
{
	i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	bool valid = i < n;
	i64 pos = valid ? position(tuples, i, tuple_size, rows, first) : 0;

	u64 m = 0;
	for (u64 j = threadIdx.x; j < blockIdx.x; j += blockDim.x)
		m = umax(m, block_max[j]);
	u64 prefix = block_reduce_max(m);
	u64 in_block = block_exclusive_max_scan(valid ? bias(pos) : 0);
	i64 prev = unbias(umax(prefix, in_block));

	bool filtered = false, unmatched = false, late = false, outside = false;
	if (valid) {
		const u8 *t = tuples + i * tuple_size;
		if (!passes(t, preds, npreds)) {
			filtered = true;
		} else {
			i64 g = 0;
			if (join_off >= 0) {
				u64 khi = load_u64(t + join_off), klo = load_u64(t + join_off + 8);
				u64 s = mix(klo ^ mix(khi)) & join_mask;
				int o;
				for (;;) {
					o = __ldg(&join_ord[s]);
					if (o < 0 || (__ldg(&join_hi[s]) == khi && __ldg(&join_lo[s]) == klo))
						break;
					s = (s + 1) & join_mask;
				}
				if (o < 0)
					unmatched = true;
				else if (dense_join)
					g = o;
			}
			if (!unmatched) {
				i64 p = floor_div(pos, pane);
				u64 off = (u64)p - (u64)base;
				if (off >= (u64)npanes) {
					outside = true;
				} else {
					min_index(&out[HDR_WORDS + off], (u64)i);
					if (prev >= seal_of(p, pane, size, slide)) {
						late = true;
					} else {
						u64 *row = out + HDR_WORDS + npanes + ((i64)off * groups + g) * row_words;
						atomicAdd(&row[0], 1ULL);
						for (i64 w = 0; w < naggs; w++) {
							u64 d = __ldg(&aggs[w]);
							i64 v = col_value(t, d & 0xffffffffULL, (d >> 32) & 1);
							switch ((d >> 40) & 0xff) {
							case AGG_ADD: atomicAdd(&row[1 + w], (u64)v); break;
							case AGG_MIN: atomicMin(&row[1 + w], bias(v)); break;
							default: atomicMax(&row[1 + w], bias(v)); break;
							}
						}
						min_index(&row[row_words - 1], (u64)i);
					}
				}
			}
		}
	}
	warp_count(&out[H_FILTERED], filtered);
	warp_count(&out[H_UNMATCHED], unmatched);
	warp_count(&out[H_LATE], late);
	warp_count(&out[H_OUTSIDE], outside);
}

// sel_count writes the number of block b's tuples that pass to
// block_count[b].
extern "C" __global__ void sel_count(const u8 *tuples, i64 n, i64 tuple_size, const u64 *preds, i64 npreds,
				     u64 *block_count)
{
	i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	bool pass = i < n && passes(tuples + i * tuple_size, preds, npreds);
	u64 c = block_reduce_sum(pass ? 1 : 0);
	if (threadIdx.x == 0)
		block_count[blockIdx.x] = c;
}

// proj_value is a projected column as a 64-bit word: int32 sign-extended,
// float32 widened to float64 exactly (a NaN quieted with its payload, as
// x86's cvtss2sd and Go do), int64 and float64 as they are.
__device__ __forceinline__ u64 proj_value(const u8 *t, u64 d)
{
	u64 off = d & 0xffffffffULL;
	switch ((d >> 32) & 0xff) {
	case T_INT32:
		return (u64)(i64)(int)load_u32(t + off);
	case T_FLOAT32: {
		unsigned b = load_u32(t + off);
		if ((b & 0x7fffffffu) > 0x7f800000u)
			return ((u64)(b >> 31) << 63) | 0x7ff8000000000000ULL | ((u64)(b & 0x007fffffu) << 29);
		return (u64)__double_as_longlong((double)__int_as_float((int)b));
	}
	default:
		return load_u64(t + off);
	}
}

// sel_compact copies block b's passing tuples (or, with nproj > 0, the
// event time and the projected columns of each: 8 + 8 * nproj bytes) to
// their place in out: after the blocks before (the sum of their
// block_count), in input order within the block (an exclusive scan of the
// flags). The last block writes the total to counters[0].
extern "C" __global__ void sel_compact(const u8 *tuples, i64 n, i64 tuple_size, const u64 *preds, i64 npreds,
				       const u64 *proj, i64 nproj, const u64 *block_count, u8 *out, u64 *counters)
{
	__shared__ unsigned src[1024]; // block-local index of the k-th passing tuple
	i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	bool pass = i < n && passes(tuples + i * tuple_size, preds, npreds);

	u64 c = 0;
	for (u64 j = threadIdx.x; j < blockIdx.x; j += blockDim.x)
		c += block_count[j];
	u64 base = block_reduce_sum(c);
	unsigned total;
	unsigned k = block_exclusive_count_scan(pass, &total);
	if (pass)
		src[k] = threadIdx.x;
	__syncthreads();

	const u8 *in = tuples + (i64)blockIdx.x * blockDim.x * tuple_size;
	if (nproj > 0) {
		// One thread per output word; outputs are 8-byte aligned.
		i64 wpt = 1 + nproj, words = (i64)total * wpt;
		u64 *dst = (u64 *)(out + base * wpt * 8);
		for (i64 w = threadIdx.x; w < words; w += blockDim.x) {
			i64 tt = w / wpt, x = w % wpt;
			const u8 *t = in + (i64)src[tt] * tuple_size;
			dst[w] = x == 0 ? load_u64(t) : proj_value(t, __ldg(&proj[x - 1]));
		}
	} else {
		// Whole tuples, consecutive threads on consecutive words: 8-byte
		// words where sizes and addresses allow, else bytes.
		u8 *dst = out + base * tuple_size;
		if (tuple_size % 8 == 0 && ((u64)in & 7) == 0 && ((u64)dst & 7) == 0) {
			i64 wpt = tuple_size / 8, words = (i64)total * wpt;
			for (i64 w = threadIdx.x; w < words; w += blockDim.x) {
				i64 tt = w / wpt, x = w % wpt;
				((u64 *)dst)[w] = ((const u64 *)(in + (i64)src[tt] * tuple_size))[x];
			}
		} else {
			i64 bytes = (i64)total * tuple_size;
			for (i64 b = threadIdx.x; b < bytes; b += blockDim.x) {
				i64 tt = b / tuple_size, x = b % tuple_size;
				dst[b] = in[(i64)src[tt] * tuple_size + x];
			}
		}
	}
	if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0)
		counters[0] = base + total;
}
