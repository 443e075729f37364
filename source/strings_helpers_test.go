package source

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/strview"
)

// strLayout has string, timestamp, boolean and nullable columns: the
// NULL bits in byte 88, which no column covers.
func strLayout(t testing.TB) *Layout {
	l, err := NewLayout(96,
		Column{Name: "ts", Kind: Timestamp, Offset: 0},
		Column{Name: "name", Kind: String, Offset: 8},
		Column{Name: "note", Kind: String, Offset: 24, Nullable: true, NullBit: 704},
		Column{Name: "n", Kind: Int64, Offset: 40, Nullable: true, NullBit: 705},
		Column{Name: "ok", Kind: Bool, Offset: 48, Nullable: true, NullBit: 706},
		Column{Name: "f", Kind: Float64, Offset: 56, Nullable: true, NullBit: 707},
		Column{Name: "at", Kind: Timestamp, Offset: 64, Nullable: true, NullBit: 708},
		Column{Name: "color", Kind: Enum, Offset: 72, Labels: []string{"red", "green", "blue"}, Nullable: true, NullBit: 709},
		Column{Name: "id", Kind: Int32, Offset: 76},
		Column{Name: "flag", Kind: Bool, Offset: 80},
	)
	require.NoError(t, err)
	return l
}

// testArena is an arena freed when the test ends, and its Strings.
func testArena(t testing.TB) (*strview.Arena, func(int) ([]byte, error)) {
	a := strview.NewArena(0)
	t.Cleanup(a.Free)
	return a, ArenaStrings(a)
}

// canon is a tuple with its string views replaced: the views zeroed and
// the strings listed, so that tuples compare by value (a long string's
// view holds its address).
type canon struct {
	Fixed []byte
	Strs  []string
}

// canonical splits tuples of l into canon values.
func canonical(l *Layout, tuples []byte) []canon {
	var out []canon
	for off := 0; off+l.TupleSize <= len(tuples); off += l.TupleSize {
		tu := tuples[off : off+l.TupleSize]
		c := canon{Fixed: append([]byte(nil), tu...)}
		for _, col := range l.Columns {
			if col.Kind == String {
				c.Strs = append(c.Strs, string(strview.Bytes(tu[col.Offset:col.Offset+16])))
				clear(c.Fixed[col.Offset : col.Offset+16])
			}
		}
		out = append(out, c)
	}
	return out
}

// sval is one value of a strLayout record: null, or its text as a CSV
// or JSON source would give it, and what the tuple holds.
type sval struct {
	null bool
	text string // the value's text (a string's bytes; a number's digits)
	num  bool   // JSON: the text is a number or a literal, not a string
}

// strRecord is a random record of strLayout: its values and its tuple
// as canon.
type strRecord struct {
	vals []sval // per column, strLayout's order
	want canon
}

var strRunes = []rune("ab ,\"\\/é€😀\t\n\r\u2028<>&xyz01")

// randString is a random string: mostly short, some long (past
// MaxInline, some of kilobytes); valid UTF-8 unless invalid (bytes
// 0x80-0xff alone).
func randString(r *rand.Rand, invalid bool) string {
	var n int
	switch r.IntN(8) {
	case 0:
		n = 0
	case 1, 2, 3:
		n = r.IntN(13)
	case 4, 5, 6:
		n = 13 + r.IntN(40)
	default:
		n = r.IntN(3000)
	}
	var b []byte
	for len(b) < n {
		if invalid && r.IntN(10) == 0 {
			b = append(b, byte(0x80+r.IntN(0x80)))
			continue
		}
		b = append(b, string(strRunes[r.IntN(len(strRunes))])...)
	}
	return string(b)
}

// randStrInputs is n random records of l as CSV (invalid UTF-8 among
// them) and n others as JSON lines.
func randStrInputs(r *rand.Rand, l *Layout, n int) (csv, json []byte) {
	var csvRecs []strRecord
	for range n {
		csvRecs = append(csvRecs, randStrRecord(r, l, true))
		json = append(append(json, strJSON(r, l, randStrRecord(r, l, false))...), '\n')
	}
	return strCSV(r, csvRecs, "\n"), json
}

