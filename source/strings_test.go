package source

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/strview"
)

// TestStringsRoundTrip: random records of strings (short, long, with
// quotes, separators and line breaks), timestamps, booleans and NULLs,
// written as CSV (RFC 4180) and as JSON (encoding/json), decode back
// to their values: CSV by both field paths, LF and CRLF, whole and
// through a Reader a byte at a time; JSON by both paths.
func TestStringsRoundTrip(t *testing.T) {
	l := strLayout(t)
	_, strs := testArena(t)
	r := rand.New(rand.NewPCG(5, 6))
	var recs []strRecord
	var want []canon
	for range 300 {
		rec := randStrRecord(r, l, true)
		recs = append(recs, rec)
		want = append(want, csvCanon(l, rec))
	}
	for _, eol := range []string{"\n", "\r\n"} {
		src := strCSV(r, recs, eol)
		for _, slow := range []bool{false, true} {
			d, err := NewCSVDecoder(l, CSVOptions{Options: Options{Strings: strs}})
			require.NoError(t, err)
			d.noFastFields = slow
			got, err := decodeAll(t, d, src)
			require.NoError(t, err)
			equalCanon(t, l, want, got, fmt.Sprintf("eol %q slow %v", eol, slow))
			assert.Equal(t, int64(bytes.Count(src, []byte("\n"))), d.Lines())
		}
		d, err := NewCSVDecoder(l, CSVOptions{Options: Options{Strings: strs}})
		require.NoError(t, err)
		got, err := viaReader(t, d, src)
		require.NoError(t, err)
		equalCanon(t, l, want, got, "reader")
	}
	// JSON: valid UTF-8 (encoding/json would replace the rest).
	recs, want = nil, nil
	var src []byte
	for range 300 {
		rec := randStrRecord(r, l, false)
		want = append(want, rec.want)
		src = append(append(src, strJSON(r, l, rec)...), '\n')
	}
	for _, noFast := range []bool{false, true} {
		d, err := NewJSONDecoder(l, JSONOptions{NoFastPath: noFast, Options: Options{Strings: strs}})
		require.NoError(t, err)
		got, err := decodeAll(t, d, src)
		require.NoError(t, err)
		equalCanon(t, l, want, got, fmt.Sprintf("noFast %v", noFast))
		t.Logf("fast %d slow %d", d.FastLines(), d.SlowLines())
	}
}

// csvLayout is a small layout for the CSV cases: a string, nullable
// int64 and bool, a non-nullable int32; NULL bits in byte 40.
func csvLayout(t testing.TB) *Layout {
	l, err := NewLayout(48,
		Column{Name: "t", Kind: Int64},
		Column{Name: "s", Kind: String, Offset: 8},
		Column{Name: "n", Kind: Int64, Offset: 24, Nullable: true, NullBit: 320},
		Column{Name: "b", Kind: Bool, Offset: 32, Nullable: true, NullBit: 321},
		Column{Name: "k", Kind: Int32, Offset: 36},
	)
	require.NoError(t, err)
	return l
}

// row is a decoded record of csvLayout, NULLs as nil.
type row struct {
	T    int64
	S    string
	N    any // int64 or nil
	B    any // int32 or nil
	K    int32
	Null byte // the NULL bits' byte, as a check
}

func rowsOf(l *Layout, tuples []byte) []row {
	var out []row
	for off := 0; off+l.TupleSize <= len(tuples); off += l.TupleSize {
		tu := tuples[off : off+l.TupleSize]
		r := row{T: int64(le.Uint64(tu)), S: string(strview.Bytes(tu[8:24])), K: int32(le.Uint32(tu[36:])), Null: tu[40]}
		if tu[40]&1 == 0 {
			r.N = int64(le.Uint64(tu[24:]))
		} else if le.Uint64(tu[24:]) != 0 {
			r.N = "NULL with a value"
		}
		if tu[40]&2 == 0 {
			r.B = int32(le.Uint32(tu[32:]))
		} else if le.Uint32(tu[32:]) != 0 {
			r.B = "NULL with a value"
		}
		out = append(out, r)
	}
	return out
}

