package source

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// JSONOptions configure a JSON decoder.
type JSONOptions struct {
	Options
	// NoFastPath decodes every line with the general decoder (for tests
	// and measurements: the tuples are the same).
	NoFastPath bool
}

// maxDepth is the deepest nesting accepted, encoding/json's.
const maxDepth = 10000

// relearnAfter is how many lines in a row decoded by the general decoder
// (the fast path refusing them) make the latest the fast path's template.
const relearnAfter = 8

// JSONDecoder decodes lines holding one JSON object each into tuples: the
// layout's columns by key, other members ignored. Lines of the shape of
// an earlier line (its keys in its order with its separators) take a
// fast path; any other falls back to the general decoder, with the same
// result. Not safe for concurrent use.
type JSONDecoder struct {
	core
	index   map[string]int // key -> column, when there are many columns
	seen    []uint32       // seen[col] == stamp: col had a value in this line
	stamp   uint32
	scratch []byte // a value string with escapes, decoded
	keyBuf  []byte // a key with escapes, decoded
	absent  []int  // the nullable columns the template line lacks

	noFast  bool
	canFast bool // every column can be matched raw
	spans   []span
	dup     bool // a column appeared twice in the line
	objEnd  int

	// The fast path's template: a copy of a line and, per value, the
	// literal text before it in that line.
	tmpl       []byte
	segs       []seg
	tail0      int
	haveTmpl   bool
	misses     int
	fast, slow int64
}

// span is where one member's value was in the line the general decoder
// read: for a column's quoted value, its text between the quotes.
type span struct {
	start, end int
	col        int // -1: not a column
	quoted     bool
}

// seg is one value of the template: the literal before it (tmpl[lit0:lit1]),
// the column it goes to (-1: skipped) and whether it is a quoted string
// or null.
type seg struct {
	lit0, lit1 int
	col        int
	quoted     bool
	null       bool
}

// NewJSONDecoder returns a decoder of JSON lines into l's tuples.
func NewJSONDecoder(l *Layout, o JSONOptions) (*JSONDecoder, error) {
	c, err := newCore(l, o.Options)
	if err != nil {
		return nil, err
	}
	d := &JSONDecoder{core: c, noFast: o.NoFastPath, canFast: true}
	d.seen = make([]uint32, len(d.fields))
	if len(d.fields) > 8 {
		d.index = make(map[string]int, len(d.fields))
		for i, f := range d.fields {
			d.index[f.name] = i
		}
	}
	for _, f := range d.fields {
		if !f.fastOK {
			d.canFast = false
		}
	}
	return d, nil
}

// FastLines and SlowLines count the records the fast path and the general
// decoder decoded.
func (d *JSONDecoder) FastLines() int64 { return d.fast }

// SlowLines: see FastLines.
func (d *JSONDecoder) SlowLines() int64 { return d.slow }

// Decode implements Decoder.
func (d *JSONDecoder) Decode(dst, src []byte, atEOF bool) (tuples, consumed int, err error) {
	ts := d.ts
	room := len(dst) / ts
	pos := 0
	for tuples < room {
		line, next, ok := d.nextLine(src, pos, atEOF)
		if !ok {
			break
		}
		if blank(line) {
			d.lines++
			pos = next
			continue
		}
		t := dst[tuples*ts : tuples*ts+ts]
		if d.haveTmpl && d.fastLine(t, line) {
			if d.pendBytes > 0 {
				if err := d.flush(t); err != nil {
					return tuples, pos, err
				}
			}
			d.fast++
			d.misses = 0
			tuples++
		} else if d.slowLine(t, line) {
			if d.pendBytes > 0 {
				if err := d.flush(t); err != nil {
					return tuples, pos, err
				}
			}
			d.slow++
			tuples++
			if !d.noFast && d.canFast && !d.dup {
				if !d.haveTmpl || d.misses >= relearnAfter {
					d.learn(line)
				} else {
					d.misses++
				}
			}
		} else if err := d.failed(); err != nil {
			return tuples, pos, err
		}
		d.lines++
		pos = next
	}
	return tuples, pos, nil
}

