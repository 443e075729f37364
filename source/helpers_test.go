package source

import (
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var adTypes = []string{"banner", "modal", "sponsored-search", "mail", "mobile"}
var eventTypes = []string{"view", "click", "purchase"}

// ysbLayout is YSB's 128-byte tuple (ysb/schema.go) as a layout.
func ysbLayout(t testing.TB) *Layout {
	l, err := NewLayout(128,
		Column{Name: "event_time", Kind: Int64, Offset: 0},
		Column{Name: "user_id", Kind: UUID, Offset: 8},
		Column{Name: "page_id", Kind: UUID, Offset: 24},
		Column{Name: "ad_id", Kind: UUID, Offset: 40},
		Column{Name: "ad_type", Kind: Enum, Offset: 56, Labels: adTypes},
		Column{Name: "event_type", Kind: Enum, Offset: 60, Labels: eventTypes},
		Column{Name: "ip_address", Kind: IPv4, Offset: 64},
	)
	require.NoError(t, err)
	return l
}

func uuidOf(r *rand.Rand) [16]byte {
	var u [16]byte
	binary.LittleEndian.PutUint64(u[:], r.Uint64())
	binary.LittleEndian.PutUint64(u[8:], r.Uint64())
	return u
}

func uuidString(u [16]byte) string {
	const h = "0123456789abcdef"
	var b []byte
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, h[c>>4], h[c&15])
	}
	return string(b)
}

// ysbEvent is one YSB event: its JSON line as the original generator
// writes it, its CSV line, and its tuple.
func ysbEvent(r *rand.Rand, i int) (jsonLine, csvLine string, tuple []byte) {
	u, p, a := uuidOf(r), uuidOf(r), uuidOf(r)
	at, et := r.IntN(len(adTypes)), r.IntN(len(eventTypes))
	tm := int64(1700000000000 + i)
	ip := r.Uint32()
	ipText := fmt.Sprintf("%d.%d.%d.%d", ip>>24, ip>>16&255, ip>>8&255, ip&255)
	jsonLine = fmt.Sprintf(`{"user_id": "%s", "page_id": "%s", "ad_id": "%s", "ad_type": "%s", "event_type": "%s", "event_time": "%d", "ip_address": "%s"}`,
		uuidString(u), uuidString(p), uuidString(a), adTypes[at], eventTypes[et], tm, ipText)
	csvLine = fmt.Sprintf("%d,%s,%s,%s,%s,%s,%s", tm, uuidString(u), uuidString(p), uuidString(a), adTypes[at], eventTypes[et], ipText)
	tuple = make([]byte, 128)
	binary.LittleEndian.PutUint64(tuple, uint64(tm))
	copy(tuple[8:], u[:])
	copy(tuple[24:], p[:])
	copy(tuple[40:], a[:])
	binary.LittleEndian.PutUint32(tuple[56:], uint32(at))
	binary.LittleEndian.PutUint32(tuple[60:], uint32(et))
	binary.LittleEndian.PutUint32(tuple[64:], ip)
	return
}

// ysbInput is n events as JSON and CSV text (newline-terminated lines)
// and their tuples.
func ysbInput(n int, seed uint64) (jsonText, csvText, tuples []byte) {
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range n {
		j, c, t := ysbEvent(r, i)
		jsonText = append(append(jsonText, j...), '\n')
		csvText = append(append(csvText, c...), '\n')
		tuples = append(tuples, t...)
	}
	return
}

// allLayout has a column of every kind, out of offset order, with padding.
func allLayout(t testing.TB) *Layout {
	l, err := NewLayout(80,
		Column{Name: "t", Kind: Int64, Offset: 0},
		Column{Name: "i32", Kind: Int32, Offset: 8},
		Column{Name: "f64", Kind: Float64, Offset: 16},
		Column{Name: "f32", Kind: Float32, Offset: 12},
		Column{Name: "id", Kind: UUID, Offset: 24},
		Column{Name: "name", Kind: Bytes, Offset: 40, Size: 8},
		Column{Name: "color", Kind: Enum, Offset: 48, Labels: []string{"red", "green", "blue", "", "é\"x"}},
		Column{Name: "ip", Kind: IPv4, Offset: 52},
		Column{Name: "i64", Kind: Int64, Offset: 56},
	)
	require.NoError(t, err)
	return l
}

// record is one random record of allLayout: its values as text, and
// as they are stored.
type record struct {
	text  []string // per column, allLayout's order
	tuple []byte
}

