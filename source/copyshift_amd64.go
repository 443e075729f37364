//go:build amd64 && !purego

package source

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// useAVX2 gates copyShiftAVX2; every x86-64 server since 2013 has AVX2.
var useAVX2 = cpu.X86.HasAVX2

// copyShiftAVX2 copies the first tuples tuples of src to dst, each of
// blocks 32-byte blocks, adding shift to the little-endian int64 at byte
// 0 of each: one vector add on the first block between its load and its
// store.
//
//go:noescape
func copyShiftAVX2(dst, src unsafe.Pointer, tuples, blocks int, shift int64)

// copyShiftFast runs the assembly when the CPU has AVX2; the caller has
// checked that dst holds len(src) bytes, that src is whole tuples and
// that tupleSize is a multiple of 32.
func copyShiftFast(dst, src []byte, tupleSize int, shift int64) bool {
	if !useAVX2 {
		return false
	}
	copyShiftAVX2(unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src)), len(src)/tupleSize, tupleSize/32, shift)
	return true
}

// copyAddAVX2 copies the first tuples tuples of src to dst, each of size
// bytes (a multiple of 8), adding to each the size bytes of int64 deltas
// at delta, word by word: 32 bytes at a time, then 16, then 8.
//
//go:noescape
func copyAddAVX2(dst, src unsafe.Pointer, tuples, size int, delta unsafe.Pointer)

// copyAddFast runs the assembly when the CPU has AVX2; the caller has
// checked that dst holds len(src) bytes and that src is whole tuples of
// len(delta)*8 bytes.
func copyAddFast(dst, src []byte, delta []int64) bool {
	if !useAVX2 {
		return false
	}
	ts := len(delta) * 8
	copyAddAVX2(unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src)), len(src)/ts, ts, unsafe.Pointer(unsafe.SliceData(delta)))
	return true
}
