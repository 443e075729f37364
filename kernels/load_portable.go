//go:build (!amd64 && !arm64) || purego

package kernels

import (
	"encoding/binary"
	"unsafe"
)

// load64 and load32 read a little-endian word at byte off of the tuple at
// t; the caller guarantees off is inside the tuple. The fixed-length slice
// lets binary.LittleEndian compile without a bounds check on any byte
// order and alignment rule (load_unaligned.go has the single-MOV version,
// used on amd64 and arm64 but under the purego tag).
func load64(t unsafe.Pointer, off int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice((*byte)(unsafe.Add(t, off)), 8))
}

func load32(t unsafe.Pointer, off int) uint32 {
	return binary.LittleEndian.Uint32(unsafe.Slice((*byte)(unsafe.Add(t, off)), 4))
}

// store64 writes v little-endian at byte off of t; the caller guarantees
// the 8 bytes are inside the buffer.
func store64(t unsafe.Pointer, off int, v uint64) {
	binary.LittleEndian.PutUint64(unsafe.Slice((*byte)(unsafe.Add(t, off)), 8), v)
}
