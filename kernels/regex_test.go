package kernels

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
)

// regexFast are patterns of the fast shape; regexSlow others, which go to
// Go's regexp (with the required-literal test where they need one).
var (
	regexFast = []string{
		`(&|^)channel_id=([^&]*)`, `(^|&)channel_id=([^&]*)`, `(?:&|^)channel_id=([^&]*)`,
		`(^|&|\?)channel_id=([^&]+)`, `(&|^)(channel_id)=([^&]*)`, `channel_id=([^&]*)`,
		`channel_id=`, `^channel_id=(.*)`, `(&|^)x=(\d+)`, `(&|^)x=(\d*?)`, `(&|^)x=(\d+?)`,
		`(&|^)x=(\d?)`, `(&|^)x=(\d??)`, `(ab|^|a)b=(.*)`, `(a|^|cd)b=([^b]*)`, `[&é]x=([^&€]*)`,
		`(€|^)é=([\x{80}-\x{10FFFF}]*)`, `(&|^)x=([a\x{FFFD}]*)`, `(&|^)x=([^\x{FFFD}]*)`,
		`(&|^)x=(\S*)`, `(&|^)x=(?s)(.*)`, `(&|^)x=([^\n&]+)`, `(&|^)(x)(=)([^&]*)`,
		`(\x{FFFD}|&)x=(.*)`, `(xy|[xz])yy(.*)`, `([xz]|xy)yy(.*)`, `(a|xy|^)yy(y*)`, `(xyz|zx)zx`, `(&|^)x=(é+)`,
	}
	regexSlow = []string{
		`(?i)(&|^)channel_id=([^&]*)`, `(&|^)channel_id=([^&]*)$`, `(&|^)channel_id=([^&]*)(&|$)`,
		`a+b`, `(a|b)*c=`, `x=(\d+)&y=(\d+)`, `(?m)(&|^)x=(.*)`, `\x{FFFD}x=`, `((&)|^)x=(.*)`,
		`(&|^)x=(\d{2,3})`, `(a|ab|^)b=([^b]*)`, `[a-c]+x`, `(x=)?y`,
	}
)

// regexTokens are the pieces random inputs are made of: the patterns'
// literals and classes' edges, multi-byte runes, invalid UTF-8 (a lone
// continuation byte, a truncated rune, 0xff) and U+FFFD itself.
var regexTokens = []string{"&", "^", "?", "=", "x", "x=", "a", "b", "ab", "b=", "c", "1", "42", "é", "€", "\n",
	"channel_id=", "channel_id", "_id=", "\xff", "\x80", "\xe2\x82", "\xef\xbf\xbd", "\xc3", " ", "&&", "y", "yy", "z", "zx"}

func randomRegexInput(r *rand.Rand) []byte {
	var b strings.Builder
	for range r.IntN(9) {
		b.WriteString(regexTokens[r.IntN(len(regexTokens))])
	}
	return []byte(b.String())
}

// checkRegex compares m's groups of s with Go's regexp's.
func checkRegex(t *testing.T, m *regexMatcher, re *regexp.Regexp, s []byte) bool {
	loc := re.FindSubmatchIndex(s)
	for g := int64(-1); g <= int64(re.NumSubexp())+1; g++ {
		lo, hi, ok := m.group(s, g)
		wantOK := loc != nil && g >= 0 && g <= int64(re.NumSubexp()) && loc[2*g] >= 0
		if !assert.Equal(t, wantOK, ok, "%q in %q, group %d", re, s, g) {
			return false
		}
		if ok && !assert.Equal(t, loc[2*g:2*g+2], []int{lo, hi}, "%q in %q, group %d", re, s, g) {
			return false
		}
	}
	return true
}

// TestRegexMatchesGo: the fast matcher and the prefiltered regexp give
// Go's regexp's groups on random inputs made of the patterns' pieces.
func TestRegexMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for _, fast := range []bool{true, false} {
		pats := regexSlow
		if fast {
			pats = regexFast
		}
		for _, p := range pats {
			m, err := compileRegex(p)
			require.NoError(t, err, p)
			assert.Equal(t, fast, m.fast != nil, "%s: fast shape", p)
			re := regexp.MustCompile(p)
			for _, s := range []string{"", "channel_id=", "&channel_id=", "x=1&x=2", "ab=b=", "\xffx=\xff"} {
				checkRegex(t, m, re, []byte(s))
			}
			for range testenv.Scale(5000, 20000) {
				if !checkRegex(t, m, re, randomRegexInput(r)) {
					break
				}
			}
		}
	}
}

// TestRegexRequiredLiteral: the literal a pattern needs.
func TestRegexRequiredLiteral(t *testing.T) {
	for p, want := range map[string]string{
		`(?i)(&|^)channel_id=([^&]*)`:  "",
		`(&|^)channel_id=([^&]*)$`:     "channel_id=",
		`x=(\d+)&y=(\d+)`:              "&y=",
		`(a|b)*c=`:                     "c=",
		`\x{FFFD}x=`:                   "x=",
		`(x=)?y`:                       "y",
		`(abc)+d`:                      "abc",
		`(&|^)channel_id=([^&]*)(&|$)`: "channel_id=",
	} {
		m, err := compileRegex(p)
		require.NoError(t, err)
		assert.Equal(t, want, string(m.need), p)
	}
}

// TestRegexDoesNotAllocate: the fast shape finds its groups without
// allocating.
func TestRegexDoesNotAllocate(t *testing.T) {
	m, err := compileRegex(`(&|^)channel_id=([^&]*)`)
	require.NoError(t, err)
	s := []byte("https://www.nexmark.com/abc/de_f/g/item.htm?query=1&channel_id=1234567")
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		if _, _, ok := m.group(s, 2); !ok {
			t.Fatal("no match")
		}
	}))
}

func FuzzRegexExtract(f *testing.F) {
	for i, p := range append(append([]string{}, regexFast...), regexSlow...) {
		f.Add(p, regexTokens[i%len(regexTokens)]+"x=1&channel_id=2")
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return
		}
		m, err := compileRegex(pattern)
		require.NoError(t, err)
		checkRegex(t, m, re, []byte(s))
	})
}

func BenchmarkRegexExtract(b *testing.B) {
	s := []byte("https://www.nexmark.com/abc/de_f/g/item.htm?query=1&channel_id=1234567")
	for _, c := range []struct {
		name string
		fast bool
	}{{"fast", true}, {"regexp", false}} {
		b.Run(c.name, func(b *testing.B) {
			m, err := compileRegex(`(&|^)channel_id=([^&]*)`)
			require.NoError(b, err)
			if !c.fast {
				m.fast = nil
			}
			b.ReportAllocs()
			for b.Loop() {
				m.group(s, 2)
			}
		})
	}
}