// TestCSVQuoting: RFC 4180's cases, NULLs, and records that span lines.
func TestCSVQuoting(t *testing.T) {
	l := csvLayout(t)
	_, strs := testArena(t)
	long := strings.Repeat("ab,\"c\"\r\n€", 64<<10/12)
	quotedLong := `"` + strings.ReplaceAll(long, `"`, `""`) + `"`
	for _, tc := range []struct {
		name, src string
		want      []row
		lines     int64
	}{
		{"comma", "1,\"a,b\",2,true,3\n", []row{{1, "a,b", int64(2), int32(1), 3, 0}}, 1},
		{"quotes", "1,\"say \"\"hi\"\"\",2,1,3\n", []row{{1, `say "hi"`, int64(2), int32(1), 3, 0}}, 1},
		{"only a quote", "1,\"\"\"\",2,1,3\n", []row{{1, `"`, int64(2), int32(1), 3, 0}}, 1},
		{"LF inside", "1,\"line1\nline2\",2,0,3\n4,x,5,1,6\n", []row{{1, "line1\nline2", int64(2), int32(0), 3, 0}, {4, "x", int64(5), int32(1), 6, 0}}, 3},
		{"CRLF inside", "1,\"line1\r\nline2\r\n\",2,0,3\r\n4,x,5,1,6\r\n", []row{{1, "line1\r\nline2\r\n", int64(2), int32(0), 3, 0}, {4, "x", int64(5), int32(1), 6, 0}}, 4},
		{"CR alone inside", "1,\"a\rb\",2,0,3\n", []row{{1, "a\rb", int64(2), int32(0), 3, 0}}, 1},
		{"quoted numbers", "\"1\",s,\"2\",\"TRUE\",\"3\"", []row{{1, "s", int64(2), int32(1), 3, 0}}, 1},
		{"a quote in an unquoted field", "1,ab\"c,2,1,3\n", []row{{1, `ab"c`, int64(2), int32(1), 3, 0}}, 1},
		{"empty string quoted and not", "1,\"\",2,1,3\n1,,2,1,3\n", []row{{1, "", int64(2), int32(1), 3, 0}, {1, "", int64(2), int32(1), 3, 0}}, 2},
		{"NULL numbers", "1,a,,,3\n1,a,\"\",\"\",3\n", []row{{1, "a", nil, nil, 3, 3}, {1, "a", nil, nil, 3, 3}}, 2},
		{"a quoted newline in an extra field", "1,a,2,1,3,\"x\ny\",z\n4,b,5,0,6\n", []row{{1, "a", int64(2), int32(1), 3, 0}, {4, "b", int64(5), int32(0), 6, 0}}, 3},
		{"a long string", "1," + quotedLong + ",2,1,3\n", []row{{1, long, int64(2), int32(1), 3, 0}}, 1 + int64(strings.Count(long, "\n"))},
		{"UTF-8 and invalid bytes", "1,\"é€😀\xff\xfe\xc0\x80\",2,1,3\n1,\xe2\x82,2,1,3", []row{{1, "é€😀\xff\xfe\xc0\x80", int64(2), int32(1), 3, 0}, {1, "\xe2\x82", int64(2), int32(1), 3, 0}}, 2},
		{"a NUL byte", "1,a\x00b,2,1,3\n", []row{{1, "a\x00b", int64(2), int32(1), 3, 0}}, 1},
	} {
		for _, slow := range []bool{false, true} {
			d, err := NewCSVDecoder(l, CSVOptions{Options: Options{Strings: strs}})
			require.NoError(t, err)
			d.noFastFields = slow
			got, err := decodeAll(t, d, []byte(tc.src))
			require.NoError(t, err, tc.name)
			assert.Equal(t, tc.want, rowsOf(l, got), tc.name)
			assert.Equal(t, tc.lines, d.Lines(), tc.name)
		}
		d, err := NewCSVDecoder(l, CSVOptions{Options: Options{Strings: strs}})
		require.NoError(t, err)
		got, err := viaReader(t, d, []byte(tc.src))
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, rowsOf(l, got), "%s: through a reader", tc.name)
	}
}

