package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/pipeline"
	"github.com/saber-hx/saber-hx/sql"
)

const runSynopsis = `  saber-hx run FILE.sql [flags]         run the queries of a SQL file (docs: sql/doc.go, README "Your own query")
  saber-hx run -e 'SQL' [flags]          the same, the SQL given on the command line
`

const explainSynopsis = `  saber-hx explain FILE.sql | -e 'SQL'  print each query's plan: tuple layout, window, kernel, GPU support
`

// sqlText reads the SQL of "run" and "explain": the file named by the one
// argument, or -e's text.
func sqlText(fs *flag.FlagSet, expr string) (name, text string, err error) {
	switch {
	case expr != "" && fs.NArg() > 0:
		return "", "", usagef("%s: give a SQL file or -e, not both", fs.Name())
	case expr != "":
		return "-e", expr, nil
	case fs.NArg() == 0:
		return "", "", usagef("%s: name a SQL file, or give the SQL with -e", fs.Name())
	case fs.NArg() > 1:
		return "", "", usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(1))
	}
	name = fs.Arg(0)
	b, err := os.ReadFile(name)
	if err != nil {
		return "", "", usageError{err}
	}
	return name, string(b), nil
}

// compileSQL compiles text; an error in it is a usage error showing the
// line with a caret.
func compileSQL(name, text string) (*pipeline.Program, error) {
	prog, err := pipeline.Compile(name, text)
	var se *sql.Error
	if errors.As(err, &se) {
		return nil, usagef("%s: %s", name, se.Caret(text))
	}
	return prog, err
}

// parseSQLCommand parses the flags of run or explain, which may come before
// or after the file.
func parseSQLCommand(fs *flag.FlagSet, args []string) error {
	var file []string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		file, args = args[:1], args[1:]
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if rest := fs.Args(); file == nil && len(rest) > 0 { // flags after the file too
		file = rest[:1]
		if err := parseFlags(fs, rest[1:]); err != nil {
			return err
		}
	}
	if file != nil {
		return fs.Parse(append(file, fs.Args()...))
	}
	return nil
}

func runExplain(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("explain", explainSynopsis, stdout)
	expr := fs.String("e", "", "the SQL text itself, instead of a file")
	kernel := fs.String("kernel", "auto", "the CPU kernels to explain: auto or vector (as run's --kernel)")
	if err := parseSQLCommand(fs, args); err != nil {
		return err
	}
	name, text, err := sqlText(fs, *expr)
	if err != nil {
		return err
	}
	if *kernel != "auto" && *kernel != "vector" {
		return usagef("--kernel %q: valid: auto, vector", *kernel)
	}
	prog, err := compileSQL(name, text)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, prog.SQL().Explain())
	fmt.Fprintln(stdout, "plans:")
	for _, q := range prog.SQL().Queries {
		fmt.Fprintf(stdout, "  %s: %s\n", q.Name, pipeline.PlanLine(q.Spec, *kernel == "vector"))
	}
	return nil
}

// runSummary is run's summary (--json: one object): the program's
// (pipeline.Summary) and the engine's configuration.
type runSummary struct {
	*pipeline.Summary
	Workers    int                 `json:"workers"`
	TaskSize   int                 `json:"task_size"`
	Policy     string              `json:"policy"`
	Processors pipeline.Processors `json:"processors"`
	Signal     string              `json:"signal,omitempty"`
}

