package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/pipeline"
	"github.com/saber-hx/saber-hx/scheduler"
	"github.com/saber-hx/saber-hx/sink"
	"github.com/saber-hx/saber-hx/ysb"
)

// ysbSynopsis is the usage of every form of the ysb command.
const ysbSynopsis = `  saber-hx ysb [flags]                  the benchmark: YSB generated in memory, every window validated
  saber-hx ysb --input F --campaigns C [--output O] [flags]
                                        file mode: YSB over an events file (- for standard input),
                                        results CSV to O (default: standard output)
  saber-hx ysb generate --tuples N --out F --campaigns C
                                        write an events file and its campaigns table (saber-hx ysb generate -h)
  saber-hx ysb --source kafka --brokers B --topic T --redis R [--group G] [--duration D] [--watermark-delay D]
        [--checkpoint-dir DIR [--checkpoint-interval D]] [--instance I --instances N]
                                        the original benchmark's pipeline: JSON events from Kafka, campaigns from
                                        Redis, each window's counts to Redis every second
` + setupSynopsis + produceSynopsis + checkSynopsis + securedSynopsis

// ysbModes are the flags each mode of ysb does not read (checkScope).
const ysbBenchmark, ysbFile, ysbKafka = 0, 1, 2

var ysbModes = []flagScope{
	ysbBenchmark: {"the generator benchmark", append([]string{"output", "campaigns", "input"}, ysbKafkaOnly...)},
	ysbFile: {"file mode", append([]string{"duration", "warmup", "bundle-size", "ingest", "num-campaigns", "ads-per-campaign",
		"progress-interval"}, ysbKafkaOnly...)},
	ysbKafka: {"--source kafka", []string{"output", "campaigns", "input", "warmup", "bundle-size", "ingest", "num-campaigns", "ads-per-campaign"}},
}

// ysbKafkaOnly are the flags of --source kafka alone.
var ysbKafkaOnly = []string{"brokers", "topic", "group", "fetchers", "kafka-*", "redis", "redis-*", "stop-at-end", "sink-retry-timeout",
	"watermark-delay", "checkpoint-dir", "checkpoint-interval", "instance", "instances"}

