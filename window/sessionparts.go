package window

import (
	"encoding/binary"
	"fmt"
	"math"
)

// SessionParts is Sessions cut by key: n Sessions, each over the keys
// whose hash falls to it, so that n workers assemble sessions at once
// where one Sessions is one worker at a time.
//
// A key's sessions depend only on its own records and on the watermark
// before each, which is the same in every partition: a record carries
// the largest time of its task's tuples before it (the session kernel's
// record), and every partition merges every task, so each moves its
// watermark at the end of each task as one Sessions would. So a
// partition closes, merges and drops its keys' sessions exactly as one
// Sessions would, HAVING included. What one Sessions emits in a task is
// the sessions whose end the task's watermark (minus the delay) reached,
// in order of end, start and key; since a session closed later always
// ends later (a new session ends past the watermark that closed the
// earlier one, and sessions only grow), that order is one total order
// over the whole run, and a task's output is the partitions' outputs,
// each already in that order, merged by it (Assemble).
//
// The engine drives it as it drives Parts (engine/assembly.go): Split,
// MergePart per partition in task order, Assemble, Commit. A partition's
// PartOut holds its closed sessions as windows of one row each, W being
// the session's end (Result.Window: the order the flush cuts ranges by,
// AssembleRange).
type SessionParts struct {
	gap, delay int64
	layout     *Layout
	parts      []*Sessions
	// newKeyOrder makes a comparison of string keys for each partition
	// and each Assembled (each keeps scratch of its own); nil: key bytes.
	newKeyOrder func() func(a, b []byte) int

	partsResult
}

// NewSessionParts returns the n-partition stage of sessions of gap, delay
// and hashed layout l (n >= 1).
func NewSessionParts(gap, delay int64, l *Layout, n int) *SessionParts {
	if !l.Hashed {
		panic("window: SessionParts of sessions without keys")
	}
	p := &SessionParts{gap: gap, delay: delay, layout: l, partsResult: newPartsResult(n, math.MaxInt64)}
	for range n {
		p.parts = append(p.parts, NewSessions(gap, delay, l))
	}
	return p
}

// SetKeyOrder orders sessions that end and start together by comparisons
// that newCmp makes, one for each partition and each Assembled (nil: by
// key bytes), as Sessions.SetKeyOrder.
func (p *SessionParts) SetKeyOrder(newCmp func() func(a, b []byte) int) {
	p.newKeyOrder = newCmp
	for _, s := range p.parts {
		var c func(a, b []byte) int
		if newCmp != nil {
			c = newCmp()
		}
		s.SetKeyOrder(c)
	}
}

// N is the number of partitions.
func (p *SessionParts) N() int { return len(p.parts) }

// Split cuts task result r, a session kernel's records, into subs, one per
// partition: each gets its keys' records in order, and every one the
// task's counters and watermark. It reads r and writes subs only.
func (p *SessionParts) Split(r *TaskResult, subs []TaskResult) {
	n := len(p.parts)
	subs = subs[:n]
	for k := range subs {
		sub := &subs[k]
		sub.Out = sub.Out[:0]
		sub.Tuples, sub.Filtered, sub.Unmatched, sub.MaxTS = r.Tuples, r.Filtered, r.Unmatched, r.MaxTS
	}
	rs := SessionRecordSize(p.layout)
	be := binary.BigEndian
	for o := 0; o+rs <= len(r.Out); o += rs {
		rec := r.Out[o : o+rs]
		k := partOf(be.Uint64(rec[16:24]), be.Uint64(rec[24:32]), n)
		subs[k].Out = append(subs[k].Out, rec...)
	}
}

// MergePart merges sub, partition k's split of the next task (Split), into
// partition k, recording the sessions it closes in out. Callers go in task
// order per partition; different partitions may merge at once.
func (p *SessionParts) MergePart(k int, sub *TaskResult, out *PartOut) error {
	s := p.parts[k]
	out.reset()
	before := s.Counters
	err := s.MergeTake(sub, out.emit)
	out.Delta = p.delta(k, &before, &s.Counters)
	out.WM, out.Complete = s.wm, s.Complete()
	return err
}

