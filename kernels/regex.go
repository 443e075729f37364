package kernels

// REGEXP_EXTRACT's matcher: a pattern compiled once per query (per kernel),
// with a matcher of its own for the shapes that SQL queries use most,
// recognised in regexp/syntax's parse tree, and Go's regexp for the rest.
//
// The fast shape (litMatcher) is a required literal with, before it, at
// most one choice among an anchor, literals and classes of one character
// (the URL parameter's `(&|^)`), and after it at most one repetition of a
// class (`([^&]*)`): `(&|^)channel_id=([^&]*)`, `(^|[?&])id=(\d+)`,
// `^k=(.*)`, `name=(\w+)`. Its matches are Go's (leftmost-first over runes,
// an invalid byte read as U+FFFD): found with bytes.Index, without
// allocating. Another pattern that needs a literal (one every match
// contains) is only run where bytes.Index finds it.

import (
	"bytes"
	"encoding/binary"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"

	"github.com/saber-hx/saber-hx/query"
)

// regexMatcher finds the first match of a pattern and its groups.
type regexMatcher struct {
	re   *regexp.Regexp
	ncap int
	fast *litMatcher // nil: re
	need []byte      // a literal every match holds (nil: none known)
	loc  []int       // fast's groups, 2*(ncap+1)
}

func compileRegex(pattern string) (*regexMatcher, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	m := &regexMatcher{re: re, ncap: re.NumSubexp()}
	// regexp.Compile parses with syntax.Perl and simplifies: the same tree.
	t, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return m, nil
	}
	t = t.Simplify()
	if f, ok := litShape(t); ok && f.ncap == m.ncap {
		m.fast = f
		m.loc = make([]int, 2*(m.ncap+1))
	}
	m.need = required(t)
	return m, nil
}

// group returns group g (0: the whole match) of the first match of re in s:
// its bounds, and false where there is no match, g is not a group, or the
// group took no part in the match.
func (m *regexMatcher) group(s []byte, g int64) (lo, hi int, ok bool) {
	if g < 0 || g > int64(m.ncap) {
		return 0, 0, false
	}
	var loc []int
	switch {
	case m.fast != nil:
		if !m.fast.match(s, m.loc) {
			return 0, 0, false
		}
		loc = m.loc
	case m.need != nil && bytes.Index(s, m.need) < 0:
		return 0, 0, false
	default:
		loc = m.re.FindSubmatchIndex(s)
		if loc == nil {
			return 0, 0, false
		}
	}
	if loc[2*g] < 0 {
		return 0, 0, false
	}
	return loc[2*g], loc[2*g+1], true
}

// literalOf is a literal node's UTF-8, false where it is not a literal
// matched byte for byte: case-folded, or holding U+FFFD (which an invalid
// byte of the input matches too).
func literalOf(t *syntax.Regexp) ([]byte, bool) {
	if t.Op != syntax.OpLiteral || t.Flags&syntax.FoldCase != 0 || len(t.Rune) == 0 {
		return nil, false
	}
	var b []byte
	for _, r := range t.Rune {
		if r == utf8.RuneError {
			return nil, false
		}
		b = utf8.AppendRune(b, r)
	}
	return b, true
}

// required is a literal that every match of t contains (the longest this
// finds), nil where it finds none.
func required(t *syntax.Regexp) []byte {
	switch t.Op {
	case syntax.OpLiteral:
		// The longest run without U+FFFD (an invalid byte matches it).
		if t.Flags&syntax.FoldCase != 0 {
			return nil
		}
		var best, run []byte
		for _, r := range t.Rune {
			if r == utf8.RuneError {
				run = nil
				continue
			}
			run = utf8.AppendRune(run, r)
			if len(run) > len(best) {
				best = run
			}
		}
		return best
	case syntax.OpCapture, syntax.OpPlus:
		return required(t.Sub[0])
	case syntax.OpRepeat:
		if t.Min >= 1 {
			return required(t.Sub[0])
		}
	case syntax.OpConcat:
		var best []byte
		for _, s := range t.Sub {
			if b := required(s); len(b) > len(best) {
				best = b
			}
		}
		return best
	}
	return nil
}

