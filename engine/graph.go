package engine

import (
	"fmt"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
)

// Spec is one query of an engine and where its output goes.
//
// The specs given to Start share one index space: spec i is Stream(i),
// CloseAll's Stats[i], RingNode(i), SpecNames()[i], and Output(i) as the
// upstream of a later spec.
type Spec struct {
	Query   *query.Query
	Windows Sink      // aggregations: each closed window
	Tuples  TupleSink // output tuples (query.OutputSchema): a stateless query's, or one per aggregation row
	// Encoded, where set, also receives the output tuples, encoded: by the
	// worker that ran the task for a stateless query, by the one that
	// linked the windows for a partitioned aggregation, else in order.
	Encoded *TupleEncoder
	// Upstream, if set (Output(i)), is the earlier spec i of the same Start
	// whose output tuples are this query's input (SABER's connectTo): its
	// output schema must have this query's input layout. Such a stream has
	// no producer of its own. The zero Ref: an external producer.
	Upstream Ref
	// DictColumns, where set, says which string columns of the producer's
	// tuples carry their numbers in a dictionary beside their views (a
	// source's decoders encode them: source.Column.Dict), the views
	// pointing into the dictionary where long: the query groups by those
	// numbers (kernels.DictColumns), and the stream copies none of those
	// strings, which outlive the run with the dictionary. Not for a query
	// with Upstream.
	DictColumns *kernels.DictColumns

	// Join, instead of Query, makes this entry a window join of two
	// streams: Stream(i) is its left input and Stream(i).Right() its right
	// one, fed by producers or, with Upstream and UpstreamRight, by earlier
	// specs. Its output goes to Tuples and to the specs downstream of it.
	Join          *query.WindowJoin
	UpstreamRight Ref
}

// Ref is a typed edge of the graph: a reference to an earlier spec of the
// same Start, by its index (Output). The zero Ref refers to none.
type Ref struct {
	i   int
	set bool
}

// Output refers to the output of spec i of the same Start (as the
// Upstream or UpstreamRight of a later spec).
func Output(i int) Ref { return Ref{i: i, set: true} }

// Spec returns the index of the spec r refers to; ok is false for the zero
// Ref.
func (r Ref) Spec() (i int, ok bool) { return r.i, r.set }

func (r Ref) String() string {
	if !r.set {
		return "no upstream"
	}
	return fmt.Sprintf("Output(%d)", r.i)
}

// entry is what one Spec started: a query's stream, or a window join.
type entry struct {
	stream *Stream
	join   *joinStage
}

// name is the name of the spec's query or join.
func (sp *Spec) name() string {
	switch {
	case sp.Join != nil:
		return sp.Join.Name
	case sp.Query != nil:
		return sp.Query.Name
	}
	return ""
}

// upstream resolves one of a spec's two edges to the index of an earlier
// entry; -1: none.
func (e *Engine) upstream(sp *Spec, field string, ref Ref) (int, error) {
	at := len(e.entries)
	i, ok := ref.Spec()
	switch {
	case !ok:
		return -1, nil
	case i < 0 || i >= at:
		if at == 0 {
			return 0, fmt.Errorf("spec 0 (%q): %s is %v, but the first spec has no earlier spec to take input from", sp.name(), field, ref)
		}
		return 0, fmt.Errorf("spec %d (%q): %s is %v, not an earlier spec (Output(0) to Output(%d))", at, sp.name(), field, ref, at-1)
	}
	return i, nil
}

