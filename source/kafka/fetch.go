package kafka

// Reading: FillSome's loop, the poll that fetches records and decodes
// them into the partitions' buffers, the idle clock, and the pauses that
// are the source's back-pressure. The merge of the buffers is merge.go's.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/retry"
	"github.com/saber-hx/saber-hx/source"
)

// FillSome writes whole tuples at the start of dst and returns the bytes
// written. It blocks until it has written at least one, ctx is done (then
// it returns ctx.Err(), with n possibly > 0) or, with StopAtEnd, every
// partition has been read to its end (io.EOF, with n == 0). The long
// strings of the tuples it writes (their views' memory, see Strings) are
// valid until the next FillSome call or Close: copy them before calling
// it again. After Close it fails.
func (s *Source) FillSome(ctx context.Context, dst []byte) (n int, err error) {
	ts := s.ts
	if len(dst) < ts {
		return 0, source.ErrShortBuffer
	}
	dst = dst[:len(dst)/ts*ts]
	defer func() {
		s.mu.Lock()
		s.outSince = time.Now()
		s.mu.Unlock()
	}()
	for {
		s.mu.Lock()
		s.idleClock() // the first time round: the engine was away
		if s.err != nil {
			err := s.err
			s.mu.Unlock()
			return n, err
		}
		if len(s.strParts) > 0 {
			// No tuple produced yet by this call: those of earlier calls
			// are read, and their strings' memory is free.
			if err := s.release(); err != nil {
				s.err = err
				s.mu.Unlock()
				return n, err
			}
		}
		n = s.merge(dst, n)
		s.pushMarks()
		eof := n == 0 && s.atEnd()
		epoch := s.rebalances
		s.mu.Unlock()
		s.applyPauses(s.cl)
		if n > 0 {
			return n, nil
		}
		if eof {
			return 0, io.EOF
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
		if err := s.poll(ctx, epoch); err != nil {
			return n, err
		}
	}
}

// atEnd is whether, with StopAtEnd, every assigned partition has been
// read to its end and produced.
func (s *Source) atEnd() bool {
	if !s.cfg.StopAtEnd || !s.assigned || len(s.heap) > 0 {
		return false
	}
	for _, p := range s.parts {
		if p != nil && p.assigned && !p.ended {
			return false
		}
	}
	return true
}

// poll waits for records (until the next idle deadline at most) and
// decodes them into the partitions' buffers; it returns at once if the
// assignment changed since FillSome looked at it (epoch).
func (s *Source) poll(ctx context.Context, epoch uint64) error {
	// A rebalance wakes the poll (wake): it may leave nothing to wait for.
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	if s.rebalances != epoch {
		s.mu.Unlock()
		return nil
	}
	deadline, ok := s.idleDeadline(time.Now())
	s.wake = cancel
	s.mu.Unlock()
	if ok {
		var dcancel context.CancelFunc
		pctx, dcancel = context.WithDeadline(pctx, deadline)
		defer dcancel()
	}
	if s.fetchers == nil {
		b := &polled{fetches: s.cl.PollRecords(pctx, s.maxPoll)}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.wake = nil
		err := s.take(ctx, b)
		b.recycleRecords()
		return err
	}
	s.startFetchers()
	var got bool
	s.taking, got = s.waitPolled(pctx, s.taking[:0])
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wake = nil
	if !got {
		// The idle deadline, a wake, ctx done or Close.
		if err := ctx.Err(); err != nil {
			return err
		}
		select {
		case <-s.stop:
			return fmt.Errorf("kafka source %s: %w", s.cfg.Topic, kgo.ErrClientClosed)
		default:
			return nil
		}
	}
	var err error
	for _, b := range s.taking {
		if err == nil {
			err = s.take(ctx, b)
		}
	}
	// A fetcher given its slot back polls again at once, from what its
	// client buffered: the partitions these polls filled are paused
	// first, or that poll brings them a third poll's records.
	pause, resume := s.takePauses()
	s.sendPauses(nil, pause, resume)
	for i, b := range s.taking {
		s.recycle(b)
		s.taking[i] = nil
	}
	if s.cfg.afterTake != nil {
		s.cfg.afterTake(s)
	}
	return err
}

// take decodes what a poll gave into the partitions' buffers (s.mu
// held).
func (s *Source) take(ctx context.Context, b *polled) error {
	// Every record polled is decoded even when another partition reports
	// an error: kgo will not return it again. A decode error (sticky)
	// ends the decoding.
	var ferr, ctxErr error
	polledAt := time.Now()
	rec := 0 // the index in b.recs of fp's first record
	b.fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		if ferr != nil {
			return
		}
		first := rec
		rec += len(fp.Records)
		if fp.Topic == s.cfg.Topic && fp.Partition >= 0 && int(fp.Partition) < len(s.parts) {
			if p := s.parts[fp.Partition]; p != nil && p.assigned { // else revoked: its new owner reads these again
				p.high = fp.HighWatermark
				if len(fp.Records) > 0 {
					p.lastRecords = polledAt
				}
				for i, r := range fp.Records {
					kept, err := s.addPolled(p, r, b, first+i)
					if err != nil {
						ferr = err
						return
					}
					if kept {
						b.kept = append(b.kept, int32(first+i))
					}
				}
				if p.n >= s.bufCap && !p.paused {
					p.paused = true
					s.pauseReq = append(s.pauseReq, p.id)
				}
			}
		}
		switch err := fp.Err; {
		case err == nil:
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			// The idle deadline or a wake when ctx is not done.
			if ctx.Err() != nil {
				ctxErr = ctx.Err()
			}
		case errors.Is(err, kgo.ErrClientClosed):
			ferr = fmt.Errorf("kafka source %s: %w", s.cfg.Topic, err)
		case retry.KafkaTransient(err):
			// A broker down or restarting, the group session lost with
			// it: kgo retries and joins again by itself, and the
			// partitions go on from where they were (or, handed over,
			// from the commit). Reported, not fatal.
			s.outage.Failed(fmt.Errorf("fetch partition %d: %w", fp.Partition, err), 0)
		default:
			ferr = fmt.Errorf("kafka source %s: fetch partition %d: %w", s.cfg.Topic, fp.Partition, s.guard.Err(err))
		}
	})
	if ferr != nil {
		if s.err == nil { // the first stays: Close's, say
			s.err = ferr
		}
		return ferr
	}
	return ctxErr
}

