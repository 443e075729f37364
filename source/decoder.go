package source

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/saber-hx/saber-hx/strview"
)

// Decoder turns whole records into whole tuples of a Layout. A record
// is a line, but for a CSV record whose quoted fields hold line breaks.
// The caller owns both buffers; a Decoder keeps the line count, so that
// error messages name the right line however src is cut.
type Decoder interface {
	// Decode decodes the whole records at the start of src into whole
	// tuples at the start of dst, stopping at the first incomplete record
	// (one whose last line has no '\n', unless atEOF: then the end of src
	// ends it) or when dst has no room for another tuple. It returns the
	// tuples written and the bytes of src consumed (whole records: the
	// caller keeps src[consumed:] for the next call). With OnError Fail,
	// a record that does not parse stops it with an *Error: consumed ends
	// before that record and a second call reports it again. With Skip
	// the record is counted (Malformed) and passed over, and err is nil.
	// An error of Options.Strings stops it too, returned as it is, with
	// consumed before the record that asked for the memory.
	Decode(dst, src []byte, atEOF bool) (tuples, consumed int, err error)
	// TupleSize is the size of a tuple in dst.
	TupleSize() int
	// Lines is the number of lines consumed so far (the header, empty
	// lines and the line breaks inside quoted CSV fields included).
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
	// Strings gives the memory of the String values longer than
	// strview.MaxInline bytes (shorter ones are inline in their view):
	// n bytes (at least), outside the Go heap (strview's rule: an Arena's,
	// a ring's mapping), that stay valid and unchanged for as long as the
	// tuples are read. A decoder asks once per record that has long
	// strings, for all of them together, after the record parsed (where
	// they lie close together in the text, for the stretch from the
	// first to the end of the last, at most twice their bytes, copied as
	// one). It may block (back-pressure); an error stops Decode and is
	// returned (ErrStringsLater: see there). It must be set for a layout with String columns
	// (NewCSVDecoder and NewJSONDecoder refuse one without it);
	// ArenaStrings adapts an Arena.
	Strings func(n int) ([]byte, error)
	// DictCaches, where set, are the caches of the dictionaries of the
	// layout's encoded columns (Column.Dict) that the decoder uses, kept
	// by its caller from one decoder to the next it makes on the same
	// goroutine (a decoder per block of input): each string is then
	// looked up in its dictionary once per goroutine rather than once per
	// decoder. nil: the decoder makes caches of its own.
	DictCaches DictCaches
	// RefInput lets the views of long strings that need no unescaping
	// point where the strings lie in the text given to Decode rather
	// than into a copy in Strings' memory (which then holds the
	// unescaped ones alone). The caller keeps that text unchanged, and
	// outside the Go heap (strview's rule: an Arena's memory), for as
	// long as the tuples are read: a pool's block of input, freed with
	// the block's tuples. Not for a Reader, whose buffer moves on.
	RefInput bool
	// Continues says that the text given to Decode does not start the
	// input (a pool's block after the first): a byte order mark at its
	// start is a record's text, not the input's mark.
	Continues bool
}

// DictCaches are one goroutine's caches of dictionaries, by dictionary
// (Options.DictCaches).
type DictCaches map[*strview.Dict]*strview.DictCache

// of is d's cache, made where there is none.
func (c DictCaches) of(d *strview.Dict) *strview.DictCache {
	dc := c[d]
	if dc == nil {
		dc = strview.NewDictCache(d)
		c[d] = dc
	}
	return dc
}

// ArenaStrings is an Options.Strings that takes the memory from a: the
// strings live until a's Reset or Free.
func ArenaStrings(a *strview.Arena) func(n int) ([]byte, error) {
	return func(n int) ([]byte, error) { return a.Alloc(n), nil }
}

// core is what both decoders share: the layout, the counters, the error
// of the current record and its long strings waiting for memory.
type core struct {
	layout    *Layout
	fields    []field
	ts        int
	input     string
	skip      bool
	lines     int64 // lines consumed
	line      int64 // the line the current record starts on
	malformed int64
	first     error
	colBase   int  // added to columns: 3 on a first line that had a BOM
	continues bool // Options.Continues: no BOM at the start
	e         errState

	strings    func(n int) ([]byte, error)
	refInput   bool      // Options.RefInput
	hasStrings bool      // the layout has String columns
	base       []byte    // the current record's text in src
	pend       []pending // the current record's long strings
	pendBytes  int       // their bytes
	strBuf     []byte    // the current record's unescaped strings
}