// TestCSVStringSizes: strings of 64 KiB and 1 MiB, plain, quoted with
// quotes and line breaks, kept byte for byte, through Decode and a
// Reader with a small buffer.
func TestCSVStringSizes(t *testing.T) {
	l := csvLayout(t)
	_, strs := testArena(t)
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{64 << 10, 1 << 20} {
		plain := make([]byte, n)
		for i := range plain {
			plain[i] = "abcdefgh é€😀"[r.IntN(18)]
		}
		messy := []byte(strings.Repeat("x,\"\n\r\n", n/6))
		src := fmt.Appendf(nil, "1,%s,2,1,3\n2,%s,2,1,3\n", plain, csvQuote(string(messy), false))
		want := []row{{1, string(plain), int64(2), int32(1), 3, 0}, {2, string(messy), int64(2), int32(1), 3, 0}}
		d, err := NewCSVDecoder(l, CSVOptions{Options: Options{Strings: strs}})
		require.NoError(t, err)
		got, err := decodeAll(t, d, src)
		require.NoError(t, err)
		assert.True(t, slices.Equal(want, rowsOf(l, got)), "n %d", n)
		d, err = NewCSVDecoder(l, CSVOptions{Options: Options{Strings: strs}})
		require.NoError(t, err)
		rd := NewReader(bytes.NewReader(src), d, 4096)
		got, err = readAll(t, rd, 7*l.TupleSize)
		require.ErrorIs(t, err, io.EOF)
		assert.True(t, slices.Equal(want, rowsOf(l, got)), "n %d: reader", n)
		assert.Equal(t, int64(2+strings.Count(string(messy), "\n")), d.Lines())
	}
}

// TestCSVRecordErrors: the line in an error is the one its record starts
// on, its column counts from the record's start; a malformed record that
// spans lines is skipped whole.
func TestCSVRecordErrors(t *testing.T) {
	l := csvLayout(t)
	_, strs := testArena(t)
	for _, tc := range []struct {
		name, src, msg string
		line           int64
		// With Skip: the tuples, the lines consumed.
		tuples int
		lines  int64
	}{
		{"after a record on three lines", "1,\"x\ny\nz\",1,1,1\n2,a,bad,1,1\n3,b,1,1,1\n", `in: line 4, column 5 (field "n"): bad int64 "bad"`, 4, 2, 5},
		{"in a record on two lines", "1,\"x\ny\",bad,1,1\n3,b,1,1,1\n", `in: line 1, column 9 (field "n"): bad int64 "bad"`, 1, 1, 3},
		{"before a quoted line break", "x,\"multi\nline\",1,1,1\n2,a,1,1,1\n", `in: line 1, column 1 (field "t"): bad int64 "x"`, 1, 1, 3},
		{"non-nullable empty", "1,a,1,1,\n2,a,1,1,1\n", `in: line 1, column 9 (field "k"): bad int32 ""`, 1, 1, 2},
		{"event time empty", ",a,1,1,1\n2,a,1,1,1\n", `in: line 1, column 1 (field "t"): bad int64 ""`, 1, 1, 2},
		{"bad boolean", "1,a,1,yes,1\n2,a,1,1,1\n", `in: line 1, column 7 (field "b"): bad boolean "yes"`, 1, 1, 2},
		{"unterminated", "1,\"abc\n2,a,1,1,1\n", `in: line 1, column 3 (field "s"): unterminated quoted field`, 1, 1, 2},
		{"text after a quote", "1,\"a\nb\"c,1,1,1\n2,a,1,1,1\n", `in: line 1, column 8 (field "s"): unexpected text after a quoted field: "c,1,1,1"`, 1, 1, 3},
		{"missing after a quoted line break", "1,\"a\nb\",1\n2,a,1,1,1\n", `in: line 1, column 10 (field "b"): missing field: the record has 3 fields, 5 needed`, 1, 1, 3},
	} {
		d, err := NewCSVDecoder(l, CSVOptions{Options: Options{Input: "in", Strings: strs}})
		require.NoError(t, err)
		_, err = decodeAll(t, d, []byte(tc.src))
		assert.EqualError(t, err, tc.msg, tc.name)
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, tc.line, e.Line, tc.name)
		d, err = NewCSVDecoder(l, CSVOptions{Options: Options{Input: "in", Strings: strs, OnError: Skip}})
		require.NoError(t, err)
		got, err := decodeAll(t, d, []byte(tc.src))
		require.NoError(t, err, tc.name)
		assert.Len(t, rowsOf(l, got), tc.tuples, tc.name)
		assert.Equal(t, tc.lines, d.Lines(), tc.name)
		assert.Equal(t, int64(1), d.Malformed(), tc.name)
		assert.EqualError(t, d.FirstSkipped(), tc.msg, tc.name)
	}
}

