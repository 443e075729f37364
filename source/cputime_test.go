package source

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"
)

// threadCPU is this thread's user+system CPU time, ns.
func threadCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// The decoders' throughput per core, robust to a busy machine: each
// case decodes for 30 ms of this thread's CPU time a round (getrusage's
// RUSAGE_THREAD, the thread locked), the cases in turn, 60 rounds; MB of
// text per CPU second, median, 90th percentile and best. Wall-clock
// benchmarks (bench_test.go) on a 2-core machine shared with other work
// vary twofold; these ratios, measured in one process, hold within a few
// per cent. SABER_HX_CPU_BENCH=1 go test -run CPUThroughput -v ./source/
type cpuCase struct {
	name  string
	d     Decoder
	src   []byte
	reset func()
	rates []float64
	dst   []byte
}

// cpuCompare runs the cases a round each in turn, 30 ms of this thread's
// CPU time a round, and reports MB per CPU second: median and best.
func cpuCompare(t *testing.T, cases []*cpuCase) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, c := range cases {
		c.dst = make([]byte, 4096*c.d.TupleSize())
	}
	for round := 0; round < 60; round++ {
		for _, c := range cases {
			c0 := threadCPU()
			reps := 0
			for threadCPU()-c0 < 30e6 {
				if c.reset != nil {
					c.reset()
				}
				n, k, err := c.d.Decode(c.dst, c.src, true)
				if err != nil || n != 4096 || k != len(c.src) {
					t.Fatal(c.name, n, k, err)
				}
				reps++
			}
			el := threadCPU() - c0
			c.rates = append(c.rates, float64(len(c.src))*float64(reps)/(float64(el)/1e9)/1e6)
		}
	}
	for _, c := range cases {
		slices.Sort(c.rates)
		fmt.Fprintf(os.Stderr, "%-26s median %6.0f  p90 %6.0f  best %6.0f MB/cpu-s\n", c.name, c.rates[len(c.rates)/2], c.rates[len(c.rates)*9/10], c.rates[len(c.rates)-1])
	}
}

func TestCPUThroughputNumeric(t *testing.T) {
	if os.Getenv("SABER_HX_CPU_BENCH") == "" {
		t.Skip()
	}
	js, cs, _ := ysbInput(4096, 1)
	dc, _ := NewCSVDecoder(ysbLayout(t), CSVOptions{})
	dj, _ := NewJSONDecoder(ysbLayout(t), JSONOptions{})
	dg, _ := NewJSONDecoder(ysbLayout(t), JSONOptions{NoFastPath: true})
	cpuCompare(t, []*cpuCase{{name: "csv ysb", d: dc, src: cs}, {name: "json fast ysb", d: dj, src: js}, {name: "json general ysb", d: dg, src: js}})
}

func TestCPUThroughputAll(t *testing.T) {
	if os.Getenv("SABER_HX_CPU_BENCH") == "" {
		t.Skip()
	}
	js, cs, _ := ysbInput(4096, 1)
	bj, bc := bidInput(4096)
	a, strs := testArena(t)
	o := Options{Strings: strs}
	yl, sl, bl := ysbLayout(t), ysbStringLayout(t), bidLayout(t)
	csv := func(l *Layout) Decoder { d, _ := NewCSVDecoder(l, CSVOptions{Options: o}); return d }
	fast := func(l *Layout) Decoder { d, _ := NewJSONDecoder(l, JSONOptions{Options: o}); return d }
	gen := func(l *Layout) Decoder {
		d, _ := NewJSONDecoder(l, JSONOptions{Options: o, NoFastPath: true})
		return d
	}
	cpuCompare(t, []*cpuCase{
		{name: "csv ysb", d: csv(yl), src: cs},
		{name: "csv ysb strings", d: csv(sl), src: cs, reset: a.Reset},
		{name: "csv bid", d: csv(bl), src: bc, reset: a.Reset},
		{name: "json fast ysb", d: fast(yl), src: js},
		{name: "json fast ysb strings", d: fast(sl), src: js, reset: a.Reset},
		{name: "json fast bid", d: fast(bl), src: bj, reset: a.Reset},
		{name: "json general ysb", d: gen(yl), src: js},
		{name: "json general ysb strings", d: gen(sl), src: js, reset: a.Reset},
		{name: "json general bid", d: gen(bl), src: bj, reset: a.Reset},
	})
}
