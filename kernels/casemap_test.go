package kernels

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// TestMapCaseAsJava: UPPER and LOWER as Java's String.toUpperCase and
// toLowerCase (Locale.ROOT, OpenJDK 17 and 25) map these strings: the full
// case mapping, not each character's simple other case.
func TestMapCaseAsJava(t *testing.T) {
	for _, c := range []struct{ in, upper, lower string }{
		{"straße", "STRASSE", "straße"},
		{"ΟΔΟΣ", "ΟΔΟΣ", "οδος"},
		{"ΟΔΟΣ ΟΔΟΣ. ΣΑ Σ", "ΟΔΟΣ ΟΔΟΣ. ΣΑ Σ", "οδος οδος. σα σ"},
		{"ὈΔΥΣΣΕΎΣ", "ὈΔΥΣΣΕΎΣ", "ὀδυσσεύς"},
		{"ΑΣ'Α ΑΣ' Α'Σ", "ΑΣ'Α ΑΣ' Α'Σ", "ασ'α ας' α'ς"},
		{"ﬁ ﬂ ﬃ ﬆ", "FI FL FFI ST", "ﬁ ﬂ ﬃ ﬆ"},
		{"\u0149 \u01f0 \u0390 \u1fb3 \u1fb7 \u0587", "\u02bcN J\u030c \u0399\u0308\u0301 \u0391\u0399 \u0391\u0342\u0399 \u0535\u0552", "\u0149 \u01f0 \u0390 \u1fb3 \u1fb7 \u0587"}, // ŉ ǰ ΐ ᾳ ᾷ և
		{"İstanbul", "İSTANBUL", "i̇stanbul"},
		{"ǅ ǈ ǋ", "Ǆ Ǉ Ǌ", "ǆ ǉ ǌ"},
		{"\u212a \u212b \u1e9e", "\u212a \u212b \u1e9e", "k å ß"}, // Kelvin, Ångström signs, capital ß
		{"Hello, World!", "HELLO, WORLD!", "hello, world!"},
		{"", "", ""},
	} {
		assert.Equal(t, c.upper, string(mapCase(nil, []byte(c.in), true)), "UPPER(%q)", c.in)
		assert.Equal(t, c.lower, string(mapCase(nil, []byte(c.in), false)), "LOWER(%q)", c.in)
	}
	// An invalid byte is U+FFFD, each one.
	assert.Equal(t, "A\uFFFD\uFFFDB", string(mapCase(nil, []byte("a\xff\xc3B"), true)))
}

// oracleCase is UPPER(s) or LOWER(s) as the reference evaluates it.
func oracleCase(t *testing.T, s string, upper bool) string {
	fn := "lower"
	if upper {
		fn = "upper"
	}
	v, err := reference.Eval(query.Call{Fn: fn, Args: []query.Expr{query.Str(s)}}, &query.Schema{}, nil)
	require.NoError(t, err)
	return v.Str
}

// TestMapCaseMatchesReference: the engine's case mapping is the
// reference's (golang.org/x/text/cases) for every character, for Σ after
// and before every character (which decides whether it is final), and
// for random strings of the characters where mappings differ in length
// or depend on context.
func TestMapCaseMatchesReference(t *testing.T) {
	check := func(s string) {
		t.Helper()
		for _, upper := range []bool{true, false} {
			want := oracleCase(t, s, upper)
			if got := string(mapCase(nil, []byte(s), upper)); got != want {
				t.Fatalf("upper %v of %+q: engine %+q, reference %+q", upper, s, got, want)
			}
		}
	}
	// Every character that has another case or may decide a Σ's (the
	// cased and the case-ignorable), and every 64th (every one in the long
	// run) of the others.
	every := rune(testenv.Scale(64, 1))
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		if unicode.SimpleFold(r) == r && !unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Lm, unicode.Mn,
			unicode.Me, unicode.Cf, unicode.Sk, unicode.Other_Lowercase, unicode.Other_Uppercase, unicode.Po) && r%every != 0 {
			continue
		}
		x := string(r)
		check(x)
		// Final_Sigma: whether x is cased, case-ignorable or neither.
		check("Α" + x + "Σ")
		check("ΑΣ" + x + "Α")
		check("ΑΣ" + x)
		check(x + "Σ")
	}
	alphabet := []string{"Σ", "Σ", "Α", "a", "Z", "ß", "ﬁ", "ΐ", "İ", "ǅ", "1", " ", ".", "'", "_", ":",
		"\u0301", "\u0345", "ʰ", "ª", "\u00ad", "·", "\xff", "\xe2\x82", "é", "😀", "𐐀"}
	r := rand.New(rand.NewPCG(7, 11))
	for range testenv.Scale(20000, 200000) {
		var b strings.Builder
		for n := r.IntN(12); n > 0; n-- {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		check(b.String())
	}
}

// TestFoldedCompareFullMapping: LOWER(x) = 'lit' and UPPER(x) IN (...)
// compare x's full case mapping, another length than x.
func TestFoldedCompareFullMapping(t *testing.T) {
	var sc rowScratch
	up := newFoldSet([][]byte{[]byte("STRASSE"), []byte("FI")}, true)
	assert.Equal(t, 0, up.index([]byte("straße"), &sc))
	assert.Equal(t, 1, up.index([]byte("ﬁ"), &sc))
	assert.Equal(t, 0, up.index([]byte("STRAßE"), &sc))
	assert.Equal(t, -1, up.index([]byte("STRA\u1e9eE"), &sc)) // capital ß is its own upper case
	low := newFoldSet([][]byte{[]byte("οδοσ"), []byte("οδος"), []byte("i\u0307")}, false)
	assert.Equal(t, 1, low.index([]byte("ΟΔΟΣ"), &sc))
	assert.Equal(t, 2, low.index([]byte("İ"), &sc))
}

// BenchmarkMapCase: UPPER and LOWER of a short ASCII string (the fast
// path: byte for byte) and of a non-ASCII one.
func BenchmarkMapCase(b *testing.B) {
	for _, c := range []struct{ name, s string }{
		{"ascii", "Hello, World! facebook/GOOGLE/apple"},
		{"latin", "Ça va, straße? Élégant café, ÑANDÚ"},
		{"greek", "ΟΔΥΣΣΕΥΣ ΚΑΙ ΠΗΝΕΛΟΠΗ ΣΤΗΝ ΙΘΑΚΗ"},
	} {
		for _, upper := range []bool{true, false} {
			name := c.name + "/lower"
			if upper {
				name = c.name + "/upper"
			}
			b.Run(name, func(b *testing.B) {
				in := []byte(c.s)
				dst := make([]byte, 0, 4*len(in))
				b.SetBytes(int64(len(in)))
				b.ReportAllocs()
				for b.Loop() {
					dst = mapCase(dst[:0], in, upper)
				}
			})
		}
	}
}

// TestUpperSpecialsTable: the table is in order, and upperSpecial finds
// every entry (its shortcut below U+1E96 names them all).
func TestUpperSpecialsTable(t *testing.T) {
	for i, e := range upperSpecials {
		if i > 0 {
			require.Less(t, upperSpecials[i-1].r, e.r)
		}
		s, ok := upperSpecial(e.r)
		require.True(t, ok, "%U", e.r)
		require.Equal(t, e.s, s)
		_, ok = upperSpecial(e.r + 1)
		require.Equal(t, i+1 < len(upperSpecials) && upperSpecials[i+1].r == e.r+1, ok, "%U", e.r+1)
	}
}
