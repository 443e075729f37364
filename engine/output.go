package engine

import (
	"encoding/binary"
	"math"

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

	plan *kernels.Plan
	res  *window.Result
	key  [16]byte
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
	k0, k1 := w.res.State.Key(s)
	binary.BigEndian.PutUint64(w.key[0:], k0)
	binary.BigEndian.PutUint64(w.key[8:], k1)
	last := w.plan.KeyParts[len(w.plan.KeyParts)-1]
	return w.key[:last.Pos+last.Width]
}

// GroupInt returns integer GROUP BY value j of row i.
func (w *Window) GroupInt(i, j int) int64 {
	kp := w.plan.KeyParts[j]
	return query.DecodeIntKey(w.Key(i)[kp.Pos:], kp.Width)
}

// Group returns the group ordinal of row i: for dense groups the index of
// its key in the plan's GroupKeys; for hashed groups a slot, meaningful only
// during this call.
func (w *Window) Group(i int) int32 { return w.res.Rows[i] }

// Agg returns integer aggregate a (in the query's order) of row i; a float
// aggregate is truncated (use AggFloat).
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

// AggIsFloat reports whether aggregate a is a float.
func (w *Window) AggIsFloat(a int) bool { return w.plan.Aggs[a].Float }

// Sink receives closed windows in window order. An error stops the run.
type Sink func(w *Window) error

// TupleSink receives a stateless query's output tuples, in input order, one
// task's worth per call; tuples is only valid during the call. An error
// stops the run.
type TupleSink func(tuples []byte) error

// encodeRows appends the rows of window o as output tuples
// (query.OutputSchema).
func (s *Stream) encodeRows(dst []byte, o *window.Result) []byte {
	p := s.plan
	for _, g := range o.Rows {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(o.Start))
		if p.Layout.Hashed {
			var kb [16]byte
			k0, k1 := o.State.Key(g)
			binary.BigEndian.PutUint64(kb[0:], k0)
			binary.BigEndian.PutUint64(kb[8:], k1)
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
