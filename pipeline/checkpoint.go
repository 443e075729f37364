package pipeline

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saber-hx/saber-hx/checkpoint"
	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/source/kafka"
	"github.com/saber-hx/saber-hx/sql"
)

// processStart is when the process started, as near as the program can
// tell: the origin of the recovery time reported after a restore.
var processStart = time.Now()

// checkpointPauseEnv, where set to a duration, makes every checkpoint
// wait that long between writing its temporary file and renaming it (and
// say so on stderr first): the crash tests kill the process there.
const checkpointPauseEnv = "SABER_HX_CHECKPOINT_PAUSE"

// commitPauseEnv, where set to a duration, makes every checkpoint wait
// that long between the checkpoint's rename and the commit of the
// transactional Kafka outputs (saying so on stderr first): a crash there
// leaves a checkpoint whose output was aborted.
const commitPauseEnv = "SABER_HX_COMMIT_PAUSE"

// ckptVersion is the version of run's checkpoint payload: the source's
// positions and the engine's snapshot (checkpoint's header wraps it).
const ckptVersion = 1

// ckptState is what a checkpoint of run holds.
type ckptState struct {
	epoch     uint64
	source    string // the Kafka source's name
	topic     string
	positions map[int32]kafka.Position
	engine    []byte // engine.Snapshot
}

