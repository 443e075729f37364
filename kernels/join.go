package kernels

import "encoding/binary"

// joinTable is an open-addressing hash table from keys of up to 16 bytes
// (zero-padded to two words) to group ordinals, laid out as parallel arrays
// so that a probe touches few cache lines. It is built once and only read
// afterwards, by any number of workers.
type joinTable struct {
	mask   uint64
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
	t := &joinTable{mask: n - 1, hi: make([]uint64, n), lo: make([]uint64, n), ord: make([]int32, n)}
	for i := range t.ord {
		t.ord[i] = -1
	}
	for i, k := range keys {
		hi, lo := keyWords(k)
		s := hash128(hi, lo) & t.mask
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
	s := hash128(hi, lo) & t.mask
	for {
		o := t.ord[s]
		if o < 0 || (t.hi[s] == hi && t.lo[s] == lo) {
			return o
		}
		s = (s + 1) & t.mask
	}
}

// mix is the murmur3 64-bit finaliser.
func mix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	return k ^ (k >> 33)
}

func hash128(hi, lo uint64) uint64 { return mix(lo ^ mix(hi)) }

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
