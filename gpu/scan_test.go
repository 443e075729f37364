package gpu

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScanBlocks: emuScanBlocks (scan_blocks: runs of ceil(n/blockDim)
// words per thread around a block-wide scan) is the exclusive sum or max
// of the words before each, for grids smaller than the block, equal to
// it, and many times larger, sums that wrap and biased maxima.
func TestScanBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int64{0, 1, 2, 31, 255, 256, 257, 511, 512, 513, 1000, 4096, 5003, 70000} {
		for _, op := range []uint64{scanSum, scanMax} {
			v := make([]uint64, n+1)
			for i := range v {
				switch r.IntN(4) {
				case 0:
					v[i] = r.Uint64() // sums wrap
				case 1:
					v[i] = 0
				default:
					v[i] = uint64(r.IntN(257))
				}
			}
			want := make([]uint64, n)
			var acc uint64
			for i := range n {
				want[i] = acc
				if op == scanMax {
					acc = max(acc, v[i])
				} else {
					acc += v[i]
				}
			}
			past := v[n]
			emuScanBlocks(v, n, op)
			require.Equal(t, want, v[:n], "n %d, op %d", n, op)
			require.Equal(t, past, v[n], "n %d, op %d: the word past n", n, op)
		}
	}
}