func runYSB(args []string, stdout, stderr io.Writer) (err error) {
	if sub := pipelineCommand(args); sub != nil {
		return sub(args[1:], stdout, stderr)
	}
	fs := newFlagSet("ysb", ysbSynopsis, stdout)
	var ef engineFlags
	var gf genFlags
	ef.register(fs)
	gf.register(fs)
	bundle := fs.Int("bundle-size", 16<<20, "bytes of pre-generated tuples replayed into the ring (rounded down to whole generator periods)")
	duration := fs.Duration("duration", 30*time.Second, "benchmark: measured ingestion time, after the warm-up; --source kafka: how long to read (without it, until SIGINT or SIGTERM)")
	warmup := fs.Duration("warmup", 3*time.Second, "benchmark: ingestion time before the measured interval (0: none); its windows are validated too")
	ingestFlag := fs.String("ingest", "auto", "benchmark: "+ingestUsage)
	asJSON := fs.Bool("json", false, "print the summary as one JSON object on the last line of stdout (of stderr in file mode when the "+
		"results go to stdout). Benchmark mode: tuples, bytes, "+
		"seconds, tuples_per_s, mb_per_s, gb_per_s, filtered/unmatched/late/counted_tuples, latency_p50_ms and latency_p99_ms "+
		"(task latency, dispatched to its windows emitted), gc_cycles and heap_alloc_bytes (GC cycles completed and bytes "+
		"allocated by the process) count only the measured interval after the warm-up; warmup_s; total_tuples, tasks, "+
		"windows, rows and processors are the whole run, every window of which is validated; processors: mode, kinds, queries, "+
		"tasks and bytes per kind and query, matrix_bytes_per_s, and with a GPU kind gpu, gpu_emulated, gpu_pipeline_depth, "+
		"gpu_cannot_run (queries without a GPU kernel) and gpu_fallback_tasks (tasks the GPU kind ran on its CPU fallback); "+
		"interrupted (and signal) when SIGINT or SIGTERM stopped the run, warmed_up false when that was during the warm-up")
	input := fs.String("input", "", "file mode: events file of 128-byte tuples (see README); - reads standard input as a stream")
	campaigns := fs.String("campaigns", "", "file mode: campaigns CSV (ad_id,campaign_id)")
	output := fs.String("output", "-", "file mode: results CSV, - for stdout. A regular file is written through a temporary file in its directory, "+
		"renamed over it only if the whole run succeeds (its mode kept); anything else (a FIFO, a device) is written through; never one of the inputs")
	sourceFlag := fs.String("source", "generator", "generator (the benchmark, or file mode with --input) or kafka (the original pipeline: --brokers, --topic, --redis)")
	var ka pipeline.YSBKafka // --source kafka's run, and its options
	var ko pipeline.Options
	brokers := fs.String("brokers", "", "--source kafka: Kafka brokers, host:port[,host:port...]")
	fs.StringVar(&ka.Topic, "topic", "ad-events", "--source kafka: the topic of JSON events")
	fs.StringVar(&ka.Group, "group", "", "--source kafka: consumer group whose offsets are committed once their windows are in Redis (\"\": none)")
	fs.IntVar(&ka.Fetchers, "fetchers", 1, "--source kafka without --group: consumer clients reading the partitions, each with a goroutine that decodes what it polls (the source's fetchers option); more make fetching and decoding grow with the cores")
	var kf, rf secFlags
	kf.register(fs, kafkaFlags, kafkaPasswordEnv)
	redisServer := rf.registerRedis(fs, "--source kafka: Redis server (campaigns in, windows out)")
	fs.BoolVar(&ko.StopAtEnd, "stop-at-end", false, "--source kafka: read each partition to the end it had at the start, then drain and exit (a bounded run over events already produced)")
	retryTimeout := addSinkRetryFlag(fs)
	msVar(fs, &ka.DelayMs, "watermark-delay", 0, "--source kafka: watermark delay: a window closes when the largest event time seen passes its end by this")
	fs.StringVar(&ko.CheckpointDir, "checkpoint-dir", "", "--source kafka: checkpoint the run into this directory (the partitions' offsets and the open windows, the last two kept) "+
		"and restore from its newest valid checkpoint on start, as run does (docs/operations.md): nothing lost or counted twice across a crash")
	fs.DurationVar(&ko.CheckpointInterval, "checkpoint-interval", 5*time.Second, "--source kafka: how often --checkpoint-dir is written")
	fs.IntVar(&ko.Instance, "instance", 0, "--source kafka: this process's number among --instances: it reads the partitions p with p mod instances = instance")
	fs.IntVar(&ko.Instances, "instances", 1, "--source kafka: the processes that share the topic's partitions statically (see --instance)")
	if err := parseSecured(fs, args); err != nil {
		return err
	}
	mode := ysbBenchmark
	switch *sourceFlag {
	case "generator":
		if *input != "" || *campaigns != "" {
			mode = ysbFile
		}
	case "kafka":
		mode = ysbKafka
	default:
		return usagef("--source %q: want generator or kafka", *sourceFlag)
	}
	if err := checkScope(fs, ysbModes, mode); err != nil {
		return err
	}
	if given(fs, "checkpoint-interval") && ko.CheckpointDir == "" {
		return usagef("--checkpoint-interval: needs --checkpoint-dir")
	}
	cfg, err := ef.config(fs, stderr)
	if err != nil {
		return err
	}
	if err := cfg.Validate(ysb.TupleSize); err != nil {
		return usageError{err}
	}
	if ko.Instances < 1 || ko.Instance < 0 || ko.Instance >= ko.Instances {
		return usagef("--instance %d --instances %d: want 0 <= instance < instances", ko.Instance, ko.Instances)
	}
	if mode == ysbBenchmark {
		if *bundle < ysb.TupleSize {
			return usagef("--bundle-size %d: need at least one %d-byte tuple", *bundle, ysb.TupleSize)
		}
		if *duration <= 0 {
			return usagef("--duration %v: must be positive", *duration)
		}
		if *warmup < 0 {
			return usagef("--warmup %v: must not be negative", *warmup)
		}
	}
	ingest, err := engine.ParseIngest(*ingestFlag)
	if err != nil {
		return usageError{err}
	}
	gc, err := gf.config()
	if err != nil {
		return err
	}
	if mode == ysbKafka {
		if ka.KafkaSecurity, err = kf.settings(fs, os.LookupEnv).Kafka(); err != nil {
			return err
		}
		if *redisServer != "" {
			if ka.RedisSecurity, err = rf.settings(fs, os.LookupEnv).Redis(); err != nil {
				return err
			}
		}
		ka.Brokers, ka.Redis, ko.Engine, ko.Stdout, ko.Log = splitList(*brokers), ka.RedisSecurity.Addr, cfg, stdout, stderr
		if given(fs, "duration") {
			ko.Duration = *duration // else until SIGINT or SIGTERM
		}
		return runYSBKafka(ka, *brokers, ko, *retryTimeout, given(fs, "duration"), &ef, *asJSON, stdout, stderr)
	}
	if mode == ysbFile {
		ef.outputs = append(ef.outputs, *output)
	}
	sig, end, err := ef.begin(&cfg, stderr)
	if err != nil {
		return err
	}
	defer closeInto(&err, end)
	if mode == ysbFile {
		return runYSBFile(sig, ysbFileArgs{input: *input, campaigns: *campaigns, output: *output}, cfg, &ef, *asJSON, stdout, stderr)
	}

	var progress func(engine.Stats, scheduler.Stats, time.Duration)
	if ef.progress > 0 {
		progress = pipeline.YSBProgress(stderr, *warmup)
	}
	res, runErr := ysb.RunBenchmark(sig.Context(), ysb.BenchConfig{
		Engine: cfg, Gen: gc, BundleSize: *bundle, Duration: *duration, Warmup: *warmup, Ingest: ingest,
		Progress: progress, ProgressInterval: ef.progress,
	})
	if runErr != nil && !(res.Interrupted && errors.Is(runErr, context.Canceled)) {
		return runErr
	}
	procs := pipeline.SummarizeProcessors(res.Scheduling, []string{"ysb"}, cfg, ef.GPUEmulate, res.Stats.GPUFallbackTasks)
	s := ysbSummary{Summary: res.Summary(ef.CPUWorkers(), ef.TaskSize, ef.BufferSize, *warmup), Policy: string(cfg.Policy),
		Processors: &procs, RingNode: &res.RingNode}
	if cfg.PinIngest {
		s.IngestCore = &cfg.IngestCore
	}
	if res.Interrupted {
		s.Signal = sig.Name()
	}
	if err := printSummary(s, *asJSON, stdout); err != nil {
		return err
	}
	if !res.Validated {
		return errors.New("benchmark not validated: an emitted window or the counters did not match the generator (see above)")
	}
	return sig.Err(true)
}