// encodeCkpt is the checkpoint payload: version u8, epoch u64, the source's
// name and topic (u16 length, bytes), the partitions u32 and per partition
// (ascending) its number i32, offset i64 and skip u32, then the engine's
// snapshot to the end.
func encodeCkpt(dst []byte, st *ckptState) []byte {
	le := binary.LittleEndian
	dst = append(dst, ckptVersion)
	dst = le.AppendUint64(dst, st.epoch)
	for _, s := range []string{st.source, st.topic} {
		dst = le.AppendUint16(dst, uint16(len(s)))
		dst = append(dst, s...)
	}
	parts := make([]int32, 0, len(st.positions))
	for p := range st.positions {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	dst = le.AppendUint32(dst, uint32(len(parts)))
	for _, p := range parts {
		pos := st.positions[p]
		dst = le.AppendUint32(dst, uint32(p))
		dst = le.AppendUint64(dst, uint64(pos.Offset))
		dst = le.AppendUint32(dst, uint32(pos.Skip))
	}
	return append(dst, st.engine...)
}

func decodeCkpt(b []byte) (*ckptState, error) {
	le := binary.LittleEndian
	short := errors.New("checkpoint payload truncated")
	if len(b) < 9 {
		return nil, short
	}
	if b[0] != ckptVersion {
		return nil, fmt.Errorf("checkpoint payload version %d, want %d", b[0], ckptVersion)
	}
	st := &ckptState{epoch: le.Uint64(b[1:]), positions: map[int32]kafka.Position{}}
	b = b[9:]
	var strs [2]string
	for i := range strs {
		if len(b) < 2 || len(b) < 2+int(le.Uint16(b)) {
			return nil, short
		}
		n := int(le.Uint16(b))
		strs[i], b = string(b[2:2+n]), b[2+n:]
	}
	st.source, st.topic = strs[0], strs[1]
	if len(b) < 4 {
		return nil, short
	}
	n := int(le.Uint32(b))
	b = b[4:]
	if n > len(b)/16 {
		return nil, short
	}
	for range n {
		p, off, skip := int32(le.Uint32(b)), int64(le.Uint64(b[4:])), le.Uint32(b[12:])
		b = b[16:]
		if off < 0 || skip > 1<<30 {
			return nil, fmt.Errorf("checkpoint: partition %d at offset %d, skip %d", p, off, skip)
		}
		st.positions[p] = kafka.Position{Offset: off, Skip: int(skip)}
	}
	st.engine = b
	return st, nil
}

// checkpointer takes run's checkpoints: at a task boundary of the Kafka
// source's producer (every stream flushed, every task merged), the
// engine's snapshot and the source's positions, after the sinks are
// flushed (what was emitted before the checkpoint is written), and then
// commits the group's offsets of what is out.
type checkpointer struct {
	dir    *checkpoint.Dir
	every  time.Duration
	j      *Job
	src    *sqlSource
	stderr io.Writer

	epoch   uint64
	last    time.Time
	lastFed uint64 // the source's tuples fed at the last checkpoint
	taken   bool   // a checkpoint was taken by this process
	buf     []byte

	commitPause time.Duration // commitPauseEnv

	restored *ckptState // the checkpoint the run started from; nil: none
	fromDir  bool       // the directory held a valid checkpoint at the start
	// afresh: the transactional Kafka outputs committed no checkpoint, so
	// the run starts afresh though the directory held some (alignKafka).
	afresh bool
	// waiters are the Checkpoint calls waiting for the next checkpoint.
	waitMu  sync.Mutex
	waiters []chan error
	ended   bool  // the run's feeds have returned, or the job is closed: no checkpoint will be taken
	endErr  error // end's: what a Checkpoint is answered once ended

	firstAfter atomic.Bool
	recovery   atomic.Int64 // process start to the first window after the restore, ns
	sum        CheckpointSummary
}

// CheckpointSummary is run's summary of its checkpoints (--json:
// "checkpoints").
type CheckpointSummary struct {
	Dir            string  `json:"dir"`
	Taken          int     `json:"taken"`
	Epoch          uint64  `json:"epoch"`          // the last written
	Bytes          int     `json:"bytes"`          // the last one's size
	MaxMillis      float64 `json:"max_ms"`         // the longest
	RestoredEpoch  uint64  `json:"restored_epoch"` // 0: started afresh
	RecoveryMillis float64 `json:"recovery_ms"`    // process start to the first window after the restore; 0: none
}

// summary returns the checkpoints' figures.
func (c *checkpointer) summary() *CheckpointSummary {
	s := c.sum
	s.Dir = c.dir.Path
	if c.restored != nil {
		s.RestoredEpoch = c.restored.epoch
	}
	s.RecoveryMillis = float64(time.Duration(c.recovery.Load()).Microseconds()) / 1e3
	return &s
}

// checkpointConfig checks that the program can be checkpointed: one
// source, from Kafka, and every output a Kafka topic, Redis or a file
// (written as parts, one per checkpoint: checkpoint_file.go). Standard
// output cannot be taken back after a crash.
func checkpointConfig(j *Job) error {
	if n := len(j.prog.Sources); n != 1 {
		return usagef("CheckpointDir (--checkpoint-dir): needs a program of one source, from Kafka (this one has %d)", n)
	}
	if s := j.prog.Sources[0]; s.Connector != "kafka" || j.p.feeds[s.Name] != nil || j.p.reads[s.Name] != nil {
		return usagef("CheckpointDir (--checkpoint-dir): needs the program's source from Kafka, whose offsets a checkpoint holds (source %s reads %s)", s.Name, sourceKind(j, s))
	}
	for _, q := range j.prog.Queries {
		if j.p.rows[q.Name] != nil {
			return usagef("CheckpointDir (--checkpoint-dir): query %s writes to a Go callback (OnRows): checkpoints need every output in Kafka, Redis or a file", q.Name)
		}
		if q.Sink == nil {
			continue
		}
		switch path := q.Sink.Path; q.Sink.Connector {
		case "kafka", "redis":
		case "stdout", "file":
			if q.Sink.Connector == "stdout" {
				path = j.opts.Output
			}
			if path == "-" {
				return usagef("CheckpointDir (--checkpoint-dir): query %s writes to stdout: checkpoints need every output in Kafka or Redis, or a regular file "+
					"(Output, --output FILE; or CREATE SINK ... WITH (connector = 'file', path = ...)), written as a part per checkpoint: "+
					"what went to stdout cannot be taken back after a crash", q.Name)
			}
		default:
			return usagef("CheckpointDir (--checkpoint-dir): query %s writes to %s: checkpoints need every output in Kafka, Redis or a file", q.Name, q.Sink.Connector)
		}
	}
	return nil
}

// loadCheckpoint reads the newest valid checkpoint of dir (nil where there
// is none), warning of every newer one that did not check.
func loadCheckpoint(dir *checkpoint.Dir, stderr io.Writer) (*ckptState, error) {
	c, err := dir.Latest()
	if errors.Is(err, checkpoint.ErrNone) {
		// Without a valid checkpoint the run reads from the group's
		// committed offsets: at least once.
		fmt.Fprintf(stderr, "saber-hx: %v: starting from the group's committed offsets\n", err)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, s := range c.Skipped {
		fmt.Fprintf(stderr, "saber-hx: warning: %v: using the previous checkpoint\n", s)
	}
	st, err := decodeCkpt(c.Payload)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Path, err)
	}
	if st.epoch != c.Epoch {
		return nil, fmt.Errorf("%s: payload of epoch %d", c.Path, st.epoch)
	}
	return st, nil
}

