package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saber-hx/saber-hx/checkpoint"
	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/scheduler"
	"github.com/saber-hx/saber-hx/sink"
	"github.com/saber-hx/saber-hx/source/kafka"
	"github.com/saber-hx/saber-hx/sql"
)

// Job is an opened program: its outputs and sources open, its checkpoint
// (with Options.CheckpointDir) chosen. Run runs it once; Close releases
// what Run did not commit. Checkpoint may be called while it runs.
type Job struct {
	p         *Program
	prog      *sql.Program
	opts      Options
	log       io.Writer
	specs     []engine.Spec
	sinks     []*rowSink   // per query, nil where its output goes nowhere (a view)
	txns      []*txnGroup  // the transactional Kafka outputs (checkpointed runs), by cluster
	outFiles  []fileOutput // the queries' outputs to files, none twice
	sources   []*sqlSource
	feeds     map[*sqlSource][]*engine.Stream // the streams each source writes to
	eng       *engine.Engine
	running   atomic.Pointer[engine.Engine] // eng, for Engine from other goroutines
	share     kafkaShare                    // Options.Instance, Instances and a checkpoint's positions
	ckpt      *checkpointer                 // Options.CheckpointDir; nil without
	ckptDir   *checkpoint.Dir               // Options.CheckpointDir, locked for the run (the checkpointer writes it)
	stopFeeds context.CancelFunc
	val       *validator // Options.Validate
	holdsSQL  bool       // prog is marked in openSQL by this job (released at Close)
	// unregister removes from Options.Metrics what the job added (Close).
	unregister []func()
	// mu guards ran and closed: Run and Close may be called from other
	// goroutines than Open's (a second Run, or Run after Close, refused).
	mu     sync.Mutex
	ran    bool
	closed bool
}

// openSQL marks the compiled programs that back an open Job, by pointer:
// a Job loads the program's lookup tables into its *sql.Table values (and
// sql.Table's Load frees the rows it replaces), so a second Job over the
// same *sql.Program would change, or unmap, the rows the first one's
// joins read. The mark is the pipeline's, as package sql knows nothing of
// jobs.
var openSQL = struct {
	sync.Mutex
	by map[*sql.Program]string // the name of the Program whose job holds it
}{by: map[*sql.Program]string{}}

// holdSQL marks j's compiled program as backing j, or says which job
// holds it.
func (j *Job) holdSQL() error {
	openSQL.Lock()
	defer openSQL.Unlock()
	if other, held := openSQL.by[j.prog]; held {
		return usagef("pipeline: program %s: its compiled program (*sql.Program) backs an open job (of program %s): "+
			"a compiled program backs one open Job at a time, as the job loads its tables into it; "+
			"compile the program again (sql.Compile, or pipeline.Compile) for a second job, or close the first", j.p.name, other)
	}
	openSQL.by[j.prog] = j.p.name
	j.holdsSQL = true
	return nil
}

// releaseSQL removes holdSQL's mark.
func (j *Job) releaseSQL() {
	if !j.holdsSQL {
		return
	}
	openSQL.Lock()
	delete(openSQL.by, j.prog)
	openSQL.Unlock()
	j.holdsSQL = false
}

