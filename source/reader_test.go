package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/strview"
)

// readAll fills dst-sized buffers from r until io.EOF or an error.
func readAll(t *testing.T, r *Reader, dstSize int) ([]byte, error) {
	var out []byte
	dst := make([]byte, dstSize)
	short := false
	for {
		n, err := r.Fill(dst)
		require.Zero(t, n%r.Decoder().TupleSize())
		out = append(out, dst[:n]...)
		if short {
			require.Zero(t, n, "after a short fill, the end")
			require.ErrorIs(t, err, io.EOF)
		}
		if err != nil {
			return out, err
		}
		short = n < len(dst)/128*128 // the last tuples: io.EOF next
	}
}

func TestReader(t *testing.T) {
	l := ysbLayout(t)
	js, cs, want := ysbInput(1000, 11)
	for _, tc := range []struct {
		name string
		src  []byte
		json bool
	}{{"json", js, true}, {"csv", cs, false}, {"json no final newline", js[:len(js)-1], true}, {"csv no final newline", cs[:len(cs)-1], false}} {
		for _, rd := range []struct {
			name string
			wrap func(io.Reader) io.Reader
			buf  int
		}{
			{"plain", func(r io.Reader) io.Reader { return r }, 0},
			{"one byte", iotest.OneByteReader, 16}, // lines longer than the buffer: it grows
			{"half", iotest.HalfReader, 1000},
			{"data+EOF", iotest.DataErrReader, 333},
		} {
			var d Decoder
			if tc.json {
				d, _ = NewJSONDecoder(l, JSONOptions{})
			} else {
				d, _ = NewCSVDecoder(l, CSVOptions{})
			}
			r := NewReader(rd.wrap(bytes.NewReader(tc.src)), d, rd.buf)
			got, err := readAll(t, r, 7*128+5)
			assert.ErrorIs(t, err, io.EOF, "%s %s", tc.name, rd.name)
			assert.Equal(t, want, got, "%s %s", tc.name, rd.name)
			assert.Equal(t, int64(1000), d.Lines())
			n, err := r.Fill(make([]byte, 128))
			assert.Equal(t, 0, n)
			assert.ErrorIs(t, err, io.EOF, "EOF again")
		}
	}
}

// TestReaderLineNumbers: an error's line is exact however the input is
// cut into reads.
func TestReaderLineNumbers(t *testing.T) {
	l := ysbLayout(t)
	js, _, want := ysbInput(300, 12)
	lines := strings.SplitAfter(string(js), "\n")
	lines[250] = strings.Replace(lines[250], `"event_type": "`, `"event_type": "x`, 1)
	lines[100] = "\r\n" // an empty line: counted, no tuple
	src := strings.Join(lines, "")
	for _, bufSize := range []int{16, 100, 4096, 0} {
		d, _ := NewJSONDecoder(l, JSONOptions{Options: Options{Input: "ev.json"}})
		r := NewReader(iotest.HalfReader(strings.NewReader(src)), d, bufSize)
		got, err := readAll(t, r, 3*128)
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, int64(251), e.Line, "buffer %d", bufSize)
		assert.Equal(t, "event_type", e.Field)
		assert.Equal(t, strings.Index(lines[250], `"x`)+1, e.Column)
		assert.Equal(t, append(append([]byte(nil), want[:100*128]...), want[101*128:250*128]...), got)
		_, err2 := r.Fill(make([]byte, 128))
		assert.Equal(t, err, err2, "sticky")
	}
	// Skipping: every other tuple comes, the bad line counted.
	d, _ := NewJSONDecoder(l, JSONOptions{Options: Options{OnError: Skip}})
	r := NewReader(strings.NewReader(src), d, 64)
	got, err := readAll(t, r, 3*128)
	assert.ErrorIs(t, err, io.EOF)
	assert.Len(t, got, 298*128)
	assert.Equal(t, int64(1), d.Malformed())
	assert.Contains(t, d.FirstSkipped().Error(), `line 251, column`)
}

func TestReaderErrors(t *testing.T) {
	l := ysbLayout(t)
	d, _ := NewCSVDecoder(l, CSVOptions{})
	r := NewReader(strings.NewReader(""), d, 0)
	n, err := r.Fill(make([]byte, 127))
	assert.Equal(t, 0, n)
	assert.ErrorIs(t, err, ErrShortBuffer)
	n, err = r.Fill(make([]byte, 128))
	assert.Equal(t, 0, n)
	assert.ErrorIs(t, err, io.EOF, "an empty input")

	_, cs, want := ysbInput(2, 1)
	boom := errors.New("boom")
	d, _ = NewCSVDecoder(l, CSVOptions{})
	r = NewReader(io.MultiReader(bytes.NewReader(cs), iotest.ErrReader(boom)), d, 0)
	got, err := readAll(t, r, 4*128)
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, want, got)
	_, err = r.Fill(make([]byte, 128))
	assert.ErrorIs(t, err, boom)
}

