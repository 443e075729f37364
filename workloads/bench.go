package workloads

// The runtime of saber-hx bench: workloads built into the engine's specs
// with their generated inputs (bench_input.go), run for a warm-up and a
// measured interval, and their output checked against the reference
// evaluator (bench_validate.go).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/ysb"
)

// ErrUsage marks an error the caller can mend: an unknown workload, a bad
// parameter or window override, a configuration the workloads cannot run
// on. errors.Is(err, ErrUsage) tells it from a run that failed (the command
// line's exit status 2 against 1).
var ErrUsage = errors.New("workloads: bad usage")

// usageError marks err as ErrUsage without changing its text.
type usageError struct{ err error }

func (e usageError) Error() string        { return e.err.Error() }
func (e usageError) Unwrap() error        { return e.err }
func (e usageError) Is(target error) bool { return target == ErrUsage }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// BenchConfig is a benchmark run of workloads on one engine, as saber-hx
// bench runs them.
type BenchConfig struct {
	// Workloads are the names of the workloads run at once (Lookup), on the
	// same engine: each of their parts is a spec of its own, in order.
	Workloads []string
	// Params parameterise every workload. Where Window is given, each
	// workload's Params.Window is its DefaultWindow with Window's fields
	// replaced.
	Params Params
	Window WindowOverride
	// Engine is the engine's configuration as NewBench checks each
	// input's tuple size against it (task and buffer sizes); Run starts
	// the engine on the configuration it is given.
	Engine engine.Config
	// Ingest says who copies a replayed bundle into the engine
	// (engine.IngestAuto: as Ingest.Resolve says for Engine); an input
	// generated on the fly is always the producer's.
	Ingest engine.Ingest
	// BundleSize is the bytes of pre-generated tuples replayed into each
	// input, rounded down to whole generator periods (one at the least),
	// at most MaxBundleSize (above: MaxBundleSize); negative is refused. A
	// workload whose period does not fit is generated on the fly.
	BundleSize int
	// Warmup is the ingestion time before the measured interval (not
	// negative), Duration the measured interval's (positive).
	Warmup, Duration time.Duration
	// Validate: every part's output is recorded and checked against the
	// reference evaluator after the run, and each input is bounded to
	// ValidateTuples tuples (0: each workload's Workload.ValidateTuples).
	Validate       bool
	ValidateTuples int
	// Given are the settings given explicitly, by saber-hx bench's flag
	// names: NewBench refuses a 0 given for validate-tuples, validate-tuples
	// without Validate, and a workload option (Workload.Options) that no
	// workload of the run reads: each would do nothing.
	Given []string
	// Progress, if set, is called once the inputs are being fed, with the
	// engine and the run's start; the stop it returns is called once the
	// engine has closed (before any validation).
	Progress func(eng *engine.Engine, start time.Time) (stop func())
	// Log, if set, receives validation's progress lines: one as each part's
	// check starts, one every 5 s while it runs.
	Log io.Writer
}

// PartInput says where a part's input comes from.
type PartInput string

const (
	InputReplay   PartInput = "replay"   // a replayed bundle of generated tuples
	InputGenerate PartInput = "generate" // generated on the fly (no bundle)
	InputChained  PartInput = "chained"  // the output of earlier parts
)

// PartResult is what one part of a workload (a query or a window join)
// counted, and its validation.
type PartResult struct {
	Name  string
	Input PartInput
	// Whole is the part's stats over the whole run, Measured over the
	// measured interval (Whole where there was no warm-up).
	Whole, Measured engine.Stats
	// Validated: the part's output matched the reference evaluator's;
	// Mismatch says how it differs ("" when it matched or was not
	// checked).
	Validated bool
	Mismatch  string
}

// BenchResult is what a benchmark run measured.
type BenchResult struct {
	Parts []PartResult // one per spec, in order
	// Seconds is the measured interval: from the end of the warm-up (or
	// the start, where there was none or the inputs ended within it) to
	// the engine's close.
	Seconds float64
	// WarmedUp: the measured interval began after a warm-up.
	WarmedUp bool
	// TotalTuples is the tuples of the whole run's inputs, warm-up
	// included (those of the parts fed by inputs, not the chained ones).
	TotalTuples uint64
	// GCCycles and HeapAllocBytes are the garbage collector's cycles and
	// the bytes allocated on the heap in the measured interval (with
	// Validate, the recorded output included).
	GCCycles, HeapAllocBytes uint64
	// With Validate: Validated when every part matched;
	// ValidationInterrupted when the context was cancelled before every
	// part was checked (those not checked are not Validated).
	Validated, ValidationInterrupted bool
}

// Bench is a benchmark run of workloads: their parts as the engine's
// specs, and their generated inputs. Run it once.
type Bench struct {
	cfg      BenchConfig
	parts    []*benchPart
	specs    []engine.Spec
	inputs   []*benchInput
	feeds    []func() *engine.Stream // the stream each input feeds, once the engine runs
	eng      *engine.Engine
	gc       gcSample // the GC cycles and heap allocations of the measured interval
	warmedUp bool     // the measured interval began after a warm-up
}

