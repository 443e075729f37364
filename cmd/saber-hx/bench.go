package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/workloads"
)

// maxBundle bounds the bytes of a replayed bundle; a workload whose period
// does not fit is generated on the fly instead.
const maxBundle = 256 << 20

// benchPart is one operator of a workload: a query or a window join.
type benchPart struct {
	w      *workloads.Workload
	name   string
	q      *query.Query
	j      *query.WindowJoin
	part   workloads.Part
	inputs []*benchInput // the producers feeding it: left (and right)

	// --validate: the output as emitted (rows, and tuples for chaining).
	output reference.Result
	tuples []byte
}

// benchInput is one generated stream fed into one engine stream.
type benchInput struct {
	gen    workloads.Generator
	schema *query.Schema
	bundle []byte // nil: generate on the fly
	rate   uint64
	limit  uint64 // tuples to feed at most (--validate); 0: no bound
	input  []byte // --validate: the bytes fed
}

type benchQuerySummary struct {
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
	// With a GPU kind: the query's tasks that the GPU ran on its CPU
	// fallback.
	GPUFallback *uint64 `json:"gpu_fallback_tasks,omitempty"`
	Validated   bool    `json:"validated"`
	Mismatch    string  `json:"mismatch,omitempty"`
}

type benchSummary struct {
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
	Ingest     string              `json:"ingest"`
	Queries    []benchQuerySummary `json:"queries"`
	Policy     string              `json:"policy"`
	Processors processorsSummary   `json:"processors"`
	// Interrupted: SIGINT or SIGTERM (Signal) stopped the ingestion early;
	// the figures are those of what ran. ValidationInterrupted: a signal
	// stopped --validate before every query was checked.
	Interrupted           bool   `json:"interrupted"`
	Signal                string `json:"signal,omitempty"`
	ValidationInterrupted bool   `json:"validation_interrupted,omitempty"`
}

// benchFlags are bench's own flags (the engine's are engineFlags).
type benchFlags struct {
	list, asJSON, validate bool
	duration               time.Duration
	validateTuples         int
	validateTuplesSet      bool
	bundleSize             int
	ingest                 string
	window                 windowFlags
	agg                    string
	params                 workloads.Params
}

// windowFlags are --window-type, --window-size and --window-slide: each
// given one overrides its field of each workload's own window.
type windowFlags struct {
	typ                       string
	size, slide               int64
	typSet, sizeSet, slideSet bool
}

func (f *windowFlags) given() bool { return f.typSet || f.sizeSet || f.slideSet }

// apply returns the workload's window w with the given fields replaced. A
// tumbling window stays tumbling when only its size is given (the slide
// follows the size); an explicit size or slide must be positive.
func (f *windowFlags) apply(w query.Window) (query.Window, error) {
	if f.typSet {
		switch f.typ {
		case "range":
			w.Type = query.Range
		case "row":
			w.Type = query.Rows
		default:
			return w, usagef("--window-type %q: valid: range, row", f.typ)
		}
	}
	if f.sizeSet && f.size <= 0 {
		return w, usagef("--window-size %d: must be positive", f.size)
	}
	if f.slideSet && f.slide <= 0 {
		return w, usagef("--window-slide %d: must be positive", f.slide)
	}
	tumbling := w.Slide == w.Size
	if f.sizeSet {
		w.Size = f.size
		if tumbling && !f.slideSet {
			w.Slide = f.size
		}
	}
	if f.slideSet {
		w.Slide = f.slide
	}
	if err := w.Validate(); err != nil {
		if f.sizeSet && !f.slideSet && w.Slide > w.Size {
			return w, usagef("%v: the workload's slide is %d; give --window-slide too", err, w.Slide)
		}
		return w, usageError{err}
	}
	return w, nil
}

