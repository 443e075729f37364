// kernels.cu: the kernels of saber-hx's GPU processor (package gpu): an
// aggregation (WHERE, a static join, dense or hashed groups, COUNT, SUM,
// AVG, MIN, MAX of integer expressions, per pane) and a selection with
// compaction (WHERE, SELECT * or a projection of expressions), driven by
// descriptor arrays and expression programs in device memory, so that one
// module serves every query of those shapes. Compiled to kernels.ptx by
// build/ptx.sh. package gpu's emulator (gpu/emukernels.go) is the
// same algorithm in Go, kernel by kernel: keep the two in step.
//
// Conventions: every parameter is 64 bits wide (gorgonia.org/cu's
// Function.Launch copies 8 bytes per parameter); one thread per tuple,
// blockDim.x a multiple of 32 and at most 1024 (the host launches 256), a
// 1-D grid of ceil(n / blockDim.x) blocks for the per-tuple kernels, every
// thread, also those past n, reaching every __syncthreads (nobody returns
// early); kernels that pass per-block partials through global memory run on
// one stream with the same grid. Tuples are little-endian, packed; loads of
// misaligned columns are assembled from bytes. Arithmetic on
// positions and panes wraps as Go's int64 does (done on unsigned values:
// signed overflow is undefined in C++).
//
// Descriptors (64-bit words, built by gpu/format.go):
//   predicate   two words: offset | wide<<32 | op<<40 (query.CmpOp), then
//               the int64 constant; `int32/int64 column op constant`, the
//               column sign-extended to int64; a task's predicates are a
//               conjunction, with WHERE's program (where >= 0) for its
//               other terms
//   aggregate   offset | wide<<32 | kind<<40 (window.AggKind: 1 add, 2 min,
//               3 max) | expr<<48: the int32/int64 column at offset, or
//               with expr the integer program starting at code[offset],
//               folded into row word 1+w
//   projection  the start in code of the projection's program, written as
//               an int64 or float64 word
//   key part    pos | width<<8 | bytes<<16 | offset<<32: bytes [pos,
//               pos+width) of the 16-byte group key are the bytes column at
//               offset, or the integer program at code[offset] encoded as
//               query.AppendIntKey does (big-endian, sign bit flipped, 4 or
//               8 bytes)
//
// Programs (gpu/expr.go): postfix code over a stack of 64-bit values,
// one word per instruction: the opcode (OP_*) in bits 0..7, OPF_K in bit 8
// (the right operand is the next word), a comparison's query.CmpOp in bits
// 16..23, a column's offset in bits 32..63; OP_CONST's value is the next
// word. The semantics are the CPU kernels' (kernels/vector.go): int64
// arithmetic wrapping, division truncating with x/0 = 0, float64 IEEE
// operations rounded to nearest one by one (never fused), conversions of
// integers to float64 rounded to nearest.
//
// An aggregation over one task: agg_init, agg_block_max, scan_blocks (max),
// agg_tuples (with hashed groups, the host zeroes the table before
// agg_tuples). Its output, one buffer of 64-bit words:
//   [0, 8)                   counters: filtered, unmatched, late, outside,
//                            the largest position (biased), overflow,
//                            entries, 1 unused
//   [8, 8+npanes)            per pane of [base, base+npanes): the index of
//                            its first tuple that passed WHERE and the join,
//                            late or not (~0: none)
//   [8+npanes, ...)          dense groups (nkeys 0): per pane and group
//                            (pane-major) a row of row_words words: count,
//                            the aggregate words (add: two's complement;
//                            min, max: biased, see common.cuh), and the index of
//                            the row's first counted tuple (~0: none);
//                            hashed groups: counters[entries] entries of
//                            3 + row_words words, in the order they were
//                            claimed: the pane's offset, the key's two
//                            big-endian words, then the row as above
// A matched tuple whose pane is outside [base, base+npanes) counts as
// outside and nowhere else: the host then runs the task on the CPU. So
// does a counted tuple whose group found no slot in a full table
// (overflow).
//
// The table of hashed groups: table_mask+1 words (a power of two), zeroed;
// a slot is 0 (empty), SLOT_BUSY (being claimed) or SLOT_ENTRY + the index
// of its entry. A tuple probes linearly from table_hash of its pane and
// key; an empty slot is claimed with atomicCAS(0 -> SLOT_BUSY), the
// claimant takes the next entry (atomicAdd on the entries counter), writes
// its pane, key and initial row, and publishes it (a fence, then
// atomicExch to SLOT_ENTRY + entry); a thread that finds a slot busy waits
// for it to be published (independent thread scheduling, sm_70 and later,
// lets the claimant finish), then compares keys. The host sizes the table
// and the entries so that a task's groups fit (at most one per counted
// tuple); a probe that has seen every slot counts as overflow.
//
// A selection over one task: sel_count, scan_blocks (sum), sel_compact or
// sel_compact_flags; the host zeroes the counters before. Output: the
// passing tuples (or their event time and projected columns) in input
// order, and counters[0] = how many.
//
// A window join's pairs (gpu/join.go): join_count, scan_blocks (sum),
// join_compact over one window's tuples, nl left ones (lsize bytes each)
// then nr right ones (rsize bytes) packed in one buffer; one thread per pair, pair i = left
// i / nr with right i % nr (left-major, right-minor: the CPU's nested
// loops), a 1-D grid of ceil(nl * nr / blockDim.x) blocks; the host zeroes
// the counters before. Output: the pairs that pass WHERE (the program at
// code + where over the join's output schema; where < 0: every pair), each
// the left tuple's bytes then the right tuple's, in pair order, and
// counters[0] = how many.