// pending is a long string of the current record: its text,
// base[pos:pos+n] or (inBuf) strBuf[pos:pos+n], and its view's offset in
// the tuple (-1: overwritten by a later value of the column). No
// pointers: appending one costs no write barrier.
type pending struct {
	off, pos, n int
	inBuf       bool
}

func newCore(l *Layout, o Options) (core, error) {
	c := core{layout: l, ts: l.TupleSize, input: o.Input, skip: o.OnError == Skip, strings: o.Strings, refInput: o.RefInput, continues: o.Continues}
	if l.TimeUnit > Nanoseconds {
		return c, fmt.Errorf("source: layout has unknown time unit %d", uint8(l.TimeUnit))
	}
	caches := o.DictCaches
	if caches == nil {
		caches = DictCaches{}
	}
	c.fields = prepare(l, caches)
	for _, f := range c.fields {
		if f.kind == String {
			if o.Strings == nil {
				return c, fmt.Errorf("source: column %q is a string: Options.Strings must give the memory of long strings", f.name)
			}
			c.hasStrings = true
		}
	}
	return c, nil
}

func (c *core) TupleSize() int      { return c.ts }
func (c *core) Lines() int64        { return c.lines }
func (c *core) Malformed() int64    { return c.malformed }
func (c *core) FirstSkipped() error { return c.first }
func (c *core) Input() string       { return c.input }

// failed handles the current record's error: nil when it is skipped,
// the error when decoding stops (the record is then not consumed).
func (c *core) failed() error {
	if c.skip {
		c.malformed++
		if c.first == nil {
			c.first = c.build()
		}
		return nil
	}
	return c.build()
}

// build turns the current error into an *Error.
func (c *core) build() *Error {
	e := &Error{Input: c.input, Line: c.line, Msg: c.e.msg}
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

// ErrStringsLater, wrapped in an error of Options.Strings, says that the
// memory for the record's strings comes only once the tuples decoded so
// far are handed on (a stream's string heap full of the strings of tuples
// not yet committed, which only their commit lets it free): the caller
// commits them and calls again, and the record is decoded then. Reader
// returns it without keeping it, as it keeps other errors.
var ErrStringsLater = errors.New("source: the memory of the strings comes once the tuples decoded are handed on")

// TrimBOM returns b without a UTF-8 byte order mark at its start.
func TrimBOM(b []byte) []byte {
	if len(b) >= len(bom) && string(b[:len(bom)]) == bom {
		return b[len(bom):]
	}
	return b
}

// nextLine cuts the next line of src at pos: the line without its "\n"
// or "\r\n", the position after it, and false if src holds no whole line.
// It makes it the current record's line (the caller counts it once it
// is consumed) and drops a BOM at the start of the input's first line.
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
	c.line = c.lines + 1
	c.colBase = 0
	if c.lines == 0 && !c.continues && len(line) >= 3 && string(line[:3]) == bom {
		line = line[3:]
		c.colBase = 3
	}
	return line, next, true
}

// startRecord starts a record whose text is base (the long strings not
// unescaped are in it), forgetting an earlier record's.
func (c *core) startRecord(base []byte) {
	c.base = base
	c.pend = c.pend[:0]
	c.pendBytes = 0
	c.strBuf = c.strBuf[:0]
}

// putString stores string s as f's value in t: inline when short, else
// left for flush. s is in src (the caller's, unchanged while Decode runs)
// or, when inBuf, strBuf[b0:] (unescaped there).
func (c *core) putString(t []byte, f *field, s []byte, inBuf bool, b0 int) {
	if len(c.pend) > 0 {
		c.unpend(f.off)
	}
	c.putNew(t, f, s, inBuf, b0)
}

