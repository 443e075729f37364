//go:build amd64 && !purego

#include "textflag.h"

// func copyShiftAVX2(dst, src unsafe.Pointer, tuples, blocks int, shift int64)
//
// A tuple is blocks 32-byte blocks (blocks >= 1). Y4 holds (shift, 0, 0,
// 0), so that one VPADDQ shifts the event time at byte 0 while the first
// block is in a register; the other blocks are copied as they are.
// 32-, 64- and 128-byte tuples (SABER's workloads, YSB) have loops of
// their own, without an inner loop. Unaligned loads and stores: buffers
// are page-aligned in practice, but nothing requires it.
TEXT ·copyShiftAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ tuples+16(FP), CX
	MOVQ blocks+24(FP), DX
	MOVQ shift+32(FP), AX
	VMOVQ AX, X4 // zeroes bits 64-255 of Y4
	TESTQ CX, CX
	JLE done
	CMPQ DX, $1
	JEQ one4
	CMPQ DX, $2
	JEQ two
	CMPQ DX, $4
	JEQ four
	MOVQ DX, R10
	SHLQ $5, R10 // the tuple's bytes

any:
	VMOVDQU 0(SI), Y0
	VPADDQ Y4, Y0, Y0
	VMOVDQU Y0, 0(DI)
	MOVQ $32, R8

anyrest:
	VMOVDQU (SI)(R8*1), Y1
	VMOVDQU Y1, (DI)(R8*1)
	ADDQ $32, R8
	CMPQ R8, R10
	JLT anyrest
	ADDQ R10, SI
	ADDQ R10, DI
	DECQ CX
	JNZ any
	JMP done

one4: // 32-byte tuples, four at a time
	CMPQ CX, $4
	JLT one
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	VMOVDQU 64(SI), Y2
	VMOVDQU 96(SI), Y3
	VPADDQ Y4, Y0, Y0
	VPADDQ Y4, Y1, Y1
	VPADDQ Y4, Y2, Y2
	VPADDQ Y4, Y3, Y3
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, 64(DI)
	VMOVDQU Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $4, CX
	JMP one4

one: // the last 0 to 3
	TESTQ CX, CX
	JZ done
	VMOVDQU 0(SI), Y0
	VPADDQ Y4, Y0, Y0
	VMOVDQU Y0, 0(DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JMP one

two:
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	VPADDQ Y4, Y0, Y0
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y1, 32(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ two
	JMP done

four:
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
	JNZ four

done:
	VZEROUPPER
	RET

// func copyAddAVX2(dst, src unsafe.Pointer, tuples, size int, delta unsafe.Pointer)
//
// A tuple is size bytes, a multiple of 8; delta holds size bytes of int64
// addends, one per word of the tuple. Each tuple is loaded, added to
// delta and stored 32 bytes at a time, then 16, then 8: delta stays in
// L1 however many tuples there are.
TEXT ·copyAddAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ tuples+16(FP), CX
	MOVQ size+24(FP), R10
	MOVQ delta+32(FP), R11
	TESTQ CX, CX
	JLE adone
	MOVQ R10, R12
	ANDQ $-32, R12 // the bytes of the tuple's whole 32-byte blocks

atuple:
	XORQ R8, R8
	TESTQ R12, R12
	JZ a16

ablock:
	VMOVDQU (SI)(R8*1), Y0
	VPADDQ (R11)(R8*1), Y0, Y0
	VMOVDQU Y0, (DI)(R8*1)
	ADDQ $32, R8
	CMPQ R8, R12
	JLT ablock

a16:
	MOVQ R10, R9
	SUBQ R8, R9 // bytes left: 0, 8, 16 or 24
	CMPQ R9, $16
	JLT a8
	VMOVDQU (SI)(R8*1), X0
	VPADDQ (R11)(R8*1), X0, X0
	VMOVDQU X0, (DI)(R8*1)
	ADDQ $16, R8
	SUBQ $16, R9

a8:
	TESTQ R9, R9
	JZ anext
	MOVQ (SI)(R8*1), AX
	ADDQ (R11)(R8*1), AX
	MOVQ AX, (DI)(R8*1)

anext:
	ADDQ R10, SI
	ADDQ R10, DI
	DECQ CX
	JNZ atuple

adone:
	VZEROUPPER
	RET