// Open readies p to run: with Options.CheckpointDir its checkpointer and
// the checkpoint to restore, the tables, the outputs and the sources, in
// that order (the transactional outputs decide the checkpoint before the
// sources seek to it). On an error what was opened is closed.
//
// A Program is opened once: its job takes the attached readers and Go
// sources (a reader read by one job would give the next nothing), and a
// later Open fails (compile the program again for another job). An Open
// that failed before it opened the sources (a bad option, an output or a
// checkpoint directory it could not open) does not count. Only one Job
// over a compiled *sql.Program may be open at a time (FromSQL): Open fails
// while another is, until that one's Close.
func (p *Program) Open(o Options) (_ *Job, err error) {
	if len(p.prog.Queries) == 0 {
		return nil, usagef("the program has no query: nothing reads its sources (add a SELECT, a CREATE SINK ... AS SELECT or an INSERT INTO)")
	}
	if o.Instances == 0 {
		o.Instances = 1
	}
	if o.Instances < 1 || o.Instance < 0 || o.Instance >= o.Instances {
		return nil, usagef("instance %d of %d: want 0 <= instance < instances", o.Instance, o.Instances)
	}
	if o.CheckpointInterval < 0 {
		return nil, usagef("checkpoint interval %v: must be positive", o.CheckpointInterval)
	}
	if o.CheckpointInterval == 0 {
		o.CheckpointInterval = DefaultCheckpointInterval
	}
	if o.Duration < 0 {
		return nil, usagef("Duration (--duration) %v: must be positive", o.Duration)
	}
	if o.Output == "" {
		o.Output = "-"
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Engine.TaskSize == 0 {
		// Whole tuples of every source.
		unit := p.TupleUnit()
		o.Engine.TaskSize = max(engine.DefaultTaskSize/unit, 1) * unit
	}
	o.Engine = o.Engine.Defaults()
	// The scheduler's settings, which engine.Start checks only as Run
	// starts it: checked before a client or a file is opened.
	sc := scheduler.Config{Policy: o.Engine.Policy, Kinds: 1, Capacity: 1, SwitchThreshold: o.Engine.SwitchThreshold, MonitorInterval: o.Engine.MonitorInterval}
	if err := sc.Validate(); err != nil {
		return nil, usageError{fmt.Errorf("engine: %w", err)}
	}
	j := &Job{p: p, prog: p.prog, opts: o, log: o.Log, share: kafkaShare{instance: o.Instance, instances: o.Instances}}
	if j.log == nil {
		j.log = io.Discard
	}
	for _, s := range j.prog.Sources {
		if err := o.Engine.Validate(s.Schema.TupleSize); err != nil {
			return nil, usageError{fmt.Errorf("source %s: %w", s.Name, err)}
		}
		if s.Connector == "go" && p.feeds[s.Name] == nil && p.reads[s.Name] == nil {
			return nil, usagef("source %s: connector 'go': attach its input (AttachSource or AttachReader)", s.Name)
		}
	}
	if p.opened.Load() {
		return nil, errOpenedTwice(p)
	}
	// Before the tables are loaded into the compiled program.
	if err := j.holdSQL(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			j.Close()
		}
	}()
	if o.CheckpointDir != "" {
		if err := checkpointConfig(j); err != nil {
			return nil, err
		}
		// One run a directory, until Close (or the process's end).
		dir := &checkpoint.Dir{Path: o.CheckpointDir}
		if err := dir.Lock(); err != nil {
			return nil, err
		}
		j.ckptDir = dir
		restored, err := loadCheckpoint(dir, j.log)
		if err != nil {
			return nil, err
		}
		if j.ckpt, err = newCheckpointer(dir, o.CheckpointInterval, j, j.log, restored); err != nil {
			return nil, usageError{err}
		}
		j.share.resume = map[int32]kafka.Position{}
		if restored != nil {
			j.share.resume = restored.positions
		}
	}
	if err := j.loadTables(); err != nil {
		return nil, err
	}
	if err := j.openSinks(); err != nil {
		return nil, err
	}
	if j.ckpt != nil {
		if err := j.ckpt.alignOutputs(); err != nil {
			return nil, err
		}
	}
	// From here on the job owns the Program's sources (a parallel decoder
	// reads an attached reader from its start).
	if !p.opened.CompareAndSwap(false, true) { // an Open on another goroutine won
		return nil, errOpenedTwice(p)
	}
	if err := j.openSources(); err != nil {
		if len(p.reads) == 0 && len(p.feeds) == 0 {
			// Nothing of the caller's was read (a file that is missing,
			// a broker that refused): the Program may be opened again.
			p.opened.Store(false)
		}
		return nil, err
	}
	j.readDictColumns()
	if o.Validate {
		j.val = newValidator(len(j.prog.Queries))
		for i, q := range j.prog.Queries {
			j.val.wrap(i, q, &j.specs[i])
		}
		for _, s := range j.sources {
			s.val = j.val
		}
	}
	if reg := o.Metrics; reg != nil {
		j.addSourceMetrics(reg)
		j.addSinkMetrics(reg)
	}
	return j, nil
}

// Close removes the temporary files of the outputs not committed, closes
// the clients of topics and Redis and the sources, and removes from
// Options.Metrics what the job added to it. Call it once Run has returned
// (or instead of Run); it is safe to call twice.
func (j *Job) Close() {
	j.mu.Lock()
	closed := j.closed
	j.closed = true
	j.mu.Unlock()
	if closed {
		return
	}
	if j.ckpt != nil {
		j.ckpt.end(errJobClosed) // no run will answer a Checkpoint
	}
	// First: a scrape reads the sources and outputs closed below.
	j.removeMetrics()
	j.abortSinks()
	j.closeSources()
	if j.val != nil {
		j.val.free()
	}
	if j.ckptDir != nil {
		if err := j.ckptDir.Unlock(); err != nil {
			fmt.Fprintf(j.log, "saber-hx: warning: %v\n", err)
		}
	}
	// Last: nothing of this job reads the tables any more.
	j.releaseSQL()
}

// errOpenedTwice is Open's for a Program already opened.
func errOpenedTwice(p *Program) error {
	return usagef("pipeline: program %s was opened already: a Program is opened once (its job reads its attached readers and Go sources); "+
		"for another job compile it again (Compile), or wrap its SQL() anew with FromSQL once this job is closed", p.name)
}

