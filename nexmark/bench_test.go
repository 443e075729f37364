package nexmark

import (
	"testing"

	"github.com/saber-hx/saber-hx/strview"
)

// The benchmarks report events (or tuples) per second as events/s; one op
// is one event.

func BenchmarkNext(b *testing.B) {
	g, _ := New(DefaultConfig())
	var ev Event
	b.ReportAllocs()
	for b.Loop() {
		g.Next(&ev)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkNextOf(b *testing.B) {
	for _, tb := range Tables {
		b.Run(tb.String(), func(b *testing.B) {
			g, _ := New(DefaultConfig())
			var ev Event
			b.ReportAllocs()
			for b.Loop() {
				g.NextOf(tb, &ev)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkNextEncode is the generator feeding the engine: every event
// generated and written as a tuple of its table.
func BenchmarkNextEncode(b *testing.B) {
	g, _ := New(DefaultConfig())
	a := strview.NewArena(0)
	defer a.Free()
	var ev Event
	buf := make([]byte, 128)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i&0xffff == 0 {
			a.Reset()
		}
		g.Next(&ev)
		EncodeTuple(buf, &ev, a)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkFillTuples(b *testing.B) {
	for _, tb := range Tables {
		b.Run(tb.String(), func(b *testing.B) {
			g, _ := New(DefaultConfig())
			a := strview.NewArena(0)
			defer a.Free()
			buf := make([]byte, 1024*tb.TupleSize())
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				a.Reset()
				n += g.FillTuples(buf, tb, a)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	for _, kafka := range []bool{false, true} {
		name := "flat"
		if kafka {
			name = "kafka"
		}
		b.Run(name, func(b *testing.B) {
			g, _ := New(DefaultConfig())
			var ev Event
			buf := make([]byte, 0, 4096)
			bytes := 0
			b.ReportAllocs()
			for b.Loop() {
				g.Next(&ev)
				if kafka {
					buf = AppendKafkaJSON(buf[:0], &ev)
				} else {
					buf = AppendJSON(buf[:0], &ev)
				}
				bytes += len(buf) + 1
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(bytes)/float64(b.N), "B/event")
		})
	}
}

// BenchmarkBundleFillAt is the replay: a task of tuples copied from the
// bundle with their times and ids moved to a later pass.
func BenchmarkBundleFillAt(b *testing.B) {
	bu, err := NewBundle(DefaultConfig(), 200000)
	if err != nil {
		b.Fatal(err)
	}
	defer bu.Free()
	for _, tb := range Tables {
		b.Run(tb.String(), func(b *testing.B) {
			size := tb.TupleSize()
			dst := make([]byte, 4096*size)
			b.SetBytes(int64(len(dst)))
			k := uint64(bu.Count(tb)) // pass 1 on
			n := 0
			for b.Loop() {
				bu.FillAt(dst, tb, k)
				k += 4096
				n += 4096
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

func BenchmarkNewBundle(b *testing.B) {
	const events = 1000000
	for b.Loop() {
		bu, err := NewBundle(DefaultConfig(), events)
		if err != nil {
			b.Fatal(err)
		}
		bu.Free()
	}
	b.ReportMetric(float64(events*b.N)/b.Elapsed().Seconds(), "events/s")
}
