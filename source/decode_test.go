package source

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestYSBJSONAndCSV(t *testing.T) {
	l := ysbLayout(t)
	js, cs, want := ysbInput(500, 7)
	for _, noFast := range []bool{false, true} {
		d, err := NewJSONDecoder(l, JSONOptions{NoFastPath: noFast})
		require.NoError(t, err)
		got, err := decodeAll(t, d, js)
		require.NoError(t, err)
		assert.Equal(t, want, got)
		assert.Equal(t, int64(500), d.Lines())
		if noFast {
			assert.Equal(t, int64(0), d.FastLines())
		} else {
			assert.Equal(t, int64(499), d.FastLines(), "every line after the first by the fast path")
		}
	}
	d, err := NewCSVDecoder(l, CSVOptions{})
	require.NoError(t, err)
	got, err := decodeAll(t, d, cs)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestCSVRoundTrip(t *testing.T) {
	l := allLayout(t)
	r := rand.New(rand.NewPCG(1, 2))
	recs := make([]record, 300)
	var want []byte
	for i := range recs {
		recs[i] = randRecord(r, l)
		want = append(want, recs[i].tuple...)
	}
	order := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
	for _, crlf := range []bool{false, true} {
		d, err := NewCSVDecoder(l, CSVOptions{})
		require.NoError(t, err)
		d.noFastFields = crlf
		got, err := decodeAll(t, d, csvOf(t, recs, order, nil, crlf))
		require.NoError(t, err)
		assert.Equal(t, want, got, "crlf %v", crlf)
	}
	// With a header in another order and extra columns.
	hdrOrder := []int{8, 3, 0, 6, 5, 2, 4, 1, 7}
	names := make([]string, 0, 11)
	for _, c := range hdrOrder {
		names = append(names, l.Columns[c].Name)
	}
	body := csvOf(t, recs, hdrOrder, append(names, "extra"), false)
	// Every record gets an extra field; the header's extra column too.
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	for i := 1; i < len(lines); i++ {
		lines[i] += `,"x,y"`
	}
	d, err := NewCSVDecoder(l, CSVOptions{Header: true, Options: Options{Input: "h.csv"}})
	require.NoError(t, err)
	got, err := decodeAll(t, d, []byte(strings.Join(lines, "\n")+"\n"))
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestCSVQuotingAndLines(t *testing.T) {
	l, err := NewLayout(24,
		Column{Name: "t", Kind: Int64},
		Column{Name: "s", Kind: Bytes, Offset: 8, Size: 8},
		Column{Name: "k", Kind: Int32, Offset: 16},
	)
	require.NoError(t, err)
	d, err := NewCSVDecoder(l, CSVOptions{Comma: ';'})
	require.NoError(t, err)
	src := "\xef\xbb\xbf1;\"a;\"\"b\";\"-7\"\r\n\r\n\n2;;+3\n3;\"\";0"
	got, err := decodeAll(t, d, []byte(src))
	require.NoError(t, err)
	want := make([]byte, 3*24)
	binary.LittleEndian.PutUint64(want, 1)
	copy(want[8:], `a;"b`)
	binary.LittleEndian.PutUint32(want[16:], uint32(0xfffffff9))
	binary.LittleEndian.PutUint64(want[24:], 2)
	binary.LittleEndian.PutUint32(want[40:], 3)
	binary.LittleEndian.PutUint64(want[48:], 3)
	assert.Equal(t, want, got)
	assert.Equal(t, int64(5), d.Lines())
}

func TestDecodeStopsAtIncompleteLine(t *testing.T) {
	l := ysbLayout(t)
	js, cs, want := ysbInput(3, 3)
	for name, mk := range map[string]func() Decoder{
		"json": func() Decoder { d, _ := NewJSONDecoder(l, JSONOptions{}); return d },
		"csv":  func() Decoder { d, _ := NewCSVDecoder(l, CSVOptions{}); return d },
	} {
		src := js
		if name == "csv" {
			src = cs
		}
		src = src[:len(src)-1] // the last line has no newline
		d := mk()
		dst := make([]byte, 10*128)
		n, c, err := d.Decode(dst, src, false)
		require.NoError(t, err)
		assert.Equal(t, 2, n, name)
		assert.Equal(t, strings.LastIndexByte(string(src), '\n')+1, c, name)
		assert.Equal(t, want[:256], dst[:256], name)
		n, c2, err := d.Decode(dst, src[c:], true)
		require.NoError(t, err)
		assert.Equal(t, 1, n, name)
		assert.Equal(t, len(src)-c, c2, name)
		assert.Equal(t, want[256:], dst[:128], name)
		// dst with room for one tuple: one line at a time.
		d = mk()
		n, c, err = d.Decode(dst[:128+127], src, true)
		require.NoError(t, err)
		assert.Equal(t, 1, n, name)
		assert.Equal(t, strings.IndexByte(string(src), '\n')+1, c, name)
		assert.Equal(t, int64(1), d.Lines(), name)
	}
}

func TestJSONValues(t *testing.T) {
	l := allLayout(t)
	line := `{"x": {"a": [1, {"b": null}, "}\"]"], "c": true}, "t": 5, "i32": "-12", "f64": 1.5e3, "f32": "0x1p-2", ` +
		`"id": "0123456789ABCDEF0123456789abcdef", "name": "\u00e9\\\/\"\ud83d\ude00", "col\u006fr": "\u00e9\"x", "ip": "10.0.0.255", "i64": -0, "y": [], "z": {}}`
	line = strings.Replace(line, `"0123456789ABCDEF0123456789abcdef"`, `"01234567-89AB-CDEF-0123-456789abcdef"`, 1)
	want := make([]byte, 80)
	binary.LittleEndian.PutUint64(want, 5)
	binary.LittleEndian.PutUint32(want[8:], uint32(0xfffffff4))
	binary.LittleEndian.PutUint32(want[12:], 0x3e800000) // 0.25
	binary.LittleEndian.PutUint64(want[16:], 0x40977000_00000000)
	copy(want[24:], []byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef})
	copy(want[40:], "é\\/\"\U0001F600"[:8])
	binary.LittleEndian.PutUint32(want[48:], 4)
	binary.LittleEndian.PutUint32(want[52:], 0x0a0000ff)
	// name is 9 bytes: too long.
	d, err := NewJSONDecoder(l, JSONOptions{})
	require.NoError(t, err)
	_, err = decodeAll(t, d, []byte(line))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `(field "name"): too long for bytes(8)`)
	line = strings.Replace(line, `\ud83d\ude00`, `\u0041`, 1)
	copy(want[40:48], "é\\/\"A\x00\x00")
	for i := 0; i < 3; i++ { // escapes and a label with '"': the general decoder every time
		d, err := NewJSONDecoder(l, JSONOptions{})
		require.NoError(t, err)
		got, err := decodeAll(t, d, []byte(strings.Repeat(line+"\n", i+1)))
		require.NoError(t, err)
		assert.Equal(t, []byte(strings.Repeat(string(want), i+1)), got)
		assert.Equal(t, int64(0), d.FastLines())
	}
}

