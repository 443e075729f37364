package gpu

import "fmt"

// The emulator's join program: join_count and join_compact (kernels.cu) in
// Go, over "device memory" poisoned before every window.

// jparams are the join kernels' parameters.
type jparams struct {
	tuples               []byte // nl left tuples, then nr right ones
	nl, nr, lsize, rsize int64
	code                 []uint64
	where                int64
	pair                 []byte // scratch: the pair the predicate reads
}

// passes is kernels.cu's pair_passes: whether pair i (left i / nr, right
// i % nr) satisfies WHERE. eval_pair reads a column below lsize from the
// left tuple, the others from the right one: the emulator evaluates over
// the pair's bytes put together, which reads the same.
func (k *jparams) passes(i int64) bool {
	if k.where < 0 {
		return true
	}
	li, ri := i/k.nr, i%k.nr
	copy(k.pair, k.tuples[li*k.lsize:(li+1)*k.lsize])
	ro := k.nl*k.lsize + ri*k.rsize
	copy(k.pair[k.lsize:], k.tuples[ro:ro+k.rsize])
	return evalCode(k.code[k.where:], k.pair) != 0
}

// emuJoinCount is join_count: blockCount[b] = the pairs of block b that
// pass.
func emuJoinCount(k *jparams, blockCount []uint64) {
	n := k.nl * k.nr
	for b := int64(0); b < gridOf(n); b++ {
		var c uint64
		for th := int64(0); th < blockDim; th++ {
			if i := b*blockDim + th; i < n && k.passes(i) {
				c++
			}
		}
		blockCount[b] = c
	}
}

// emuJoinCompact is join_compact: each block's passing pairs at their
// place in out, after those of the blocks before (blockCount[b] after
// emuScanBlocks), in pair order; the last
// block writes the total to ctr[0].
func emuJoinCompact(k *jparams, blockCount []uint64, out []byte, ctr []uint64) {
	n := k.nl * k.nr
	outSize := k.lsize + k.rsize
	grid := gridOf(n)
	for b := int64(0); b < grid; b++ {
		base := blockCount[b] // the blocks before (emuScanBlocks)
		var kept int64
		for th := int64(0); th < blockDim; th++ {
			i := b*blockDim + th
			if i >= n {
				break
			}
			if !k.passes(i) {
				continue
			}
			dst := out[(int64(base)+kept)*outSize:][:outSize]
			kept++
			li, ri := i/k.nr, i%k.nr
			copy(dst, k.tuples[li*k.lsize:(li+1)*k.lsize])
			ro := k.nl*k.lsize + ri*k.rsize
			copy(dst[k.lsize:], k.tuples[ro:ro+k.rsize])
		}
		if b == grid-1 {
			ctr[0] = base + uint64(kept)
		}
	}
}

// emuJoin is the emulator's joinBackend.
type emuJoin struct {
	sh     *joinShape
	staged []byte   // the host's staging buffer
	tuples []byte   // device: the window's tuples
	blocks []uint64 // device: per-block counts
	ctr    []uint64 // device: the pairs kept
	out    []byte   // device: the pairs
}

func (be *emuJoin) pack(n int64) ([]byte, error) {
	be.staged = grow(be.staged, n)
	return be.staged, nil
}

func (be *emuJoin) run(in []byte, nl, nr int64) ([]byte, error) {
	sh := be.sh
	n := nl * nr
	be.tuples = grow(be.tuples, int64(len(in))) // the host-to-device copy
	copy(be.tuples, in)
	be.blocks = grow(be.blocks, max(1, gridOf(n)))
	be.ctr = grow(be.ctr, 1)
	be.out = grow(be.out, n*sh.outSize)
	poison(be.blocks)
	poison(be.ctr)
	poisonBytes(be.out)
	k := &jparams{tuples: be.tuples, nl: nl, nr: nr, lsize: sh.lsize, rsize: sh.rsize,
		code: sh.code, where: sh.where, pair: make([]byte, sh.outSize)}
	clear(be.ctr) // cuMemsetD32Async of the counter
	emuJoinCount(k, be.blocks)
	emuScanBlocks(be.blocks, gridOf(n), scanSum)
	emuJoinCompact(k, be.blocks, be.out, be.ctr)
	kept := be.ctr[0]
	if kept > uint64(n) {
		return nil, fmt.Errorf("join kept %d pairs of %d", kept, n)
	}
	return be.out[:kept*uint64(sh.outSize)], nil
}

func (be *emuJoin) close() error {
	*be = emuJoin{sh: be.sh}
	return nil
}
