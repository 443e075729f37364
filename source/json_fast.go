package source

import "math"

// The JSON decoder's fast path: lines of the shape of a template line (the
// first line the general decoder read: its keys in its order, its
// separators and spacing, which values were quoted) are compared with it
// byte by byte and their values parsed in place; any difference sends the
// line to the general decoder (json.go), which gives the same tuple.

// learn makes line, which the general decoder just read, the template.
func (d *JSONDecoder) learn(line []byte) {
	d.tmpl = append(d.tmpl[:0], line...)
	d.segs = d.segs[:0]
	prev := 0
	for _, s := range d.spans {
		null := !s.quoted && string(line[s.start:s.end]) == "null"
		d.segs = append(d.segs, seg{lit0: prev, lit1: s.start, col: s.col, quoted: s.quoted, null: null})
		prev = s.end
	}
	d.tail0 = prev
	d.absent = d.absent[:0]
	for c := range d.fields {
		if d.seen[c] != d.stamp { // a nullable column the line lacks
			d.absent = append(d.absent, c)
		}
	}
	d.haveTmpl = true
	d.misses = 0
}

// fastLine decodes line by the template; false if line differs from it in
// any way that matters (the general decoder then reads it).
func (d *JSONDecoder) fastLine(t, line []byte) bool {
	clear(t)
	if d.hasStrings {
		d.startRecord(line)
	}
	tm := d.tmpl
	p := 0
	nulled := false // the last value, quoted in the template, was null
	for i := range d.segs {
		s := &d.segs[i]
		lit := tm[s.lit0:s.lit1]
		if nulled {
			lit = lit[1:] // the template's closing quote
			nulled = false
		}
		if len(line)-p < len(lit) || !equalLit(line[p:p+len(lit)], lit) {
			np, ok := d.nullForQuote(t, line, p, s, lit)
			if !ok {
				return false
			}
			p = np
			nulled = true
			continue
		}
		p += len(lit)
		var ok bool
		if s.col < 0 {
			p, ok = d.skipValue(line, p, 2)
		} else if s.null && p < len(line) && line[p] == '"' {
			// A string where the template has null.
			p, ok = d.fastValueExt(t, line, p+1, &d.fields[s.col], true)
			if !ok || p >= len(line) || line[p] != '"' {
				return false
			}
			p++
		} else {
			switch f := &d.fields[s.col]; {
			case !f.ext:
				p, ok = fastValue(t, line, p, f, s.quoted)
			case f.kind == String && s.quoted:
				p, ok = d.fastString(t, line, p, f)
			default:
				p, ok = d.fastValueExt(t, line, p, f, s.quoted)
			}
		}
		if !ok {
			return false
		}
	}
	tail := tm[d.tail0:]
	if nulled {
		tail = tail[1:]
	}
	if len(line)-p != len(tail) || string(line[p:]) != string(tail) {
		return false
	}
	for _, c := range d.absent {
		t[d.fields[c].nullAt] |= d.fields[c].nullMask
	}
	return true
}

// nullForQuote reads a nullable column's null where the template has a
// quoted value (lit ends with its opening quote): the position after it.
func (d *JSONDecoder) nullForQuote(t, line []byte, p int, s *seg, lit []byte) (int, bool) {
	if !s.quoted || s.col < 0 || !d.fields[s.col].nullable {
		return 0, false
	}
	lit = lit[:len(lit)-1]
	if len(line)-p < len(lit)+4 || string(line[p:p+len(lit)]) != string(lit) || string(line[p+len(lit):p+len(lit)+4]) != "null" {
		return 0, false
	}
	d.setNull(t, &d.fields[s.col])
	return p + len(lit) + 4, true
}

// fastValueExt is fastValue for the columns that may be null and the
// kinds it does not parse in place: strings, booleans and timestamps.
func (d *JSONDecoder) fastValueExt(t, line []byte, p int, f *field, quoted bool) (int, bool) {
	s := line[p:]
	if f.nullable && !quoted && len(s) >= 4 && string(s[:4]) == "null" {
		d.setNull(t, f)
		return p + 4, true
	}
	switch f.kind {
	case String:
		if !quoted {
			return 0, false
		}
		return d.fastString(t, line, p, f)
	case Bool:
		if !quoted {
			if len(s) >= 4 && string(s[:4]) == "true" {
				le.PutUint32(t[f.off:], 1)
				return p + 4, true
			}
			if len(s) >= 5 && string(s[:5]) == "false" {
				return p + 5, true
			}
		}
	case Timestamp:
		if ms, n, ok := fastEpoch(s, f.unit, quoted); ok {
			le.PutUint64(t[f.off:], uint64(ms))
			return p + n, true
		}
	}
	return fastValue(t, line, p, f, quoted)
}

