package ysb

import "encoding/binary"

// copyShift copies the whole tuples of src into dst (len(dst) >= len(src))
// and adds shift to each copy's event time: the replay's ingestion copy.
// Where the CPU allows (copyshift_amd64.s), it is one pass that adds the
// shift to a register between load and store; copyShiftGeneric, the
// portable version and the test's oracle, copies and then shifts.
func copyShift(dst, src []byte, shift int64) {
	n := len(src) / TupleSize
	if n == 0 {
		return
	}
	_ = dst[n*TupleSize-1] // the assembly writes n whole tuples
	if !copyShiftFast(dst, src[:n*TupleSize], shift) {
		copyShiftGeneric(dst, src[:n*TupleSize], shift)
	}
}

// copyShiftGeneric is copyShift in Go: Go's memmove, then a second pass
// for the shift. It copies pieces that fit in L1, so that the second pass
// finds their lines there.
func copyShiftGeneric(dst, src []byte, shift int64) {
	for off := 0; off < len(src); off += copyPiece {
		end := min(len(src), off+copyPiece)
		copy(dst[off:end], src[off:end])
		if shift == 0 {
			continue
		}
		for t := off; t+TupleSize <= end; t += TupleSize {
			w := dst[t : t+8 : t+8]
			binary.LittleEndian.PutUint64(w, uint64(int64(binary.LittleEndian.Uint64(w))+shift))
		}
	}
}

// copyPiece is the bytes copyShiftGeneric copies before shifting their
// event times: 16 KiB, half of a 32 KiB L1 data cache (a multiple of
// TupleSize).
const copyPiece = 16 << 10