// idleClock moves the partitions' idle clocks on by the time since
// FillSome last returned (s.mu held): a partition is idle when polls
// bring it nothing for IdleTimeout, and nothing is polled for the merge
// while the engine is busy with what FillSome gave it (back-pressure, a
// flush, a checkpoint), when the partition's records wait in the client
// or in Kafka. Flink's idleness stops its clock the same way while a
// source is back-pressured (FLIP-471).
func (s *Source) idleClock() {
	if s.outSince.IsZero() {
		return
	}
	away := time.Since(s.outSince)
	s.outSince = time.Time{}
	for _, p := range s.parts {
		if p == nil {
			continue
		}
		if !p.lastRecords.IsZero() {
			p.lastRecords = p.lastRecords.Add(away)
		}
		if !p.emptySince.IsZero() {
			p.emptySince = p.emptySince.Add(away)
		}
	}
}

// idleDeadline is when the first partition the merge waits on turns idle;
// it starts the clock of those waited on for the first time.
func (s *Source) idleDeadline(now time.Time) (time.Time, bool) {
	if s.idle < 0 || s.waiting == 0 {
		return time.Time{}, false
	}
	var first time.Time
	for _, p := range s.parts {
		if p == nil || !p.waiting {
			continue
		}
		if p.emptySince.IsZero() {
			p.emptySince = now
		}
		// Idle counts from the partition's last records, where it had
		// any, not from when the merge came to wait on it: partitions
		// that all went quiet at once turn idle together, rather than one
		// IdleTimeout after another as the merge drains each in turn.
		since := p.emptySince
		if !p.lastRecords.IsZero() && p.lastRecords.Before(since) {
			since = p.lastRecords
		}
		d := since.Add(s.idle)
		if !d.After(now) {
			p.idle = true
			s.refresh(p)
			s.logf("kafka source %s: partition %d idle (nothing for %v): it no longer holds the merge back", s.cfg.Topic, p.id, s.idle)
			continue
		}
		if first.IsZero() || d.Before(first) {
			first = d
		}
	}
	if s.waiting == 0 {
		// Turned idle just now: the merge can go on without polling long.
		return now, true
	}
	return first, !first.IsZero()
}

// add decodes record r of p into p's buffer: one tuple, or as many as
// the value has lines (each then completes at r's offset). Where p's
// string memory is full, r (from the line that found it full) and the
// records of p polled after it wait in p.backlog, p paused, until
// FillSome frees memory (drain).
func (s *Source) add(p *part, r *kgo.Record) error {
	_, err := s.addPolled(p, r, nil, 0)
	return err
}

