package main

// bench's summary: per query and in all, as lines or one JSON object.

import (
	"fmt"
	"io"

	"github.com/saber-hx/saber-hx/pipeline"
	"github.com/saber-hx/saber-hx/workloads"
)

// benchSummary is bench's summary (--json: one object): workloads', and
// the engine's scheduling and the interruption.
type benchSummary struct {
	workloads.Summary
	Processors pipeline.Processors `json:"processors"`
	// Interrupted: SIGINT or SIGTERM (Signal) stopped the ingestion early;
	// the figures are those of what ran. ValidationInterrupted: a signal
	// stopped --validate before every query was checked.
	Interrupted           bool   `json:"interrupted"`
	Signal                string `json:"signal,omitempty"`
	ValidationInterrupted bool   `json:"validation_interrupted,omitempty"`
}

// print writes the summary to stdout: one JSON object on a line, or lines
// for a person.
func (sum *benchSummary) print(stdout io.Writer, asJSON, validate bool) error {
	if asJSON {
		return writeJSONLine(stdout, sum)
	}
	fmt.Fprintf(stdout, "bench %s: %d tuples in %.3f s: %.2f M tuples/s (%d workers, task %d B, ingest %s; %d GC cycles, %.1f MB allocated)\n", sum.Workloads, sum.Tuples, sum.Seconds, sum.TuplesPerS/1e6, sum.Workers, sum.TaskSize, sum.Ingest,
		sum.GCCycles, float64(sum.HeapAllocBytes)/1e6)
	if sum.WarmupS != nil {
		fmt.Fprintf(stdout, "  measured after a %.3f s warm-up; %d tuples in the whole run\n", *sum.WarmupS, *sum.TotalTuples)
	}
	if sum.Interrupted {
		fmt.Fprintf(stdout, "  interrupted by %s: the figures are those of what ran before it\n", sum.Signal)
	}
	if sum.ValidationInterrupted {
		fmt.Fprintf(stdout, "  validation interrupted: the queries without \"validated true\" were not checked\n")
	}
	fmt.Fprint(stdout, gpuLine(&sum.Processors))
	for _, qs := range sum.Queries {
		fmt.Fprintf(stdout, "  %-8s %.2f M tuples/s, %.0f MB/s, windows %d, rows %d, filtered %d, late %d, ingest %s, serial %.3f", qs.Name, qs.TuplesPerS/1e6, qs.MBPerS, qs.Windows, qs.Rows, qs.Filtered, qs.Late, qs.Ingest, qs.SerialFraction)
		if validate {
			fmt.Fprintf(stdout, ", validated %v", qs.Validated)
		}
		fmt.Fprintln(stdout)
	}
	return nil
}