func blank(line []byte) bool {
	for _, c := range line {
		if !isWS(c) {
			return false
		}
	}
	return true
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func skipWS(line []byte, p int) int {
	for p < len(line) && isWS(line[p]) {
		p++
	}
	return p
}

// syntax records a syntax error at p.
func (d *JSONDecoder) syntax(line []byte, p int, msg string) bool {
	if p < len(line) {
		return d.e.set(p+1, -1, msg+", got", line[p:min(len(line), p+16)])
	}
	return d.e.setNoText(p+1, -1, msg+", got the end of the line")
}

func (d *JSONDecoder) lookup(key []byte) int {
	if d.index != nil {
		if c, ok := d.index[string(key)]; ok {
			return c
		}
		return -1
	}
	for i := range d.fields {
		if d.fields[i].name == string(key) {
			return i
		}
	}
	return -1
}

// slowLine is the general decoder: line holds one object.
func (d *JSONDecoder) slowLine(t, line []byte) bool {
	clear(t)
	if d.hasStrings {
		d.startRecord(line)
	}
	d.stamp++
	if d.stamp == 0 {
		clear(d.seen)
		d.stamp = 1
	}
	found := 0
	d.spans = d.spans[:0]
	d.dup = false
	p := skipWS(line, 0)
	if p >= len(line) || line[p] != '{' {
		return d.syntax(line, p, "expected '{'")
	}
	p = skipWS(line, p+1)
	if p < len(line) && line[p] == '}' {
		p++
	} else {
		for {
			if p >= len(line) || line[p] != '"' {
				return d.syntax(line, p, "expected a string key")
			}
			d.keyBuf = d.keyBuf[:0]
			key, np, _, ok := d.str(line, p, &d.keyBuf)
			if !ok {
				return false
			}
			p = skipWS(line, np)
			if p >= len(line) || line[p] != ':' {
				return d.syntax(line, p, "expected ':' after an object key")
			}
			p = skipWS(line, p+1)
			col := d.lookup(key)
			if col < 0 {
				np, ok := d.skipValue(line, p, 2)
				if !ok {
					return false
				}
				d.spans = append(d.spans, span{start: p, end: np, col: -1})
				p = np
			} else {
				np, quoted, ok := d.value(t, line, p, col)
				if !ok {
					return false
				}
				if quoted {
					d.spans = append(d.spans, span{start: p + 1, end: np - 1, col: col, quoted: true})
				} else {
					d.spans = append(d.spans, span{start: p, end: np, col: col})
				}
				if d.seen[col] == d.stamp {
					d.dup = true
				} else {
					d.seen[col] = d.stamp
					found++
				}
				p = np
			}
			p = skipWS(line, p)
			if p < len(line) && line[p] == ',' {
				p = skipWS(line, p+1)
				continue
			}
			if p < len(line) && line[p] == '}' {
				p++
				break
			}
			return d.syntax(line, p, "expected ',' or '}' after an object member")
		}
	}
	end := p
	if p = skipWS(line, p); p != len(line) {
		return d.syntax(line, p, "unexpected text after the object")
	}
	if found != len(d.fields) {
		for c := range d.fields {
			if d.seen[c] != d.stamp {
				f := &d.fields[c]
				if !f.nullable {
					return d.e.setNoText(end, c, "missing field")
				}
				t[f.nullAt] |= f.nullMask
			}
		}
	}
	return true
}

// value decodes the value at p into column col: the position after it and
// whether it was a string.
func (d *JSONDecoder) value(t, line []byte, p, col int) (next int, quoted, ok bool) {
	f := &d.fields[col]
	if p >= len(line) {
		return 0, false, d.syntax(line, p, "expected a value")
	}
	if f.nullable {
		t[f.nullAt] &^= f.nullMask // a key given twice: its last value counts
	}
	c := line[p]
	if c == '"' {
		if f.kind == String {
			b0 := len(d.strBuf)
			s, np, inBuf, ok := d.str(line, p, &d.strBuf)
			if !ok {
				d.e.field = col
				return 0, false, false
			}
			d.putString(t, f, s, inBuf, b0)
			return np, true, true
		}
		d.scratch = d.scratch[:0]
		s, np, _, ok := d.str(line, p, &d.scratch)
		if !ok {
			d.e.field = col
			return 0, false, false
		}
		return np, true, putText(t, f, col, s, p+1, &d.e)
	}
	numeric := false
	switch f.kind {
	case Int32, Int64, Float32, Float64, Timestamp, Bool:
		numeric = true
	}
	if numeric && (c == '-' || c-'0' <= 9) {
		np, ok := scanNumber(line, p)
		if !ok {
			return 0, false, d.e.set(p+1, col, "bad JSON number", line[p:min(len(line), max(np, p+1))])
		}
		return np, false, putText(t, f, col, line[p:np], p+1, &d.e)
	}
	np, ok := d.skipValue(line, p, 2)
	if !ok {
		return 0, false, false
	}
	switch lit := line[p:np]; {
	case string(lit) == "null":
		if f.nullable {
			d.setNull(t, f)
			return np, false, true
		}
		return 0, false, d.e.setNoText(p+1, col, "null value")
	case f.kind == Bool && (string(lit) == "true" || string(lit) == "false"):
		if lit[0] == 't' {
			le.PutUint32(t[f.off:], 1)
		} else {
			le.PutUint32(t[f.off:], 0)
		}
		return np, false, true
	}
	switch {
	case f.kind == Bool:
		return 0, false, d.e.set(p+1, col, "expected true, false, a number or a string, got", line[p:min(len(line), p+16)])
	case numeric:
		return 0, false, d.e.set(p+1, col, "expected a number or a string, got", line[p:min(len(line), p+16)])
	}
	return 0, false, d.e.set(p+1, col, "expected a string, got", line[p:min(len(line), p+16)])
}

// scanNumber scans the JSON number at p: the position after it, ok false
// (with the position where it went wrong) if it is not one.
func scanNumber(line []byte, p int) (int, bool) {
	i := p
	if i < len(line) && line[i] == '-' {
		i++
	}
	if i >= len(line) || line[i]-'0' > 9 {
		return i, false
	}
	if line[i] == '0' {
		i++
	} else {
		for i < len(line) && line[i]-'0' <= 9 {
			i++
		}
	}
	if i < len(line) && line[i] == '.' {
		i++
		if i >= len(line) || line[i]-'0' > 9 {
			return i, false
		}
		for i < len(line) && line[i]-'0' <= 9 {
			i++
		}
	}
	if i < len(line) && (line[i] == 'e' || line[i] == 'E') {
		i++
		if i < len(line) && (line[i] == '+' || line[i] == '-') {
			i++
		}
		if i >= len(line) || line[i]-'0' > 9 {
			return i, false
		}
		for i < len(line) && line[i]-'0' <= 9 {
			i++
		}
	}
	return i, true
}

// str reads the string at p (line[p] == '"'): its text and the position
// after its closing quote. A text with escapes is decoded by appending to
// *buf: inBuf, and s is (*buf)[its length before:].
func (d *JSONDecoder) str(line []byte, p int, buf *[]byte) (s []byte, next int, inBuf, ok bool) {
	i := p + 1 + jsonStop(line[p+1:])
	if i >= len(line) {
		return nil, 0, false, d.e.setNoText(p+1, -1, "unterminated string")
	}
	switch c := line[i]; {
	case c == '"':
		return line[p+1 : i], i + 1, false, true
	case c < 0x20:
		return nil, 0, false, d.e.set(i+1, -1, "control character in a string:", line[i:i+1])
	}
	b0 := len(*buf)
	b := append(*buf, line[p+1:i]...)
	for i < len(line) {
		if k := jsonStop(line[i:]); k > 0 {
			b = append(b, line[i:i+k]...)
			i += k
			continue
		}
		c := line[i]
		switch {
		case c == '"':
			*buf = b
			return b[b0:], i + 1, true, true
		case c < 0x20:
			*buf = b
			return nil, 0, false, d.e.set(i+1, -1, "control character in a string:", line[i:i+1])
		}
		// c == '\\'
		if i+1 >= len(line) {
			break
		}
		switch e := line[i+1]; e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r := hex4(line[i+2:])
			if r < 0 {
				*buf = b
				return nil, 0, false, d.e.set(i+1, -1, "bad \\u escape", line[i:min(len(line), i+6)])
			}
			i += 6
			if utf16.IsSurrogate(r) {
				// A pair is one code point; a lone surrogate is U+FFFD,
				// as encoding/json decodes it.
				r2 := rune(-1)
				if i+1 < len(line) && line[i] == '\\' && line[i+1] == 'u' {
					r2 = hex4(line[i+2:])
				}
				if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
					r = dec
					i += 6
				} else {
					r = unicode.ReplacementChar
				}
			}
			b = utf8.AppendRune(b, r)
			continue
		default:
			*buf = b
			return nil, 0, false, d.e.set(i+1, -1, "bad escape", line[i:i+2])
		}
		i += 2
	}
	*buf = b
	return nil, 0, false, d.e.setNoText(p+1, -1, "unterminated string")
}

