package source

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCopyShift checks CopyShift (the assembly for sizes that are
// multiples of 32 bytes, where the CPU has AVX2) and copyShiftPieces
// against the naive loop: tuple sizes that take each of the assembly's
// loops and those it leaves to Go, counts across the pieces and the
// four-tuple steps, shifts that wrap, unaligned buffers, a ragged tail that
// is not copied, and no write past the copy.
func TestCopyShift(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	shifts := []int64{0, 1, -1, 86_400_000, math.MaxInt64, math.MinInt64}
	impls := []struct {
		name string
		f    func(dst, src []byte, ts int, shift int64)
	}{{"CopyShift", CopyShift}, {"pieces", func(dst, src []byte, ts int, shift int64) {
		copyShiftPieces(dst, src[:len(src)/ts*ts], ts, shift) // called with whole tuples only
	}}}
	for _, impl := range impls {
		for _, ts := range []int{8, 16, 24, 32, 40, 64, 96, 128, 160, 256} {
			piece := max(CopyPiece/ts, 1)
			for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, piece - 1, piece, piece + 1, 3*piece + 5} {
				for _, shift := range shifts {
					src, got, want, skew := copyBuffers(rng, n, ts)
					impl.f(got, src, ts, shift)
					naiveCopyShift(want, src, ts, shift)
					require.Equal(t, want, got, "%s: %d-byte tuples: %d, shift %d, skew %d", impl.name, ts, n, shift, skew)
				}
			}
		}
	}
	for _, ts := range []int{24, 32, 64, 128} {
		assert.Panics(t, func() { CopyShift(make([]byte, 4*ts-1), make([]byte, 4*ts), ts, 1) }, "%d-byte tuples: dst too short", ts)
	}
}

// copyBuffers is a copy test's buffers: src, n random tuples of ts bytes
// and a ragged tail, and got and want, 64 bytes longer, alike, filled
// with a pattern that shows any byte written past the copy; all three
// start skew bytes into their allocations (unaligned).
func copyBuffers(rng *rand.Rand, n, ts int) (src, got, want []byte, skew int) {
	skew = rng.IntN(32)
	src = make([]byte, skew+n*ts+rng.IntN(ts))[skew:]
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	got = make([]byte, skew+len(src)+64)[skew:]
	for i := range got {
		got[i] = 0xA5
	}
	want = append(make([]byte, 0, skew+len(got))[skew:skew], got...)
	return src, got, want, skew
}

// BenchmarkCopyShift is a replay's ingestion copy as the workers run it:
// 256 KiB tasks from a 16 MiB bundle into a 4 MiB ring, for the tuple
// sizes of SABER's workloads (32 and 64 bytes) and of YSB (128). "fused"
// is CopyShift (the assembly where the CPU has it), "pieces" Go's copy
// then the shift. Compare them with -count and benchstat.
func BenchmarkCopyShift(b *testing.B) {
	const bundle, ring, task = 16 << 20, 4 << 20, 256 << 10
	src := make([]byte, bundle)
	dst := make([]byte, ring)
	for i := range src {
		src[i] = byte(i)
	}
	for _, ts := range []int{32, 64, 128} {
		for _, bc := range []struct {
			name string
			f    func(dst, src []byte, ts int, shift int64)
		}{{"fused", CopyShift}, {"pieces", copyShiftPieces}} {
			b.Run(fmt.Sprintf("%dB/%s", ts, bc.name), func(b *testing.B) {
				b.SetBytes(task)
				b.ReportAllocs()
				so, do := 0, 0
				for b.Loop() {
					bc.f(dst[do:do+task], src[so:so+task], ts, 5)
					so, do = (so+task)%bundle, (do+task)%ring
				}
			})
		}
	}
}

// naiveCopyAdd is CopyAdd's oracle: tuple by tuple, word by word.
func naiveCopyAdd(dst, src []byte, delta []int64) {
	ts := len(delta) * 8
	for t := 0; t+ts <= len(src); t += ts {
		copy(dst[t:t+ts], src[t:t+ts])
		for w, d := range delta {
			v := int64(binary.LittleEndian.Uint64(dst[t+8*w:])) + d
			binary.LittleEndian.PutUint64(dst[t+8*w:], uint64(v))
		}
	}
}

// TestCopyAdd checks CopyAdd (the assembly where the CPU has AVX2) and
// copyAddPieces against the naive loop: every tuple size from 8 to 136
// bytes (each mix of 32-, 16- and 8-byte steps) and Nexmark's, deltas
// mostly zero or all set, that wrap, unaligned buffers, a ragged tail
// that is not copied, and no write past the copy.
func TestCopyAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	values := []int64{1, -1, 86_400_000, math.MaxInt64, math.MinInt64}
	sizes := []int{80, 104, 112, 256}
	for ts := 8; ts <= 136; ts += 8 {
		sizes = append(sizes, ts)
	}
	impls := []struct {
		name string
		f    func(dst, src []byte, delta []int64)
	}{{"CopyAdd", CopyAdd}, {"pieces", func(dst, src []byte, delta []int64) {
		ts := len(delta) * 8
		copyAddPieces(dst, src[:len(src)/ts*ts], delta) // called with whole tuples only
	}}}
	for _, impl := range impls {
		for _, ts := range sizes {
			piece := max(CopyPiece/ts, 1)
			for _, n := range []int{0, 1, 2, 3, 5, piece - 1, piece + 1, 2*piece + 3} {
				for _, dense := range []bool{false, true} {
					delta := make([]int64, ts/8)
					for w := range delta {
						if dense || rng.IntN(4) == 0 {
							delta[w] = values[rng.IntN(len(values))]
						}
					}
					src, got, want, skew := copyBuffers(rng, n, ts)
					impl.f(got, src, delta)
					naiveCopyAdd(want, src, delta)
					require.Equal(t, want, got, "%s: %d-byte tuples: %d, deltas %v, skew %d", impl.name, ts, n, delta, skew)
				}
			}
		}
	}
	assert.Panics(t, func() { CopyAdd(make([]byte, 4*80-1), make([]byte, 4*80), make([]int64, 10)) }, "dst too short")
	assert.Panics(t, func() { CopyAdd(make([]byte, 80), make([]byte, 80), nil) }, "no deltas")
}