// jsonLayout: a string, a nullable string, nullable int64 and bool, a
// non-nullable int32 (csvLayout with a second string instead of t's
// neighbour); NULL bits in byte 64.
func jsonLayout(t testing.TB) *Layout {
	l, err := NewLayout(72,
		Column{Name: "t", Kind: Timestamp},
		Column{Name: "s", Kind: String, Offset: 8},
		Column{Name: "ns", Kind: String, Offset: 24, Nullable: true, NullBit: 512},
		Column{Name: "n", Kind: Int64, Offset: 40, Nullable: true, NullBit: 513},
		Column{Name: "b", Kind: Bool, Offset: 48, Nullable: true, NullBit: 514},
		Column{Name: "k", Kind: Int32, Offset: 52},
	)
	require.NoError(t, err)
	return l
}

// jrow is a decoded record of jsonLayout, NULLs as nil.
type jrow struct {
	T     int64
	S, NS any // string or nil
	N, B  any // int64, int32 or nil
	K     int32
}

func jrowsOf(t testing.TB, l *Layout, tuples []byte) []jrow {
	var out []jrow
	for off := 0; off+l.TupleSize <= len(tuples); off += l.TupleSize {
		tu := tuples[off : off+l.TupleSize]
		r := jrow{T: int64(le.Uint64(tu)), S: string(strview.Bytes(tu[8:24])), K: int32(le.Uint32(tu[52:]))}
		null := tu[64]
		require.Zero(t, null&^7, "bits of no column")
		if null&1 == 0 {
			r.NS = string(strview.Bytes(tu[24:40]))
		} else {
			require.Equal(t, make([]byte, 16), tu[24:40], "a NULL's bytes are zero")
		}
		if null&2 == 0 {
			r.N = int64(le.Uint64(tu[40:]))
		} else {
			require.Zero(t, le.Uint64(tu[40:]))
		}
		if null&4 == 0 {
			r.B = int32(le.Uint32(tu[48:]))
		} else {
			require.Zero(t, le.Uint32(tu[48:]))
		}
		out = append(out, r)
	}
	return out
}