func runRun(args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlagSet("run", runSynopsis, stdout)
	var ef engineFlags
	ef.register(fs)
	retryTimeout := addSinkRetryFlag(fs)
	expr := fs.String("e", "", "the SQL text itself, instead of a file")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object on the last line (of stderr when a query's rows go to stdout): "+
		"seconds, tuples, per query its tuples, windows, rows, filtered/unmatched/late/counted_tuples, per source its tuples and "+
		"malformed_records, workers, task_size, policy, processors, interrupted, and with --checkpoint-dir checkpoints (dir, taken, epoch, bytes, max_ms, "+
		"restored_epoch, recovery_ms)")
	output := fs.String("output", "-", "where a plain SELECT's rows go (CSV with a header): - for stdout, or a file, written as ysb's --output")
	duration := fs.Duration("duration", pipeline.DefaultGeneratorDuration, "how long generator sources produce (they are unbounded), and kafka sources read where given "+
		"(without it they read until SIGINT or SIGTERM, then drain); file and stdin sources to their end, or for --duration where given")
	stopAtEnd := fs.Bool("stop-at-end", false, "kafka sources read each partition to the end it had when the run started, then drain and exit "+
		"(a bounded run over a backlog, as Flink's scan.bounded.mode = 'latest-offset'; with --duration, whichever comes first)")
	ckptDir := fs.String("checkpoint-dir", "", "checkpoint the run into this directory (a Kafka source's offsets and the open windows, the last two kept) and restore "+
		"from its newest valid checkpoint on start; needs one Kafka source and outputs in Kafka, Redis or regular files; a file output P is written as "+
		"parts P.part-EPOCH, one per checkpoint, committed with it (cat P.part-* is the output; stdout, FIFOs and devices refused) (docs/operations.md)")
	ckptEvery := fs.Duration("checkpoint-interval", pipeline.DefaultCheckpointInterval, "how often --checkpoint-dir is written")
	instance := fs.Int("instance", 0, "this process's number among --instances: it reads the Kafka partitions p with p mod instances = instance")
	instances := fs.Int("instances", 1, "the processes that share the Kafka sources' partitions statically (see --instance)")
	if err := parseSQLCommand(fs, args); err != nil {
		return err
	}
	name, text, err := sqlText(fs, *expr)
	if err != nil {
		return err
	}
	if *ckptEvery <= 0 {
		return usagef("--checkpoint-interval %v: must be positive", *ckptEvery)
	}
	if *instances < 1 || *instance < 0 || *instance >= *instances {
		return usagef("--instance %d --instances %d: want 0 <= instance < instances", *instance, *instances)
	}
	if *output == "" {
		return usagef("--output \"\": name a file, or - for stdout")
	}
	if *duration <= 0 {
		return usagef("--duration %v: must be positive", *duration)
	}
	retry, err := pipeline.SinkRetryTimeout(*retryTimeout)
	if err != nil {
		return err
	}
	prog, err := compileSQL(name, text)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(prog.SQL().Sources, func(s *sql.Source) bool { return s.Connector == "kafka" }) {
		switch {
		case *instances > 1:
			return usagef("--instances %d: shares Kafka sources' partitions, and %s has no Kafka source", *instances, name)
		case *stopAtEnd:
			return usagef("--stop-at-end: reads Kafka sources to their end, and %s has no Kafka source (files are read to their end, generators for --duration)", name)
		}
	}
	if *ckptDir == "" && given(fs, "checkpoint-interval") {
		return usagef("--checkpoint-interval: needs --checkpoint-dir")
	}
	if !given(fs, "task-size") {
		ef.TaskSize = prog.FitTaskSize(ef.TaskSize) // a CSV source's layout can be any multiple of 4 bytes
	}
	cfg, err := ef.config(fs, stderr)
	if err != nil {
		return err
	}
	ef.outputs = prog.OutputFiles(*output)
	o := pipeline.Options{Engine: cfg, Stdout: stdout, Output: *output, Log: stderr, CheckpointDir: *ckptDir, CheckpointInterval: *ckptEvery,
		Instance: *instance, Instances: *instances, SinkRetryTimeout: retry, StopAtEnd: *stopAtEnd}
	if given(fs, "duration") {
		o.Duration = *duration // else generators run their default, Kafka until a signal
	}
	return runProgram(prog, o, &ef, "run", stderr, nil, func(ps *pipeline.Summary, job *pipeline.Job, sig *interrupt, cfg engine.Config) error {
		sum := runSummary{Summary: ps, Workers: ef.CPUWorkers(), TaskSize: ef.TaskSize, Policy: string(cfg.Policy),
			Processors: pipeline.SummarizeProcessors(job.Engine().Scheduling(), job.Engine().StreamNames(), cfg, ef.GPUEmulate, ps.GPUFallbackTasks())}
		if sum.Interrupted {
			sum.Signal = sig.Name()
		}
		to := stdout
		if job.ToStdout() {
			to = stderr // stdout holds the rows alone
		}
		if *asJSON {
			return writeJSONLine(to, sum)
		}
		sum.print(to)
		return nil
	})
}