// runeClass is a set of runes as regexp/syntax's sorted ranges, with a
// table of the bytes that stand for themselves: in[c] for an ASCII c;
// for c >= 0x80, in[c] is whether every rune of two bytes or more and
// U+FFFD are in the set (all: a byte of a multi-byte rune or an invalid
// one is in it), and uniform says whether the bytes >= 0x80 decide alone
// (every such rune in, or none of them).
type runeClass struct {
	ranges  []rune
	in      [256]bool
	uniform bool
}

func newRuneClass(ranges []rune) *runeClass {
	c := &runeClass{ranges: ranges}
	for b := range utf8.RuneSelf {
		c.in[b] = c.hasRune(rune(b))
	}
	// Runes from 0x80 up, and U+FFFD: all in or all out?
	all := len(ranges) >= 2 && ranges[len(ranges)-1] == utf8.MaxRune
	if all {
		// The last range must start at or below 0x80.
		all = ranges[len(ranges)-2] <= 0x80
	}
	none := true
	for i := 0; i < len(ranges); i += 2 {
		if ranges[i+1] >= utf8.RuneSelf {
			none = false
		}
	}
	c.uniform = all || none
	for b := utf8.RuneSelf; b < 256; b++ {
		c.in[b] = all
	}
	return c
}

func (c *runeClass) hasRune(r rune) bool {
	for i := 0; i < len(c.ranges); i += 2 {
		if r < c.ranges[i] {
			return false
		}
		if r <= c.ranges[i+1] {
			return true
		}
	}
	return false
}

// first is the width of the rune that starts s if the class holds it, 0
// if it does not (or s is empty).
func (c *runeClass) first(s []byte) int {
	if len(s) == 0 {
		return 0
	}
	if b := s[0]; b < utf8.RuneSelf || c.uniform {
		if !c.in[b] {
			return 0
		}
		if b < utf8.RuneSelf {
			return 1
		}
	}
	r, w := utf8.DecodeRune(s)
	if !c.hasRune(r) {
		return 0
	}
	return w
}

// span is the length of the longest prefix of s of runes in the class.
func (c *runeClass) span(s []byte) int {
	if c.uniform {
		// Byte by byte: a byte >= 0x80 is part of a rune that is in
		// (every one is) or out (none is).
		for i, b := range s {
			if !c.in[b] {
				return i
			}
		}
		return len(s)
	}
	i := 0
	for i < len(s) {
		if b := s[i]; b < utf8.RuneSelf {
			if !c.in[b] {
				return i
			}
			i++
			continue
		}
		r, w := utf8.DecodeRune(s[i:])
		if !c.hasRune(r) {
			return i
		}
		i += w
	}
	return i
}

// last is the width of the rune that ends s if the class holds it, 0 if it
// does not. For an s that ends where the forward decoding of the input
// has a rune boundary, utf8.DecodeLastRune finds the rune that forward
// decoding ends there (a valid rune starts at a byte no continuation byte
// can be; an invalid one is one byte either way).
func (c *runeClass) last(s []byte) int {
	if len(s) == 0 {
		return 0
	}
	if b := s[len(s)-1]; b < utf8.RuneSelf {
		if c.in[b] {
			return 1
		}
		return 0
	}
	r, w := utf8.DecodeLastRune(s)
	if !c.hasRune(r) {
		return 0
	}
	return w
}

// headAlt is one choice of a litMatcher's head: the start of the text, a
// literal, or one character of a class.
type headAlt struct {
	begin bool
	lit   []byte
	class *runeClass
}

// litMatcher matches head? lit tail?: head a choice among headAlts (in
// the pattern's order), lit a literal (made of literals, some of them
// groups: litCaps), tail a repetition of a class (min 0 or 1 runes, at
// most 1 or any; greedy or not).
type litMatcher struct {
	head    []headAlt
	headCap int // the group that is the head, 0 for none
	maxHead int // the most bytes a head choice takes
	lit     []byte
	find    litFinder
	// byHead: the head's choices are one literal and the start of the
	// text, and the literal is found by the head's literal, which is no
	// commoner than lit's rarest byte (URL parameters: `(&|^)name=`,
	// found at each '&', where lit's '=' stops at every parameter).
	byHead   bool
	headFind litFinder
	headLen  int
	begins   bool // a head choice is the start of the text
	litCaps  []litCap
	tail     *runeClass
	tailMin  int
	tailMax  int // 1 or -1 (no bound)
	lazy     bool
	tailCap  int
	ncap     int
}

