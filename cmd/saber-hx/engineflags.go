package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/saber-hx/saber-hx/cpu"
	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/gpu"
	"github.com/saber-hx/saber-hx/internal/profile"
	"github.com/saber-hx/saber-hx/metrics"
	"github.com/saber-hx/saber-hx/pipeline"
	"github.com/saber-hx/saber-hx/scheduler"
)

// engineFlags are the tuning knobs shared by the commands that run
// queries: the engine's settings (pipeline.EngineSettings), --pin, the
// profiles and --metrics-addr.
type engineFlags struct {
	pipeline.EngineSettings
	pin                    pinFlag
	cpuProfile, memProfile string
	// outputs are the files the command writes (--output, file sinks):
	// begin refuses a profile in one of them.
	outputs  []string
	progress time.Duration // --progress-interval

	metricsAddr *string         // --metrics-addr
	metrics     *metrics.Server // serving it while the command runs (begin); nil: off
}

func (f *engineFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.Workers, "workers", engine.DefaultWorkers("cpu"), "CPU worker goroutines, each locked to its own OS thread when pinned (the default is the number of CPUs this process may use, "+
		"its affinity mask's within GOMAXPROCS (a container's CPU quota), "+
		"one fewer in hybrid mode, where the GPU worker needs a CPU of its own; "+
		"at most "+strconv.Itoa(pipeline.MaxWorkers())+")")
	f.pin = pinAuto
	fs.Var(&f.pin, "pin", "pin each worker to its own core (a warning, not a failure, where the OS refuses): true, false or auto "+
		"(pinned when --workers is at most half the CPUs: with more, locked threads hand their CPU over at waits "+
		"and pinned workers ran slower; docs/performance.md)")
	fs.IntVar(&f.TaskSize, "task-size", engine.DefaultTaskSize, "bytes per task: a multiple of the tuple size, independent of the window")
	fs.IntVar(&f.BufferSize, "buffer-size", 0, "bytes of each input stream's ring buffer: a power of two, at least two tasks, and a multiple of "+
		"the page size ("+strconv.Itoa(os.Getpagesize())+" B here: the ring is mapped twice back to back, so that a task is one slice across the wrap); "+
		"0: the least power of two of at least "+strconv.Itoa(engine.DefaultBufferSize>>20)+" MiB holding two tasks per worker, "+
		"in hybrid mode 32 tasks per worker up to 512 MiB (docs/performance.md)")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	fs.StringVar(&f.memProfile, "memprofile", "", "write a profile of the heap allocations of the whole process (set-up included) to this file when the run ends (go tool pprof -sample_index=alloc_space)")
	fs.StringVar(&f.Mode, "mode", "cpu", "processors: cpu (CPU workers), gpu (the GPU alone: every query needs a GPU kernel) or hybrid "+
		"(CPU workers and the GPU, sharing tasks under --policy; a query without a GPU kernel runs on the CPU only); "+
		"gpu and hybrid need a build with CUDA and a GPU, or --gpu-emulate")
	fs.IntVar(&f.GPUDepth, "gpu-pipeline-depth", engine.DefaultGPUDepth, gpuDepthUsage)
	fs.BoolVar(&f.GPUEmulate, "gpu-emulate", false, gpuEmulateUsage)
	fs.StringVar(&f.Policy, "policy", string(scheduler.HLS), "scheduling policy: fcfs, static or hls (docs/scheduling.md)")
	fs.StringVar(&f.Static, "static", "", "--policy static: QUERY=KIND,... binding each query to a processor kind (cpu, gpu)")
	fs.IntVar(&f.SwitchThreshold, "switch-threshold", scheduler.DefaultSwitchThreshold, "--mode hybrid --policy hls: every processor kind runs at least one in this many tasks of each query (>= 1)")
	fs.DurationVar(&f.MonitorInterval, "monitor-interval", scheduler.DefaultMonitorInterval, "--mode hybrid --policy hls: how often the throughput matrix is refreshed (> 0)")
	fs.StringVar(&f.Placement, "placement", string(cpu.Compact), "pinned workers' placement over NUMA nodes (not with --cores): compact (fill a node first) or spread (round-robin over nodes); SMT siblings last")
	fs.StringVar(&f.Cores, "cores", "", "CPU list for the workers, in order (e.g. 0-3,8): pins them (not with --pin false), worker i to the list's CPU i mod its length; one worker per CPU listed without --workers; not with --placement")
	fs.IntVar(&f.IngestCore, "ingest-core", -1, "pin the ingestion (producer) goroutine to this CPU; -1: not pinned")
	fs.StringVar(&f.Kernel, "kernel", "auto", "CPU kernels: auto (a fused, shape-specialised loop where the query fits, else vectorised) or vector (always the vectorised kernels)")
	f.metricsAddr = addMetricsFlag(fs)
	fs.DurationVar(&f.progress, "progress-interval", time.Second, "how often a progress line goes to stderr while the run goes on (0: none)")
	fs.StringVar(&f.MemPolicy, "mem-policy", "preferred", "rings' memory on the pinned workers' first NUMA node: default (first touch), preferred or bind")
}

