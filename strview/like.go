package strview

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// Like is a compiled SQL LIKE pattern. Matching is case-sensitive and reads
// the string as UTF-8 characters: % matches any sequence of characters, _
// exactly one, and every other pattern character itself; an invalid byte
// of the string is a character of its own (as in Go's for range). A Like is
// safe for concurrent use.
type Like struct {
	pattern string
	kind    likeKind
	lit     []byte // the literal of the fast paths

	// The general case: the pattern split at its %s. first is anchored
	// at the start, last at the end, and the middle segments are found
	// in order, each at its leftmost place.
	first, last likeSeg
	middle      []likeSeg
}

type likeKind uint8

const (
	likeAll      likeKind = iota // only %s: anything
	likeEqual                    // no wildcard
	likePrefix                   // lit%
	likeSuffix                   // %lit
	likeContains                 // %lit%
	likeAnchored                 // no %, some _
	likeGeneral
)

// A segment is a run of pattern characters without %: literal bytes and _s.
type likeSeg struct {
	toks []likeTok
	// chars is the number of characters a match consumes.
	chars int
}

// A token is literal bytes, or (lit empty) a run of any _s.
type likeTok struct {
	lit  []byte
	anys int
}

// CompileLike compiles a LIKE pattern. escape, when not 0, makes the
// pattern character after it literal; it may precede only %, _ or itself,
// as in SQL and Calcite, and may not end the pattern. The pattern must be
// valid UTF-8.
func CompileLike(pattern string, escape rune) (*Like, error) {
	l := &Like{pattern: pattern}
	var segs []likeSeg // the segments between %s, empty ones included
	var seg likeSeg
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			seg.toks = append(seg.toks, likeTok{lit: bytes.Clone(lit)})
			seg.chars += utf8.RuneCount(lit)
			lit = lit[:0]
		}
	}
	for i := 0; i < len(pattern); {
		r, w := utf8.DecodeRuneInString(pattern[i:])
		if r == utf8.RuneError && w == 1 {
			return nil, fmt.Errorf("LIKE pattern %q: invalid UTF-8 at byte %d", pattern, i)
		}
		if escape != 0 && r == escape {
			if i+w == len(pattern) {
				return nil, fmt.Errorf("LIKE pattern %q: the escape character %q ends the pattern", pattern, escape)
			}
			r2, w2 := utf8.DecodeRuneInString(pattern[i+w:])
			if r2 != '%' && r2 != '_' && r2 != escape {
				return nil, fmt.Errorf("LIKE pattern %q: the escape character %q precedes %q: only %%, _ or itself may follow it", pattern, escape, r2)
			}
			lit = append(lit, pattern[i+w:i+w+w2]...)
			i += w + w2
			continue
		}
		switch r {
		case '%':
			flush()
			segs = append(segs, seg)
			seg = likeSeg{}
		case '_':
			flush()
			if n := len(seg.toks); n > 0 && len(seg.toks[n-1].lit) == 0 {
				seg.toks[n-1].anys++
			} else {
				seg.toks = append(seg.toks, likeTok{anys: 1})
			}
			seg.chars++
		default:
			lit = append(lit, pattern[i:i+w]...)
		}
		i += w
	}
	flush()
	segs = append(segs, seg)
	l.classify(segs)
	return l, nil
}

// MustCompileLike is CompileLike for patterns known to be valid; it panics
// on an error.
func MustCompileLike(pattern string, escape rune) *Like {
	l, err := CompileLike(pattern, escape)
	if err != nil {
		panic(err)
	}
	return l
}

// literal reports whether s is one literal (or empty) and returns it.
func (s likeSeg) literal() ([]byte, bool) {
	switch {
	case len(s.toks) == 0:
		return nil, true
	case len(s.toks) == 1 && len(s.toks[0].lit) > 0:
		return s.toks[0].lit, true
	}
	return nil, false
}

func (l *Like) classify(segs []likeSeg) {
	n := len(segs)
	first, last := segs[0], segs[n-1]
	var middle []likeSeg
	for i := 1; i < n-1; i++ {
		if len(segs[i].toks) > 0 {
			middle = append(middle, segs[i])
		}
	}
	l.first, l.last, l.middle = first, last, middle
	l.kind = likeGeneral
	fl, fok := first.literal()
	ll, lok := last.literal()
	switch {
	case n == 1 && fok:
		l.kind, l.lit = likeEqual, fl
	case n == 1:
		l.kind = likeAnchored
	case len(middle) == 0 && len(first.toks) == 0 && len(last.toks) == 0:
		l.kind = likeAll
	case len(middle) == 0 && len(last.toks) == 0 && fok:
		l.kind, l.lit = likePrefix, fl
	case len(middle) == 0 && len(first.toks) == 0 && lok:
		l.kind, l.lit = likeSuffix, ll
	case len(middle) == 1 && len(first.toks) == 0 && len(last.toks) == 0:
		if ml, ok := middle[0].literal(); ok {
			l.kind, l.lit = likeContains, ml
		}
	}
}

