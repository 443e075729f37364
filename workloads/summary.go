package workloads

import "github.com/saber-hx/saber-hx/engine"

// QuerySummary is a part's figures in a bench summary (saber-hx bench's
// --json "queries"): those of the measured interval.
type QuerySummary struct {
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

// Summary is a bench run's summary (saber-hx bench's --json object, less
// the engine's scheduling and the interruption, which the command line
// adds): in all and per part, the measured interval's figures.
type Summary struct {
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
	WarmupS     *float64       `json:"warmup_s,omitempty"`
	TotalTuples *uint64        `json:"total_tuples,omitempty"`
	Queries     []QuerySummary `json:"queries"`
	Policy      string         `json:"policy"`
}

// Summary is the summary of r, a run of the workloads names by an engine
// of cfg (its CPU workers that ran, workers), its bundles copied as
// ingest says; warmup is the warm-up asked for.
func (r *BenchResult) Summary(names string, cfg engine.Config, workers int, ingest engine.Ingest, warmupS float64) Summary {
	seconds := r.Seconds
	sum := Summary{Workloads: names, Seconds: seconds, Workers: workers, TaskSize: cfg.TaskSize, BufferSize: cfg.BufferSize, Ingest: string(ingest),
		GCCycles: r.GCCycles, HeapAllocBytes: r.HeapAllocBytes, Validated: r.Validated, Policy: string(cfg.Policy)}
	for _, p := range r.Parts {
		st := p.Measured
		qs := QuerySummary{
			Name: p.Name, Tuples: st.Tuples, TuplesPerS: float64(st.Tuples) / seconds,
			MBPerS: float64(st.Bytes) / seconds / 1e6, Windows: st.Windows, Rows: st.Rows,
			Filtered: st.Filtered, Late: st.Late, Counted: st.Counted, Ingest: string(p.Input),
			SerialFraction: st.SerialFraction(), Validated: p.Validated, Mismatch: p.Mismatch,
		}
		if cfg.GPU != nil {
			qs.GPUFallback = &st.GPUFallbackTasks
		}
		if p.Input != InputChained { // throughput counts the tuples generated, once
			sum.Tuples += st.Tuples
		}
		sum.Windows += st.Windows
		sum.Rows += st.Rows
		sum.Queries = append(sum.Queries, qs)
	}
	sum.TuplesPerS = float64(sum.Tuples) / seconds
	if r.WarmedUp {
		sum.WarmupS, sum.TotalTuples = &warmupS, &r.TotalTuples
	}
	return sum
}

// GPUFallbackTasks is the tasks the GPU kind ran on its CPU fallback, in
// the measured interval, over every part.
func (r *BenchResult) GPUFallbackTasks() uint64 {
	var n uint64
	for _, p := range r.Parts {
		n += p.Measured.GPUFallbackTasks
	}
	return n
}
