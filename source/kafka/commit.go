package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/saber-hx/saber-hx/internal/retry"
)

// Done says that every tuple before stream byte pos has been merged and
// every window holding an event time below complete has been emitted
// (math.MaxInt64 for a stateless query): the records of those tuples may
// be committed.
func (s *Source) Done(pos uint64, complete int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.parts {
		if p == nil || !p.assigned {
			continue
		}
		for p.mhead < len(p.marks) {
			m := p.marks[p.mhead]
			if m.pos > pos || m.max >= complete {
				break
			}
			p.done = m.off + 1
			p.mhead++
		}
	}
}

// committer commits the done offsets every CommitInterval.
func (s *Source) committer() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := s.commit(ctx, nil); err != nil {
				s.commitFailed(err)
			}
			cancel()
		}
	}
}

// commitFailed reports a failed commit (the next one commits the same
// offsets, or later ones): through the outage where the brokers are
// unreachable, so that a commit a second is not a warning a second.
func (s *Source) commitFailed(err error) {
	if retry.KafkaTransient(err) {
		s.outage.Failed(err, 0)
		return
	}
	s.logf("%v", err)
}

// commit commits the done offsets of the assigned partitions (only, when
// non-nil, of those in only) that are past what was committed.
func (s *Source) commit(ctx context.Context, only []int32) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	return s.commitLocked(ctx, s.cl, only)
}

func (s *Source) commitLocked(ctx context.Context, cl *kgo.Client, only []int32) error {
	s.mu.Lock()
	offs := map[int32]int64{}
	for _, p := range s.parts {
		if p == nil || !p.assigned || p.done <= p.committed {
			continue
		}
		if only != nil && !contains(only, p.id) {
			continue
		}
		offs[p.id] = p.done
	}
	s.mu.Unlock()
	if len(offs) == 0 {
		return nil
	}
	var err error
	if s.member {
		err = s.commitMember(ctx, cl, offs)
	} else {
		var os kadm.Offsets
		for id, o := range offs {
			os.AddOffset(s.cfg.Topic, id, o, -1)
		}
		var resp kadm.OffsetResponses
		resp, err = s.adm.CommitOffsets(ctx, s.cfg.Group, os)
		if err == nil {
			err = resp.Error()
		}
	}
	if err != nil {
		return fmt.Errorf("kafka source %s: commit to group %s: %w", s.cfg.Topic, s.cfg.Group, err)
	}
	s.mu.Lock()
	for id, o := range offs {
		if p := s.parts[id]; p != nil && o > p.committed {
			p.committed = o
		}
	}
	s.stats.Commits++
	s.mu.Unlock()
	return nil
}

func (s *Source) commitMember(ctx context.Context, cl *kgo.Client, offs map[int32]int64) error {
	m := make(map[int32]kgo.EpochOffset, len(offs))
	for id, o := range offs {
		m[id] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	var cerr error
	cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{s.cfg.Topic: m},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				cerr = err
				return
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if e := kerr.ErrorForCode(p.ErrorCode); e != nil && cerr == nil {
						cerr = fmt.Errorf("partition %d: %w", p.Partition, e)
					}
				}
			}
		})
	return cerr
}

