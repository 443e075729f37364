// Package bench runs the Nexmark queries of examples/nexmark as saber-hx's
// second benchmark (saber-hx nexmark): events pre-generated into a bundle
// and replayed with advancing times, so that the engine is measured
// without the generator, or generated inline; the same query text over
// JSON files or Kafka topics with another prelude. Generate writes the
// events for those sources (saber-hx nexmark generate).
package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/saber-hx/saber-hx/cpu"
	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/examples"
	"github.com/saber-hx/saber-hx/nexmark"
	"github.com/saber-hx/saber-hx/pipeline"
)

// Defaults of Config.
const (
	DefaultEvents         = 1 << 21 // about 2 M events: a bundle of some 200 MB
	DefaultValidateEvents = 200_000 // 20 s of event time at the default rate
	// MinValidateSpan is the event time a validation run covers at the
	// least, at a lower rate than the measured run's where its events
	// would span less: three of the queries' 10 s windows past the
	// sources' 4 s watermark delay, so that windows turn over and close
	// by the watermark, not only at the input's end (200,000 events at
	// 100,000/s spanned 2 s: one window, closed by the end).
	MinValidateSpan = 40 * time.Second
	DefaultWarmup   = 2 * time.Second
	DefaultDuration = 10 * time.Second
)

// Config is one benchmark run.
type Config struct {
	Query  string // q0, q1, ...: examples/nexmark/<Query>.sql
	Source string // "nexmark" (the connector; the default), "json" (files in Dir) or "kafka" (Brokers)
	// Dir holds person.json, auction.json and bid.json (Generate's flat
	// files) for Source "json".
	Dir string
	// NexmarkDir is ${NEXMARK_DIR} for a query that writes under it
	// (q10's partitioned output, under data/output/${SUBMIT_TIME}/bid/),
	// kept after the run; "": a temporary directory, removed after it.
	NexmarkDir string
	// Brokers and TopicPrefix: the topics <prefix>person, <prefix>auction
	// and <prefix>bid (Generate's) for Source "kafka", read to their end.
	Brokers     []string
	TopicPrefix string
	// Nexmark is the generator's configuration (nexmark.DefaultConfig
	// where zero); its Events is ignored: Events sizes the bundle.
	Nexmark nexmark.Config
	Events  int  // events in the bundle (DefaultEvents where 0)
	Inline  bool // generate as the sources are read, no bundle
	Engine  engine.Config
	// Warmup runs before the measured Duration (the nexmark source only:
	// files and topics are measured whole, from the first record); a
	// Duration of 0 is DefaultDuration.
	Warmup, Duration time.Duration
	// Validate first runs the query over ValidateEvents events generated
	// inline, every query of the program checked against the reference
	// evaluator (pipeline.Options.Validate).
	Validate       bool
	ValidateEvents int64
	Log            io.Writer // progress; nil: none
	// Started, if set, is called with the measured run's engine once it
	// has started (not the validation run's): saber-hx nexmark's
	// progress lines. Engine.Started is still called.
	Started func(*engine.Engine)
	// Given are the settings given explicitly, by the name of saber-hx
	// nexmark's flag for each (events, validate-events, rate, seed,
	// warmup, duration, inline, dir, brokers, topic-prefix): Check refuses
	// a 0 given where 0 would stand for the default, and a setting given
	// that does nothing in this configuration (--warmup with --source
	// json, --validate-events without --validate, ...).
	Given []string
}

