package main

// results.json's format: the steps, runs, figures and ratios.

import (
	"encoding/json"
)

// Step is one step of run.sh.
type Step struct {
	Name    string  `json:"name"`
	Kind    string  `json:"kind"`
	Status  string  `json:"status"` // pass, fail, timeout, skipped
	RC      int     `json:"rc"`
	Seconds float64 `json:"seconds"`
	Log     string  `json:"log"` // in logs.tar.gz
	Command string  `json:"command"`
	// Go test binaries: the top-level tests that passed, failed, were
	// skipped; the names of those that failed.
	Tests *TestCounts `json:"tests,omitempty"`
	// The last lines of the log of a step that did not pass.
	Tail string `json:"tail,omitempty"`
}

type TestCounts struct {
	Pass   int      `json:"pass"`
	Fail   int      `json:"fail"`
	Skip   int      `json:"skip"`
	Failed []string `json:"failed"`
}

// Config is what a run measured, as runs.tsv gives it: the figures are
// the repetitions of one.
type Config struct {
	Group    string `json:"group"`
	Workload string `json:"workload"`
	Mode     string `json:"mode"`
	TaskSize int    `json:"task_size"`
	Policy   string `json:"policy"`
	Static   string `json:"static,omitempty"`
	Extra    string `json:"extra,omitempty"`
}

// Run is one saber-hx run of the measurements.
type Run struct {
	Step string `json:"step"`
	Config
	Rep    int    `json:"rep"`
	Status string `json:"status"`

	TuplesPerS float64 `json:"tuples_per_s"`
	// EventsPerS: Nexmark's unit (nexmark's summary), 0 for the others.
	EventsPerS float64 `json:"events_per_s,omitempty"`
	Validated  *bool   `json:"validated,omitempty"`
	Workers    int     `json:"workers,omitempty"`
	// SerialFraction: the summary's, the largest of its queries' where it
	// has one per query.
	SerialFraction float64 `json:"serial_fraction"`
	// Tasks per processor kind (cpu, gpu) over every query.
	TasksCPU         uint64  `json:"tasks_cpu"`
	TasksGPU         uint64  `json:"tasks_gpu"`
	GPUShare         float64 `json:"gpu_share"`
	GPUFallbackTasks uint64  `json:"gpu_fallback_tasks"`
	// The GPU part of the summary (gpu_*), as saber-hx wrote it.
	GPU map[string]any `json:"gpu,omitempty"`
	// The whole --json summary.
	Summary json.RawMessage `json:"summary,omitempty"`
}

// Figure is the repetitions of one configuration.
type Figure struct {
	Config
	Reps         int       `json:"reps"`
	TuplesPerS   []float64 `json:"tuples_per_s"`
	Median       float64   `json:"tuples_per_s_median"`
	Spread       float64   `json:"spread"` // (max - min) / median
	GPUShare     float64   `json:"gpu_share_median"`
	CopyInUsP50  float64   `json:"gpu_copy_in_us_p50"`
	KernelUsP50  float64   `json:"gpu_kernel_us_p50"`
	CopyOutUsP50 float64   `json:"gpu_copy_out_us_p50"`
	SubmitUsP50  float64   `json:"gpu_submit_us_p50"` // the host's, per task
	WaitUsP50    float64   `json:"gpu_wait_us_p50"`
	// EventsPerS: the median of Nexmark's events/s (0 for the others);
	// SerialFraction: the median of the runs' serial fractions.
	EventsPerS     float64 `json:"events_per_s_median,omitempty"`
	SerialFraction float64 `json:"serial_fraction_median"`
	AllValidated   bool    `json:"all_validated"` // ysb: every run validated; bench: not checked (true)
	FailedRuns     int     `json:"failed_runs"`
}

// Ratio compares hybrid with the best single processor and with the best
// static binding, per workload and task size.
type Ratio struct {
	Workload   string  `json:"workload"`
	TaskSize   int     `json:"task_size"`
	CPU        float64 `json:"cpu"`
	GPU        float64 `json:"gpu"`
	Hybrid     float64 `json:"hybrid"`
	BestSingle string  `json:"best_single"`
	// HybridOverBest: hybrid (hls) / max(cpu, gpu), medians.
	HybridOverBest float64 `json:"hybrid_over_best_single"`
	// StaticCPU, StaticGPU: hybrid mode with --policy static binding the
	// query to one kind; HLSOverBestStatic: hybrid (hls) / the better.
	StaticCPU         float64 `json:"static_cpu,omitempty"`
	StaticGPU         float64 `json:"static_gpu,omitempty"`
	HLSOverBestStatic float64 `json:"hls_over_best_static,omitempty"`
}

type Bandwidth struct {
	KiB    int     `json:"kib"`
	H2DGBs float64 `json:"h2d_gb_s"`
	D2HGBs float64 `json:"d2h_gb_s"`
}

// Scaling is one point of the CPU scaling curve (run.sh's scaling group):
// a workload's throughput at a number of workers, cpu mode.
type Scaling struct {
	Workload string  `json:"workload"`
	Workers  int     `json:"workers"`
	Unit     string  `json:"unit"` // "tuples/s", or Nexmark's "events/s"
	PerS     float64 `json:"per_s"`
	// Speedup: PerS over the workload's at 1 worker (0: none passed).
	Speedup        float64 `json:"speedup"`
	SerialFraction float64 `json:"serial_fraction"`
	Failed         bool    `json:"failed,omitempty"`
}

// Pipeline is the Kafka YSB pipeline (run.sh's pipeline group) at a
// number of fetchers against the baseline build over the same backlog.
type Pipeline struct {
	Fetchers int    `json:"fetchers"`
	Base     string `json:"base"` // the baseline's commit, as run.sh names it
	// PerS and BasePerS: the medians of the rounds, events/s.
	PerS     float64 `json:"per_s"`
	BasePerS float64 `json:"base_per_s"`
	// OverBase: the median over the rounds of this build's events/s over
	// the baseline's of the same round, and their smallest and largest.
	OverBase    float64 `json:"over_base"`
	OverBaseMin float64 `json:"over_base_min"`
	OverBaseMax float64 `json:"over_base_max"`
	Rounds      int     `json:"rounds"` // the rounds where both runs passed
}

// Results is results.json.
type Results struct {
	Schema int `json:"schema"`
	// Passed: every step that ran passed (none failed or timed out) and
	// every test step ran; a measurement skipped for lack of time is
	// listed in Skipped only.
	Passed    bool              `json:"passed"`
	Failed    []string          `json:"failed"` // the steps that failed or timed out
	Skipped   []string          `json:"skipped"`
	Meta      map[string]string `json:"meta"`
	GPU       map[string]string `json:"gpu"` // nvidia-smi's query fields
	Steps     []Step            `json:"steps"`
	Bandwidth []Bandwidth       `json:"bandwidth"`
	Figures   []Figure          `json:"figures"`
	Ratios    []Ratio           `json:"ratios"`
	Scaling   []Scaling         `json:"scaling"`
	Pipeline  []Pipeline        `json:"pipeline"`
	Runs      []Run             `json:"runs"`
}
