package source

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
		d.segs = append(d.segs, seg{lit0: prev, lit1: s.start, col: s.col, quoted: s.quoted})
		prev = s.end
	}
	d.tail0 = prev
	d.haveTmpl = true
	d.misses = 0
}

// fastLine decodes line by the template; false if line differs from it in
// any way that matters (the general decoder then reads it).
func (d *JSONDecoder) fastLine(t, line []byte) bool {
	clear(t)
	tm := d.tmpl
	p := 0
	for i := range d.segs {
		s := &d.segs[i]
		lit := tm[s.lit0:s.lit1]
		if len(line)-p < len(lit) || string(line[p:p+len(lit)]) != string(lit) {
			return false
		}
		p += len(lit)
		var ok bool
		if s.col < 0 {
			p, ok = d.skipValue(line, p, 2)
		} else {
			p, ok = fastValue(t, line, p, &d.fields[s.col], s.quoted)
		}
		if !ok {
			return false
		}
	}
	tail := tm[d.tail0:]
	return len(line)-p == len(tail) && string(line[p:]) == string(tail)
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
		if !parseUUID(t[f.off:f.off+16], s) {
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
		if n == 0 {
			return 0, false
		}
		le.PutUint32(t[f.off:], v)
		return p + n, true
	}
	// Float32, Float64, Bytes: the text up to the closing quote, or the
	// number.
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

// plainString is the length of the string text that starts s up to its
// closing quote, -1 if it has an escape or a control byte first.
func plainString(s []byte) int {
	for i, c := range s {
		if c == '"' {
			return i
		}
		if c == '\\' || c < 0x20 {
			return -1
		}
	}
	return -1
}
