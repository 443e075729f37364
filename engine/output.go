package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// Window is one closed window handed to a Sink: its rows in group-key
// order. It is only valid during the Sink call.
type Window struct {
	Query string
	// Start and End bound the window's positions, [Start, End); End is
	// math.MaxInt64 for a window that ends past it (such a window closes
	// only at the end of the input).
	Start, End int64

	plan  *kernels.Plan
	res   *window.Result
	key   [16]byte
	canon []byte
}

// Rows is the number of rows (groups) in the window.
func (w *Window) Rows() int { return len(w.res.Rows) }

// Key returns the group key of row i (nil without GROUP BY): the joined
// value when grouping by a static join, else the GROUP BY values encoded as
// query.AppendIntKey and raw bytes, concatenated (see GroupInt). The slice
// is valid until the next call.
func (w *Window) Key(i int) []byte {
	s := w.res.Rows[i]
	if !w.plan.Layout.Hashed {
		return w.plan.GroupKeys[s]
	}
	w.key = w.res.State.KeyBytes(s)
	last := w.plan.KeyParts[len(w.plan.KeyParts)-1]
	return w.key[:last.Pos+last.Width]
}

// CanonicalKey returns the GROUP BY values of row i in their canonical
// forms (query's key forms: strings as their bytes, NULL first), what the
// reference evaluator's rows hold; the bytes of Key are the kernels' own,
// a string's a number. The slice is valid until the next call.
func (w *Window) CanonicalKey(i int) []byte {
	s := w.res.Rows[i]
	if !w.plan.Layout.Hashed {
		return w.plan.GroupKeys[s]
	}
	kb := w.res.State.KeyBytes(s)
	w.canon = w.plan.AppendCanonicalKey(w.canon[:0], kb[:])
	return w.canon
}

// GroupInt returns integer GROUP BY value j of row i (0 where it is NULL).
func (w *Window) GroupInt(i, j int) int64 {
	kb := w.res.State.KeyBytes(w.res.Rows[i])
	v, _, _, _ := w.plan.KeyValue(kb[:], j)
	return v
}

// Group returns the group ordinal of row i: for dense groups the index of
// its key in the plan's GroupKeys; for hashed groups a slot, meaningful only
// during this call.
func (w *Window) Group(i int) int32 { return w.res.Rows[i] }

// Agg returns aggregate a (by position: in the query's order) of row i as
// an integer; a float aggregate (AggIsFloat) is truncated toward zero,
// silently. Prefer the aggregate's name: Column, checked once (the name
// exists, the type is known), then Int or Float, which refuse the wrong
// type.
func (w *Window) Agg(i, a int) int64 {
	v, f, isFloat := w.plan.AggValue(w.res.State.Row(w.res.Rows[i]), a)
	if isFloat {
		return int64(f)
	}
	return v
}

// AggFloat returns aggregate a of row i as a float.
func (w *Window) AggFloat(i, a int) float64 {
	v, f, isFloat := w.plan.AggValue(w.res.State.Row(w.res.Rows[i]), a)
	if isFloat {
		return f
	}
	return float64(v)
}

// AggNull reports whether aggregate a of row i is NULL (it took no tuple:
// a FILTER, NULL arguments); Agg and AggFloat then read 0.
func (w *Window) AggNull(i, a int) bool { return w.plan.AggNull(w.res.State.Row(w.res.Rows[i]), a) }

// AggIsFloat reports whether aggregate a is a float.
func (w *Window) AggIsFloat(a int) bool { return w.plan.Aggs[a].Float }

// ResultColumn is a column of a query's windows, resolved by its name in
// the query's output schema (query.Query.OutputSchema: an aggregate's As,
// else agg1, agg2, ...; a GROUP BY column's name, else key1, key2, ...)
// once, when the query starts (Stream.Column) or at its first window
// (Window.Column): reading it per row is then an index, not a search, and
// its type is known before the first row is read. A column is an
// aggregate or an integer GROUP BY value.
type ResultColumn struct {
	Name string
	// Float says the column is a float (AVG, or an aggregate of a float
	// argument): read it with Window.Float; else with Window.Int.
	Float bool
	plan  *kernels.Plan
	agg   int // the aggregate's position; -1: a GROUP BY value
	key   int // a GROUP BY value's position among the key's parts
}

