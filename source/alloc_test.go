package source

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