// litCap is a group of lit: bytes lo to hi of it.
type litCap struct{ cap, lo, hi int }

// litShape recognises the shape in t.
func litShape(t *syntax.Regexp) (*litMatcher, bool) {
	items := []*syntax.Regexp{t}
	if t.Op == syntax.OpConcat {
		items = t.Sub
	}
	m := &litMatcher{}
	caps := map[int]bool{}
	addCap := func(c int) bool {
		if caps[c] {
			return false
		}
		caps[c] = true
		m.ncap = max(m.ncap, c)
		return true
	}
	i := 0
	// The head.
	if i < len(items) {
		h := items[i]
		cap := 0
		if h.Op == syntax.OpCapture {
			cap, h = h.Cap, h.Sub[0]
		}
		var alts []*syntax.Regexp
		switch h.Op {
		case syntax.OpAlternate:
			alts = h.Sub
		case syntax.OpBeginText, syntax.OpCharClass:
			alts = []*syntax.Regexp{h}
		}
		if alts != nil {
			for _, a := range alts {
				switch a.Op {
				case syntax.OpBeginText:
					m.head = append(m.head, headAlt{begin: true})
				case syntax.OpCharClass:
					m.head = append(m.head, headAlt{class: newRuneClass(a.Rune)})
					m.maxHead = max(m.maxHead, utf8.UTFMax)
				case syntax.OpLiteral:
					b, ok := literalOf(a)
					if !ok {
						return nil, false
					}
					m.head = append(m.head, headAlt{lit: b})
					m.maxHead = max(m.maxHead, len(b))
				default:
					return nil, false
				}
			}
			if cap > 0 && !addCap(cap) {
				return nil, false
			}
			m.headCap = cap
			i++
		}
	}
	// The literal.
	for ; i < len(items); i++ {
		x, cap := items[i], 0
		if x.Op == syntax.OpCapture {
			cap, x = x.Cap, x.Sub[0]
		}
		b, ok := literalOf(x)
		if !ok {
			break
		}
		if cap > 0 {
			if !addCap(cap) {
				return nil, false
			}
			m.litCaps = append(m.litCaps, litCap{cap, len(m.lit), len(m.lit) + len(b)})
		}
		m.lit = append(m.lit, b...)
	}
	if len(m.lit) == 0 {
		return nil, false
	}
	m.find = newLitFinder(m.lit)
	m.findByHead()
	// The tail.
	if i < len(items) {
		x, cap := items[i], 0
		if x.Op == syntax.OpCapture {
			cap, x = x.Cap, x.Sub[0]
		}
		switch x.Op {
		case syntax.OpStar:
			m.tailMin, m.tailMax = 0, -1
		case syntax.OpPlus:
			m.tailMin, m.tailMax = 1, -1
		case syntax.OpQuest:
			m.tailMin, m.tailMax = 0, 1
		default:
			return nil, false
		}
		m.lazy = x.Flags&syntax.NonGreedy != 0
		c := x.Sub[0]
		switch c.Op {
		case syntax.OpCharClass:
			m.tail = newRuneClass(c.Rune)
		case syntax.OpAnyCharNotNL:
			m.tail = newRuneClass([]rune{0, '\n' - 1, '\n' + 1, utf8.MaxRune})
		case syntax.OpAnyChar:
			m.tail = newRuneClass([]rune{0, utf8.MaxRune})
		case syntax.OpLiteral:
			if len(c.Rune) != 1 || c.Flags&syntax.FoldCase != 0 {
				return nil, false
			}
			m.tail = newRuneClass([]rune{c.Rune[0], c.Rune[0]})
		default:
			return nil, false
		}
		if cap > 0 && !addCap(cap) {
			return nil, false
		}
		m.tailCap = cap
		i++
	}
	if i != len(items) {
		return nil, false
	}
	// Every group of the pattern is one of these (numbered 1..ncap).
	for c := 1; c <= m.ncap; c++ {
		if !caps[c] {
			return nil, false
		}
	}
	return m, true
}

