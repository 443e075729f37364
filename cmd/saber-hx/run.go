package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/gpu"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/source/kafka"
	"github.com/saber-hx/saber-hx/sql"
	"github.com/saber-hx/saber-hx/window"
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
func compileSQL(name, text string) (*sql.Program, error) {
	prog, err := sql.Compile(text)
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
	fmt.Fprint(stdout, prog.Explain())
	fmt.Fprintln(stdout, "plans:")
	for _, q := range prog.Queries {
		fmt.Fprintf(stdout, "  %s: %s\n", q.Name, planLine(q.Spec, *kernel == "vector"))
	}
	return nil
}

// planLine says which kernel runs a query and whether the GPU can.
func planLine(sp engine.Spec, vectorised bool) string {
	if sp.Join != nil {
		onGPU := "the GPU can run its pairs"
		if err := gpu.SupportedJoin(sp.Join); err != nil {
			onGPU = "CPU only: " + err.Error()
		}
		return "window join (pairs per window, nested loops); " + onGPU
	}
	p, err := kernels.CompileWith(sp.Query, kernels.Options{Vectorised: vectorised})
	if err != nil {
		return "cannot compile: " + err.Error()
	}
	kernel := "vectorised kernels"
	if p.Fused {
		kernel = "the fused kernel"
	}
	onGPU := "the GPU can run it"
	if err := gpu.Supported(p); err != nil {
		onGPU = "CPU only: " + err.Error()
	}
	if !sp.Query.Stateless() {
		if ws, err := window.NewSpec(sp.Query.Window); err == nil {
			kernel = fmt.Sprintf("panes of %d, %d per window; %s", ws.Pane, ws.Size/ws.Pane, kernel)
		}
		if sp.Query.Window.Delay != 0 {
			onGPU = "CPU only: a watermark delay (the GPU kernels have none)"
		}
	}
	return kernel + "; " + onGPU
}

// runSQLSummary is run's summary (--json: one object): the run, and per
// query its counters, as bench gives them.
type runSummary struct {
	File        string             `json:"file"`
	Seconds     float64            `json:"seconds"`
	Tuples      uint64             `json:"tuples"`
	Queries     []runQuerySummary  `json:"queries"`
	Sources     []runSourceStats   `json:"sources"`
	Workers     int                `json:"workers"`
	TaskSize    int                `json:"task_size"`
	Policy      string             `json:"policy"`
	Processors  processorsSummary  `json:"processors"`
	Interrupted bool               `json:"interrupted"`
	Signal      string             `json:"signal,omitempty"`
	Checkpoints *checkpointSummary `json:"checkpoints,omitempty"` // --checkpoint-dir
}

type runQuerySummary struct {
	Name    string `json:"name"`
	Tuples  uint64 `json:"tuples"`
	Windows uint64 `json:"windows"`
	Rows    uint64 `json:"rows"`
	tupleCounts
	Output string `json:"output,omitempty"` // where its rows went
}

