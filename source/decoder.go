package source

import (
	"errors"
	"fmt"
)

// Decoder turns whole lines of records into whole tuples of a Layout.
// The caller owns both buffers; a Decoder keeps the line count, so that
// error messages name the right line however src is cut.
type Decoder interface {
	// Decode decodes the whole lines at the start of src into whole
	// tuples at the start of dst, stopping at the first incomplete line
	// (one without '\n', unless atEOF: then the end of src ends the last
	// line) or when dst has no room for another tuple. It returns the
	// tuples written and the bytes of src consumed (whole lines: the
	// caller keeps src[consumed:] for the next call). With OnError Fail,
	// a line that does not parse stops it with an *Error: consumed ends
	// before that line and a second call reports it again. With Skip the
	// line is counted (Malformed) and passed over, and err is nil.
	Decode(dst, src []byte, atEOF bool) (tuples, consumed int, err error)
	// TupleSize is the size of a tuple in dst.
	TupleSize() int
	// Lines is the number of lines consumed so far (the header and empty
	// lines included).
	Lines() int64
	// Malformed is the number of records skipped (OnError Skip).
	Malformed() int64
	// FirstSkipped is the error of the first record skipped, nil if none.
	FirstSkipped() error
	// Input is the input's name, as errors give it.
	Input() string
}

// Options are the settings both decoders share.
type Options struct {
	Input   string  // the input's name in errors, such as "events.csv"
	OnError OnError // Fail (default) or Skip
}

// core is what both decoders share: the layout, the counters and the
// error of the current line.
type core struct {
	layout    *Layout
	fields    []field
	ts        int
	input     string
	skip      bool
	lines     int64 // lines consumed; while a line is decoded, its number
	malformed int64
	first     error
	colBase   int // added to columns: 3 on a first line that had a BOM
	e         errState
}

func newCore(l *Layout, o Options) core {
	return core{layout: l, fields: prepare(l), ts: l.TupleSize, input: o.Input, skip: o.OnError == Skip}
}

func (c *core) TupleSize() int      { return c.ts }
func (c *core) Lines() int64        { return c.lines }
func (c *core) Malformed() int64    { return c.malformed }
func (c *core) FirstSkipped() error { return c.first }
func (c *core) Input() string       { return c.input }

// failed handles the current line's error: nil when it is skipped, the
// error when decoding stops (the line is then not consumed).
func (c *core) failed() error {
	if c.skip {
		c.malformed++
		if c.first == nil {
			c.first = c.build()
		}
		return nil
	}
	err := c.build()
	c.lines--
	return err
}

// build turns the current error into an *Error.
func (c *core) build() *Error {
	e := &Error{Input: c.input, Line: c.lines, Msg: c.e.msg}
	if c.e.col > 0 {
		e.Column = c.e.col + c.colBase
	}
	if c.e.field >= 0 && c.e.field < len(c.fields) {
		e.Field = c.fields[c.e.field].name
	}
	if c.e.quote {
		e.Msg += " " + quoteTrunc(c.e.text)
	}
	e.Msg += c.e.extra
	return e
}

// bom is the UTF-8 byte order mark, dropped at the start of an input.
const bom = "\xef\xbb\xbf"

// nextLine cuts the next line of src at pos: the line without its "\n"
// or "\r\n", the position after it, and false if src holds no whole line.
// It counts the line and drops a BOM at the start of line 1.
func (c *core) nextLine(src []byte, pos int, atEOF bool) (line []byte, next int, ok bool) {
	rest := src[pos:]
	if len(rest) == 0 {
		return nil, pos, false
	}
	nl := indexNL(rest)
	if nl < 0 {
		if !atEOF {
			return nil, pos, false
		}
		line, next = rest, len(src)
	} else {
		line, next = rest[:nl], pos+nl+1
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	c.lines++
	c.colBase = 0
	if c.lines == 1 && len(line) >= 3 && string(line[:3]) == bom {
		line = line[3:]
		c.colBase = 3
	}
	return line, next, true
}

// NewDecoder returns the decoder of a format, "csv" or "json" (as the SQL
// compiler's source options name them); header applies to CSV only.
func NewDecoder(format string, l *Layout, o Options, header bool) (Decoder, error) {
	switch format {
	case "csv":
		d, err := NewCSVDecoder(l, CSVOptions{Options: o, Header: header})
		if err != nil {
			return nil, err
		}
		return d, nil
	case "json":
		if header {
			return nil, errors.New("source: header applies to format csv, not json")
		}
		return NewJSONDecoder(l, JSONOptions{Options: o})
	}
	return nil, fmt.Errorf("source: format %q: want csv or json", format)
}