func (e *Engine) add(sp Spec) error {
	up, err := e.upstream(&sp, "Upstream", sp.Upstream)
	if err != nil {
		return err
	}
	if sp.Join == nil {
		if sp.UpstreamRight != (Ref{}) {
			return fmt.Errorf("spec %d (%q): UpstreamRight without a Join", len(e.entries), sp.name())
		}
		s, err := e.newStream(sp, up >= 0)
		if err == nil && up >= 0 {
			err = e.connect(s, up)
		}
		if err == nil {
			e.entries = append(e.entries, entry{stream: s})
		}
		return err
	}
	upRight, err := e.upstream(&sp, "UpstreamRight", sp.UpstreamRight)
	if err != nil {
		return err
	}
	j := sp.Join
	js, err := newJoinStage(e, j, sp)
	if err != nil {
		return err
	}
	var sides [2]*Stream
	for i, side := range []struct {
		schema *query.Schema
		suffix string
		up     int
	}{{j.Left, ".left", up}, {j.Right, ".right", upRight}} {
		s, err := e.newStream(Spec{Query: &query.Query{Name: j.Name + side.suffix, Schema: side.schema}}, side.up >= 0)
		if err == nil && side.up >= 0 {
			err = e.connect(s, side.up)
		}
		if err != nil {
			return err
		}
		s.joinSide, s.side = js, i
		sides[i] = s
	}
	sides[0].right = sides[1]
	js.sides = sides
	js.clock = &sides[0].lat.clock
	e.entries = append(e.entries, entry{stream: sides[0], join: js})
	return nil
}

// connect makes s the downstream of the earlier entry up.
func (e *Engine) connect(s *Stream, up int) error {
	en := e.entries[up]
	var out *query.Schema
	var err error
	if en.join != nil {
		out, err = en.join.j.OutputSchema()
	} else {
		out, err = en.stream.plan.Query.OutputSchema()
	}
	if err != nil {
		return err
	}
	from := en.stream.specName()
	if err := query.SameLayout(out, s.plan.Query.Schema); err != nil {
		return fmt.Errorf("query %q takes the output of %q: %w", s.win.Query, from, err)
	}
	if en.join != nil {
		en.join.down = append(en.join.down, s)
		s.feeder = &en.join.drainMu
		s.feedJoin = en.join
		s.ups = []*Stream{en.stream, en.stream.right}
	} else {
		s.ups = []*Stream{en.stream}
		en.stream.downstream = append(en.stream.downstream, s)
		s.feeder = &en.stream.mergeMu
	}
	s.upstream = from
	s.initPartial()
	return nil
}

// specNames are the names of the queries and joins, in order.
func (e *Engine) specNames() []string {
	var n []string
	for _, en := range e.entries {
		n = append(n, en.stream.specName())
	}
	return n
}

// specName is the name of the query or join the stream belongs to.
func (s *Stream) specName() string {
	if s.joinSide != nil {
		return s.joinSide.j.Name
	}
	return s.win.Query
}

// sinksTuples says whether the spec's sinks take output tuples.
func (s *Stream) sinksTuples() bool { return s.spec.Tuples != nil || s.spec.Encoded != nil }

// output hands output tuples to the TupleSink and the downstream queries.
func (s *Stream) output(tuples []byte) error { return s.outputEncoded(tuples, nil, false, nil, nil) }

