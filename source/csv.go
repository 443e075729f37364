package source

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
)

// CSVOptions configure a CSV decoder.
type CSVOptions struct {
	Options
	// Header: the first non-empty line names the columns, in any order;
	// each layout column must be among them (else that line's decoding
	// fails, whatever OnError says), the others are ignored. Without a
	// header the fields are the layout's columns in its order, and fields
	// after them are ignored.
	Header bool
	// Comma is the field separator; 0 means ','. It may not be '"', '\r'
	// or '\n'.
	Comma byte
}

// CSVDecoder decodes CSV records (RFC 4180 quoting: a quoted field may
// hold separators, "" for a quote, and line breaks) into tuples. Not safe
// for concurrent use.
type CSVDecoder struct {
	core
	comma      byte
	needHeader bool
	fieldCol   []int // record field -> layout column, -1 for ignored ones
	scratch    []byte

	// The record being decoded: buf is src from its start; the current
	// line (the record's first, or the last a quoted field reached) ends
	// at eol (its text; "\r\n" or "\n" after) and nl (the '\n', len(buf)
	// when the input's end ends it).
	buf     []byte
	eol, nl int
	atEOF   bool
	nlines  int // lines the record spans so far
	more    endScan

	noFastFields bool // tests: every field by field and putText
}

// status is how a record's parsing went.
type status uint8

const (
	parsed status = iota
	malformed
	needMore // src ends inside the record (and not at the input's end)
)

// NewCSVDecoder returns a decoder of CSV records into l's tuples.
func NewCSVDecoder(l *Layout, o CSVOptions) (*CSVDecoder, error) {
	c, err := newCore(l, o.Options)
	if err != nil {
		return nil, err
	}
	d := &CSVDecoder{core: c, comma: o.Comma, needHeader: o.Header}
	if d.comma == 0 {
		d.comma = ','
	}
	if d.comma == '"' || d.comma == '\r' || d.comma == '\n' {
		return nil, errors.New("csv: bad field separator " + strconv.QuoteRune(rune(d.comma)) + ": it may not be '\"', '\\r' or '\\n'")
	}
	if !o.Header {
		d.fieldCol = make([]int, len(l.Columns))
		for i := range d.fieldCol {
			d.fieldCol[i] = i
		}
	}
	return d, nil
}

// Decode implements Decoder.
func (d *CSVDecoder) Decode(dst, src []byte, atEOF bool) (tuples, consumed int, err error) {
	ts := d.ts
	room := len(dst) / ts
	pos := 0
	d.atEOF = atEOF
	for tuples < room && pos < len(src) {
		skip, ok := d.begin(src[pos:])
		if !ok {
			break
		}
		if d.eol == 0 { // an empty line
			d.lines++
			pos += skip + d.end()
			continue
		}
		if !atEOF && d.more.waiting(d.buf, d.comma) {
			break // the record still lacks its end
		}
		var st status
		if d.needHeader {
			st = d.header()
			if st == malformed {
				return tuples, pos, d.build()
			}
			if st == parsed {
				d.needHeader = false
			}
		} else {
			t := dst[tuples*ts : tuples*ts+ts]
			st = d.record(t)
			switch st {
			case parsed:
				if d.pendBytes > 0 {
					if err := d.flush(t); err != nil {
						return tuples, pos, err
					}
				}
				tuples++
			case malformed:
				if err := d.failed(); err != nil {
					return tuples, pos, err
				}
			}
		}
		if st == needMore {
			d.more.start(d.buf, d.comma)
			break
		}
		d.more.valid = false
		d.lines += int64(d.nlines)
		pos += skip + d.end()
	}
	d.buf = nil
	return tuples, pos, nil
}

// begin starts the record at the start of rest: it cuts its first line,
// dropping a BOM at the start of the input (skip: its 3 bytes); false if
// rest holds no whole line.
func (d *CSVDecoder) begin(rest []byte) (skip int, ok bool) {
	nl := indexNL(rest)
	if nl < 0 {
		if !d.atEOF {
			return 0, false
		}
		nl = len(rest)
	}
	d.line = d.lines + 1
	d.colBase = 0
	if d.lines == 0 && !d.continues && nl >= 3 && string(rest[:3]) == bom {
		rest, nl, skip = rest[3:], nl-3, 3
		d.colBase = 3
	}
	d.buf, d.nl, d.nlines = rest, nl, 1
	d.eol = nl
	if nl > 0 && rest[nl-1] == '\r' {
		d.eol--
	}
	return skip, true
}

