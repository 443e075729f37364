package strview

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
)

// likeRegexp translates a LIKE pattern into an anchored regular
// expression, independently of CompileLike: the oracle. (?s) lets . match
// a newline; Go's regexp reads an invalid byte of its input as one
// character, as Like does.
func likeRegexp(pattern string, escape rune) (*regexp.Regexp, bool) {
	if !utf8.ValidString(pattern) {
		return nil, false
	}
	var b strings.Builder
	b.WriteString(`^(?s:`)
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; {
		case escape != 0 && r == escape:
			i++
			if i == len(rs) || (rs[i] != '%' && rs[i] != '_' && rs[i] != escape) {
				return nil, false
			}
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case r == '%':
			b.WriteString(`.*`)
		case r == '_':
			b.WriteString(`.`)
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`)$`)
	return regexp.MustCompile(b.String()), true
}

func TestLikeTable(t *testing.T) {
	for _, c := range []struct {
		pattern string
		escape  rune
		kind    likeKind
		yes, no []string
	}{
		{"", 0, likeEqual, []string{""}, []string{"a", " "}},
		{"abc", 0, likeEqual, []string{"abc"}, []string{"ab", "abcd", "ABC", "xabc"}},
		{"%", 0, likeAll, []string{"", "a", "\xff"}, nil},
		{"%%%", 0, likeAll, []string{"", "abc"}, nil},
		{"abc%", 0, likePrefix, []string{"abc", "abcdef"}, []string{"ab", "xabc"}},
		{"abc%%", 0, likePrefix, []string{"abc", "abcd"}, []string{"ab"}},
		{"%abc", 0, likeSuffix, []string{"abc", "xxabc"}, []string{"abcx", "ab"}},
		{"%abc%", 0, likeContains, []string{"abc", "xabcx", "aabcc"}, []string{"ab", "acb", ""}},
		{"%%abc%%", 0, likeContains, []string{"xabcx"}, []string{"ab"}},
		{"_", 0, likeAnchored, []string{"a", "é", "😀", "\xff", "\n"}, []string{"", "ab", "\xff\xff", "é!"}},
		{"a_c", 0, likeAnchored, []string{"abc", "aéc", "a\x80c"}, []string{"ac", "abbc", "aé"}},
		{"___", 0, likeAnchored, []string{"abc", "é😀a"}, []string{"ab", "abcd"}},
		// 😀 is one character of four bytes: three _s do not
		// match its four bytes one by one.
		{"%___", 0, likeGeneral, []string{"abc", "xabc", "é😀a"}, []string{"😀", "é😀", "ab"}},
		{"a%c", 0, likeGeneral, []string{"ac", "abc", "abbbc", "acc"}, []string{"ab", "ca", "abcb"}},
		{"a%b%c", 0, likeGeneral, []string{"abc", "aXbYc", "abbc", "acbc"}, []string{"acb", "ab", "bac"}},
		{"%a_c%", 0, likeGeneral, []string{"abc", "xxaéc", "aac", "aaac"}, []string{"ac", "a\n"}},
		{"%_a", 0, likeGeneral, []string{"ba", "éa", "aaa"}, []string{"a", "ab"}},
		{"_%_", 0, likeGeneral, []string{"ab", "éé", "abc"}, []string{"a", "é", ""}},
		{"%b_", 0, likeGeneral, []string{"abé", "bb", "bbb"}, []string{"b", "bbé!"}},
		{"a_%_b", 0, likeGeneral, []string{"axyb", "aéé😀b"}, []string{"axb", "ab"}},
		{"100!%", '!', likeEqual, []string{"100%"}, []string{"100", "1000", "100!%"}},
		{"%!%%", '!', likeContains, []string{"50%", "%", "a%b"}, []string{"50"}},
		{"a!_b", '!', likeEqual, []string{"a_b"}, []string{"axb"}},
		{"a!!b", '!', likeEqual, []string{"a!b"}, []string{"a!!b"}},
		{`a\%b%`, '\\', likePrefix, []string{"a%b", "a%bc"}, []string{"axb"}},
		{"x%%y", '%', likeEqual, []string{"x%y"}, []string{"xy", "xay"}},
		{"é%", 'é', likeEqual, []string{"%"}, []string{"é%", ""}},
		{"é%%", 'é', likePrefix, []string{"%", "%a"}, []string{"a%"}},
		{"ÉCOLE", 0, likeEqual, []string{"ÉCOLE"}, []string{"école", "ECOLE"}},
		{"%😀_", 0, likeGeneral, []string{"😀a", "x😀é"}, []string{"😀", "😀ab"}},
		{"a\nb%", 0, likePrefix, []string{"a\nb", "a\nbc"}, []string{"a b"}},
	} {
		l, err := CompileLike(c.pattern, c.escape)
		require.NoError(t, err, "pattern %q", c.pattern)
		assert.Equal(t, c.kind, l.kind, "pattern %q: the matcher chosen", c.pattern)
		assert.Equal(t, c.pattern, l.String())
		for _, s := range c.yes {
			assert.True(t, l.Match([]byte(s)), "%q LIKE %q", s, c.pattern)
		}
		for _, s := range c.no {
			assert.False(t, l.Match([]byte(s)), "%q NOT LIKE %q", s, c.pattern)
		}
	}
}