// tailEnd is where the tail ends when it starts at q, -1 where it cannot
// match there.
func (m *litMatcher) tailEnd(s []byte, q int) int {
	if m.tail == nil {
		return q
	}
	if m.lazy || m.tailMax == 1 {
		// At most one rune: one where the tail is greedy or needs one.
		if m.tailMin == 0 && m.lazy {
			return q
		}
		w := m.tail.first(s[q:])
		if w == 0 {
			if m.tailMin > 0 {
				return -1
			}
			return q
		}
		return q + w
	}
	n := m.tail.span(s[q:])
	if n == 0 && m.tailMin > 0 {
		return -1
	}
	return q + n
}

// match finds the first match of the pattern in s (the leftmost, and of
// those the first in the head's order), its groups' bounds in loc.
func (m *litMatcher) match(s []byte, loc []int) bool {
	if m.head != nil && m.maxHead == 0 && !m.find.occursAt(s, 0) {
		return false // anchored at the start
	}
	best, bestAlt, bestK, bestEnd := -1, 0, 0, 0
	for from := 0; from <= len(s); {
		k := m.nextAt(s, from)
		if k < 0 {
			break
		}
		if best >= 0 && k-m.maxHead > best {
			break // no head choice reaches back to best
		}
		from = k + 1
		q := k + len(m.lit)
		if m.head == nil {
			end := m.tailEnd(s, q)
			if end < 0 {
				continue
			}
			best, bestK, bestEnd = k, k, end
			break
		}
		if m.maxHead == 0 && k > 0 {
			break // anchored at the start: only k = 0
		}
		// The head choices that end at k: the match that starts leftmost,
		// and at one start the first choice in the pattern's order (two
		// choices of different widths start at one place for different k).
		// The tail is the same for each choice at k.
		p, alt := -1, 0
		for ai, a := range m.head {
			var w int
			switch {
			case a.begin:
				if k != 0 {
					continue
				}
			case a.lit != nil:
				if k < len(a.lit) || string(s[k-len(a.lit):k]) != string(a.lit) {
					continue
				}
				w = len(a.lit)
			default:
				if w = a.class.last(s[:k]); w == 0 {
					continue
				}
			}
			if p < 0 || k-w < p {
				p, alt = k-w, ai
			}
		}
		if p < 0 || (best >= 0 && (p > best || (p == best && alt >= bestAlt))) {
			continue
		}
		end := m.tailEnd(s, q)
		if end < 0 {
			continue
		}
		best, bestAlt, bestK, bestEnd = p, alt, k, end
		if k-p == m.maxHead {
			// A later k' > k starts at k' - w' >= k' - maxHead > best:
			// nothing after can start before this match.
			break
		}
	}
	if best < 0 {
		return false
	}
	for i := range loc {
		loc[i] = -1
	}
	loc[0], loc[1] = best, bestEnd
	if m.headCap > 0 {
		loc[2*m.headCap], loc[2*m.headCap+1] = best, bestK
	}
	for _, c := range m.litCaps {
		loc[2*c.cap], loc[2*c.cap+1] = bestK+c.lo, bestK+c.hi
	}
	if m.tailCap > 0 {
		loc[2*m.tailCap], loc[2*m.tailCap+1] = bestK+len(m.lit), bestEnd
	}
	return true
}

// findByHead sets byHead where the head is a literal or the start of the
// text and the head's literal is no commoner than lit's rarest byte.
func (m *litMatcher) findByHead() {
	var lit []byte
	for _, a := range m.head {
		switch {
		case a.begin:
			m.begins = true
		case a.lit != nil && lit == nil:
			lit = a.lit
		default:
			return // a class, or a second literal
		}
	}
	if lit == nil {
		return
	}
	f := newLitFinder(lit)
	if byteRank(f.rare) > byteRank(m.find.rare) {
		return
	}
	m.byHead, m.headFind, m.headLen = true, f, len(lit)
}

