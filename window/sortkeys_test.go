package window

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// randomKeys returns n groups' key words (two per ordinal) drawn by shape:
// small integers, full-width words, a shared first word with second words
// that differ, and first words with few distinct values.
func randomKeys(r *rand.Rand, n, shape int) []uint64 {
	keys := make([]uint64, 2*n)
	for g := range n {
		switch shape {
		case 0:
			keys[2*g] = uint64(r.IntN(5000))
		case 1:
			keys[2*g], keys[2*g+1] = r.Uint64(), r.Uint64()
		case 2:
			keys[2*g], keys[2*g+1] = 1<<40, uint64(r.IntN(1<<20))<<20
		default:
			keys[2*g], keys[2*g+1] = uint64(r.IntN(4))<<56|7, uint64(r.IntN(300))
		}
	}
	return keys
}

// TestSortByKeysMatchesComparisonSort: the radix sort orders ordinals as a
// stable comparison sort by both key words does, over random key shapes
// and sizes, its buffer reused from call to call.
func TestSortByKeysMatchesComparisonSort(t *testing.T) {
	t.Parallel()
	var buf []keyRef
	for seed := range 40 {
		r := rand.New(rand.NewPCG(uint64(seed), 5))
		n := r.IntN(3000)
		keys := randomKeys(r, n, seed%4)
		touched := make([]int32, n)
		for i := range touched {
			touched[i] = int32(i)
		}
		r.Shuffle(n, func(i, j int) { touched[i], touched[j] = touched[j], touched[i] })
		touched = touched[:r.IntN(n+1)]
		want := slices.Clone(touched)
		slices.SortStableFunc(want, func(a, b int32) int {
			if c := cmp.Compare(keys[2*a], keys[2*b]); c != 0 {
				return c
			}
			return cmp.Compare(keys[2*a+1], keys[2*b+1])
		})
		buf = sortByKeys(touched, keys, buf)
		require.Equal(t, want, touched, "seed %d, %d groups", seed, len(touched))
	}
}

// TestSortTouchedHashedRadix: a hashed state's SortTouched, with groups
// enough for the radix sort, lists them in key order.
func TestSortTouchedHashedRadix(t *testing.T) {
	t.Parallel()
	l := &Layout{Hashed: true, Groups: 4096, Kinds: []AggKind{AggAdd}}
	g := NewGroupState(l)
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		s := g.Lookup(uint64(r.IntN(100000)), uint64(r.IntN(3)))
		g.Vals[int(s)*g.words]++ // counted, as a kernel does before the next Lookup
	}
	require.Greater(t, len(g.Touched), radixMinGroups)
	g.SortTouched()
	for i := 1; i < len(g.Touched); i++ {
		assert.Negative(t, g.compareKeys(g.Touched[i-1], g.Touched[i]), "groups %d and %d", i-1, i)
	}
}

// BenchmarkSortTouched: a window's groups put in key order, comparison
// sort against the radix sort.
func BenchmarkSortTouched(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		r := rand.New(rand.NewPCG(3, 4))
		keys := randomKeys(r, n, 0)
		touched := make([]int32, n)
		for i := range touched {
			touched[i] = int32(i)
		}
		r.Shuffle(n, func(i, j int) { touched[i], touched[j] = touched[j], touched[i] })
		work := make([]int32, n)
		g := &GroupState{Keys: keys}
		b.Run(fmt.Sprintf("compare/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				copy(work, touched)
				slices.SortFunc(work, g.compareKeys)
			}
		})
		b.Run(fmt.Sprintf("radix/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var buf []keyRef
			for b.Loop() {
				copy(work, touched)
				buf = sortByKeys(work, keys, buf)
			}
		})
	}
}
