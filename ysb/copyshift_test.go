package ysb

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/saber-hx/saber-hx/source"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// naiveCopyShift is the oracle: tuple by tuple, byte by byte.
func naiveCopyShift(dst, src []byte, shift int64) {
	for t := 0; t+TupleSize <= len(src); t += TupleSize {
		copy(dst[t:t+TupleSize], src[t:t+TupleSize])
		et := int64(binary.LittleEndian.Uint64(dst[t:])) + shift
		binary.LittleEndian.PutUint64(dst[t:], uint64(et))
	}
}

// TestCopyShift checks copyShift (the assembly where the CPU has it) and
// copyShiftGeneric against the naive loop: random tuples, counts across
// the generic version's 16 KiB pieces, shifts that wrap, unaligned
// buffers, a ragged tail that is not copied, and no write past the copy.
func TestCopyShift(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	shifts := []int64{0, 1, -1, 86_400_000, math.MaxInt64, math.MinInt64}
	const piece = source.CopyPiece / TupleSize
	counts := []int{0, 1, 2, 3, piece - 1, piece, piece + 1, 3*piece + 5}
	impls := map[string]func(dst, src []byte, shift int64){"copyShift": copyShift, "generic": copyShiftGeneric}
	for name, impl := range impls {
		for _, n := range counts {
			for _, shift := range shifts {
				for _, skew := range []int{0, 1, 31} {
					tail := rng.IntN(TupleSize) // bytes of a partial tuple: not copied
					src := make([]byte, skew+n*TupleSize+tail)[skew:]
					for i := range src {
						src[i] = byte(rng.Uint32())
					}
					got := make([]byte, skew+len(src)+64)[skew:]
					for i := range got {
						got[i] = 0xA5
					}
					want := append([]byte(nil), got...)
					if name == "generic" {
						// The generic version is only called with whole tuples.
						src = src[:n*TupleSize]
					}
					impl(got, src, shift)
					naiveCopyShift(want, src, shift)
					require.Len(t, got, len(want))
					assert.Equal(t, want, got, "%s: %d tuples, shift %d, skew %d", name, n, shift, skew)
				}
			}
		}
	}
}

// TestCopyShiftDstTooShort: copyShift never writes past dst.
func TestCopyShiftDstTooShort(t *testing.T) {
	src := make([]byte, 4*TupleSize)
	assert.Panics(t, func() { copyShift(make([]byte, 4*TupleSize-1), src, 1) })
}

// BenchmarkCopyShift is the replay's ingestion copy as the workers run it:
// 256 KiB tasks from a 16 MiB bundle into a 4 MiB ring. "fused" is
// copyShift (the assembly where the CPU has it), "generic" Go's copy then
// the shift. Compare them with -count and benchstat.
func BenchmarkCopyShift(b *testing.B) {
	const bundle, ring, task = 16 << 20, 4 << 20, 256 << 10
	src := make([]byte, bundle)
	dst := make([]byte, ring)
	for i := range src {
		src[i] = byte(i)
	}
	for _, bc := range []struct {
		name string
		f    func(dst, src []byte, shift int64)
	}{{"fused", copyShift}, {"generic", copyShiftGeneric}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(task)
			b.ReportAllocs()
			so, do := 0, 0
			for b.Loop() {
				bc.f(dst[do:do+task], src[so:so+task], 5)
				so, do = (so+task)%bundle, (do+task)%ring
			}
		})
	}
}
