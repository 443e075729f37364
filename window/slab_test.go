package window

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkSlab takes arrays of random sizes from a slab (small ones, carved
// from its blocks, and some larger than a block's quarter, made apart),
// checks that each is zeroed and sized as asked, writes each with a mark
// of its own, and checks at the end that no array wrote over another.
func checkSlab[T int32 | int64](t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var s slab[T]
	var zero T
	large := slabBlock / 4 / int(unsafe.Sizeof(zero))
	var got [][]T
	for i := range 300 {
		c := 1 + rng.IntN(20000)
		switch rng.IntN(40) {
		case 0:
			c = large + 1 + rng.IntN(1000) // made apart
		case 1:
			c = large - rng.IntN(large/2) // a block's largest arrays
		}
		n := rng.IntN(c + 1)
		v := s.take(n, c)
		require.Len(t, v, n)
		require.Equal(t, c, cap(v))
		full := v[:c]
		for j, x := range full {
			if x != 0 {
				require.Zerof(t, x, "array %d of %d: word %d not zero", i, c, j)
			}
		}
		for j := range full {
			full[j] = T(i + 1)
		}
		got = append(got, full)
	}
	for i, v := range got {
		for j, x := range v {
			if x != T(i+1) {
				assert.Equalf(t, T(i+1), x, "array %d, word %d: written over", i, j)
				return
			}
		}
	}
}

func TestSlabArraysAreZeroedAndApart(t *testing.T) {
	t.Parallel()
	for seed := range uint64(4) {
		checkSlab[int64](t, seed)
		checkSlab[int32](t, seed)
	}
}

// TestSlabMakesBlocksForLargeStates: a slab makes its arrays one by one
// until it has handed out slabFrom bytes, so that a small query's state
// takes no more memory than it holds, and carves them from blocks after.
func TestSlabMakesBlocksForLargeStates(t *testing.T) {
	t.Parallel()
	var s slab[int64]
	const words = 1000
	for s.made+8*words <= slabFrom {
		s.take(words, words)
		require.Empty(t, s.block, "a block made after %d bytes", s.made)
	}
	s.take(words, words)
	assert.Len(t, s.block, slabBlock/8-words)
}

// TestSlabTakeAllocs: an array carved from a block costs no allocation;
// only a new block does.
func TestSlabTakeAllocs(t *testing.T) {
	s := slab[int64]{made: slabFrom}
	s.take(1, 1)
	allocs := testing.AllocsPerRun(1000, func() { s.take(512, 512) })
	// 1000 arrays of 4 KiB: a block per 2,048 of them.
	assert.LessOrEqual(t, allocs, 0.01)
}