// runSourceStats are a source's records: read, and malformed (skipped with
// on_error = 'skip'), so that the queries' counters plus these add up.
type runSourceStats struct {
	Name      string `json:"name"`
	Tuples    uint64 `json:"tuples"`
	Malformed uint64 `json:"malformed_records"`
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
	duration := fs.Duration("duration", 10*time.Second, "how long generator sources produce (they are unbounded), and kafka sources read where given "+
		"(without it they read until SIGINT or SIGTERM, then drain); file and stdin sources run to their end")
	ckptDir := fs.String("checkpoint-dir", "", "checkpoint the run into this directory (a Kafka source's offsets and the open windows, the last two kept) and restore "+
		"from its newest valid checkpoint on start; needs one Kafka source and outputs in Kafka, Redis or regular files; a file output P is written as "+
		"parts P.part-EPOCH, one per checkpoint, committed with it (cat P.part-* is the output; stdout, FIFOs and devices refused) (docs/operations.md)")
	ckptEvery := fs.Duration("checkpoint-interval", 5*time.Second, "how often --checkpoint-dir is written")
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
		return usagef("duration %v: must be positive", *duration)
	}
	prog, err := compileSQL(name, text)
	if err != nil {
		return err
	}
	fitTaskSize(fs, &ef, prog)
	cfg, err := ef.config(fs, stderr)
	if err != nil {
		return err
	}
	for _, s := range prog.Sources {
		if err := cfg.Validate(s.Schema.TupleSize); err != nil {
			return usageError{fmt.Errorf("source %s: %w", s.Name, err)}
		}
	}
	r := &sqlRun{prog: prog, name: name, output: *output, stderr: stderr, share: kafkaShare{instance: *instance, instances: *instances},
		sinkRetryTimeout: retryTimeout}
	durationGiven := false
	fs.Visit(func(f *flag.Flag) { durationGiven = durationGiven || f.Name == "duration" })
	// Registered first: an output opened before a later one fails is
	// removed (a file) or closed (a client) all the same.
	defer r.abortSinks()
	defer r.closeSources()
	if err := r.open(stdout, *ckptDir, *ckptEvery, *duration, durationGiven); err != nil {
		return err
	}
	sig, end, err := ef.begin(&cfg, stderr)
	if err != nil {
		return err
	}
	defer closeInto(&err, end)
	if ef.metrics != nil {
		for _, s := range r.sources {
			if s.kafka != nil {
				ef.metrics.Registry().AddSource(s.src.Name, kafkaCounts(s.kafka))
			}
		}
		r.addSinkMetrics(ef.metrics.Registry())
	}

	start := time.Now()
	stats, err := r.run(sig.ctx, cfg, r.specs)
	seconds := time.Since(start).Seconds()
	if err != nil {
		if errors.Is(err, engine.ErrConfig) {
			return usageError{err}
		}
		return err
	}
	if err := r.finish(sig.interrupted()); err != nil {
		return err
	}
	if sig.interrupted() && r.files() {
		fmt.Fprintf(stderr, "saber-hx: %s\n", r.interruptedNote())
	}
	sum := r.summarize(stats, seconds, &ef, cfg)
	if r.ckpt != nil {
		sum.Checkpoints = r.ckpt.summary()
	}
	if sig.interrupted() {
		sum.Interrupted = true
		if ie, ok := sig.err().(interruptedError); ok {
			sum.Signal = signalName(ie.sig)
		}
	}
	to := stdout
	if r.toStdout {
		to = stderr // stdout holds the rows alone
	}
	if *asJSON {
		if err := writeJSONLine(to, sum); err != nil {
			return err
		}
	} else {
		sum.print(to)
	}
	return sig.err()
}

func (s *runSummary) print(w io.Writer) {
	fmt.Fprintf(w, "run %s: %d tuples in %.3f s: %.2f M tuples/s (%d workers, task %d B)\n", s.File, s.Tuples, s.Seconds, float64(s.Tuples)/max(s.Seconds, 1e-9)/1e6, s.Workers, s.TaskSize)
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
		s.Checkpoints.print(w)
	}
	for _, q := range s.Queries {
		fmt.Fprintf(w, "  query %s: %d tuples, windows %d, rows %d; counted %d, filtered %d, unmatched %d, late %d", q.Name, q.Tuples, q.Windows, q.Rows, q.Counted, q.Filtered, q.Unmatched, q.Late)
		if q.Output != "" {
			fmt.Fprintf(w, "; output %s", q.Output)
		}
		fmt.Fprintln(w)
	}
}

// print is the summary's line of the checkpoints.
func (c *checkpointSummary) print(w io.Writer) {
	fmt.Fprintf(w, "  checkpoints: %d taken into %s, the last epoch %d of %d bytes, the longest %.2f ms", c.Taken, c.Dir, c.Epoch, c.Bytes, c.MaxMillis)
	if c.RestoredEpoch > 0 {
		fmt.Fprintf(w, "; restored epoch %d, first window %.2f ms after the start", c.RestoredEpoch, c.RecoveryMillis)
	}
	fmt.Fprintln(w)
}

