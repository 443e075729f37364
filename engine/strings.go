package engine

// A stream's string heap: where the long strings of its tuples live (a
// String attribute's view holds the address of those longer than
// strview.MaxInline). It is a ring of its own, written by the stream's
// producer beside its tuples and freed in task order with them: a task
// records where the heap stood when it was dispatched, and its merge frees
// the heap up to there. Strings that must outlive the task they came in
// (an upstream's output pushed into this stream, a source feeding several
// streams) are copied into each stream's heap.

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/saber-hx/saber-hx/buffer"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

// minHeapSize bounds a string heap from below: it must hold one record's
// strings (64 KiB and more) with room to spare.
const minHeapSize = 4 << 20

// newHeap makes the heap of a stream of schema s, on NUMA node node as
// its ring (newRing), or nil where s has no String attribute but
// dictionary-encoded ones (dc), whose views point into their dictionary,
// which outlives the run: they are not copied.
func (e *Engine) newHeap(q *query.Query, dc *kernels.DictColumns, node int) (*buffer.Ring, []query.Attribute, []query.Attribute, error) {
	strs, blank := splitStrings(q.Schema, func(_ int, a query.Attribute) bool { return q.Reads(a.Name) })
	if dc != nil {
		strs = slices.DeleteFunc(strs, func(a query.Attribute) bool { _, ok := dc.Numbers[a.Name]; return ok })
	}
	if len(strs)+len(blank) == 0 {
		return nil, nil, nil, nil
	}
	size := max(minHeapSize, 4*e.cfg.BufferSize)
	size = 1 << bits.Len(uint(size-1))
	h, err := e.newRing(size, node) // on its ring's node: the same workers read both
	if err != nil {
		return nil, nil, nil, fmt.Errorf("string heap: %w", err)
	}
	return h, strs, blank, nil
}

// narrowJoinSides makes each window join's input streams copy (and the
// join pin) only the long strings that are read after it: by the join's
// WHERE or a regular join's keys, or by the queries downstream of it
// (which read the pairs' columns by position: their schemas have the
// join's layout). A join whose pairs go to a sink of their own has every
// column read. Before the engine runs: copyStrings reads the lists
// without a lock.
func (e *Engine) narrowJoinSides() {
	for _, en := range e.entries {
		js := en.join
		if js == nil || js.sink != nil || js.enc != nil {
			continue
		}
		out := js.j.OutputSchemaUnchecked()
		read := make([]bool, len(out.Attrs))
		query.Walk(js.j.Where, func(x query.Expr) bool {
			if c, ok := x.(query.Column); ok {
				for i, a := range out.Attrs {
					read[i] = read[i] || a.Name == c.Name
				}
			}
			return true
		})
		for _, d := range js.down {
			for i, a := range d.plan.Query.Schema.Attrs {
				read[i] = read[i] || d.plan.Query.Reads(a.Name)
			}
		}
		left := en.stream
		n := len(left.plan.Query.Schema.Attrs)
		if js.j.Regular {
			// The join reads its keys: a String key emptied would join
			// every tuple with every other.
			read[js.j.LeftKey], read[n+js.j.RightKey] = true, true
		}
		left.readStrings(read[:n])
		left.right.readStrings(read[n:])
	}
}