// Check refuses (ErrUsage) a configuration no run can have, before any
// work: an unknown query or source, a source without its directory or
// brokers, a negative count or duration, a measured interval that is not
// positive, and a setting in Given that does nothing here. The errors name
// the command line's flags. Run calls it.
func (c Config) Check() error {
	if c.Query == "" {
		return usagef("nexmark: name a query (%s)", strings.Join(Queries(), ", "))
	}
	if _, err := Text(c); err != nil {
		return err
	}
	given := func(name string) bool { return slices.Contains(c.Given, name) }
	for _, n := range []struct {
		flag string
		v    int64
		what string
	}{
		{"events", int64(c.Events), "the events of the bundle replayed"},
		{"validate-events", c.ValidateEvents, "the events of the validation run"},
		{"rate", c.Nexmark.EventRate, "events per second of event time"},
	} {
		if n.v < 0 || n.v == 0 && given(n.flag) {
			return usagef("--%s %d: must be positive (%s)", n.flag, n.v, n.what)
		}
	}
	if c.Warmup < 0 {
		return usagef("--warmup %v: must not be negative", c.Warmup)
	}
	if c.Duration < 0 || c.Duration == 0 && given("duration") {
		return usagef("--duration %v: must be positive (the measured interval)", c.Duration)
	}
	src := cmp.Or(c.Source, "nexmark")
	// Each flag, where it does something, and where it does not.
	for _, s := range []struct {
		flags   []string
		applies bool
		to, not string
	}{
		{[]string{"warmup", "duration", "inline"}, src == "nexmark", "--source nexmark",
			"--source " + src + " (files and topics are read whole and measured from their first record)"},
		{[]string{"events"}, src == "nexmark" && !c.Inline, "the bundle that --source nexmark replays",
			map[bool]string{true: "--inline (no bundle)", false: "--source " + src}[src == "nexmark"]},
		{[]string{"rate", "seed"}, src == "nexmark" || c.Validate, "--source nexmark and --validate's run",
			"--source " + src + " without --validate (the files' or topics' events are generate's)"},
		{[]string{"dir"}, src == "json", "--source json", "--source " + src},
		{[]string{"brokers", "topic-prefix"}, src == "kafka", "--source kafka", "--source " + src},
		{[]string{"validate-events"}, c.Validate, "--validate", "a run without it"},
		{[]string{"nexmark-dir"}, c.writesNexmarkDir(), "a query that writes under ${NEXMARK_DIR} (q10)", "query " + c.Query},
	} {
		for _, f := range s.flags {
			if !s.applies && given(f) && (f != "inline" || c.Inline) { // --inline=false asks for nothing
				return usagef("nexmark: --%s applies to %s, not to %s", f, s.to, s.not)
			}
		}
	}
	return nil
}

