package source

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fastLayout is allLayout with labels the fast path matches raw.
func fastLayout(t testing.TB) *Layout {
	l := allLayout(t)
	cols := append([]Column(nil), l.Columns...)
	cols[6].Labels = []string{"red", "green", "blue", "", "é"}
	l, err := NewLayout(l.TupleSize, cols...)
	require.NoError(t, err)
	return l
}

// TestJSONRoundTrip: random records as JSON objects (encoding/json's
// quoting, keys in a random order, numbers quoted or not), decoded by
// both paths, give the oracle's tuples.
func TestJSONRoundTrip(t *testing.T) {
	for _, l := range []*Layout{allLayout(t), fastLayout(t)} {
		r := rand.New(rand.NewPCG(3, 4))
		var src, want []byte
		order := r.Perm(len(l.Columns))
		for i := range 400 {
			rec := randRecord(r, l)
			if i%100 == 99 {
				order = r.Perm(len(l.Columns)) // a new shape: relearnt
			}
			src = append(append(src, jsonOf(t, l, rec, order, i%200 < 100)...), '\n')
			want = append(want, rec.tuple...)
		}
		for _, noFast := range []bool{false, true} {
			d, err := NewJSONDecoder(l, JSONOptions{NoFastPath: noFast})
			require.NoError(t, err)
			got, err := decodeAll(t, d, src)
			require.NoError(t, err)
			assert.Equal(t, want, got, "noFast %v", noFast)
			if !noFast && l.Columns[6].Labels[4] == "é" {
				assert.Greater(t, d.FastLines(), int64(300), "most lines by the fast path")
			}
		}
	}
}

// variant rewrites a JSON line of fastLayout's shape in one of the ways
// that the fast path must either decode as the general decoder does or
// leave to it.
func variant(r *rand.Rand, l *Layout, rec record) string {
	type member struct{ k, v string }
	var ms []member
	for i, c := range l.Columns {
		v := rec.text[i]
		quote := true
		switch c.Kind {
		case Int32, Int64, Float32, Float64:
			quote = r.IntN(2) == 0
		}
		if quote {
			v = jsonString(r, v)
		}
		ms = append(ms, member{jsonString(r, c.Name), v})
	}
	if r.IntN(3) == 0 {
		extras := []string{`{"a": [1, 2, {"b": "}"}]}`, `null`, `true`, `"x\"y"`, `-1.5e+3`, `[]`, `{}`}
		ms = append(ms, member{`"extra"`, extras[r.IntN(len(extras))]})
	}
	if r.IntN(3) == 0 {
		r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	}
	ws := func() string {
		if r.IntN(6) == 0 {
			return [...]string{"", " ", "  ", "\t", " \r"}[r.IntN(5)]
		}
		return " "
	}
	var b strings.Builder
	b.WriteString("{")
	for i, m := range ms {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(ws() + m.k + ws() + ":" + ws() + m.v)
	}
	b.WriteString(ws() + "}")
	return b.String()
}