#include "common.cuh"

enum { H_FILTERED = 0, H_UNMATCHED = 1, H_LATE = 2, H_OUTSIDE = 3, H_MAXPOS = 4, H_OVERFLOW = 5, H_ENTRIES = 6, HDR_WORDS = 8 };
enum { CMP_EQ = 1, CMP_NE = 2, CMP_LT = 3, CMP_LE = 4, CMP_GT = 5, CMP_GE = 6 };
enum { AGG_ADD = 1, AGG_MIN = 2, AGG_MAX = 3 };
enum {
	OP_END = 0,
	OP_LD_I32 = 1,
	OP_LD_I64 = 2,
	OP_LD_F32 = 3,
	OP_LD_F64 = 4,
	OP_CONST = 5,
	OP_I2F = 6,
	OP_IADD = 7,
	OP_ISUB = 8,
	OP_IMUL = 9,
	OP_IDIV = 10,
	OP_FADD = 11,
	OP_FSUB = 12,
	OP_FMUL = 13,
	OP_FDIV = 14,
	OP_ICMP = 15,
	OP_FCMP = 16,
	OP_AND = 17,
	OP_OR = 18,
	OP_REQUIRE = 19
};
enum { OPF_K = 0x100, MAX_STACK = 16 };
enum { SLOT_BUSY = 1, SLOT_ENTRY = 2 };
#define NO_INDEX 0xffffffffffffffffULL