// Run runs the job until its sources end (files, readers and Go sources
// at their end, generators and Kafka after Options.Duration, Kafka with
// StopAtEnd at the ends it had) or ctx is cancelled; then it drains: every
// tuple read is merged, every window emitted, the outputs flushed and
// committed (files only when ctx did not end the run before its sources
// ended: an interrupted run leaves them as they were, or at their last
// checkpoint's parts; a cancel during the drain interrupts nothing). The
// Kafka sources' offsets are committed once what they fed is out. A job
// runs once: a second Run (at the same time or later), or a Run after
// Close, returns an error.
func (j *Job) Run(ctx context.Context) (*Summary, error) {
	if err := j.start(); err != nil {
		return nil, err
	}
	start := time.Now()
	stats, interrupted, err := j.run(ctx)
	seconds := time.Since(start).Seconds()
	if err != nil {
		if errors.Is(err, engine.ErrConfig) {
			return nil, usageError{err}
		}
		return nil, err
	}
	if err := j.finish(interrupted); err != nil {
		return nil, err
	}
	if interrupted && j.files() {
		fmt.Fprintf(j.log, "saber-hx: %s\n", j.interruptedNote())
	}
	sum := j.summarize(stats, seconds)
	sum.Interrupted = interrupted
	if j.val != nil {
		ok := true
		for i, m := range j.val.check(j.prog, stats) {
			sum.Queries[i].Mismatch = m
			ok = ok && m == ""
		}
		sum.Validated = &ok
	}
	if j.ckpt != nil {
		sum.Checkpoints = j.ckpt.summary()
	}
	return sum, nil
}

// start marks the job run, refusing a second Run (also one on another
// goroutine at the same time) and a Run after Close, whose outputs and
// sources are closed.
func (j *Job) start() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.closed:
		return errors.New("pipeline: Run: the job is closed (Close released its outputs and sources)")
	case j.ran:
		return errors.New("pipeline: Run: a job runs once (Run was called already)")
	}
	j.ran = true
	return nil
}

// Engine is the running engine (nil before Run starts it): its streams'
// counters, its scheduling. It may be called from any goroutine.
func (j *Job) Engine() *engine.Engine { return j.running.Load() }

// Fed is the number of tuples source name has fed so far (0 for a source
// the program does not have). It may be called from any goroutine while
// the job runs.
func (j *Job) Fed(name string) uint64 {
	if s := j.source(name); s != nil {
		return s.fed.Load()
	}
	return 0
}

// ToStdout reports whether a query's rows go to Options.Stdout ("-") or
// to the process's standard output by another name (/dev/stdout, the
// file it was redirected to).
func (j *Job) ToStdout() bool {
	return slices.ContainsFunc(j.outFiles, func(o fileOutput) bool { return sink.IsStdout(o.path) })
}

// finish, once the run has drained, commits the outputs (files only when
// it was not interrupted) and then the Kafka sources' offsets of what is
// out.
func (j *Job) finish(interrupted bool) error {
	if err := j.commitSinks(!interrupted); err != nil {
		return err
	}
	if (!interrupted || !j.files()) && len(j.txnSinks()) == 0 {
		// Every record fed is out: written, or in a file committed. (Not
		// with transactional outputs, whose drain was aborted: their
		// offsets stand at the last checkpoint.)
		j.commitOffsets()
	}
	return nil
}

