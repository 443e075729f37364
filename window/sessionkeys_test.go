package window

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSessionKeysMatchMap: random puts, gets and removes, over keys that
// share their probes (a small table, many keys), give a Go map's answers.
func TestSessionKeysMatchMap(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 66))
	var tab sessionKeys
	want := map[[16]byte]*sessionList{}
	key := func() [16]byte {
		var k [16]byte
		k[0], k[15] = byte(r.IntN(40)), byte(r.IntN(3))
		return k
	}
	for i := range 100000 {
		k := key()
		switch _, in := want[k]; {
		case in && r.IntN(2) == 0:
			tab.remove(k)
			delete(want, k)
		case !in:
			l := &sessionList{}
			tab.put(k, l)
			want[k] = l
		}
		q := key()
		require.Same(t, want[q], tab.get(q), "op %d: key %v", i, q)
		require.Equal(t, len(want), tab.n, "op %d", i)
	}
	for k, l := range want {
		assert.Same(t, l, tab.get(k))
	}
}