// narrowViews makes a stateless query whose output only feeds queries
// downstream empty, on the worker that ran each task, the long strings of
// the output's columns that none of them reads (outBlank), rather than
// have its result stage's push, which runs in the stream's order, empty
// them (the downstream streams' blankAttrs). Nexmark q12's view stamps
// bids with the processing time: the query after it reads two numbers of
// them, and the views of three strings were emptied one tuple after
// another in the ordered stage. Before the engine runs.
func (e *Engine) narrowViews() {
	for _, u := range e.streams {
		if !u.plan.Stateless() || len(u.downstream) == 0 || u.sinksTuples() || u.joinSide != nil {
			continue
		}
		out, err := u.plan.Query.OutputSchema()
		if err != nil {
			continue
		}
		_, blank := splitStrings(out, func(_ int, a query.Attribute) bool {
			return slices.ContainsFunc(u.downstream, func(d *Stream) bool { return d.plan.Query.Reads(a.Name) })
		})
		if len(blank) == 0 {
			continue
		}
		u.outBlank = blank
		for _, d := range u.downstream {
			d.blankAttrs = slices.DeleteFunc(d.blankAttrs, func(a query.Attribute) bool {
				return slices.ContainsFunc(blank, func(b query.Attribute) bool { return b.Name == a.Name })
			})
		}
	}
}

// stableInputs marks the streams whose every input is an aggregation's
// output (inputStable): the strings of such rows are GROUP BY values,
// whose views point into the upstream query's dictionary (strview.Dict,
// Plan.EncodeKeys), which keeps its strings for the engine's life, so push
// neither copies them into the stream's heap nor empties those the query
// does not read. Nexmark q8's aggregation of the people copied each
// person's name into its view's heap, in order. So are a regular join's
// pairs: their strings point into its state, which it keeps for the
// engine's life (kernels.RegularJoin; Nexmark q20's projection copied
// every pair's strings in order). Before the engine runs.
func (e *Engine) stableInputs() {
	for _, d := range e.streams {
		d.inputStable = len(d.ups) > 0 && !slices.ContainsFunc(d.ups, func(u *Stream) bool {
			if u.joinSide != nil {
				return !u.joinSide.j.Regular
			}
			return u.asm == nil
		})
	}
}

// blankOutput empties the long strings of the outBlank columns of tuples,
// a task's output.
func (s *Stream) blankOutput(tuples []byte) {
	ts := s.plan.OutTupleSize
	for o := 0; o+ts <= len(tuples); o += ts {
		clearLong(tuples[o:o+ts], s.outBlank)
	}
}

// pinJoinInput copies the long strings of a window join's input tuples, a
// task's output, into the task's own arena strs and points their views
// there: on the worker that ran the task, so that the join, under its
// lock, takes the arena (WindowJoin.AddOwned) rather than copying each
// string into its panes. It empties the long strings of blank, those read
// nowhere: s.blankAttrs for a joinFeed's output, which is not pushed into
// s; nil for tuples pushed into s, which copyStrings emptied already.
func (s *Stream) pinJoinInput(tuples []byte, strs *strview.Arena, blank []query.Attribute) {
	ts := s.plan.TupleSize
	for o := 0; o+ts <= len(tuples); o += ts {
		t := tuples[o : o+ts]
		for k := range s.heapAttrs {
			if v := longView(t, &s.heapAttrs[k]); v != nil {
				strview.PutRef(v, strs.Copy(strview.Bytes(v)))
			}
		}
		clearLong(t, blank)
	}
}

// blankJoinInput is pinJoinInput for a regular join, which copies the
// strings it keeps itself (kernels.RegularJoin.Cut): it only empties the
// long strings of blank.
func (s *Stream) blankJoinInput(tuples []byte, blank []query.Attribute) {
	if len(blank) == 0 {
		return
	}
	ts := s.plan.TupleSize
	for o := 0; o+ts <= len(tuples); o += ts {
		clearLong(tuples[o:o+ts], blank)
	}
}

// cutJoinInput cuts the output of task t of s, a window join's input,
// into the runs of its panes (kernels.WindowJoin.Cut), on the worker that
// ran t: the join, under its lock, files run by run rather than tuple by
// tuple. A regular join's Cut files the tuples and makes their pairs.
func (s *Stream) cutJoinInput(t *task) {
	if js := s.joinSide; js != nil && !t.result.Refused {
		js.op.Cut(s.side, t.result.Out, &t.cut)
	}
}