// Wrapping int64 arithmetic.
__device__ __forceinline__ i64 wadd(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
__device__ __forceinline__ i64 wsub(i64 a, i64 b) { return (i64)((u64)a - (u64)b); }
__device__ __forceinline__ i64 wmul(i64 a, i64 b) { return (i64)((u64)a * (u64)b); }

// mix is the murmur3 64-bit finaliser, as gpu/shape.go's.
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

// f32_to_f64 widens float32 bits to float64 bits exactly, a NaN quieted
// with its payload kept (as x86's cvtss2sd and Go do).
__device__ __forceinline__ u64 f32_to_f64(unsigned b)
{
	if ((b & 0x7fffffffu) > 0x7f800000u)
		return ((u64)(b >> 31) << 63) | 0x7ff8000000000000ULL | ((u64)(b & 0x007fffffu) << 29);
	return (u64)__double_as_longlong((double)__int_as_float((int)b));
}

__device__ __forceinline__ double as_f64(u64 u) { return __longlong_as_double((i64)u); }
__device__ __forceinline__ u64 f64_bits(double d) { return (u64)__double_as_longlong(d); }

// idiv is Go's int64 division with x/0 = 0 (the CPU kernels' arith):
// truncating, and INT64_MIN / -1 = INT64_MIN (undefined in C, so negated).
__device__ __forceinline__ i64 idiv(i64 a, i64 b)
{
	if (b == 0)
		return 0;
	if (b == -1)
		return (i64)(0ULL - (u64)a);
	return a / b;
}

template <typename T> __device__ __forceinline__ bool cmp(unsigned op, T a, T b)
{
	switch (op) {
	case CMP_EQ: return a == b;
	case CMP_NE: return a != b;
	case CMP_LT: return a < b;
	case CMP_LE: return a <= b;
	case CMP_GT: return a > b;
	default: return a >= b;
	}
}

// OneTuple and PairTuple are where eval_in loads a column at offset off:
// from one tuple, or from a window join's pair (the join's output schema:
// the left tuple's columns below lsize, the right tuple's above).
struct OneTuple {
	const u8 *t;
	__device__ __forceinline__ const u8 *at(u64 off) const { return t + off; }
};

struct PairTuple {
	const u8 *l, *r;
	u64 lsize;
	__device__ __forceinline__ const u8 *at(u64 off) const { return off < lsize ? l + off : r + (off - lsize); }
};

// eval_in runs the program at code over the tuple (or pair) t and returns
// its value (an int64, a float64's bits, or a boolean 0/1).
template <typename T> __device__ __forceinline__ u64 eval_in(const u64 *code, T t)
{
	u64 st[MAX_STACK];
	int sp = 0;
	for (;;) {
		u64 ins = __ldg(code++);
		unsigned op = (unsigned)ins & 0xff;
		switch (op) {
		case OP_END: return st[sp - 1];
		case OP_LD_I32: st[sp++] = (u64)(i64)(int)load_u32(t.at(ins >> 32)); continue;
		case OP_LD_I64:
		case OP_LD_F64: st[sp++] = load_u64(t.at(ins >> 32)); continue;
		case OP_LD_F32: st[sp++] = f32_to_f64(load_u32(t.at(ins >> 32))); continue;
		case OP_CONST: st[sp++] = __ldg(code++); continue;
		case OP_I2F: st[sp - 1] = f64_bits(__ll2double_rn((i64)st[sp - 1])); continue;
		case OP_REQUIRE:
			if (st[--sp] == 0)
				return 0;
			continue;
		}
		u64 b = (ins & OPF_K) ? __ldg(code++) : st[--sp];
		u64 a = st[sp - 1], r;
		unsigned c = (unsigned)(ins >> 16) & 0xff;
		switch (op) {
		case OP_IADD: r = a + b; break;
		case OP_ISUB: r = a - b; break;
		case OP_IMUL: r = a * b; break;
		case OP_IDIV: r = (u64)idiv((i64)a, (i64)b); break;
		case OP_FADD: r = f64_bits(__dadd_rn(as_f64(a), as_f64(b))); break;
		case OP_FSUB: r = f64_bits(__dsub_rn(as_f64(a), as_f64(b))); break;
		case OP_FMUL: r = f64_bits(__dmul_rn(as_f64(a), as_f64(b))); break;
		case OP_FDIV: r = f64_bits(__ddiv_rn(as_f64(a), as_f64(b))); break;
		case OP_ICMP: r = cmp(c, (i64)a, (i64)b); break;
		case OP_FCMP: r = cmp(c, as_f64(a), as_f64(b)); break;
		case OP_AND: r = a != 0 && b != 0; break;
		default: r = a != 0 || b != 0; break; // OP_OR
		}
		st[sp - 1] = r;
	}
}

// eval runs the program at code over tuple t. Not inlined: one copy of the
// interpreter serves WHERE, the projections, the aggregates and the keys.
__device__ __noinline__ u64 eval(const u64 *code, const u8 *t) { return eval_in(code, OneTuple{t}); }

// eval_pair runs the program at code over the pair of left tuple l (lsize
// bytes) and right tuple r.
__device__ __noinline__ u64 eval_pair(const u64 *code, const u8 *l, const u8 *r, u64 lsize)
{
	return eval_in(code, PairTuple{l, r, lsize});
}

// passes reports whether every column-versus-constant predicate holds for
// tuple t, and WHERE's program (where >= 0) too.
__device__ bool passes(const u8 *t, const u64 *preds, i64 npreds, const u64 *code, i64 where)
{
	for (i64 j = 0; j < npreds; j++) {
		u64 d = __ldg(&preds[2 * j]);
		i64 c = (i64)__ldg(&preds[2 * j + 1]);
		i64 v = col_value(t, d & 0xffffffffULL, (d >> 32) & 1);
		if (!cmp((unsigned)(d >> 40) & 0xff, v, c))
			return false;
	}
	return where < 0 || eval(code + where, t) != 0;
}

// key_of builds tuple t's 16-byte group key as two big-endian words, as
// kernels' aggregateKernel.key does.
__device__ void key_of(const u8 *t, const u64 *code, const u64 *keys, i64 nkeys, u64 *k0, u64 *k1)
{
	u64 w[2] = {0, 0};
	for (i64 j = 0; j < nkeys; j++) {
		u64 d = __ldg(&keys[j]);
		unsigned pos = (unsigned)d & 0xff, width = (unsigned)(d >> 8) & 0xff;
		u64 off = d >> 32;
		u64 v = 0;
		bool bytes = (d >> 16) & 1;
		if (!bytes) {
			v = eval(code + off, t);
			v = width == 4 ? (u64)((unsigned)v ^ 0x80000000u) : v ^ SIGN_BIT;
		}
		for (unsigned b = 0; b < width; b++) {
			u64 byte = bytes ? t[off + b] : (v >> (8 * (width - 1 - b))) & 0xff;
			unsigned at = pos + b;
			w[at >> 3] |= byte << (8 * (7 - (at & 7)));
		}
	}
	*k0 = w[0];
	*k1 = w[1];
}

// table_hash is gpu/format.go's tableHash.
__device__ __forceinline__ u64 table_hash(u64 off, u64 k0, u64 k1)
{
	return mix(k1 ^ mix(k0 ^ (off * 0x9e3779b97f4a7c15ULL)));
}

__device__ __forceinline__ u64 load_acquire(const u64 *p)
{
	u64 v;
	asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}

// find_entry returns the row (after pane and key) of the entry of group
// (off, k0, k1) in the task's table, claiming a slot and an entry for a
// new group, or NULL when every slot holds another group. See the table's
// description above.
__device__ u64 *find_entry(u64 *table, u64 mask, u64 *out, u64 *entries, i64 row_words, const u64 *init_row, u64 off,
			   u64 k0, u64 k1)
{
	i64 ew = 3 + row_words;
	u64 s = table_hash(off, k0, k1) & mask;
	for (u64 probes = 0; probes <= mask; probes++, s = (s + 1) & mask) {
		u64 tag = load_acquire(&table[s]);
		if (tag == 0) {
			tag = atomicCAS(&table[s], 0ULL, (u64)SLOT_BUSY);
			if (tag == 0) {
				u64 e = atomicAdd(&out[H_ENTRIES], 1ULL);
				u64 *en = entries + e * ew;
				en[0] = off;
				en[1] = k0;
				en[2] = k1;
				for (i64 w = 0; w < row_words; w++)
					en[3 + w] = __ldg(&init_row[w]);
				__threadfence();
				atomicExch(&table[s], SLOT_ENTRY + e);
				return en + 3;
			}
		}
		while (tag == SLOT_BUSY)
			tag = load_acquire(&table[s]);
		volatile const u64 *en = entries + (tag - SLOT_ENTRY) * ew;
		if (en[0] == off && en[1] == k0 && en[2] == k1)
			return (u64 *)(entries + (tag - SLOT_ENTRY) * ew + 3);
	}
	return 0;
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

// scan_blocks replaces v[0, n) (the per-block partials of a kernel before)
// by its exclusive scan: v[b] becomes the sum (op 0) or the max (op 1) of
// the words before it, 0 for the first, so that block b of the kernel
// after reads its prefix in one word. One block (grid 1): thread t scans
// the run [t * per, (t + 1) * per) of per = ceil(n / blockDim.x) words
// sequentially, around one block-wide scan of the runs' totals.
extern "C" __global__ void scan_blocks(u64 *v, i64 n, i64 op)
{
	i64 per = (n + blockDim.x - 1) / blockDim.x;
	i64 lo = min(n, (i64)threadIdx.x * per), hi = min(n, lo + per);
	u64 run = 0;
	for (i64 j = lo; j < hi; j++)
		run = combine(op, run, v[j]);
	u64 acc = block_exclusive_scan(run, op);
	for (i64 j = lo; j < hi; j++) {
		u64 x = v[j];
		v[j] = acc;
		acc = combine(op, acc, x);
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

// The block's cache of dense rows (agg_tuples): up to CACHE_SLOTS rows of
// row_words words in CACHE_WORDS words of shared memory.
enum { CACHE_SLOTS = 256, CACHE_WORDS = 2048 };

// cache_slots is how many rows the block's cache holds: the largest power
// of two s <= CACHE_SLOTS with s * row_words <= CACHE_WORDS; 0 with hashed
// groups (nkeys > 0) or rows too wide.
__device__ __forceinline__ i64 cache_slots(i64 nkeys, i64 row_words)
{
	if (nkeys > 0)
		return 0;
	i64 s = CACHE_SLOTS;
	while (s > 0 && s * row_words > CACHE_WORDS)
		s >>= 1;
	return s;
}

// agg_value is aggregate descriptor d's value for tuple t.
__device__ __forceinline__ i64 agg_value(u64 d, const u8 *t, const u64 *code)
{
	return (d >> 48) & 1 ? (i64)eval(code + (d & 0xffffffffULL), t) : col_value(t, d & 0xffffffffULL, (d >> 32) & 1);
}

// fold_word folds u (an add's two's complement, a min's or max's biased
// value) into the row word at p, in global or shared memory.
__device__ __forceinline__ void fold_word(u64 *p, unsigned kind, u64 u)
{
	switch (kind) {
	case AGG_ADD: atomicAdd(p, u); break;
	case AGG_MIN: atomicMin(p, u); break;
	default: atomicMax(p, u); break;
	}
}

// fold folds each counted tuple i of the warp (row != 0: the row it goes
// to, in the block's cache or in global memory) into its row: count 1,
// every aggregate word, the first index. Where every counted tuple of the
// warp goes to the same row, the warp reduces the words with shuffles and
// its first counted lane folds them with one atomic per word; else each
// counted tuple folds its own. All 32 lanes must call it.
__device__ void fold(u64 *row, i64 i, const u8 *t, const u64 *code, const u64 *aggs, i64 naggs, i64 row_words)
{
	bool counted = row != 0;
	unsigned act = __ballot_sync(FULL_MASK, counted);
	if (act == 0)
		return;
	unsigned lane = threadIdx.x & 31, lead = __ffs(act) - 1;
	u64 *r0 = (u64 *)__shfl_sync(FULL_MASK, (u64)row, lead);
	if (__all_sync(FULL_MASK, !counted || row == r0)) {
		for (i64 w = 0; w < naggs; w++) {
			u64 d = __ldg(&aggs[w]);
			unsigned kind = (unsigned)(d >> 40) & 0xff;
			u64 u = kind == AGG_MIN ? ~0ULL : 0; // the identity of add, min (biased), max (biased)
			if (counted) {
				i64 v = agg_value(d, t, code);
				u = kind == AGG_ADD ? (u64)v : bias(v);
			}
			for (int s = 16; s > 0; s >>= 1) {
				u64 o = __shfl_xor_sync(FULL_MASK, u, s);
				u = kind == AGG_ADD ? u + o : kind == AGG_MIN ? (o < u ? o : u) : umax(u, o);
			}
			if (lane == lead)
				fold_word(&r0[1 + w], kind, u);
		}
		if (lane == lead) {
			atomicAdd(&r0[0], (u64)__popc(act));
			min_index(&r0[row_words - 1], (u64)i); // the warp's first counted tuple
		}
		return;
	}
	if (counted) {
		atomicAdd(&row[0], 1ULL);
		for (i64 w = 0; w < naggs; w++) {
			u64 d = __ldg(&aggs[w]);
			unsigned kind = (unsigned)(d >> 40) & 0xff;
			i64 v = agg_value(d, t, code);
			fold_word(&row[1 + w], kind, kind == AGG_ADD ? (u64)v : bias(v));
		}
		min_index(&row[row_words - 1], (u64)i);
	}
}

// agg_tuples classifies every tuple and folds the counted ones into their
// pane's group row. The watermark before tuple i is the largest position
// of the tuples before it: the max of the blocks before (block_max[b],
// scan_blocks's exclusive max scan of agg_block_max's), then
// an exclusive scan within the block. The join table is gpu/shape.go's
// joinTable (parallel arrays of join_mask+1 slots, ord -1 empty, linear probing from
// mix(lo ^ mix(hi))), keyed by the 16 bytes at join_off (< 0: no join);
// the dense group is the key's ordinal where dense_join, else 0. With
// nkeys > 0 the groups are hashed: the row is the entry of the tuple's
// pane and key (key_of) in the table.
//
// Dense rows go through the block's cache (cache_slots): row r (pane
// offset * groups + group) has slot r mod slots, claimed in shared memory
// by the first tuple of the block that needs it (atomicCAS of r + 1 on
// the slot's key, 0: free); a tuple whose slot holds another row folds
// into its global row directly. A warp whose counted tuples share one row
// reduces them first (fold). At the end of the block, each claimed slot
// is folded into its global row with one atomic per word (count, words,
// first index). Integer addition, min and max being associative and
// commutative, the words are those of one atomic per tuple.
extern "C" __global__ void agg_tuples(const u8 *tuples, i64 n, i64 tuple_size, i64 rows, i64 first,
				      const u64 *preds, i64 npreds, const u64 *code, i64 where, const u64 *join_hi,
				      const u64 *join_lo, const int *join_ord, u64 join_mask, i64 join_off, i64 dense_join,
				      const u64 *aggs, i64 naggs, const u64 *keys, i64 nkeys, u64 *table, u64 table_mask,
				      const u64 *init_row, i64 groups, i64 row_words, i64 pane, i64 size, i64 slide,
				      i64 base, i64 npanes, const u64 *block_max, u64 *out)
{
	__shared__ u64 cache_key[CACHE_SLOTS]; // 0: free, else the row's index + 1
	__shared__ u64 cache_row[CACHE_WORDS];
	i64 nslots = cache_slots(nkeys, row_words);
	u64 *dense = out + HDR_WORDS + npanes;
	for (i64 s = threadIdx.x; s < nslots; s += blockDim.x)
		cache_key[s] = 0;
	for (i64 w = threadIdx.x; w < nslots * row_words; w += blockDim.x)
		cache_row[w] = __ldg(&init_row[w % row_words]);

	i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	bool valid = i < n;
	i64 pos = valid ? position(tuples, i, tuple_size, rows, first) : 0;

	u64 prefix = block_max[blockIdx.x]; // the blocks before (scan_blocks)
	u64 in_block = block_exclusive_max_scan(valid ? bias(pos) : 0);
	i64 prev = unbias(umax(prefix, in_block));
	__syncthreads(); // the cache's initial words

	bool filtered = false, unmatched = false, late = false, outside = false, overflow = false;
	const u8 *t = tuples + i * tuple_size;
	u64 *row = 0; // the counted tuple's row
	if (valid) {
		if (!passes(t, preds, npreds, code, where)) {
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
					} else if (nkeys > 0) {
						u64 k0, k1;
						key_of(t, code, keys, nkeys, &k0, &k1);
						row = find_entry(table, table_mask, out, out + HDR_WORDS + npanes, row_words, init_row,
								 off, k0, k1);
						overflow = row == 0;
					} else {
						u64 r = off * (u64)groups + (u64)g;
						row = dense + r * row_words;
						if (nslots > 0) {
							u64 s = r & (u64)(nslots - 1);
							u64 k = atomicCAS(&cache_key[s], 0ULL, r + 1);
							if (k == 0 || k == r + 1)
								row = cache_row + s * row_words;
						}
					}
				}
			}
		}
	}
	fold(row, i, t, code, aggs, naggs, row_words);
	warp_count(&out[H_FILTERED], filtered);
	warp_count(&out[H_UNMATCHED], unmatched);
	warp_count(&out[H_LATE], late);
	warp_count(&out[H_OUTSIDE], outside);
	warp_count(&out[H_OVERFLOW], overflow);

	// The cache's rows into their global rows.
	__syncthreads();
	for (i64 s = threadIdx.x; s < nslots; s += blockDim.x) {
		u64 k = cache_key[s];
		if (k == 0)
			continue;
		const u64 *src = cache_row + s * row_words;
		u64 *dst = dense + (k - 1) * row_words;
		atomicAdd(&dst[0], src[0]);
		for (i64 w = 0; w < naggs; w++)
			fold_word(&dst[1 + w], (unsigned)(__ldg(&aggs[w]) >> 40) & 0xff, src[1 + w]);
		min_index(&dst[row_words - 1], src[row_words - 1]);
	}
}

// sel_count writes the number of block b's tuples that pass to
// block_count[b], and for every warp with a tuple (i / 32 for its first
// tuple i) the ballot of its tuples that pass to flags[i / 32] (bit l:
// tuple i + l), so that sel_compact_flags need not evaluate WHERE again.
extern "C" __global__ void sel_count(const u8 *tuples, i64 n, i64 tuple_size, const u64 *preds, i64 npreds,
				     const u64 *code, i64 where, u64 *block_count, unsigned *flags)
{
	i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	bool pass = i < n && passes(tuples + i * tuple_size, preds, npreds, code, where);
	unsigned ballot = __ballot_sync(0xffffffffu, pass);
	if ((threadIdx.x & 31) == 0 && i < n)
		flags[i >> 5] = ballot;
	u64 c = block_reduce_sum(pass ? 1 : 0);
	if (threadIdx.x == 0)
		block_count[blockIdx.x] = c;
}

// compact is the body of sel_compact and sel_compact_flags, for a block
// whose thread knows whether its tuple passes.
__device__ __forceinline__ void compact(bool pass, const u8 *tuples, i64 tuple_size, const u64 *code, const u64 *proj, i64 nproj,
			const u64 *block_count, u8 *out, u64 *counters)
{
	__shared__ unsigned src[1024]; // block-local index of the k-th passing tuple

	u64 base = block_count[blockIdx.x]; // the blocks before (scan_blocks)
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
			dst[w] = x == 0 ? load_u64(t) : eval(code + __ldg(&proj[x - 1]), t);
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

// sel_compact copies block b's passing tuples (or, with nproj > 0, the
// event time and the projections' values of each: 8 + 8 * nproj bytes) to
// their place in out: after the blocks before (block_count[b]: after
// scan_blocks, the sum of theirs), in input order within the block (an exclusive scan of the
// flags). The last block writes the total to counters[0].
extern "C" __global__ void sel_compact(const u8 *tuples, i64 n, i64 tuple_size, const u64 *preds, i64 npreds,
				       const u64 *code, i64 where, const u64 *proj, i64 nproj, const u64 *block_count,
				       u8 *out, u64 *counters)
{
	i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	bool pass = i < n && passes(tuples + i * tuple_size, preds, npreds, code, where);
	compact(pass, tuples, tuple_size, code, proj, nproj, block_count, out, counters);
}

// sel_compact_flags is sel_compact with WHERE's outcome read from the
// flags sel_count wrote, not evaluated again: one evaluation per tuple.
extern "C" __global__ void sel_compact_flags(const u8 *tuples, i64 n, i64 tuple_size, const u64 *code,
					     const u64 *proj, i64 nproj, const unsigned *flags, const u64 *block_count,
					     u8 *out, u64 *counters)
{
	i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	bool pass = i < n && ((__ldg(&flags[i >> 5]) >> (i & 31)) & 1);
	compact(pass, tuples, tuple_size, code, proj, nproj, block_count, out, counters);
}

// pair_passes reports whether pair i of the window passes WHERE.
__device__ __forceinline__ bool pair_passes(i64 i, i64 n, const u8 *left, i64 nr, i64 lsize, const u8 *right,
					    i64 rsize, const u64 *code, i64 where)
{
	if (i >= n)
		return false;
	if (where < 0)
		return true;
	i64 li = i / nr, ri = i % nr;
	return eval_pair(code + where, left + li * lsize, right + ri * rsize, (u64)lsize) != 0;
}

// join_count writes the number of block b's pairs that pass to
// block_count[b]. tuples: nl left tuples, then nr right ones.
extern "C" __global__ void join_count(const u8 *tuples, i64 nl, i64 lsize, i64 nr, i64 rsize, const u64 *code,
				      i64 where, u64 *block_count)
{
	i64 n = nl * nr;
	i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	bool pass = pair_passes(i, n, tuples, nr, lsize, tuples + nl * lsize, rsize, code, where);
	u64 c = block_reduce_sum(pass ? 1 : 0);
	if (threadIdx.x == 0)
		block_count[blockIdx.x] = c;
}

// join_compact copies block b's passing pairs to their place in out: after
// the blocks before (block_count[b]: after scan_blocks, the sum of
// theirs), in pair order within
// the block (an exclusive scan of the flags). The last block writes the
// total to counters[0].
extern "C" __global__ void join_compact(const u8 *tuples, i64 nl, i64 lsize, i64 nr, i64 rsize, const u64 *code,
					i64 where, const u64 *block_count, u8 *out, u64 *counters)
{
	__shared__ unsigned src[1024]; // block-local index of the k-th passing pair
	i64 n = nl * nr;
	const u8 *left = tuples, *right = tuples + nl * lsize;
	i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	bool pass = pair_passes(i, n, left, nr, lsize, right, rsize, code, where);

	u64 base = block_count[blockIdx.x]; // the blocks before (scan_blocks)
	unsigned total;
	unsigned k = block_exclusive_count_scan(pass, &total);
	if (pass)
		src[k] = threadIdx.x;
	__syncthreads();

	// Consecutive threads on consecutive words of the output: 8-byte
	// words where sizes and addresses allow, else bytes.
	i64 first = (i64)blockIdx.x * blockDim.x, size = lsize + rsize;
	u8 *dst = out + base * size;
	if (lsize % 8 == 0 && rsize % 8 == 0 && ((u64)tuples & 7) == 0 && ((u64)dst & 7) == 0) {
		i64 lw = lsize / 8, wpp = size / 8, words = (i64)total * wpp;
		for (i64 w = threadIdx.x; w < words; w += blockDim.x) {
			i64 p = first + src[w / wpp], x = w % wpp;
			const u64 *from = x < lw ? (const u64 *)(left + (p / nr) * lsize) + x
						 : (const u64 *)(right + (p % nr) * rsize) + (x - lw);
			((u64 *)dst)[w] = *from;
		}
	} else {
		i64 bytes = (i64)total * size;
		for (i64 b = threadIdx.x; b < bytes; b += blockDim.x) {
			i64 p = first + src[b / size], x = b % size;
			dst[b] = x < lsize ? left[(p / nr) * lsize + x] : right[(p % nr) * rsize + (x - lsize)];
		}
	}
	if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0)
		counters[0] = base + total;
}
