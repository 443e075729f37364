//go:build amd64 || arm64

package kernels

import "unsafe"

// load64 and load32 read a little-endian word at byte off of the tuple at
// t; the caller guarantees off is inside the tuple. On these little-endian
// CPUs, which load unaligned words, it is one MOV: the portable version
// (load_portable.go), binary.LittleEndian over unsafe.Slice, also checks
// that t+off+8 does not overflow the address space (unsafe.Slice's rule),
// three instructions and a branch per load, four loads per YSB tuple:
// BenchmarkYSBKernel/fused gained about 5% (median of 8 alternating pairs).
func load64(t unsafe.Pointer, off int) uint64 { return *(*uint64)(unsafe.Add(t, off)) }

func load32(t unsafe.Pointer, off int) uint32 { return *(*uint32)(unsafe.Add(t, off)) }
