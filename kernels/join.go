package kernels

import (
	"encoding/binary"
	"math/bits"
)

// joinTable is an open-addressing hash table from keys of up to 16 bytes
// (zero-padded to two words) to group ordinals. It is built once and only
// read afterwards, by any number of workers.
//
// The slots hold 4-byte entry numbers; the keys and ordinals are stored by
// entry, densely: for YSB's 1000 ads, 8 KiB of slots and 20 KiB of
// entries, against 64 KiB for 32-byte slots holding key and ordinal. On
// BenchmarkYSBKernel the two layouts measured the same (the entry layout
// won 6 of 10 alternating pairs, within the noise); this one is kept as the
// smaller, and the only one (the 32-byte slots were a second copy beside
// parallel arrays for the vectorised kernel).
type joinTable struct {
	mask  uint64
	shift uint8     // 64 - log2(slots): home takes a hash's top bits
	slot  []int32   // entry in each slot, -1: empty
	key   []joinKey // by entry
	ord   []int32   // group ordinal by entry
}

// joinKey is a key as two words (keyWords).
type joinKey struct{ hi, lo uint64 }

func newJoinTable(keys [][]byte, ord []int32) *joinTable {
	n := uint64(16)
	for n < 2*uint64(len(keys)) {
		n <<= 1
	}
	t := &joinTable{
		mask: n - 1, shift: uint8(64 - bits.TrailingZeros64(n)),
		slot: make([]int32, n), key: make([]joinKey, len(keys)), ord: make([]int32, len(keys)),
	}
	for i := range t.slot {
		t.slot[i] = -1
	}
	for i, k := range keys {
		hi, lo := keyWords(k)
		t.key[i], t.ord[i] = joinKey{hi, lo}, ord[i]
		s := t.home(hi, lo)
		for t.slot[s] >= 0 {
			s = (s + 1) & t.mask
		}
		t.slot[s] = int32(i)
	}
	return t
}

// lookup returns the ordinal of key (hi, lo), or -1.
func (t *joinTable) lookup(hi, lo uint64) int32 {
	s := t.home(hi, lo)
	for {
		e := t.slot[s]
		if e < 0 {
			return -1
		}
		if k := t.key[e]; k.hi == hi && k.lo == lo {
			return t.ord[e]
		}
		s = (s + 1) & t.mask
	}
}

// home is the first slot probed for key (hi, lo): multiplicative
// (Fibonacci) hashing, the top bits of a product, which depend on every bit
// of the key. Two multiplications, eight cycles of latency, against about
// twenty-four for two rounds of murmur3's finaliser (the hash this table
// had, and the GPU's copy of it in package offload still has): the probe
// of a static join waits for it on every tuple that passes the selection.
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
