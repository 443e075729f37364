package window

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCloseHeapOrder: after random pushes, removals and sessions extended
// in place (fix), the heap gives up its sessions in close order (end,
// start, key), and every session's index is its place.
func TestCloseHeapOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 44))
	s := &Sessions{Gap: 10}
	for round := range 200 {
		c := closeHeap{s: s}
		var in []*session
		for range 1 + r.IntN(60) {
			switch op := r.IntN(4); {
			case op == 0 && len(in) > 0:
				i := r.IntN(len(in))
				c.remove(in[i].at)
				in = slices.Delete(in, i, i+1)
			case op == 1 && len(in) > 0:
				ss := in[r.IntN(len(in))]
				ss.last += r.Int64N(20)
				c.fix(ss.at)
			default:
				ss := &session{start: r.Int64N(50)}
				ss.last = ss.start + r.Int64N(30)
				ss.key[15] = byte(r.IntN(4))
				c.push(ss)
				in = append(in, ss)
			}
			for i, ss := range c.h {
				require.Equal(t, i, ss.at, "round %d", round)
			}
		}
		want := slices.Clone(in)
		slices.SortStableFunc(want, func(a, b *session) int {
			switch {
			case c.less(a, b):
				return -1
			case c.less(b, a):
				return 1
			}
			return 0
		})
		var got []*session
		for len(c.h) > 0 {
			got = append(got, c.h[0])
			c.remove(0)
		}
		require.Len(t, got, len(want))
		for i := range got {
			assert.False(t, c.less(got[i], want[i]) || c.less(want[i], got[i]), "round %d: place %d", round, i)
		}
	}
}
