package source

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// scanIntReference is scanInt's oracle: the longest prefix of a sign and
// digits, parsed by strconv; (0, 0) where there is no digit, more than 19
// digits, or the value does not fit an int64.
func scanIntReference(s []byte) (int64, int) {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == start || i-start > 19 {
		return 0, 0
	}
	v, err := strconv.ParseInt(string(s[:i]), 10, 64)
	if err != nil {
		return 0, 0
	}
	return v, i
}

// TestScanIntMatchesReference: scanInt equals the oracle on numbers of
// every length from 0 to 22 digits, signs, leading zeros, the limits, followed by the bytes that
// end fields (',', '"', '}', '\n', a space, a letter, '/' and ':' either
// side of the digits) or by more digits, or by nothing.
func TestScanIntMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	enders := []string{"", ",", ",7,8", "\"", "}", "\n12", " ", "a", "/", ":", "\xff", "\x00", "0123456789"}
	var cases []string
	for n := 0; n <= 22; n++ {
		for range 40 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte('0' + r.IntN(10))
			}
			cases = append(cases, string(b))
		}
	}
	cases = append(cases, "9223372036854775807", "9223372036854775808", "0000000000000000009", "00000000000000000000",
		"1700000000000", "99999999", "100000000", "18446744073709551615", "18446744073709551616")
	for _, c := range cases {
		for _, sign := range []string{"", "-", "+"} {
			for _, end := range enders {
				s := []byte(sign + c + end)
				v, n := scanInt(s)
				wv, wn := scanIntReference(s)
				if !assert.Equal(t, [2]int64{wv, int64(wn)}, [2]int64{v, int64(n)}, "%q", s) {
					return
				}
			}
		}
	}
}

func FuzzScanInt(f *testing.F) {
	for _, s := range []string{"0", "-1", "+12345678", "1700000000000,5", "123456789012345678901", "-9223372036854775808x", "12:30", "9/"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		v, n := scanInt(s)
		wv, wn := scanIntReference(s)
		if v != wv || n != wn {
			t.Fatalf("scanInt(%q) = %d, %d; want %d, %d", s, v, n, wv, wn)
		}
	})
}
