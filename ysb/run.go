package ysb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/scheduler"
	"github.com/saber-hx/saber-hx/sink"
	"github.com/saber-hx/saber-hx/source"
)

// RunReader runs the YSB query over the tuples read from r and returns the
// result rows, in window order then campaign order. r is read as a stream:
// a trailing partial tuple at its end is an *InputError naming the trailing
// byte count and its byte offset.
func RunReader(cfg engine.Config, r io.Reader, c *Campaigns, windowMs int64) ([]Row, engine.Stats, error) {
	rows, st, _, err := runReader(context.Background(), cfg, r, c, windowMs)
	return rows, st, err
}

// runReader is RunReader stopped by ctx: on cancellation it stops reading
// (a Read blocked on a reader that has SetReadDeadline is ended through
// it; any other reader is left to return its Read), closes the engine,
// which drains the tasks in flight and emits the open windows, and returns
// interrupted true, the rows of what ran (not the whole input's) and the
// stats of what ran.
func runReader(ctx context.Context, cfg engine.Config, r io.Reader, c *Campaigns, windowMs int64) (rows []Row, st engine.Stats, interrupted bool, err error) {
	emit := func(w *engine.Window) error {
		for i := range w.Rows() {
			var id UUID
			copy(id[:], w.Key(i))
			rows = append(rows, Row{WindowStart: w.Start, CampaignID: id, Count: w.Agg(i, AggCount), MaxEventTime: w.Agg(i, AggMaxEventTime)})
		}
		return nil
	}
	eng, err := engine.New(cfg, Query(c, windowMs), emit)
	if err != nil {
		return nil, engine.Stats{}, false, err
	}
	if d, ok := deadlinerOf(r); ok {
		stop := context.AfterFunc(ctx, func() { _ = d.SetReadDeadline(time.Now()) })
		defer stop()
	}
	// The reader runs on a goroutine of its own, so that it can be pinned
	// (Config.PinIngest) and its thread retired afterwards.
	type result struct {
		interrupted bool
		err         error
	}
	read := make(chan result, 1)
	go func() {
		if err := cfg.PinIngestion(); err != nil && cfg.Warn != nil {
			cfg.Warn(fmt.Sprintf("ingestion not pinned: %v", err))
		}
		interrupted, err := ingest(ctx, eng, r)
		read <- result{interrupted, err}
	}()
	res := <-read
	if res.err != nil {
		st, _ := eng.Close()
		return nil, st, false, res.err
	}
	st, err = eng.Close()
	if err != nil {
		return nil, st, res.interrupted, err
	}
	return rows, st, res.interrupted, nil
}

// deadlinerOf returns the reader under r whose deadline ends a blocked Read.
func deadlinerOf(r io.Reader) (source.ReadDeadliner, bool) {
	if p, ok := r.(*peekReader); ok {
		r = p.under
	}
	d, ok := r.(source.ReadDeadliner)
	return d, ok
}

// ingest reads r into the engine's ring until EOF (interrupted false) or
// until ctx is cancelled (interrupted true: the whole tuples read so far
// are committed, the rest dropped). At EOF, a trailing partial tuple is an
// *InputError.
func ingest(ctx context.Context, eng *engine.Engine, r io.Reader) (interrupted bool, err error) {
	var offset int64
	for {
		if ctx.Err() != nil {
			return true, nil
		}
		b, err := eng.Buffer()
		if err != nil {
			return false, err
		}
		n, rerr := io.ReadFull(r, b)
		eof := rerr == io.EOF || rerr == io.ErrUnexpectedEOF
		if rerr != nil && !eof && ctx.Err() != nil {
			// The read was ended by the cancellation (a deadline): keep the
			// whole tuples read.
			n -= n % TupleSize
			return true, eng.Commit(n)
		}
		if rem := n % TupleSize; eof && rem != 0 {
			if ctx.Err() != nil {
				// The writer was stopped by the same interrupt (a shell
				// pipeline's SIGINT) in the middle of a tuple.
				return true, eng.Commit(n - rem)
			}
			return false, &InputError{fmt.Errorf("%d trailing bytes at byte offset %d: the stream does not end on a whole %d-byte tuple", rem, offset+int64(n-rem), TupleSize)}
		}
		offset += int64(n)
		if err := eng.Commit(n); err != nil {
			return false, err
		}
		if eof {
			return false, nil
		}
		if rerr != nil {
			return false, fmt.Errorf("read events at byte %d: %w", offset, rerr)
		}
	}
}

