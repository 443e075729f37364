package source

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/strview"
)

// TestNoAllocPerRecord: once warm, decoding a buffer of records allocates
// nothing, for CSV (with quoted fields and "" escapes), JSON by the fast
// path and by the general decoder (escapes, unknown members), skipped bad
// records included, and through a Reader.
func TestNoAllocPerRecord(t *testing.T) {
	l := ysbLayout(t)
	js, cs, _ := ysbInput(200, 21)
	quoted := bytes.ReplaceAll(cs, []byte(",view,"), []byte(`,"view",`))
	escaped := bytes.ReplaceAll(js, []byte(`"view"`), []byte(`"vi\u0065w"`))
	extra := bytes.ReplaceAll(js, []byte(`{"user_id"`), []byte(`{"x": [1, {"y": "z"}], "user_id"`))
	badCSV := bytes.ReplaceAll(cs, []byte(",click,"), []byte(",clack,"))
	badJSON := bytes.ReplaceAll(js, []byte(`"click"`), []byte(`"clack"`))
	dst := make([]byte, 256*128)
	for _, tc := range []struct {
		name string
		mk   func() Decoder
		src  []byte
		fast bool
	}{
		{"csv", func() Decoder { d, _ := NewCSVDecoder(l, CSVOptions{}); return d }, cs, false},
		{"csv quoted", func() Decoder { d, _ := NewCSVDecoder(l, CSVOptions{}); return d }, quoted, false},
		{"csv skip", func() Decoder { d, _ := NewCSVDecoder(l, CSVOptions{Options: Options{OnError: Skip}}); return d }, badCSV, false},
		{"json fast", func() Decoder { d, _ := NewJSONDecoder(l, JSONOptions{}); return d }, js, true},
		{"json general", func() Decoder { d, _ := NewJSONDecoder(l, JSONOptions{NoFastPath: true}); return d }, js, false},
		{"json escapes", func() Decoder { d, _ := NewJSONDecoder(l, JSONOptions{NoFastPath: true}); return d }, escaped, false},
		{"json extra members", func() Decoder { d, _ := NewJSONDecoder(l, JSONOptions{}); return d }, extra, true},
		{"json skip", func() Decoder { d, _ := NewJSONDecoder(l, JSONOptions{Options: Options{OnError: Skip}}); return d }, badJSON, true},
	} {
		d := tc.mk()
		run := func() {
			n, c, err := d.Decode(dst, tc.src, true)
			if err != nil || c != len(tc.src) || n == 0 {
				panic("decode")
			}
		}
		run()
		allocs := testing.AllocsPerRun(20, run)
		assert.Zero(t, allocs, tc.name)
		if jd, ok := d.(*JSONDecoder); ok {
			if tc.fast {
				assert.Greater(t, jd.FastLines(), 20*jd.SlowLines(), tc.name)
			} else if !strings.Contains(tc.name, "escapes") {
				assert.Zero(t, jd.FastLines(), tc.name)
			}
		}
	}
	// Through a Reader.
	d, err := NewJSONDecoder(l, JSONOptions{})
	require.NoError(t, err)
	src := bytes.NewReader(js)
	r := NewReader(src, d, 4096)
	small := make([]byte, 16*128)
	fill := func() {
		for {
			if _, err := r.Fill(small); err != nil {
				src.Reset(js)
				r.err, r.eof = nil, false
				return
			}
		}
	}
	fill()
	assert.Zero(t, testing.AllocsPerRun(20, fill), "reader")
}

// TestNoAllocPerRecordStrings: the same with strings (short, long,
// escaped, quoted with line breaks), timestamps, booleans and NULLs: the
// long strings' memory comes from Options.Strings, once per record.
func TestNoAllocPerRecordStrings(t *testing.T) {
	l := strLayout(t)
	a, strs := testArena(t)
	calls := 0
	counted := func(n int) ([]byte, error) { calls++; return strs(n) }
	r := rand.New(rand.NewPCG(11, 12))
	var recs []strRecord
	var js []byte
	for range 200 {
		rec := randStrRecord(r, l, false)
		recs = append(recs, rec)
		js = append(append(js, strJSON(r, l, rec)...), '\n')
	}
	cs := strCSV(r, recs, "\r\n")
	// One shape: the fast path.
	var shaped []byte
	for i := range 200 {
		shaped = fmt.Appendf(shaped, `{"ts": "2024-03-01 10:00:%02d.250", "name": "user number %d, \"quoted\"", "note": "%s", "n": %d, "ok": true, "f": 1.5, "at": %d, "color": "blue", "id": 7, "flag": "0"}`+"\n",
			i%60, i, strings.Repeat("x", i%40), i, 1700000000000+i)
	}
	dst := make([]byte, 256*l.TupleSize)
	// The strings dictionary-encoded: no memory asked for them, and none
	// allocated once the decoder's cache met them.
	dl := dictStrLayout(t, strview.NewDict())
	for _, tc := range []struct {
		name string
		mk   func() Decoder
		src  []byte
		fast bool
		dict bool
	}{
		{"csv", func() Decoder { d, _ := NewCSVDecoder(l, CSVOptions{Options: Options{Strings: counted}}); return d }, cs, false, false},
		{"json general", func() Decoder {
			d, _ := NewJSONDecoder(l, JSONOptions{NoFastPath: true, Options: Options{Strings: counted}})
			return d
		}, js, false, false},
		{"json mixed", func() Decoder { d, _ := NewJSONDecoder(l, JSONOptions{Options: Options{Strings: counted}}); return d }, js, false, false},
		{"json fast", func() Decoder { d, _ := NewJSONDecoder(l, JSONOptions{Options: Options{Strings: counted}}); return d }, shaped, true, false},
		{"csv dict", func() Decoder { d, _ := NewCSVDecoder(dl, CSVOptions{Options: Options{Strings: counted}}); return d }, cs, false, true},
		{"json fast dict", func() Decoder { d, _ := NewJSONDecoder(dl, JSONOptions{Options: Options{Strings: counted}}); return d }, shaped, true, true},
	} {
		d := tc.mk()
		run := func() {
			a.Reset()
			n, c, err := d.Decode(dst, tc.src, true)
			if err != nil || c != len(tc.src) || n != 200 {
				panic(fmt.Sprint("decode: ", n, c, err))
			}
		}
		run()
		calls = 0
		allocs := testing.AllocsPerRun(20, run)
		assert.Zero(t, allocs, tc.name)
		assert.LessOrEqual(t, calls, 21*200, "%s: at most one call per record", tc.name)
		if tc.dict {
			assert.Zero(t, calls, "%s: the strings are the dictionary's", tc.name)
		} else {
			assert.Positive(t, calls, tc.name)
		}
		if jd, ok := d.(*JSONDecoder); ok && tc.fast {
			assert.Greater(t, jd.FastLines(), 20*jd.SlowLines(), tc.name)
		}
	}
}