func contains(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// onAssigned starts the partitions the group gave this member, from their
// committed offsets.
func (s *Source) onAssigned(ctx context.Context, cl *kgo.Client, assigned map[string][]int32) {
	ids := assigned[s.cfg.Topic]
	if len(ids) == 0 {
		s.mu.Lock()
		s.assigned = true
		s.wakePoll()
		s.mu.Unlock()
		return
	}
	next := map[int32]int64{}
	if s.cfg.StopAtEnd {
		// Where each partition starts decides whether it is already at
		// its end.
		resp, err := s.adm.FetchOffsetsForTopics(ctx, s.cfg.Group, s.cfg.Topic)
		for _, id := range ids {
			n := int64(-1)
			if err == nil {
				if o, ok := resp.Lookup(s.cfg.Topic, id); ok && o.Err == nil && o.At >= 0 {
					n = o.At
				}
			}
			if n < 0 {
				if s.cfg.Start == Latest {
					n = s.end[id]
				} else {
					n = s.start[id]
				}
			}
			next[id] = n
		}
	}
	s.mu.Lock()
	for _, id := range ids {
		n, ok := next[id]
		if !ok {
			n = -1
		}
		pos, regained := s.left[id]
		if regained {
			n = pos.Offset
		}
		s.assign(id, n)
		if regained {
			s.parts[id].resumeAt(pos)
		}
	}
	s.wakePoll()
	s.mu.Unlock()
	s.applyPauses(cl)
}

// adjustOffsets (kgo.AdjustFetchOffsetsFn), once the group's committed
// offsets of the partitions just assigned are fetched, makes a partition
// this member had before (s.left) go on from where its stream stood
// then, instead of from the commit: the engine holds what this member
// produced of it, all of it counted, and reading it again from an older
// commit would count it twice. A broker restart loses the member's
// session so, and gives the partitions back. Where the group committed
// past that position, another member read on meanwhile: the partition
// starts at the commit, as for a new owner.
func (s *Source) adjustOffsets(_ context.Context, offs map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	parts := offs[s.cfg.Topic]
	for id, pos := range s.left {
		o, listed := parts[id]
		p := s.part(id)
		if !p.assigned {
			continue // not given back (this time)
		}
		delete(s.left, id)
		if c := o.EpochOffset().Offset; listed && c > pos.Offset {
			p.next, p.skip = c, 0
			continue
		}
		if parts == nil {
			parts = map[int32]kgo.Offset{}
			offs[s.cfg.Topic] = parts
		}
		parts[id] = kgo.NewOffset().At(pos.Offset).WithEpoch(-1)
	}
	return offs, nil
}

// leave notes where the stream of the partitions this member is losing
// stands (s.mu held), for adjustOffsets should they come back.
func (s *Source) leave(ids []int32) {
	for _, id := range ids {
		if int(id) >= len(s.parts) {
			continue
		}
		if pos, ok := s.parts[id].position(); ok {
			if s.left == nil {
				s.left = map[int32]Position{}
			}
			s.left[id] = pos
		}
	}
}

// onRevoked commits the revoked partitions' done offsets and drops their
// buffered tuples: the new owner reads them again from the commit.
func (s *Source) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	ids := revoked[s.cfg.Topic]
	if len(ids) == 0 {
		return
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if err := s.commitLocked(cctx, cl, ids); err != nil {
		s.commitFailed(err)
	}
	cancel()
	s.mu.Lock()
	s.leave(ids)
	for _, id := range ids {
		s.unassign(id)
	}
	s.wakePoll()
	s.mu.Unlock()
	s.applyPauses(cl)
}

// onLost drops partitions lost without a revoke (nothing can be
// committed for them any more).
func (s *Source) onLost(_ context.Context, cl *kgo.Client, lost map[string][]int32) {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.Lock()
	s.leave(lost[s.cfg.Topic])
	for _, id := range lost[s.cfg.Topic] {
		s.unassign(id)
	}
	s.wakePoll()
	s.mu.Unlock()
	s.applyPauses(cl)
}

// wakePoll ends the poll in progress (s.mu held), so that FillSome looks
// at the new assignment.
func (s *Source) wakePoll() {
	s.rebalances++
	if s.wake != nil {
		s.wake()
	}
}

// Position is where reading a partition resumes: the record at Offset,
// of which the first Skip tuples (a value of several lines) were already
// produced.
type Position struct {
	Offset int64
	Skip   int
}

// Positions returns, per assigned partition whose offset is known, the
// first tuple FillSome has not produced yet: a checkpoint of the engine
// taken once it has merged everything FillSome returned, with these
// positions (Config.Resume on restart), resumes the stream exactly: the
// tuples buffered here and not produced are read again, in the same
// merge order. Call it from the goroutine that calls FillSome, between
// calls.
func (s *Source) Positions() map[int32]Position {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int32]Position{}
	for _, p := range s.parts {
		if pos, ok := p.position(); ok {
			out[p.id] = pos
		}
	}
	return out
}

// resumeAt makes p, just assigned at pos.Offset, go on from pos: the
// first pos.Skip tuples of the record there were produced already, and
// are dropped when read again.
func (p *part) resumeAt(pos Position) {
	if pos.Skip > 0 {
		p.skipAt, p.skip = pos.Offset, pos.Skip
		// Counted as produced, for a position taken before the record's
		// other tuples are (its Skip counts them too).
		p.takenRec, p.takenLines = pos.Offset, pos.Skip
	}
}

// position is where reading p again resumes the stream exactly (ok
// false: p is not assigned, or nothing is known of it yet).
func (p *part) position() (Position, bool) {
	switch {
	case p == nil || !p.assigned:
	case p.n > 0:
		rec := p.recs[p.head]
		pos := Position{Offset: rec}
		if rec == p.takenRec {
			pos.Skip = p.takenLines
		}
		return pos, true
	case p.bhead < len(p.backlog):
		// A record waiting for string memory (the first waiting is
		// always one admitted, its tuples pushed counted in takenLines
		// once produced).
		rec := p.backlog[p.bhead].Offset
		pos := Position{Offset: rec}
		if rec == p.takenRec {
			pos.Skip = p.takenLines
		}
		return pos, true
	case p.skip > 0:
		return Position{Offset: p.skipAt, Skip: p.skip}, true
	case p.next >= 0:
		return Position{Offset: p.next}, true
	}
	return Position{}, false
}