// alignOutputs makes the checkpoint to restore the one the
// transactional Kafka outputs committed last (their epoch markers): the
// newest may be one whose rows were aborted by the crash. Then it settles
// the files' parts on that checkpoint. Call it once the sinks are open and
// before the sources are.
func (c *checkpointer) alignOutputs() error {
	if err := c.alignKafka(); err != nil {
		return err
	}
	return c.recoverFiles()
}

func (c *checkpointer) alignKafka() error {
	epoch, ok, err := c.j.outputEpoch()
	if err != nil {
		return err
	}
	if len(c.j.txnSinks()) == 0 || (ok && c.restored != nil && c.restored.epoch == epoch) {
		return nil
	}
	// Where the run does not go on from the output's checkpoint, its
	// checkpoints are numbered above every one in the directory and the
	// output's: numbered from 1 they were pruned as soon as written (the
	// directory keeps its highest two), and the next restart restored a
	// stale one.
	highest, err := c.dir.Highest()
	if err != nil {
		return err
	}
	if !ok {
		if c.restored != nil {
			fmt.Fprintf(c.stderr, "saber-hx: the Kafka output has committed no checkpoint: starting afresh, not from checkpoint %d\n", c.restored.epoch)
		}
		c.restored, c.epoch, c.afresh = nil, highest, c.fromDir
		c.j.share.resume = map[int32]kafka.Position{}
		return nil
	}
	cp, err := c.dir.Read(epoch)
	var st *ckptState
	if err == nil {
		st, err = decodeCkpt(cp.Payload)
	}
	if err != nil {
		if c.restored != nil && c.restored.epoch > epoch {
			// The newest valid one is past the output's: its rows were
			// aborted, and restoring it would never write them again.
			return fmt.Errorf("the Kafka output stands at checkpoint %d, which cannot be read (%v), and the newest valid one, %d, is past it: restoring it would lose the rows in between (remove %s to start afresh, at least once)",
				epoch, err, c.restored.epoch, c.dir.Path)
		}
		if c.restored != nil {
			// An older one would write its rows since again, which the
			// output has committed: exactly once cannot go on from it.
			return fmt.Errorf("the Kafka output stands at checkpoint %d, which cannot be read (%v), and the newest valid one, %d, is before it: restoring it would write the rows in between again (remove %s to start afresh, at least once)",
				epoch, err, c.restored.epoch, c.dir.Path)
		}
		fmt.Fprintf(c.stderr, "saber-hx: warning: the Kafka output stands at checkpoint %d, which cannot be read (%v), and no other is valid: starting from the group's committed offsets, at least once\n", epoch, err)
		c.epoch = max(c.epoch, highest, epoch)
		return nil
	}
	fmt.Fprintf(c.stderr, "saber-hx: the Kafka output stands at checkpoint %d: restoring it\n", epoch)
	c.restored, c.epoch = st, st.epoch
	c.j.share.resume = st.positions
	return nil
}

func newCheckpointer(dir *checkpoint.Dir, every time.Duration, j *Job, stderr io.Writer, restored *ckptState) (*checkpointer, error) {
	c := &checkpointer{dir: dir, every: every, j: j, stderr: stderr, restored: restored, last: time.Now()}
	if v := os.Getenv(checkpointPauseEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %w", checkpointPauseEnv, v, err)
		}
		c.dir.BeforeRename = func() {
			fmt.Fprintf(stderr, "saber-hx: checkpoint %d: written, renaming in %v\n", c.epoch, d)
			time.Sleep(d)
		}
	}
	if v := os.Getenv(commitPauseEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %w", commitPauseEnv, v, err)
		}
		c.commitPause = d
	}
	if restored != nil {
		c.epoch, c.fromDir = restored.epoch, true
	}
	return c, nil
}