// randStrRecord is a random record of strLayout (l).
func randStrRecord(r *rand.Rand, l *Layout, invalidUTF8 bool) strRecord {
	rec := strRecord{want: canon{Fixed: make([]byte, l.TupleSize)}}
	tu := rec.want.Fixed
	for _, c := range l.Columns {
		dst := tu[c.Offset:]
		if c.Nullable && r.IntN(4) == 0 {
			tu[c.NullBit>>3] |= 1 << (c.NullBit & 7)
			rec.vals = append(rec.vals, sval{null: true})
			if c.Kind == String {
				rec.want.Strs = append(rec.want.Strs, "")
			}
			continue
		}
		var v sval
		switch c.Kind {
		case String:
			v.text = randString(r, invalidUTF8)
			rec.want.Strs = append(rec.want.Strs, v.text)
		case Int64:
			x := int64(r.Uint64())
			if r.IntN(2) == 0 {
				x = r.Int64N(2000) - 1000
			}
			binary.LittleEndian.PutUint64(dst, uint64(x))
			v.text, v.num = strconv.FormatInt(x, 10), true
		case Int32:
			x := int32(r.Uint32())
			binary.LittleEndian.PutUint32(dst, uint32(x))
			v.text, v.num = strconv.FormatInt(int64(x), 10), true
		case Float64:
			x := r.NormFloat64() * 1e6
			binary.LittleEndian.PutUint64(dst, math.Float64bits(x))
			v.text, v.num = strconv.FormatFloat(x, 'g', -1, 64), true
		case Bool:
			x := r.IntN(2)
			binary.LittleEndian.PutUint32(dst, uint32(x))
			v.text = [][]string{{"false", "FALSE", "0", "False"}, {"true", "TRUE", "1", "tRuE"}}[x][r.IntN(4)]
			v.num = (v.text == "true" || v.text == "false" || v.text == "0" || v.text == "1") && r.IntN(2) == 0
		case Timestamp:
			ms := r.Int64N(200*365*86400000) - 70*365*86400000 // 1900 to 2100
			binary.LittleEndian.PutUint64(dst, uint64(ms))
			v.text, v.num = timeText(r, ms)
		case Enum:
			x := r.IntN(len(c.Labels))
			binary.LittleEndian.PutUint32(dst, uint32(x))
			v.text = c.Labels[x]
		}
		rec.vals = append(rec.vals, v)
	}
	return rec
}

// timeText writes ms in one of the forms a Timestamp reads (an epoch in
// milliseconds: num; RFC 3339 with a zone; SQL's form).
func timeText(r *rand.Rand, ms int64) (string, bool) {
	tm := time.UnixMilli(ms).UTC()
	switch r.IntN(5) {
	case 0:
		return strconv.FormatInt(ms, 10), true
	case 1:
		return strconv.FormatInt(ms, 10), false
	case 2:
		return tm.Format("2006-01-02T15:04:05.000Z07:00"), false
	case 3:
		return tm.In(time.FixedZone("", -(5*3600 + 1800))).Format("2006-01-02T15:04:05.000-07:00"), false
	}
	return tm.Format("2006-01-02 15:04:05.000"), false
}

// csvCanon is what a CSV source gives for rec: a NULL string is an
// empty field there, which is the empty string.
func csvCanon(l *Layout, rec strRecord) canon {
	c := canon{Fixed: append([]byte(nil), rec.want.Fixed...), Strs: rec.want.Strs}
	for _, col := range l.Columns {
		if col.Kind == String && col.Nullable {
			c.Fixed[col.NullBit>>3] &^= 1 << (col.NullBit & 7)
		}
	}
	return c
}

// equalCanon compares decoded tuples with what they should be, a record
// at a time (a failure shows one record, not all).
func equalCanon(t testing.TB, l *Layout, want []canon, got []byte, msg string) {
	t.Helper()
	gc := canonical(l, got)
	require.Equal(t, len(want), len(gc), "%s: tuples", msg)
	for i := range want {
		require.Equal(t, want[i], gc[i], "%s: tuple %d", msg, i)
	}
}

// csvQuote writes a field with RFC 4180 quoting: quoted when it must be
// (a separator, quote or line break in it) or when always.
func csvQuote(s string, always bool) string {
	if always || strings.ContainsAny(s, ",\"\r\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

// strCSV writes records of strLayout as CSV (RFC 4180 quoting, fields
// quoted at random too; NULLs as empty fields, quoted or not), lines
// ended by eol.
func strCSV(r *rand.Rand, recs []strRecord, eol string) []byte {
	var b []byte
	for _, rec := range recs {
		for i, v := range rec.vals {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, csvQuote(v.text, r.IntN(4) == 0)...)
		}
		b = append(b, eol...)
	}
	return b
}

// strJSON writes a record of strLayout as a JSON object, strings by
// encoding/json, NULLs as null or missing at random, in l's order.
func strJSON(r *rand.Rand, l *Layout, rec strRecord) []byte {
	b := []byte{'{'}
	first := true
	for i, c := range l.Columns {
		v := rec.vals[i]
		if v.null && r.IntN(2) == 0 {
			continue // missing
		}
		if !first {
			b = append(b, ", "...)
		}
		first = false
		b = fmt.Appendf(b, "%q: ", c.Name)
		switch {
		case v.null:
			b = append(b, "null"...)
		case v.num:
			b = append(b, v.text...)
		default:
			js, err := json.Marshal(v.text)
			if err != nil {
				panic(err)
			}
			b = append(b, js...)
		}
	}
	return append(b, '}')
}