// end is the position in buf after the record (after its '\n').
func (d *CSVDecoder) end() int { return min(d.nl+1, len(d.buf)) }

// nextLine moves the current line on to the one that holds position p
// (after a quoted field that ended there, past the old line's end).
func (d *CSVDecoder) nextLine(from, p int) status {
	d.nlines += bytes.Count(d.buf[from:p], nlByte)
	nl := indexNL(d.buf[p:])
	if nl < 0 {
		if !d.atEOF {
			return needMore
		}
		d.nl = len(d.buf)
	} else {
		d.nl = p + nl
	}
	d.eol = d.nl
	if d.nl > p && d.buf[d.nl-1] == '\r' {
		d.eol--
	}
	return parsed
}

var nlByte = []byte{'\n'}

// quoted cuts the quoted field at p (buf[p] == '"'): its text, unescaped
// ("" to ") by appending to *out when it had "" (esc; out nil: not at
// all, for fields that are skipped), and the position after its
// separator (eol+1 after the record's last field).
func (d *CSVDecoder) quoted(p int, out *[]byte) (val []byte, next int, esc bool, st status) {
	buf := d.buf
	q := p + 1
	var end int
	for {
		j := bytes.IndexByte(buf[q:], '"')
		if j < 0 {
			return nil, 0, false, d.unterminated(p)
		}
		end = q + j
		if end+1 < len(buf) && buf[end+1] == '"' {
			esc = true
			q = end + 2
			continue
		}
		if end+1 == len(buf) && !d.atEOF {
			return nil, 0, false, needMore // "" might follow
		}
		break
	}
	if end > d.eol { // line breaks in the field
		if st := d.nextLine(d.nl, end+1); st != parsed {
			return nil, 0, false, st
		}
	}
	val = buf[p+1 : end]
	if esc && out != nil {
		b0 := len(*out)
		b := *out
		for {
			j := bytes.IndexByte(val, '"')
			if j < 0 {
				break
			}
			b = append(b, val[:j+1]...)
			val = val[j+2:]
		}
		b = append(b, val...)
		*out = b
		val = b[b0:]
	}
	after := end + 1
	if after < d.eol {
		if buf[after] != d.comma {
			d.e.set(after+1, -1, "unexpected text after a quoted field:", buf[after:min(d.eol, after+16)])
			return nil, 0, false, malformed
		}
		return val, after + 1, esc, parsed
	}
	return val, d.eol + 1, esc, parsed
}

// unterminated: the quoted field at p has no closing quote in src. At the
// input's end the record is malformed, and only its first line is passed
// over (the quote was most likely a mistake: the lines after it are read
// as records again).
func (d *CSVDecoder) unterminated(p int) status {
	if !d.atEOF {
		return needMore
	}
	d.e.setNoText(p+1, -1, "unterminated quoted field")
	return malformed
}

// unquoted cuts the unquoted field at p.
func (d *CSVDecoder) unquoted(p int) (val []byte, next int) {
	j := indexComma(d.buf[p:d.eol], d.comma)
	if j < 0 {
		return d.buf[p:d.eol], d.eol + 1
	}
	return d.buf[p : p+j], p + j + 1
}

// record decodes the record at the start of buf into tuple t.
func (d *CSVDecoder) record(t []byte) status {
	clear(t)
	if d.hasStrings {
		d.startRecord(d.buf)
	}
	buf := d.buf
	p := 0
	for i, fi := range d.fieldCol {
		if p > d.eol {
			d.missing(i)
			return malformed
		}
		start := p
		var f *field
		if fi >= 0 {
			f = &d.fields[fi]
			if f.ext { // nullable, or a string
				if f.nullable && f.kind != String && f.kind != Bytes && (p == d.eol || buf[p] == d.comma) {
					t[f.nullAt] |= f.nullMask // an empty field: NULL
					p++
					continue
				}
				if f.kind == String && (p == d.eol || buf[p] != '"') {
					j := indexComma(buf[p:d.eol], d.comma)
					if j < 0 {
						d.putNew(t, f, buf[p:d.eol], false, 0) // each column once a record
						p = d.eol + 1
					} else {
						d.putNew(t, f, buf[p:p+j], false, 0)
						p += j + 1
					}
					continue
				}
			}
			if f.csvFast && !d.noFastFields && (p == d.eol || buf[p] != '"') {
				if np, ok := d.fastField(t, buf[:d.eol], p, f); ok {
					p = np
					continue
				}
			}
		}
		var val []byte
		var next int
		esc := false
		b0 := len(d.strBuf)
		if p < d.eol && buf[p] == '"' {
			out := &d.scratch
			if f != nil && f.kind == String {
				out = &d.strBuf
			} else {
				d.scratch = d.scratch[:0]
			}
			var st status
			val, next, esc, st = d.quoted(p, out)
			if st != parsed {
				d.e.field = fi
				return st
			}
		} else {
			val, next = d.unquoted(p)
		}
		p = next
		switch {
		case f == nil:
		case f.kind == String:
			d.putNew(t, f, val, esc, b0) // each column once a record
		case len(val) == 0 && f.nullable && f.kind != Bytes:
			t[f.nullAt] |= f.nullMask
		case !putText(t, f, fi, val, start+1, &d.e):
			// The record goes on to its end, which a quoted field
			// further on may put on a later line.
			e := d.e
			if st := d.skipFields(p); st == needMore {
				return st
			}
			d.e = e
			return malformed
		}
	}
	if p < d.eol && bytes.IndexByte(buf[p:d.eol], '"') >= 0 {
		return d.skipFields(p)
	}
	return parsed
}