// outputEncoded is output with the tuples' encoding for Spec.Encoded
// (where encoded is set: made before the ordered stage; else made here,
// in s.encBuf). own, where set, is the buffer that holds enc, the whole
// of it, which the encoder's Take may keep, leaving a spare in its place
// (TupleEncoder.give); else enc is lent to Write. lend, where set, is
// the buffer that holds tuples, which a downstream stream with a
// hand-off may keep (pushLent), leaving another in its place.
func (s *Stream) outputEncoded(tuples, enc []byte, encoded bool, own, lend *[]byte) error {
	if len(tuples) == 0 {
		return nil
	}
	if s.joinSide != nil {
		return s.joinSide.add(s.side, &tuples, false, nil, nil, s.worker)
	}
	if s.spec.Tuples != nil {
		if err := s.spec.Tuples(tuples); err != nil {
			return fmt.Errorf("query %q output: %w", s.win.Query, err)
		}
	}
	if e := s.spec.Encoded; e != nil {
		var err error
		switch {
		case !encoded:
			s.encBuf = e.Encode(s.encBuf[:0], tuples)
			err = e.give(&s.encBuf)
		case own != nil:
			err = e.give(own)
		default:
			err = e.Write(enc)
		}
		if err != nil {
			return fmt.Errorf("query %q output: %w", s.win.Query, err)
		}
	}
	for _, d := range s.downstream {
		var err error
		if d.hand != nil && lend != nil {
			err = d.pushLent(lend, s.worker)
		} else {
			err = d.push(tuples, s.worker)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// push writes an upstream query's output into this stream's ring. It runs on
// a worker inside the upstream's result stage, so it must not block: while
// the ring is full, the worker runs other tasks (the ones that free it),
// merging only those of this stream or later ones (worker.pushing).
func (s *Stream) push(p []byte, w *worker) error {
	if s.hand != nil {
		s.hand.copied(s.taskStart + uint64(s.filled))
	}
	for len(p) > 0 {
		b, err := s.reserve(w)
		if err != nil {
			return err
		}
		n := copy(b, p)
		p = p[n:]
		done := 0
		if s.heap != nil && !s.inputStable {
			var err error
			if done, err = s.copyStrings(b[:n], func(n int) ([]byte, error) { return s.pushStrings(n, w) }); err != nil {
				return err
			}
		}
		s.awaitRecord(n-done, w)
		if err := s.commit(n - done); err != nil {
			return err
		}
	}
	return nil
}

// awaitRecord makes sure, where committing n bytes fills the task and so
// dispatches it, that a task record is free: dispatch would wait for one
// without running anything, on the very worker that may be the one to run
// and merge the tasks that free the records (a window join's pairs into
// a projection after it hung so on one worker). As for a full ring, the
// worker runs other tasks meanwhile (waitRoom: a merge that recycles a
// record frees ring room too).
func (s *Stream) awaitRecord(n int, w *worker) {
	for s.filled+n == s.taskSize && len(s.free) == 0 && s.made == len(s.records) {
		s.waitRoom(w)
	}
}

// pushLent is push for a stream with a hand-off: *out, a stateless
// query's output that the worker which ran its task found lendable
// (task.lendable: handOff.lends and Stream.lendable), stays in its
// buffer, which the stream keeps until its tasks that read it are merged,
// and *out becomes a buffer of the hand-off's pool; only the positions
// are reserved and committed.
func (s *Stream) pushLent(out *[]byte, w *worker) error {
	p, h := *out, s.hand
	h.add(s.taskStart+uint64(s.filled), p)
	h.lent++
	*out = h.take(cap(p))
	for n := len(p); n > 0; {
		b, err := s.reserve(w)
		if err != nil {
			return err
		}
		k := min(n, len(b))
		s.awaitRecord(k, w)
		if err := s.commit(k); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// reserve returns the rest of the task being filled in the ring, for push,
// which must not block: while the ring is full, the worker runs other
// tasks or waits for the stream's merge to free it.
func (s *Stream) reserve(w *worker) ([]byte, error) {
	for {
		b, ok, err := s.ring.TryReserve(s.taskSize - s.filled)
		if err != nil {
			if ferr := s.e.failed(); ferr != nil {
				return nil, ferr
			}
			return nil, err
		}
		if ok {
			return b, nil
		}
		s.waitRoom(w)
	}
}

// waitRoom runs other tasks, or else waits for s's merge to free its ring
// and heap, merging meanwhile only the tasks of s or of later streams
// (worker.pushing).
func (s *Stream) waitRoom(w *worker) {
	prev := w.pushing
	w.pushing = max(prev, s.id+1)
	if !w.tryHelp() {
		w.waitBell(s.room)
	}
	w.pushing = prev
	// A push outside any merge (a join's output) has no merge to return
	// to that would take up what it deferred.
	w.drainDeferred()
}

// pushStrings is Strings for push, which must not block: while the heap
// is full, the worker dispatches the task being filled (whose strings
// hold the heap) and runs other tasks, as push does for the ring.
func (s *Stream) pushStrings(n int, w *worker) ([]byte, error) {
	if n > s.heap.Size()/2 {
		return nil, fmt.Errorf("engine: query %q: a string of %d bytes, more than half the %d-byte string heap", s.win.Query, n, s.heap.Size())
	}
	for {
		b, ok, err := s.heap.TryReserve(n)
		if err != nil {
			if ferr := s.e.failed(); ferr != nil {
				return nil, ferr
			}
			return nil, err
		}
		if ok {
			s.heap.Commit(n)
			return b[:n:n], nil
		}
		if err := s.stringsFull(n); err != nil {
			return nil, err
		}
		if s.filled > 0 {
			s.dispatch()
		}
		s.waitRoom(w)
	}
}
