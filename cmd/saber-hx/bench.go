package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/workloads"
)

// benchPart is one operator of a workload: a query or a window join.
type benchPart struct {
	w      *workloads.Workload
	name   string
	q      *query.Query
	j      *query.WindowJoin
	spec   engine.Spec   // its upstreams (Upstream, UpstreamRight), by spec index
	inputs []*benchInput // the producers feeding it: left (and right)

	// --validate: the output as emitted (rows, and tuples for chaining).
	output reference.Result
	tuples []byte
}

// benchRun is one bench command's parts, inputs and engine.
type benchRun struct {
	parts    []*benchPart
	specs    []engine.Spec
	inputs   []*benchInput
	feeds    []func() *engine.Stream // the stream each input feeds, once the engine runs
	eng      *engine.Engine
	gc       gcSample // the GC cycles and heap allocations of the measured interval
	warmedUp bool     // the measured interval began after a warm-up
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
		base := len(r.specs)
		for _, wp := range wparts {
			if err := r.addPart(w, p, wp, base, cfg, f, limit); err != nil {
				return err
			}
		}
	}
	return nil
}

// addPart adds one operator of workload w, with its generated inputs.
// base is the spec index of the workload's first part: its parts' upstream
// references count from it.
func (r *benchRun) addPart(w *workloads.Workload, p workloads.Params, wp workloads.Part, base int, cfg engine.Config, f *benchFlags, limit uint64) error {
	bp := &benchPart{w: w, q: wp.Query, j: wp.Join}
	sp := engine.Spec{Query: wp.Query, Join: wp.Join, Upstream: offset(wp.Upstream, base), UpstreamRight: offset(wp.UpstreamRight, base)}
	bp.spec = sp
	if wp.Join != nil {
		bp.name = wp.Join.Name
	} else {
		bp.name = wp.Query.Name
		if err := cfg.Validate(wp.Query.Schema.TupleSize); err != nil && sp.Upstream == (engine.Ref{}) {
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
		if err := in.makeBundle(f.bundleSize); err != nil {
			return err
		}
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

// offset makes a reference to a workload's part i one to spec base+i.
func offset(ref engine.Ref, base int) engine.Ref {
	if i, ok := ref.Spec(); ok {
		return engine.Output(base + i)
	}
	return ref
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
	sig, end, err := ef.begin(&cfg, stderr)
	if err != nil {
		return err
	}
	defer closeInto(&err, end)
	if r.eng, err = engine.Start(cfg, r.specs); err != nil {
		return usageError{err}
	}
	stats, measured, seconds, err := r.run(sig.ctx, cfg, f.warmup, f.duration, f.validate, ingestMode, stderr)
	if err != nil {
		return err
	}
	sum := r.summarize(names, measured, seconds, &ef, cfg, ingestMode)
	if r.warmedUp {
		w, total := f.warmup.Seconds(), uint64(0)
		for i, bp := range r.parts {
			if len(bp.inputs) > 0 {
				total += stats[i].Tuples
			}
		}
		sum.WarmupS, sum.TotalTuples = &w, &total
	}
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

// run feeds every input until the warm-up and the duration end (or each
// input's limit, or ctx is cancelled), with a progress line per second on
// stderr, and closes the engine: every task merged. It returns the
// queries' stats over the whole run and over the measured interval (from
// the end of the warm-up: the whole run where there is none, or where the
// input ended first), and the measured interval's seconds.
func (r *benchRun) run(ctx context.Context, cfg engine.Config, warmup, duration time.Duration, record bool, ingestMode engine.Ingest, stderr io.Writer) (whole, measured []engine.Stats, seconds float64, err error) {
	gcFrom := readGC()
	start := time.Now()
	deadline := start.Add(warmup + duration)
	produced := make([]<-chan error, len(r.inputs))
	var stop atomic.Bool
	for i, in := range r.inputs {
		produced[i] = r.eng.Produce(func() error {
			return in.produce(r.feeds[i](), deadline, &stop, record, ingestMode, cfg.Workers)
		})
	}
	stopOnCancel := context.AfterFunc(ctx, func() { stop.Store(true) })
	defer stopOnCancel()
	stopProgress := startProgress(stderr, "bench", r.eng, start)
	warm := r.startWarmup(warmup)
	errs := make([]error, len(r.inputs))
	for i, done := range produced {
		errs[i] = <-done
	}
	at, warmStats, warmGC := warm()
	whole, cerr := r.eng.CloseAll()
	end := time.Now()
	stopProgress() // its last line is written before ours
	for _, err := range append(errs, cerr) {
		if err != nil {
			return nil, nil, 0, err
		}
	}
	r.warmedUp = warmStats != nil
	if !r.warmedUp {
		r.gc = readGC().since(gcFrom)
		return whole, whole, end.Sub(start).Seconds(), nil
	}
	r.gc = readGC().since(warmGC)
	measured = make([]engine.Stats, len(whole))
	for i := range whole {
		measured[i] = statsSince(whole[i], warmStats[i])
	}
	return whole, measured, end.Sub(at).Seconds(), nil
}

// startWarmup snapshots every query's stats and the GC counters when the
// warm-up ends; the returned func stops the timer and returns the
// snapshot, with nil stats where the warm-up had not ended (none, or the
// inputs ended first).
func (r *benchRun) startWarmup(warmup time.Duration) func() (time.Time, []engine.Stats, gcSample) {
	if warmup <= 0 {
		return func() (time.Time, []engine.Stats, gcSample) { return time.Time{}, nil, gcSample{} }
	}
	var (
		at    time.Time
		stats []engine.Stats
		gc    gcSample
	)
	done := make(chan struct{})
	t := time.AfterFunc(warmup, func() {
		defer close(done)
		gc = readGC()
		stats = make([]engine.Stats, len(r.parts))
		for i := range stats {
			stats[i] = r.eng.Stream(i).Stats() // consistent: the counters add up
		}
		at = time.Now()
	})
	return func() (time.Time, []engine.Stats, gcSample) {
		if t.Stop() {
			return time.Time{}, nil, gcSample{}
		}
		<-done
		return at, stats, gc
	}
}

// statsSince is what a query counted from the snapshot from to end.
func statsSince(end, from engine.Stats) engine.Stats {
	m := end
	m.Tasks -= from.Tasks
	m.Bytes -= from.Bytes
	m.Tuples -= from.Tuples
	m.Filtered -= from.Filtered
	m.Unmatched -= from.Unmatched
	m.Late -= from.Late
	m.Counted -= from.Counted
	m.Windows -= from.Windows
	m.Rows -= from.Rows
	m.GPUFallbackTasks -= from.GPUFallbackTasks
	return m
}