// Column resolves a result column of the stream's query by name (see
// ResultColumn), or says why it cannot: no such column (the error lists
// the valid ones), the window start, a GROUP BY value that is not an
// integer (read it with Window.Key), or a query that outputs tuples.
func (s *Stream) Column(name string) (ResultColumn, error) { return resultColumn(s.plan, name) }

// Column is Stream.Column for this window's query.
func (w *Window) Column(name string) (ResultColumn, error) { return resultColumn(w.plan, name) }

func resultColumn(p *kernels.Plan, name string) (ResultColumn, error) {
	q := p.Query
	if p.Stateless() {
		return ResultColumn{}, fmt.Errorf("query %q outputs tuples, not windows: it has no result column %q", q.Name, name)
	}
	out, err := q.OutputSchema()
	if err != nil {
		return ResultColumn{}, fmt.Errorf("query %q: %w", q.Name, err)
	}
	attrs := out.Attrs
	firstAgg := len(attrs) - len(q.Aggregates)
	firstKey := firstAgg - len(q.GroupBy)
	for i, a := range attrs {
		if a.Name != name {
			continue
		}
		switch {
		case i >= firstAgg:
			return ResultColumn{Name: name, Float: p.Aggs[i-firstAgg].Float, plan: p, agg: i - firstAgg, key: -1}, nil
		case i >= firstKey:
			k := i - firstKey
			if !p.Layout.Hashed || !intKey(p, k) {
				return ResultColumn{}, fmt.Errorf("query %q: GROUP BY value %q is not an integer: read it with Window.Key", q.Name, name)
			}
			return ResultColumn{Name: name, plan: p, agg: -1, key: k}, nil
		case i == 0:
			return ResultColumn{}, fmt.Errorf("query %q: %q is the window's start: read Window.Start", q.Name, name)
		}
		break // a projection: no window has it
	}
	names := make([]string, 0, len(attrs)-firstKey)
	for _, a := range attrs[firstKey:] {
		names = append(names, a.Name)
	}
	return ResultColumn{}, fmt.Errorf("query %q has no result column %q (valid: %s)", q.Name, name, strings.Join(names, ", "))
}

// intKey reports whether GROUP BY value k is an integer (or a time).
func intKey(p *kernels.Plan, k int) bool {
	for _, kp := range p.KeyParts {
		if kp.Key == k && kp.Kind != kernels.KeyNullFlag {
			return kp.Kind == kernels.KeyInt
		}
	}
	return false
}

// Int returns integer column c of row i. It panics where c is a float
// (c.Float: read it with Float) or not a column of this window's query.
func (w *Window) Int(i int, c ResultColumn) int64 {
	if c.plan != w.plan || c.Float {
		w.badColumn(c, "Int")
	}
	if c.agg < 0 {
		return w.GroupInt(i, c.key)
	}
	v, _, _ := w.plan.AggValue(w.res.State.Row(w.res.Rows[i]), c.agg)
	return v
}

// Float returns float column c of row i. It panics where c is an integer
// (read it with Int) or not a column of this window's query.
func (w *Window) Float(i int, c ResultColumn) float64 {
	if c.plan != w.plan || !c.Float {
		w.badColumn(c, "Float")
	}
	_, f, _ := w.plan.AggValue(w.res.State.Row(w.res.Rows[i]), c.agg)
	return f
}

func (w *Window) badColumn(c ResultColumn, by string) {
	switch {
	case c.plan == nil:
		panic(fmt.Sprintf("engine: Window.%s: an unresolved ResultColumn (resolve it with Column)", by))
	case c.plan != w.plan:
		panic(fmt.Sprintf("engine: Window.%s: result column %q of query %q read in a window of query %q", by, c.Name, c.plan.Query.Name, w.Query))
	case c.Float:
		panic(fmt.Sprintf("engine: Window.Int: query %q's result column %q is a float: read it with Float", w.Query, c.Name))
	}
	panic(fmt.Sprintf("engine: Window.Float: query %q's result column %q is an integer: read it with Int", w.Query, c.Name))
}

// Sink receives closed windows in window order. An error stops the run.
type Sink func(w *Window) error

// TupleSink receives a stateless query's output tuples, in input order, one
// task's worth per call; tuples is only valid during the call. An error
// stops the run.
type TupleSink func(tuples []byte) error

