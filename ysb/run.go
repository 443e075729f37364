package ysb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/scheduler"
)

// RunReader runs the YSB query over the tuples read from r and returns the
// result rows, in window order then campaign order.
func RunReader(cfg engine.Config, r io.Reader, c *Campaigns, windowMs int64) ([]Row, engine.Stats, error) {
	var rows []Row
	sink := func(w *engine.Window) error {
		for i := range w.Rows() {
			var id UUID
			copy(id[:], w.Key(i))
			rows = append(rows, Row{WindowStart: w.Start, CampaignID: id, Count: w.Agg(i, AggCount), MaxEventTime: w.Agg(i, AggMaxEventTime)})
		}
		return nil
	}
	eng, err := engine.New(cfg, Query(c, windowMs), sink)
	if err != nil {
		return nil, engine.Stats{}, err
	}
	// The reader runs on a goroutine of its own, so that it can be pinned
	// (Config.PinIngest) and its thread retired afterwards.
	read := make(chan error, 1)
	go func() {
		if err := cfg.PinIngestion(); err != nil && cfg.Warn != nil {
			cfg.Warn(fmt.Sprintf("ingestion not pinned: %v", err))
		}
		read <- ingest(eng, r)
	}()
	if err := <-read; err != nil {
		eng.Close()
		return nil, engine.Stats{}, err
	}
	st, err := eng.Close()
	if err != nil {
		return nil, st, err
	}
	return rows, st, nil
}

// ingest reads r into the engine's ring until EOF.
func ingest(eng *engine.Engine, r io.Reader) error {
	var offset int64
	for {
		b, err := eng.Buffer()
		if err != nil {
			return err
		}
		n, rerr := io.ReadFull(r, b)
		offset += int64(n)
		if err := eng.Commit(n); err != nil {
			return err
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("read events at byte %d: %w", offset, rerr)
		}
	}
}

// FileResult summarises a file-mode run.
type FileResult struct {
	Stats   engine.Stats
	Seconds float64
}

// InputError marks a problem with the input files (missing, unreadable,
// malformed), as opposed to a failure of the run.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// RunFiles runs YSB over an events file and a campaigns file. With outPath
// set it writes the results CSV there, only if the whole run succeeded; it
// returns the rows either way.
func RunFiles(cfg engine.Config, eventsPath, campaignsPath, outPath string) (FileResult, []Row, error) {
	c, err := LoadCampaigns(campaignsPath)
	if err != nil {
		return FileResult{}, nil, &InputError{err}
	}
	f, _, err := OpenEvents(eventsPath)
	if err != nil {
		return FileResult{}, nil, &InputError{err}
	}
	defer f.Close()
	start := time.Now()
	rows, st, err := RunReader(cfg, f, c, WindowMs)
	if err != nil {
		return FileResult{}, nil, fmt.Errorf("%s: %w", eventsPath, err)
	}
	res := FileResult{Stats: st, Seconds: time.Since(start).Seconds()}
	if outPath == "" {
		return res, rows, nil
	}
	return res, rows, WriteFileAtomic(outPath, func(w io.Writer) error { return WriteResultsCSV(w, rows) })
}

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
	// Progress, if set, is called about once per second from another
	// goroutine with the live counters.
	Progress func(st engine.Stats, sched scheduler.Stats, elapsed time.Duration)

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
	Validated    bool     // every emitted window of the whole run matched the generator's counts
	Measured     Measured // the measured interval: from the end of the warm-up to the end of the run
}

// Measured is the measured interval of a benchmark run: from the end of the
// warm-up (or the start, without one) to the end of the run, the last task
// merged. All zero if the run ended before the warm-up did.
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

// BundleTuples is the number of tuples of a bundle of at most size bytes: a
// whole number of generator periods, so that replaying the bundle continues
// the generator's sequence exactly (at least one period).
func BundleTuples(size int, cfg GenConfig) int {
	p := int(bundlePeriod(cfg))
	n := size / TupleSize / p * p
	return max(n, p)
}