func (f *benchFlags) register(fs *flag.FlagSet) {
	def := workloads.DefaultParams()
	f.params = def
	p := &f.params
	fs.BoolVar(&f.list, "list", false, "list the workloads and exit")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "ingestion time")
	fs.BoolVar(&f.asJSON, "json", false, "print the summary as one JSON object on the last line of stdout (interrupted: true when SIGINT or SIGTERM stopped the run)")
	fs.BoolVar(&f.validate, "validate", false, "check every emitted window (or output tuple) against the reference evaluator; bounds the input to --validate-tuples per query")
	fs.IntVar(&f.validateTuples, "validate-tuples", 0, "with --validate: tuples per input at most (default: each workload's bound, under which "+
		"the naive reference evaluator takes well under a minute on two cores: "+validateBounds()+")")
	fs.IntVar(&f.bundleSize, "bundle-size", 16<<20, "bytes of pre-generated tuples replayed into each ring (rounded to whole generator periods)")
	fs.StringVar(&f.ingest, "ingest", "producer", ingestUsage+"; an input generated on the fly (no bundle) is always the producer's. "+
		"The default is producer here: on these workloads' 32- and 64-byte tuples the workers' copy measured no gain (docs/workloads.md)")
	fs.StringVar(&f.window.typ, "window-type", "", "range or row (default: the workload's); each window flag replaces one field of the workload's window")
	fs.Int64Var(&f.window.size, "window-size", 0, "window size, > 0: ms for range windows, tuples for row windows (default: the workload's; "+
		"a tumbling workload window stays tumbling)")
	fs.Int64Var(&f.window.slide, "window-slide", 0, "window slide, 0 < slide <= size (default: the workload's)")
	fs.IntVar(&p.Attributes, "attributes", def.Attributes, "proj: projected expressions")
	fs.IntVar(&p.ExprDepth, "expr-depth", def.ExprDepth, "proj: depth of each arithmetic expression")
	fs.IntVar(&p.Predicates, "predicates", def.Predicates, "select: predicates")
	fs.Float64Var(&p.Selectivity, "selectivity", def.Selectivity, "select: fraction of tuples that pass, in [0, 1]")
	fs.StringVar(&f.agg, "agg", "avg", "agg: count|sum|avg|min|max")
	fs.IntVar(&p.Groups, "groups", def.Groups, "groupby: distinct keys")
	fs.IntVar(&p.JoinPredicates, "join-predicates", def.JoinPredicates, "join: predicates per pair (JOIN_r's r)")
	fs.IntVar(&p.TuplesPerMs, "tuples-per-ms", 0, "event-time rate of the generators (default: each workload's)")
}

// validateBounds lists each workload's default --validate-tuples.
func validateBounds() string {
	var parts []string
	for _, w := range workloads.All() {
		parts = append(parts, fmt.Sprintf("%s %d", w.Name, w.ValidateTuples))
	}
	return strings.Join(parts, ", ")
}

// parseBench parses bench's arguments: the workload list may come before
// or after the flags. It returns the list ("" with --list).
func parseBench(fs *flag.FlagSet, f *benchFlags, args []string) (string, error) {
	var names string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		names, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	if names == "" && fs.NArg() > 0 {
		names = fs.Arg(0)
		if err := parseFlags(fs, fs.Args()[1:]); err != nil {
			return "", err
		}
	}
	if fs.NArg() > 0 {
		return "", usagef("bench: unexpected argument %q", fs.Arg(0))
	}
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "window-type":
			f.window.typSet = true
		case "window-size":
			f.window.sizeSet = true
		case "window-slide":
			f.window.slideSet = true
		case "validate-tuples":
			f.validateTuplesSet = true
		}
	})
	if f.list {
		return "", nil
	}
	if names == "" {
		return "", usagef("bench: name a workload (valid: %s), or --list", strings.Join(workloads.Names(), ", "))
	}
	if f.duration <= 0 {
		return "", usagef("duration %v: must be positive", f.duration)
	}
	if f.validateTuplesSet && f.validateTuples < 1 {
		return "", usagef("validate-tuples %d: must be positive", f.validateTuples)
	}
	agg, ok := query.AggFuncs[f.agg]
	if !ok {
		return "", usagef("agg %q: valid: count, sum, avg, min, max", f.agg)
	}
	f.params.Agg = agg
	return names, nil
}

// benchRun is one bench command's parts, inputs and engine.
type benchRun struct {
	parts  []*benchPart
	specs  []engine.Spec
	inputs []*benchInput
	feeds  []func() *engine.Stream // the stream each input feeds, once the engine runs
	eng    *engine.Engine
}