// Result is a run's summary (saber-hx nexmark --json).
//
// What a run may claim: the Nexmark project counts the events its
// datagen source generated, every event of the mix, each decoded by every
// query (its views filter the one table by event_type). saber-hx's
// sources generate (Mode "inline") or replay ("replay") only the tables
// the query reads, and the json and kafka sources read one file or topic
// per table: no mode reads the whole mix unless the query reads every
// table (WholeMix). So Tuples, the records the sources read, are what the
// run processed; Events, the sequence's events that those records span,
// is the position in the sequence, counted as Nexmark counts it, and
// claims events that were never generated nor read wherever WholeMix is
// false (46 in 50 of them are bids: a query of people and auctions alone,
// q8, reads 4 events in 50).
type Result struct {
	Query  string `json:"query"`
	Source string `json:"source"`
	// Mode is where the records come from: "replay" (a bundle generated
	// before the run, the generator out of the loop), "inline" (the
	// generator in the loop, as the project's datagen source), "json"
	// (files) or "kafka" (topics).
	Mode    string `json:"mode"`
	CPU     string `json:"cpu"`
	Workers int    `json:"workers"`
	// Cores is the cores the workers had: min(workers, CPUs), not a
	// measure (CPUsUsed is).
	Cores        int   `json:"cores"`
	Inline       bool  `json:"inline"`
	BundleEvents int64 `json:"bundle_events,omitempty"`
	// Rate is the generator's events per second of event time
	// (first-event.rate): how many events a window of event time holds.
	// 0 for files and topics (their times are generate's).
	Rate    int64   `json:"rate,omitempty"`
	Warmup  float64 `json:"warmup_s"`
	Seconds float64 `json:"seconds"` // the measured interval
	// TablesRead are the tables the program's sources read; WholeMix
	// says they are every table of the mix, so that Tuples == Events.
	TablesRead []string `json:"tables_read"`
	WholeMix   bool     `json:"whole_mix"`
	// Tuples are the records the sources read in the measured interval;
	// Events the sequence's events they span (Result's comment).
	Tuples     uint64  `json:"tuples"`
	TuplesPerS float64 `json:"tuples_per_s"`
	Events     uint64  `json:"events"`
	EventsPerS float64 `json:"events_per_s"`
	// EventsPerSPerCore is EventsPerS over Cores: per worker given a
	// core, not per CPU used (the JSON name is kept for its readers).
	EventsPerSPerCore float64 `json:"events_per_s_per_core"`
	// CPUSeconds is the process's CPU time (user and system, getrusage
	// RUSAGE_SELF: the generator or the replay, the engine, the sinks, the
	// runtime) in the measured interval; CPUsUsed that over Seconds, the
	// project's "Cores"; TuplesPerCPUSecond and EventsPerCPUSecond the
	// records and events per CPU-second used, the project's throughput
	// per core. Zero where the CPU time cannot be read.
	CPUSeconds         float64 `json:"cpu_s"`
	CPUsUsed           float64 `json:"cpus_used"`
	TuplesPerCPUSecond float64 `json:"tuples_per_cpu_s"`
	EventsPerCPUSecond float64 `json:"events_per_cpu_s"`
	// Rows are the rows the program's sink tables (its INSERT INTOs)
	// received in the whole run.
	Rows uint64 `json:"rows"`
	// SerialFraction is the program's (pipeline.Summary.SerialFraction,
	// as run's): all its queries' serial time against all their worker
	// time, the bound of its speed-up with more cores. LargestPart is the
	// program's query (a part: a view's aggregation, the window join
	// alone) whose own fraction is the largest, LargestPartSerialFraction
	// that fraction: where an ordered stage is, not a bound of the
	// program's, as a part may do a small share of the program's work.
	SerialFraction            float64 `json:"serial_fraction"`
	LargestPart               string  `json:"largest_part"`
	LargestPartSerialFraction float64 `json:"largest_part_serial_fraction"`
	// Validated and Mismatch: with Config.Validate. ValidationInterrupted:
	// ctx was cancelled before the validation run ended; Validated is nil
	// and the measured run did not start.
	Validated             *bool  `json:"validated,omitempty"`
	ValidationInterrupted bool   `json:"validation_interrupted,omitempty"`
	ValidateEvents        int64  `json:"validate_events,omitempty"`
	ValidateRate          int64  `json:"validate_rate,omitempty"` // events/s of event time
	Mismatch              string `json:"mismatch,omitempty"`
	// Interrupted: ctx was cancelled (SIGINT or SIGTERM: Signal, which
	// saber-hx nexmark sets) before the run's end; the figures are those
	// of what ran.
	Interrupted bool   `json:"interrupted"`
	Signal      string `json:"signal,omitempty"`
	// Summary is the measured run's pipeline summary.
	Summary *pipeline.Summary `json:"-"`
}

// Text is the summary on a line, for a reader: the records read first,
// then the sequence's events they span and whether those were all read.
func (r *Result) Text() string {
	v := "not asked (--validate)"
	if r.Validated != nil {
		v = fmt.Sprint(*r.Validated)
	} else if r.ValidationInterrupted {
		v = "interrupted before every query was checked (the measured run did not start)"
	}
	mix := "the whole mix read"
	if !r.WholeMix {
		mix = strings.Join(r.TablesRead, ", ") + " read, not the whole mix: the other tables' events neither generated nor read"
	}
	cpu := "CPU time unknown"
	if r.CPUSeconds > 0 {
		cpu = fmt.Sprintf("%.2f M tuples per CPU-second (%.2f CPUs used)", r.TuplesPerCPUSecond/1e6, r.CPUsUsed)
	}
	mode := map[string]string{"replay": "a replayed bundle", "inline": "the generator in the loop", "json": "files", "kafka": "topics"}[r.Mode]
	if r.Rate > 0 {
		mode += fmt.Sprintf(", rate %d events/s of event time", r.Rate)
	}
	interrupted := ""
	if r.Interrupted {
		by := ""
		if r.Signal != "" {
			by = " by " + r.Signal
		}
		interrupted = "; interrupted" + by + ": the figures are those of what ran before it"
	}
	return fmt.Sprintf("nexmark %s (%s): %.2f M tuples/s, %s (%s); %.2f M events/s of the sequence spanned, %.2f M per worker (%d workers, %s); "+
		"%s; %d tuples, %d events in %.2f s, %d rows, serial fraction %.3f (its largest part's own, %s: %.3f), validated: %s%s",
		r.Query, r.Source, r.TuplesPerS/1e6, cpu, mix, r.EventsPerS/1e6, r.EventsPerSPerCore/1e6, r.Workers, r.CPU,
		mode, r.Tuples, r.Events, r.Seconds, r.Rows, r.SerialFraction, r.LargestPart, r.LargestPartSerialFraction, v, interrupted)
}