var nameRunes = []rune("ab,\"\\/ é<>&\t\u2028xyz01")
var plainRunes = []rune("ab,/ éxyz01")

func randRecord(r *rand.Rand, l *Layout) record {
	rec := record{tuple: make([]byte, l.TupleSize)}
	for _, c := range l.Columns {
		dst := rec.tuple[c.Offset:]
		var s string
		switch c.Kind {
		case Int64:
			v := int64(r.Uint64())
			if r.IntN(2) == 0 {
				v = r.Int64N(2000) - 1000
			}
			binary.LittleEndian.PutUint64(dst, uint64(v))
			s = strconv.FormatInt(v, 10)
		case Int32:
			v := int32(r.Uint32())
			binary.LittleEndian.PutUint32(dst, uint32(v))
			s = strconv.FormatInt(int64(v), 10)
		case Float64:
			v := math.Float64frombits(r.Uint64())
			if math.IsNaN(v) || math.IsInf(v, 0) || r.IntN(2) == 0 {
				v = r.NormFloat64() * 1e6
			}
			binary.LittleEndian.PutUint64(dst, math.Float64bits(v))
			s = strconv.FormatFloat(v, 'g', -1, 64)
		case Float32:
			v := math.Float32frombits(r.Uint32())
			if v != v || math.IsInf(float64(v), 0) || r.IntN(2) == 0 {
				v = float32(r.NormFloat64())
			}
			binary.LittleEndian.PutUint32(dst, math.Float32bits(v))
			s = strconv.FormatFloat(float64(v), 'g', -1, 32)
		case UUID:
			u := uuidOf(r)
			copy(dst, u[:])
			s = uuidString(u)
			if r.IntN(2) == 0 {
				s = strings.ToUpper(s)
			}
		case Bytes:
			var b []byte
			runes := plainRunes
			if r.IntN(4) == 0 {
				runes = nameRunes
			}
			for {
				rr := runes[r.IntN(len(runes))]
				if len(b)+len(string(rr)) > c.Size || r.IntN(6) == 0 {
					break
				}
				b = append(b, string(rr)...)
			}
			copy(dst, b)
			s = string(b)
		case Enum:
			i := r.IntN(len(c.Labels))
			binary.LittleEndian.PutUint32(dst, uint32(i))
			s = c.Labels[i]
		case IPv4:
			v := r.Uint32()
			binary.LittleEndian.PutUint32(dst, v)
			s = fmt.Sprintf("%d.%d.%d.%d", v>>24, v>>16&255, v>>8&255, v&255)
		}
		rec.text = append(rec.text, s)
	}
	return rec
}

// csvOf writes records with encoding/csv (quoting what needs it), the
// fields in the order of cols (indexes into the layout).
func csvOf(t testing.TB, recs []record, cols []int, header []string, crlf bool) []byte {
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.UseCRLF = crlf
	if header != nil {
		require.NoError(t, w.Write(header))
	}
	for _, r := range recs {
		row := make([]string, len(cols))
		for i, c := range cols {
			row[i] = r.text[c]
		}
		require.NoError(t, w.Write(row))
	}
	w.Flush()
	require.NoError(t, w.Error())
	return []byte(b.String())
}

// jsonOf writes one object with encoding/json's quoting, the members in
// order (keys into the layout), numbers quoted or not.
func jsonOf(t testing.TB, l *Layout, rec record, order []int, quoteNumbers bool) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, c := range order {
		if i > 0 {
			b.WriteString(", ")
		}
		k, err := json.Marshal(l.Columns[c].Name)
		require.NoError(t, err)
		b.Write(k)
		b.WriteString(": ")
		switch l.Columns[c].Kind {
		case Int32, Int64, Float32, Float64:
			if !quoteNumbers {
				b.WriteString(rec.text[c])
				continue
			}
		}
		v, err := json.Marshal(rec.text[c])
		require.NoError(t, err)
		b.Write(v)
	}
	b.WriteByte('}')
	return b.String()
}

// decodeAll decodes src whole (atEOF) through d.
func decodeAll(t testing.TB, d Decoder, src []byte) ([]byte, error) {
	ts := d.TupleSize()
	var out []byte
	dst := make([]byte, 7*ts)
	for {
		n, c, err := d.Decode(dst, src, true)
		out = append(out, dst[:n*ts]...)
		src = src[c:]
		if err != nil {
			return out, err
		}
		if len(src) == 0 {
			return out, nil
		}
		require.True(t, n > 0 || c > 0, "no progress")
	}
}
