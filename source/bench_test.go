package source

import (
	"bytes"
	"testing"
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