// TestJSONStrings: escapes (every one, surrogate pairs, lone surrogates
// as U+FFFD, as encoding/json), NULLs, booleans, skipped members, by both
// paths; the fast path takes lines of one shape whatever their strings.
func TestJSONStrings(t *testing.T) {
	l := jsonLayout(t)
	_, strs := testArena(t)
	long := strings.Repeat("é€😀xyz\"\\/\n\t\u2028<", 64<<10/24)
	longJS, err := json.Marshal(long)
	require.NoError(t, err)
	plainLong := strings.Repeat("abcdefgh", 8<<10)
	for _, tc := range []struct {
		name, line string
		want       jrow
	}{
		{"every escape", `{"t": 1, "s": "\"\\\/\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude00", "ns": "x", "n": 2, "b": true, "k": 3}`,
			jrow{1, "\"\\/\b\f\n\r\tAé€😀", "x", int64(2), int32(1), 3}},
		{"upper-case hex", `{"t": 1, "s": "\u00E9\uD83D\uDE00", "ns": "", "n": 2, "b": false, "k": 3}`, jrow{1, "é😀", "", int64(2), int32(0), 3}},
		{"lone high surrogate", `{"t": 1, "s": "a\ud800b", "ns": "\ud800", "n": 2, "b": 1, "k": 3}`, jrow{1, "a\uFFFDb", "\uFFFD", int64(2), int32(1), 3}},
		{"lone low surrogate", `{"t": 1, "s": "\udc00\ude00", "ns": "\ud800\u0041", "n": 2, "b": 0, "k": 3}`, jrow{1, "\uFFFD\uFFFD", "\uFFFDA", int64(2), int32(0), 3}},
		{"two high surrogates", `{"t": 1, "s": "\ud83d\ud83d\ude00", "ns": "\ud83d\\", "n": 2, "b": "TRUE", "k": 3}`, jrow{1, "\uFFFD😀", "\uFFFD\\", int64(2), int32(1), 3}},
		{"nulls", `{"t": 1, "s": "", "ns": null, "n": null, "b": null, "k": 3}`, jrow{1, "", nil, nil, nil, 3}},
		{"missing", `{"t": 1, "s": "a", "k": 3}`, jrow{1, "a", nil, nil, nil, 3}},
		{"a key twice", `{"t": 1, "s": "` + plainLong + `", "ns": "` + plainLong + `", "n": null, "b": true, "k": 3, "s": "short", "ns": null, "n": 5, "b": null}`, jrow{1, "short", nil, int64(5), nil, 3}},
		{"skipped members", `{"x": {"a": [1, {"s": "\ud800"}], "b": null}, "t": 1, "s": "a", "k": 3, "y": [[]], "z": "\"", "w": 1e5}`, jrow{1, "a", nil, nil, nil, 3}},
		{"64 KiB with escapes", `{"t": 1, "s": ` + string(longJS) + `, "k": 3}`, jrow{1, long, nil, nil, nil, 3}},
		{"64 KiB plain", `{"t": 1, "s": "` + plainLong + `", "ns": "` + plainLong[1:] + `", "k": 3}`, jrow{1, plainLong, plainLong[1:], nil, nil, 3}},
		{"invalid UTF-8 kept", "{\"t\": 1, \"s\": \"\xff\xfe\xc0\x80\", \"k\": 3}", jrow{1, "\xff\xfe\xc0\x80", nil, nil, nil, 3}},
		{"a 12-byte string inline, 13 not", `{"t": 1, "s": "abcdefghijkl", "ns": "abcdefghijklm", "k": 3}`, jrow{1, "abcdefghijkl", "abcdefghijklm", nil, nil, 3}},
	} {
		if utf8.ValidString(tc.line) {
			// encoding/json's reading of the strings is the reference.
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(tc.line), &m), tc.name)
			assert.Equal(t, tc.want.S, m["s"], tc.name)
		}
		for _, noFast := range []bool{false, true} {
			d, err := NewJSONDecoder(l, JSONOptions{NoFastPath: noFast, Options: Options{Strings: strs}})
			require.NoError(t, err)
			src := strings.Repeat(tc.line+"\n", 5)
			got, err := decodeAll(t, d, []byte(src))
			require.NoError(t, err, tc.name)
			rows := jrowsOf(t, l, got)
			require.Len(t, rows, 5)
			for _, r := range rows {
				assert.Equal(t, tc.want, r, "%s: noFast %v", tc.name, noFast)
			}
			if !noFast && tc.name != "a key twice" {
				assert.Equal(t, int64(4), d.FastLines(), "%s: the lines after the first by the fast path", tc.name)
			}
		}
	}
}

