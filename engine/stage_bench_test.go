package engine_test

import (
	"encoding/binary"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/workloads"
)

// BenchmarkResultStage runs SABER's aggregations with many groups (sg2,
// lrb1, cm2) and groupby on as many workers as GOMAXPROCS (go test -cpu
// 1,2), their result stage one assembler (parts=1) or the engine's choice
// of partitions (parts=auto): wall ns and CPU ns (the process's, user and
// system) per tuple, after a warm-up in which every window's state grows
// to its size. One op is one task's worth of tuples, replayed from a
// bundle with its event times shifted pass after pass (as bench's
// replay). Alternate the two with -count and read them with benchstat:
// the machine's other work moves both.
func BenchmarkResultStage(b *testing.B) {
	for _, name := range []string{"sg2", "lrb1", "cm2", "groupby"} {
		for _, parts := range []struct {
			name string
			n    int
		}{{"parts=1", 1}, {"parts=auto", 0}} {
			b.Run(name+"/"+parts.name, func(b *testing.B) { benchStage(b, name, parts.n) })
		}
	}
}

func benchStage(b *testing.B, name string, parts int) {
	w, err := workloads.Lookup(name)
	if err != nil {
		b.Fatal(err)
	}
	p := workloads.DefaultParams()
	q, err := w.Build(p)
	if err != nil {
		b.Fatal(err)
	}
	gen, err := w.NewGenerator(p)
	if err != nil {
		b.Fatal(err)
	}
	ts := w.Schema.TupleSize
	period := int(gen.Period())
	for period*ts < 8<<20 {
		period *= 2
	}
	bundle := make([]byte, period*ts)
	gen.Fill(bundle, 0)
	span := int64(period / w.DefaultTuplesPerMs) // ms per pass
	cfg := engine.WithResultParts(engine.Config{Workers: runtime.GOMAXPROCS(0), TaskSize: engine.DefaultTaskSize}, parts)
	e, err := engine.Start(cfg, []engine.Spec{{Query: q}})
	if err != nil {
		b.Fatal(err)
	}
	s := e.Stream(0)
	chunk := make([]byte, engine.DefaultTaskSize)
	var pass int64
	off := 0
	feed := func() {
		n := copy(chunk, bundle[off:])
		for o := 0; o < n; o += ts {
			binary.LittleEndian.PutUint64(chunk[o:], binary.LittleEndian.Uint64(chunk[o:])+uint64(pass*span))
		}
		if err := s.Write(chunk[:n]); err != nil {
			b.Fatal(err)
		}
		if off += n; off == len(bundle) {
			off, pass = 0, pass+1
		}
	}
	for t0 := time.Now(); time.Since(t0) < time.Second; {
		feed()
	}
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		feed()
	}
	for s.InFlight() > 0 {
		runtime.Gosched()
	}
	b.StopTimer()
	tuples := float64(b.N) * float64(len(chunk)/ts)
	b.ReportMetric(float64(cpuTime()-cpu0)/tuples, "cpu-ns/tuple")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/tuples, "ns/tuple")
	st, err := e.Close()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(st.SerialFraction(), "serial")
}

// cpuTime is the process's CPU time so far, user and system, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
