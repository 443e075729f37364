package ysb

import (
	"context"
	"errors"
	"runtime/metrics"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/scheduler"
)

// BenchConfig configures the in-memory benchmark.
type BenchConfig struct {
	Engine     engine.Config
	Gen        GenConfig
	BundleSize int           // bytes of pre-generated tuples replayed into the ring
	Duration   time.Duration // ingestion time measured, after the warm-up
	// Warmup is ingestion time before the measured interval (0: none). The
	// run ingests for Warmup + Duration; every window of the whole run is
	// validated, but BenchResult.Measured counts only what follows it.
	Warmup time.Duration
	// Progress, if set, is called every ProgressInterval (0: a second)
	// from another goroutine with the live counters.
	Progress         func(st engine.Stats, sched scheduler.Stats, elapsed time.Duration)
	ProgressInterval time.Duration

	// Ingest says who copies the bundle into the engine (engine.IngestAuto:
	// see engine.Ingest.Resolve).
	Ingest engine.Ingest

	// corrupt, in tests, edits each task's bytes after they were filled: it
	// proves that validation catches a wrong result.
	corrupt func(task []byte)
}

// BenchResult summarises a benchmark run.
type BenchResult struct {
	Stats        engine.Stats    // the whole run, warm-up included
	Scheduling   scheduler.Stats // tasks and bytes per processor kind, the throughput matrix
	RingNode     int             // NUMA node of the ring's memory, -1 if unknown
	Ingest       engine.Ingest   // who copied the bundle into the engine (never engine.IngestAuto)
	Seconds      float64         // the whole run, warm-up included
	BundleTuples int
	// Validated: the run completed or was interrupted without an error,
	// every window it emitted matched the generator's counts and the
	// counters add up for what ran (every window validated, every tuple
	// handed to the engine counted). An interruption alone does not make it
	// false.
	Validated bool
	// Interrupted: ctx was cancelled before Warmup + Duration had passed.
	// The producer stopped, the engine drained what was in flight (the
	// open windows emitted and validated, the run's error nil), and the
	// figures are those of what ran.
	Interrupted bool
	// WarmedUp: the warm-up ended (at once without one) and Measured holds
	// the interval after it; false only when the run was interrupted during
	// the warm-up (or before its first task), Measured then all zero.
	WarmedUp bool
	Measured Measured // the measured interval: from the end of the warm-up to the end of the run
}

// Measured is the measured interval of a benchmark run: from the end of the
// warm-up (or the start, without one) to the end of the run, the last task
// merged. All zero if the run ended before the warm-up did
// (BenchResult.WarmedUp false).
//
// The counts are differences of the engine's merged counts (engine.Stats)
// between the end of the warm-up and the end: tuples ingested during the
// warm-up whose tasks merge after it count in the measured interval, and
// the tuples still in flight at the end are merged before it ends (the
// engine is closed first), so the interval's tuples and seconds match.
type Measured struct {
	Tuples, Bytes                      uint64
	Filtered, Unmatched, Late, Counted uint64 // the classification of Tuples
	Seconds                            float64
	LatencyP50, LatencyP99             time.Duration // task latency, dispatched to its windows emitted
	GCCycles                           uint64        // garbage collections completed
	HeapAllocBytes                     uint64        // bytes allocated on the heap, by the whole process
}

// ErrMismatch marks a window whose rows differ from what the generator implies.
var ErrMismatch = errors.New("window does not match the generator")

