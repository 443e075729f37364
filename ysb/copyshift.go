package ysb

import "github.com/saber-hx/saber-hx/source"

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

// copyShiftGeneric is copyShift in Go: source.CopyShift, Go's memmove
// then a second pass for the shift, in pieces that fit in L1.
func copyShiftGeneric(dst, src []byte, shift int64) {
	source.CopyShift(dst, src, TupleSize, shift)
}
