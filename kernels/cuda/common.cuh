// common.cuh: block-wide helpers of saber-hx's kernels (kernels.cu
// includes it; not compiled on its own).
//
// The block helpers assume kernels.cu's conventions: blockDim.x a multiple
// of 32 and at most 1024, and every thread of the block calling them.
//
// The signed max trick: CUDA's 64-bit atomicMax works on unsigned long long
// (a signed overload exists only on newer toolkits and we want one form).
// Flipping the sign bit, u = (unsigned)x ^ 0x8000000000000000, maps int64
// onto uint64 preserving order (INT64_MIN -> 0, -1 -> 0x7fff.., 0 -> 0x8000..,
// INT64_MAX -> 0xffff..), so atomicMax (atomicMin) on the biased words is a
// signed max (min), and a zeroed word is the biased INT64_MIN: the identity
// of max. bias and unbias convert.
#pragma once

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned char u8;

#define SIGN_BIT 0x8000000000000000ULL
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ u64 bias(i64 x) { return (u64)x ^ SIGN_BIT; }
__device__ __forceinline__ i64 unbias(u64 u) { return (i64)(u ^ SIGN_BIT); }

// load_u64 / load_u32: little-endian loads at any alignment.
__device__ __forceinline__ u64 load_u64(const u8 *p)
{
	if (((u64)p & 7) == 0)
		return *(const u64 *)p;
	u64 v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

__device__ __forceinline__ unsigned load_u32(const u8 *p)
{
	if (((u64)p & 3) == 0)
		return *(const unsigned *)p;
	return (unsigned)p[0] | ((unsigned)p[1] << 8) | ((unsigned)p[2] << 16) | ((unsigned)p[3] << 24);
}

__device__ __forceinline__ u64 umax(u64 a, u64 b) { return a > b ? a : b; }

// block_reduce_max returns the max of v over the block, to every thread.
__device__ u64 block_reduce_max(u64 v)
{
	__shared__ u64 warp_max[32];
	unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	for (int d = 16; d > 0; d >>= 1)
		v = umax(v, __shfl_xor_sync(FULL_MASK, v, d));
	__syncthreads(); // warp_max may still be read by a previous call
	if (lane == 0)
		warp_max[warp] = v;
	__syncthreads();
	unsigned nwarps = blockDim.x >> 5;
	v = lane < nwarps ? warp_max[lane] : 0;
	for (int d = 16; d > 0; d >>= 1)
		v = umax(v, __shfl_xor_sync(FULL_MASK, v, d));
	return v;
}

// block_reduce_sum returns the sum of v over the block, to every thread.
__device__ u64 block_reduce_sum(u64 v)
{
	__shared__ u64 warp_sum[32];
	unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	for (int d = 16; d > 0; d >>= 1)
		v += __shfl_xor_sync(FULL_MASK, v, d);
	__syncthreads();
	if (lane == 0)
		warp_sum[warp] = v;
	__syncthreads();
	unsigned nwarps = blockDim.x >> 5;
	v = lane < nwarps ? warp_sum[lane] : 0;
	for (int d = 16; d > 0; d >>= 1)
		v += __shfl_xor_sync(FULL_MASK, v, d);
	return v;
}

// block_exclusive_max_scan returns, to thread t, the max of v over threads
// 0..t-1 of the block (0, the biased INT64_MIN, for thread 0).
__device__ u64 block_exclusive_max_scan(u64 v)
{
	__shared__ u64 warp_incl[32];
	unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	u64 incl = v;
	for (int d = 1; d < 32; d <<= 1) {
		u64 o = __shfl_up_sync(FULL_MASK, incl, d);
		if (lane >= (unsigned)d)
			incl = umax(incl, o);
	}
	__syncthreads();
	if (lane == 31)
		warp_incl[warp] = incl;
	__syncthreads();
	// The max over the warps before this one.
	u64 before = 0;
	for (unsigned w = 0; w < warp; w++)
		before = umax(before, warp_incl[w]);
	u64 excl = __shfl_up_sync(FULL_MASK, incl, 1);
	if (lane == 0)
		excl = 0;
	return umax(before, excl);
}

// combine is the scans' operation: the sum (op 0) or the max (op 1), each
// with identity 0.
__device__ __forceinline__ u64 combine(u64 op, u64 a, u64 b) { return op ? umax(a, b) : a + b; }

// block_exclusive_scan returns, to thread t, the combine (op) of v over
// threads 0..t-1 of the block (0 for thread 0).
__device__ u64 block_exclusive_scan(u64 v, u64 op)
{
	__shared__ u64 warp_total[32];
	unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	u64 incl = v;
	for (int d = 1; d < 32; d <<= 1) {
		u64 o = __shfl_up_sync(FULL_MASK, incl, d);
		if (lane >= (unsigned)d)
			incl = combine(op, incl, o);
	}
	__syncthreads(); // warp_total may still be read by a previous call
	if (lane == 31)
		warp_total[warp] = incl;
	__syncthreads();
	u64 before = 0;
	for (unsigned w = 0; w < warp; w++)
		before = combine(op, before, warp_total[w]);
	u64 excl = __shfl_up_sync(FULL_MASK, incl, 1);
	if (lane == 0)
		excl = 0;
	return combine(op, before, excl);
}

// block_exclusive_count_scan returns, to thread t, how many threads 0..t-1
// of the block have flag set, and the block's total in *total.
__device__ unsigned block_exclusive_count_scan(bool flag, unsigned *total)
{
	__shared__ unsigned warp_count[32];
	unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	unsigned ballot = __ballot_sync(FULL_MASK, flag);
	unsigned in_warp = __popc(ballot & ((1u << lane) - 1u));
	__syncthreads();
	if (lane == 0)
		warp_count[warp] = __popc(ballot);
	__syncthreads();
	unsigned before = 0, all = 0, nwarps = blockDim.x >> 5;
	for (unsigned w = 0; w < nwarps; w++) {
		if (w < warp)
			before += warp_count[w];
		all += warp_count[w];
	}
	*total = all;
	return before + in_warp;
}

// warp_count adds to *counter how many threads of the warp have flag set,
// with one atomic per warp. All 32 lanes must call it.
__device__ __forceinline__ void warp_count(u64 *counter, bool flag)
{
	unsigned b = __ballot_sync(FULL_MASK, flag);
	if ((threadIdx.x & 31) == 0 && b != 0)
		atomicAdd(counter, (u64)__popc(b));
}