// delta is partition k's part of a task's counters: its records' Late and
// Counted; the task's tuples, filtered and unmatched, which every
// partition sees, counted by partition 0 only.
func (p *SessionParts) delta(k int, before, after *Counters) Counters {
	d := Counters{Late: after.Late - before.Late, Counted: after.Counted - before.Counted}
	if k == 0 {
		d.Tuples, d.Filtered, d.Unmatched = after.Tuples-before.Tuples, after.Filtered-before.Filtered, after.Unmatched-before.Unmatched
	}
	return d
}

// FlushLimit says whether a session is still open: the flush closes them
// all in one step (the limit is math.MaxInt64, n is not needed).
func (p *SessionParts) FlushLimit(n int64) (limit int64, ok bool) {
	for _, s := range p.parts {
		if len(s.closes.h) > 0 {
			return math.MaxInt64, true
		}
	}
	return 0, false
}

// FlushPart emits every session partition k holds open into out, as the
// end of the input closes them (limit is FlushLimit's).
func (p *SessionParts) FlushPart(k int, limit int64, out *PartOut) error {
	s := p.parts[k]
	out.reset()
	err := s.Flush(out.emit)
	out.Delta = Counters{}
	out.WM, out.Complete = s.wm, s.Complete()
	return err
}

// Assemble merges outs, the partitions' sessions of one task (every
// partition's, in partition order), into dst in the order one Sessions
// emits them: by end, start, then key. It reads outs and writes dst only.
func (p *SessionParts) Assemble(outs []PartOut, dst *Assembled) {
	n := len(outs)
	dst.Wins, dst.Keys, dst.Vals = dst.Wins[:0], dst.Keys[:0], dst.Vals[:0]
	dst.Windows, dst.RowsOut, dst.Rows = 0, 0, outs[0].Rows
	dst.WM, dst.Complete, dst.Delta = outs[0].WM, int64(math.MaxInt64), Counters{}
	dst.layout = p.layout
	for k := range outs {
		d := &outs[k].Delta
		dst.Delta.Tuples += d.Tuples
		dst.Delta.Filtered += d.Filtered
		dst.Delta.Unmatched += d.Unmatched
		dst.Delta.Late += d.Late
		dst.Delta.Counted += d.Counted
		dst.Complete = min(dst.Complete, outs[k].Complete)
	}
	if dst.keyOrder == nil && p.newKeyOrder != nil {
		dst.keyOrder = p.newKeyOrder()
	}
	words := p.layout.Words()
	if cap(dst.heads) < n {
		dst.heads = make([]int, n)
	}
	heads := dst.heads[:n]
	clear(heads)
	for {
		best := -1
		for k := range outs {
			if heads[k] < len(outs[k].Wins) && (best < 0 || dst.sessionBefore(&outs[k], heads[k], &outs[best], heads[best])) {
				best = k
			}
		}
		if best < 0 {
			return
		}
		o := &outs[best]
		w := o.Wins[heads[best]]
		heads[best]++
		from := dst.RowsOut
		if dst.Rows {
			dst.Keys = append(dst.Keys, o.Keys[2*w.From:2*w.To]...)
			dst.Vals = append(dst.Vals, o.Vals[int(w.From)*words:int(w.To)*words]...)
		}
		dst.RowsOut += uint64(w.To - w.From)
		dst.Wins = append(dst.Wins, PartWindow{W: w.W, Start: w.Start, End: w.End, From: int32(from), To: int32(dst.RowsOut)})
		dst.Windows++
	}
}

// sessionBefore says whether session i of a closes before session j of b:
// by end, start, then key (where rows, and so keys, are kept).
func (dst *Assembled) sessionBefore(a *PartOut, i int, b *PartOut, j int) bool {
	x, y := &a.Wins[i], &b.Wins[j]
	if x.End != y.End {
		return x.End < y.End
	}
	if x.Start != y.Start {
		return x.Start < y.Start
	}
	if !a.Rows {
		return false
	}
	xk, yk := a.Keys[2*x.From:2*x.From+2], b.Keys[2*y.From:2*y.From+2]
	if dst.keyOrder == nil {
		return xk[0] < yk[0] || xk[0] == yk[0] && xk[1] < yk[1]
	}
	be := binary.BigEndian
	be.PutUint64(dst.keyBytes[0:], xk[0])
	be.PutUint64(dst.keyBytes[8:], xk[1])
	be.PutUint64(dst.keyBytes[16:], yk[0])
	be.PutUint64(dst.keyBytes[24:], yk[1])
	return dst.keyOrder(dst.keyBytes[0:16], dst.keyBytes[16:32]) < 0
}

