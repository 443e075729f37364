package source

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/strview"
)

// dictStrLayout is strLayout with its string columns dictionary-encoded
// into d: name's number at 84, note's at 92 (bytes no column covers).
func dictStrLayout(t testing.TB, d *strview.Dict) *Layout {
	l := strLayout(t)
	cols := append([]Column(nil), l.Columns...)
	for i := range cols {
		switch cols[i].Name {
		case "name":
			cols[i].Dict, cols[i].NumberAt = d, 84
		case "note":
			cols[i].Dict, cols[i].NumberAt = d, 92
		}
	}
	dl, err := NewLayout(l.TupleSize, cols...)
	require.NoError(t, err)
	return dl
}

// checkDictTuples checks the dictionary-encoded tuples got against plain,
// the same records decoded without a dictionary: the same values; each
// string's number is its number in d (0 where NULL); a long string's
// view points to d's copy.
func checkDictTuples(t *testing.T, l *Layout, d *strview.Dict, plain, got []byte, msg string) {
	t.Helper()
	require.Equal(t, len(plain), len(got), msg)
	cleared := append([]byte(nil), got...)
	for o := 0; o < len(got); o += l.TupleSize {
		for _, c := range l.Columns {
			if c.Dict == nil {
				continue
			}
			tu := got[o : o+l.TupleSize]
			num := int64(binary.LittleEndian.Uint32(tu[c.NumberAt:]))
			v := tu[c.Offset : c.Offset+strview.Size]
			if c.Nullable && tu[c.NullBit>>3]&(1<<(c.NullBit&7)) != 0 {
				require.Zero(t, num, "%s: tuple %d: %s is NULL", msg, o/l.TupleSize, c.Name)
			} else {
				require.Positive(t, num, "%s: tuple %d: %s", msg, o/l.TupleSize, c.Name)
				s := d.String(num)
				require.Equal(t, string(s), string(strview.Bytes(v)), "%s: tuple %d: %s", msg, o/l.TupleSize, c.Name)
				if len(s) > strview.MaxInline {
					require.Equal(t, unsafe.SliceData(s), unsafe.SliceData(strview.Bytes(v)), "%s: a long string's view points into the dictionary", msg)
				}
			}
			clear(cleared[o+c.NumberAt : o+c.NumberAt+4])
		}
	}
	assert.Equal(t, canonical(l, plain), canonical(l, cleared), msg)
}

// TestDictColumnsDecode: CSV (both field paths) and JSON (both paths)
// records of strings (short, long, quoted, escaped), NULLs among them,
// decoded with the string columns dictionary-encoded hold the values the
// plain decoding gives, with every string's number beside it, and take
// no memory from Options.Strings for them; one dictionary serves
// decoders of both formats at once.
func TestDictColumnsDecode(t *testing.T) {
	plainL := strLayout(t)
	d := strview.NewDict()
	l := dictStrLayout(t, d)
	a, strs := testArena(t)
	csvSrc, jsonSrc := randStrInputs(rand.New(rand.NewPCG(15, 16)), l, 400)
	for _, slow := range []bool{false, true} {
		plain, err := NewCSVDecoder(plainL, CSVOptions{Options: Options{Strings: strs}})
		require.NoError(t, err)
		want, err := decodeAll(t, plain, csvSrc)
		require.NoError(t, err)
		used := a.Bytes()
		dec, err := NewCSVDecoder(l, CSVOptions{Options: Options{Strings: strs}})
		require.NoError(t, err)
		dec.noFastFields = slow
		got, err := decodeAll(t, dec, csvSrc)
		require.NoError(t, err)
		assert.Equal(t, used, a.Bytes(), "no string memory taken")
		checkDictTuples(t, l, d, want, got, fmt.Sprintf("csv slow %v", slow))
	}
	for _, noFast := range []bool{false, true} {
		plain, err := NewJSONDecoder(plainL, JSONOptions{NoFastPath: noFast, Options: Options{Strings: strs}})
		require.NoError(t, err)
		want, err := decodeAll(t, plain, jsonSrc)
		require.NoError(t, err)
		dec, err := NewJSONDecoder(l, JSONOptions{NoFastPath: noFast, Options: Options{Strings: strs}})
		require.NoError(t, err)
		got, err := decodeAll(t, dec, jsonSrc)
		require.NoError(t, err)
		checkDictTuples(t, l, d, want, got, fmt.Sprintf("json noFast %v", noFast))
	}
}

