package source

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/strview"
)

// checkError: an error is an *Error naming a line of src (and a column
// within it, when it names one).
func checkError(t *testing.T, src []byte, err error, name string) {
	var e *Error
	require.True(t, errors.As(err, &e), "%s: not an *Error: %v", name, err)
	lines := bytes.Split(src, []byte("\n"))
	require.True(t, e.Line >= 1 && e.Line <= int64(len(lines)), "%s: line %d of %d: %v", name, e.Line, len(lines), err)
	line := lines[e.Line-1]
	require.LessOrEqual(t, e.Column, len(line)+1, "%s: %v", name, err)
	require.Contains(t, err.Error(), "line "+strconv.FormatInt(e.Line, 10), name)
}

// viaReader decodes src through a Reader reading a byte at a time into a
// small buffer: what Decode gives on the whole of src.
func viaReader(t *testing.T, d Decoder, src []byte) ([]byte, error) {
	r := NewReader(iotest.OneByteReader(bytes.NewReader(src)), d, 8)
	var out []byte
	dst := make([]byte, 3*d.TupleSize())
	for {
		n, err := r.Fill(dst)
		out = append(out, dst[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

func FuzzCSV(f *testing.F) {
	l := fastLayout(f)
	r := rand.New(rand.NewPCG(8, 9))
	var recs []record
	for range 3 {
		recs = append(recs, randRecord(r, l))
	}
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
	f.Add(csvOf(f, recs, all, nil, false), false)
	f.Add(csvOf(f, recs, all, nil, true), false)
	f.Add(csvOf(f, recs, []int{8, 7, 6, 5, 4, 3, 2, 1, 0}, []string{"i64", "ip", "color", "name", "id", "f32", "f64", "i32", "t"}, false), true)
	f.Add([]byte("\"a\"\"b\",\"\n\n\r\n1,2"), false)
	f.Add([]byte("1,2,3e4,5,01234567-89ab-cdef-0123-456789abcdef,n,red,1.2.3.4,-5\n+1,-2,3,4,01234567-89ab-cdef-0123-456789ABCDEF,n,é,1.2.3.4,99999999999999999999"), false)
	// strLayout's records (the round trip below reads src as strings).
	sl := strLayout(f)
	var srecs []strRecord
	for range 3 {
		srecs = append(srecs, randStrRecord(r, sl, true))
	}
	f.Add(strCSV(r, srecs, "\n"), false)
	f.Add(strCSV(r, srecs, "\r\n"), false)
	f.Add([]byte("2024-03-01 10:00:01,\"a\nb\",\"\",,,,,,1,true\n1,x\"y,z,1,0,1.5,-1,blue,2,FALSE\n1,\"unterminated,"), false)
	f.Add([]byte("ts,name,note,n,ok,f,at,color,id,flag,extra\n1,a,b,,,,,,1,1,\"x\r\ny\"\n"), true)
	f.Fuzz(func(t *testing.T, src []byte, header bool) {
		fuzzStringsCSV(t, src, header)
		mk := func() Decoder {
			d, err := NewCSVDecoder(l, CSVOptions{Header: header, Options: Options{Input: "f.csv"}})
			require.NoError(t, err)
			return d
		}
		got, err := decodeAll(t, mk(), src)
		if err != nil {
			checkRecordError(t, src, err, "csv")
		}
		got2, err2 := viaReader(t, mk(), src)
		assert.Equal(t, err, err2, "reader")
		assert.Equal(t, got, got2, "reader")
		slow := mk().(*CSVDecoder)
		slow.noFastFields = true
		got3, err3 := decodeAll(t, slow, src)
		assert.Equal(t, err, err3, "fields in place")
		assert.Equal(t, got, got3, "fields in place")
	})
}

func FuzzJSON(f *testing.F) {
	l := fastLayout(f)
	r := rand.New(rand.NewPCG(8, 10))
	for i := range 4 {
		var src []byte
		order := r.Perm(len(l.Columns))
		for j := range 3 {
			rec := randRecord(r, l)
			line := jsonOf(f, l, rec, order, i%2 == 0)
			if j == 2 {
				line = variant(r, l, rec)
			}
			src = append(append(src, line...), '\n')
		}
		f.Add(src)
	}
	js, _, _ := ysbInput(2, 3)
	f.Add(bytes.ReplaceAll(js, []byte(`"event_time"`), []byte(`"t"`)))
	f.Add([]byte(`{"t": 1, "x": [{"a": "\ud83d\ude00\u00e9\/"}, -0.5e-3, true, false, null]}` + "\n" + `{"t": "+1"}`))
	sl := strLayout(f)
	for i := range 3 {
		var src []byte
		for range 4 {
			rec := randStrRecord(r, sl, i == 2)
			src = append(append(src, strJSON(r, sl, rec)...), '\n')
		}
		f.Add(src)
	}
	f.Add([]byte(`{"ts": "2024-03-01T10:00:01Z", "name": "\ud800\udc00\ud800", "id": 1, "flag": true, "note": null, "at": 1.5}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		fuzzStringsJSON(t, src)
		mk := func(noFast, skip bool) *JSONDecoder {
			o := JSONOptions{NoFastPath: noFast, Options: Options{Input: "f.json"}}
			if skip {
				o.OnError = Skip
			}
			d, err := NewJSONDecoder(l, o)
			require.NoError(t, err)
			return d
		}
		// Fast path and general decoder: the same tuples, the same errors.
		for _, skip := range []bool{false, true} {
			fast, slow := mk(false, skip), mk(true, skip)
			got, err := decodeAll(t, fast, src)
			want, err2 := decodeAll(t, slow, src)
			assert.Equal(t, err2, err)
			assert.Equal(t, want, got)
			assert.Equal(t, slow.Malformed(), fast.Malformed())
			if err != nil {
				checkError(t, src, err, "json")
			}
		}
		got, err := viaReader(t, mk(false, false), src)
		want, err2 := decodeAll(t, mk(false, false), src)
		assert.Equal(t, err2, err, "reader")
		assert.Equal(t, want, got, "reader")
		// Each line the decoder accepts, encoding/json accepts, with the
		// same values.
		d := mk(true, false)
		dst := make([]byte, l.TupleSize)
		for _, line := range bytes.Split(src, []byte("\n")) {
			n, _, err := d.Decode(dst, line, true)
			if err != nil || n == 0 {
				d.lines = 0
				continue
			}
			d.lines = 0
			require.True(t, json.Valid(line), "accepted, but not JSON: %q", line)
			if !utf8.Valid(line) {
				continue // encoding/json replaces bad UTF-8; the decoder keeps the bytes
			}
			assert.Equal(t, oracleTuple(t, l, line), dst, "line %q", line)
		}
	})
}

// oracleTuple is the tuple of a line the decoder accepted, by
// encoding/json and strconv.
func oracleTuple(t *testing.T, l *Layout, line []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var m map[string]any
	require.NoError(t, dec.Decode(&m))
	tu := make([]byte, l.TupleSize)
	for _, c := range l.Columns {
		v, ok := m[c.Name]
		require.True(t, ok, "no %q", c.Name)
		var s string
		switch v := v.(type) {
		case json.Number:
			s = string(v)
		case string:
			s = v
		default:
			t.Fatalf("%q: %T", c.Name, v)
		}
		dst := tu[c.Offset:]
		switch c.Kind {
		case Int64, Int32:
			bits := 64
			if c.Kind == Int32 {
				bits = 32
			}
			x, err := strconv.ParseInt(s, 10, bits)
			require.NoError(t, err, c.Name)
			if bits == 64 {
				binary.LittleEndian.PutUint64(dst, uint64(x))
			} else {
				binary.LittleEndian.PutUint32(dst, uint32(x))
			}
		case Float64:
			x, err := strconv.ParseFloat(s, 64)
			require.NoError(t, err)
			binary.LittleEndian.PutUint64(dst, math.Float64bits(x))
		case Float32:
			x, err := strconv.ParseFloat(s, 32)
			require.NoError(t, err)
			binary.LittleEndian.PutUint32(dst, math.Float32bits(float32(x)))
		case UUID:
			h := strings.ReplaceAll(s, "-", "")
			require.Len(t, s, 36)
			for i := range 16 {
				x, err := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
				require.NoError(t, err)
				dst[i] = byte(x)
			}
		case Bytes:
			require.LessOrEqual(t, len(s), c.Size)
			copy(dst, s)
		case Enum:
			i := -1
			for j, lab := range c.Labels {
				if lab == s {
					i = j
				}
			}
			require.GreaterOrEqual(t, i, 0)
			binary.LittleEndian.PutUint32(dst, uint32(i))
		case IPv4:
			parts := strings.Split(s, ".")
			require.Len(t, parts, 4)
			var x uint32
			for _, p := range parts {
				require.LessOrEqual(t, len(p), 3)
				n, err := strconv.ParseUint(p, 10, 8)
				require.NoError(t, err)
				x = x<<8 | uint32(n)
			}
			binary.LittleEndian.PutUint32(dst, x)
		}
	}
	return tu
}

// checkRecordError: an error is an *Error naming the line a record of
// src starts on, and a column within the record (from its start).
func checkRecordError(t *testing.T, src []byte, err error, name string) {
	var e *Error
	require.True(t, errors.As(err, &e), "%s: not an *Error: %v", name, err)
	lines := bytes.SplitAfter(src, []byte("\n"))
	require.True(t, e.Line >= 1 && e.Line <= int64(len(lines)), "%s: line %d of %d: %v", name, e.Line, len(lines), err)
	rest := len(bytes.Join(lines[e.Line-1:], nil))
	require.LessOrEqual(t, e.Column, rest+1, "%s: %v", name, err)
	require.Contains(t, err.Error(), "line "+strconv.FormatInt(e.Line, 10), name)
}

// fuzzPieces cuts src into n strings (empty ones too), for the round
// trips: whatever bytes the fuzzer gives become string values.
func fuzzPieces(src []byte, n int) []string {
	out := make([]string, n)
	for i := range n {
		if len(src) == 0 {
			break
		}
		k := int(src[0]) % (len(src) + 1)
		if i == n-1 {
			k = len(src)
		}
		k = min(k, len(src))
		out[i], src = string(src[:k]), src[k:]
	}
	return out
}

// fuzzStringsCSV: src decoded into strLayout's tuples does not panic,
// gives the same tuples and error whole, through a Reader and field by
// field; and its bytes as string values, written with RFC 4180 quoting,
// decode back byte for byte.
func fuzzStringsCSV(t *testing.T, src []byte, header bool) {
	l := strLayout(t)
	a := strview.NewArena(0)
	defer a.Free()
	strs := ArenaStrings(a)
	mk := func() *CSVDecoder {
		d, err := NewCSVDecoder(l, CSVOptions{Header: header, Options: Options{Input: "s.csv", Strings: strs}})
		require.NoError(t, err)
		return d
	}
	got, err := decodeAll(t, mk(), src)
	if err != nil {
		checkRecordError(t, src, err, "csv strings")
	}
	got2, err2 := viaReader(t, mk(), src)
	assert.Equal(t, err, err2, "reader")
	assert.Equal(t, canonical(l, got), canonical(l, got2), "reader")
	slow := mk()
	slow.noFastFields = true
	got3, err3 := decodeAll(t, slow, src)
	assert.Equal(t, err, err3, "fields in place")
	assert.Equal(t, canonical(l, got), canonical(l, got3), "fields in place")

	// The round trip.
	pieces := fuzzPieces(src, 4)
	var text []byte
	var want []canon
	for i := 0; i < 4; i += 2 {
		text = fmt.Appendf(text, "%d,%s,%s,,,,,,%d,1\r\n", i, csvQuote(pieces[i], i == 0), csvQuote(pieces[i+1], false), i)
		tu := make([]byte, l.TupleSize)
		le.PutUint64(tu, uint64(i))
		le.PutUint32(tu[76:], uint32(i))
		le.PutUint32(tu[80:], 1)
		tu[88] = 0b111110 // n, ok, f, at, color: NULL
		want = append(want, canon{Fixed: tu, Strs: []string{pieces[i], pieces[i+1]}})
	}
	d, err := NewCSVDecoder(l, CSVOptions{Options: Options{Strings: strs}})
	require.NoError(t, err)
	out, err := decodeAll(t, d, text)
	require.NoError(t, err, "%q", text)
	assert.Equal(t, want, canonical(l, out), "%q", text)
	d, err = NewCSVDecoder(l, CSVOptions{Options: Options{Strings: strs}})
	require.NoError(t, err)
	out, err = viaReader(t, d, text)
	require.NoError(t, err, "%q", text)
	assert.Equal(t, want, canonical(l, out), "reader: %q", text)
}

// fuzzStringsJSON: src decoded into strLayout's tuples by the fast path
// and the general decoder gives the same tuples and errors, through a
// Reader too; and its bytes as string values, written by encoding/json,
// decode back to what encoding/json reads.
func fuzzStringsJSON(t *testing.T, src []byte) {
	l := strLayout(t)
	a := strview.NewArena(0)
	defer a.Free()
	strs := ArenaStrings(a)
	mk := func(noFast, skip bool) *JSONDecoder {
		o := JSONOptions{NoFastPath: noFast, Options: Options{Input: "s.json", Strings: strs}}
		if skip {
			o.OnError = Skip
		}
		d, err := NewJSONDecoder(l, o)
		require.NoError(t, err)
		return d
	}
	for _, skip := range []bool{false, true} {
		fast, slow := mk(false, skip), mk(true, skip)
		got, err := decodeAll(t, fast, src)
		want, err2 := decodeAll(t, slow, src)
		assert.Equal(t, err2, err)
		assert.Equal(t, canonical(l, want), canonical(l, got))
		assert.Equal(t, slow.Malformed(), fast.Malformed())
		if err != nil {
			checkError(t, src, err, "json strings")
		}
	}
	got, err := viaReader(t, mk(false, false), src)
	want, err2 := decodeAll(t, mk(false, false), src)
	assert.Equal(t, err2, err, "reader")
	assert.Equal(t, canonical(l, want), canonical(l, got), "reader")

	// The round trip, each line twice (the second by the fast path).
	pieces := fuzzPieces(src, 4)
	var text []byte
	var wantC []canon
	for i := 0; i < 4; i += 2 {
		n, err := json.Marshal(pieces[i])
		require.NoError(t, err)
		nt, err := json.Marshal(pieces[i+1])
		require.NoError(t, err)
		var back [2]string
		require.NoError(t, json.Unmarshal(n, &back[0]))
		require.NoError(t, json.Unmarshal(nt, &back[1]))
		line := fmt.Appendf(nil, `{"ts": %d, "name": %s, "note": %s, "id": %d, "flag": true}`+"\n", i, n, nt, i)
		text = append(append(text, line...), line...)
		tu := make([]byte, l.TupleSize)
		le.PutUint64(tu, uint64(i))
		le.PutUint32(tu[76:], uint32(i))
		le.PutUint32(tu[80:], 1)
		tu[88] = 0b111110
		c := canon{Fixed: tu, Strs: back[:]}
		wantC = append(wantC, c, c)
	}
	for _, noFast := range []bool{false, true} {
		out, err := decodeAll(t, mk(noFast, false), text)
		require.NoError(t, err, "%q", text)
		assert.Equal(t, wantC, canonical(l, out), "%q", text)
	}
}