// AssembleRange is Assemble of the sessions ending from lo to hi of outs
// only, with tmp (one per partition) as scratch: a flush's sessions,
// assembled by several goroutines at once, each a range of them.
func (p *SessionParts) AssembleRange(outs []PartOut, lo, hi int64, tmp []PartOut, dst *Assembled) {
	p.Assemble(cutRange(outs, lo, hi, tmp), dst)
}

// MergeTake splits r, merges it into every partition, assembles and
// commits it, and emits its sessions: the engine's steps, in turn.
func (p *SessionParts) MergeTake(r *TaskResult, emit func(*Result) error) error {
	if r.Refused {
		return fmt.Errorf("window: merge of a task whose tuple %d (position %d) was refused", r.RefusedAt, r.RefusedPos)
	}
	p.Split(r, p.seqSubs)
	for k := range p.parts {
		if err := p.MergePart(k, &p.seqSubs[k], &p.seqOuts[k]); err != nil {
			return err
		}
	}
	return p.emitAssembled(p.Assemble, emit)
}

// Flush emits every session still open: the end of the input closes them.
func (p *SessionParts) Flush(emit func(*Result) error) error {
	if _, ok := p.FlushLimit(0); !ok {
		return nil
	}
	for k := range p.parts {
		if err := p.FlushPart(k, math.MaxInt64, &p.seqOuts[k]); err != nil {
			return err
		}
	}
	return p.emitAssembled(p.Assemble, emit)
}

// SetFilter is not for SessionParts: its partitions filter at once, each
// with a filter of its own (SetFilters).
func (p *SessionParts) SetFilter(keep func(st *GroupState, group int32) bool) {
	if keep != nil {
		panic("window: SessionParts.SetFilter: use SetFilters (one filter per partition)")
	}
	p.SetFilters(nil)
}

// SetFilters gives each partition a filter of newKeep's (HAVING): the
// partitions filter at once. nil keeps every session.
func (p *SessionParts) SetFilters(newKeep func() func(st *GroupState, group int32) bool) {
	setFilters(p.parts, newKeep)
}

// AppendSnapshot appends the open sessions of every partition as one
// Sessions writes them (Sessions.AppendSnapshot), so that a snapshot
// restores into any number of partitions. Call it between tasks, once
// every task merged into every partition was committed.
func (p *SessionParts) AppendSnapshot(dst []byte) []byte {
	var all []*session
	for _, s := range p.parts {
		all = append(all, s.closes.h...)
	}
	return appendSessionsSnapshot(dst, p.gap, p.delay, p.wm, p.parts[0].haveWM, &p.c, all)
}

// RestoreSnapshot replaces the state by a snapshot of AppendSnapshot (or
// of one Sessions of the same gap, delay and layout), returning the bytes
// after it: each session goes to its key's partition. On an error the
// stage is left empty.
func (p *SessionParts) RestoreSnapshot(b []byte) (rest []byte, err error) {
	whole := NewSessions(p.gap, p.delay, p.layout)
	rest, err = whole.RestoreSnapshot(b)
	for _, s := range p.parts {
		_, _ = s.RestoreSnapshot(nil) // empties it
	}
	p.c, p.wm, p.complete = Counters{}, math.MinInt64, math.MaxInt64
	if err != nil {
		return nil, err
	}
	be := binary.BigEndian
	for _, ss := range whole.closes.h {
		s := p.parts[partOf(be.Uint64(ss.key[0:8]), be.Uint64(ss.key[8:16]), len(p.parts))]
		s.insert(ss)
	}
	for _, s := range p.parts {
		s.wm, s.haveWM = whole.wm, whole.haveWM
	}
	p.c, p.wm, p.complete = whole.Counters, whole.wm, whole.Complete()
	return rest, nil
}