// build turns the workload list into the engine's specs and their inputs.
func (r *benchRun) build(names string, f *benchFlags, cfg engine.Config) error {
	for _, name := range strings.Split(names, ",") {
		w, err := workloads.Lookup(name)
		if err != nil {
			return usageError{err}
		}
		if f.window.given() && !w.Windowed {
			return usagef("--window-type, --window-size and --window-slide do not apply to %s (no window)", name)
		}
		p := f.params
		if f.window.given() {
			if p.Window, err = f.window.apply(w.DefaultWindow); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		wparts := []workloads.Part{{Input: true}}
		if w.Parts != nil {
			if wparts, err = w.Parts(p); err != nil {
				return usageError{err}
			}
		} else if wparts[0].Query, err = w.Build(p); err != nil {
			return usageError{err}
		}
		limit := uint64(0)
		if f.validate {
			limit = uint64(w.ValidateTuples)
			if f.validateTuplesSet {
				limit = uint64(f.validateTuples)
			}
		}
		for _, wp := range wparts {
			if err := r.addPart(w, p, wp, cfg, f, limit); err != nil {
				return err
			}
		}
	}
	return nil
}

// addPart adds one operator of workload w, with its generated inputs.
func (r *benchRun) addPart(w *workloads.Workload, p workloads.Params, wp workloads.Part, cfg engine.Config, f *benchFlags, limit uint64) error {
	bp := &benchPart{w: w, part: wp, q: wp.Query, j: wp.Join}
	sp := engine.Spec{Query: wp.Query, Join: wp.Join, From: wp.From, FromRight: wp.FromRight}
	if wp.Join != nil {
		bp.name = wp.Join.Name
	} else {
		bp.name = wp.Query.Name
		if err := cfg.Validate(wp.Query.Schema.TupleSize); err != nil && wp.From == "" {
			return usageError{fmt.Errorf("%s: %w", w.Name, err)}
		}
	}
	entry := len(r.specs)
	for side, on := range []bool{wp.Input, wp.InputRight} {
		if !on {
			continue
		}
		gp := p
		gp.Seed += uint64(side) // a join's right input is another stream
		in := &benchInput{schema: w.Schema, limit: limit}
		var err error
		if in.gen, err = w.NewGenerator(gp); err != nil {
			return usageError{err}
		}
		in.rate = uint64(p.TuplesPerMs)
		if in.rate == 0 {
			in.rate = uint64(w.DefaultTuplesPerMs)
		}
		in.makeBundle(f.bundleSize)
		bp.inputs = append(bp.inputs, in)
		r.inputs = append(r.inputs, in)
		right := side == 1
		r.feeds = append(r.feeds, func() *engine.Stream {
			s := r.eng.Stream(entry)
			if right {
				return s.Right()
			}
			return s
		})
	}
	if f.validate {
		bp.capture(&sp)
	}
	r.specs = append(r.specs, sp)
	r.parts = append(r.parts, bp)
	return nil
}

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
	var r benchRun
	if err := r.build(names, &f, cfg); err != nil {
		return err
	}
	stopProfile, err := ef.startProfile()
	if err != nil {
		return err
	}
	defer stopProfile()
	closeGPU, err := ef.openGPU(&cfg)
	if err != nil {
		return err
	}
	defer closeInto(&err, closeGPU)
	sig := watchSignals(stderr)
	defer sig.stop()
	if r.eng, err = engine.Start(cfg, r.specs); err != nil {
		return usageError{err}
	}
	stats, seconds, err := r.run(sig.ctx, cfg, f.duration, f.validate, ingestMode, stderr)
	if err != nil {
		return err
	}
	sum := r.summarize(names, stats, seconds, &ef, cfg, ingestMode)
	if f.validate {
		r.validateAll(sig.ctx, &sum, stats, stderr)
	}
	if sig.interrupted() {
		sum.Interrupted = true
		if ie, ok := sig.err().(interruptedError); ok {
			sum.Signal = signalName(ie.sig)
		}
	}
	if err := sum.print(stdout, f.asJSON, f.validate); err != nil {
		return err
	}
	for _, qs := range sum.Queries {
		if qs.Mismatch != "" {
			return fmt.Errorf("%s: output differs from the reference evaluator: %s", qs.Name, qs.Mismatch)
		}
	}
	return sig.err()
}