// addPolled is add of the i-th record of b, whose fetcher may have
// decoded it already (b nil: r is not a fetcher's). kept: r waits in
// p.backlog, its value still to be read; else it may be recycled.
func (s *Source) addPolled(p *part, r *kgo.Record, b *polled, i int) (kept bool, err error) {
	if p.bhead < len(p.backlog) {
		p.backlog = append(p.backlog, r)
		return true, nil
	}
	if !s.admit(p, r) {
		return false, nil
	}
	if b != nil && len(b.recs) > 0 && !b.recs[i].serial {
		got, err := s.replay(p, r, b, i)
		if err == nil {
			s.decoded(p, r, got)
		}
		return false, err
	}
	waits, err := s.decode(p, r, 0, 0, false)
	if waits {
		p.backlog = append(p.backlog, r)
	}
	return waits, err
}

// admit says whether record r of p is to be decoded, and counts it.
func (s *Source) admit(p *part, r *kgo.Record) bool {
	if s.cfg.StopAtEnd && p.ended {
		return false // past the end offset seen at open
	}
	if s.cfg.StopAtEnd && p.end >= 0 && r.Offset >= p.end {
		// Past the end with no record at it: the records before it were
		// an aborted transaction's, which read_committed skips, and its
		// marker lies past the end (another transaction was open).
		s.ended(p)
		s.refresh(p)
		return false
	}
	if p.next >= 0 && r.Offset < p.next {
		return false // already read (a fetch from before a reset)
	}
	if r.Attrs.IsControl() {
		return true // read (decode moves past it), not a record of the topic's
	}
	s.stats.Records++
	s.stats.Bytes += int64(len(r.Value))
	return true
}

// decode decodes admitted record r of p from byte off of its value, got
// of its tuples pushed already and mal whether a line of it was
// malformed. It returns true, with p.boff, p.bgot and p.bmal set, where
// a line found p's string memory full: decoding goes on from that line
// once FillSome has freed memory.
func (s *Source) decode(p *part, r *kgo.Record, off, got int, mal bool) (waits bool, err error) {
	if r.Attrs.IsControl() {
		// A transaction's commit or abort marker takes an offset: the
		// partition's end offset counts it, so StopAtEnd ends only once
		// it is read.
		s.decoded(p, r, 0)
		return false, nil
	}
	if s.binary {
		if len(r.Value) == s.ts {
			s.push(p, r.Value, r.Offset)
			got = 1
		} else if !s.skipBin {
			return false, fmt.Errorf("kafka source %s: partition %d offset %d: binary value of %d bytes, want the tuple's %d", s.cfg.Topic, p.id, r.Offset, len(r.Value), s.ts)
		} else {
			s.malformed++
		}
	} else {
		val := r.Value[off:]
		if off == 0 {
			val = valueText(val)
		}
		m0 := s.dec.Malformed()
		for len(val) > 0 {
			slot := p.reserve(s.ts)
			s.cur = p
			t, c, err := s.dec.Decode(slot, val, true)
			s.cur = nil
			if err != nil {
				if errors.Is(err, errStringsFull) {
					s.wait(p, r, len(r.Value)-len(val)+c, got, mal || s.dec.Malformed() != m0)
					return true, nil
				}
				return false, recordError(s.cfg.Topic, p.id, r.Offset, err)
			}
			val = val[c:]
			if t == 1 {
				got = s.pushLine(p, r, got)
			}
			if c == 0 {
				break
			}
		}
		if got == 0 && !mal && s.dec.Malformed() == m0 {
			s.malformed++ // an empty value
		}
	}
	s.decoded(p, r, got)
	return false, nil
}

// valueText is a record's value as text to decode: without a byte order
// mark at its start. Every value is a document of its own, and some
// producers start each with one; a decoder would drop it only on the
// first line it decodes, which with fetchers is one record of each
// fetcher's decoder and one of FillSome's.
func valueText(v []byte) []byte { return source.TrimBOM(v) }

// pushLine pushes the tuple decoded into p's reserved slot from a line
// of record r, got of whose tuples were pushed before, and returns got
// with it counted.
func (s *Source) pushLine(p *part, r *kgo.Record, got int) int {
	if p.skip > 0 && r.Offset == p.skipAt {
		// Taken before the checkpoint this source resumes from.
		p.skip--
		return got
	}
	if got > 0 && p.n > 0 {
		// An earlier line of this record (the last tuple buffered,
		// unless produced already): producing it does not finish the
		// record, so it completes only the records before (the commit
		// stops at this one until its last line is out).
		p.offs[p.head+p.n-1] = r.Offset - 1
	}
	s.push(p, nil, r.Offset)
	return got + 1
}