// RunBenchmark generates a bundle, replays it into the engine for
// cfg.Warmup + cfg.Duration with event times advanced on every pass, as
// ingestion from a network would, and checks every emitted window against
// the counts that the generator implies. The producer marks the end of the
// warm-up (counters, latency histogram and GC metrics snapshotted there);
// Measured is the interval after it.
func RunBenchmark(ctx context.Context, cfg BenchConfig) (BenchResult, error) {
	gen, err := NewGenerator(cfg.Gen)
	if err != nil {
		return BenchResult{}, err
	}
	n := BundleTuples(cfg.BundleSize, cfg.Gen)
	bundle := make([]byte, n*TupleSize)
	gen.Fill(bundle, 0)
	span := int64(n / cfg.Gen.TuplesPerMs) // event-time advance of one pass, ms

	campaigns := gen.Campaigns()
	v := &validator{gen: gen}
	q := Query(campaigns, WindowMs)
	eng, err := engine.New(cfg.Engine, q, v.check)
	if err != nil {
		return BenchResult{}, err
	}
	v.genIndex = genIndexOfGroups(eng.Plan().GroupKeys, gen)
	src := &replay{bundle: bundle, n: n, span: span, corrupt: cfg.corrupt}
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
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					cfg.Progress(eng.Stats(), eng.Scheduling(), time.Since(start))
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
		warmStats = eng.Stats() // a consistent snapshot: the counters add up
		eng.Stream(0).ResetLatency()
		warmGC, warmAlloc = gcMetrics()
		warmTime, warmedUp = time.Now(), true
	}
	var k uint64 // global index of the next tuple
	var runErr error
	// The producer runs on a goroutine of its own, so that it can be pinned
	// (--ingest-core) and its thread retired afterwards.
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		if err := cfg.Engine.PinIngestion(); err != nil && cfg.Engine.Warn != nil {
			cfg.Engine.Warn(fmt.Sprintf("ingestion not pinned: %v", err))
		}
		runErr = produce(ctx, eng, warmEnd, endWarmup, deadline, src, ingest, cfg.Engine.Workers, &k, v)
	}()
	<-produced
	res := BenchResult{Scheduling: eng.Scheduling(), RingNode: eng.RingNode(0), Ingest: ingest}
	st, err := eng.Close()
	close(stop)
	<-done
	if runErr == nil {
		runErr = err
	}
	if runErr == nil && ctx.Err() != nil {
		runErr = ctx.Err()
	}
	end := time.Now()
	res.Stats, res.Seconds, res.BundleTuples = st, end.Sub(start).Seconds(), n
	if warmedUp { // the producer has returned: its writes happened before <-produced
		gcs, alloc := gcMetrics()
		w := warmStats
		m := &res.Measured
		m.Tuples, m.Bytes = st.Tuples-w.Tuples, st.Bytes-w.Bytes
		m.Filtered, m.Unmatched, m.Late, m.Counted = st.Filtered-w.Filtered, st.Unmatched-w.Unmatched, st.Late-w.Late, st.Counted-w.Counted
		m.Seconds = end.Sub(warmTime).Seconds()
		m.LatencyP50, m.LatencyP99 = st.LatencyP50, st.LatencyP99
		m.GCCycles, m.HeapAllocBytes = gcs-warmGC, alloc-warmAlloc
	}
	res.Scheduling = eng.Scheduling()
	res.Validated = runErr == nil && v.windows == st.Windows && st.Tuples == k
	return res, runErr
}

