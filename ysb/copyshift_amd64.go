//go:build amd64 && !purego

package ysb

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// useAVX2 gates copyShiftAVX2; every x86-64 server since 2013 has AVX2.
var useAVX2 = cpu.X86.HasAVX2

// copyShiftAVX2 copies the first `tuples` 128-byte tuples of src to dst, adding shift
// to the little-endian int64 at byte 0 of each: four 32-byte loads, one
// vector add, four stores per tuple.
//
//go:noescape
func copyShiftAVX2(dst, src unsafe.Pointer, tuples int, shift int64)

// copyShiftFast runs the assembly when the CPU has AVX2; the caller has
// checked that dst holds len(src) bytes and that src is whole tuples.
func copyShiftFast(dst, src []byte, shift int64) bool {
	if !useAVX2 {
		return false
	}
	copyShiftAVX2(unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src)), len(src)/TupleSize, shift)
	return true
}