// run feeds every input until the duration ends (or each input's limit, or
// ctx is cancelled), with a progress line per second on stderr, and closes
// the engine: every task merged.
func (r *benchRun) run(ctx context.Context, cfg engine.Config, duration time.Duration, record bool, ingestMode engine.Ingest, stderr io.Writer) ([]engine.Stats, float64, error) {
	start := time.Now()
	deadline := start.Add(duration)
	var wg sync.WaitGroup
	errs := make([]error, len(r.inputs))
	var stop atomic.Bool
	for i, in := range r.inputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cfg.PinIngestion(); err != nil {
				cfg.Warn(fmt.Sprintf("ingestion not pinned: %v", err))
			}
			errs[i] = in.produce(r.feeds[i](), deadline, &stop, record, ingestMode, cfg.Workers)
		}()
	}
	progressDone, progressExited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(progressExited)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		last := make([]uint64, len(r.parts))
		lastT := time.Duration(0)
		interrupted := ctx.Done()
		for {
			select {
			case <-progressDone:
				return
			case <-interrupted:
				stop.Store(true)
				interrupted = nil // once is enough
			case <-tick.C:
				el := time.Since(start)
				dt := (el - lastT).Seconds()
				lastT = el
				var line []string
				for i, s := range r.eng.Streams() {
					st := s.Stats()
					line = append(line, fmt.Sprintf("%s %.2f M tuples/s, windows %d", st.Query, float64(st.Tuples-last[i])/dt/1e6, st.Windows))
					last[i] = st.Tuples
				}
				fmt.Fprintf(stderr, "bench %6.1fs  %s%s\n", el.Seconds(), strings.Join(line, "; "), split(r.eng.Scheduling()))
			}
		}
	}()
	wg.Wait()
	stats, cerr := r.eng.CloseAll()
	seconds := time.Since(start).Seconds()
	close(progressDone)
	<-progressExited // its last line is written before ours
	for _, err := range append(errs, cerr) {
		if err != nil {
			return nil, 0, err
		}
	}
	return stats, seconds, nil
}

// summarize makes the summary of what ran (validation comes after).
func (r *benchRun) summarize(names string, stats []engine.Stats, seconds float64, ef *engineFlags, cfg engine.Config, ingestMode engine.Ingest) benchSummary {
	var fallback uint64
	for _, st := range stats {
		fallback += st.GPUFallbackTasks
	}
	sum := benchSummary{Workloads: names, Seconds: seconds, Workers: ef.cpuWorkers(), TaskSize: ef.taskSize, BufferSize: ef.bufferSize, Ingest: string(ingestMode),
		Policy: string(cfg.Policy), Processors: summarizeProcessors(r.eng.Scheduling(), r.eng.QueryNames(), cfg, ef, fallback)}
	for i, bp := range r.parts {
		st := stats[i]
		qs := benchQuerySummary{
			Name: bp.name, Tuples: st.Tuples, TuplesPerS: float64(st.Tuples) / seconds,
			MBPerS: float64(st.Bytes) / seconds / 1e6, Windows: st.Windows, Rows: st.Rows,
			Filtered: st.Filtered, Late: st.Late, Counted: st.Counted, Ingest: "chained",
		}
		if cfg.GPU != nil {
			qs.GPUFallback = &st.GPUFallbackTasks
		}
		for _, in := range bp.inputs {
			qs.Ingest = "replay"
			if in.bundle == nil {
				qs.Ingest = "generate"
			}
		}
		if len(bp.inputs) > 0 { // throughput counts the tuples generated, once
			sum.Tuples += st.Tuples
		}
		sum.Windows += st.Windows
		sum.Rows += st.Rows
		sum.Queries = append(sum.Queries, qs)
	}
	sum.TuplesPerS = float64(sum.Tuples) / seconds
	return sum
}