// gcMetrics reads the process's completed GC cycles and cumulative heap
// allocation.
func gcMetrics() (cycles, allocBytes uint64) {
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
// endWarmup once, at the first task boundary at or after warmEnd.
func produce(ctx context.Context, eng *engine.Engine, warmEnd time.Time, endWarmup func(), deadline time.Time, src *replay, ingest engine.Ingest, workers int, kp *uint64, v *validator) error {
	k := *kp
	defer func() { *kp = k }()
	warm := false
	st := eng.Stream(0)
	for ctx.Err() == nil {
		now := time.Now()
		if !warm && !now.Before(warmEnd) {
			endWarmup()
			warm = true
		}
		if !now.Before(deadline) {
			break
		}
		b, err := st.Buffer()
		if err != nil {
			return err
		}
		if ingest.LeaveToWorkers(st, workers) {
			// The worker that runs the task copies it (src.fillAt).
			k += uint64(len(b) / TupleSize)
			v.produced.Store(k)
			if err := st.CommitUnfilled(len(b)); err != nil {
				return err
			}
			continue
		}
		src.fill(b, k)
		k += uint64(len(b) / TupleSize)
		v.produced.Store(k)
		if err := st.Commit(len(b)); err != nil {
			return err
		}
	}
	return nil
}

// replay is the benchmark's input: the bundle replayed forever, each pass's
// event times shifted by the bundle's span, so that tuple k of the stream
// is tuple k mod n of the bundle, span*(k/n) ms later. Any range of the
// stream can be produced independently, which lets the workers ingest.
type replay struct {
	bundle  []byte
	n       int   // tuples in the bundle
	span    int64 // event-time advance of one pass, ms
	corrupt func(task []byte)
}

// fill writes the stream's tuples from index k on into b (whole tuples).
func (r *replay) fill(b []byte, k uint64) {
	for off := 0; off < len(b); {
		pos := int(k % uint64(r.n))
		shift := int64(k/uint64(r.n)) * r.span
		c := min(len(b)-off, (r.n-pos)*TupleSize)
		copyShift(b[off:off+c], r.bundle[pos*TupleSize:pos*TupleSize+c], shift)
		off += c
		k += uint64(c / TupleSize)
	}
	if r.corrupt != nil {
		r.corrupt(b)
	}
}

// fillAt is fill for engine.Stream.SetFill: pos is a byte offset.
func (r *replay) fillAt(dst []byte, pos uint64) { r.fill(dst, pos/TupleSize) }

// genIndexOfGroups maps the engine's group ordinals to the generator's
// campaign indexes.
func genIndexOfGroups(keys [][]byte, gen *Generator) []int {
	byID := make(map[UUID]int)
	c := gen.Campaigns()
	for i, id := range c.CampaignIDs {
		byID[id] = i / gen.Config().AdsPerCampaign
	}
	idx := make([]int, len(keys))
	for g, k := range keys {
		idx[g] = byID[UUID(k)]
	}
	return idx
}

// validator checks each emitted window against the generator.
type validator struct {
	gen      *Generator
	genIndex []int
	produced atomic.Uint64 // tuples handed to the engine so far
	exp      Expected
	windows  uint64
}

func (v *validator) check(w *engine.Window) error {
	k0, k1 := v.gen.TupleRange(w.Start, w.End-w.Start)
	k1 = min(k1, v.produced.Load())
	k0 = min(k0, k1)
	v.gen.Expected(k0, k1, &v.exp)
	want := 0
	for _, c := range v.exp.Count {
		if c > 0 {
			want++
		}
	}
	if w.Rows() != want {
		return fmt.Errorf("%w: %d rows, want %d", ErrMismatch, w.Rows(), want)
	}
	for i := range w.Rows() {
		c := v.genIndex[w.Group(i)]
		if got, want := w.Agg(i, AggCount), v.exp.Count[c]; got != want {
			return fmt.Errorf("%w: campaign %x count %d, want %d", ErrMismatch, w.Key(i), got, want)
		}
		if got, want := w.Agg(i, AggMaxEventTime), v.exp.MaxEventTime[c]; got != want {
			return fmt.Errorf("%w: campaign %x max_event_time %d, want %d", ErrMismatch, w.Key(i), got, want)
		}
	}
	v.windows++
	return nil
}

// bundlePeriod is the number of tuples after which every attribute the query
// reads repeats, with event time advanced by a whole number of milliseconds:
// lcm(3 event types, 5 ad types, ads, tuples per ms).
func bundlePeriod(cfg GenConfig) uint64 {
	p := uint64(15)
	for _, m := range []uint64{uint64(cfg.Campaigns * cfg.AdsPerCampaign), uint64(cfg.TuplesPerMs)} {
		p = p / gcd64(p, m) * m
	}
	return p
}

func gcd64(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
