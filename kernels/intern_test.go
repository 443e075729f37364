package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInternCache: kernels' caches over one dictionary give every string
// one number, the dictionary's, whatever the order they meet the strings
// in and however many (the tables grow), the empty string and strings
// that differ in one byte or share a prefix included.
func TestInternCache(t *testing.T) {
	d := newStrings()
	caches := []*internCache{newInternCache(d), newInternCache(d), newInternCache(d)}
	r := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "a", "b", "ab", "ba", "a\x00", "\x00a"}
	for i := range 3000 {
		strs = append(strs, fmt.Sprintf("customer-%d-%s", i, string(rune('a'+r.IntN(26)))))
	}
	want := map[string]int64{}
	for round := range 4 {
		for _, i := range r.Perm(len(strs)) {
			s := strs[i]
			c := caches[r.IntN(len(caches))]
			id := c.id([]byte(s))
			require.Positive(t, id, "round %d %q", round, s)
			if w, ok := want[s]; ok {
				require.Equal(t, w, id, "round %d %q", round, s)
			} else {
				want[s] = id
			}
			assert.Equal(t, s, string(d.String(id)))
		}
	}
	assert.Equal(t, len(strs), d.Len())
	for _, c := range caches {
		assert.LessOrEqual(t, 2*c.n, len(c.slots), "at most half full")
	}
	// A hit allocates nothing and takes no lock.
	c := caches[0]
	for _, s := range strs {
		c.id([]byte(s))
	}
	b := []byte(strs[100])
	assert.Zero(t, testing.AllocsPerRun(100, func() { c.id(b) }))
}