// runProgram runs prog as the command line does: --metrics-addr served,
// the GPU of --mode opened and SIGINT and SIGTERM watched (ef.begin), a
// progress line beginning with label every --progress-interval on
// stderr; opened says so (nil: nothing) once the job is open and a signal
// would be answered; then report prints the summary, given the engine's
// configuration as run (its GPU opened). The error is the run's, or after
// the summary the signal's (exit 130, 143).
func runProgram(prog *pipeline.Program, o pipeline.Options, ef *engineFlags, label string, stderr io.Writer, opened func(),
	report func(sum *pipeline.Summary, job *pipeline.Job, sig *interrupt, cfg engine.Config) error) (err error) {
	sig, end, err := ef.begin(&o.Engine, stderr)
	if err != nil {
		return err
	}
	defer closeInto(&err, end)
	if ef.metrics != nil {
		o.Metrics = ef.metrics.Registry() // the job adds its engine, sources and outputs
		o.Engine.Started = nil
	}
	stopProgress := func() {}
	o.Engine.Started = func(e *engine.Engine) {
		stopProgress = ef.startProgress(stderr, label, e, time.Now())
	}
	job, err := prog.Open(o)
	if err != nil {
		return err
	}
	defer job.Close()
	if opened != nil {
		opened()
	}
	sum, err := job.Run(sig.Context())
	stopProgress() // its last line is written before the summary
	if err != nil {
		return err
	}
	if err := report(sum, job, sig, o.Engine); err != nil || !sum.Interrupted {
		return err // a signal after every source ended interrupted nothing
	}
	return sig.Err(true)
}

// given reports whether flag name was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func (s *runSummary) print(w io.Writer) {
	fmt.Fprintf(w, "run %s: %d tuples in %.3f s: %.2f M tuples/s (%d workers, task %d B); serial fraction %.3f\n", s.File, s.Tuples, s.Seconds, float64(s.Tuples)/max(s.Seconds, 1e-9)/1e6, s.Workers, s.TaskSize, s.SerialFraction)
	if s.Interrupted {
		fmt.Fprintf(w, "  interrupted by %s: the figures are those of what ran before it\n", s.Signal)
	}
	for _, src := range s.Sources {
		fmt.Fprintf(w, "  source %s: %d tuples", src.Name, src.Tuples)
		if src.Malformed > 0 {
			fmt.Fprintf(w, ", %d malformed records skipped", src.Malformed)
		}
		fmt.Fprintln(w)
	}
	if s.Checkpoints != nil {
		printCheckpoints(w, s.Checkpoints)
	}
	for _, q := range s.Queries {
		fmt.Fprintf(w, "  query %s: %d tuples, windows %d, rows %d; counted %d, filtered %d, unmatched %d, late %d; serial fraction %.3f", q.Name, q.Tuples, q.Windows, q.Rows, q.Counted, q.Filtered, q.Unmatched, q.Late, q.SerialFraction)
		if q.Output != "" {
			fmt.Fprintf(w, "; output %s", q.Output)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, gpuLine(&s.Processors))
}

// printCheckpoints is the summary's line of the checkpoints.
func printCheckpoints(w io.Writer, c *pipeline.CheckpointSummary) {
	fmt.Fprintf(w, "  checkpoints: %d taken into %s, the last epoch %d of %d bytes, the longest %.2f ms", c.Taken, c.Dir, c.Epoch, c.Bytes, c.MaxMillis)
	if c.RestoredEpoch > 0 {
		fmt.Fprintf(w, "; restored epoch %d, first window %.2f ms after the start", c.RestoredEpoch, c.RecoveryMillis)
	}
	fmt.Fprintln(w)
}

// addSinkRetryFlag registers --sink-retry-timeout on fs.
func addSinkRetryFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("sink-retry-timeout", pipeline.DefaultSinkRetryTimeout,
		"how long an output retries, with backoff, a write that fails because its server is unreachable (down, restarting) "+
			"before the run fails; meanwhile its rows are held and the run waits; 0: fail at once")
}