// prepareFed does for task t of the query that feeds d, a join's side
// (joinFeed), what d's own tasks would do on their worker before the join
// files their tuples: pin or empty their long strings, and cut them (a
// regular join's Cut makes their pairs). It is the join's work, so it
// counts on the join's clock, a frame inside the feeding task's: counted
// on the feeding query's, a regular join fed by a view read as all serial
// (its pairs made in another query's time, only its ordered hand-off in
// its own).
func (d *Stream) prepareFed(t *task, w *worker) {
	var f frame
	if w != nil {
		f = w.beginFrame()
	}
	if len(d.heapAttrs)+len(d.blankAttrs) > 0 {
		if d.joinSide.j.Regular {
			d.blankJoinInput(t.result.Out, d.blankAttrs)
		} else {
			d.pinJoinInput(t.result.Out, &t.result.Strings, d.blankAttrs)
		}
	}
	d.joinSide.op.Cut(d.side, t.result.Out, &t.cut)
	if w != nil {
		w.endFrame(f, d.clock())
	}
}

// longView is the view of attribute a in tuple t where it holds a long
// string (not inline, not NULL), nil otherwise.
func longView(t []byte, a *query.Attribute) []byte {
	v := t[a.Offset : a.Offset+strview.Size]
	if strview.Len(v) <= strview.MaxInline || a.IsNull(t) {
		return nil
	}
	return v
}

// clearLong makes the view of each of attrs in tuple t that holds a long
// string the empty string.
func clearLong(t []byte, attrs []query.Attribute) {
	for k := range attrs {
		if v := t[attrs[k].Offset : attrs[k].Offset+strview.Size]; strview.Len(v) > strview.MaxInline {
			clear(v)
		}
	}
}

// readStrings sets which of the stream's string attributes are copied
// (heapAttrs) and which are emptied (blankAttrs): read says, by index.
func (s *Stream) readStrings(read []bool) {
	s.heapAttrs, s.blankAttrs = splitStrings(s.plan.Query.Schema, func(i int, _ query.Attribute) bool { return read[i] })
}

// splitStrings divides the String attributes of schema s into those that
// are read (read of the attribute and its index) and those that are not.
func splitStrings(s *query.Schema, read func(i int, a query.Attribute) bool) (strs, blank []query.Attribute) {
	for i, a := range s.Attrs {
		switch {
		case a.Type != query.String:
		case read(i, a):
			strs = append(strs, a)
		default:
			blank = append(blank, a)
		}
	}
	return strs, blank
}

// ErrStringsFull is Strings' error where the long strings of the tuples
// not yet committed fill the string heap with the string asked for: no
// merge can free it, as no task holds them. Commit the tuples whose
// strings are placed (their task then frees them), then ask again: a
// decoder stops before the record that asked (source.Options.Strings).
var ErrStringsFull = errors.New("the string heap is full of the strings of tuples not yet committed: commit them, then ask again")

// Strings returns n bytes of the stream's string heap for the long
// strings of tuples the producer is about to commit, blocking while the
// heap is full (back-pressure); the task being filled is dispatched first
// where its strings hold the heap, so that its merge frees them. Where the
// strings of tuples not yet committed hold so much of it that n would
// never fit, it returns ErrStringsFull instead. The bytes stay in place
// until the task that carries the tuples is merged. Call it from the
// producer's goroutine, as Buffer.
func (s *Stream) Strings(n int) ([]byte, error) {
	if s.heap == nil {
		return nil, fmt.Errorf("engine: query %q: its input has no string column", s.win.Query)
	}
	if n > s.heap.Size()/2 {
		return nil, fmt.Errorf("engine: query %q: a string of %d bytes, more than half the %d-byte string heap", s.win.Query, n, s.heap.Size())
	}
	b, ok, err := s.heap.TryReserve(n)
	if err == nil && !ok {
		if err := s.stringsFull(n); err != nil {
			return nil, err
		}
		if s.filled > 0 && !s.unfilled {
			s.dispatch()
		}
		b, err = s.heap.Reserve(n)
	}
	if err != nil {
		if ferr := s.e.failed(); ferr != nil {
			return nil, ferr
		}
		return nil, err
	}
	s.heap.Commit(n)
	return b[:n:n], nil
}