// fitTaskSize makes the default task size, where --task-size is not given,
// a whole number of every source's tuples (the largest such size not above
// the default): a CSV source's layout can be any multiple of 4 bytes.
func fitTaskSize(fs *flag.FlagSet, ef *engineFlags, prog *sql.Program) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "task-size" })
	if given || len(prog.Sources) == 0 {
		return
	}
	unit := 1
	for _, s := range prog.Sources {
		unit = lcm(unit, s.Schema.TupleSize)
	}
	if n := ef.taskSize / unit * unit; n > 0 {
		ef.taskSize = n
	} else {
		ef.taskSize = unit
	}
}

func lcm(a, b int) int {
	g, y := a, b
	for y != 0 {
		g, y = y, g%y
	}
	return a / g * b
}

// sqlRun is one run of a compiled program: its sinks, sources and specs.
type sqlRun struct {
	prog      *sql.Program
	name      string // the SQL file, "-e" for -e
	output    string // --output
	stderr    io.Writer
	specs     []engine.Spec
	sinks     []*rowSink // per query, nil where its output goes nowhere (a view)
	toStdout  bool       // a query's rows go to stdout
	sources   []*sqlSource
	feeds     map[*sqlSource][]*engine.Stream // the streams each source writes to
	eng       *engine.Engine
	share     kafkaShare    // --instance, --instances and a checkpoint's positions
	ckpt      *checkpointer // --checkpoint-dir; nil without
	stopFeeds context.CancelFunc
	tables    map[string][]byte // tables' text by name, instead of their files
	stopAtEnd bool              // the Kafka sources read to the ends they had at the start
	quiet     bool              // no progress line every second (ysb prints none)
	// sinkRetryTimeout is --sink-retry-timeout; nil: its default.
	sinkRetryTimeout *time.Duration
}

// open readies a run: with ckptDir its checkpointer and the checkpoint to
// restore, the tables, the outputs and the sources, in that order (the
// transactional outputs decide the checkpoint before the sources seek to
// it). The caller defers abortSinks and closeSources first: what was
// opened before a failure is closed all the same.
func (r *sqlRun) open(stdout io.Writer, ckptDir string, ckptEvery, duration time.Duration, durationGiven bool) error {
	if ckptDir != "" {
		if err := checkpointConfig(r); err != nil {
			return err
		}
		restored, err := loadCheckpoint(ckptDir, r.stderr)
		if err != nil {
			return err
		}
		if r.ckpt, err = newCheckpointer(ckptDir, ckptEvery, r, r.stderr, restored); err != nil {
			return usageError{err}
		}
		r.share.resume = map[int32]kafka.Position{}
		if restored != nil {
			r.share.resume = restored.positions
		}
	}
	if err := r.loadTables(); err != nil {
		return err
	}
	if err := r.openSinks(stdout); err != nil {
		return err
	}
	if r.ckpt != nil {
		if err := r.ckpt.alignOutputs(); err != nil {
			return err
		}
	}
	return r.openSources(duration, durationGiven)
}

// finish, once the run has drained, commits the outputs (files only when
// it was not interrupted) and then the Kafka sources' offsets of what is
// out.
func (r *sqlRun) finish(interrupted bool) error {
	if err := r.commitSinks(!interrupted); err != nil {
		return err
	}
	if (!interrupted || !r.files()) && len(r.txnSinks()) == 0 {
		// Every record fed is out: written, or in a file committed. (Not
		// with transactional outputs, whose drain was aborted: their
		// offsets stand at the last checkpoint.)
		r.commitOffsets()
	}
	return nil
}

// loadTables reads every table's rows: from r.tables where it holds the
// table's text (ysb --source kafka's campaigns, read from Redis), else
// from the table's file.
func (r *sqlRun) loadTables() error {
	for _, t := range r.prog.Tables {
		if text, ok := r.tables[t.Name]; ok {
			if err := t.Load(bytes.NewReader(text)); err != nil {
				return fmt.Errorf("table %s: %w", t.Name, err)
			}
			continue
		}
		f, err := os.Open(t.Path)
		if err != nil {
			return usagef("table %s: %v", t.Name, err)
		}
		err = t.Load(f)
		f.Close()
		if err != nil {
			return usagef("%s: %v", t.Path, err)
		}
	}
	return nil
}