// validateAll checks each part's output against the reference evaluator,
// one part after the other, with a progress line every 5 s on stderr. A
// cancelled ctx (SIGINT, SIGTERM) stops it: the parts not checked by then
// are not validated (validation_interrupted).
func (r *benchRun) validateAll(ctx context.Context, sum *benchSummary, stats []engine.Stats, stderr io.Writer) {
	sum.Validated = true
	start := time.Now()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for i, bp := range r.parts {
		qs := &sum.Queries[i]
		fmt.Fprintf(stderr, "bench validating %s (%d of %d) against the reference evaluator\n", bp.name, i+1, len(r.parts))
		done := make(chan string, 1)
		// The reference evaluator cannot be stopped half-way; on a signal its
		// goroutine is left to finish on its own while the command returns.
		go func() { done <- bp.validate(r.parts, stats[i]) }()
	wait:
		for {
			select {
			case qs.Mismatch = <-done:
				qs.Validated = qs.Mismatch == ""
				break wait
			case <-tick.C:
				fmt.Fprintf(stderr, "bench validating %s (%d of %d): %.0f s\n", bp.name, i+1, len(r.parts), time.Since(start).Seconds())
			case <-ctx.Done():
				sum.Validated, sum.ValidationInterrupted = false, true
				return
			}
		}
		sum.Validated = sum.Validated && qs.Validated
	}
}

// print writes the summary to stdout: one JSON object on a line, or lines
// for a person.
func (sum *benchSummary) print(stdout io.Writer, asJSON, validate bool) error {
	if asJSON {
		return writeJSONLine(stdout, sum)
	}
	fmt.Fprintf(stdout, "bench %s: %d tuples in %.3f s: %.2f M tuples/s (%d workers, task %d B, ingest %s)\n", sum.Workloads, sum.Tuples, sum.Seconds, sum.TuplesPerS/1e6, sum.Workers, sum.TaskSize, sum.Ingest)
	if sum.Interrupted {
		fmt.Fprintf(stdout, "  interrupted by %s: the figures are those of what ran before it\n", sum.Signal)
	}
	if sum.ValidationInterrupted {
		fmt.Fprintf(stdout, "  validation interrupted: the queries without \"validated true\" were not checked\n")
	}
	fmt.Fprint(stdout, gpuLine(&sum.Processors))
	for _, qs := range sum.Queries {
		fmt.Fprintf(stdout, "  %-8s %.2f M tuples/s, %.0f MB/s, windows %d, rows %d, filtered %d, late %d, ingest %s", qs.Name, qs.TuplesPerS/1e6, qs.MBPerS, qs.Windows, qs.Rows, qs.Filtered, qs.Late, qs.Ingest)
		if validate {
			fmt.Fprintf(stdout, ", validated %v", qs.Validated)
		}
		fmt.Fprintln(stdout)
	}
	return nil
}

// makeBundle generates whole generator periods to replay, when they fit.
func (in *benchInput) makeBundle(size int) {
	ts := in.schema.TupleSize
	period := in.gen.Period()
	if period == 0 || period*uint64(ts) > maxBundle {
		return
	}
	n := max(uint64(size)/uint64(ts)/period, 1) * period
	if n*uint64(ts) > maxBundle {
		n = maxBundle / uint64(ts) / period * period
	}
	in.bundle = make([]byte, n*uint64(ts))
	in.gen.Fill(in.bundle, 0)
}

// capture keeps the part's output for --validate.
func (bp *benchPart) capture(sp *engine.Spec) {
	sp.Tuples = func(b []byte) error { bp.tuples = append(bp.tuples, b...); return nil }
	if bp.q == nil || bp.q.Stateless() {
		return
	}
	q := bp.q
	sp.Windows = func(w *engine.Window) error {
		for i := range w.Rows() {
			row := reference.Row{Start: w.Start, End: w.End, Key: string(w.Key(i))}
			for a := range q.Aggregates {
				if w.AggIsFloat(a) {
					row.Values = append(row.Values, reference.Float(w.AggFloat(i, a)))
				} else {
					row.Values = append(row.Values, reference.Int(w.Agg(i, a)))
				}
			}
			bp.output.Rows = append(bp.output.Rows, row)
		}
		return nil
	}
}