// jsonString quotes s, sometimes with escapes where none are needed.
func jsonString(r *rand.Rand, s string) string {
	var b strings.Builder
	b.WriteByte('"')
	esc := r.IntN(8) == 0
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b.WriteString(`\` + string(c))
		case c < 0x20:
			b.WriteString(`\u00` + string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15]))
		case esc && c == '/':
			b.WriteString(`\/`)
		case esc && c < 0x80 && r.IntN(3) == 0:
			b.WriteString(`\u00` + string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15]))
		case esc && c == 'é':
			b.WriteString(`\u00e9`)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestFastPathIsGeneral: on lines of one shape and its variants (keys in
// another order, other spaces, extra members, escapes, quoted numbers),
// with a few bad lines, the fast path gives what the general decoder
// gives, tuple for tuple, error for error.
func TestFastPathIsGeneral(t *testing.T) {
	l := fastLayout(t)
	r := rand.New(rand.NewPCG(5, 6))
	var src []byte
	base := r.Perm(len(l.Columns))
	for i := range 3000 {
		rec := randRecord(r, l)
		var line string
		if r.IntN(4) == 0 {
			line = variant(r, l, rec)
		} else {
			line = jsonOf(t, l, rec, base, i/500%2 == 0)
		}
		if r.IntN(50) == 0 { // a bad line: cut, or a value spoilt
			switch r.IntN(3) {
			case 0:
				line = line[:r.IntN(len(line))]
			case 1:
				line = strings.Replace(line, `"red"`, `"rouge"`, 1)
			default:
				line = strings.Replace(line, `-`, `+`, 1)
			}
		}
		src = append(append(src, line...), '\n')
	}
	var outs [2][]byte
	var malformed [2]int64
	for i, noFast := range []bool{false, true} {
		d, err := NewJSONDecoder(l, JSONOptions{NoFastPath: noFast, Options: Options{OnError: Skip}})
		require.NoError(t, err)
		outs[i], err = decodeAll(t, d, src)
		require.NoError(t, err)
		malformed[i] = d.Malformed()
		if !noFast {
			assert.Greater(t, d.FastLines(), int64(1500))
			t.Logf("fast %d, general %d, malformed %d", d.FastLines(), d.SlowLines(), d.Malformed())
		}
	}
	assert.Equal(t, malformed[1], malformed[0])
	assert.Equal(t, len(outs[1]), len(outs[0]))
	assert.Equal(t, outs[1], outs[0])
	// Line by line, in fail mode: the same error on the same line.
	d0, _ := NewJSONDecoder(l, JSONOptions{})
	d1, _ := NewJSONDecoder(l, JSONOptions{NoFastPath: true})
	dst := make([]byte, l.TupleSize)
	for _, line := range strings.SplitAfter(string(src), "\n") {
		n0, c0, e0 := d0.Decode(dst, []byte(line), true)
		t0 := string(dst)
		n1, c1, e1 := d1.Decode(dst, []byte(line), true)
		require.Equal(t, e1, e0, "line %q", line)
		require.Equal(t, [2]int{n1, c1}, [2]int{n0, c0})
		if n0 == 1 {
			require.Equal(t, string(dst), t0, "line %q", line)
		}
		if e0 != nil { // pass the line over
			d0.lines++
			d1.lines++
		}
	}
}

// TestFastPathUnquotedAfterANullTemplate: where the template line had
// null for a nullable UUID or IPv4 column, a later line with the value
// unquoted is not JSON, for the fast path as for the general decoder.
func TestFastPathUnquotedAfterANullTemplate(t *testing.T) {
	l, err := NewLayout(32,
		Column{Name: "t", Kind: Timestamp, Offset: 0},
		Column{Name: "u", Kind: UUID, Offset: 8, Nullable: true, NullBit: 24 * 8},
		Column{Name: "ip", Kind: IPv4, Offset: 28, Nullable: true, NullBit: 24*8 + 1},
	)
	require.NoError(t, err)
	src := []byte(`{"t":1,"u":null,"ip":null}` + "\n" +
		`{"t":2,"u":01234567-89ab-cdef-0123-456789abcdef,"ip":null}` + "\n" +
		`{"t":3,"u":null,"ip":1.2.3.4}` + "\n" +
		`{"t":4,"u":"01234567-89ab-cdef-0123-456789abcdef","ip":"1.2.3.4"}` + "\n")
	var outs [2][]byte
	for i, noFast := range []bool{false, true} {
		d, err := NewJSONDecoder(l, JSONOptions{NoFastPath: noFast, Options: Options{Input: "x.json", OnError: Skip}})
		require.NoError(t, err)
		outs[i], err = decodeAll(t, d, src)
		require.NoError(t, err)
		assert.Equal(t, int64(2), d.Malformed(), "fast path %v: lines 2 and 3 are not JSON (fast %d, general %d)", !noFast, d.FastLines(), d.SlowLines())
	}
	assert.Equal(t, outs[1], outs[0])
	assert.Len(t, outs[0], 2*32)
}

// TestJSONDepth: encoding/json's nesting limit, 10000 levels with the
// line's object.
func TestJSONDepth(t *testing.T) {
	l := ysbLayout(t)
	js, _, want := ysbInput(1, 1)
	for _, depth := range []int{9999, 10000} {
		line := strings.Replace(string(js), `{"user_id"`, `{"x": `+strings.Repeat("[", depth)+strings.Repeat("]", depth)+`, "user_id"`, 1)
		d, err := NewJSONDecoder(l, JSONOptions{})
		require.NoError(t, err)
		got, err := decodeAll(t, d, []byte(line))
		if depth == 9999 {
			require.NoError(t, err)
			assert.Equal(t, want, got)
			assert.True(t, json.Valid([]byte(line)))
		} else {
			assert.ErrorContains(t, err, "line 1, column 10006: nested too deep")
			assert.False(t, json.Valid([]byte(line)))
		}
	}
}

// TestEqualLit: equalLit is bytes.Equal for literals of every length up
// to past its word-sized cases, a byte changed anywhere.
func TestEqualLit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 21 {
		for range 200 {
			a := make([]byte, n)
			for i := range a {
				a[i] = byte(r.IntN(4)) + 'a'
			}
			b := bytes.Clone(a)
			if n > 0 && r.IntN(2) == 0 {
				b[r.IntN(n)] ^= byte(1 + r.IntN(3))
			}
			require.Equal(t, bytes.Equal(a, b), equalLit(a, b), "%q %q", a, b)
		}
	}
}