// decoded moves p on past record r, which gave got tuples.
func (s *Source) decoded(p *part, r *kgo.Record, got int) {
	p.next = r.Offset + 1
	if r.Offset >= p.skipAt {
		p.skip = 0
	}
	if s.cfg.StopAtEnd && p.end >= 0 && p.next >= p.end {
		s.ended(p)
	}
	if got == 0 {
		p.skipped(r.Offset, s)
	}
	s.refresh(p)
}

// ended marks p read to its end (StopAtEnd) and stops fetching it.
func (s *Source) ended(p *part) {
	p.ended = true
	if !p.paused {
		p.paused = true
		s.pauseReq = append(s.pauseReq, p.id)
	}
}

// wait makes record r of p wait for string memory from byte off of its
// value (got of its tuples pushed, mal whether a line was malformed),
// and stops fetching p meanwhile.
func (s *Source) wait(p *part, r *kgo.Record, off, got int, mal bool) {
	if got > 0 && p.n > 0 {
		// Its lines buffered do not finish it (see decode).
		p.offs[p.head+p.n-1] = r.Offset - 1
	}
	p.boff, p.bgot, p.bmal = off, got, mal
	s.stats.StringWaits++
	if !p.paused {
		p.paused = true
		s.pauseReq = append(s.pauseReq, p.id)
	}
	s.refresh(p) // its lines pushed, if any, end its wait
}

// push appends the tuple in p's reserved slot (copying val there first
// when non-nil) as the record at offset off.
func (s *Source) push(p *part, val []byte, off int64) {
	slot := p.reserve(s.ts)
	if val != nil {
		copy(slot, val)
	}
	t := int64(binary.LittleEndian.Uint64(slot[s.timeOff:]))
	p.push(t, off)
	if t > p.wm {
		p.wm = t
	}
	p.emptySince = time.Time{}
	p.idle = false
	if p.n == 1 {
		s.heapPush(p.id)
	}
}

// recordError names the record a decoder refused (its line number counts
// every record the decoder saw, so it is left out).
// decodeError is a record that did not decode: its message names the
// record, and it wraps the decoder's *source.Error.
type decodeError struct {
	msg string
	err error
}

func (e *decodeError) Error() string { return e.msg }
func (e *decodeError) Unwrap() error { return e.err }

func recordError(topic string, part int32, off int64, err error) error {
	var e *source.Error
	if errors.As(err, &e) {
		var b strings.Builder
		if e.Column > 0 {
			fmt.Fprintf(&b, "column %d", e.Column)
		}
		if e.Field != "" {
			if b.Len() > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "(field %q)", e.Field)
		}
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(e.Msg)
		// The record's place replaces the line's, but the error is still
		// the decoder's (errors.As finds it: a caller tells bad input
		// from a failure as it does for files).
		return &decodeError{msg: fmt.Sprintf("kafka source %s: partition %d offset %d: %s", topic, part, off, b.String()), err: e}
	}
	return fmt.Errorf("kafka source %s: partition %d offset %d: %w", topic, part, off, err)
}

// applyPauses tells kgo which partitions to stop and start fetching.
func (s *Source) applyPauses(cl *kgo.Client) {
	s.mu.Lock()
	pause, resume := s.takePauses()
	s.mu.Unlock()
	s.sendPauses(cl, pause, resume)
}

// takePauses returns the partitions to stop and start fetching, asked
// since the last call (s.mu held).
func (s *Source) takePauses() (pause, resume []int32) {
	pause, resume = s.pauseReq, s.resumeReq
	s.pauseReq, s.resumeReq = nil, nil
	return pause, resume
}

// sendPauses has kgo stop fetching pause and start fetching resume: cl,
// or each fetcher's client its own (kgo's pauses take only its lock).
func (s *Source) sendPauses(cl *kgo.Client, pause, resume []int32) {
	if len(pause) == 0 && len(resume) == 0 {
		return
	}
	if s.fetchers == nil {
		if len(pause) > 0 {
			cl.PauseFetchPartitions(map[string][]int32{s.cfg.Topic: pause})
		}
		if len(resume) > 0 {
			cl.ResumeFetchPartitions(map[string][]int32{s.cfg.Topic: resume})
		}
		return
	}
	for _, f := range s.fetchers {
		if ids := f.own(pause); len(ids) > 0 {
			f.cl.PauseFetchPartitions(map[string][]int32{s.cfg.Topic: ids})
		}
		if ids := f.own(resume); len(ids) > 0 {
			f.cl.ResumeFetchPartitions(map[string][]int32{s.cfg.Topic: ids})
		}
	}
}