func TestReaderLongLine(t *testing.T) {
	l := ysbLayout(t)
	js, _, want := ysbInput(3, 2)
	lines := strings.SplitAfter(string(js), "\n")
	long := strings.Replace(lines[1], `{"user_id"`, `{"pad": "`+strings.Repeat("x", 1000)+`", "user_id"`, 1)
	src := lines[0] + long + lines[2]
	for _, maxLine := range []int{len(long), len(long) - 1} {
		d, _ := NewJSONDecoder(l, JSONOptions{Options: Options{Input: "in"}})
		r := NewReader(strings.NewReader(src), d, 64)
		r.maxLine = maxLine
		got, err := readAll(t, r, 128)
		if maxLine == len(long) {
			assert.ErrorIs(t, err, io.EOF)
			assert.Equal(t, want, got)
		} else {
			assert.EqualError(t, err, "in: line 2: record longer than "+strconv.Itoa(maxLine)+" bytes")
			assert.Equal(t, want[:128], got)
		}
	}
}

func TestNewDecoder(t *testing.T) {
	l := ysbLayout(t)
	d, err := NewDecoder("csv", l, Options{Input: "a"}, true)
	require.NoError(t, err)
	assert.IsType(t, &CSVDecoder{}, d)
	assert.Equal(t, "a", d.Input())
	d, err = NewDecoder("json", l, Options{}, false)
	require.NoError(t, err)
	assert.IsType(t, &JSONDecoder{}, d)
	assert.Equal(t, 128, d.TupleSize())
	_, err = NewDecoder("json", l, Options{}, true)
	assert.EqualError(t, err, "source: header applies to format csv, not json")
	_, err = NewDecoder("avro", l, Options{}, false)
	assert.EqualError(t, err, `source: format "avro": want csv or json`)
}

// TestFillSome: tuples come as their lines arrive, not when dst is full.
func TestFillSome(t *testing.T) {
	l := ysbLayout(t)
	js, _, want := ysbInput(3, 4)
	pr, pw := io.Pipe()
	d, _ := NewJSONDecoder(l, JSONOptions{})
	r := NewReader(pr, d, 0)
	lines := strings.SplitAfter(string(js), "\n")
	dst := make([]byte, 100*128)
	go func() {
		_, _ = pw.Write([]byte(lines[0] + lines[1][:10]))
	}()
	n, err := r.FillSome(dst)
	require.NoError(t, err)
	assert.Equal(t, want[:128], dst[:n])
	go func() {
		_, _ = pw.Write([]byte(lines[1][10:] + lines[2]))
		_ = pw.Close()
	}()
	n, err = r.FillSome(dst)
	require.NoError(t, err)
	assert.Equal(t, want[128:], dst[:n])
	n, err = r.FillSome(dst)
	assert.Equal(t, 0, n)
	assert.ErrorIs(t, err, io.EOF)
}

// TestReaderStringsLater: a Strings error wrapping ErrStringsLater stops
// Fill before the record that asked, is returned, and is not kept: the
// next Fill decodes that record (a stream's heap had room once the tuples
// before it were committed).
func TestReaderStringsLater(t *testing.T) {
	arena := strview.NewArena(0)
	defer arena.Free()
	later := 2 // the second record's ask is refused once
	asks := 0
	d, err := NewCSVDecoder(csvLayout(t), CSVOptions{Options: Options{Strings: func(n int) ([]byte, error) {
		asks++
		if asks == later {
			return nil, fmt.Errorf("heap full: %w", ErrStringsLater)
		}
		return arena.Alloc(n), nil
	}}})
	require.NoError(t, err)
	long := strings.Repeat("s", 40)
	src := fmt.Sprintf("1,a%s,,,1\n2,b%s,,,2\n3,c%s,,,3\n", long, long, long)
	r := NewReader(strings.NewReader(src), d, 0)
	dst := make([]byte, 10*48)
	n, err := r.Fill(dst)
	require.ErrorIs(t, err, ErrStringsLater)
	assert.Equal(t, 48, n, "the record before the one that asked")
	m, err := r.Fill(dst[n:])
	require.NoError(t, err)
	assert.Equal(t, 2*48, m, "the record that asked, and the next")
	for i, want := range []string{"a" + long, "b" + long, "c" + long} {
		assert.Equal(t, want, string(strview.Bytes(dst[i*48+8:i*48+24])))
	}
}
