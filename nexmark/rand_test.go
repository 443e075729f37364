package nexmark

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The table-and-polynomial price is Java's round(10^(6u) * 100).
func TestPriceMatchesPow(t *testing.T) {
	r := rng{s: 1}
	mismatches := 0
	for range 1000000 {
		s := r.s
		got := r.price()
		r2 := rng{s: s}
		u := r2.float64()
		want := int64(math.Floor(math.Pow(10, u*6)*100 + 0.5))
		if got != want {
			mismatches++
			assert.InDelta(t, want, got, 1)
		}
	}
	assert.LessOrEqual(t, mismatches, 3)
	// The ends: u = 0 is $1; u just below 1 is $1,000,000.
	assert.Equal(t, int64(100), priceOf(0))
	assert.Equal(t, int64(100000000), priceOf(1<<53-1))
	assert.Equal(t, int64(1000), priceOf(1<<53/6))
}

func TestIntn(t *testing.T) {
	r := rng{s: 99}
	var counts [7]int
	for range 700000 {
		counts[r.intn(7)]++
	}
	for _, c := range counts {
		assert.InDelta(t, 100000, c, 1500)
	}
}

// Random strings: lengths uniform over [3, max), one character in 13 the
// special one, the letters uniform.
func TestRandomStrings(t *testing.T) {
	r := rng{s: 5}
	lengths := map[int]int{}
	var letters [26]int
	special, chars := 0, 0
	var buf []byte
	const n = 200000
	for range n {
		buf = appendRandomString(buf[:0], &r, 7, '_')
		lengths[len(buf)]++
		for _, c := range buf {
			chars++
			if c == '_' {
				special++
			} else {
				letters[c-'a']++
			}
		}
	}
	assert.Len(t, lengths, 4)
	for l := 3; l < 7; l++ {
		assert.InDelta(t, n/4, lengths[l], n/100, "length %d", l)
	}
	assert.InDelta(t, 1.0/13, float64(special)/float64(chars), 0.002)
	for i, c := range letters {
		assert.InDelta(t, 12.0/13/26, float64(c)/float64(chars), 0.001, "letter %c", 'a'+i)
	}
	// A space special is trimmed from the ends, kept inside.
	inner := 0
	for range 100000 {
		buf = appendRandomString(buf[:0], &r, 20, ' ')
		if len(buf) > 0 {
			assert.NotEqual(t, byte(' '), buf[0])
			assert.NotEqual(t, byte(' '), buf[len(buf)-1])
		}
		for _, c := range buf {
			if c == ' ' {
				inner++
			}
		}
	}
	assert.Greater(t, inner, 0)
}
