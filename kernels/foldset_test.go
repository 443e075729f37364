package kernels

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// foldOracle is the index of the first literal that x, its case mapped in
// full, is: what LOWER(x) IN (lits) (UPPER) means.
func foldOracle(x []byte, lits [][]byte, upper bool) int {
	m := mapCase(nil, x, upper)
	return slices.IndexFunc(lits, func(c []byte) bool { return bytes.Equal(m, c) })
}

// TestFoldSetMatchesMapping: foldSet's index is the full case mapping's,
// for strings of every length up to and past 16 bytes over the bytes
// either side of 'A'..'Z' and 'a'..'z', digits, and non-ASCII characters
// (whose other case is another length, or ASCII), against literals of
// both cases, of the same and other lengths.
func TestFoldSetMatchesMapping(t *testing.T) {
	alphabet := [][]byte{{'@'}, {'A'}, {'M'}, {'Z'}, {'['}, {'`'}, {'a'}, {'m'}, {'z'}, {'{'}, {'0'}, {'-'}, {0}, {0x7f},
		[]byte("é"), []byte("É"), []byte("\u212a"), []byte("İ"), []byte("ǅ")}
	r := rand.New(rand.NewPCG(3, 33))
	word := func() []byte {
		var b []byte
		for n := r.IntN(21); n > 0; n-- {
			b = append(b, alphabet[r.IntN(len(alphabet))]...)
		}
		return b
	}
	for range 3000 {
		var lits [][]byte
		for n := 1 + r.IntN(5); n > 0; n-- {
			lits = append(lits, word())
		}
		for _, upper := range []bool{false, true} {
			set := newFoldSet(lits, upper)
			var sc rowScratch
			for range 20 {
				x := word()
				if r.IntN(3) == 0 {
					// a literal with its case changed: a match where the
					// mapping gives the literal back
					x = mapCase(nil, lits[r.IntN(len(lits))], !upper)
				}
				assert.Equal(t, foldOracle(x, lits, upper), set.index(x, &sc), "%q in %q upper=%v", x, lits, upper)
			}
		}
	}
	for b := range 256 {
		for _, upper := range []bool{false, true} {
			x := []byte{byte(b)}
			lits := [][]byte{mapCase(nil, x, upper), {'a'}, {'A'}}
			assert.Equal(t, foldOracle(x, lits, upper), newFoldSet(lits, upper).index(x, &rowScratch{}), "byte %#x upper=%v", b, upper)
		}
	}
}

func FuzzFoldSet(f *testing.F) {
	f.Add([]byte("Facebook"), []byte("facebook"), []byte("baidu"), false)
	f.Add([]byte("CHANNEL-1234"), []byte("channel-1234"), []byte("É"), true)
	f.Fuzz(func(t *testing.T, x, a, b []byte, upper bool) {
		lits := [][]byte{a, b}
		assert.Equal(t, foldOracle(x, lits, upper), newFoldSet(lits, upper).index(x, &rowScratch{}))
	})
}