// TestJSONFastPathStrings: lines of one shape with strings of every kind
// (plain, escaped, short, long, null) take the fast path, and give what
// the general decoder gives.
func TestJSONFastPathStrings(t *testing.T) {
	l := jsonLayout(t)
	_, strs := testArena(t)
	r := rand.New(rand.NewPCG(9, 9))
	var src []byte
	var want []jrow
	for i := range 500 {
		s := randString(r, false)
		js, err := json.Marshal(s)
		require.NoError(t, err)
		ns, nsWant := `null`, any(nil)
		if i%3 != 0 {
			x := randString(r, false)
			b, err := json.Marshal(x)
			require.NoError(t, err)
			ns, nsWant = string(b), x
		}
		src = fmt.Appendf(src, `{"t": "2024-03-01T10:00:%02d.5Z", "s": %s, "ns": %s, "n": %d, "b": %v, "k": %d}`+"\n", i%60, js, ns, i, i%2 == 0, -i)
		tm := time.Date(2024, 3, 1, 10, 0, i%60, 500e6, time.UTC).UnixMilli()
		want = append(want, jrow{tm, s, nsWant, int64(i), int32(1 - i%2), int32(-i)})
	}
	for _, noFast := range []bool{false, true} {
		d, err := NewJSONDecoder(l, JSONOptions{NoFastPath: noFast, Options: Options{Strings: strs}})
		require.NoError(t, err)
		got, err := decodeAll(t, d, src)
		require.NoError(t, err)
		assert.Equal(t, want, jrowsOf(t, l, got))
		if !noFast {
			assert.Greater(t, d.FastLines(), int64(490), "fast %d, general %d", d.FastLines(), d.SlowLines())
		}
	}
}

