package source

import (
	"errors"
	"io"
	"os"
	"strconv"
)

// DefaultBufferSize is a Reader's buffer unless told otherwise.
const DefaultBufferSize = 256 << 10

// MaxLineSize is the longest record a Reader accepts (a line, or the
// lines of a CSV record with line breaks in quoted fields): its buffer
// grows to hold a longer one than it has room for, up to this.
const MaxLineSize = 64 << 20

// ErrShortBuffer is Fill's error for a dst with no room for one tuple.
var ErrShortBuffer = errors.New("source: destination smaller than one tuple")

// Reader decodes the records an io.Reader gives into tuples, through a
// buffer it reuses.
type Reader struct {
	r          io.Reader
	d          Decoder
	buf        []byte
	start, end int // the undecoded bytes: buf[start:end]
	eof        bool
	err        error // sticky: returned by every later Fill
	maxLine    int   // MaxLineSize; tests lower it
}

// NewReader returns a Reader of r's records through d, with a buffer of
// bufSize bytes (DefaultBufferSize if 0 or less).
func NewReader(r io.Reader, d Decoder, bufSize int) *Reader {
	if bufSize <= 0 {
		bufSize = DefaultBufferSize
	}
	return &Reader{r: r, d: d, buf: make([]byte, bufSize), maxLine: MaxLineSize}
}

// Decoder is the reader's decoder (for its counters).
func (r *Reader) Decoder() Decoder { return r.d }

// Fill writes whole tuples at the start of dst until it is full (rounded
// down to whole tuples) or the input ends, and returns the bytes written.
// At the end of the input (a last record without '\n' is decoded) it
// returns io.EOF once every tuple has been returned: n > 0 comes with a
// nil error, and the next call returns 0, io.EOF. A record that does not
// parse (OnError Fail) or a read error returns the tuples before it with
// the error, which every later call returns again. Fill blocks until dst
// is full or the input ends.
func (r *Reader) Fill(dst []byte) (n int, err error) { return r.fill(dst, false) }

// FillSome is Fill for live streams (a pipe, standard input): it returns
// as soon as it has written at least one tuple and decoded every whole
// record its buffer holds, instead of reading on until dst is full, so
// that tuples do not wait for more input. (A CSV record whose quoted
// field is still open at the end of what has been read waits for more.) n > 0 with a nil error need not
// fill dst.
func (r *Reader) FillSome(dst []byte) (n int, err error) { return r.fill(dst, true) }

func (r *Reader) fill(dst []byte, some bool) (n int, err error) {
	if r.err != nil {
		return 0, r.err
	}
	ts := r.d.TupleSize()
	if len(dst) < ts {
		return 0, ErrShortBuffer
	}
	dst = dst[:len(dst)/ts*ts]
	for {
		t, c, err := r.d.Decode(dst[n:], r.buf[r.start:r.end], r.eof)
		r.start += c
		n += t * ts
		if err != nil {
			if !errors.Is(err, ErrStringsLater) {
				r.err = err
			}
			return n, err
		}
		if n == len(dst) || (some && n > 0) {
			return n, nil
		}
		if r.eof {
			r.err = io.EOF
			if n > 0 {
				return n, nil
			}
			return 0, io.EOF
		}
		if err := r.more(); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				r.err = err // a read ended by its deadline may be tried again
			}
			return n, err
		}
	}
}

// more reads into the buffer, making room first: the undecoded bytes move
// to its start, and it grows if they fill it (a record longer than it).
func (r *Reader) more() error {
	if r.start > 0 {
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
	}
	if r.end == len(r.buf) {
		if len(r.buf) >= r.maxLine {
			return &Error{Input: r.d.Input(), Line: r.d.Lines() + 1, Msg: "record longer than " + strconv.Itoa(r.maxLine) + " bytes"}
		}
		nb := make([]byte, max(min(2*len(r.buf), r.maxLine), len(r.buf)+1))
		copy(nb, r.buf[:r.end])
		r.buf = nb
	}
	m, err := r.r.Read(r.buf[r.end:])
	r.end += m
	if err == io.EOF {
		r.eof = true
		return nil
	}
	return err
}