// skipFields passes over the fields from p to the record's end.
func (d *CSVDecoder) skipFields(p int) status {
	for p <= d.eol {
		if p < d.eol && d.buf[p] == '"' {
			_, next, _, st := d.quoted(p, nil)
			if st != parsed {
				return st
			}
			p = next
		} else {
			_, p = d.unquoted(p)
		}
	}
	return parsed
}

// fastField parses the unquoted field at p in place for the kinds whose
// text has a known end (no search for the separator first): the position
// after the separator, false to leave the field to field and putText.
func (d *CSVDecoder) fastField(t, line []byte, p int, f *field) (int, bool) {
	s := line[p:]
	var n int
	switch f.kind {
	case Int64, Int32:
		v, k := scanInt(s)
		if k == 0 {
			return 0, false
		}
		if f.kind == Int64 {
			le.PutUint64(t[f.off:], uint64(v))
		} else {
			if v != int64(int32(v)) {
				return 0, false
			}
			le.PutUint32(t[f.off:], uint32(v))
		}
		n = k
	case Float64:
		// A decimal of 15 digits at most, as parseFloat's fast path reads
		// it, ended by the separator (checked below): anything else, an
		// exponent or more digits, the general way.
		v, k := decimalPrefix(s)
		if k == 0 {
			return 0, false
		}
		le.PutUint64(t[f.off:], math.Float64bits(v))
		n = k
	case UUID:
		if !parseUUID(t[f.off:f.off+16], s) {
			return 0, false
		}
		n = uuidText
	case Enum:
		c, k, ok := f.enum.prefix(s, d.comma)
		if !ok {
			if c, ok = f.enum.lookup(s); !ok {
				return 0, false
			}
			k = len(s)
		}
		if bytes.IndexByte(s[:k], d.comma) >= 0 { // a label with the separator: not a field
			return 0, false
		}
		le.PutUint32(t[f.off:], uint32(c))
		n = k
	case IPv4:
		v, k := scanIPv4(s)
		if k == 0 {
			return 0, false
		}
		le.PutUint32(t[f.off:], v)
		n = k
	case Timestamp:
		if len(s) > 4 && s[4] == '-' {
			// A time's text (yyyy-...), up to the separator: parsed
			// here, not after the general way's search and switch.
			k := indexComma(s, d.comma)
			if k < 0 {
				k = len(s)
			}
			ms, ok := f.dates.ParseTimestamp(s[:k])
			if !ok {
				return 0, false // the general way reports it
			}
			le.PutUint64(t[f.off:], uint64(ms))
			n = k
			break
		}
		// An integer epoch; a fraction: the general way.
		v, k := scanInt(s)
		if k == 0 {
			return 0, false
		}
		ms, ok := epochInt(v, f.unit)
		if !ok {
			return 0, false
		}
		le.PutUint64(t[f.off:], uint64(ms))
		n = k
	case Bool:
		switch {
		case len(s) == 0:
			return 0, false
		case s[0] == '1' || s[0] == '0':
			n = 1
		case len(s) >= 4 && (len(s) == 4 || s[4] == d.comma):
			n = 4
		case len(s) >= 5:
			n = 5
		default:
			return 0, false
		}
		v, ok := parseBool(s[:n])
		if !ok {
			return 0, false
		}
		le.PutUint32(t[f.off:], v)
	default:
		return 0, false
	}
	if n < len(s) && s[n] != d.comma {
		return 0, false
	}
	return p + n + 1, true
}

