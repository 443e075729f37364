package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/ysb"
)

// ysbSummary is the summary of a ysb run (--json: one object). In
// benchmark mode the tuple counts, bytes, seconds, rates, latencies and GC
// figures are those of the measured interval, after the warm-up; tasks,
// windows, rows, processors and total_tuples are the whole run, whose every
// window was validated.
type ysbSummary struct {
	Mode       string  `json:"mode"`
	Tuples     uint64  `json:"tuples"`
	Bytes      uint64  `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	TuplesPerS float64 `json:"tuples_per_s"`
	MBPerS     float64 `json:"mb_per_s"`
	GBPerS     float64 `json:"gb_per_s"`
	// Task latency, dispatched to its windows emitted: quantiles exact to a
	// factor of two.
	LatencyP50ms float64 `json:"latency_p50_ms"`
	LatencyP99ms float64 `json:"latency_p99_ms"`
	// Benchmark mode only.
	WarmupS        *float64 `json:"warmup_s,omitempty"`
	TotalTuples    *uint64  `json:"total_tuples,omitempty"`     // the whole run, warm-up included
	GCCycles       *uint64  `json:"gc_cycles,omitempty"`        // GC cycles completed in the measured interval
	HeapAllocBytes *uint64  `json:"heap_alloc_bytes,omitempty"` // bytes the process allocated on the heap in it

	Workers    int    `json:"workers"`
	Pinned     []int  `json:"pinned_cpus"`
	TaskSize   int    `json:"task_size"`
	BufferSize int    `json:"buffer_size"`
	BundleSize int    `json:"bundle_size,omitempty"`
	Ingest     string `json:"ingest,omitempty"`
	Tasks      uint64 `json:"tasks"`
	Windows    uint64 `json:"windows"`
	Rows       uint64 `json:"rows"`
	tupleCounts
	Validated bool   `json:"validated"`
	Output    string `json:"output,omitempty"`
	// Interrupted: SIGINT or SIGTERM (Signal) stopped the run early; the
	// figures are those of what ran, and Validated says whether every
	// window it emitted was right. Benchmark mode: WarmedUp false when the
	// run stopped before its warm-up ended, so nothing was measured.
	Interrupted bool   `json:"interrupted"`
	Signal      string `json:"signal,omitempty"`
	WarmedUp    *bool  `json:"warmed_up,omitempty"`

	Policy     string             `json:"policy,omitempty"`
	Processors *processorsSummary `json:"processors,omitempty"`
	RingNode   *int               `json:"ring_node,omitempty"`
	IngestCore *int               `json:"ingest_core,omitempty"`
}

func summarize(mode string, st engine.Stats, seconds float64, ef *engineFlags) ysbSummary {
	s := ysbSummary{
		Mode:    mode,
		Workers: ef.cpuWorkers(), Pinned: st.Pinned, TaskSize: ef.taskSize, BufferSize: ef.bufferSize,
		Tasks: st.Tasks, Windows: st.Windows, Rows: st.Rows,
	}
	s.setMeasured(ysb.Measured{
		Tuples: st.Tuples, Bytes: st.Bytes, Seconds: seconds,
		Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted,
		LatencyP50: st.LatencyP50, LatencyP99: st.LatencyP99,
	})
	return s
}

// tupleCounts classify a query's input tuples (they add up to its
// tuples), as every summary gives them.
type tupleCounts = ysb.TupleCounts

func countsOf(st engine.Stats) tupleCounts {
	return tupleCounts{Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
}

// markInterrupted records a signal that stopped the run.
func (s *ysbSummary) markInterrupted(sig *interrupt, interrupted bool) {
	if !interrupted {
		return
	}
	s.Interrupted = true
	if ie, ok := sig.err().(interruptedError); ok {
		s.Signal = signalName(ie.sig)
	}
}

// setMeasured sets the figures of the measured interval (rates 0 where it
// is empty: a run interrupted in its warm-up).
func (s *ysbSummary) setMeasured(m ysb.Measured) {
	s.Tuples, s.Bytes, s.Seconds = m.Tuples, m.Bytes, m.Seconds
	s.Filtered, s.Unmatched, s.Late, s.Counted = m.Filtered, m.Unmatched, m.Late, m.Counted
	s.TuplesPerS, s.MBPerS, s.GBPerS = 0, 0, 0
	if m.Seconds > 0 {
		s.TuplesPerS = float64(m.Tuples) / m.Seconds
		s.MBPerS = float64(m.Bytes) / m.Seconds / 1e6
		s.GBPerS = float64(m.Bytes) / m.Seconds / 1e9
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	s.LatencyP50ms, s.LatencyP99ms = ms(m.LatencyP50), ms(m.LatencyP99)
}

// printSummary writes the summary to w: one JSON object on a line, or
// lines for a person.
func printSummary(s ysbSummary, asJSON bool, w io.Writer) error {
	if asJSON {
		return writeJSONLine(w, s)
	}
	fmt.Fprintf(w, "ysb %s: %d tuples in %.3f s: %.2f M tuples/s, %.0f MB/s (%.2f GB/s)\n", s.Mode, s.Tuples, s.Seconds, s.TuplesPerS/1e6, s.MBPerS, s.GBPerS)
	if s.Interrupted {
		fmt.Fprintf(w, "  interrupted by %s: the figures are those of what ran before it\n", s.Signal)
	}
	switch {
	case s.WarmedUp != nil && !*s.WarmedUp:
		fmt.Fprintf(w, "  interrupted during the %.3f s warm-up: nothing measured; %d tuples in the whole run\n", *s.WarmupS, *s.TotalTuples)
	case s.WarmupS != nil:
		fmt.Fprintf(w, "  measured after a %.3f s warm-up; %d tuples in the whole run\n", *s.WarmupS, *s.TotalTuples)
	}
	fmt.Fprintf(w, "  task latency p50 %.3f ms, p99 %.3f ms\n", s.LatencyP50ms, s.LatencyP99ms)
	if s.GCCycles != nil {
		fmt.Fprintf(w, "  gc cycles %d, heap allocated %d B\n", *s.GCCycles, *s.HeapAllocBytes)
	}
	fmt.Fprintf(w, "  workers %d (%s), task %d B, buffer %d B, %d tasks\n", s.Workers, pinnedText(s.Pinned), s.TaskSize, s.BufferSize, s.Tasks)
	fmt.Fprintf(w, "  windows %d, rows %d; tuples counted %d, filtered %d, unmatched %d, late %d\n", s.Windows, s.Rows, s.Counted, s.Filtered, s.Unmatched, s.Late)
	fmt.Fprint(w, gpuLine(s.Processors))
	if s.Mode == "benchmark" {
		fmt.Fprintf(w, "  validated: %v\n", s.Validated)
	}
	return nil
}

// writeJSONLine writes v as one JSON object on a line of its own.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// pinnedText says where the workers run: "not pinned", or the CPU of each
// ("-" for one that is not pinned).
func pinnedText(cpus []int) string {
	var parts []string
	pinned := false
	for _, c := range cpus {
		if c < 0 {
			parts = append(parts, "-")
			continue
		}
		pinned = true
		parts = append(parts, strconv.Itoa(c))
	}
	if !pinned {
		return "not pinned"
	}
	return "pinned to CPUs " + strings.Join(parts, " ")
}
