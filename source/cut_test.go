package source

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCutRecords(t *testing.T) {
	for _, c := range []struct {
		in   string
		csv  bool
		want int
	}{
		{"", true, 0},
		{"a,b", true, 0},
		{"a,b\nc", true, 4},
		{"a,\"x\ny\",b\nc,d\n", true, 14},
		{"a,\"x\ny\",b\nc,\"d\n", true, 10},
		{"a,\"x\"\"\ny\",b\n", true, 12},
		{"a,b\"c\nd,e\n", true, 10}, // a quote inside an unquoted field is a character
		{"a,\"b\"c\nd\n", true, 9},  // text after a closing quote: the line still ends there
		{"{\"a\":\"x\"}\n{\"a\"", false, 10},
		{"x;\"a\nb\";c\n", true, 10}, // with ',' as the separator the quotes are characters: two records
	} {
		assert.Equal(t, c.want, CutRecords([]byte(c.in), c.csv, ','), "%q", c.in)
	}
	assert.Equal(t, 10, CutRecords([]byte("x;\"a\nb\";c\n"), true, ';'), "one record, its quoted field spanning the line break")
	assert.Equal(t, 0, CutRecords([]byte("x;\"a\nb\";c"), true, ';'))
}

// TestCutRecordsDecodes: whatever the cuts, decoding block after block
// gives what decoding the whole gives (RFC 4180 records with quoted
// separators, quotes and line breaks, literal quotes, empty lines).
func TestCutRecordsDecodes(t *testing.T) {
	l, err := NewLayout(32, Column{Name: "ts", Kind: Int64, Offset: 0}, Column{Name: "s", Kind: Bytes, Offset: 8, Size: 24})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(1, 1))
	fields := []string{"x", "\"a,b\"", "\"l1\nl2\"", "\"q\"\"q\"", "p\"q", "", "\"\""}
	for round := range 200 {
		var text []byte
		for i := range 1 + r.IntN(40) {
			if r.IntN(10) == 0 {
				text = append(text, '\n')
			}
			text = append(text, []byte(cutItoa(i)+","+fields[r.IntN(len(fields))]+"\n")...)
		}
		whole := decodeCut(t, l, text)
		var blocks [][]byte
		for rest := text; len(rest) > 0; {
			n := CutRecords(rest[:min(len(rest), 1+r.IntN(30))], true, ',')
			if n == 0 {
				n = CutRecords(rest, true, ',')
				if n == 0 {
					n = len(rest)
				}
			}
			blocks = append(blocks, rest[:n])
			rest = rest[n:]
		}
		var parts []byte
		for _, b := range blocks {
			parts = append(parts, decodeCut(t, l, b)...)
		}
		require.Equal(t, whole, parts, "round %d: %q", round, text)
	}
}

func decodeCut(t *testing.T, l *Layout, text []byte) []byte {
	d, err := NewCSVDecoder(l, CSVOptions{})
	require.NoError(t, err)
	dst := make([]byte, 32*100)
	n, c, err := d.Decode(dst, text, true)
	require.NoError(t, err)
	require.Equal(t, len(text), c)
	return dst[:n*32]
}

func cutItoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return cutItoa(i/10) + string(rune('0'+i%10))
}

// FuzzCutRecords: on any bytes, a cut ends a line (or is 0), cutting the
// cut again keeps all of it, and a prefix's cut is never past the
// whole's (the records a prefix shows whole are whole records of the
// whole), for CSV and JSON lines.
func FuzzCutRecords(f *testing.F) {
	f.Add([]byte("1,\"a\nb\",c\n2,d\n"), 5)
	f.Add([]byte("\"\"\"\n\"\n"), 2)
	f.Add([]byte("{\"a\": 1}\n{\"a\""), 9)
	f.Fuzz(func(t *testing.T, b []byte, p int) {
		for _, csv := range []bool{true, false} {
			cut := CutRecords(b, csv, ',')
			require.True(t, cut >= 0 && cut <= len(b))
			if cut > 0 {
				require.Equal(t, byte('\n'), b[cut-1])
			}
			require.Equal(t, cut, CutRecords(b[:cut], csv, ','))
			if len(b) > 0 {
				p = (p%len(b) + len(b)) % len(b)
				require.LessOrEqual(t, CutRecords(b[:p], csv, ','), cut)
			}
		}
	})
}

// TestCutHeader: the header is the first record that is not an empty
// line, to its end: after empty lines, a byte order mark alone on the
// first, CRLF; with a quoted line break in it; 0 where it does not end.
func TestCutHeader(t *testing.T) {
	for in, want := range map[string]int{
		"a,b\n1,2\n":                 4,
		"\n\r\na,b\n1,2\n":           7,
		"\xef\xbb\xbf\na,b\n":        8,
		"\xef\xbb\xbfa,b\n1,2\n":     7,
		"a,\"b\nc\"\n1,2\n":          8,
		"a,b\r\n1,2\r\n":             5,
		"a,b":                        0,
		"\n\n":                       0,
		"a,\"b\n":                    0,
		"a,\"b\"x,\"c\nd\",e\n1,2\n": 10,
	} {
		assert.Equal(t, want, CutHeader([]byte(in), ','), "%q", in)
	}
}