// Queries lists the queries of examples/nexmark, in order (q0, q1, ...).
func Queries() []string {
	names, _ := fs.Glob(examples.FS, "nexmark/q*.sql")
	var qs []string
	for _, n := range names {
		qs = append(qs, strings.TrimSuffix(strings.TrimPrefix(n, "nexmark/"), ".sql"))
	}
	slices.SortFunc(qs, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	return qs
}

// ErrUsage marks a configuration no run can have, or a setting that would
// do nothing: errors.Is(err, ErrUsage) tells it from a run that failed (the
// command line's exit status 2 against 1).
var ErrUsage = errors.New("nexmark: bad usage")

// usageError marks err as ErrUsage without changing its text.
type usageError struct{ err error }

func (e usageError) Error() string        { return e.err.Error() }
func (e usageError) Unwrap() error        { return e.err }
func (e usageError) Is(target error) bool { return target == ErrUsage }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// preludeEnd is the line that ends an example's prelude.
const preludeEnd = "-- end of the saber-hx prelude"

var nexmarkWith = regexp.MustCompile(`WITH \('connector' = 'nexmark', 'nexmark\.table\.type' = '(person|auction|bid)'\);`)

// Text is the program of query q over source: examples/nexmark/q.sql,
// its prelude's sources rewritten for JSON files or Kafka topics.
func Text(cfg Config) (string, error) {
	b, err := examples.FS.ReadFile("nexmark/" + cfg.Query + ".sql")
	if err != nil {
		return "", usagef("no Nexmark query %q (have %s)", cfg.Query, strings.Join(Queries(), ", "))
	}
	text := string(b)
	end := strings.Index(text, preludeEnd)
	if end < 0 {
		return "", fmt.Errorf("examples/nexmark/%s.sql: no line %q", cfg.Query, preludeEnd)
	}
	prelude, query := text[:end], text[end:]
	switch cfg.Source {
	case "", "nexmark":
		return text, nil
	case "json":
		if cfg.Dir == "" {
			return "", usagef("source json: name the directory of person.json, auction.json and bid.json")
		}
		prelude = nexmarkWith.ReplaceAllStringFunc(prelude, func(m string) string {
			t := nexmarkWith.FindStringSubmatch(m)[1]
			return fmt.Sprintf("WITH ('connector' = 'filesystem', 'path' = '%s/%s.json', 'format' = 'json');", sqlString(cfg.Dir), t)
		})
	case "kafka":
		if len(cfg.Brokers) == 0 {
			return "", usagef("source kafka: name the brokers")
		}
		prelude = nexmarkWith.ReplaceAllStringFunc(prelude, func(m string) string {
			t := nexmarkWith.FindStringSubmatch(m)[1]
			return fmt.Sprintf("WITH ('connector' = 'kafka', 'topic' = '%s%s', 'properties.bootstrap.servers' = '%s', "+
				"'scan.startup.mode' = 'earliest-offset', 'format' = 'json');", sqlString(cfg.TopicPrefix), t, sqlString(strings.Join(cfg.Brokers, ",")))
		})
	default:
		return "", usagef("source %q: want nexmark, json or kafka", cfg.Source)
	}
	return prelude + query, nil
}

func sqlString(s string) string { return strings.ReplaceAll(s, "'", "''") }

// writesNexmarkDir reports whether the query writes under ${NEXMARK_DIR}.
func (c Config) writesNexmarkDir() bool {
	text, err := Text(c)
	return err == nil && strings.Contains(text, "${NEXMARK_DIR}")
}

// lastSubmit is the last ${SUBMIT_TIME} given: each run's is past it, so
// that two runs of one process (validation, measured) write apart.
var lastSubmit atomic.Int64

// submitTime is a run's ${SUBMIT_TIME}: the time of its start, in
// milliseconds since the epoch, past every earlier run's.
func submitTime() string {
	for {
		last, now := lastSubmit.Load(), time.Now().UnixMilli()
		now = max(now, last+1)
		if lastSubmit.CompareAndSwap(last, now) {
			return strconv.FormatInt(now, 10)
		}
	}
}

// output is where a compiled program writes its partitioned output
// (q10's): the table's directory, and the partition columns' success
// file ("" where it writes none).
type partOutput struct{ dir, success string }

// partitionedOutput is prog's partitioned output, if any.
func partitionedOutput(prog *pipeline.Program) (partOutput, bool) {
	for _, q := range prog.SQL().Queries {
		if q.Sink != nil && q.Sink.Partition != nil {
			return partOutput{strings.TrimSuffix(q.Sink.Path, "/"), q.Sink.Partition.SuccessFile}, true
		}
	}
	return partOutput{}, false
}

// compile compiles the query's program with the generator's
// configuration. A query that reads ${FLINK_HOME} (q13's side input) is
// given a directory of its own that holds what the project's scripts put
// there (nexmark.FlinkHome), whatever the environment's FLINK_HOME:
// cleanup removes it once the program's job is closed.
func compile(cfg Config, events int64) (prog *pipeline.Program, cleanup func(), err error) {
	text, err := Text(cfg)
	if err != nil {
		return nil, nil, err
	}
	env, cleanup := os.LookupEnv, func() {}
	given := map[string]string{}
	if strings.Contains(text, "${FLINK_HOME}") {
		home, err := nexmark.FlinkHome()
		if err != nil {
			return nil, nil, fmt.Errorf("nexmark %s: the side input: %w", cfg.Query, err)
		}
		cleanup = func() { os.RemoveAll(home) }
		given["FLINK_HOME"] = home
	}
	if strings.Contains(text, "${NEXMARK_DIR}") {
		// q10 writes its partitions under ${NEXMARK_DIR}/data/output/
		// ${SUBMIT_TIME}/bid/, as the project's runner gives them: a
		// temporary directory, removed after the run, unless one is named
		dir := cfg.NexmarkDir
		if dir == "" {
			tmp, err := os.MkdirTemp("", "saber-hx-nexmark-dir-")
			if err != nil {
				return nil, nil, fmt.Errorf("nexmark %s: ${NEXMARK_DIR}: %w", cfg.Query, err)
			}
			prev := cleanup
			cleanup = func() { prev(); os.RemoveAll(tmp) }
			dir = tmp
		} else if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		given["NEXMARK_DIR"], given["SUBMIT_TIME"] = dir, submitTime()
	}
	if len(given) > 0 {
		env = func(k string) (string, bool) {
			if v, ok := given[k]; ok {
				return v, true
			}
			return os.LookupEnv(k)
		}
	}
	prog, err = pipeline.CompileEnv("examples/nexmark/"+cfg.Query+".sql", text, env)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	nc := cfg.Nexmark
	if err := prog.ConfigureNexmark(func(c *nexmark.Config) { *c = nc; c.Events = events }); err != nil {
		cleanup()
		return nil, nil, usagef("%v", err)
	}
	return prog, cleanup, nil
}

// Run runs the benchmark: with Validate a validation run first, then the
// measured run, until ctx is cancelled or its time is over.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Nexmark == (nexmark.Config{}) {
		cfg.Nexmark = nexmark.DefaultConfig()
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.Duration == 0 {
		cfg.Duration = DefaultDuration
	}
	if cfg.Events == 0 {
		cfg.Events = DefaultEvents
	}
	if cfg.ValidateEvents == 0 {
		cfg.ValidateEvents = DefaultValidateEvents
	}
	if cfg.Source == "" {
		cfg.Source = "nexmark"
	}
	if cfg.Engine.Workers == 0 {
		cfg.Engine = cfg.Engine.Defaults()
	}
	log := cfg.Log
	if log == nil {
		log = io.Discard
	}
	res := &Result{Query: cfg.Query, Source: cfg.Source, Mode: cfg.Source, CPU: cpu.Model(), Workers: cfg.Engine.Workers,
		Cores: min(cfg.Engine.Workers, runtime.NumCPU()), Inline: cfg.Inline || cfg.Source != "nexmark"}
	if cfg.Source == "nexmark" {
		res.Mode, res.Rate = "replay", cfg.Nexmark.EventRate
		if cfg.Inline {
			res.Mode = "inline"
		}
	}
	if cfg.Validate {
		rate := validateRate(cfg.Nexmark.EventRate, cfg.ValidateEvents)
		fmt.Fprintf(log, "nexmark %s: validating over %d events at %d events/s of event time against the reference evaluator\n", cfg.Query, cfg.ValidateEvents, rate)
		ok, mismatch, interrupted, err := validate(ctx, cfg, rate)
		if err != nil {
			return nil, err
		}
		res.ValidateEvents, res.ValidateRate = cfg.ValidateEvents, rate
		if interrupted {
			res.Interrupted, res.ValidationInterrupted = true, true
			return res, nil
		}
		res.Validated, res.Mismatch = &ok, mismatch
	}
	prog, cleanup, err := compile(cfg, 0)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	opts := pipeline.Options{Engine: cfg.Engine, Log: log, StopAtEnd: cfg.Source == "kafka"}
	measured := cfg.Source == "nexmark"
	if measured {
		opts.Duration = cfg.Warmup + cfg.Duration
		if !cfg.Inline {
			fmt.Fprintf(log, "nexmark %s: generating %d events into a bundle\n", cfg.Query, cfg.Events)
			b, err := nexmark.NewBundle(cfg.Nexmark, cfg.Events)
			if err != nil {
				return nil, err
			}
			defer b.Free()
			opts.NexmarkBundle, res.BundleEvents = b, b.Events()
		}
	}
	if started := cfg.Started; started != nil {
		engineStarted := opts.Engine.Started
		opts.Engine.Started = func(e *engine.Engine) {
			if engineStarted != nil {
				engineStarted(e)
			}
			started(e)
		}
	}
	res.TablesRead, res.WholeMix = tablesRead(prog, cfg.Nexmark)
	job, err := prog.Open(opts)
	if err != nil {
		return nil, err
	}
	defer job.Close()
	events := func() (ev, tuples uint64) { return progress(job, prog, cfg.Nexmark) }
	var (
		t0, t1   time.Time
		e0, e1   uint64
		tu0, tu1 uint64
		c0, c1   time.Duration // the process's CPU time
		sampled  = make(chan struct{})
	)
	start, cstart := time.Now(), processCPU()
	if measured {
		go func() {
			defer close(sampled)
			select {
			case <-time.After(cfg.Warmup):
			case <-ctx.Done():
				return
			}
			t0, c0 = time.Now(), processCPU()
			e0, tu0 = events()
			fmt.Fprintf(log, "nexmark %s: warmed up; measuring %v\n", cfg.Query, cfg.Duration)
			select {
			case <-time.After(cfg.Duration):
			case <-ctx.Done():
			}
			t1, c1 = time.Now(), processCPU()
			e1, tu1 = events()
		}()
	} else {
		close(sampled)
	}
	sum, err := job.Run(ctx)
	if err != nil {
		return nil, err
	}
	<-sampled
	if !measured || t1.IsZero() {
		// Files and topics: the whole run; an interrupted warm-up: all
		// there is.
		t0, t1, e0, tu0, c0, c1 = start, time.Now(), 0, 0, cstart, processCPU()
		e1, tu1 = events()
	}
	res.Summary, res.Interrupted = sum, sum.Interrupted
	res.Warmup = t0.Sub(start).Seconds()
	res.Seconds = t1.Sub(t0).Seconds()
	res.Events, res.Tuples = e1-e0, tu1-tu0
	if res.Seconds > 0 {
		res.EventsPerS = float64(res.Events) / res.Seconds
		res.TuplesPerS = float64(res.Tuples) / res.Seconds
		res.EventsPerSPerCore = res.EventsPerS / float64(res.Cores)
	}
	if c0 > 0 && c1 > c0 {
		res.CPUSeconds = (c1 - c0).Seconds()
		res.TuplesPerCPUSecond = float64(res.Tuples) / res.CPUSeconds
		res.EventsPerCPUSecond = float64(res.Events) / res.CPUSeconds
		if res.Seconds > 0 {
			res.CPUsUsed = res.CPUSeconds / res.Seconds
		}
	}
	res.SerialFraction = sum.SerialFraction
	for i, q := range sum.Queries {
		if res.LargestPart == "" || q.SerialFraction > res.LargestPartSerialFraction {
			res.LargestPart, res.LargestPartSerialFraction = q.Name, q.SerialFraction
		}
		if prog.SQL().Queries[i].Sink != nil {
			res.Rows += outputRows(prog, i, q)
		}
	}
	return res, nil
}

