package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
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
}

func runBench(args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlagSet("bench", "saber-hx bench WORKLOAD[,WORKLOAD...] [flags]   (saber-hx bench --list)", stderr)
	var ef engineFlags
	ef.register(fs)
	def := workloads.DefaultParams()
	list := fs.Bool("list", false, "list the workloads and exit")
	duration := fs.Duration("duration", 10*time.Second, "ingestion time")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object on the last line of stdout")
	validate := fs.Bool("validate", false, "check every emitted window (or output tuple) against the reference evaluator; bounds the input to --validate-tuples per query")
	validateTuples := fs.Int("validate-tuples", 1_000_000, "with --validate: tuples per query at most")
	bundleSize := fs.Int("bundle-size", 16<<20, "bytes of pre-generated tuples replayed into each ring (rounded to whole generator periods)")
	ingestFlag := fs.String("ingest", "producer", ingestUsage+"; an input generated on the fly (no bundle) is always the producer's. "+
		"The default is producer here: on these workloads' 32- and 64-byte tuples the workers' copy measured no gain (docs/workloads.md)")
	windowType := fs.String("window-type", "", "range or row (default: the workload's window)")
	windowSize := fs.Int64("window-size", 0, "window size: ms for range windows, tuples for row windows (default: the workload's)")
	windowSlide := fs.Int64("window-slide", 0, "window slide, 0 < slide <= size (default: the size, or the workload's slide)")
	attributes := fs.Int("attributes", def.Attributes, "proj: projected expressions")
	exprDepth := fs.Int("expr-depth", def.ExprDepth, "proj: depth of each arithmetic expression")
	predicates := fs.Int("predicates", def.Predicates, "select: predicates")
	selectivity := fs.Float64("selectivity", def.Selectivity, "select: fraction of tuples that pass, in [0, 1]")
	agg := fs.String("agg", "avg", "agg: count|sum|avg|min|max")
	groups := fs.Int("groups", def.Groups, "groupby: distinct keys")
	joinPredicates := fs.Int("join-predicates", def.JoinPredicates, "join: predicates per pair (JOIN_r's r)")
	rate := fs.Int("tuples-per-ms", 0, "event-time rate of the generators (default: each workload's)")
	// The workload list may come before or after the flags.
	var names string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		names, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return usageError{err}
	}
	if names == "" && fs.NArg() > 0 {
		names = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return usageError{err}
		}
	}
	if fs.NArg() > 0 {
		return usagef("bench: unexpected argument %q", fs.Arg(0))
	}
	if *list {
		for _, w := range workloads.All() {
			fmt.Fprintf(stdout, "%-8s %s\n", w.Name, w.Description)
		}
		return nil
	}
	if names == "" {
		return usagef("bench: name a workload (valid: %s), or --list", strings.Join(workloads.Names(), ", "))
	}
	if *duration <= 0 {
		return usagef("duration %v: must be positive", *duration)
	}
	if *validateTuples < 1 {
		return usagef("validate-tuples %d: must be positive", *validateTuples)
	}
	ingestMode, err := engine.ParseIngest(*ingestFlag)
	if err != nil {
		return usageError{err}
	}
	p := def
	p.Attributes, p.ExprDepth, p.Predicates, p.Selectivity, p.Groups, p.TuplesPerMs = *attributes, *exprDepth, *predicates, *selectivity, *groups, *rate
	p.JoinPredicates = *joinPredicates
	f, ok := query.AggFuncs[*agg]
	if !ok {
		return usagef("agg %q: valid: count, sum, avg, min, max", *agg)
	}
	p.Agg = f
	windowFlags := *windowType != "" || *windowSize != 0 || *windowSlide != 0
	if windowFlags {
		w := query.Window{Type: query.Range, Size: *windowSize, Slide: *windowSlide}
		switch *windowType {
		case "", "range":
		case "row":
			w.Type = query.Rows
		default:
			return usagef("window-type %q: valid: range, row", *windowType)
		}
		if w.Slide == 0 {
			w.Slide = w.Size
		}
		if err := w.Validate(); err != nil {
			return usageError{err}
		}
		p.Window = w
	}

	cfg, err := ef.config(stderr)
	if err != nil {
		return err
	}
	ingestMode = ingestMode.Resolve(cfg)
	var parts []*benchPart
	var specs []engine.Spec
	var inputs []*benchInput
	var feeds []func() *engine.Stream // the stream each input feeds, once the engine runs
	var eng *engine.Engine
	for _, name := range strings.Split(names, ",") {
		w, err := workloads.Lookup(name)
		if err != nil {
			return usageError{err}
		}
		if windowFlags && !w.Windowed {
			return usagef("--window-type, --window-size and --window-slide do not apply to %s (no window)", name)
		}
		wparts := []workloads.Part{{Input: true}}
		if w.Parts != nil {
			if wparts, err = w.Parts(p); err != nil {
				return usageError{err}
			}
		} else if wparts[0].Query, err = w.Build(p); err != nil {
			return usageError{err}
		}
		for _, wp := range wparts {
			bp := &benchPart{w: w, part: wp, q: wp.Query, j: wp.Join}
			sp := engine.Spec{Query: wp.Query, Join: wp.Join, From: wp.From, FromRight: wp.FromRight}
			if wp.Join != nil {
				bp.name = wp.Join.Name
			} else {
				bp.name = wp.Query.Name
				if err := cfg.Validate(wp.Query.Schema.TupleSize); err != nil && wp.From == "" {
					return usageError{fmt.Errorf("%s: %w", name, err)}
				}
			}
			entry := len(specs)
			for side, on := range []bool{wp.Input, wp.InputRight} {
				if !on {
					continue
				}
				gp := p
				gp.Seed += uint64(side) // a join's right input is another stream
				in := &benchInput{schema: w.Schema}
				if in.gen, err = w.NewGenerator(gp); err != nil {
					return usageError{err}
				}
				in.rate = uint64(p.TuplesPerMs)
				if in.rate == 0 {
					in.rate = uint64(w.DefaultTuplesPerMs)
				}
				in.makeBundle(*bundleSize)
				bp.inputs = append(bp.inputs, in)
				inputs = append(inputs, in)
				right := side == 1
				feeds = append(feeds, func() *engine.Stream {
					s := eng.Stream(entry)
					if right {
						return s.Right()
					}
					return s
				})
			}
			if *validate {
				bp.capture(&sp)
			}
			specs = append(specs, sp)
			parts = append(parts, bp)
		}
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
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	eng, err = engine.Start(cfg, specs)
	if err != nil {
		return usageError{err}
	}
	start := time.Now()
	deadline := start.Add(*duration)
	limit := uint64(0)
	if *validate {
		limit = uint64(*validateTuples)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(inputs))
	var stop atomic.Bool
	for i, in := range inputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cfg.PinIngestion(); err != nil {
				cfg.Warn(fmt.Sprintf("ingestion not pinned: %v", err))
			}
			errs[i] = in.produce(feeds[i](), deadline, limit, &stop, *validate, ingestMode, cfg.Workers)
		}()
	}
	progressDone, progressExited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(progressExited)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		last := make([]uint64, len(parts))
		interrupted := ctx.Done()
		for {
			select {
			case <-progressDone:
				return
			case <-interrupted:
				stop.Store(true)
				interrupted = nil // once is enough
			case <-tick.C:
				var line []string
				for i, s := range eng.Streams() {
					st := s.Stats()
					line = append(line, fmt.Sprintf("%s %.2f M tuples/s, windows %d", st.Query, float64(st.Tuples-last[i])/1e6, st.Windows))
					last[i] = st.Tuples
				}
				fmt.Fprintf(stderr, "bench %5.0fs  %s%s\n", time.Since(start).Seconds(), strings.Join(line, "; "), split(eng.Scheduling()))
			}
		}
	}()
	wg.Wait()
	stats, cerr := eng.CloseAll()
	seconds := time.Since(start).Seconds()
	close(progressDone)
	<-progressExited // its last line is written before ours
	for _, err := range append(errs, cerr) {
		if err != nil {
			return err
		}
	}

	var fallback uint64
	for _, st := range stats {
		fallback += st.GPUFallbackTasks
	}
	sum := benchSummary{Workloads: names, Seconds: seconds, Workers: ef.cpuWorkers(), TaskSize: ef.taskSize, BufferSize: ef.bufferSize, Ingest: string(ingestMode), Validated: *validate,
		Policy: string(cfg.Policy), Processors: summarizeProcessors(eng.Scheduling(), eng.QueryNames(), cfg, &ef, fallback)}
	for i, bp := range parts {
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
		if *validate {
			qs.Mismatch = bp.validate(parts, st)
			qs.Validated = qs.Mismatch == ""
			sum.Validated = sum.Validated && qs.Validated
		}
		if len(bp.inputs) > 0 { // throughput counts the tuples generated, once
			sum.Tuples += st.Tuples
		}
		sum.Windows += st.Windows
		sum.Rows += st.Rows
		sum.Queries = append(sum.Queries, qs)
	}
	sum.TuplesPerS = float64(sum.Tuples) / seconds
	if *asJSON {
		b, err := json.Marshal(sum)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		fmt.Fprintf(stdout, "bench %s: %d tuples in %.3f s: %.2f M tuples/s (%d workers, task %d B, ingest %s)\n", names, sum.Tuples, seconds, sum.TuplesPerS/1e6, sum.Workers, ef.taskSize, sum.Ingest)
		fmt.Fprint(stdout, gpuLine(&sum.Processors))
		for _, qs := range sum.Queries {
			fmt.Fprintf(stdout, "  %-8s %.2f M tuples/s, %.0f MB/s, windows %d, rows %d, filtered %d, late %d, ingest %s", qs.Name, qs.TuplesPerS/1e6, qs.MBPerS, qs.Windows, qs.Rows, qs.Filtered, qs.Late, qs.Ingest)
			if *validate {
				fmt.Fprintf(stdout, ", validated %v", qs.Validated)
			}
			fmt.Fprintln(stdout)
		}
	}
	for _, qs := range sum.Queries {
		if qs.Mismatch != "" {
			return fmt.Errorf("%s: output differs from the reference evaluator: %s", qs.Name, qs.Mismatch)
		}
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

// produce feeds the stream until the deadline (or limit tuples, if set):
// whole tasks copied from the bundle with event times advanced on every
// pass, or generated in place. With a bundle, ingest says who copies:
// tasks left to the workers are copied by the worker that runs them
// (Stream.SetFill), and the producer only publishes their place.
func (in *benchInput) produce(s *engine.Stream, deadline time.Time, limit uint64, stop *atomic.Bool, record bool, ingest engine.Ingest, workers int) error {
	ts := uint64(in.schema.TupleSize)
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
