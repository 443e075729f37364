package ysb

import (
	"time"

	"github.com/saber-hx/saber-hx/engine"
)

// Summary is the summary of a ysb run (saber-hx ysb's --json object, less
// the engine's scheduling, which the command line adds). In benchmark
// mode the tuple counts, bytes, seconds, rates, latencies and GC figures
// are those of the measured interval, after the warm-up; tasks, windows,
// rows and total_tuples are the whole run, whose every window was
// validated.
type Summary struct {
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
	// SerialFraction is the share of the query's worker time, over the
	// whole run, spent where no other worker could progress on it
	// (engine.Stats.SerialFraction): the Amdahl bound.
	SerialFraction float64 `json:"serial_fraction"`
	TupleCounts
	Validated bool   `json:"validated"`
	Output    string `json:"output,omitempty"`
	// Interrupted: SIGINT or SIGTERM (Signal) stopped the run early; the
	// figures are those of what ran, and Validated says whether every
	// window it emitted was right. Benchmark mode: WarmedUp false when the
	// run stopped before its warm-up ended, so nothing was measured.
	Interrupted bool   `json:"interrupted"`
	Signal      string `json:"signal,omitempty"`
	WarmedUp    *bool  `json:"warmed_up,omitempty"`
}

// NewSummary is the summary of a run in mode ("benchmark", "file",
// "kafka") whose engine counted st in seconds; workers (the CPU workers
// that ran), taskSize and bufferSize are its configuration's.
func NewSummary(mode string, st engine.Stats, seconds float64, workers, taskSize, bufferSize int) Summary {
	s := Summary{
		Mode:    mode,
		Workers: workers, Pinned: st.Pinned, TaskSize: taskSize, BufferSize: bufferSize,
		Tasks: st.Tasks, Windows: st.Windows, Rows: st.Rows, SerialFraction: st.SerialFraction(),
	}
	s.SetMeasured(Measured{
		Tuples: st.Tuples, Bytes: st.Bytes, Seconds: seconds,
		Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted,
		LatencyP50: st.LatencyP50, LatencyP99: st.LatencyP99,
	})
	return s
}

// SetMeasured sets the figures of the measured interval (rates 0 where
// it is empty: a run interrupted in its warm-up).
func (s *Summary) SetMeasured(m Measured) {
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

// Summary is the benchmark run's summary (NewSummary's, with the
// measured interval's figures, the warm-up, the bundle, who copied it,
// and whether it was validated); interrupted runs are marked so, a
// signal's name left to the caller.
func (r *BenchResult) Summary(workers, taskSize, bufferSize int, warmup time.Duration) Summary {
	s := NewSummary("benchmark", r.Stats, r.Seconds, workers, taskSize, bufferSize)
	s.SetMeasured(r.Measured)
	warmupS, total, gcs, alloc := warmup.Seconds(), r.Stats.Tuples, r.Measured.GCCycles, r.Measured.HeapAllocBytes
	s.WarmupS, s.TotalTuples, s.GCCycles, s.HeapAllocBytes = &warmupS, &total, &gcs, &alloc
	s.BundleSize = r.BundleTuples * TupleSize
	s.Ingest = string(r.Ingest)
	s.Validated = r.Validated
	if r.Interrupted {
		warmedUp := r.WarmedUp
		s.Interrupted, s.WarmedUp = true, &warmedUp
	}
	return s
}