// ysbFileArgs are file mode's paths, as given.
type ysbFileArgs struct{ input, campaigns, output string }

// runYSBFile is file mode. The results CSV goes to --output, or to stdout
// with the summary (text or --json) on stderr, so that stdout holds the CSV
// alone.
func runYSBFile(sig *interrupt, a ysbFileArgs, cfg engine.Config, ef *engineFlags, asJSON bool, stdout, stderr io.Writer) error {
	if a.input == "" || a.campaigns == "" {
		return usagef("file mode needs both --input and --campaigns")
	}
	if a.output == "" {
		return usagef("--output \"\": name a results file, or - for stdout")
	}
	fc := ysb.FileConfig{Events: a.input, Campaigns: a.campaigns}
	summaryTo := stdout
	if sink.IsStdout(a.output) {
		summaryTo = stderr
	}
	if a.output != "-" {
		fc.Output = a.output
	}
	res, err := ysb.RunFiles(sig.Context(), cfg, fc)
	if err != nil {
		var ie *ysb.InputError
		if errors.As(err, &ie) {
			return usageError{err}
		}
		return err
	}
	if a.output == "-" && !res.Interrupted {
		if err := ysb.WriteResultsCSV(stdout, res.Rows); err != nil {
			return err
		}
	}
	s := summarize("file", res.Stats, res.Seconds, ef)
	s.Output = a.output
	if res.Interrupted {
		s.Interrupted, s.Signal = true, sig.Name()
		fmt.Fprintf(stderr, "saber-hx: interrupted: no results written (%s untouched)\n", a.output)
	}
	if err := printSummary(s, asJSON, summaryTo); err != nil {
		return err
	}
	return sig.Err(true)
}

func runGenerate(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ysb generate", "  saber-hx ysb generate --tuples N --out events.bin --campaigns campaigns.csv\n", stdout)
	var gf genFlags
	gf.register(fs)
	tuples := fs.Uint64("tuples", 0, "tuples to generate (required)")
	out := fs.String("out", "", "events file to write (required; a regular file is replaced only once complete, a FIFO or device is written through)")
	campaigns := fs.String("campaigns", "", "campaigns CSV to write (required; not the same file as --out)")
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
	sig := watchSignals(stderr)
	defer sig.Stop()
	if err := ysb.GenerateFiles(sig.Context(), *out, *campaigns, *tuples, gc); err != nil {
		if sig.Signal() != 0 {
			return sig.Err(false)
		}
		return err
	}
	// The message goes to stderr: --out may be /dev/stdout (a pipe into
	// "saber-hx ysb --input -").
	fmt.Fprintf(stderr, "wrote %d tuples to %s and %d ads of %d campaigns to %s\n", *tuples, *out, gc.Campaigns*gc.AdsPerCampaign, gc.Campaigns, *campaigns)
	return nil
}
