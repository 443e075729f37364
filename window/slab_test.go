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
	large := slabBlockMax / 4 / int(unsafe.Sizeof(zero))
	var got [][]T
	for i := range 300 {
		c := 1 + rng.IntN(20000)
		switch rng.IntN(40) {
		case 0:
			c = large + 1 + rng.IntN(1000) // made apart
		case 1:
			c = large - rng.IntN(large/2) // more than a first block
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
	assert.LessOrEqual(t, s.size, slabBlockMax)
}

func TestSlabArraysAreZeroedAndApart(t *testing.T) {
	t.Parallel()
	for seed := range uint64(4) {
		checkSlab[int64](t, seed)
		checkSlab[int32](t, seed)
	}
}

// TestSlabBlocksDouble checks the blocks' sizes: from slabBlockFirst,
// doubling up to slabBlockMax, so that a small query's state takes little
// memory and a large one's few blocks.
func TestSlabBlocksDouble(t *testing.T) {
	t.Parallel()
	var s slab[int64]
	var sizes []int
	for range 20000 {
		before := s.size
		s.take(1000, 1000)
		if s.size != before || len(sizes) == 0 {
			sizes = append(sizes, s.size)
		}
	}
	assert.Equal(t, slabBlockFirst, sizes[0])
	for i := 1; i < len(sizes); i++ {
		assert.Equal(t, min(slabBlockMax, 2*sizes[i-1]), sizes[i], "block %d", i)
	}
	assert.Equal(t, slabBlockMax, sizes[len(sizes)-1])
}

// TestSlabTakeAllocs: an array carved from a block costs no allocation;
// only a new block does.
func TestSlabTakeAllocs(t *testing.T) {
	var s slab[int64]
	s.take(1, 1)
	allocs := testing.AllocsPerRun(1000, func() { s.take(512, 512) })
	// 1000 arrays of 4 KiB: a block per 2,048 of them at the largest.
	assert.LessOrEqual(t, allocs, 0.01)
}
