//go:build amd64 && !purego

#include "textflag.h"

// The pair emitters of 32-byte tuples: the left tuple stays in Y0, and
// each pair is one 32-byte load of the right tuple and two 32-byte
// stores. The Go callers (joinemit_amd64.go) size dst and check that every
// position is within right.

// func emitSel32AVX2(dst, lt, right unsafe.Pointer, sel *int32, n int)
TEXT ·emitSel32AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ lt+8(FP), AX
	MOVQ right+16(FP), SI
	MOVQ sel+24(FP), R8
	MOVQ n+32(FP), CX
	TESTQ CX, CX
	JLE seldone
	VMOVDQU 0(AX), Y0

selloop:
	MOVLQSX 0(R8), BX
	SHLQ $5, BX
	VMOVDQU 0(SI)(BX*1), Y1
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y1, 32(DI)
	ADDQ $64, DI
	ADDQ $4, R8
	DECQ CX
	JNZ selloop
	VZEROUPPER

seldone:
	RET

// func emitMask32AVX2(dst, lt, right unsafe.Pointer, mask *uint64, words int)
//
// The positions are the set bits of mask's words, bit b of word w being
// right tuple 64w+b: TZCNT finds the lowest, BLSR clears it.
TEXT ·emitMask32AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ lt+8(FP), AX
	MOVQ right+16(FP), SI
	MOVQ mask+24(FP), R8
	MOVQ words+32(FP), CX
	TESTQ CX, CX
	JLE maskdone
	VMOVDQU 0(AX), Y0

word:
	MOVQ 0(R8), DX
	TESTQ DX, DX
	JZ nextword

bit:
	TZCNTQ DX, BX
	SHLQ $5, BX
	VMOVDQU 0(SI)(BX*1), Y1
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y1, 32(DI)
	ADDQ $64, DI
	BLSRQ DX, DX
	JNZ bit

nextword:
	ADDQ $8, R8
	ADDQ $2048, SI // the next word's 64 right tuples
	DECQ CX
	JNZ word
	VZEROUPPER

maskdone:
	RET
