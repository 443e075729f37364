//go:build amd64 && !purego

package kernels

import (
	"math/bits"
	"slices"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The assembly pair emitters of 32-byte tuples (joinemit_amd64.s). Go's
// copy of a [32]byte is two 16-byte moves through memory, the left tuple
// reloaded for every pair; here it stays in a register.

var useEmitAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasBMI1

//go:noescape
func emitSel32AVX2(dst, lt, right unsafe.Pointer, sel *int32, n int)

//go:noescape
func emitMask32AVX2(dst, lt, right unsafe.Pointer, mask *uint64, words int)

func fastEmitter(lts, rts int) emitter {
	if !useEmitAVX2 || lts != 32 || rts != 32 {
		return nil
	}
	return emitSel32
}

func fastMaskEmitter(lts, rts int) maskEmitter {
	if !useEmitAVX2 || lts != 32 || rts != 32 {
		return nil
	}
	return emitMask32
}

// emitSel32 is emitFixed[[32]byte]. sel is ascending (cmpFirst and
// cmpNarrow keep the order), so its last index bounds them all.
func emitSel32(out, lt, right []byte, rts int, sel []int32) []byte {
	n := len(sel)
	if n == 0 {
		return out
	}
	if len(lt) < 32 || sel[0] < 0 || int(sel[n-1]) >= len(right)/32 {
		panic("kernels: pair index out of range")
	}
	o := len(out)
	out = slices.Grow(out, n*64)[:o+n*64]
	emitSel32AVX2(unsafe.Pointer(&out[o]), unsafe.Pointer(&lt[0]), unsafe.Pointer(unsafe.SliceData(right)), &sel[0], n)
	return out
}

// emitMask32 is emitMaskFixed[[32]byte]: the bitmaps are combined into
// one, whose bits beyond the right side are checked clear.
func emitMask32(out, lt, right []byte, rts int, from, minus, all []uint64) []byte {
	var buf [rankMaxRight / 64]uint64
	w := len(from)
	if w > len(buf) || len(lt) < 32 {
		return emitMaskFixed[[32]byte](out, lt, right, rts, from, minus, all)
	}
	m := buf[:w]
	cnt := 0
	for wi := range m {
		v := rankWord(from, minus, all, wi)
		m[wi] = v
		cnt += bits.OnesCount64(v)
	}
	if cnt == 0 {
		return out
	}
	nr := len(right) / 32
	if w > (nr+63)/64 || (nr%64 != 0 && w == (nr+63)/64 && m[w-1]>>(nr%64) != 0) {
		panic("kernels: pair index out of range")
	}
	o := len(out)
	out = slices.Grow(out, cnt*64)[:o+cnt*64]
	emitMask32AVX2(unsafe.Pointer(&out[o]), unsafe.Pointer(&lt[0]), unsafe.Pointer(unsafe.SliceData(right)), &m[0], w)
	return out
}