// loadTables reads every table's rows: from the text SetTable gave, else
// from the table's file.
func (j *Job) loadTables() error {
	for _, t := range j.prog.Tables {
		if text, ok := j.p.tables[t.Name]; ok {
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
func (j *Job) inputs() []string {
	var in []string
	if j.p.name != "-e" && j.p.name != "" {
		if _, err := os.Stat(j.p.name); err == nil {
			in = append(in, j.p.name)
		}
	}
	for _, s := range j.prog.Sources {
		if s.Path != "" {
			in = append(in, s.Path)
		}
	}
	for _, t := range j.prog.Tables {
		if _, given := j.p.tables[t.Name]; !given {
			in = append(in, t.Path)
		}
	}
	return in
}

// run starts the engine over the specs, feeds every source into the
// streams that read it until they end (or ctx is cancelled), and drains.
// interrupted: ctx ended the feeds, some source before its end; decided
// as the feeds end, as a cancel during the drain (every source read to its
// end) interrupts nothing: the outputs are whole.
func (j *Job) run(runCtx context.Context) (_ []engine.Stats, interrupted bool, _ error) {
	// A failed flush ends the feeds (stopFeeds): the run drains and fails
	// rather than read on with nowhere to write.
	ctx, stopFeeds := context.WithCancel(runCtx)
	j.stopFeeds = stopFeeds
	defer j.stopFeeds()
	if j.ckpt != nil {
		// On every way out, a failed start or restore included: a
		// Checkpoint waiting for this run is answered.
		defer j.ckpt.end(errRunEnded)
	}
	specs := j.specs
	if j.ckpt != nil {
		specs = j.ckpt.wrapSpecs(specs)
	}
	cfg := j.opts.Engine
	if reg := j.opts.Metrics; reg != nil {
		started := cfg.Started
		cfg.Started = func(e *engine.Engine) {
			j.addEngineMetrics(reg, e)
			if started != nil {
				started(e)
			}
		}
	}
	eng, err := engine.Start(cfg, specs)
	if err != nil {
		return nil, false, err
	}
	j.eng = eng
	j.running.Store(eng)
	if j.ckpt != nil {
		j.ckpt.src = j.sources[0]
		j.sources[0].ckpt = j.ckpt
		if err := j.ckpt.restore(eng); err != nil {
			eng.Abort(err)
			_, _ = eng.CloseAll()
			return nil, false, err
		}
	}
	feeds := map[*sqlSource][]*engine.Stream{}
	for i, q := range j.prog.Queries {
		if q.Input != "" {
			s := j.source(q.Input)
			feeds[s] = append(feeds[s], eng.Stream(i))
		}
		if q.InputRight != "" {
			s := j.source(q.InputRight)
			feeds[s] = append(feeds[s], eng.Stream(i).Right())
		}
	}
	j.feeds = feeds
	var produced []<-chan error
	for _, s := range j.sources {
		if len(feeds[s]) == 0 {
			// A Nexmark program declares the three tables whichever it
			// reads (examples/nexmark): no warning for those.
			if s.nex == nil {
				fmt.Fprintf(j.log, "saber-hx: warning: source %s feeds no query\n", s.src.Name)
			}
			continue
		}
		s.failed = eng.Failed()
		produced = append(produced, eng.Produce(func() error { return s.feed(ctx, feeds[s], cfg.TaskSize) }))
	}
	stopFlusher := j.startFlusher()
	errs := j.waitFeeds(eng, produced)
	interrupted = runCtx.Err() != nil && slices.ContainsFunc(j.sources, func(s *sqlSource) bool { return len(feeds[s]) > 0 && !s.ended })
	if j.ckpt != nil {
		j.ckpt.end(errRunEnded) // no feed takes a checkpoint any more: answered before the drain
	}
	stats, cerr := eng.CloseAll()
	errs = append(errs, stopFlusher())
	for _, err := range append(errs, cerr) {
		if err != nil {
			return nil, false, err
		}
	}
	return stats, interrupted, nil
}

// waitFeeds waits for every feed, their errors in the order they came:
// the first to fail, or the engine's failure (an output's error), stops
// the others, as a live source (Kafka, standard input, a FIFO) would
// otherwise wait on its next record for ever.
func (j *Job) waitFeeds(eng *engine.Engine, produced []<-chan error) []error {
	ended := make(chan error, len(produced))
	for _, done := range produced {
		go func() { ended <- <-done }()
	}
	failed := eng.Failed()
	errs := make([]error, 0, len(produced))
	for len(errs) < len(produced) {
		select {
		case err := <-ended:
			errs = append(errs, err)
			if err != nil {
				j.stopFeeds()
			}
		case <-failed:
			j.stopFeeds()
			failed = nil
		}
	}
	return errs
}

func (j *Job) source(name string) *sqlSource {
	for _, s := range j.sources {
		if s.src.Name == name {
			return s
		}
	}
	return nil
}

func (j *Job) summarize(stats []engine.Stats, seconds float64) *Summary {
	sum := &Summary{File: j.p.name, Seconds: seconds, Stats: stats}
	var serial, work time.Duration
	for i, q := range j.prog.Queries {
		st := stats[i]
		qs := QuerySummary{Name: q.Name, Tuples: st.Tuples, Windows: st.Windows, Rows: st.Rows,
			Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted,
			SerialFraction: st.SerialFraction(), SerialSeconds: st.SerialTime.Seconds(), WorkerSeconds: st.WorkerTime.Seconds()}
		if s := j.sinks[i]; s != nil {
			qs.Output = s.where
		}
		sum.Queries = append(sum.Queries, qs)
		serial, work = serial+st.SerialTime, work+st.WorkerTime
	}
	if work > 0 {
		sum.SerialFraction = float64(serial) / float64(work)
	}
	for _, s := range j.sources {
		sum.Tuples += s.tuples
		ss := SourceSummary{Name: s.src.Name, Tuples: s.tuples, Malformed: s.malformed()}
		if s.nex != nil {
			ss.Events = s.nex.events()
		}
		sum.Sources = append(sum.Sources, ss)
	}
	return sum
}
