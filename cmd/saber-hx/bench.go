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

type benchQuery struct {
	w      *workloads.Workload
	q      *query.Query
	gen    workloads.Generator
	bundle []byte // nil: generate on the fly
	rate   uint64

	// --validate: the input as fed, and the output as emitted.
	input  []byte
	output reference.Result
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
	Validated  bool    `json:"validated"`
	Mismatch   string  `json:"mismatch,omitempty"`
}

type benchSummary struct {
	Workloads  string              `json:"workloads"`
	Tuples     uint64              `json:"tuples"`
	Seconds    float64             `json:"seconds"`
	TuplesPerS float64             `json:"tuples_per_s"`
	Windows    uint64              `json:"windows"`
	Rows       uint64              `json:"rows"`
	Validated  bool                `json:"validated"`
	Workers    int                 `json:"workers"`
	TaskSize   int                 `json:"task_size"`
	BufferSize int                 `json:"buffer_size"`
	Queries    []benchQuerySummary `json:"queries"`
}

func runBench(args []string, stdout, stderr io.Writer) error {
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
	windowType := fs.String("window-type", "", "range or row (default: the workload's window)")
	windowSize := fs.Int64("window-size", 0, "window size: ms for range windows, tuples for row windows (default: the workload's)")
	windowSlide := fs.Int64("window-slide", 0, "window slide, 0 < slide <= size (default: the size, or the workload's slide)")
	attributes := fs.Int("attributes", def.Attributes, "proj: projected expressions")
	exprDepth := fs.Int("expr-depth", def.ExprDepth, "proj: depth of each arithmetic expression")
	predicates := fs.Int("predicates", def.Predicates, "select: predicates")
	selectivity := fs.Float64("selectivity", def.Selectivity, "select: fraction of tuples that pass, in [0, 1]")
	agg := fs.String("agg", "avg", "agg: count|sum|avg|min|max")
	groups := fs.Int("groups", def.Groups, "groupby: distinct keys")
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
	p := def
	p.Attributes, p.ExprDepth, p.Predicates, p.Selectivity, p.Groups, p.TuplesPerMs = *attributes, *exprDepth, *predicates, *selectivity, *groups, *rate
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

	cfg := ef.config(stderr)
	var bqs []*benchQuery
	var specs []engine.Spec
	for _, name := range strings.Split(names, ",") {
		w, err := workloads.Lookup(name)
		if err != nil {
			return usageError{err}
		}
		if windowFlags && !w.Windowed {
			return usagef("--window-type, --window-size and --window-slide do not apply to %s (no window)", name)
		}
		bq := &benchQuery{w: w}
		if bq.q, err = w.Build(p); err != nil {
			return usageError{err}
		}
		if bq.gen, err = w.NewGenerator(p); err != nil {
			return usageError{err}
		}
		bq.rate = uint64(p.TuplesPerMs)
		if bq.rate == 0 {
			bq.rate = uint64(w.DefaultTuplesPerMs)
		}
		if err := cfg.Validate(bq.q.Schema.TupleSize); err != nil {
			return usageError{fmt.Errorf("%s: %w", name, err)}
		}
		bq.makeBundle(*bundleSize)
		specs = append(specs, bq.spec(*validate))
		bqs = append(bqs, bq)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	eng, err := engine.Start(cfg, specs)
	if err != nil {
		return err
	}
	start := time.Now()
	deadline := start.Add(*duration)
	limit := uint64(0)
	if *validate {
		limit = uint64(*validateTuples)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(bqs))
	var stop atomic.Bool
	for i, bq := range bqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = bq.produce(eng.Stream(i), deadline, limit, &stop, *validate)
		}()
	}
	progressDone := make(chan struct{})
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		last := make([]uint64, len(bqs))
		for {
			select {
			case <-progressDone:
				return
			case <-ctx.Done():
				stop.Store(true)
			case <-tick.C:
				var parts []string
				for i, s := range eng.Streams() {
					st := s.Stats()
					parts = append(parts, fmt.Sprintf("%s %.2f M tuples/s, windows %d", st.Query, float64(st.Tuples-last[i])/1e6, st.Windows))
					last[i] = st.Tuples
				}
				fmt.Fprintf(stderr, "bench %5.0fs  %s\n", time.Since(start).Seconds(), strings.Join(parts, "; "))
			}
		}
	}()
	wg.Wait()
	stats, cerr := eng.CloseAll()
	seconds := time.Since(start).Seconds()
	close(progressDone)
	for _, err := range append(errs, cerr) {
		if err != nil {
			return err
		}
	}

	sum := benchSummary{Workloads: names, Seconds: seconds, Workers: ef.workers, TaskSize: ef.taskSize, BufferSize: ef.bufferSize, Validated: *validate}
	for i, bq := range bqs {
		st := stats[i]
		qs := benchQuerySummary{
			Name: bq.w.Name, Tuples: st.Tuples, TuplesPerS: float64(st.Tuples) / seconds,
			MBPerS: float64(st.Bytes) / seconds / 1e6, Windows: st.Windows, Rows: st.Rows,
			Filtered: st.Filtered, Late: st.Late, Counted: st.Counted, Ingest: "replay",
		}
		if bq.bundle == nil {
			qs.Ingest = "generate"
		}
		if *validate {
			bq.output.Counts = reference.Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
			want, err := reference.Evaluate(bq.q, bq.input)
			if err != nil {
				return fmt.Errorf("%s: reference: %w", bq.w.Name, err)
			}
			qs.Mismatch = reference.Diff(bq.q, want, &bq.output, 1e-6)
			qs.Validated = qs.Mismatch == ""
			sum.Validated = sum.Validated && qs.Validated
		}
		sum.Tuples += st.Tuples
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
		fmt.Fprintf(stdout, "bench %s: %d tuples in %.3f s: %.2f M tuples/s (%d workers, task %d B)\n", names, sum.Tuples, seconds, sum.TuplesPerS/1e6, ef.workers, ef.taskSize)
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
func (bq *benchQuery) makeBundle(size int) {
	ts := bq.q.Schema.TupleSize
	period := bq.gen.Period()
	if period == 0 || period*uint64(ts) > maxBundle {
		return
	}
	n := max(uint64(size)/uint64(ts)/period, 1) * period
	if n*uint64(ts) > maxBundle {
		n = maxBundle / uint64(ts) / period * period
	}
	bq.bundle = make([]byte, n*uint64(ts))
	bq.gen.Fill(bq.bundle, 0)
}

// spec is the engine spec of the query; with validate, its output is kept.
func (bq *benchQuery) spec(validate bool) engine.Spec {
	sp := engine.Spec{Query: bq.q}
	if !validate {
		return sp
	}
	if bq.q.Stateless() {
		sp.Tuples = func(b []byte) error { bq.output.Tuples = append(bq.output.Tuples, b...); return nil }
		return sp
	}
	sp.Windows = func(w *engine.Window) error {
		for i := range w.Rows() {
			row := reference.Row{Start: w.Start, End: w.End, Key: string(w.Key(i))}
			for a := range bq.q.Aggregates {
				if w.AggIsFloat(a) {
					row.Values = append(row.Values, reference.Float(w.AggFloat(i, a)))
				} else {
					row.Values = append(row.Values, reference.Int(w.Agg(i, a)))
				}
			}
			bq.output.Rows = append(bq.output.Rows, row)
		}
		return nil
	}
	return sp
}

// produce feeds the stream until the deadline (or limit tuples, if set):
// whole tasks copied from the bundle with event times advanced on every
// pass, or generated in place.
func (bq *benchQuery) produce(s *engine.Stream, deadline time.Time, limit uint64, stop *atomic.Bool, record bool) error {
	ts := bq.q.Schema.TupleSize
	var k uint64
	n := uint64(len(bq.bundle) / ts)
	for !stop.Load() && time.Now().Before(deadline) && (limit == 0 || k < limit) {
		b, err := s.Buffer()
		if err != nil {
			return err
		}
		if limit > 0 {
			b = b[:min(uint64(len(b)), (limit-k)*uint64(ts))]
		}
		if bq.bundle == nil {
			bq.gen.Fill(b, k)
			k += uint64(len(b) / ts)
		} else {
			for off := 0; off < len(b); {
				pos := k % n
				c := copy(b[off:], bq.bundle[pos*uint64(ts):])
				if shift := int64(k/n) * int64(n/bq.rate); shift != 0 {
					for o := off; o < off+c; o += ts {
						binary.LittleEndian.PutUint64(b[o:], binary.LittleEndian.Uint64(b[o:])+uint64(shift))
					}
				}
				off += c
				k += uint64(c / ts)
			}
		}
		if record {
			bq.input = append(bq.input, b...)
		}
		if err := s.Commit(len(b)); err != nil {
			return err
		}
	}
	return nil
}