// missing reports that the record ends before field i.
func (d *CSVDecoder) missing(i int) bool {
	fi := -1
	for _, c := range d.fieldCol[i:] {
		if c >= 0 {
			fi = c
			break
		}
	}
	return d.e.setNoText(d.eol+1, fi, "missing field: the record has "+strconv.Itoa(i)+" fields, "+strconv.Itoa(len(d.fieldCol))+" needed")
}

// header maps the header's names to the layout's columns.
func (d *CSVDecoder) header() status {
	cols := make([]int, 0, len(d.fields))
	found := make([]bool, len(d.fields))
	last := -1
	for p := 0; p <= d.eol; {
		start := p
		var val []byte
		if p < d.eol && d.buf[p] == '"' {
			d.scratch = d.scratch[:0]
			var st status
			if val, p, _, st = d.quoted(p, &d.scratch); st != parsed {
				return st
			}
		} else {
			val, p = d.unquoted(p)
		}
		name := strings.TrimSpace(string(val))
		c := d.layout.Lookup(name)
		if c >= 0 {
			if found[c] {
				d.e.setNoText(start+1, c, "column named twice in the header")
				return malformed
			}
			found[c] = true
			last = len(cols)
		}
		cols = append(cols, c)
	}
	for c, ok := range found {
		if !ok {
			d.e.set(0, c, "the header has no such column; it has", d.buf[:d.eol])
			return malformed
		}
	}
	d.fieldCol = cols[:last+1]
	return parsed
}

// endScan spares a record that arrives in many small reads (a long quoted
// field through a pipe) a parse per read: when a record lacks its end,
// it finds where its end could be, and says how far it got, in what
// state; the next Decode (whose src starts with the same record, as
// Decode's contract has it) resumes from there over the new bytes only,
// and parses the record once its end is there.
type endScan struct {
	valid bool
	n     int       // bytes of the record scanned
	state scanState // the state after them
	head  [16]byte  // the record's first bytes and the last scanned, to
	tail  [16]byte  // know the record again
}

type scanState uint8

const (
	atField    scanState = iota // at a field's start
	inUnquoted                  // in an unquoted field
	inQuoted                    // in a quoted field
	quoteSeen                   // in a quoted field, after a '"' ("" or its end)
	badLine                     // after a quoted field, text other than a separator: the record ends with the line
)

// start scans the record at the start of buf, which lacks its end.
func (m *endScan) start(buf []byte, comma byte) {
	m.valid = true
	m.n, m.state = 0, atField
	m.scan(buf, comma)
}

// waiting resumes the scan over the bytes buf has past the last one: true
// if the record still lacks its end.
func (m *endScan) waiting(buf []byte, comma byte) bool {
	if !m.valid {
		return false
	}
	if m.n > len(buf) || string(buf[:min(16, m.n)]) != string(m.head[:min(16, m.n)]) ||
		string(buf[max(0, m.n-16):m.n]) != string(m.tail[:min(16, m.n)]) {
		m.valid = false // not the same record
		return false
	}
	if m.scan(buf, comma) {
		m.valid = false
		return false
	}
	return true
}

// scan goes on from m.n to the record's end (true) or buf's.
func (m *endScan) scan(buf []byte, comma byte) (end bool) {
	i, st := m.n, m.state
	defer func() {
		m.n, m.state = i, st
		copy(m.head[:], buf[:min(16, i)])
		copy(m.tail[:], buf[max(0, i-16):i])
	}()
	for i < len(buf) {
		switch st {
		case atField:
			if buf[i] == '"' {
				st = inQuoted
				i++
			} else {
				st = inUnquoted
			}
		case inUnquoted:
			j := indexNL(buf[i:])
			if j < 0 {
				j = len(buf) - i
			}
			if k := bytes.IndexByte(buf[i:i+j], comma); k >= 0 {
				i += k + 1
				st = atField
				continue
			}
			i += j
			if i < len(buf) {
				return true
			}
		case inQuoted:
			j := bytes.IndexByte(buf[i:], '"')
			if j < 0 {
				i = len(buf)
				break
			}
			i += j + 1
			st = quoteSeen
		case quoteSeen:
			switch buf[i] {
			case '"':
				st = inQuoted
				i++
			case comma:
				st = atField
				i++
			default:
				st = badLine // "\r\n", '\n' or text: to the line's end
			}
		case badLine:
			j := indexNL(buf[i:])
			if j < 0 {
				i = len(buf)
				break
			}
			i += j
			return true
		}
	}
	return false
}