// TestJSONBadValues: invalid escapes and values are malformed records
// (Fail: an error naming them; Skip: counted, the next line decoded);
// the event time and the non-nullable columns are never NULL.
func TestJSONBadValues(t *testing.T) {
	l := jsonLayout(t)
	_, strs := testArena(t)
	good := `{"t": 1, "s": "a", "k": 3}`
	for _, tc := range []struct{ line, msg string }{
		{`{"t": 1, "s": "a\x", "k": 3}`, `in: line 2, column 17 (field "s"): bad escape "\\x"`},
		{`{"t": 1, "s": "a\u12", "k": 3}`, `in: line 2, column 17 (field "s"): bad \u escape "\\u12\","`},
		{`{"t": 1, "s": "a\uZZZZ", "k": 3}`, `in: line 2, column 17 (field "s"): bad \u escape "\\uZZZZ"`},
		{`{"t": 1, "s": "a\`, `in: line 2, column 15 (field "s"): unterminated string`},
		{"{\"t\": 1, \"s\": \"a\tb\", \"k\": 3}", `in: line 2, column 17 (field "s"): control character in a string: "\t"`},
		{`{"t": 1, "s": 5, "k": 3}`, `in: line 2, column 15 (field "s"): expected a string, got "5, \"k\": 3}"`},
		{`{"t": 1, "s": null, "k": 3}`, `in: line 2, column 15 (field "s"): null value`},
		{`{"t": 1, "k": 3}`, `in: line 2, column 16 (field "s"): missing field`},
		{`{"s": "a", "k": 3}`, `in: line 2, column 18 (field "t"): missing field`},
		{`{"t": null, "s": "a", "k": 3}`, `in: line 2, column 7 (field "t"): null value`},
		{`{"t": "", "s": "a", "k": 3}`, `in: line 2, column 7 (field "t"): bad timestamp ""`},
		{`{"t": "2024-02-30 00:00:00", "s": "a", "k": 3}`, `in: line 2, column 7 (field "t"): bad timestamp "2024-02-30 00:00:00"`},
		{`{"t": 1e3, "s": "a", "k": 3}`, `in: line 2, column 7 (field "t"): bad timestamp "1e3"`},
		{`{"t": true, "s": "a", "k": 3}`, `in: line 2, column 7 (field "t"): expected a number or a string, got "true, \"s\": \"a\", "`},
		{`{"t": 1, "s": "a", "k": null}`, `in: line 2, column 25 (field "k"): null value`},
		{`{"t": 1, "s": "a", "k": 3, "b": 2}`, `in: line 2, column 33 (field "b"): bad boolean "2"`},
		{`{"t": 1, "s": "a", "k": 3, "b": "yes"}`, `in: line 2, column 33 (field "b"): bad boolean "yes"`},
		{`{"t": 1, "s": "a", "k": 3, "b": []}`, `in: line 2, column 33 (field "b"): expected true, false, a number or a string, got "[]}"`},
		{`{"t": 1, "s": "a", "k": 3, "n": ""}`, `in: line 2, column 33 (field "n"): bad int64 ""`},
	} {
		src := good + "\n" + tc.line + "\n" + good + "\n"
		for _, noFast := range []bool{false, true} {
			d, err := NewJSONDecoder(l, JSONOptions{NoFastPath: noFast, Options: Options{Input: "in", Strings: strs}})
			require.NoError(t, err)
			got, err := decodeAll(t, d, []byte(src))
			assert.EqualError(t, err, tc.msg, tc.line)
			assert.Len(t, got, l.TupleSize)
			d, err = NewJSONDecoder(l, JSONOptions{NoFastPath: noFast, Options: Options{Input: "in", Strings: strs, OnError: Skip}})
			require.NoError(t, err)
			got, err = decodeAll(t, d, []byte(src))
			require.NoError(t, err)
			assert.Len(t, got, 2*l.TupleSize, tc.line)
			assert.Equal(t, int64(1), d.Malformed())
			assert.Equal(t, int64(3), d.Lines())
			assert.EqualError(t, d.FirstSkipped(), tc.msg)
		}
	}
}

// TestCSVSeparators: string fields of every length around the word
// boundaries, with separators of every sort (a byte above 0x7f too).
func TestCSVSeparators(t *testing.T) {
	l := csvLayout(t)
	_, strs := testArena(t)
	for _, comma := range []byte{',', ';', '\t', '|', 0xa7, 0xff} {
		var src []byte
		var want []row
		for n := range 100 {
			s := strings.Repeat("aé\xc3", n)[:n*4/3]
			sep := string([]byte{comma})
			src = fmt.Appendf(src, "%d%s%s%s%s%s7\n", n, sep, s, sep, sep, sep)
			want = append(want, row{int64(n), s, nil, nil, 7, 3})
		}
		for _, slow := range []bool{false, true} {
			d, err := NewCSVDecoder(l, CSVOptions{Comma: comma, Options: Options{Strings: strs}})
			require.NoError(t, err)
			d.noFastFields = slow
			got, err := decodeAll(t, d, src)
			if bytes.IndexByte([]byte("aé\xc3"), comma) >= 0 {
				continue // the separator is in the strings
			}
			require.NoError(t, err, "%q", comma)
			assert.Equal(t, want, rowsOf(l, got), "%q", comma)
		}
	}
	for i := range 200 {
		s := make([]byte, i)
		for j := range s {
			s[j] = 'x'
		}
		for _, k := range []int{0, i / 2, i - 1} {
			if k < 0 || i == 0 {
				continue
			}
			s[k] = ','
			assert.Equal(t, bytes.IndexByte(s, ','), indexComma(s, ','), "len %d at %d", i, k)
			s[k] = 'x'
		}
		assert.Equal(t, -1, indexComma(s, ','))
		assert.Equal(t, bytes.IndexByte(s, 'x'), indexComma(s, 'x'))
	}
}