// config checks the flags and returns the engine's configuration
// (pipeline.EngineSettings); every bad value is a usage error naming the
// flag and the valid values. fs is the parsed flag set: a --workers not
// given is the mode's default (engine.DefaultWorkers).
func (f *engineFlags) config(fs *flag.FlagSet, stderr io.Writer) (engine.Config, error) {
	f.WorkersSet, f.Pin = given(fs, "workers"), string(f.pin)
	f.Warn = func(msg string) { fmt.Fprintf(stderr, "saber-hx: warning: %s\n", msg) }
	f.Name, f.Given = func(setting string) string { return "--" + setting }, func(setting string) bool { return given(fs, setting) }
	if f.progress < 0 || f.progress > 0 && f.progress < 10*time.Millisecond {
		return engine.Config{}, usagef("--progress-interval %v: must be 0 (no progress lines) or at least 10ms", f.progress)
	}
	c, err := f.Config()                              // refusing the flags that would do nothing
	f.Workers, f.BufferSize = c.Workers, c.BufferSize // the summaries print them
	return c, err
}

// begin does what every command that runs queries does first: it serves
// --metrics-addr (listening now, so that a bad address fails before any
// engine starts; every engine the command starts is added through
// cfg.Started; run opens its outputs and sources before this), opens the GPU of --mode into cfg, starts the CPU profile
// and watches SIGINT and SIGTERM. end undoes them in reverse order (defer
// closeInto(&err, end)), the metrics last, so that a scrape after ysb's
// or bench's summary still reads the final counters (run's job takes its
// own out as it closes): its error is the profiles' and the GPU's.
func (f *engineFlags) begin(cfg *engine.Config, stderr io.Writer) (sig *interrupt, end func() error, err error) {
	addr := ""
	if f.metricsAddr != nil {
		addr = *f.metricsAddr
	}
	if f.metrics, err = serveMetrics(addr, nil, stderr); err != nil {
		return nil, nil, err
	}
	stopMetrics := func() {}
	if srv := f.metrics; srv != nil {
		cfg.Started = func(e *engine.Engine) { srv.Registry().AddEngine(e) }
		stopMetrics = func() {
			if err := srv.Close(); err != nil {
				fmt.Fprintf(stderr, "saber-hx: warning: metrics: %v\n", err)
			}
		}
	}
	// The device of --mode gpu|hybrid (GPU 0, or the emulator with
	// --gpu-emulate), opened here and only here: the engine never closes
	// it, end does, after the engine's CloseAll (or a failed start).
	dev, err := gpu.OpenForMode(f.Mode, f.GPUEmulate)
	if err != nil {
		stopMetrics()
		if errors.Is(err, gpu.ErrNotBuilt) {
			return nil, nil, usagef("--mode %s: %v", f.Mode, err)
		}
		return nil, nil, fmt.Errorf("--mode %s: %w", f.Mode, err)
	}
	closeGPU := func() error { return nil }
	if dev != nil {
		cfg.GPU, closeGPU = dev, dev.Close
	}
	stopProfile, err := profile.Start(f.cpuProfile, f.memProfile, f.outputs...)
	if _, ok := errors.AsType[*profile.CreateError](err); ok {
		err = usageError{err}
	}
	if err != nil {
		stopMetrics()
		return nil, nil, errors.Join(err, closeGPU())
	}
	sig = watchSignals(stderr)
	return sig, func() error {
		sig.Stop()
		err := errors.Join(stopProfile(), closeGPU())
		stopMetrics()
		return err
	}, nil
}

// startProgress prints pipeline.ProgressLine every --progress-interval on
// w until stop (never with 0).
func (f *engineFlags) startProgress(w io.Writer, label string, eng *engine.Engine, start time.Time) (stop func()) {
	return pipeline.WatchProgress(eng, start, f.progress, func(el time.Duration, streams []pipeline.StreamProgress) {
		fmt.Fprintln(w, pipeline.ProgressLine(label, el, streams, eng.Scheduling()))
	})
}

// pinFlag is --pin: true, false or auto. It is a boolean flag (a bare
// --pin means true) with a third value.
type pinFlag string

const (
	pinTrue  pinFlag = "true"
	pinFalse pinFlag = "false"
	pinAuto  pinFlag = "auto"
)

func (p *pinFlag) String() string { return string(*p) }

func (p *pinFlag) IsBoolFlag() bool { return true }

func (p *pinFlag) Set(v string) error {
	switch v {
	case "true", "1", "t", "T", "TRUE", "True":
		*p = pinTrue
	case "false", "0", "f", "F", "FALSE", "False":
		*p = pinFalse
	case "auto":
		*p = pinAuto
	default:
		return fmt.Errorf("want true, false or auto")
	}
	return nil
}

// ingestUsage is --ingest's help for ysb and bench: who copies a replayed
// bundle into the engine (engine.Ingest).
const ingestUsage = "who copies the replayed bundle into the engine: producer (one goroutine copies every task into the ring), " +
	"workers (each worker copies the task it runs, just before running it, into a task-sized buffer of its own that stays in its cache), " +
	"shared (the producer copies while the workers have tasks queued, and leaves tasks to them when they would wait), " +
	"auto (shared in gpu mode and for one worker with a CPU to spare, else workers; see docs/performance.md)"
