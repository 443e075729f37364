package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// TestRankIndexMatchesCompare: for every operator, the positions the rank
// bitmaps select, and the pairs the mask emitters write, are those of the
// per-pair comparison (cmpFirst, and emitPairs, the emitter of any size:
// the emitters for the tuple size, assembly or generic, must write what it
// writes), over random right sides (few
// distinct values, extremes, sizes across word boundaries; value spans
// for each of the sorts: none, radix in one pass and two, pdqsort) and left values
// below, between, on and above them.
func TestRankIndexMatchesCompare(t *testing.T) {
	ops := []query.CmpOp{query.Eq, query.Ne, query.Lt, query.Le, query.Gt, query.Ge}
	for seed := range 40 {
		r := rand.New(rand.NewPCG(uint64(seed), 31))
		nr := []int{0, 1, 63, 64, 65, 128, 200}[seed%7]
		spread := []int64{1, 3, 50, 5000, 1 << 20, 1 << 62}[seed%6]
		g := rankValues(r, nr, spread, seed%2 == 0) // extremes in even seeds only
		var x rankIndex
		x.build(g)
		lefts := rankLefts(r, g, spread, 20)
		for _, ts := range []int{8, 32, 12} {
			right := make([]byte, nr*ts)
			for i := range right {
				right[i] = byte(r.Uint32())
			}
			lt := make([]byte, ts)
			binary.LittleEndian.PutUint64(lt, r.Uint64())
			emit, emitMask := emitterFor(ts, ts), maskEmitterFor(ts, ts)
			for _, op := range ops {
				for _, a := range lefts {
					name := fmt.Sprintf("seed %d: %d %v g (%d values, %d-byte tuples)", seed, a, op, nr, ts)
					want := cmpFirst(op, a, g, make([]int32, nr))
					from, minus, all := x.bitmaps(x.ranks(op, a))
					got := selectRanks(from, minus, all, make([]int32, nr))
					require.Equal(t, want, got, name)
					prefix := []byte("kept")
					pairs := emitPairs(append([]byte(nil), prefix...), lt, right, ts, want)
					assert.Equal(t, pairs, emit(append([]byte(nil), prefix...), lt, right, ts, want), name)
					assert.Equal(t, pairs, emitMask(append([]byte(nil), prefix...), lt, right, ts, from, minus, all), name)
				}
			}
		}
	}
}

// TestRadixSortHighSorts: for every value width it takes, and lengths
// from none to several hundred, radixSortHigh sorts the keys by their
// high 32 bits, stably (the low bits, the positions, ascending among
// equal values), as slices.Sort does the packed keys.
func TestRadixSortHighSorts(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for width := 0; width <= radixMaxBits; width++ {
		for _, n := range []int{0, 1, 2, 63, 128, 777} {
			keys := make([]uint64, n)
			for j := range keys {
				v := uint64(0)
				if width > 0 {
					v = r.Uint64N(1 << width)
				}
				keys[j] = v<<32 | uint64(j)
			}
			want := slices.Clone(keys)
			slices.Sort(want)
			got := radixSortHigh(slices.Clone(keys), make([]uint64, n), width)
			require.Len(t, got, n)
			if n > 0 {
				assert.Equal(t, want, got, "width %d, %d keys", width, n)
			}
		}
	}
}

// BenchmarkRankIndexBuild: ranking one JOIN_1 window's right side (128
// values in [0, 1000)): the sort and the suffix bitmaps.
func BenchmarkRankIndexBuild(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	g := make([]int64, 128)
	for j := range g {
		g[j] = r.Int64N(1000)
	}
	var x rankIndex
	x.build(g)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		x.build(g)
	}
}

// TestRankEqualMatchesCompare: the positions equal finds after rankOnly
// are cmpFirst's for equality, in the same order, over right sides of
// every size around eqMinRight and past rankMaxRight, with few and many
// distinct values, spans for each sort (radix, pdqsort, and past the
// packed keys' 32 bits), and left values on, between and beyond them.
func TestRankEqualMatchesCompare(t *testing.T) {
	for seed := range 30 {
		r := rand.New(rand.NewPCG(uint64(seed), 41))
		nr := []int{0, 1, 63, 64, 65, 1100, 3000}[seed%7]
		spread := []int64{1, 3, 50, 5000, 1 << 20, 1 << 40, 1 << 62}[(seed+seed/7)%7]
		g := rankValues(r, nr, spread, true)
		var x rankIndex
		x.rankOnly(g)
		lefts := rankLefts(r, g, spread, 30)
		sel := make([]int32, nr)
		for _, v := range lefts {
			want := slices.Clone(cmpFirst(query.Eq, v, g, make([]int32, nr)))
			assert.Equal(t, want, x.equal(v, sel[:0]), "seed %d: %d in %d values", seed, v, nr)
		}
	}
}

// rankValues is nr right-side values spread over [-spread/2, spread/2),
// one in ten an extreme (math.MinInt64 or math.MaxInt64) where extremes.
func rankValues(r *rand.Rand, nr int, spread int64, extremes bool) []int64 {
	g := make([]int64, nr)
	for j := range g {
		k := r.IntN(20)
		switch {
		case extremes && k == 0:
			g[j] = math.MinInt64
		case extremes && k == 1:
			g[j] = math.MaxInt64
		default:
			g[j] = r.Int64N(spread) - spread/2
		}
	}
	return g
}

// rankLefts is left values for the right side g: the extremes, around 0,
// and n more, half of them values of g, half anywhere in its spread.
func rankLefts(r *rand.Rand, g []int64, spread int64, n int) []int64 {
	lefts := []int64{math.MinInt64, math.MaxInt64, 0, -1, 1}
	for range n {
		if len(g) > 0 && r.IntN(2) == 0 {
			lefts = append(lefts, g[r.IntN(len(g))])
		} else {
			lefts = append(lefts, r.Int64N(spread+2)-spread/2-1)
		}
	}
	return lefts
}