// validate compares the part's output with the reference evaluator over
// the part's input: what its producers fed, or what the engine's upstream
// parts output (each upstream is validated on its own). "" when equal.
func (bp *benchPart) validate(parts []*benchPart, st engine.Stats) string {
	inputOf := func(i int, from string) []byte {
		if from == "" {
			return bp.inputs[i].input
		}
		for _, up := range parts {
			if up.name == from {
				return up.tuples
			}
		}
		return nil
	}
	if bp.j != nil {
		want, err := reference.EvaluateJoin(bp.j, inputOf(0, bp.part.From), inputOf(len(bp.inputs)-1, bp.part.FromRight))
		if err != nil {
			return "reference: " + err.Error()
		}
		if string(want.Tuples) != string(bp.tuples) {
			return fmt.Sprintf("join output differs: %d pair bytes, want %d", len(bp.tuples), len(want.Tuples))
		}
		if want.Counts.Late != st.Late || want.Counts.Tuples != st.Tuples {
			return fmt.Sprintf("join counts: %d tuples, %d late; want %d, %d", st.Tuples, st.Late, want.Counts.Tuples, want.Counts.Late)
		}
		return ""
	}
	want, err := reference.Evaluate(bp.q, inputOf(0, bp.part.From))
	if err != nil {
		return "reference: " + err.Error()
	}
	got := bp.output
	if bp.q.Stateless() {
		got.Tuples = bp.tuples
	}
	got.Counts = reference.Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
	// Float sums depend on the order of additions, which per-pane partial
	// aggregates change: floats compare within a relative 1e-6.
	return reference.Diff(bp.q, want, &got, 1e-6)
}

// produce feeds the stream until the deadline (or in.limit tuples, if set):
// whole tasks copied from the bundle with event times advanced on every
// pass, or generated in place. With a bundle, ingest says who copies:
// tasks left to the workers are copied by the worker that runs them
// (Stream.SetFill), and the producer only publishes their place.
func (in *benchInput) produce(s *engine.Stream, deadline time.Time, stop *atomic.Bool, record bool, ingest engine.Ingest, workers int) error {
	ts, limit := uint64(in.schema.TupleSize), in.limit
	if in.bundle == nil {
		ingest = engine.IngestProducer // a generator need not be safe for concurrent use
	}
	if ingest != engine.IngestProducer {
		s.SetFill(func(dst []byte, pos uint64) { in.fill(dst, pos/ts) })
	}
	var k uint64
	for !stop.Load() && time.Now().Before(deadline) && (limit == 0 || k < limit) {
		b, err := s.Buffer()
		if err != nil {
			return err
		}
		if limit > 0 {
			b = b[:min(uint64(len(b)), (limit-k)*ts)]
		}
		// Only the last task can be trimmed by limit: every other Buffer is
		// a whole task, so no task mixes the two kinds of commit.
		leave := ingest.LeaveToWorkers(s, workers)
		if !leave {
			in.fill(b, k)
		}
		if record {
			if leave {
				n := len(in.input)
				in.input = append(in.input, make([]byte, len(b))...)
				in.fill(in.input[n:], k)
			} else {
				in.input = append(in.input, b...)
			}
		}
		k += uint64(len(b)) / ts
		if leave {
			err = s.CommitUnfilled(len(b))
		} else {
			err = s.Commit(len(b))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// fill writes the input's tuples from index k on into b (whole tuples):
// from the bundle, event times advanced by a period's span on every pass,
// or from the generator where there is no bundle.
func (in *benchInput) fill(b []byte, k uint64) {
	if in.bundle == nil {
		in.gen.Fill(b, k)
		return
	}
	ts := in.schema.TupleSize
	n := uint64(len(in.bundle) / ts)
	for off := 0; off < len(b); {
		pos := k % n
		c := copy(b[off:], in.bundle[pos*uint64(ts):])
		if shift := int64(k/n) * int64(n/in.rate); shift != 0 {
			for o := off; o < off+c; o += ts {
				binary.LittleEndian.PutUint64(b[o:], binary.LittleEndian.Uint64(b[o:])+uint64(shift))
			}
		}
		off += c
		k += uint64(c / ts)
	}
}
