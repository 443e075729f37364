//go:build (amd64 || arm64) && !purego

package kernels

import "unsafe"

// load64 and load32 read a little-endian word at byte off of the tuple at
// t; the caller guarantees off is inside the tuple. On these little-endian
// CPUs, which load unaligned words, it is one MOV: the portable version
// (load_portable.go), binary.LittleEndian over unsafe.Slice, also checks
// that t+off+8 does not overflow the address space (unsafe.Slice's rule),
// three instructions and a branch per load, four loads per YSB tuple
// (BenchmarkYSBKernel/fused: docs/performance.md). The purego tag selects
// the portable version on these CPUs too, as it selects ysb's copy without
// assembly, so that CI tests the portable path on the machine it runs on.
func load64(t unsafe.Pointer, off int) uint64 { return *(*uint64)(unsafe.Add(t, off)) }

func load32(t unsafe.Pointer, off int) uint32 { return *(*uint32)(unsafe.Add(t, off)) }

// store64 writes v little-endian at byte off of t; the caller guarantees
// the 8 bytes are inside the buffer.
func store64(t unsafe.Pointer, off int, v uint64) { *(*uint64)(unsafe.Add(t, off)) = v }
