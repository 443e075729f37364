package pipeline

// File outputs under --checkpoint-dir: each written as part files, one per
// checkpoint epoch (package sink, Parts), pre-committed in the
// checkpoint's flush, committed once the checkpoint is durable, settled on
// a restart by the checkpoint restored.

import (
	"fmt"
	"os"
	"strings"

	"github.com/saber-hx/saber-hx/sink"
	"github.com/saber-hx/saber-hx/sql"
)

// openPartsSink opens a query's file output under checkpoints.
func (j *Job) openPartsSink(q *sql.Query, path, format string) (*rowSink, error) {
	p, err := sink.CreateParts(path, j.inputs()...)
	if err != nil {
		return nil, fmt.Errorf("query %s: CheckpointDir (--checkpoint-dir): %w", q.Name, err)
	}
	s, err := newRowSink(q, format, p.Pattern(), p, nil)
	if err != nil {
		return nil, err
	}
	s.parts = p
	return s, nil
}

// partsSinks are the run's file outputs written as parts.
func (j *Job) partsSinks() []*rowSink {
	var out []*rowSink
	for _, s := range j.sinks {
		if s != nil && s.parts != nil {
			out = append(out, s)
		}
	}
	return out
}

// recoverFiles settles the file outputs' parts on the checkpoint the run
// resumes from (once alignOutputs has decided it): a pre-committed epoch
// of it committed, later epochs removed; the next part is the run's next
// checkpoint's. A directory without a checkpoint does not own parts that
// exist, nor does a run that starts afresh because its Kafka outputs
// committed none: the start is refused rather than remove what an earlier
// run wrote.
func (c *checkpointer) recoverFiles() error {
	var epoch uint64
	if c.restored != nil {
		epoch = c.restored.epoch
	}
	for _, s := range c.j.partsSinks() {
		committed, err := s.parts.Committed()
		if err != nil {
			return err
		}
		if (!c.fromDir || c.afresh) && len(committed) > 0 {
			var names []string
			for _, p := range committed[:min(3, len(committed))] {
				names = append(names, p.Path)
			}
			if len(committed) > 3 {
				names = append(names, fmt.Sprintf("and %d more", len(committed)-3))
			}
			why := fmt.Sprintf("the checkpoint directory %s holds no checkpoint", c.dir.Path)
			if c.afresh {
				why = "the Kafka output has committed no checkpoint, so the run starts afresh"
			}
			return usagef("%s, but %s already holds parts of an earlier run (%s): "+
				"resume that run with its checkpoint directory, or remove its parts (rm %s) to start afresh",
				why, s.parts.Name(), strings.Join(names, ", "), s.parts.Pattern())
		}
		note := func(format string, args ...any) {
			fmt.Fprintf(c.stderr, "saber-hx: "+format+"\n", args...)
		}
		if err := s.parts.Recover(epoch, c.epoch+1, note); err != nil {
			return err
		}
		if kept, err := s.parts.Committed(); err != nil {
			return err
		} else if len(kept) > 0 {
			// The header went out in the first part, which stays: drop
			// the one newRowSink wrote, so that it appears once.
			s.w.Reset(s.parts)
		}
	}
	return c.recoverPartitioned(epoch)
}

// preCommitFiles ends epoch's parts: written (the sinks are flushed) and
// durable, before its checkpoint is.
func (c *checkpointer) preCommitFiles(epoch uint64) error {
	for _, s := range c.j.partsSinks() {
		if err := s.preCommit(epoch); err != nil {
			return fmt.Errorf("checkpoint %d: %w", epoch, err)
		}
	}
	for _, s := range c.j.dirSinks() {
		s.mu.Lock()
		err := s.part.part.PreCommit(epoch)
		s.mu.Unlock()
		if err != nil {
			return fmt.Errorf("checkpoint %d: %w", epoch, err)
		}
	}
	return nil
}

// preCommit flushes a file output and pre-commits epoch's part, holding
// the sink: a row written meanwhile (none should be, the checkpoint's
// tasks all merged) goes to the next epoch, not into this one's part
// after its flush.
func (s *rowSink) preCommit(epoch uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", s.where, err)
	}
	return s.parts.PreCommit(epoch)
}

// commitFiles publishes epoch's parts, its checkpoint durable.
func (c *checkpointer) commitFiles(epoch uint64) error {
	for _, s := range c.j.partsSinks() {
		if err := s.parts.Commit(epoch); err != nil {
			return fmt.Errorf("checkpoint %d: %w", epoch, err)
		}
	}
	for _, s := range c.j.dirSinks() {
		if err := s.part.part.Commit(epoch); err != nil {
			return fmt.Errorf("checkpoint %d: %w", epoch, err)
		}
	}
	return nil
}

// commitLastPart commits what a run that ended (--duration) emitted after
// its last checkpoint: the drain's windows, in a part of the next epoch,
// so that the parts hold what a run without checkpoints writes. No
// checkpoint counts it: a run resumed from the last one removes it, and
// emits its windows again.
func (j *Job) commitLastPart(s *rowSink) error {
	e := s.parts.Epoch()
	if err := s.preCommit(e); err != nil {
		return err
	}
	if err := s.parts.Commit(e); err != nil {
		return err
	}
	if _, err := os.Stat(s.parts.PartPath(e)); err == nil {
		fmt.Fprintf(j.log, "saber-hx: %s: the windows open at the end, after checkpoint %d (a run resumed from that checkpoint replaces this part)\n",
			s.parts.PartPath(e), e-1)
	}
	return nil
}

// interruptedNote is what run says of its files when a signal stopped it.
func (j *Job) interruptedNote() string {
	if len(j.partsSinks())+len(j.dirSinks()) == 0 {
		return "interrupted: no output file written (those named keep their contents)"
	}
	return fmt.Sprintf("interrupted: the files' parts are committed up to checkpoint %d; the rows after it are not written "+
		"(a run resumed from it emits them)", j.ckpt.epoch)
}