func TestErrors(t *testing.T) {
	l := ysbLayout(t)
	js, cs, _ := ysbInput(1, 9)
	jl, cl := strings.TrimSpace(string(js)), strings.TrimSpace(string(cs))
	uuid := jl[strings.Index(jl, `"ad_id": "`)+10:][:36]
	cases := []struct {
		name, input, msg string
		json             bool
		header           bool
	}{
		{"csv bad uuid", strings.Replace(cl, uuid, "xyz", 1), `events: line 2, column 89 (field "ad_id"): bad UUID "xyz"`, false, false},
		{"csv bad int", "x" + cl, `events: line 2, column 1 (field "event_time"): bad int64 "x1700000000000"`, false, false},
		{"csv int overflow", "9223372036854775808" + cl[13:], `events: line 2, column 1 (field "event_time"): int64 out of range "9223372036854775808"`, false, false},
		{"csv unknown label", strings.Replace(cl, ",view,", ",viewed,", 1), `(field "event_type"): unknown label "viewed" (labels: view, click, purchase)`, false, false},
		{"csv bad ip", cl[:strings.LastIndexByte(cl, ',')] + ",1.2.3.256", `(field "ip_address"): bad IPv4 address "1.2.3.256"`, false, false},
		{"csv missing", cl[:strings.LastIndexByte(cl, ',')], `events: line 2, column %d (field "ip_address"): missing field: the record has 6 fields, 7 needed`, false, false},
		{"csv unterminated", `"17`, `events: line 2, column 1 (field "event_time"): unterminated quoted field`, false, false},
		{"csv text after quote", `"17"x,`, `events: line 2, column 5 (field "event_time"): unexpected text after a quoted field: "x,"`, false, false},
		{"csv header", "a,b", `events: line 1 (field "event_time"): the header has no such column; it has "a,b"`, false, true},
		{"csv header twice", "event_time,user_id,event_time", `events: line 1, column 20 (field "event_time"): column named twice in the header`, false, true},
		{"json bad uuid", strings.Replace(jl, uuid, "xyz", 1), `events: line 2, column %d (field "ad_id"): bad UUID "xyz"`, true, false},
		{"json missing", strings.Replace(jl, `"ad_id"`, `"ad"`, 1), `events: line 2, column %d (field "ad_id"): missing field`, true, false},
		{"json null", strings.Replace(jl, `"`+uuid+`"`, `null`, 1), `events: line 2, column %d (field "ad_id"): null value`, true, false},
		{"json number for uuid", strings.Replace(jl, `"`+uuid+`"`, `12`, 1), `(field "ad_id"): expected a string, got "12, \"ad_type\": \""`, true, false},
		{"json bool for int", strings.Replace(jl, `"1700000000000"`, `true`, 1), `(field "event_time"): expected a number or a string, got "true, \"ip_addres"`, true, false},
		{"json float for int", strings.Replace(jl, `"1700000000000"`, `1.5`, 1), `(field "event_time"): bad int64 "1.5"`, true, false},
		{"json bad number", strings.Replace(jl, `"1700000000000"`, `01`, 1), `events: line 2, column %d: expected ',' or '}' after an object member, got "1, \"ip_address\":"`, true, false},
		{"json bad escape in a value", strings.Replace(jl, `"event_type": "`, `"event_type": "\q`, 1), `(field "event_type"): bad escape "\\q"`, true, false},
		{"json not an object", `[1]`, `events: line 2, column 1: expected '{', got "[1]"`, true, false},
		{"json trailing", jl + `x`, `events: line 2, column %d: unexpected text after the object, got "x"`, true, false},
		{"json unterminated", `{"a": "b`, `events: line 2, column 7: unterminated string`, true, false},
		{"json bad escape", `{"a": "\x"}`, `events: line 2, column 8: bad escape "\\x"`, true, false},
		{"json bad u", `{"a": "\u12"}`, `events: line 2, column 8: bad \u escape "\\u12\"}"`, true, false},
		{"json control", "{\"a\": \"\t\"}", `events: line 2, column 8: control character in a string: "\t"`, true, false},
		{"json colon", `{"a" 1}`, `events: line 2, column 6: expected ':' after an object key, got "1}"`, true, false},
		{"json key", `{1: 1}`, `events: line 2, column 2: expected a string key, got "1: 1}"`, true, false},
		{"json end", `{"a": `, `events: line 2, column 7: expected a value, got the end of the line`, true, false},
		{"json nested", `{"a": [1 2]}`, `events: line 2, column 10: expected ',' or ']', got "2]}"`, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var d Decoder
			var err error
			o := Options{Input: "events"}
			src := string(cs) + tc.input + "\n" + string(cs)
			if tc.json {
				d, err = NewJSONDecoder(l, JSONOptions{Options: o})
				src = string(js) + tc.input + "\n" + string(js)
			} else {
				if tc.header {
					src = tc.input + "\n" + string(cs)
				}
				d, err = NewCSVDecoder(l, CSVOptions{Options: o, Header: tc.header})
			}
			require.NoError(t, err)
			if strings.Contains(tc.msg, "%d") {
				// The column: of the value changed, or the line's end.
				col := len(tc.input) // JSON: the closing '}' or the text after it
				if !tc.json {
					col++ // CSV: after the last field
				}
				for _, at := range []string{`"xyz"`, "null", "01"} {
					if i := strings.Index(tc.input, at); i >= 0 {
						col = i + 1
						if at == "01" {
							col++
						}
						break
					}
				}
				tc.msg = fmt.Sprintf(tc.msg, col)
			}
			dst := make([]byte, 4*128)
			n, c, err := d.Decode(dst, []byte(src), true)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.msg)
			var e *Error
			require.ErrorAs(t, err, &e)
			if tc.header {
				assert.Equal(t, 0, n)
				assert.Equal(t, 0, c)
				return
			}
			assert.Equal(t, int64(2), e.Line)
			assert.Equal(t, 1, n, "the tuple before the bad line")
			first := len(cs)
			if tc.json {
				first = len(js)
			}
			assert.Equal(t, first, c, "consumed up to the bad line")
			assert.Equal(t, int64(1), d.Lines())
			// Again: the same error.
			_, _, err2 := d.Decode(dst, []byte(src[c:]), true)
			assert.Equal(t, err, err2)
			// Skipping: the line is counted and passed over.
			o.OnError = Skip
			if tc.json {
				d, _ = NewJSONDecoder(l, JSONOptions{Options: o})
			} else {
				d, _ = NewCSVDecoder(l, CSVOptions{Options: o})
			}
			n, c, err = d.Decode(dst, []byte(src), true)
			require.NoError(t, err)
			assert.Equal(t, 2, n)
			assert.Equal(t, len(src), c)
			assert.Equal(t, int64(1), d.Malformed())
			assert.Equal(t, int64(3), d.Lines())
			require.Error(t, d.FirstSkipped())
			assert.Contains(t, d.FirstSkipped().Error(), tc.msg)
		})
	}
}

// TestCSVFieldsInPlace: the fields parsed in place give what the
// general field split gives, where a label holds the separator too.
func TestCSVFieldsInPlace(t *testing.T) {
	l, err := NewLayout(16, Column{Name: "t", Kind: Int64}, Column{Name: "e", Kind: Enum, Offset: 8, Labels: []string{"x,y", "x", "y"}})
	require.NoError(t, err)
	for _, line := range []string{"1,x,y", "1,x", "1,y", `1,"x,y"`, "1,x,y,z", "-0,x", "+0009,y,", "1,z", "1x,y", "99999999999999999999,x"} {
		var outs [2][]byte
		var errs [2]error
		for i, slow := range []bool{false, true} {
			d, err := NewCSVDecoder(l, CSVOptions{})
			require.NoError(t, err)
			d.noFastFields = slow
			outs[i], errs[i] = decodeAll(t, d, []byte(line))
		}
		assert.Equal(t, errs[1], errs[0], line)
		assert.Equal(t, outs[1], outs[0], line)
	}
}
