package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/scheduler"
	"github.com/saber-hx/saber-hx/ysb"
)

var errHelp = flag.ErrHelp

// newFlagSet returns a flag set that reports errors instead of exiting and
// prints its usage with every default.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args, turning flag errors into usage errors (exit 2).
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// genFlags are the data generator's knobs.
type genFlags struct {
	campaigns, adsPerCampaign int
}

func (f *genFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.campaigns, "num-campaigns", 100, "campaigns in the generated table")
	fs.IntVar(&f.adsPerCampaign, "ads-per-campaign", 10, "ads per campaign in the generated table")
}

func (f *genFlags) config() (ysb.GenConfig, error) {
	c := ysb.DefaultGenConfig()
	c.Campaigns, c.AdsPerCampaign = f.campaigns, f.adsPerCampaign
	if err := c.Validate(); err != nil {
		return c, usageError{err}
	}
	return c, nil
}

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
	Filtered   uint64 `json:"filtered_tuples"`
	Unmatched  uint64 `json:"unmatched_tuples"`
	Late       uint64 `json:"late_tuples"`
	Counted    uint64 `json:"counted_tuples"`
	Validated  bool   `json:"validated"`
	Output     string `json:"output,omitempty"`

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

func printSummary(s ysbSummary, asJSON bool, stdout io.Writer) error {
	if asJSON {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	fmt.Fprintf(stdout, "ysb %s: %d tuples in %.3f s: %.2f M tuples/s, %.0f MB/s (%.2f GB/s)\n", s.Mode, s.Tuples, s.Seconds, s.TuplesPerS/1e6, s.MBPerS, s.GBPerS)
	if s.WarmupS != nil {
		fmt.Fprintf(stdout, "  measured after a %.3f s warm-up; %d tuples in the whole run\n", *s.WarmupS, *s.TotalTuples)
	}
	fmt.Fprintf(stdout, "  task latency p50 %.3f ms, p99 %.3f ms\n", s.LatencyP50ms, s.LatencyP99ms)
	if s.GCCycles != nil {
		fmt.Fprintf(stdout, "  gc cycles %d, heap allocated %d B\n", *s.GCCycles, *s.HeapAllocBytes)
	}
	fmt.Fprintf(stdout, "  workers %d (pinned to %v), task %d B, buffer %d B, %d tasks\n", s.Workers, s.Pinned, s.TaskSize, s.BufferSize, s.Tasks)
	fmt.Fprintf(stdout, "  windows %d, rows %d; tuples counted %d, filtered %d, unmatched %d, late %d\n", s.Windows, s.Rows, s.Counted, s.Filtered, s.Unmatched, s.Late)
	fmt.Fprint(stdout, gpuLine(s.Processors))
	if s.Mode == "benchmark" {
		fmt.Fprintf(stdout, "  validated: %v\n", s.Validated)
	}
	return nil
}

func runYSB(args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlagSet("ysb", "saber-hx ysb [flags]", stderr)
	var ef engineFlags
	var gf genFlags
	ef.register(fs)
	gf.register(fs)
	bundle := fs.Int("bundle-size", 16<<20, "bytes of pre-generated tuples replayed into the ring (rounded down to whole generator periods)")
	duration := fs.Duration("duration", 30*time.Second, "benchmark: measured ingestion time, after the warm-up")
	warmup := fs.Duration("warmup", 3*time.Second, "benchmark: ingestion time before the measured interval (0: none); its windows are validated too")
	ingestFlag := fs.String("ingest", "auto", "benchmark: "+ingestUsage)
	asJSON := fs.Bool("json", false, "print the summary as one JSON object on the last line of stdout. Benchmark mode: tuples, bytes, "+
		"seconds, tuples_per_s, mb_per_s, gb_per_s, filtered/unmatched/late/counted_tuples, latency_p50_ms and latency_p99_ms "+
		"(task latency, dispatched to its windows emitted), gc_cycles and heap_alloc_bytes (GC cycles completed and bytes "+
		"allocated by the process) count only the measured interval after the warm-up; warmup_s; total_tuples, tasks, "+
		"windows, rows and processors are the whole run, every window of which is validated; processors: mode, kinds, queries, "+
		"tasks and bytes per kind and query, matrix_bytes_per_s, and with a GPU kind gpu, gpu_emulated, gpu_pipeline_depth, "+
		"gpu_cannot_run (queries without a GPU kernel) and gpu_fallback_tasks (tasks the GPU kind ran on its CPU fallback)")
	input := fs.String("input", "", "file mode: events file of 128-byte tuples (see README)")
	campaigns := fs.String("campaigns", "", "file mode: campaigns CSV (ad_id,campaign_id)")
	output := fs.String("output", "-", "file mode: results CSV, written only if the run succeeds; - for stdout")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := ef.config(stderr)
	if err != nil {
		return err
	}
	if err := cfg.Validate(ysb.TupleSize); err != nil {
		return usageError{err}
	}
	closeGPU, err := ef.openGPU(&cfg)
	if err != nil {
		return err
	}
	defer closeInto(&err, closeGPU)
	if *input != "" || *campaigns != "" {
		return runYSBFile(*input, *campaigns, *output, cfg, &ef, *asJSON, stdout)
	}
	if *bundle < ysb.TupleSize {
		return usagef("bundle size %d: need at least one %d-byte tuple", *bundle, ysb.TupleSize)
	}
	if *duration <= 0 {
		return usagef("duration %v: must be positive", *duration)
	}
	if *warmup < 0 {
		return usagef("warmup %v: must not be negative", *warmup)
	}
	ingest, err := engine.ParseIngest(*ingestFlag)
	if err != nil {
		return usageError{err}
	}
	gc, err := gf.config()
	if err != nil {
		return err
	}

	stopProfile, err := ef.startProfile()
	if err != nil {
		return err
	}
	defer stopProfile()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	var last engine.Stats
	var lastT time.Duration
	res, runErr := ysb.RunBenchmark(ctx, ysb.BenchConfig{
		Engine: cfg, Gen: gc, BundleSize: *bundle, Duration: *duration, Warmup: *warmup, Ingest: ingest,
		Progress: func(st engine.Stats, sched scheduler.Stats, el time.Duration) {
			dt := (el - lastT).Seconds()
			fmt.Fprintf(stderr, "ysb %5.0fs  %8.2f M tuples/s  %8.0f MB/s  windows %d  late %d%s\n", el.Seconds(),
				float64(st.Tuples-last.Tuples)/dt/1e6, float64(st.Bytes-last.Bytes)/dt/1e6, st.Windows, st.Late, split(sched))
			last, lastT = st, el
		},
	})
	s := summarize("benchmark", res.Stats, res.Seconds, &ef)
	s.setMeasured(res.Measured)
	warmupS, total, gcs, alloc := warmup.Seconds(), res.Stats.Tuples, res.Measured.GCCycles, res.Measured.HeapAllocBytes
	s.WarmupS, s.TotalTuples, s.GCCycles, s.HeapAllocBytes = &warmupS, &total, &gcs, &alloc
	s.BundleSize = res.BundleTuples * ysb.TupleSize
	s.Ingest = string(res.Ingest)
	s.Validated = res.Validated
	s.Policy = string(cfg.Policy)
	procs := summarizeProcessors(res.Scheduling, []string{"ysb"}, cfg, &ef, res.Stats.GPUFallbackTasks)
	s.Processors = &procs
	s.RingNode = &res.RingNode
	if cfg.PinIngest {
		s.IngestCore = &cfg.IngestCore
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	if err := printSummary(s, *asJSON, stdout); err != nil {
		return err
	}
	if !res.Validated {
		return errors.New("benchmark not validated")
	}
	return nil
}

func runYSBFile(input, campaigns, output string, cfg engine.Config, ef *engineFlags, asJSON bool, stdout io.Writer) error {
	if input == "" || campaigns == "" {
		return usagef("file mode needs both --input and --campaigns")
	}
	out := output
	if out == "-" {
		out = ""
	}
	res, rows, err := ysb.RunFiles(cfg, input, campaigns, out)
	if err != nil {
		var ie *ysb.InputError
		if errors.As(err, &ie) {
			return usageError{err}
		}
		return err
	}
	if output == "-" {
		if err := ysb.WriteResultsCSV(stdout, rows); err != nil {
			return err
		}
		if !asJSON {
			return nil // stdout holds the CSV; no human summary after it
		}
	}
	s := summarize("file", res.Stats, res.Seconds, ef)
	s.Output = output
	return printSummary(s, asJSON, stdout)
}

func runGenerate(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ysb generate", "saber-hx ysb generate --tuples N --out events.bin --campaigns campaigns.csv", stderr)
	var gf genFlags
	gf.register(fs)
	tuples := fs.Uint64("tuples", 0, "tuples to generate (required)")
	out := fs.String("out", "", "events file to write (required)")
	campaigns := fs.String("campaigns", "", "campaigns CSV to write (required)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *tuples == 0 || *out == "" || *campaigns == "" {
		return usagef("ysb generate needs --tuples (> 0), --out and --campaigns")
	}
	gc, err := gf.config()
	if err != nil {
		return err
	}
	if err := ysb.GenerateFiles(*out, *campaigns, *tuples, gc); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d tuples to %s and %d ads of %d campaigns to %s\n", *tuples, *out, gc.Campaigns*gc.AdsPerCampaign, gc.Campaigns, *campaigns)
	return nil
}