// peekReader is a stream whose first bytes were read ahead (bufio), with
// the reader under it kept for its deadline.
type peekReader struct {
	*bufio.Reader
	under io.Reader
}

// FileResult summarises a file-mode run.
type FileResult struct {
	Stats   engine.Stats // of what ran: all the input, or up to the interruption
	Seconds float64
	// Rows are the results, in window order then campaign order; nil when
	// Interrupted (the rows of part of the input are not the results).
	Rows []Row
	// Interrupted: ctx was cancelled before the run completed (or before
	// the output was committed). The engine was drained and closed, Stats
	// count what ran, nothing was committed (the output's old content, if
	// any, is untouched) and the error is nil unless something else failed.
	Interrupted bool
}

// FileConfig names the inputs and the output of a file-mode run.
type FileConfig struct {
	// Events is the events file: a regular file, whose size is checked up
	// front (a whole number of tuples); a FIFO or a device, read as a
	// stream; or "-", Stdin read as a stream. A stream that does not end on
	// a whole tuple is refused when it ends (an *InputError naming the
	// trailing byte count and its byte offset).
	Events string
	// Campaigns is the campaigns CSV.
	Campaigns string
	// Output is the results CSV, written through package sink (see
	// sink.Create) only when the whole run succeeded and was not
	// interrupted; "" for none (the rows are returned in FileResult.Rows
	// either way).
	Output string
	// Stdin is read when Events is "-"; nil means os.Stdin. An *os.File
	// (os.Stdin redirected from a file) is compared with Output by inode
	// like the named inputs. A cancellation ends a Read blocked on a pipe
	// or a FIFO (os.Stdin inherited in blocking mode is read through a
	// non-blocking duplicate, put back in blocking mode at the end), or on
	// any reader with SetReadDeadline; on a terminal or another reader, the
	// run stops when its Read returns.
	Stdin io.Reader
}

// InputError marks a problem with the inputs or the output path the user
// named (missing, unreadable, malformed, an output that is an input), as
// opposed to a failure of the run.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// fdPath names the file f is open on, for comparing it with the output by
// inode: /proc/self/fd/N, found without f.Fd (which would put f in blocking
// mode, where a read deadline no longer ends a blocked Read).
func fdPath(f *os.File) string {
	rc, err := f.SyscallConn()
	if err != nil {
		return ""
	}
	var path string
	if err := rc.Control(func(fd uintptr) { path = fmt.Sprintf("/proc/self/fd/%d", fd) }); err != nil {
		return ""
	}
	return path
}

