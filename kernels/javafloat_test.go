package kernels

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/saber-hx/saber-hx/reference"
)

var javaFloatSeeds = []string{
	"1.5", "-2", " 1.5\t", "1e400", "-1e-400", "1e39", "NaN", "-Infinity", "inf", "1.5d", "2F", "0x1p3",
	"0X1.8P1d", "0x.8p1", "0x10", "1_000", "1e", ".", "1.", ".5", "- 2", "", "1e5 x",
	"1.0000000596046447753906251", "3.4028235677973366e38", "0x1.000001p0", "1.4e-45", "7e-46",
}

// TestParseJavaFloat: the decoder of CAST(string AS DOUBLE) and AS REAL
// against the reference's (reference.ParseJavaFloat: Java's grammar as a
// regular expression, strconv for the number), both widths; REAL's value
// is the text rounded to a float32 once (1.0000000596046447753906251,
// just above the tie of 1 and 1+2^-23, rounds up; through its double,
// the tie, it rounded to 1).
func TestParseJavaFloat(t *testing.T) {
	for _, s := range javaFloatSeeds {
		for _, bits := range []int{32, 64} {
			checkJavaFloat(t, s, bits)
		}
	}
	// the largest float32 once; through its double, the tie with the
	// next power of two, +Inf
	f, ok := parseJavaFloat([]byte("3.4028235677973366e38"), 32)
	assert.True(t, ok)
	assert.Equal(t, float64(math.MaxFloat32), f)
	f, ok = parseJavaFloat([]byte("1.0000000596046447753906251"), 32)
	assert.True(t, ok)
	assert.Equal(t, float64(math.Nextafter32(1, 2)), f)
}

func checkJavaFloat(t *testing.T, s string, bits int) {
	t.Helper()
	want, wok := reference.ParseJavaFloat(s, bits)
	got, ok := parseJavaFloat([]byte(s), bits)
	if ok != wok || ok && math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
		t.Errorf("parseJavaFloat(%q, %d) = %v, %v; want %v, %v", s, bits, got, ok, want, wok)
	}
}

func FuzzParseJavaFloat(f *testing.F) {
	for _, s := range javaFloatSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkJavaFloat(t, s, 32)
		checkJavaFloat(t, s, 64)
	})
}
