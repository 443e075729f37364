package cpu

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The claim tests use CPU numbers no machine here has, so that they cannot
// meet a claim of another test of this package; none runs in parallel.

func TestClaimFreeSkipsClaimedCPUs(t *testing.T) {
	order := []int{901, 903, 900, 902}
	a, err := ClaimFree(order, 1)
	require.NoError(t, err)
	assert.Equal(t, []int{901}, a.CPUs(), "the placement's first CPU")
	b, err := ClaimFree(order, 2)
	require.NoError(t, err)
	assert.Equal(t, []int{903, 900}, b.CPUs(), "the next free ones, in the placement's order")
	assert.Subset(t, Claimed(), []int{900, 901, 903})

	_, err = ClaimFree(order, 2)
	require.Error(t, err, "one CPU free for two workers")
	assert.Contains(t, err.Error(), "2 workers to pin, 1 of the 4 CPUs free")
	assert.Contains(t, err.Error(), "900-901,903")

	a.Release()
	a.Release() // a second release gives nothing back twice
	c, err := ClaimFree(order, 2)
	require.NoError(t, err)
	assert.Equal(t, []int{901, 902}, c.CPUs(), "the released CPU is free again")
	b.Release()
	c.Release()
	assert.NotContains(t, Claimed(), 900)
	assert.NotContains(t, Claimed(), 901)
}

func TestClaimFreeWrapsOnlyWhenNothingElseIsClaimed(t *testing.T) {
	order := []int{910, 911}
	a, err := ClaimFree(order, 5)
	require.NoError(t, err)
	assert.Equal(t, []int{910, 911, 910, 911, 910}, a.CPUs(), "more workers than CPUs share them in order")
	_, err = ClaimFree(order, 1)
	assert.Error(t, err, "every CPU held")
	a.Release()

	named := ClaimCPUs([]int{911, 911})
	b, err := ClaimFree(order, 1)
	require.NoError(t, err)
	assert.Equal(t, []int{910}, b.CPUs(), "a named CPU is avoided as a placed one")
	named.Release()
	b.Release()
	_, err = ClaimFree(nil, 1)
	assert.Error(t, err)
	_, err = ClaimFree(order, 0)
	assert.Error(t, err)
}

func TestClaimFreeAtOnceTakesDisjointCPUs(t *testing.T) {
	order := []int{920, 921, 922, 923, 924, 925, 926, 927}
	claims := make([]*Claim, len(order))
	var wg sync.WaitGroup
	for i := range claims {
		wg.Go(func() {
			c, err := ClaimFree(order, 1)
			assert.NoError(t, err)
			claims[i] = c
		})
	}
	wg.Wait()
	seen := map[int]bool{}
	for _, c := range claims {
		require.NotNil(t, c)
		cpus := c.CPUs()
		require.Len(t, cpus, 1)
		assert.False(t, seen[cpus[0]], "CPU %d claimed twice", cpus[0])
		seen[cpus[0]] = true
		c.Release()
	}
	assert.Len(t, seen, len(order))
}