// inputs are the paths the program reads, which no output may be.
func (r *sqlRun) inputs() []string {
	var in []string
	if r.name != "-e" {
		in = append(in, r.name)
	}
	for _, s := range r.prog.Sources {
		if s.Path != "" {
			in = append(in, s.Path)
		}
	}
	for _, t := range r.prog.Tables {
		in = append(in, t.Path)
	}
	return in
}

// run starts the engine over the specs, feeds every source into the
// streams that read it until they end (or ctx is cancelled), and drains.
func (r *sqlRun) run(ctx context.Context, cfg engine.Config, specs []engine.Spec) ([]engine.Stats, error) {
	// A failed flush ends the feeds (stopFeeds): the run drains and fails
	// rather than read on with nowhere to write.
	ctx, r.stopFeeds = context.WithCancel(ctx)
	defer r.stopFeeds()
	if r.ckpt != nil {
		specs = r.ckpt.wrapSpecs(specs)
	}
	eng, err := engine.Start(cfg, specs)
	if err != nil {
		return nil, err
	}
	r.eng = eng
	if r.ckpt != nil {
		r.ckpt.src = r.sources[0]
		r.sources[0].ckpt = r.ckpt
		if err := r.ckpt.restore(eng); err != nil {
			eng.Abort(err)
			_, _ = eng.CloseAll()
			return nil, err
		}
	}
	feeds := map[*sqlSource][]*engine.Stream{}
	for i, q := range r.prog.Queries {
		if q.Input != "" {
			s := r.source(q.Input)
			feeds[s] = append(feeds[s], eng.Stream(i))
		}
		if q.InputRight != "" {
			s := r.source(q.InputRight)
			feeds[s] = append(feeds[s], eng.Stream(i).Right())
		}
	}
	r.feeds = feeds
	var produced []<-chan error
	for _, s := range r.sources {
		if len(feeds[s]) == 0 {
			fmt.Fprintf(r.stderr, "saber-hx: warning: source %s feeds no query\n", s.src.Name)
			continue
		}
		produced = append(produced, eng.Produce(func() error { return s.feed(ctx, feeds[s], cfg.TaskSize) }))
	}
	stopProgress := func() {}
	if !r.quiet {
		stopProgress = startProgress(r.stderr, "run", eng, time.Now())
	}
	stopFlusher := r.startFlusher()
	var errs []error
	for _, done := range produced {
		errs = append(errs, <-done)
	}
	stats, cerr := eng.CloseAll()
	errs = append(errs, stopFlusher())
	stopProgress()
	for _, err := range append(errs, cerr) {
		if err != nil {
			return nil, err
		}
	}
	return stats, nil
}

func (r *sqlRun) source(name string) *sqlSource {
	for _, s := range r.sources {
		if s.src.Name == name {
			return s
		}
	}
	return nil
}

func (r *sqlRun) summarize(stats []engine.Stats, seconds float64, ef *engineFlags, cfg engine.Config) runSummary {
	var fallback uint64
	for _, st := range stats {
		fallback += st.GPUFallbackTasks
	}
	sum := runSummary{File: r.name, Seconds: seconds, Workers: ef.cpuWorkers(), TaskSize: ef.taskSize, Policy: string(cfg.Policy),
		Processors: summarizeProcessors(r.eng.Scheduling(), r.eng.StreamNames(), cfg, ef, fallback)}
	for i, q := range r.prog.Queries {
		st := stats[i]
		qs := runQuerySummary{Name: q.Name, Tuples: st.Tuples, Windows: st.Windows, Rows: st.Rows, tupleCounts: countsOf(st)}
		if s := r.sinks[i]; s != nil {
			qs.Output = s.where
		}
		sum.Queries = append(sum.Queries, qs)
	}
	for _, s := range r.sources {
		sum.Tuples += s.tuples
		sum.Sources = append(sum.Sources, runSourceStats{Name: s.src.Name, Tuples: s.tuples, Malformed: s.malformed()})
	}
	return sum
}