// outputRows is query i's rows: an aggregation's, or the tuples a
// stateless query output.
func outputRows(prog *pipeline.Program, i int, q pipeline.QuerySummary) uint64 {
	if sq := prog.SQL().Queries[i].Spec.Query; sq != nil && sq.Stateless() {
		return q.Counted
	}
	return q.Rows
}

// progress is the events the program's sources have covered, all tables
// counted (the least of its sources': the others are ahead), and the
// tuples they fed.
func progress(job *pipeline.Job, prog *pipeline.Program, nc nexmark.Config) (events, tuples uint64) {
	total := nc.TotalProportion()
	first := true
	for _, s := range prog.SQL().Sources {
		t, err := nexmark.ParseTable(s.Name)
		if err != nil || !reads(prog, s.Name) {
			continue
		}
		fed := job.Fed(s.Name)
		tuples += fed
		prop := map[nexmark.Table]int64{nexmark.PersonTable: nc.PersonProportion, nexmark.AuctionTable: nc.AuctionProportion, nexmark.BidTable: nc.BidProportion}[t]
		if prop == 0 {
			continue
		}
		ev := fed * uint64(total) / uint64(prop)
		if first || ev < events {
			events, first = ev, false
		}
	}
	return events, tuples
}

// tablesRead is the Nexmark tables that prog's sources read, in the
// mix's order, and whether they are every table with a share of it.
func tablesRead(prog *pipeline.Program, nc nexmark.Config) (tables []string, whole bool) {
	read := map[nexmark.Table]bool{}
	for _, s := range prog.SQL().Sources {
		if t, err := nexmark.ParseTable(s.Name); err == nil && reads(prog, s.Name) {
			read[t] = true
		}
	}
	whole = true
	for _, tp := range []struct {
		t    nexmark.Table
		prop int64
	}{{nexmark.PersonTable, nc.PersonProportion}, {nexmark.AuctionTable, nc.AuctionProportion}, {nexmark.BidTable, nc.BidProportion}} {
		if read[tp.t] {
			tables = append(tables, tp.t.String())
		} else if tp.prop > 0 {
			whole = false
		}
	}
	return tables, whole
}