// hex4 is the value of the 4 hex digits that start s, -1 if they are not.
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		h := unhex[c]
		if h == 0xff {
			return -1
		}
		r = r<<4 | rune(h)
	}
	return r
}

// skipValue checks and skips the JSON value at p, at nesting depth depth.
func (d *JSONDecoder) skipValue(line []byte, p, depth int) (int, bool) {
	if p >= len(line) {
		return 0, d.syntax(line, p, "expected a value")
	}
	switch c := line[p]; {
	case c == '"':
		i := p + 1
		for i < len(line) {
			i += jsonStop(line[i:])
			if i >= len(line) {
				break
			}
			switch c := line[i]; {
			case c == '"':
				return i + 1, true
			case c < 0x20:
				return 0, d.e.set(i+1, -1, "control character in a string:", line[i:i+1])
			case c == '\\':
				if i+1 >= len(line) {
					return 0, d.e.setNoText(p+1, -1, "unterminated string")
				}
				switch line[i+1] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
					i += 2
				case 'u':
					if hex4(line[i+2:]) < 0 {
						return 0, d.e.set(i+1, -1, "bad \\u escape", line[i:min(len(line), i+6)])
					}
					i += 6
				default:
					return 0, d.e.set(i+1, -1, "bad escape", line[i:i+2])
				}
			default:
				i++
			}
		}
		return 0, d.e.setNoText(p+1, -1, "unterminated string")
	case c == '{' || c == '[':
		if depth > maxDepth {
			return 0, d.e.setNoText(p+1, -1, "nested too deep")
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		p = skipWS(line, p+1)
		if p < len(line) && line[p] == closer {
			return p + 1, true
		}
		for {
			if c == '{' {
				if p >= len(line) || line[p] != '"' {
					return 0, d.syntax(line, p, "expected a string key")
				}
				np, ok := d.skipValue(line, p, depth)
				if !ok {
					return 0, false
				}
				p = skipWS(line, np)
				if p >= len(line) || line[p] != ':' {
					return 0, d.syntax(line, p, "expected ':' after an object key")
				}
				p = skipWS(line, p+1)
			}
			np, ok := d.skipValue(line, p, depth+1)
			if !ok {
				return 0, false
			}
			p = skipWS(line, np)
			if p < len(line) && line[p] == ',' {
				p = skipWS(line, p+1)
				continue
			}
			if p < len(line) && line[p] == closer {
				return p + 1, true
			}
			return 0, d.syntax(line, p, "expected ',' or '"+string(closer)+"'")
		}
	case c == '-' || c-'0' <= 9:
		np, ok := scanNumber(line, p)
		if !ok {
			return 0, d.e.set(p+1, -1, "bad JSON number", line[p:min(len(line), max(np, p+1))])
		}
		return np, true
	case c == 't':
		if len(line)-p >= 4 && string(line[p:p+4]) == "true" {
			return p + 4, true
		}
	case c == 'f':
		if len(line)-p >= 5 && string(line[p:p+5]) == "false" {
			return p + 5, true
		}
	case c == 'n':
		if len(line)-p >= 4 && string(line[p:p+4]) == "null" {
			return p + 4, true
		}
	}
	return 0, d.syntax(line, p, "expected a value")
}
