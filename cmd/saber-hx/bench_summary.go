package main

// bench's summary: per query and in all, as lines or one JSON object.

import (
	"fmt"
	"io"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/workloads"
)

type benchQuerySummary struct {
	Name       string  `json:"name"`
	Tuples     uint64  `json:"tuples"`
	TuplesPerS float64 `json:"tuples_per_s"`
	MBPerS     float64 `json:"mb_per_s"`
	Windows    uint64  `json:"windows"`
	Rows       uint64  `json:"rows"`
	Filtered   uint64  `json:"filtered_tuples"`
	Late       uint64  `json:"late_tuples"`
	Counted    uint64  `json:"counted_tuples"`
	Ingest     string  `json:"ingest"`
	// SerialFraction is the share of the query's worker time spent where
	// no other worker can progress on it (engine.Stats.SerialFraction).
	SerialFraction float64 `json:"serial_fraction"`
	// With a GPU kind: the query's tasks that the GPU ran on its CPU
	// fallback.
	GPUFallback *uint64 `json:"gpu_fallback_tasks,omitempty"`
	Validated   bool    `json:"validated"`
	Mismatch    string  `json:"mismatch,omitempty"`
}

type benchSummary struct {
	Workloads  string  `json:"workloads"`
	Tuples     uint64  `json:"tuples"`
	Seconds    float64 `json:"seconds"`
	TuplesPerS float64 `json:"tuples_per_s"`
	Windows    uint64  `json:"windows"`
	Rows       uint64  `json:"rows"`
	Validated  bool    `json:"validated"`
	Workers    int     `json:"workers"`
	TaskSize   int     `json:"task_size"`
	BufferSize int     `json:"buffer_size"`
	// Ingest: who copied the replayed bundles (--ingest, resolved); each
	// query's own ingest says where its input came from.
	Ingest string `json:"ingest"`
	// GCCycles and HeapAllocBytes are the garbage collector's cycles and
	// the bytes allocated on the heap from the start of the ingestion to
	// the engine's close (with --validate they include the recorded
	// output).
	GCCycles       uint64 `json:"gc_cycles"`
	HeapAllocBytes uint64 `json:"heap_alloc_bytes"`
	// WarmupS and TotalTuples, with --warmup: the figures above are of
	// the measured interval after the warm-up; TotalTuples counts the
	// whole run's input.
	WarmupS     *float64            `json:"warmup_s,omitempty"`
	TotalTuples *uint64             `json:"total_tuples,omitempty"`
	Queries     []benchQuerySummary `json:"queries"`
	Policy      string              `json:"policy"`
	Processors  processorsSummary   `json:"processors"`
	// Interrupted: SIGINT or SIGTERM (Signal) stopped the ingestion early;
	// the figures are those of what ran. ValidationInterrupted: a signal
	// stopped --validate before every query was checked.
	Interrupted           bool   `json:"interrupted"`
	Signal                string `json:"signal,omitempty"`
	ValidationInterrupted bool   `json:"validation_interrupted,omitempty"`
}

// summarizeBench makes the summary of what ran: the measured interval's
// figures of res, the engine's scheduling and the configuration.
func summarizeBench(names string, res *workloads.BenchResult, eng *engine.Engine, ef *engineFlags, cfg engine.Config, ingestMode engine.Ingest) benchSummary {
	var fallback uint64
	for _, p := range res.Parts {
		fallback += p.Measured.GPUFallbackTasks
	}
	seconds := res.Seconds
	sum := benchSummary{Workloads: names, Seconds: seconds, Workers: ef.cpuWorkers(), TaskSize: ef.taskSize, BufferSize: ef.bufferSize, Ingest: string(ingestMode),
		GCCycles: res.GCCycles, HeapAllocBytes: res.HeapAllocBytes, Validated: res.Validated, ValidationInterrupted: res.ValidationInterrupted,
		Policy: string(cfg.Policy), Processors: summarizeProcessors(eng.Scheduling(), eng.StreamNames(), cfg, ef, fallback)}
	for _, p := range res.Parts {
		st := p.Measured
		qs := benchQuerySummary{
			Name: p.Name, Tuples: st.Tuples, TuplesPerS: float64(st.Tuples) / seconds,
			MBPerS: float64(st.Bytes) / seconds / 1e6, Windows: st.Windows, Rows: st.Rows,
			Filtered: st.Filtered, Late: st.Late, Counted: st.Counted, Ingest: string(p.Input),
			SerialFraction: st.SerialFraction(), Validated: p.Validated, Mismatch: p.Mismatch,
		}
		if cfg.GPU != nil {
			qs.GPUFallback = &st.GPUFallbackTasks
		}
		if p.Input != workloads.InputChained { // throughput counts the tuples generated, once
			sum.Tuples += st.Tuples
		}
		sum.Windows += st.Windows
		sum.Rows += st.Rows
		sum.Queries = append(sum.Queries, qs)
	}
	sum.TuplesPerS = float64(sum.Tuples) / seconds
	return sum
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