func TestLikeErrors(t *testing.T) {
	for _, c := range []struct {
		pattern string
		escape  rune
		msg     string
	}{
		{`abc\`, '\\', "ends the pattern"},
		{`\`, '\\', "ends the pattern"},
		{`a\bc`, '\\', "precedes 'b'"},
		{"a\xffb", 0, "invalid UTF-8 at byte 1"},
	} {
		_, err := CompileLike(c.pattern, c.escape)
		require.Error(t, err, "pattern %q", c.pattern)
		assert.Contains(t, err.Error(), c.msg, "pattern %q", c.pattern)
		assert.Panics(t, func() { MustCompileLike(c.pattern, c.escape) })
	}
	l, err := CompileLike(`a\bc`, 0)
	require.NoError(t, err, "without an escape character a backslash is literal")
	assert.True(t, l.Match([]byte(`a\bc`)))
}

// A pattern token, rendered both as LIKE and as the oracle's regexp.
type genTok struct {
	wild rune   // '%', '_' or 0 for a literal
	lit  string // one character
}

var (
	likeChars    = []string{"a", "b", "é", "😀", "%", "_", "!", "\\", "\n"}
	subjectExtra = []string{"\xff", "\x80", "\xe2\x82", "\xf0\x9f\x98"}
)

func genPattern(r *rand.Rand, escape rune) string {
	var b strings.Builder
	for n := r.IntN(9); n > 0; n-- {
		switch k := r.IntN(6); {
		case k == 0:
			b.WriteByte('%')
		case k == 1:
			b.WriteByte('_')
		default:
			c := likeChars[r.IntN(len(likeChars))]
			cr, _ := utf8.DecodeRuneInString(c)
			special := cr == '%' || cr == '_' || (escape != 0 && cr == escape)
			if special {
				if escape == 0 {
					continue
				}
				b.WriteRune(escape)
			}
			b.WriteString(c)
		}
	}
	return b.String()
}

// genSubject is random, or made from the pattern so that about half the
// subjects match.
func genSubject(r *rand.Rand, pattern string, escape rune) string {
	var b strings.Builder
	pick := func() string {
		if r.IntN(5) == 0 {
			return subjectExtra[r.IntN(len(subjectExtra))]
		}
		return likeChars[r.IntN(len(likeChars))]
	}
	if r.IntN(2) == 0 {
		for n := r.IntN(10); n > 0; n-- {
			b.WriteString(pick())
		}
		return b.String()
	}
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		switch {
		case escape != 0 && rs[i] == escape && i+1 < len(rs):
			i++
			b.WriteRune(rs[i])
		case rs[i] == '%':
			for n := r.IntN(4); n > 0; n-- {
				b.WriteString(pick())
			}
		case rs[i] == '_':
			b.WriteString(pick())
		default:
			b.WriteRune(rs[i])
		}
	}
	s := b.String()
	if r.IntN(4) == 0 && len(s) > 0 {
		i := r.IntN(len(s))
		s = s[:i] + s[i+1:] // one byte less: invalid UTF-8 now and then
	}
	return s
}

func TestLikeAgainstRegexp(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	escapes := []rune{0, '\\', '!', 'é', 'a'}
	patterns := testenv.Scale(3000, 30000)
	matched, total := 0, 0
	for i := 0; i < patterns; i++ {
		escape := escapes[r.IntN(len(escapes))]
		pattern := genPattern(r, escape)
		l, err := CompileLike(pattern, escape)
		require.NoError(t, err, "pattern %q escape %q", pattern, escape)
		re, ok := likeRegexp(pattern, escape)
		require.True(t, ok)
		for k := 0; k < 20; k++ {
			s := genSubject(r, pattern, escape)
			want := re.MatchString(s)
			require.Equal(t, want, l.Match([]byte(s)), "%q LIKE %q ESCAPE %q (%s)", s, pattern, escape, re)
			total++
			if want {
				matched++
			}
		}
	}
	assert.Greater(t, matched, total/5, "the subjects exercise matches as well as mismatches")
	assert.Less(t, matched, total*4/5)
}

func TestLikeAllocatesNothing(t *testing.T) {
	s := []byte("a long subject, with é and 😀, to scan: abcabcabc_xyz")
	for _, p := range []string{"a long%", "%xyz", "%abc%", "a%b_c%xyz", "%_%_%z", "a long subject, with é and 😀, to scan: abcabcabc_xyz", "%é%😀%c!_x%", "%a_c"} {
		l := MustCompileLike(p, '!')
		allocs := testing.AllocsPerRun(100, func() { l.Match(s) })
		assert.Zero(t, allocs, "pattern %q", p)
	}
}

func TestLikeNoBlowUp(t *testing.T) {
	// A backtracking matcher takes time exponential in the %s here.
	s := []byte(strings.Repeat("a", 20000))
	l := MustCompileLike(strings.Repeat("%a", 30)+"%b", 0)
	start := time.Now()
	assert.False(t, l.Match(s))
	assert.Less(t, time.Since(start), 2*time.Second)

	l = MustCompileLike("%"+strings.Repeat("_", 50)+"b", 0)
	start = time.Now()
	assert.False(t, l.Match(s))
	assert.True(t, l.Match(append(s, 'b')))
	assert.Less(t, time.Since(start), 2*time.Second)
}

func TestMatchView(t *testing.T) {
	a := NewArena(0)
	defer a.Free()
	v := make([]byte, Size)
	l := MustCompileLike("%view%", 0)
	Put(v, []byte("a string view in an arena"), a)
	assert.True(t, l.MatchView(v))
	Put(v, []byte("inline"), a)
	assert.False(t, l.MatchView(v))
}

func FuzzLike(f *testing.F) {
	f.Add("a%b_c", "axxbyc", int32('\\'))
	f.Add("%é_", "xéé", int32(0))
	f.Add("!%%!_", "%x_", int32('!'))
	f.Add("%___", "😀", int32(0))
	f.Add("_%a", "\xffa", int32(0))
	f.Fuzz(func(t *testing.T, pattern string, s string, escape int32) {
		if escape < 0 || escape > utf8.MaxRune || (escape >= 0xD800 && escape < 0xE000) {
			escape = 0
		}
		l, err := CompileLike(pattern, escape)
		re, ok := likeRegexp(pattern, escape)
		if (err == nil) != ok {
			t.Fatalf("pattern %q escape %q: CompileLike error %v, oracle accepts it: %v", pattern, escape, err, ok)
		}
		if err != nil {
			return
		}
		got := l.Match([]byte(s))
		// The oracle reads an invalid byte of s as U+FFFD, which a
		// literal U+FFFD of the pattern then matches; Like compares
		// bytes. Only there do they differ.
		if strings.ContainsRune(pattern, utf8.RuneError) {
			return
		}
		if want := re.MatchString(s); got != want {
			t.Fatalf("%q LIKE %q ESCAPE %q: %v, the oracle says %v", s, pattern, escape, got, want)
		}
	})
}
