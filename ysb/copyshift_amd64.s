//go:build amd64 && !purego

#include "textflag.h"

// func copyShiftAVX2(dst, src unsafe.Pointer, tuples int, shift int64)
//
// The tuple is 128 bytes (ysb.TupleSize): Y0-Y3 carry it, and Y4 holds
// (shift, 0, 0, 0) so that one VPADDQ shifts the event time at byte 0
// while the tuple is in registers. Unaligned loads and stores: the ring
// and the bundle are page-aligned in practice, but nothing requires it.
TEXT ·copyShiftAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ tuples+16(FP), CX
	MOVQ shift+24(FP), AX
	VMOVQ AX, X4 // zeroes bits 64-255 of Y4
	TESTQ CX, CX
	JLE done

loop:
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	VMOVDQU 64(SI), Y2
	VMOVDQU 96(SI), Y3
	VPADDQ Y4, Y0, Y0
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, 64(DI)
	VMOVDQU Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ loop

done:
	VZEROUPPER
	RET
