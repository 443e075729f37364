package kernels

import (
	"encoding/binary"
	"math/bits"
)

// joinTable is an open-addressing hash table from keys of up to 16 bytes
// (zero-padded to two words) to group ordinals, laid out as parallel arrays
// so that a probe touches few cache lines. It is built once and only read
// afterwards, by any number of workers.
type joinTable struct {
	mask   uint64
	shift  uint8 // 64 - log2(slots): home takes a hash's top bits
	hi, lo []uint64
	ord    []int32 // -1: empty slot
	// slots holds the same table as one 32-byte record per slot, so that a
	// probe touches one cache line instead of three: the fused kernel
	// probes it (the parallel arrays stay for the vectorised kernel).
	slots []joinSlot
}

// joinSlot is one slot of joinTable.slots; two fit in a cache line.
type joinSlot struct {
	hi, lo uint64
	ord    int32 // -1: empty slot
	_      [12]byte
}

func newJoinTable(keys [][]byte, ord []int32) *joinTable {
	n := uint64(16)
	for n < 2*uint64(len(keys)) {
		n <<= 1
	}
	t := &joinTable{mask: n - 1, shift: uint8(64 - bits.TrailingZeros64(n)), hi: make([]uint64, n), lo: make([]uint64, n), ord: make([]int32, n)}
	for i := range t.ord {
		t.ord[i] = -1
	}
	for i, k := range keys {
		hi, lo := keyWords(k)
		s := t.home(hi, lo)
		for t.ord[s] >= 0 {
			s = (s + 1) & t.mask
		}
		t.hi[s], t.lo[s], t.ord[s] = hi, lo, ord[i]
	}
	t.slots = make([]joinSlot, n)
	for s := range t.slots {
		t.slots[s] = joinSlot{hi: t.hi[s], lo: t.lo[s], ord: t.ord[s]}
	}
	return t
}

// lookup returns the ordinal of key (hi, lo), or -1.
func (t *joinTable) lookup(hi, lo uint64) int32 {
	s := t.home(hi, lo)
	for {
		o := t.ord[s]
		if o < 0 || (t.hi[s] == hi && t.lo[s] == lo) {
			return o
		}
		s = (s + 1) & t.mask
	}
}

// home is the first slot probed for key (hi, lo): multiplicative
// (Fibonacci) hashing, the top bits of a product, which depend on every bit
// of the key. Two multiplications, eight cycles of latency, against about
// twenty-four for two rounds of murmur3's finaliser (the hash this table
// had, and the GPU's copy of it in package offload still has): the probe of a static join
// waits for it on every tuple that passes the selection.
func (t *joinTable) home(hi, lo uint64) uint64 { return homeSlot(hi, lo, t.shift) }

func homeSlot(hi, lo uint64, shift uint8) uint64 {
	return ((hi * 0x9E3779B97F4A7C15) ^ lo) * 0xBF58476D1CE4E5B9 >> shift
}

// keyWords loads a key of up to 16 bytes as two little-endian words,
// zero-padded.
func keyWords(k []byte) (hi, lo uint64) {
	if len(k) == 16 {
		return binary.LittleEndian.Uint64(k[0:8]), binary.LittleEndian.Uint64(k[8:16])
	}
	var b [16]byte
	copy(b[:], k)
	return binary.LittleEndian.Uint64(b[0:8]), binary.LittleEndian.Uint64(b[8:16])
}