// RunFiles runs YSB over an events file (or stream) and a campaigns file,
// in this order: it opens the output first (so that a missing or read-only
// directory, or an output that is the same file as an input, is reported
// before any work), then the events, then waits for a stream's first byte
// (so that a generator writing the stream, which commits its campaigns
// table before its first tuple, has written it), then loads the campaigns,
// then streams the events through the engine, then writes and commits the
// output.
//
// Errors: an *InputError for the inputs and the output path (exit status
// 2 in the CLI; a sink.ErrUsage under it for the output's); anything else
// is a failure of the run. On ctx cancellation the run stops ingesting,
// drains what is in flight, commits nothing and returns FileResult with
// Interrupted set, the stats of what ran and a nil error (unless something
// else failed too).
func RunFiles(ctx context.Context, cfg engine.Config, fc FileConfig) (FileResult, error) {
	if fc.Events == "" || fc.Campaigns == "" {
		return FileResult{}, &InputError{errors.New("file mode needs an events file (- for standard input) and a campaigns file")}
	}
	stdin, name := fc.Stdin, fc.Events
	inputs := []string{fc.Campaigns, fc.Events}
	if fc.Events == "-" {
		name, inputs = "standard input", inputs[:1]
		if stdin == nil {
			stdin = os.Stdin
		}
		if f, ok := stdin.(*os.File); ok {
			inputs = append(inputs, fdPath(f))
		}
	}
	var out *sink.File
	if fc.Output != "" {
		f, err := sink.Create(fc.Output, inputs...)
		if err != nil {
			if errors.Is(err, sink.ErrUsage) {
				err = &InputError{err}
			}
			return FileResult{}, err
		}
		out = f
		defer out.Abort()
	}

	var r io.Reader = stdin
	if fc.Events == "-" {
		pr, restore := source.Pollable(stdin)
		defer restore()
		r = pr
	}
	stream := true
	if fc.Events != "-" {
		f, _, isStream, err := openEvents(fc.Events)
		if err != nil {
			return FileResult{}, &InputError{err}
		}
		defer f.Close()
		r, stream = f, isStream
	}
	if stream {
		p := &peekReader{Reader: bufio.NewReaderSize(r, 1<<16), under: r}
		if d, ok := r.(source.ReadDeadliner); ok {
			stop := context.AfterFunc(ctx, func() { _ = d.SetReadDeadline(time.Now()) })
			_, err := p.Peek(1)
			if !stop() {
				// The deadline may have been set after Peek returned: clear it
				// (the run is interrupted anyway, ingest returns at once).
				_ = d.SetReadDeadline(time.Time{})
			}
			if err != nil && err != io.EOF && ctx.Err() == nil {
				return FileResult{}, &InputError{fmt.Errorf("read events from %s: %w", name, err)}
			}
		} else if _, err := p.Peek(1); err != nil && err != io.EOF {
			return FileResult{}, &InputError{fmt.Errorf("read events from %s: %w", name, err)}
		}
		r = p
	}
	if ctx.Err() != nil {
		return FileResult{Interrupted: true}, nil
	}
	c, err := LoadCampaigns(fc.Campaigns)
	if err != nil {
		return FileResult{}, &InputError{err}
	}

	start := time.Now()
	rows, st, interrupted, err := runReader(ctx, cfg, r, c, WindowMs)
	res := FileResult{Stats: st, Seconds: time.Since(start).Seconds(), Interrupted: interrupted || ctx.Err() != nil}
	if err != nil {
		return res, fmt.Errorf("%s: %w", name, err)
	}
	if res.Interrupted {
		return res, nil // out aborted by the defer: nothing committed
	}
	if out != nil {
		if err := WriteResultsCSV(out, rows); err != nil {
			return res, fmt.Errorf("%s: %w", fc.Output, err)
		}
		if ctx.Err() != nil {
			res.Interrupted = true
			return res, nil
		}
		if err := out.Commit(); err != nil {
			return res, err
		}
	}
	res.Rows = rows
	return res, nil
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
	var interrupted bool
	// The producer runs on a goroutine of its own, so that it can be pinned
	// (--ingest-core) and its thread retired afterwards.
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		if err := cfg.Engine.PinIngestion(); err != nil && cfg.Engine.Warn != nil {
			cfg.Engine.Warn(fmt.Sprintf("ingestion not pinned: %v", err))
		}
		interrupted, runErr = produce(ctx, eng, warmEnd, endWarmup, deadline, src, ingest, cfg.Engine.Workers, &k, v)
	}()
	<-produced
	res := BenchResult{Scheduling: eng.Scheduling(), RingNode: eng.RingNode(0), Ingest: ingest}
	st, err := eng.Close()
	close(stop)
	<-done
	if runErr == nil {
		runErr = err
	}
	end := time.Now()
	res.Interrupted, res.WarmedUp = interrupted, warmedUp
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
// endWarmup once, at the first task boundary at or after warmEnd. It
// returns interrupted true when ctx was cancelled first.
func produce(ctx context.Context, eng *engine.Engine, warmEnd time.Time, endWarmup func(), deadline time.Time, src *replay, ingest engine.Ingest, workers int, kp *uint64, v *validator) (interrupted bool, err error) {
	k := *kp
	defer func() { *kp = k }()
	warm := false
	st := eng.Stream(0)
	for {
		if ctx.Err() != nil {
			return true, nil
		}
		now := time.Now()
		if !warm && !now.Before(warmEnd) {
			endWarmup()
			warm = true
		}
		if !now.Before(deadline) {
			return false, nil
		}
		b, err := st.Buffer()
		if err != nil {
			return false, err
		}
		if ingest.LeaveToWorkers(st, workers) {
			// The worker that runs the task copies it (src.fillAt).
			k += uint64(len(b) / TupleSize)
			v.produced.Store(k)
			if err := st.CommitUnfilled(len(b)); err != nil {
				return false, err
			}
			continue
		}
		src.fill(b, k)
		k += uint64(len(b) / TupleSize)
		v.produced.Store(k)
		if err := st.Commit(len(b)); err != nil {
			return false, err
		}
	}
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
