package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/pipeline"
	"github.com/saber-hx/saber-hx/ysb"
)

// ysbSummary is the summary of a ysb run (--json: one object): ysb's,
// and the engine's scheduling and placement (the whole run).
type ysbSummary struct {
	ysb.Summary
	Policy     string               `json:"policy,omitempty"`
	Processors *pipeline.Processors `json:"processors,omitempty"`
	RingNode   *int                 `json:"ring_node,omitempty"`
	IngestCore *int                 `json:"ingest_core,omitempty"`
}

// summarize is ysb.NewSummary for the engine of ef.
func summarize(mode string, st engine.Stats, seconds float64, ef *engineFlags) ysbSummary {
	return ysbSummary{Summary: ysb.NewSummary(mode, st, seconds, ef.CPUWorkers(), ef.TaskSize, ef.BufferSize)}
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
	fmt.Fprintf(w, "  windows %d, rows %d; tuples counted %d, filtered %d, unmatched %d, late %d; serial fraction %.3f\n", s.Windows, s.Rows, s.Counted, s.Filtered, s.Unmatched, s.Late, s.SerialFraction)
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
