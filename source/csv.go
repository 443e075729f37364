package source

import (
	"bytes"
	"errors"
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

// CSVDecoder decodes CSV lines (RFC 4180 quoting within a line) into
// tuples. Not safe for concurrent use.
type CSVDecoder struct {
	core
	comma      byte
	needHeader bool
	fieldCol   []int // record field -> layout column, -1 for ignored ones
	scratch    []byte

	noFastFields bool // tests: every field by field and putText
}

// NewCSVDecoder returns a decoder of CSV records into l's tuples.
func NewCSVDecoder(l *Layout, o CSVOptions) (*CSVDecoder, error) {
	d := &CSVDecoder{core: newCore(l, o.Options), comma: o.Comma, needHeader: o.Header}
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
	for tuples < room {
		line, next, ok := d.nextLine(src, pos, atEOF)
		if !ok {
			break
		}
		if len(line) == 0 {
			pos = next
			continue
		}
		if d.needHeader {
			if !d.header(line) {
				err := d.build()
				d.lines--
				return tuples, pos, err
			}
			d.needHeader = false
			pos = next
			continue
		}
		if d.record(dst[tuples*ts:tuples*ts+ts], line) {
			tuples++
		} else if err := d.failed(); err != nil {
			return tuples, pos, err
		}
		pos = next
	}
	return tuples, pos, nil
}

// field cuts the field at p: its text (unquoted; in scratch when it had
// "" escapes), and the position after its separator (len(line)+1 after
// the last field).
func (d *CSVDecoder) field(line []byte, p int) (val []byte, next int, ok bool) {
	if p < len(line) && line[p] == '"' {
		start := p + 1
		j := bytes.IndexByte(line[start:], '"')
		if j < 0 {
			return nil, 0, d.e.setNoText(p+1, -1, "unterminated quoted field")
		}
		end := start + j
		if end+1 < len(line) && line[end+1] == '"' {
			d.scratch = append(d.scratch[:0], line[start:end+1]...)
			q := end + 2
			for {
				j = bytes.IndexByte(line[q:], '"')
				if j < 0 {
					return nil, 0, d.e.setNoText(p+1, -1, "unterminated quoted field")
				}
				d.scratch = append(d.scratch, line[q:q+j]...)
				end = q + j
				if end+1 < len(line) && line[end+1] == '"' {
					d.scratch = append(d.scratch, '"')
					q = end + 2
					continue
				}
				break
			}
			val = d.scratch
		} else {
			val = line[start:end]
		}
		after := end + 1
		if after < len(line) && line[after] != d.comma {
			return nil, 0, d.e.set(after+1, -1, "unexpected text after a quoted field:", line[after:min(len(line), after+16)])
		}
		return val, after + 1, true
	}
	j := bytes.IndexByte(line[p:], d.comma)
	if j < 0 {
		return line[p:], len(line) + 1, true
	}
	return line[p : p+j], p + j + 1, true
}

// record decodes one record into tuple t.
func (d *CSVDecoder) record(t, line []byte) bool {
	clear(t)
	p := 0
	for i, fi := range d.fieldCol {
		if p > len(line) {
			return d.missing(line, i)
		}
		start := p
		if fi >= 0 && !d.noFastFields && (p == len(line) || line[p] != '"') {
			if np, ok := d.fastField(t, line, p, &d.fields[fi]); ok {
				p = np
				continue
			}
		}
		val, next, ok := d.field(line, p)
		if !ok {
			d.e.field = fi
			return false
		}
		if fi >= 0 && !putText(t, &d.fields[fi], fi, val, start+1, &d.e) {
			return false
		}
		p = next
	}
	return true
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
	default:
		return 0, false
	}
	if n < len(s) && s[n] != d.comma {
		return 0, false
	}
	return p + n + 1, true
}

// missing reports that the record ends before field i.
func (d *CSVDecoder) missing(line []byte, i int) bool {
	fi := -1
	for _, c := range d.fieldCol[i:] {
		if c >= 0 {
			fi = c
			break
		}
	}
	return d.e.setNoText(len(line)+1, fi, "missing field: the record has "+strconv.Itoa(i)+" fields, "+strconv.Itoa(len(d.fieldCol))+" needed")
}

// header maps the header's names to the layout's columns.
func (d *CSVDecoder) header(line []byte) bool {
	cols := make([]int, 0, len(d.fields))
	found := make([]bool, len(d.fields))
	last := -1
	for p := 0; p <= len(line); {
		start := p
		val, next, ok := d.field(line, p)
		if !ok {
			return false
		}
		name := strings.TrimSpace(string(val))
		c := d.layout.Lookup(name)
		if c >= 0 {
			if found[c] {
				return d.e.setNoText(start+1, c, "column named twice in the header")
			}
			found[c] = true
			last = len(cols)
		}
		cols = append(cols, c)
		p = next
	}
	for c, ok := range found {
		if !ok {
			return d.e.set(0, c, "the header has no such column; it has", line)
		}
	}
	d.fieldCol = cols[:last+1]
	return true
}