// reads reports whether a query of prog reads source name.
func reads(prog *pipeline.Program, name string) bool {
	for _, q := range prog.SQL().Queries {
		if q.Input == name || q.InputRight == name {
			return true
		}
	}
	return false
}

// validateRate is the event rate of a validation run of events: rate, or
// less where those events would span less than MinValidateSpan.
func validateRate(rate, events int64) int64 {
	return max(1, min(rate, events/int64(MinValidateSpan/time.Second)))
}

// validate runs the query over cfg.ValidateEvents events generated inline
// at rate, with Options.Validate; interrupted: ctx was cancelled before
// its end.
func validate(ctx context.Context, cfg Config, rate int64) (ok bool, mismatch string, interrupted bool, err error) {
	vc := cfg
	vc.Source = "nexmark"
	vc.Nexmark.EventRate = rate
	prog, cleanup, err := compile(vc, cfg.ValidateEvents)
	if err != nil {
		return false, "", false, err
	}
	defer cleanup()
	// Not the measured run's engine: its Started (the metrics' registry,
	// the progress lines) would take this one's queries for that one's.
	ec := cfg.Engine
	ec.Started = nil
	job, err := prog.Open(pipeline.Options{Engine: ec, Validate: true, Log: cfg.Log})
	if err != nil {
		return false, "", false, err
	}
	defer job.Close()
	sum, err := job.Run(ctx)
	if err != nil {
		return false, "", false, err
	}
	if sum.Interrupted {
		return false, "", true, nil
	}
	for _, q := range sum.Queries {
		if q.Mismatch != "" {
			return false, q.Name + ": " + q.Mismatch, false, nil
		}
	}
	if out, ok := partitionedOutput(prog); ok {
		nc := vc.Nexmark
		nc.Events = cfg.ValidateEvents
		if mismatch, err := checkPartitions(out, nc); err != nil || mismatch != "" {
			return false, mismatch, false, err
		}
	}
	return *sum.Validated, "", false, nil
}
