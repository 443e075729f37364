package source

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestParseDecimalMatchesStrconv: the fast path gives strconv's float64
// (sign of zero included) wherever it answers, and answers the usual
// decimal texts.
func TestParseDecimalMatchesStrconv(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := "0123456789.-+e_x "
	check := func(s string) {
		got, ok := parseDecimal([]byte(s))
		want, err := strconv.ParseFloat(s, 64)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("%q: fast path %v, strconv refuses: %v", s, got, err)
		}
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q: fast path %v (%x), strconv %v (%x)", s, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
	for range 200000 {
		b := make([]byte, 1+r.IntN(18))
		for i := range b {
			if r.IntN(4) == 0 {
				b[i] = alphabet[r.IntN(len(alphabet))]
			} else {
				b[i] = '0' + byte(r.IntN(10))
			}
		}
		check(string(b))
		// Decimal texts as records hold them, every length of fraction.
		f := (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(12)))
		check(strconv.FormatFloat(f, 'f', r.IntN(8), 64))
	}
	for _, s := range []string{"0", "-0", "+0", "0.0", "-0.000", "5.", ".5", "-.5", "123456789012345", "0.000000000000001", "999999999999999.9"} {
		check(s)
	}
	for _, s := range []string{"", "-", ".", "+.", "1e5", "1.2.3", "1234567890123456", "0x10", "1_000", "NaN", "inf"} {
		if _, ok := parseDecimal([]byte(s)); ok && s != "" {
			if _, err := strconv.ParseFloat(s, 64); err != nil {
				t.Errorf("%q: fast path accepts what strconv refuses", s)
			}
		}
	}
	for _, s := range []string{"12.5", "-3", "0.25", "100000"} {
		if _, ok := parseDecimal([]byte(s)); !ok {
			t.Errorf("%q: not taken by the fast path", s)
		}
	}
}

// checkJSONDecimal: where jsonDecimal answers, it takes the JSON number
// scanNumber takes and gives strconv's float64 of it, bit for bit.
func checkJSONDecimal(t *testing.T, s []byte) bool {
	v, n := jsonDecimal(s)
	if n == 0 {
		return false
	}
	end, ok := scanNumber(s, 0)
	if !ok || end != n {
		t.Fatalf("%q: jsonDecimal took %d bytes, scanNumber %d (ok %v)", s, n, end, ok)
	}
	want, err := strconv.ParseFloat(string(s[:n]), 64)
	if err != nil || math.Float64bits(v) != math.Float64bits(want) {
		t.Fatalf("%q: jsonDecimal %v (%x), strconv %v (%x, %v)", s, v, math.Float64bits(v), want, math.Float64bits(want), err)
	}
	return true
}

// TestJSONDecimal: jsonDecimal against scanNumber and strconv on random
// texts of digits, signs, points and exponents, and on the usual values,
// which it must answer.
func TestJSONDecimal(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	alphabet := "0123456789.-+eE, }"
	for range 200000 {
		b := make([]byte, 1+r.IntN(20))
		for i := range b {
			if r.IntN(3) == 0 {
				b[i] = alphabet[r.IntN(len(alphabet))]
			} else {
				b[i] = '0' + byte(r.IntN(10))
			}
		}
		checkJSONDecimal(t, b)
	}
	for _, s := range []string{"0", "-0", "0.5", "-0.25", "12.34", "99.99,", "123456789012345}", "1.00000000000001 "} {
		if !checkJSONDecimal(t, []byte(s)) {
			t.Errorf("%q: not taken", s)
		}
	}
	for _, s := range []string{"", "-", "+1", "01", "-01.5", "1.", "1.e5", "1e5", "1.5E3", ".5", "1234567890123456", "0.1234567890123456"} {
		if _, n := jsonDecimal([]byte(s)); n != 0 {
			t.Errorf("%q: took %d bytes, want none", s, n)
		}
	}
}

func FuzzJSONDecimal(f *testing.F) {
	for _, s := range []string{"0", "-0.5", "12.34,", "01", "1e5", "1.", "123456789012345.6"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) { checkJSONDecimal(t, s) })
}