// benchPart is one operator of a workload: a query or a window join.
type benchPart struct {
	w      *Workload
	name   string
	q      *query.Query
	j      *query.WindowJoin
	spec   engine.Spec   // its upstreams (Upstream, UpstreamRight), by spec index
	inputs []*benchInput // the producers feeding it: left (and right)

	// Validate: the output as emitted (rows, and tuples for chaining).
	output reference.Result
	tuples []byte
}

// NewBench builds cfg's workloads into the engine's specs and generates
// their inputs' bundles. Its errors of cfg (an unknown workload, a bad
// parameter or window override, a task size that does not fit a tuple)
// are ErrUsage.
func NewBench(cfg BenchConfig) (*Bench, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.Ingest = cfg.Ingest.Resolve(cfg.Engine)
	b := &Bench{cfg: cfg}
	for _, name := range cfg.Workloads {
		w, err := Lookup(name)
		if err != nil {
			return nil, usageError{err}
		}
		if cfg.Window.Given() && !w.Windowed {
			return nil, usagef("--window-type, --window-size and --window-slide do not apply to %s (no window)", name)
		}
		p := cfg.Params
		if cfg.Window.Given() {
			if p.Window, err = cfg.Window.Apply(w.DefaultWindow); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
		wparts := []Part{{Input: true}}
		if w.Parts != nil {
			if wparts, err = w.Parts(p); err != nil {
				return nil, usageError{err}
			}
		} else if wparts[0].Query, err = w.Build(p); err != nil {
			return nil, usageError{err}
		}
		limit := uint64(0)
		if cfg.Validate {
			limit = uint64(w.ValidateTuples)
			if cfg.ValidateTuples > 0 {
				limit = uint64(cfg.ValidateTuples)
			}
		}
		base := len(b.specs)
		for _, wp := range wparts {
			if err := b.addPart(w, p, wp, base, limit); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// check refuses the settings of cfg that no run can have, and those given
// (cfg.Given) that would do nothing, naming saber-hx bench's flags.
func (cfg BenchConfig) check() error {
	given := func(name string) bool { return slices.Contains(cfg.Given, name) }
	switch {
	case cfg.Duration <= 0:
		return usagef("--duration %v: must be positive", cfg.Duration)
	case cfg.Warmup < 0:
		return usagef("--warmup %v: must not be negative", cfg.Warmup)
	case cfg.BundleSize < 0:
		return usagef("--bundle-size %d: must not be negative", cfg.BundleSize)
	case cfg.ValidateTuples < 0 || cfg.ValidateTuples == 0 && given("validate-tuples"):
		return usagef("--validate-tuples %d: must be positive", cfg.ValidateTuples)
	case given("validate-tuples") && !cfg.Validate:
		return usagef("bench: --validate-tuples applies to --validate, not to a run without it")
	}
	var ws []*Workload
	for _, name := range cfg.Workloads {
		if w, err := Lookup(name); err == nil {
			ws = append(ws, w) // an unknown one is NewBench's to report
		}
	}
	for _, opt := range cfg.Given {
		var users []string
		for _, w := range all {
			if slices.Contains(w.Options, opt) {
				users = append(users, w.Name)
			}
		}
		read := slices.ContainsFunc(ws, func(w *Workload) bool { return slices.Contains(w.Options, opt) })
		if len(users) > 0 && !read {
			return usagef("bench: --%s applies to %s, not to %s", opt, strings.Join(users, " and "), strings.Join(cfg.Workloads, ","))
		}
	}
	return nil
}

// addPart adds one operator of workload w, with its generated inputs.
// base is the spec index of the workload's first part: its parts' upstream
// references count from it.
func (b *Bench) addPart(w *Workload, p Params, wp Part, base int, limit uint64) error {
	bp := &benchPart{w: w, q: wp.Query, j: wp.Join}
	sp := engine.Spec{Query: wp.Query, Join: wp.Join, Upstream: offset(wp.Upstream, base), UpstreamRight: offset(wp.UpstreamRight, base)}
	bp.spec = sp
	if wp.Join != nil {
		bp.name = wp.Join.Name
	} else {
		bp.name = wp.Query.Name
		if err := b.cfg.Engine.Validate(wp.Query.Schema.TupleSize); err != nil && sp.Upstream == (engine.Ref{}) {
			return usageError{fmt.Errorf("%s: %w", w.Name, err)}
		}
	}
	entry := len(b.specs)
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
		if err := in.makeBundle(b.cfg.BundleSize); err != nil {
			return err
		}
		bp.inputs = append(bp.inputs, in)
		b.inputs = append(b.inputs, in)
		right := side == 1
		b.feeds = append(b.feeds, func() *engine.Stream {
			s := b.eng.Stream(entry)
			if right {
				return s.Right()
			}
			return s
		})
	}
	if b.cfg.Validate {
		bp.capture(&sp)
	}
	b.specs = append(b.specs, sp)
	b.parts = append(b.parts, bp)
	return nil
}

// offset makes a reference to a workload's part i one to spec base+i.
func offset(ref engine.Ref, base int) engine.Ref {
	if i, ok := ref.Spec(); ok {
		return engine.Output(base + i)
	}
	return ref
}

// Specs are the engine's specs of the run, one per part, in order.
func (b *Bench) Specs() []engine.Spec { return b.specs }

// Engine is the engine that Run started (nil before): its scheduling
// stats and stream names stay readable after the run.
func (b *Bench) Engine() *engine.Engine { return b.eng }

// Run starts the engine on eng (BenchConfig.Engine, completed with what
// the caller opened for the run: a GPU device, Started) and feeds every
// input until the warm-up and the duration end (or each input's bound
// under Validate, or ctx is cancelled), then closes the engine: every task
// merged. With Validate it then checks every part (validate). An engine
// that does not start on eng and the specs is ErrUsage.
func (b *Bench) Run(ctx context.Context, eng engine.Config) (*BenchResult, error) {
	var err error
	if b.eng, err = engine.Start(eng, b.specs); err != nil {
		return nil, usageError{err}
	}
	whole, measured, seconds, err := b.run(ctx, eng)
	if err != nil {
		return nil, err
	}
	res := &BenchResult{Seconds: seconds, WarmedUp: b.warmedUp, GCCycles: b.gc.cycles, HeapAllocBytes: b.gc.allocBytes}
	for i, bp := range b.parts {
		pr := PartResult{Name: bp.name, Input: InputChained, Whole: whole[i], Measured: measured[i]}
		for _, in := range bp.inputs {
			pr.Input = InputReplay
			if in.replay == nil {
				pr.Input = InputGenerate
			}
		}
		res.Parts = append(res.Parts, pr)
		if pr.Input != InputChained {
			res.TotalTuples += pr.Whole.Tuples
		}
	}
	if b.cfg.Validate {
		b.validateAll(ctx, res)
	}
	return res, nil
}

// run feeds every input until the warm-up and the duration end (or each
// input's limit, or ctx is cancelled), with cfg.Progress while it runs,
// and closes the engine: every task merged. It returns the queries' stats
// over the whole run and over the measured interval (from the end of the
// warm-up: the whole run where there is none, or where the input ended
// first), and the measured interval's seconds.
func (b *Bench) run(ctx context.Context, cfg engine.Config) (whole, measured []engine.Stats, seconds float64, err error) {
	gcFrom := readGC()
	start := time.Now()
	deadline := start.Add(b.cfg.Warmup + b.cfg.Duration)
	produced := make([]<-chan error, len(b.inputs))
	var stop atomic.Bool
	for i, in := range b.inputs {
		produced[i] = b.eng.Produce(func() error {
			return in.produce(b.feeds[i](), deadline, &stop, b.cfg.Validate, b.cfg.Ingest, cfg.Workers)
		})
	}
	stopOnCancel := context.AfterFunc(ctx, func() { stop.Store(true) })
	defer stopOnCancel()
	stopProgress := func() {}
	if b.cfg.Progress != nil {
		stopProgress = b.cfg.Progress(b.eng, start)
	}
	warm := b.startWarmup(b.cfg.Warmup)
	errs := make([]error, len(b.inputs))
	for i, done := range produced {
		errs[i] = <-done
	}
	at, warmStats, warmGC := warm()
	whole, cerr := b.eng.CloseAll()
	end := time.Now()
	stopProgress() // its last line is written before the caller's
	for _, err := range append(errs, cerr) {
		if err != nil {
			return nil, nil, 0, err
		}
	}
	b.warmedUp = warmStats != nil
	if !b.warmedUp {
		b.gc = readGC().since(gcFrom)
		return whole, whole, end.Sub(start).Seconds(), nil
	}
	b.gc = readGC().since(warmGC)
	measured = make([]engine.Stats, len(whole))
	for i := range whole {
		measured[i] = whole[i].Since(warmStats[i])
	}
	return whole, measured, end.Sub(at).Seconds(), nil
}

// startWarmup snapshots every query's stats and the GC counters when the
// warm-up ends; the returned func stops the timer and returns the
// snapshot, with nil stats where the warm-up had not ended (none, or the
// inputs ended first).
func (b *Bench) startWarmup(warmup time.Duration) func() (time.Time, []engine.Stats, gcSample) {
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
		stats = make([]engine.Stats, len(b.parts))
		for i := range stats {
			stats[i] = b.eng.Stream(i).Stats() // consistent: the counters add up
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

// gcSample is the runtime's garbage-collection counters, so that a
// benchmark can say whether its measured interval ran a GC cycle (issue
// #15 asks for none in steady state) and how much it allocated.
type gcSample struct {
	cycles, allocBytes uint64
}

func readGC() gcSample {
	c, a := ysb.GCMetrics()
	return gcSample{cycles: c, allocBytes: a}
}

// since is what ran between from and g.
func (g gcSample) since(from gcSample) gcSample {
	return gcSample{cycles: g.cycles - from.cycles, allocBytes: g.allocBytes - from.allocBytes}
}
