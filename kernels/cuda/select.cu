// select.cu: selection with compaction, the building block of the general
// (non-fused) operators on the GPU. Compiled to select.ptx by build/ptx.sh.
// Conventions as in ysb.cu: 64-bit parameters, one thread per tuple,
// blockDim.x a multiple of 32 and at most 1024, a 1-D grid of
// ceil(n / blockDim.x) blocks, both kernels with the same grid on one stream.

#include "common.cuh"

// Selection with compaction: the tuples whose int32 column at off equals
// value, copied to out in input order (stable), in two kernels:
//   1. select_eq_i32_count    block_count[b] = tuples of block b that pass
//   2. select_eq_i32_compact  each block sums block_count of the blocks
//                             before it, scans its flags and copies its
//                             passing tuples to their places; the last block
//                             writes the total to *out_count
// out must hold n tuples (the worst case).
extern "C" __global__ void select_eq_i32_count(const u8 *tuples, i64 n, i64 tuple_size, i64 off, i64 value,
					       u64 *block_count)
{
	i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	bool pass = i < n && (i64)(int)load_u32(tuples + i * tuple_size + off) == value;
	u64 c = block_reduce_sum(pass ? 1 : 0);
	if (threadIdx.x == 0)
		block_count[blockIdx.x] = c;
}

extern "C" __global__ void select_eq_i32_compact(const u8 *tuples, i64 n, i64 tuple_size, i64 off, i64 value,
						 const u64 *block_count, u8 *out, u64 *out_count)
{
	__shared__ unsigned src[1024]; // block-local index of the k-th passing tuple
	i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	bool pass = i < n && (i64)(int)load_u32(tuples + i * tuple_size + off) == value;

	u64 c = 0;
	for (u64 j = threadIdx.x; j < blockIdx.x; j += blockDim.x)
		c += block_count[j];
	u64 base = block_reduce_sum(c);
	unsigned total;
	unsigned k = block_exclusive_count_scan(pass, &total);
	if (pass)
		src[k] = threadIdx.x;
	__syncthreads();

	// Copy the block's passing tuples cooperatively, consecutive threads on
	// consecutive words: 8-byte words where sizes and addresses allow.
	const u8 *in = tuples + (i64)blockIdx.x * blockDim.x * tuple_size;
	u8 *dst = out + base * tuple_size;
	if (tuple_size % 8 == 0 && ((u64)in & 7) == 0 && ((u64)dst & 7) == 0) {
		i64 wpt = tuple_size / 8, words = (i64)total * wpt;
		for (i64 w = threadIdx.x; w < words; w += blockDim.x) {
			i64 t = w / wpt, x = w % wpt;
			((u64 *)dst)[w] = ((const u64 *)(in + (i64)src[t] * tuple_size))[x];
		}
	} else {
		i64 bytes = (i64)total * tuple_size;
		for (i64 b = threadIdx.x; b < bytes; b += blockDim.x) {
			i64 t = b / tuple_size, x = b % tuple_size;
			dst[b] = in[(i64)src[t] * tuple_size + x];
		}
	}
	if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0)
		*out_count = base + total;
}