// TupleEncoder is a sink that writes its own encoding of the output tuples
// (lines of text, say): the workers encode them before the ordered stage,
// which only writes, so that a sink's formatting is not serial. Encode
// appends the encoding of whole output tuples to dst; it runs on any
// worker, any number at once, and must read only its arguments and what
// does not change while the engine runs. Write receives the encodings in
// output order, as TupleSink the tuples; enc is only valid during the
// call, and an error stops the run.
//
// Take, where set, is Write for an encoding that the engine holds in a
// buffer of its own (the whole buffer: a stateless query's task's, a
// join's, or one made in order), which it gives the sink rather than
// lend it, so that the sink keeps it rather than copying it: the sink
// owns enc from the call on (the engine neither reads nor writes it
// again), and returns spare, a buffer that the engine owns in its place
// and encodes the next output into (appending to spare[:0]): an empty
// one, a buffer taken before that the sink has finished with (it must
// neither read nor write it afterwards), or nil (the engine allocates
// one at its next Encode). On an error, which stops the run, spare is
// still the engine's: enc itself where the sink kept nothing, or nil.
// Write stays required: where the encodings of several outputs share a
// buffer (a partitioned aggregation's windows), Write gets each. Take
// nil: Write gets every encoding.
//
// Copy, where set, is for a sink whose Write and Take only place the
// encodings, in order, and leave their copies to the files to be done
// later, in any order (a partitioned file output's writes, each to its
// own bytes): the workers run it after their tasks, out of the ordered
// stage, any number at once, so that what the sink writes grows with the
// workers. It must return once nothing is left to start, and leave an
// error to a later Write or Take; the sink itself runs what is left when
// it is flushed.
type TupleEncoder struct {
	Encode func(dst, tuples []byte) []byte
	Write  func(enc []byte) error
	Take   func(enc []byte) (spare []byte, err error)
	Copy   func()
}

// give hands the encoding in *buf to Take, where set, and leaves the
// spare buffer in *buf; else to Write.
func (e *TupleEncoder) give(buf *[]byte) error {
	if e.Take == nil {
		return e.Write(*buf)
	}
	spare, err := e.Take(*buf)
	*buf = spare[:0]
	return err
}

// encodeRows appends the rows of window o as output tuples
// (query.OutputSchema).
func (s *Stream) encodeRows(dst []byte, o *window.Result) []byte {
	p := s.plan
	if s.outSchema == nil || !s.outGeneral {
		return s.encodeNumeric(dst, o)
	}
	out := s.outSchema
	for _, g := range o.Rows {
		n := len(dst)
		dst = append(dst, make([]byte, out.TupleSize)...)
		p.EncodeRow(dst[n:], out, o.Start, o.End, o.State, g)
	}
	return dst
}

// encodeNumeric is encodeRows where every key and aggregate is an int64,
// a float64 or a bytes column's bytes, none NULL: each appended in turn.
func (s *Stream) encodeNumeric(dst []byte, o *window.Result) []byte {
	p := s.plan
	for _, g := range o.Rows {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(o.Start))
		if p.Layout.Hashed {
			kb := o.State.KeyBytes(g)
			for _, kp := range p.KeyParts {
				if kp.Int {
					dst = binary.LittleEndian.AppendUint64(dst, uint64(query.DecodeIntKey(kb[kp.Pos:], kp.Width)))
				} else {
					dst = append(dst, kb[kp.Pos:kp.Pos+kp.Width]...)
				}
			}
		} else if len(p.Query.GroupBy) > 0 {
			dst = append(dst, p.GroupKeys[g]...)
		}
		row := o.State.Row(g)
		for a := range p.Aggs {
			i, f, isFloat := p.AggValue(row, a)
			if isFloat {
				i = int64(math.Float64bits(f))
			}
			dst = binary.LittleEndian.AppendUint64(dst, uint64(i))
		}
	}
	return dst
}

// generalOutput reports whether an aggregation's output tuples need more
// than encodeNumeric: a string, boolean or NULL value.
func generalOutput(out *query.Schema) bool {
	for _, a := range out.Attrs {
		if a.Nullable || a.Type == query.String || a.Type == query.Int32 {
			return true
		}
	}
	return false
}