// due says whether a checkpoint is due: once per interval, where the
// source fed tuples since the last one (an idle run's state stands).
func (c *checkpointer) due() bool {
	if c.asked() {
		return true
	}
	if time.Since(c.last) < c.every {
		return false
	}
	if c.taken && c.src.tuples == c.lastFed {
		c.last = time.Now()
		return false
	}
	return true
}

// Checkpoint asks the running job for a checkpoint, taken at the Kafka
// source's next task boundary (within kafka.Linger while the topic is
// quiet), and waits until it is written and its outputs committed, or ctx
// ends. The job needs Options.CheckpointDir. Where no checkpoint will be
// taken (the run's feeds have ended, the run failed, the job is closed) it
// returns an error at once.
func (j *Job) Checkpoint(ctx context.Context) error {
	c := j.ckpt
	if c == nil {
		return errors.New("pipeline: Checkpoint: the job has no CheckpointDir")
	}
	done := make(chan error, 1)
	c.waitMu.Lock()
	if c.ended {
		c.waitMu.Unlock()
		return c.endErr
	}
	c.waiters = append(c.waiters, done)
	c.waitMu.Unlock()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// asked says whether a Checkpoint call waits.
func (c *checkpointer) asked() bool {
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	return len(c.waiters) > 0
}

// answer tells the waiting Checkpoint calls how the checkpoint went.
func (c *checkpointer) answer(err error) {
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	for _, w := range c.waiters {
		w <- err
	}
	c.waiters = nil
}

// errRunEnded and errJobClosed answer a Checkpoint that no checkpoint will
// answer.
var (
	errRunEnded  = errors.New("pipeline: Checkpoint: the run has ended")
	errJobClosed = errors.New("pipeline: Checkpoint: the job is closed")
)

// end answers the waiting Checkpoint calls, and every later one, with err:
// no checkpoint will be taken (the feeds, which take them, have returned,
// or never will). The first end's err stays.
func (c *checkpointer) end(err error) {
	c.waitMu.Lock()
	if !c.ended {
		c.ended, c.endErr = true, err
	}
	err = c.endErr
	c.waitMu.Unlock()
	c.answer(err)
}

// errRunFailed is take's where the engine failed (an output's error,
// which the run returns): no checkpoint is taken.
var errRunFailed = errors.New("checkpoint: not taken: the run failed")

// take writes a checkpoint; it runs on the source's producer goroutine,
// between two FillSome calls.
func (c *checkpointer) take(streams []*engine.Stream) (err error) {
	defer func() { c.answer(err) }()
	select {
	case <-c.j.eng.Failed():
		// An output failed: what the engine counts as out may not be.
		return errRunFailed
	default:
	}
	start := time.Now()
	c.last = start
	for _, st := range streams {
		if err := st.Flush(); err != nil {
			return err
		}
	}
	snap, err := c.j.eng.Snapshot(c.buf[:0])
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	c.buf = snap
	progress := c.j.progress()
	st := &ckptState{epoch: c.epoch + 1, source: c.src.src.Name, topic: c.src.src.Topic, positions: c.src.kafka.Positions(), engine: snap}
	snapped := time.Since(start)
	// What was emitted up to here is in the sinks' buffers: out before
	// the checkpoint that counts it as out.
	for _, s := range c.j.sinks {
		if s != nil {
			if err := s.flush(context.Background()); err != nil {
				return fmt.Errorf("checkpoint %d: %w", st.epoch, err)
			}
		}
	}
	// The files' parts of the epoch are durable before the checkpoint that
	// counts them.
	if err := c.preCommitFiles(st.epoch); err != nil {
		return err
	}
	payload := encodeCkpt(nil, st)
	if err := c.dir.Write(st.epoch, payload); err != nil {
		return err
	}
	// The transactional Kafka outputs commit the epoch's rows once its
	// checkpoint is written: a crash between the two restores the
	// previous checkpoint (which the outputs stand at) and emits the
	// aborted rows again. The files' parts are committed after them: a
	// crash before restores this checkpoint (where the Kafka outputs
	// committed it too), whose recovery commits the parts.
	if len(c.j.txnSinks())+len(c.j.partsSinks())+len(c.j.dirSinks()) > 0 && c.commitPause > 0 {
		fmt.Fprintf(c.stderr, "saber-hx: checkpoint %d: written, committing the outputs in %v\n", st.epoch, c.commitPause)
		time.Sleep(c.commitPause)
	}
	if err := c.j.commitTxns(context.Background(), st.epoch); err != nil {
		return fmt.Errorf("checkpoint %d: %w", st.epoch, err)
	}
	if err := c.commitFiles(st.epoch); err != nil {
		return err
	}
	c.epoch = st.epoch
	c.taken, c.lastFed = true, c.src.tuples
	took := time.Since(start)
	ms := float64(took.Microseconds()) / 1e3
	c.sum.Taken++
	c.sum.Epoch, c.sum.Bytes, c.sum.MaxMillis = st.epoch, len(payload), max(c.sum.MaxMillis, ms)
	fmt.Fprintf(c.stderr, "saber-hx: checkpoint %d: %d bytes in %.2f ms (snapshot %.2f ms)\n", st.epoch, len(payload),
		ms, float64(snapped.Microseconds())/1e3)
	// The group's offsets go no further than a checkpoint: a restart
	// without the directory is still at least once.
	for s, p := range progress {
		s.kafka.Done(p.Merged, p.Complete)
	}
	return nil
}

// restore applies the checkpoint the run started from to a started
// engine, and wraps the specs' outputs to time the first window after it.
func (c *checkpointer) restore(eng *engine.Engine) error {
	if _, err := eng.Snapshot(nil); err != nil {
		return fmt.Errorf("CheckpointDir (--checkpoint-dir): %w", err)
	}
	if c.restored == nil {
		return nil
	}
	if c.restored.source != c.src.src.Name || c.restored.topic != c.src.src.Topic {
		return usagef("checkpoint %d is of source %s (topic %s), not %s (topic %s)", c.restored.epoch, c.restored.source, c.restored.topic, c.src.src.Name, c.src.src.Topic)
	}
	rs, err := eng.Restore(c.restored.engine)
	if err != nil {
		return err
	}
	var merged uint64
	for _, r := range rs {
		merged = max(merged, r.Bytes)
	}
	fmt.Fprintf(c.stderr, "saber-hx: restored checkpoint %d of %s: %d partitions, %d bytes of state, %d stream bytes before it (%.2f ms after the process started)\n",
		c.restored.epoch, c.dir.Path, len(c.restored.positions), len(c.restored.engine), merged, float64(time.Since(processStart).Microseconds())/1e3)
	return nil
}

// wrapSpecs makes every spec's output note the first window after a
// restore (the recovery time).
func (c *checkpointer) wrapSpecs(specs []engine.Spec) []engine.Spec {
	if c.restored == nil {
		return specs
	}
	out := append([]engine.Spec(nil), specs...)
	for i := range out {
		if f := out[i].Tuples; f != nil {
			out[i].Tuples = func(b []byte) error {
				c.noteFirst()
				return f(b)
			}
		}
		if enc := out[i].Encoded; enc != nil {
			write, take := enc.Write, enc.Take
			out[i].Encoded = &engine.TupleEncoder{Encode: enc.Encode, Write: func(b []byte) error {
				c.noteFirst()
				return write(b)
			}}
			if take != nil {
				out[i].Encoded.Take = func(b []byte) ([]byte, error) {
					c.noteFirst()
					return take(b)
				}
			}
		}
		if f := out[i].Windows; f != nil {
			out[i].Windows = func(w *engine.Window) error {
				c.noteFirst()
				return f(w)
			}
		}
	}
	return out
}

func (c *checkpointer) noteFirst() {
	if !c.firstAfter.Load() && c.firstAfter.CompareAndSwap(false, true) {
		d := time.Since(processStart)
		c.recovery.Store(int64(d))
		fmt.Fprintf(c.stderr, "saber-hx: first window after the restore: %.2f ms after the process started\n", float64(d.Microseconds())/1e3)
	}
}

// sourceKind is what source s reads, as the messages say it.
func sourceKind(j *Job, s *sql.Source) string {
	switch {
	case j.p.feeds[s.Name] != nil:
		return "a Go function (AttachSource)"
	case j.p.reads[s.Name] != nil:
		return "an io.Reader (AttachReader)"
	case s.Connector == "file":
		return "the file " + s.Path
	}
	return "connector " + s.Connector
}