// RunBenchmark generates a bundle, replays it into the engine for
// cfg.Warmup + cfg.Duration with event times advanced on every pass, as
// ingestion from a network would, and checks every emitted window against
// the counts that the generator implies. The producer marks the end of the
// warm-up (counters, latency histogram and GC metrics snapshotted there);
// Measured is the interval after it.
//
// A cancelled ctx (SIGINT, SIGTERM in the CLI) stops the producer at its
// next task boundary; the engine drains the tasks in flight and emits the
// open windows, which are validated like the others. The result then has
// Interrupted set and the error is nil, unless the run failed otherwise
// (a mismatch: ErrMismatch; an engine error).
func RunBenchmark(ctx context.Context, cfg BenchConfig) (BenchResult, error) {
	gen, err := NewGenerator(cfg.Gen)
	if err != nil {
		return BenchResult{}, err
	}
	n := BundleTuples(cfg.BundleSize, cfg.Gen)
	src, err := newReplay(gen, n, cfg.corrupt)
	if err != nil {
		return BenchResult{}, err
	}

	campaigns := gen.Campaigns()
	v := &validator{gen: gen}
	q := Query(campaigns, WindowMs)
	eng, err := engine.Start(cfg.Engine, []engine.Spec{{Query: q, Windows: v.check}})
	if err != nil {
		return BenchResult{}, err
	}
	v.genIndex = genIndexOfGroups(eng.Stream(0).Plan().GroupKeys, gen)
	ingest := cfg.Ingest.Resolve(cfg.Engine)
	if ingest == engine.IngestWorkers || ingest == engine.IngestShared {
		eng.Stream(0).SetFill(src.fillAt)
	}

	stop := make(chan struct{})
	done := make(chan struct{})
	start := time.Now()
	if cfg.Progress != nil {
		go func() {
			defer close(done)
			every := cfg.ProgressInterval
			if every <= 0 {
				every = time.Second
			}
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					cfg.Progress(eng.Stream(0).Stats(), eng.Scheduling(), time.Since(start))
				}
			}
		}()
	} else {
		close(done)
	}

	warmEnd := start.Add(cfg.Warmup)
	deadline := warmEnd.Add(cfg.Duration)
	// The end of the warm-up, snapshotted by endWarmup on the producer
	// goroutine at the first task boundary at or after warmEnd.
	var (
		warmStats         engine.Stats
		warmTime          time.Time
		warmGC, warmAlloc uint64
		warmedUp          bool
	)
	endWarmup := func() {
		warmStats = eng.Stream(0).Stats() // a consistent snapshot: the counters add up
		eng.Stream(0).ResetLatency()
		warmGC, warmAlloc = GCMetrics()
		warmTime, warmedUp = time.Now(), true
	}
	var k uint64 // global index of the next tuple
	var runErr error
	var interrupted bool
	// The producer runs on a goroutine of its own (Produce), so that it can
	// be pinned (--ingest-core) and its thread retired afterwards.
	runErr = <-eng.Produce(func() (err error) {
		interrupted, err = produce(ctx, eng, warmEnd, endWarmup, deadline, src, ingest, cfg.Engine.Workers, &k, v)
		return err
	})
	res := BenchResult{Scheduling: eng.Scheduling(), RingNode: eng.RingNode(0), Ingest: ingest}
	stats, err := eng.CloseAll()
	st := stats[0]
	close(stop)
	<-done
	if runErr == nil {
		runErr = err
	}
	end := time.Now()
	res.Interrupted, res.WarmedUp = interrupted, warmedUp
	res.Stats, res.Seconds, res.BundleTuples = st, end.Sub(start).Seconds(), n
	if warmedUp { // the producer has returned: its writes happened before <-produced
		gcs, alloc := GCMetrics()
		w := warmStats
		m := &res.Measured
		m.Tuples, m.Bytes = st.Tuples-w.Tuples, st.Bytes-w.Bytes
		m.Filtered, m.Unmatched, m.Late, m.Counted = st.Filtered-w.Filtered, st.Unmatched-w.Unmatched, st.Late-w.Late, st.Counted-w.Counted
		m.Seconds = end.Sub(warmTime).Seconds()
		m.LatencyP50, m.LatencyP99 = st.LatencyP50, st.LatencyP99
		m.GCCycles, m.HeapAllocBytes = gcs-warmGC, alloc-warmAlloc
	}
	res.Scheduling = eng.Scheduling()
	if runErr == nil {
		runErr = v.finish()
	}
	res.Validated = runErr == nil && v.windows == st.Windows && st.Tuples == k
	return res, runErr
}

// GCMetrics reads the process's completed GC cycles and cumulative heap
// allocation (the measured intervals of ysb's benchmark and of bench).
func GCMetrics() (cycles, allocBytes uint64) {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		allocBytes = s[1].Value.Uint64()
	}
	return cycles, allocBytes
}

// produce replays the bundle into the engine until the deadline, calling
// endWarmup once, at the first task boundary at or after warmEnd. It
// returns interrupted true when ctx was cancelled first.
func produce(ctx context.Context, eng *engine.Engine, warmEnd time.Time, endWarmup func(), deadline time.Time, src *replay, ingest engine.Ingest, workers int, kp *uint64, v *validator) (interrupted bool, err error) {
	warm := false
	f := engine.Feed{
		TupleSize: TupleSize, Ingest: ingest, Workers: workers,
		// A task left to the workers is copied by the worker that runs it
		// (src.fillAt).
		Fill: src.fill,
		Stop: func() bool {
			if ctx.Err() != nil {
				interrupted = true
				return true
			}
			now := time.Now()
			if !warm && !now.Before(warmEnd) {
				endWarmup()
				warm = true
			}
			return !now.Before(deadline)
		},
		Task: func(b []byte, k uint64, _ bool) { v.produced.Store(k + uint64(len(b)/TupleSize)) },
	}
	*kp, err = f.Run(eng.Stream(0), *kp)
	return interrupted, err
}
