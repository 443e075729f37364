package kernels

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
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
	// strs, instead, holds string keys (newStringJoinTable).
	strs map[string]int32
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

// newStringJoinTable is a joinTable of string keys (StaticTable.KeyWidth
// 0): a map from the string to its ordinal, read by the kernels with no
// allocation (a map index by string(b) does not copy b).
func newStringJoinTable(keys [][]byte, ord []int32) *joinTable {
	t := &joinTable{strs: make(map[string]int32, len(keys))}
	for i, k := range keys {
		t.strs[string(k)] = ord[i]
	}
	return t
}

// joinKey reads a tuple's join key where the fast loops (a 16-byte bytes
// column, read in place) do not apply: a key of other widths, an integer
// column's bytes, a string, a column that can be NULL (never a match).
type joinKey struct {
	t     *joinTable
	off   int
	width int // 0: a string column
	at    int // the NULL bit's byte, -1: the column cannot be NULL
	bit   byte
}

func newJoinKey(t *joinTable, a query.Attribute) joinKey {
	k := joinKey{t: t, off: a.Offset, width: a.Size, at: -1}
	if a.Type == query.String {
		k.width = 0
	}
	if a.Nullable {
		k.at, k.bit = a.NullBit>>3, 1<<(a.NullBit&7)
	}
	return k
}

// findComputed returns the ordinal of row i of the computed key's
// register (an integer's little-endian bytes, as keyWords reads an
// 8-byte key, or a string), or -1 for a NULL or missing key.
func (k *joinKey) findComputed(key *vexpr, i int) int32 {
	if key.nulls != nil && key.nulls[i] {
		return -1
	}
	if k.width == 0 {
		g, ok := k.t.strs[string(key.strs[i])]
		if !ok {
			return -1
		}
		return g
	}
	return k.t.lookup(uint64(key.ints[i]), 0)
}

// find returns the ordinal of the key of tuple t, or -1.
func (k *joinKey) find(t []byte) int32 {
	if k.at >= 0 && t[k.at]&k.bit != 0 {
		return -1
	}
	if k.width == 0 {
		g, ok := k.t.strs[string(strview.Bytes(t[k.off:k.off+strview.Size]))]
		if !ok {
			return -1
		}
		return g
	}
	hi, lo := keyWords(t[k.off : k.off+k.width])
	return k.t.lookup(hi, lo)
}