// putNew is putString for a column with no value yet in t.
func (c *core) putNew(t []byte, f *field, s []byte, inBuf bool, b0 int) {
	if f.dict != nil {
		// The view points into the dictionary: nothing left for flush.
		le.PutUint32(t[f.numAt:], uint32(f.dict.Put(t[f.off:f.off+strview.Size], s)))
		if inBuf {
			c.strBuf = c.strBuf[:b0]
		}
		return
	}
	if len(s) <= strview.MaxInline || (c.refInput && !inBuf) {
		strview.PutRef(t[f.off:f.off+strview.Size], s)
		if inBuf {
			c.strBuf = c.strBuf[:b0]
		}
		return
	}
	c.pendBytes += len(s)
	if !inBuf {
		b0 = int(uintptr(unsafe.Pointer(unsafe.SliceData(s))) - uintptr(unsafe.Pointer(unsafe.SliceData(c.base))))
	}
	c.pend = append(c.pend, pending{off: f.off, pos: b0, n: len(s), inBuf: inBuf})
}

// unpend drops the long string waiting for the view at off (a JSON key
// given twice: its last value counts).
func (c *core) unpend(off int) {
	for i := range c.pend {
		if c.pend[i].off == off {
			c.pend[i].off = -1
			c.pendBytes -= c.pend[i].n
		}
	}
}

// setNull makes f NULL in t: its bytes zero, its bit set.
func (c *core) setNull(t []byte, f *field) {
	if f.kind == String && len(c.pend) > 0 {
		c.unpend(f.off)
	}
	clear(t[f.off : f.off+f.size])
	if f.dict != nil {
		clear(t[f.numAt : f.numAt+4])
	}
	t[f.nullAt] |= f.nullMask
}

// flush copies the record's long strings into memory from Options.Strings
// and writes their views into t.
func (c *core) flush(t []byte) error {
	n := c.pendBytes
	if n == 0 {
		return nil
	}
	if lo, hi, ok := c.pendSpan(); ok && hi-lo <= 2*n {
		return c.flushSpan(t, lo, hi)
	}
	mem, err := c.memory(n)
	if err != nil {
		return err
	}
	for i := range c.pend {
		p := &c.pend[i]
		if p.off < 0 {
			continue
		}
		s := c.base[p.pos : p.pos+p.n]
		if p.inBuf {
			s = c.strBuf[p.pos : p.pos+p.n]
		}
		m := mem[:len(s):len(s)]
		mem = mem[len(s):]
		copy(m, s)
		strview.PutRef(t[p.off:p.off+strview.Size], m)
	}
	return nil
}

// memory is n bytes from Options.Strings, an error where it gave fewer.
func (c *core) memory(n int) ([]byte, error) {
	mem, err := c.strings(n)
	if err != nil {
		return nil, err
	}
	if len(mem) < n {
		return nil, fmt.Errorf("source: Options.Strings gave %d bytes for %d", len(mem), n)
	}
	return mem, nil
}

// pendSpan is the stretch of the record's text from its first long
// string to the end of its last, ok false where one is unescaped (in
// strBuf, not in the text).
func (c *core) pendSpan() (lo, hi int, ok bool) {
	lo, hi = len(c.base), 0
	for i := range c.pend {
		p := &c.pend[i]
		if p.off < 0 {
			continue
		}
		if p.inBuf {
			return 0, 0, false
		}
		lo, hi = min(lo, p.pos), max(hi, p.pos+p.n)
	}
	return lo, hi, hi > lo
}

// flushSpan is flush for long strings that lie in the record's text
// base[lo:hi], most of it theirs (a record's long strings are often
// neighbours): one copy of the stretch, the views pointing into it, where
// a copy per string cost a call and its bounds per string.
func (c *core) flushSpan(t []byte, lo, hi int) error {
	mem, err := c.memory(hi - lo)
	if err != nil {
		return err
	}
	copy(mem, c.base[lo:hi])
	for i := range c.pend {
		p := &c.pend[i]
		if p.off < 0 {
			continue
		}
		a := p.pos - lo
		strview.PutRef(t[p.off:p.off+strview.Size], mem[a:a+p.n:a+p.n])
	}
	return nil
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
