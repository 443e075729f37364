package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/pipeline"
	"github.com/saber-hx/saber-hx/workloads"
)

// The runtime of bench (its parts, inputs, run and validation) is package
// workloads' (workloads.Bench); here are its flags, its progress lines and
// its summary.

func runBench(args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlagSet("bench", "  saber-hx bench WORKLOAD[,WORKLOAD...] [flags]   (saber-hx bench --list names them)\n", stdout)
	var ef engineFlags
	var f benchFlags
	ef.register(fs)
	f.register(fs)
	names, err := parseBench(fs, &f, args)
	if err != nil {
		return err
	}
	if f.list {
		for _, w := range workloads.All() {
			fmt.Fprintf(stdout, "%-8s %s\n", w.Name, w.Description)
		}
		return nil
	}
	ingestMode, err := engine.ParseIngest(f.ingest)
	if err != nil {
		return usageError{err}
	}
	cfg, err := ef.config(fs, stderr)
	if err != nil {
		return err
	}
	ingestMode = ingestMode.Resolve(cfg)
	b, err := workloads.NewBench(workloads.BenchConfig{
		Workloads: strings.Split(names, ","), Params: f.params, Window: f.window, Engine: cfg, Ingest: ingestMode, BundleSize: f.bundleSize,
		Warmup: f.warmup, Duration: f.duration, Validate: f.validate, ValidateTuples: f.validateTuples, Given: f.given, Log: stderr,
		Progress: func(e *engine.Engine, start time.Time) func() { return ef.startProgress(stderr, "bench", e, start) },
	})
	if err != nil {
		return err
	}
	sig, end, err := ef.begin(&cfg, stderr)
	if err != nil {
		return err
	}
	defer closeInto(&err, end)
	res, err := b.Run(sig.Context(), cfg)
	if err != nil {
		return err
	}
	sum := benchSummary{Summary: res.Summary(names, cfg, ef.CPUWorkers(), ingestMode, f.warmup.Seconds()),
		Processors:            pipeline.SummarizeProcessors(b.Engine().Scheduling(), b.Engine().StreamNames(), cfg, ef.GPUEmulate, res.GPUFallbackTasks()),
		ValidationInterrupted: res.ValidationInterrupted}
	if sig.Signal() != 0 {
		sum.Interrupted = true
		sum.Signal = sig.Name()
	}
	if err := sum.print(stdout, f.asJSON, f.validate); err != nil {
		return err
	}
	for _, qs := range sum.Queries {
		if qs.Mismatch != "" {
			return fmt.Errorf("%s: output differs from the reference evaluator: %s", qs.Name, qs.Mismatch)
		}
	}
	return sig.Err(true)
}