// String is the pattern as compiled.
func (l *Like) String() string { return l.pattern }

// Match reports whether s matches the pattern. It allocates nothing and
// takes time at most proportional to len(s) times the pattern's length.
func (l *Like) Match(s []byte) bool {
	switch l.kind {
	case likeAll:
		return true
	case likeEqual:
		return string(s) == string(l.lit)
	case likePrefix:
		return bytes.HasPrefix(s, l.lit)
	case likeSuffix:
		return bytes.HasSuffix(s, l.lit)
	case likeContains:
		return bytes.Index(s, l.lit) >= 0
	case likeAnchored:
		return l.first.matchAt(s, 0) == len(s)
	}
	p := 0
	if len(l.first.toks) > 0 {
		if p = l.first.matchAt(s, 0); p < 0 {
			return false
		}
	}
	for i := range l.middle {
		if p = l.middle[i].find(s, p); p < 0 {
			return false
		}
	}
	return l.last.matchEnd(s, p)
}

// MatchView reports whether the string of view v matches the pattern.
func (l *Like) MatchView(v []byte) bool { return l.Match(Bytes(v)) }

// Why matching on bytes is exact: the pattern is valid UTF-8, so each of
// its literals starts with a byte that is not a UTF-8 continuation byte,
// and every such byte of s begins a character of s (decoding never
// swallows one into the previous character). A literal found anywhere in s
// therefore starts on a character boundary, and since its characters are
// complete and valid, s decodes them as the same characters.

// matchAt matches the segment at s[p:], p on a character boundary, and
// returns where the match ends, or -1.
func (g *likeSeg) matchAt(s []byte, p int) int {
	for _, t := range g.toks {
		if len(t.lit) > 0 {
			if len(s)-p < len(t.lit) || string(s[p:p+len(t.lit)]) != string(t.lit) {
				return -1
			}
			p += len(t.lit)
			continue
		}
		for k := 0; k < t.anys; k++ {
			if p >= len(s) {
				return -1
			}
			p += charLen(s[p:])
		}
	}
	return p
}

// charLen is the byte length of the character at the start of s.
func charLen(s []byte) int {
	if s[0] < utf8.RuneSelf {
		return 1
	}
	_, w := utf8.DecodeRune(s)
	return w
}

// find matches the segment at its leftmost place in s[p:] and returns
// where the match ends, or -1. The leftmost match also ends leftmost (a
// segment consumes a fixed number of characters), which leaves the most of
// s to the segments after it: no other choice need be tried.
func (g *likeSeg) find(s []byte, p int) int {
	if lead := g.toks[0].lit; len(lead) > 0 {
		for p <= len(s) {
			i := bytes.Index(s[p:], lead)
			if i < 0 {
				return -1
			}
			if e := g.matchAt(s, p+i); e >= 0 {
				return e
			}
			p += i + 1
		}
		return -1
	}
	for {
		if e := g.matchAt(s, p); e >= 0 {
			return e
		}
		if p >= len(s) {
			return -1
		}
		p += charLen(s[p:])
	}
}

// matchEnd reports whether the segment matches a suffix of s[p:] that
// starts on a character boundary.
func (g *likeSeg) matchEnd(s []byte, p int) bool {
	switch {
	case len(g.toks) == 0:
		return true
	case len(g.toks) == 1 && len(g.toks[0].lit) > 0:
		lit := g.toks[0].lit
		return len(s)-p >= len(lit) && string(s[len(s)-len(lit):]) == string(lit)
	}
	// Counted forwards from p rather than decoded backwards from the
	// end: backwards decoding of invalid UTF-8 need not agree with the
	// forwards reading that defines the characters. (utf8.RuneCount
	// would count the same but copies a non-ASCII slice to a string.)
	skip := -g.chars
	for i := p; i < len(s); i += charLen(s[i:]) {
		skip++
	}
	if skip < 0 {
		return false
	}
	for ; skip > 0; skip-- {
		p += charLen(s[p:])
	}
	return g.matchAt(s, p) == len(s)
}
