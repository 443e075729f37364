package source

import "encoding/binary"

// CopyShift copies the whole tuples of src, of tupleSize bytes each, into
// dst (len(dst) >= their bytes) and adds shift to each copy's event time
// (the little-endian int64 at byte 0): a replay's ingestion copy, a
// CopyShiftFunc for tupleSize. Tuples whose size is a multiple of 32 bytes
// are copied in one pass that shifts each event time in a register
// between load and store (copyshift_amd64.s, where the CPU has AVX2);
// others, and every tuple on other platforms, by copyShiftPieces.
func CopyShift(dst, src []byte, tupleSize int, shift int64) {
	src = src[:len(src)/tupleSize*tupleSize]
	if len(src) == 0 {
		return
	}
	if shift == 0 {
		copy(dst[:len(src)], src)
		return
	}
	_ = dst[len(src)-1] // the assembly writes every tuple of src
	if tupleSize%32 == 0 && copyShiftFast(dst, src, tupleSize, shift) {
		return
	}
	copyShiftPieces(dst, src, tupleSize, shift)
}

// copyShiftPieces is CopyShift in Go: memmove, then a second pass for the
// shift, in pieces of CopyPiece bytes so that the second pass finds their
// lines in L1.
func copyShiftPieces(dst, src []byte, tupleSize int, shift int64) {
	piece := max(CopyPiece/tupleSize, 1) * tupleSize
	for off := 0; off < len(src); off += piece {
		end := min(len(src), off+piece)
		copy(dst[off:end], src[off:end])
		for t := off; t < end; t += tupleSize {
			w := dst[t : t+8 : t+8]
			binary.LittleEndian.PutUint64(w, uint64(int64(binary.LittleEndian.Uint64(w))+shift))
		}
	}
}

// CopyPiece is the bytes copyShiftPieces copies before shifting their
// event times: 16 KiB, half of a 32 KiB L1 data cache.
const CopyPiece = 16 << 10

// CopyAdd copies the whole tuples of src into dst (len(dst) >= their
// bytes), tuples of len(delta)*8 bytes, and adds delta[w] to the
// little-endian int64 word w of each copy: a replay's ingestion copy for
// tuples that move more than their event time from one pass to the next
// (Nexmark's ids). It is one pass where the CPU has AVX2, each block of a
// tuple added to its deltas in a register between load and store.
func CopyAdd(dst, src []byte, delta []int64) {
	ts := len(delta) * 8
	if ts == 0 {
		panic("source: CopyAdd with no deltas")
	}
	src = src[:len(src)/ts*ts]
	if len(src) == 0 {
		return
	}
	_ = dst[len(src)-1] // the assembly writes every tuple of src
	if !copyAddFast(dst, src, delta) {
		copyAddPieces(dst, src, delta)
	}
}

// copyAddPieces is CopyAdd in Go, as copyShiftPieces: memmove, then a
// second pass for the deltas, in pieces that fit in L1.
func copyAddPieces(dst, src []byte, delta []int64) {
	ts := len(delta) * 8
	piece := max(CopyPiece/ts, 1) * ts
	for off := 0; off < len(src); off += piece {
		end := min(len(src), off+piece)
		copy(dst[off:end], src[off:end])
		for t := off; t < end; t += ts {
			for w, d := range delta {
				if d != 0 {
					x := dst[t+8*w : t+8*w+8 : t+8*w+8]
					binary.LittleEndian.PutUint64(x, binary.LittleEndian.Uint64(x)+uint64(d))
				}
			}
		}
	}
}