// nextAt is the first k >= from at which lit occurs in s, -1 where there
// is none. With byHead it skips the k where no head choice ends (neither
// the start of the text nor the end of the head's literal): those match
// nothing, so that match, which tries each k in turn, finds the same.
func (m *litMatcher) nextAt(s []byte, from int) int {
	if !m.byHead {
		if j := m.find.index(s[from:]); j >= 0 {
			return from + j
		}
		return -1
	}
	if from == 0 && m.begins && m.find.occursAt(s, 0) {
		return 0
	}
	for at := max(from-m.headLen, 0); at < len(s); {
		j := m.headFind.index(s[at:])
		if j < 0 {
			return -1
		}
		if k := at + j + m.headLen; k >= from && m.find.occursAt(s, k) {
			return k
		}
		at += j + 1
	}
	return -1
}

// litFinder finds a literal by its rarest byte, memchr's heuristic: a
// text's letters and digits are common and its punctuation rare, so that
// IndexByte runs over the text for a byte that seldom stops it, and each
// stop is checked in place (bytes.Index stops at every first byte).
type litFinder struct {
	lit  []byte
	rare byte
	at   int // rare's index in lit
	// words: lit is 8 to 16 bytes long, its first and last 8 bytes are
	// first and last, so that a candidate is checked by two loads rather
	// than a call to the runtime's memequal (a URL parameter's name and
	// '=', checked at each '&').
	words       bool
	first, last uint64
}

func newLitFinder(lit []byte) litFinder {
	f := litFinder{lit: lit, rare: lit[0]}
	for i, b := range lit {
		if byteRank(b) < byteRank(f.rare) {
			f.rare, f.at = b, i
		}
	}
	if n := len(lit); n >= 8 && n <= 16 {
		f.words = true
		f.first = binary.LittleEndian.Uint64(lit)
		f.last = binary.LittleEndian.Uint64(lit[n-8:])
	}
	return f
}

// occursAt says whether the literal occurs in s at byte i.
func (f *litFinder) occursAt(s []byte, i int) bool {
	n := len(f.lit)
	if i < 0 || i+n > len(s) {
		return false
	}
	if f.words {
		return binary.LittleEndian.Uint64(s[i:]) == f.first &&
			binary.LittleEndian.Uint64(s[i+n-8:]) == f.last
	}
	return string(s[i:i+n]) == string(f.lit)
}

// byteRank is how often byte b occurs in text, roughly (higher: more).
func byteRank(b byte) int {
	switch {
	case b == ' ' || b == 'e' || b == 't' || b == 'a' || b == 'o' || b == 'i' || b == 'n' || b == 's':
		return 250
	case 'a' <= b && b <= 'z':
		return 200
	case '0' <= b && b <= '9', b == '/' || b == '.' || b == ':':
		return 170
	case 'A' <= b && b <= 'Z':
		return 120
	case b >= utf8.RuneSelf:
		return 100
	case b == '_' || b == '-' || b == ',':
		return 80
	case b < ' ':
		return 10
	}
	return 40 // other punctuation: = & ? ; ...
}

// index is the index of the literal's first occurrence in s, or -1.
func (f *litFinder) index(s []byte) int {
	n := len(f.lit)
	for from := f.at; from < len(s); {
		j := bytes.IndexByte(s[from:], f.rare)
		if j < 0 {
			return -1
		}
		start := from + j - f.at
		if start+n > len(s) {
			return -1
		}
		if f.occursAt(s, start) {
			return start
		}
		from += j + 1
	}
	return -1
}

// regexGroup is REGEXP_EXTRACT's group where it is a literal (0 where it
// is not given), false where it is computed or NULL.
func regexGroup(e query.Call) (int64, bool) {
	if len(e.Args) < 3 {
		return 0, true
	}
	c, ok := e.Args[2].(query.IntConst)
	return c.V, ok
}
