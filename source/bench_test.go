package source

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/strview"
)

// benchDecode decodes YSB events (4096 lines a call) into a task-sized
// buffer, reporting MB/s of text and records/s.
func benchDecode(b *testing.B, d Decoder, src []byte, lines int) {
	dst := make([]byte, lines*d.TupleSize())
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		n, c, err := d.Decode(dst, src, true)
		if err != nil || n != lines || c != len(src) {
			b.Fatal(n, c, err)
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

const benchLines = 4096

func BenchmarkCSV(b *testing.B) {
	_, cs, _ := ysbInput(benchLines, 1)
	d, _ := NewCSVDecoder(ysbLayout(b), CSVOptions{})
	benchDecode(b, d, cs, benchLines)
}

func BenchmarkJSONFast(b *testing.B) {
	js, _, _ := ysbInput(benchLines, 1)
	d, _ := NewJSONDecoder(ysbLayout(b), JSONOptions{})
	benchDecode(b, d, js, benchLines)
	if d.SlowLines() > 1 {
		b.Fatalf("%d lines by the general decoder", d.SlowLines())
	}
}

func BenchmarkJSONGeneral(b *testing.B) {
	js, _, _ := ysbInput(benchLines, 1)
	d, _ := NewJSONDecoder(ysbLayout(b), JSONOptions{NoFastPath: true})
	benchDecode(b, d, js, benchLines)
}

// BenchmarkReaderJSON is the whole ingestion: a Reader over the text
// filling 1 MiB task buffers.
func BenchmarkReaderJSON(b *testing.B) {
	js, _, _ := ysbInput(benchLines, 1)
	d, _ := NewJSONDecoder(ysbLayout(b), JSONOptions{})
	src := bytes.NewReader(js)
	r := NewReader(src, d, 0)
	dst := make([]byte, 1<<20)
	b.SetBytes(int64(len(js)))
	b.ReportAllocs()
	for b.Loop() {
		src.Reset(js)
		r.err, r.eof, r.start, r.end = nil, false, 0, 0
		for {
			if _, err := r.Fill(dst); err != nil {
				break
			}
		}
	}
	b.ReportMetric(float64(benchLines)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// bidLayout is a Nexmark bid with strings: a TIMESTAMP event time, three
// int64s, a short string (inline in its view), a URL (past MaxInline: in
// the Strings memory), a nullable extra string and a boolean.
func bidLayout(t testing.TB) *Layout {
	l, err := NewLayout(96,
		Column{Name: "date_time", Kind: Timestamp, Offset: 0},
		Column{Name: "auction", Kind: Int64, Offset: 8},
		Column{Name: "bidder", Kind: Int64, Offset: 16},
		Column{Name: "price", Kind: Int64, Offset: 24},
		Column{Name: "channel", Kind: String, Offset: 32},
		Column{Name: "url", Kind: String, Offset: 48},
		Column{Name: "extra", Kind: String, Offset: 64, Nullable: true, NullBit: 704},
		Column{Name: "bot", Kind: Bool, Offset: 80},
	)
	require.NoError(t, err)
	return l
}

// bidInput is n bids as JSON and CSV lines.
func bidInput(n int) (jsonText, csvText []byte) {
	r := rand.New(rand.NewPCG(1, 2))
	channels := []string{"Google", "Facebook", "Baidu", "Apple"}
	for i := range n {
		tm := time.UnixMilli(1709287201000 + int64(i)*7).UTC().Format("2006-01-02 15:04:05.000")
		ch := channels[r.IntN(len(channels))]
		url := fmt.Sprintf("https://www.nexmark.com/%s/item.htm?query=%d&channel_id=%d", ch, r.IntN(1000), r.IntN(1<<20))
		extra := strings.Repeat("x", r.IntN(40))
		bot := r.IntN(2) == 0
		jsonText = fmt.Appendf(jsonText, `{"auction": %d, "bidder": %d, "price": %d, "channel": "%s", "url": "%s", "date_time": "%s", "extra": "%s", "bot": %v}`+"\n",
			1000+r.IntN(1000), 2000+r.IntN(5000), r.IntN(1<<20), ch, url, tm, extra, bot)
		csvText = fmt.Appendf(csvText, "%s,%d,%d,%d,%s,%s,%s,%v\n", tm, 1000+r.IntN(1000), 2000+r.IntN(5000), r.IntN(1<<20), ch, url, extra, bot)
	}
	return
}

// benchStrings is benchDecode with the Strings memory from an arena,
// reset every call (as the engine frees a task's).
func benchStrings(b *testing.B, mk func(Options) Decoder, src []byte) {
	benchStringsOpts(b, mk, src, false)
}

// benchStringsOpts is benchStrings, with the long strings that need no
// unescaping referenced in the input where ref (Options.RefInput, as a
// decoding pool's blocks decode: the input in an arena).
func benchStringsOpts(b *testing.B, mk func(Options) Decoder, src []byte, ref bool) {
	a := strview.NewArena(0)
	defer a.Free()
	if ref {
		text := strview.NewArena(0)
		defer text.Free()
		src = text.Copy(src)
	}
	d := mk(Options{Strings: ArenaStrings(a), RefInput: ref})
	dst := make([]byte, benchLines*d.TupleSize())
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		a.Reset()
		n, c, err := d.Decode(dst, src, true)
		if err != nil || n != benchLines || c != len(src) {
			b.Fatal(n, c, err)
		}
	}
	b.ReportMetric(float64(benchLines)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkCSVStrings(b *testing.B) {
	_, cs := bidInput(benchLines)
	l := bidLayout(b)
	benchStrings(b, func(o Options) Decoder { d, _ := NewCSVDecoder(l, CSVOptions{Options: o}); return d }, cs)
}

func BenchmarkJSONFastStrings(b *testing.B) {
	js, _ := bidInput(benchLines)
	l := bidLayout(b)
	var d *JSONDecoder
	benchStrings(b, func(o Options) Decoder { d, _ = NewJSONDecoder(l, JSONOptions{Options: o}); return d }, js)
	if d.SlowLines() > 1 {
		b.Fatalf("%d lines by the general decoder", d.SlowLines())
	}
}

// dictBidLayout is bidLayout with its channel dictionary-encoded (a
// column a query groups by), its number at 84.
func dictBidLayout(t testing.TB) *Layout {
	cols := slices.Clone(bidLayout(t).Columns)
	cols[4].Dict, cols[4].NumberAt = strview.NewDict(), 84
	l, err := NewLayout(96, cols...)
	require.NoError(t, err)
	return l
}

// BenchmarkCSVDictStrings and BenchmarkJSONFastDictStrings are
// BenchmarkCSVStrings and BenchmarkJSONFastStrings with the channel
// dictionary-encoded: what encoding costs the decoders.
func BenchmarkCSVDictStrings(b *testing.B) {
	_, cs := bidInput(benchLines)
	l := dictBidLayout(b)
	benchStrings(b, func(o Options) Decoder { d, _ := NewCSVDecoder(l, CSVOptions{Options: o}); return d }, cs)
}

func BenchmarkJSONFastDictStrings(b *testing.B) {
	js, _ := bidInput(benchLines)
	l := dictBidLayout(b)
	benchStrings(b, func(o Options) Decoder { d, _ := NewJSONDecoder(l, JSONOptions{Options: o}); return d }, js)
}

func BenchmarkJSONGeneralStrings(b *testing.B) {
	js, _ := bidInput(benchLines)
	l := bidLayout(b)
	benchStrings(b, func(o Options) Decoder {
		d, _ := NewJSONDecoder(l, JSONOptions{NoFastPath: true, Options: o})
		return d
	}, js)
}

// ysbStringLayout reads YSB's events with string columns where
// ysbLayout parses UUIDs, labels and addresses, and a TIMESTAMP event
// time: the same bytes, decoded as strings (the UUIDs, 36 bytes, into the
// Strings memory; the others inline).
func ysbStringLayout(t testing.TB) *Layout {
	l, err := NewLayout(128,
		Column{Name: "event_time", Kind: Timestamp, Offset: 0},
		Column{Name: "user_id", Kind: String, Offset: 8},
		Column{Name: "page_id", Kind: String, Offset: 24},
		Column{Name: "ad_id", Kind: String, Offset: 40},
		Column{Name: "ad_type", Kind: String, Offset: 56},
		Column{Name: "event_type", Kind: String, Offset: 72},
		Column{Name: "ip_address", Kind: String, Offset: 88},
	)
	require.NoError(t, err)
	return l
}

func BenchmarkCSVYSBStrings(b *testing.B) {
	_, cs, _ := ysbInput(benchLines, 1)
	l := ysbStringLayout(b)
	benchStrings(b, func(o Options) Decoder { d, _ := NewCSVDecoder(l, CSVOptions{Options: o}); return d }, cs)
}

func BenchmarkJSONFastYSBStrings(b *testing.B) {
	js, _, _ := ysbInput(benchLines, 1)
	l := ysbStringLayout(b)
	var d *JSONDecoder
	benchStrings(b, func(o Options) Decoder { d, _ = NewJSONDecoder(l, JSONOptions{Options: o}); return d }, js)
	if d.SlowLines() > 1 {
		b.Fatalf("%d lines by the general decoder", d.SlowLines())
	}
}

// The Ref benchmarks are the strings' ones as a decoding pool's blocks
// decode: long strings referenced in the input (Options.RefInput).
func BenchmarkCSVYSBStringsRef(b *testing.B) {
	_, cs, _ := ysbInput(benchLines, 1)
	l := ysbStringLayout(b)
	benchStringsOpts(b, func(o Options) Decoder { d, _ := NewCSVDecoder(l, CSVOptions{Options: o}); return d }, cs, true)
}

func BenchmarkJSONFastYSBStringsRef(b *testing.B) {
	js, _, _ := ysbInput(benchLines, 1)
	l := ysbStringLayout(b)
	benchStringsOpts(b, func(o Options) Decoder { d, _ := NewJSONDecoder(l, JSONOptions{Options: o}); return d }, js, true)
}

func BenchmarkCSVStringsRef(b *testing.B) {
	_, cs := bidInput(benchLines)
	l := bidLayout(b)
	benchStringsOpts(b, func(o Options) Decoder { d, _ := NewCSVDecoder(l, CSVOptions{Options: o}); return d }, cs, true)
}

func BenchmarkJSONFastStringsRef(b *testing.B) {
	js, _ := bidInput(benchLines)
	l := bidLayout(b)
	benchStringsOpts(b, func(o Options) Decoder { d, _ := NewJSONDecoder(l, JSONOptions{Options: o}); return d }, js, true)
}

// sensorLayout is #26's short records, `ts BIGINT, sensor INT, value
// DOUBLE` as a SQL source declares them (the values nullable).
func sensorLayout(t testing.TB) *Layout {
	l, err := NewLayout(32,
		Column{Name: "ts", Kind: Int64, Offset: 0},
		Column{Name: "sensor", Kind: Int32, Offset: 8, Nullable: true, NullBit: 96},
		Column{Name: "value", Kind: Float64, Offset: 16, Nullable: true, NullBit: 97},
	)
	require.NoError(t, err)
	return l
}

// sensorInput is n such records as JSON and CSV lines.
func sensorInput(n int) (jsonText, csvText []byte) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		sensor, value := r.IntN(1000), float64(r.IntN(10000))/100
		jsonText = fmt.Appendf(jsonText, `{"ts": %d, "sensor": %d, "value": %.2f}`+"\n", i/2, sensor, value)
		csvText = fmt.Appendf(csvText, "%d,%d,%.2f\n", i/4, sensor, value)
	}
	return
}

func BenchmarkJSONFastShort(b *testing.B) {
	js, _ := sensorInput(benchLines)
	d, _ := NewJSONDecoder(sensorLayout(b), JSONOptions{})
	benchDecode(b, d, js, benchLines)
	if d.SlowLines() > 1 {
		b.Fatalf("%d lines by the general decoder", d.SlowLines())
	}
}

func BenchmarkCSVShort(b *testing.B) {
	_, cs := sensorInput(benchLines)
	d, _ := NewCSVDecoder(sensorLayout(b), CSVOptions{})
	benchDecode(b, d, cs, benchLines)
}
