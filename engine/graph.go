package engine

import (
	"fmt"

	"github.com/saber-hx/saber-hx/query"
)

// Spec is one query of an engine and where its output goes.
type Spec struct {
	Query   *query.Query
	Windows Sink      // aggregations: each closed window
	Tuples  TupleSink // output tuples (query.OutputSchema): a stateless query's, or one per aggregation row
	// From names an earlier query of the same engine whose output tuples
	// are this query's input (SABER's connectTo): its output schema must
	// have this query's input layout. Such a stream has no producer of its
	// own.
	From string

	// Join, instead of Query, makes this entry a window join of two
	// streams: Stream(i) is its left input and Stream(i).Right() its right
	// one, fed by producers or, with From and FromRight, by earlier
	// queries. Its output goes to Tuples and to queries that name it.
	Join      *query.WindowJoin
	FromRight string
}

// entry is what one Spec started: a query's stream, or a window join.
type entry struct {
	stream *Stream
	join   *joinStage
}

func (e *Engine) add(sp Spec) error {
	if sp.Join == nil {
		s, err := e.newStream(sp)
		if err == nil && sp.From != "" {
			err = e.connect(s, sp.From)
		}
		if err == nil {
			e.entries = append(e.entries, entry{stream: s})
		}
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
		from   string
	}{{j.Left, ".left", sp.From}, {j.Right, ".right", sp.FromRight}} {
		s, err := e.newStream(Spec{Query: &query.Query{Name: j.Name + side.suffix, Schema: side.schema}, From: side.from})
		if err == nil && side.from != "" {
			err = e.connect(s, side.from)
		}
		if err != nil {
			return err
		}
		s.joinSide, s.side = js, i
		sides[i] = s
	}
	sides[0].right = sides[1]
	e.entries = append(e.entries, entry{stream: sides[0], join: js})
	return nil
}

// connect makes s the downstream of the earlier query or join named from.
func (e *Engine) connect(s *Stream, from string) error {
	for _, en := range e.entries {
		var out *query.Schema
		var err error
		switch {
		case en.join != nil && en.join.j.Name == from:
			out, err = en.join.j.OutputSchema()
		case en.join == nil && en.stream.win.Query == from:
			out, err = en.stream.plan.Query.OutputSchema()
		default:
			continue
		}
		if err != nil {
			return err
		}
		if err := query.SameLayout(out, s.plan.Query.Schema); err != nil {
			return fmt.Errorf("query %q takes the output of %q: %w", s.win.Query, from, err)
		}
		if en.join != nil {
			en.join.down = append(en.join.down, s)
		} else {
			en.stream.downstream = append(en.stream.downstream, s)
		}
		s.upstream = from
		return nil
	}
	return fmt.Errorf("query %q: no earlier query %q to take input from", s.win.Query, from)
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

// output hands output tuples to the TupleSink and the downstream queries.
func (s *Stream) output(tuples []byte) error {
	if len(tuples) == 0 {
		return nil
	}
	if s.joinSide != nil {
		return s.joinSide.add(s.side, tuples, s.worker)
	}
	if s.spec.Tuples != nil {
		if err := s.spec.Tuples(tuples); err != nil {
			return fmt.Errorf("query %q output: %w", s.win.Query, err)
		}
	}
	for _, d := range s.downstream {
		if err := d.push(tuples, s.worker); err != nil {
			return err
		}
	}
	return nil
}

// push writes an upstream query's output into this stream's ring. It runs on
// a worker inside the upstream's result stage, so it must not block: while
// the ring is full, the worker runs other tasks (the ones that free it).
func (s *Stream) push(p []byte, w *worker) error {
	for len(p) > 0 {
		b, ok, err := s.ring.TryReserve(s.taskSize - s.filled)
		if err != nil {
			if ferr := s.e.failed(); ferr != nil {
				return ferr
			}
			return err
		}
		if !ok {
			w.help()
			continue
		}
		n := copy(b, p)
		p = p[n:]
		if err := s.commit(n); err != nil {
			return err
		}
	}
	return nil
}