// stringsFull is ErrStringsFull where n more bytes of strings can never
// fit the heap beside those of the tuples not yet committed, which only
// their commit puts in a task that frees them.
func (s *Stream) stringsFull(n int) error {
	if s.heap.Written()-s.heapCommitted+uint64(n) > uint64(s.heap.Size()) {
		return fmt.Errorf("engine: query %q: %d bytes of strings asked, %d held by tuples not yet committed, in a %d-byte heap: %w",
			s.win.Query, n, s.heap.Written()-s.heapCommitted, s.heap.Size(), ErrStringsFull)
	}
	return nil
}

// copyStrings copies the long strings of tuples (whole tuples of the
// stream's schema, just written to its ring) into its heap and points
// their views there: what a producer does for tuples whose strings live
// elsewhere. alloc is where the bytes come from (Strings, or push's
// version that does not block). A long string of an attribute that the
// query never reads (blankAttrs: a view's column that the query over it
// does not use, Nexmark q12's URLs) is not copied: its view becomes the
// empty string, so that nothing is left pointing at memory the producer
// reuses.
//
// Where the tuples' strings together outgrow the heap (ErrStringsFull),
// it commits the tuples before the one that asked and dispatches their
// task, whose merge frees the heap, and goes on: committed is how many
// bytes of tuples it committed so, the caller commits the rest.
func (s *Stream) copyStrings(tuples []byte, alloc func(n int) ([]byte, error)) (committed int, err error) {
	if len(s.heapAttrs)+len(s.blankAttrs) == 0 {
		return 0, nil // the strings this query does not read were emptied upstream (narrowViews)
	}
	ts := s.plan.TupleSize
	for o := 0; o+ts <= len(tuples); o += ts {
		t := tuples[o : o+ts]
		mark := s.heap.Written() // where this tuple's strings begin
		for k := range s.heapAttrs {
			v := longView(t, &s.heapAttrs[k])
			if v == nil {
				continue
			}
			src := strview.Bytes(v)
			b, err := alloc(len(src))
			if errors.Is(err, ErrStringsFull) && o > committed {
				if err := s.commitPlaced(o-committed, mark); err != nil {
					return committed, err
				}
				committed = o
				b, err = alloc(len(src))
			}
			if err != nil {
				return committed, err
			}
			copy(b, src)
			strview.PutRef(v, b)
		}
		clearLong(t, s.blankAttrs)
	}
	return committed, nil
}

// commitPlaced commits n bytes of tuples whose strings are placed, those
// before heap position mark (the strings after it are the next tuple's,
// which another task carries), and dispatches their task, whose merge
// frees the heap up to mark.
func (s *Stream) commitPlaced(n int, mark uint64) error {
	if err := s.commit(n); err != nil {
		return err
	}
	s.heapCommitted = mark
	if s.filled > 0 {
		s.dispatch()
	}
	return nil
}

// CommitCopy commits tuples written into the last Buffer, tuples being its
// prefix, whose long strings live in memory the producer reuses (a
// generator's arena reset after each batch, a client's fetch buffer): it
// first copies those strings into the stream's heap and points the views
// there, as Write does. Without a string heap it is Commit.
func (s *Stream) CommitCopy(tuples []byte) error {
	if s.heap != nil {
		if len(tuples)%s.plan.TupleSize != 0 {
			return fmt.Errorf("engine: query %q: CommitCopy of %d bytes: a stream with strings takes whole tuples", s.win.Query, len(tuples))
		}
		done, err := s.copyStrings(tuples, s.Strings)
		if err != nil {
			return err
		}
		tuples = tuples[done:]
	}
	return s.Commit(len(tuples))
}
