package kernels

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// joinTable is an open-addressing hash table from keys of up to 16 bytes
// (zero-padded to two words) to group ordinals. It is built once and only
// read afterwards, by any number of workers.
//
// The slots hold 4-byte entry numbers; keys and ordinals are stored by
// entry, densely: for YSB's 1000 ads, 8 KiB of slots and 24 KiB of
// entries, against 64 KiB for 32-byte slots holding key and ordinal. On
// BenchmarkYSBKernel the two layouts measured the same, within the noise
// (docs/performance.md); this one is kept as the smaller, and the only one
// (the 32-byte slots were a second copy beside parallel arrays for the
// vectorised kernel).
type joinTable struct {
	mask  uint64
	shift uint8       // 64 - log2(slots): home takes a hash's top bits
	slot  []int32     // entry in each slot, -1: empty
	entry []joinEntry // by entry
}

// joinEntry is a key as two words (keyWords) and its group ordinal.
type joinEntry struct {
	hi, lo uint64
	ord    int32
}

func newJoinTable(keys [][]byte, ord []int32) *joinTable {
	n := uint64(16)
	for n < 2*uint64(len(keys)) {
		n <<= 1
	}
	t := &joinTable{
		mask: n - 1, shift: uint8(64 - bits.TrailingZeros64(n)),
		slot: make([]int32, n), entry: make([]joinEntry, len(keys)),
	}
	for i := range t.slot {
		t.slot[i] = -1
	}
	for i, k := range keys {
		hi, lo := keyWords(k)
		t.entry[i] = joinEntry{hi: hi, lo: lo, ord: ord[i]}
		s := t.home(hi, lo)
		for t.slot[s] >= 0 {
			s = (s + 1) & t.mask
		}
		t.slot[s] = int32(i)
	}
	return t
}

// lookup returns the ordinal of key (hi, lo), or -1.
func (t *joinTable) lookup(hi, lo uint64) int32 { return t.probe().find(hi, lo) }

// joinProbe is the probe of a joinTable: the table's arrays as pointers
// (slots are masked, entry numbers come from the table), four words, so
// that the fused kernel's loops keep it in registers; lookup builds one per
// call for the other kernels.
type joinProbe struct {
	mask, shift uint64
	slot, entry unsafe.Pointer
}

func (t *joinTable) probe() joinProbe {
	return joinProbe{mask: t.mask, shift: uint64(t.shift), slot: unsafe.Pointer(unsafe.SliceData(t.slot)), entry: unsafe.Pointer(unsafe.SliceData(t.entry))}
}

// find returns the ordinal of key (hi, lo), or -1.
func (p joinProbe) find(hi, lo uint64) int32 {
	s := homeSlot(hi, lo, uint8(p.shift))
	for {
		e := *(*int32)(unsafe.Add(p.slot, s*4))
		if e < 0 {
			return -1
		}
		if en := (*joinEntry)(unsafe.Add(p.entry, uintptr(e)*unsafe.Sizeof(joinEntry{}))); en.hi == hi && en.lo == lo {
			return en.ord
		}
		s = (s + 1) & p.mask
	}
}

// home is the first slot probed for key (hi, lo): multiplicative
// (Fibonacci) hashing, the top bits of a product, which depend on every bit
// of the key. Two multiplications, eight cycles of latency, against about
// twenty-four for two rounds of murmur3's finaliser (the hash this table
// had, and the GPU's copy of it in package gpu still has): the probe
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