// TestDictColumnsLayoutRefusals: a dictionary on a column that is not a
// string, or a number outside the tuple or over a column, a NULL bit or
// another number, is refused, naming the column.
func TestDictColumnsLayoutRefusals(t *testing.T) {
	d := strview.NewDict()
	base := func() []Column {
		return []Column{
			{Name: "ts", Kind: Int64, Offset: 0},
			{Name: "s", Kind: String, Offset: 8, Dict: d, NumberAt: 52},
			{Name: "u", Kind: String, Offset: 28, Nullable: true, NullBit: 44 * 8},
			{Name: "n", Kind: Int32, Offset: 48},
		}
	}
	_, err := NewLayout(64, base()...)
	require.NoError(t, err)
	for _, c := range []struct {
		edit func(cols []Column)
		want string
	}{
		{func(cols []Column) { cols[3].Dict = d }, `column "n" of kind int32 has a dictionary`},
		{func(cols []Column) { cols[1].NumberAt = 62 }, `the number of column "s" at offset 62 does not fit`},
		{func(cols []Column) { cols[1].NumberAt = 46 }, `the number of column "s" at offset 46 overlaps column "n"`},
		{func(cols []Column) { cols[1].NumberAt = 44 }, `the number of column "s" at offset 44 holds the NULL bit of column "u"`},
		{func(cols []Column) { cols[2].Dict, cols[2].NumberAt = d, 54 }, `the numbers of columns "s" and "u" overlap`},
	} {
		cols := base()
		c.edit(cols)
		_, err := NewLayout(64, cols...)
		assert.ErrorContains(t, err, c.want)
	}
}

// TestRefInput: with Options.RefInput the views of long strings that need
// no unescaping point into the text given to Decode, those unescaped
// (CSV's "" and JSON's escapes) into Strings' memory, and every value is
// what the decoding without it gives, in CSV (both field paths) and JSON
// (both paths).
func TestRefInput(t *testing.T) {
	l := strLayout(t)
	_, strs := testArena(t)
	text := strview.NewArena(0)
	defer text.Free()
	cs, js := randStrInputs(rand.New(rand.NewPCG(21, 22)), l, 400)
	for i := range 100 { // long strings with no escape
		js = fmt.Appendf(js, `{"ts": %d, "name": "a plain name number %d", "note": "%s", "id": 7, "flag": false}`+"\n",
			1700000000000+i, i, strings.Repeat("y", 13+i%30))
	}
	inputs := map[string][]byte{"csv": text.Copy(cs), "json": text.Copy(js)}
	within := func(v, src []byte) bool {
		p := uintptr(unsafe.Pointer(unsafe.SliceData(strview.Bytes(v))))
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(src)))
		return p >= lo && p < lo+uintptr(len(src))
	}
	for _, c := range []struct {
		name   string
		format string
		mk     func(o Options) Decoder
	}{
		{"csv", "csv", func(o Options) Decoder { d, _ := NewCSVDecoder(l, CSVOptions{Options: o}); return d }},
		{"csv slow", "csv", func(o Options) Decoder {
			d, _ := NewCSVDecoder(l, CSVOptions{Options: o})
			d.noFastFields = true
			return d
		}},
		{"json", "json", func(o Options) Decoder { d, _ := NewJSONDecoder(l, JSONOptions{Options: o}); return d }},
		{"json general", "json", func(o Options) Decoder {
			d, _ := NewJSONDecoder(l, JSONOptions{NoFastPath: true, Options: o})
			return d
		}},
	} {
		src := inputs[c.format]
		want, err := decodeAll(t, c.mk(Options{Strings: strs}), src)
		require.NoError(t, err, c.name)
		got, err := decodeAll(t, c.mk(Options{Strings: strs, RefInput: true}), src)
		require.NoError(t, err, c.name)
		assert.Equal(t, canonical(l, want), canonical(l, got), c.name)
		refs := 0
		for o := 0; o < len(got); o += l.TupleSize {
			for _, col := range l.Columns {
				if col.Kind != String || (col.Nullable && got[o+col.NullBit>>3]&(1<<(col.NullBit&7)) != 0) {
					continue
				}
				v := got[o+col.Offset : o+col.Offset+strview.Size]
				s := strview.Bytes(v)
				if len(s) <= strview.MaxInline {
					continue
				}
				if within(v, src) {
					refs++
				}
			}
		}
		assert.Positive(t, refs, "%s: long strings referenced in the text", c.name)
	}
}