// fastValue parses the value at p for f, with no escape in it: the
// position after it (before the closing quote of a string). false: the
// general decoder decides.
func fastValue(t, line []byte, p int, f *field, quoted bool) (int, bool) {
	s := line[p:]
	switch f.kind {
	case Int64, Int32:
		v, n := scanInt(s)
		if n == 0 {
			return 0, false
		}
		if !quoted {
			// JSON's grammar: no '+', no leading zero.
			if s[0] == '+' {
				return 0, false
			}
			digits := s[:n]
			if digits[0] == '-' {
				digits = digits[1:]
			}
			if len(digits) > 1 && digits[0] == '0' {
				return 0, false
			}
		}
		if f.kind == Int64 {
			le.PutUint64(t[f.off:], uint64(v))
		} else {
			if v != int64(int32(v)) {
				return 0, false
			}
			le.PutUint32(t[f.off:], uint32(v))
		}
		return p + n, true
	case UUID:
		// A UUID or an address is a JSON string; unquoted (where the
		// template has null) it is not JSON, as the general decoder says.
		if !quoted || !parseUUID(t[f.off:f.off+16], s) {
			return 0, false
		}
		return p + uuidText, true
	case Enum:
		c, n, ok := f.enum.prefix(s, '"')
		if !ok {
			return 0, false
		}
		le.PutUint32(t[f.off:], uint32(c))
		return p + n, true
	case IPv4:
		v, n := scanIPv4(s)
		if n == 0 || !quoted {
			return 0, false
		}
		le.PutUint32(t[f.off:], v)
		return p + n, true
	case String:
		return 0, false
	case Float64:
		if !quoted {
			if v, n := jsonDecimal(s); n > 0 {
				le.PutUint64(t[f.off:], math.Float64bits(v))
				return p + n, true
			}
		}
	}
	// Float32, Float64, Bytes, Timestamp, Bool: the text up to the
	// closing quote, or the number.
	var text []byte
	if quoted {
		n := plainString(s)
		if n < 0 {
			return 0, false
		}
		text = s[:n]
	} else {
		if f.kind == Bytes {
			return 0, false
		}
		np, ok := scanNumber(line, p)
		if !ok {
			return 0, false
		}
		text = line[p:np]
	}
	var e errState
	if !putText(t, f, 0, text, 0, &e) {
		return 0, false
	}
	return p + len(text), true
}

// jsonDecimal parses the JSON number that starts s where it is a
// decimal of at most 15 digits with no exponent, in one pass: the value
// parseDecimal gives its text, and the bytes taken (0 for anything else,
// which scanNumber and parseFloat then read). It is decimalPrefix held to
// JSON's grammar: no '+', a digit before the point and none of a leading
// zero's, a digit after the point, no exponent after the digits.
func jsonDecimal(s []byte) (float64, int) {
	if len(s) > 0 && s[0] == '+' {
		return 0, 0
	}
	v, n := decimalPrefix(s)
	if n == 0 {
		return 0, 0
	}
	start := 0
	if s[0] == '-' {
		start = 1
	}
	switch {
	case s[start]-'0' > 9, // ".5": no integer digit
		s[start] == '0' && start+1 < n && s[start+1]-'0' <= 9, // "01"
		s[n-1] == '.', // "1."
		n < len(s) && s[n]|0x20 == 'e':
		return 0, 0
	}
	return v, n
}

// fastString stores the string whose text starts at p (after its opening
// quote): the position of its closing quote.
func (d *JSONDecoder) fastString(t, line []byte, p int, f *field) (int, bool) {
	s := line[p:]
	n := jsonStop(s)
	if n < len(s) && s[n] == '"' {
		d.putNew(t, f, s[:n], false, 0) // a template has no key twice
		return p + n, true
	}
	if n == len(s) || s[n] != '\\' {
		return 0, false
	}
	// Escapes: decoded here too (p-1 is the opening quote).
	b0 := len(d.strBuf)
	str, np, inBuf, ok := d.str(line, p-1, &d.strBuf)
	if !ok {
		return 0, false
	}
	d.putNew(t, f, str, inBuf, b0)
	return np - 1, true
}

// fastEpoch reads the integer epoch that starts s (quoted: up to the
// closing quote; else a JSON number with no fraction or exponent): the
// milliseconds and the bytes taken; false for anything else (the general
// way decides).
func fastEpoch(s []byte, unit TimeUnit, quoted bool) (ms int64, n int, ok bool) {
	v, n := scanInt(s)
	if n == 0 {
		return 0, 0, false
	}
	if quoted {
		if n == len(s) || s[n] != '"' {
			return 0, 0, false
		}
	} else {
		if s[0] == '+' || (n < len(s) && (s[n] == '.' || s[n]|0x20 == 'e')) {
			return 0, 0, false
		}
		if digits := s[:n]; (digits[0] == '-' && n > 2 && digits[1] == '0') || (digits[0] == '0' && n > 1) {
			return 0, 0, false // JSON's grammar: no leading zero
		}
	}
	ms, ok = epochInt(v, unit)
	return ms, n, ok
}

// plainString is the length of the string text that starts s up to its
// closing quote, -1 if it has an escape or a control byte first.
func plainString(s []byte) int {
	if n := jsonStop(s); n < len(s) && s[n] == '"' {
		return n
	}
	return -1
}

// equalLit reports whether a and b, of one length, are equal: the short
// literals between a template's values (a key and its quotes, 8 to 16
// bytes most often) compared as two overlapping words each, without the
// call a comparison of strings costs.
func equalLit(a, b []byte) bool {
	n := len(a)
	if n < 8 || n > 16 || len(b) != n {
		return string(a) == string(b)
	}
	return le.Uint64(a) == le.Uint64(b) && le.Uint64(a[n-8:]) == le.Uint64(b[n-8:])
}
