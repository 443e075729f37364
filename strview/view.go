package strview

import (
	"bytes"
	"encoding/binary"
	"math"
	"unsafe"
)

const (
	// Size is the size of a view in a tuple.
	Size = 16
	// MaxInline is the longest string held inside its view.
	MaxInline = 12
)

// Put writes the view of s into dst[:Size]. A string longer than MaxInline
// is copied into a, which must then be non-nil, and the view is valid until
// a's Reset or Free.
func Put(dst []byte, s []byte, a *Arena) {
	if len(s) <= MaxInline {
		putInline(dst, s)
		return
	}
	putPointer(dst, a.Copy(s))
}

// PutRef writes the view of s into dst[:Size] without copying s. A string
// longer than MaxInline is referenced where it is, so s must be memory the
// garbage collector does not manage (an Arena's, a ring's mapping) and must
// stay in place, unchanged, for as long as the view is read. Under -race
// (checkptr), reading a view that references Go heap memory is a fatal
// error, which catches the mistake in tests.
func PutRef(dst []byte, s []byte) {
	if len(s) <= MaxInline {
		putInline(dst, s)
		return
	}
	putPointer(dst, s)
}

func putInline(dst []byte, s []byte) {
	_ = dst[Size-1]
	// Two words cleared and then the bytes copied: the padding must be
	// zero for Equal's word compare, whatever the slot held before.
	binary.LittleEndian.PutUint64(dst[0:8], 0)
	binary.LittleEndian.PutUint64(dst[8:16], 0)
	binary.LittleEndian.PutUint32(dst[0:4], uint32(len(s)))
	copy(dst[4:4+MaxInline], s)
}

func putPointer(dst []byte, s []byte) {
	_ = dst[Size-1]
	if uint64(len(s)) > math.MaxUint32 {
		panic("strview: a string longer than 4 GiB - 1 has no view")
	}
	binary.LittleEndian.PutUint32(dst[0:4], uint32(len(s)))
	copy(dst[4:8], s)
	binary.LittleEndian.PutUint64(dst[8:16], uint64(uintptr(unsafe.Pointer(unsafe.SliceData(s)))))
}

// Len is the length of the string of view v.
func Len(v []byte) int { return int(binary.LittleEndian.Uint32(v[0:4])) }

// Bytes is the string of view v: a sub-slice of v itself when the string is
// inline, else the referenced bytes. The result must not be modified when
// it is referenced (other views may share it), nor kept past the view's
// lifetime.
func Bytes(v []byte) []byte {
	_ = v[Size-1]
	n := binary.LittleEndian.Uint32(v[0:4])
	if n <= MaxInline {
		return v[4 : 4+n : 4+n]
	}
	return pointed(binary.LittleEndian.Uint64(v[8:16]), n)
}

// Referenced is the string of a view longer than MaxInline given its
// words: its length n (the first word's low half) and its address (the
// second word). Callers that keep views as words use it instead of Bytes.
func Referenced(n uint32, addr uint64) []byte { return pointed(addr, n) }

// pointed is the n bytes at addr. unsafe.Add from nil rather than a
// conversion of a uintptr: go vet accepts it, and checkptr accepts the
// result because it lies outside the Go heap.
func pointed(addr uint64, n uint32) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), uintptr(addr))), n)
}

// Equal reports whether views a and b hold the same string.
func Equal(a, b []byte) bool {
	_, _ = a[Size-1], b[Size-1]
	ha := binary.LittleEndian.Uint64(a[0:8])
	if ha != binary.LittleEndian.Uint64(b[0:8]) {
		return false
	}
	ta, tb := binary.LittleEndian.Uint64(a[8:16]), binary.LittleEndian.Uint64(b[8:16])
	n := uint32(ha)
	if n <= MaxInline || ta == tb {
		// Inline: the zero padding makes the words equal iff the
		// strings are. Referenced: the same address is the same string.
		return ta == tb
	}
	// The first 4 bytes are equal already.
	return string(pointed(ta, n)[4:]) == string(pointed(tb, n)[4:])
}

// EqualBytes reports whether view v holds the string s.
func EqualBytes(v []byte, s []byte) bool {
	if Len(v) != len(s) {
		return false
	}
	if len(s) >= 4 && binary.LittleEndian.Uint32(v[4:8]) != binary.LittleEndian.Uint32(s) {
		return false
	}
	return string(Bytes(v)) == string(s)
}

// Compare orders views a and b as bytes.Compare orders their strings: -1,
// 0 or +1.
func Compare(a, b []byte) int {
	_, _ = a[Size-1], b[Size-1]
	// A zero-padded prefix orders strings correctly whenever the padded
	// prefixes differ: at the first difference either both strings have
	// a byte, or the shorter one's padding (0) meets a nonzero byte.
	pa, pb := binary.BigEndian.Uint32(a[4:8]), binary.BigEndian.Uint32(b[4:8])
	if pa != pb {
		if pa < pb {
			return -1
		}
		return 1
	}
	na, nb := binary.LittleEndian.Uint32(a[0:4]), binary.LittleEndian.Uint32(b[0:4])
	if na <= MaxInline && nb <= MaxInline {
		// The same argument over all 12 padded bytes; equal padded
		// bytes leave only trailing zeros to tell them apart, so the
		// shorter one is smaller.
		ra, rb := binary.BigEndian.Uint64(a[8:16]), binary.BigEndian.Uint64(b[8:16])
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		case na < nb:
			return -1
		case na > nb:
			return 1
		}
		return 0
	}
	sa, sb := Bytes(a), Bytes(b)
	if len(sa) >= 4 && len(sb) >= 4 {
		return bytes.Compare(sa[4:], sb[4:])
	}
	return bytes.Compare(sa, sb)
}
