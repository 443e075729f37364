package kernels

import (
	"encoding/binary"
	"math"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// fusedKernel is the aggregate kernel specialised for the most common
// shape: WHERE a conjunction of integer columns compared with constants, an
// optional static join on a 16-byte key, dense groups (none, or the joined
// value) and aggregates over integer columns. It runs one pass over the
// task, a tuple at a time, touching each tuple's cache line once; the
// vectorised kernel makes a pass per operator over each chunk, which costs
// more for a query this simple. Compile chooses it when the query fits;
// Options.Vectorised forces the general kernel (for comparison and tests).
type fusedKernel struct {
	tupleSize int
	spec      window.Spec
	rows      bool
	layout    *window.Layout
	preds     []fusedPred
	join      *joinTable
	joinOff   int
	denseJoin bool
	aggs      []fusedAgg
}

type fusedPred struct {
	off  int
	wide bool // int64, else int32
	op   query.CmpOp
	c    int64
}

type fusedAgg struct {
	off  int
	wide bool
	word int
	kind window.AggKind
}

// newFusedKernel returns the fused kernel for p, or nil if the query does
// not have its shape.
func newFusedKernel(p *Plan) *fusedKernel {
	q := p.Query
	if q.Stateless() || p.Layout.Hashed {
		return nil
	}
	if q.Join != nil && q.Join.Table.KeyWidth != 16 {
		return nil
	}
	k := &fusedKernel{
		tupleSize: p.TupleSize, spec: p.Spec, rows: q.Window.Type == query.Rows,
		layout: p.Layout, join: p.join, denseJoin: groupsByJoin(q),
	}
	if q.Join != nil {
		a, _ := q.Schema.Lookup(q.Join.Column)
		k.joinOff = a.Offset
	}
	var terms []query.Expr
	switch w := q.Where.(type) {
	case nil:
	case query.Compare:
		terms = []query.Expr{w}
	case query.AndExpr:
		terms = w.Terms
	default:
		return nil
	}
	for _, t := range terms {
		pr, ok := fusedPredOf(t, q.Schema)
		if !ok {
			return nil
		}
		k.preds = append(k.preds, pr)
	}
	for i, ag := range q.Aggregates {
		if ag.Func == query.Count {
			continue
		}
		c, ok := ag.Arg.(query.Column)
		if !ok {
			return nil
		}
		a, err := q.Schema.Lookup(c.Name)
		if err != nil || (a.Type != query.Int32 && a.Type != query.Int64) {
			return nil
		}
		w := p.Aggs[i].Word
		k.aggs = append(k.aggs, fusedAgg{off: a.Offset, wide: a.Type == query.Int64, word: w, kind: p.Layout.Kinds[w-1]})
	}
	return k
}

// fusedPredOf accepts `int column op int constant` (either side).
func fusedPredOf(e query.Expr, s *query.Schema) (fusedPred, bool) {
	c, ok := e.(query.Compare)
	if !ok {
		return fusedPred{}, false
	}
	col, lok := c.L.(query.Column)
	k, rok := c.R.(query.IntConst)
	op := c.Op
	if !lok || !rok {
		col, lok = c.R.(query.Column)
		k, rok = c.L.(query.IntConst)
		if !lok || !rok {
			return fusedPred{}, false
		}
		op = mirror(op)
	}
	a, err := s.Lookup(col.Name)
	if err != nil || (a.Type != query.Int32 && a.Type != query.Int64) {
		return fusedPred{}, false
	}
	return fusedPred{off: a.Offset, wide: a.Type == query.Int64, op: op, c: k.V}, true
}

// mirror turns `k op col` into `col op' k`.
func mirror(op query.CmpOp) query.CmpOp {
	switch op {
	case query.Lt:
		return query.Gt
	case query.Le:
		return query.Ge
	case query.Gt:
		return query.Lt
	case query.Ge:
		return query.Le
	}
	return op
}

func (p *fusedPred) holds(t []byte) bool {
	var v int64
	if p.wide {
		v = int64(binary.LittleEndian.Uint64(t[p.off:]))
	} else {
		v = int64(int32(binary.LittleEndian.Uint32(t[p.off:])))
	}
	switch p.op {
	case query.Eq:
		return v == p.c
	case query.Ne:
		return v != p.c
	case query.Lt:
		return v < p.c
	case query.Le:
		return v <= p.c
	case query.Gt:
		return v > p.c
	}
	return v >= p.c
}

func (k *fusedKernel) Process(data []byte, first uint64, r *window.TaskResult) {
	ts := k.tupleSize
	n := len(data) / ts
	words := k.layout.Words()
	spec := k.spec
	preds, aggs := k.preds, k.aggs

	var (
		wm                  = int64(math.MinInt64) // watermark before the current tuple
		filtered, unmatched uint64
		late                uint64
		pc                  = newPaneCursor()
	)
tuples:
	for i := 0; i < n; i++ {
		t := data[i*ts : i*ts+ts]
		et := int64(binary.LittleEndian.Uint64(t))
		if k.rows {
			et = int64(first) + int64(i)
		}
		prev := wm
		wm = max(wm, et)
		for j := range preds {
			if !preds[j].holds(t) {
				filtered++
				continue tuples
			}
		}
		var g int32
		if k.join != nil {
			kt := t[k.joinOff : k.joinOff+16]
			o := k.join.lookup(binary.LittleEndian.Uint64(kt[0:8]), binary.LittleEndian.Uint64(kt[8:16]))
			if o < 0 {
				unmatched++
				continue
			}
			if k.denseJoin {
				g = o
			}
		}
		if !pc.in(et) {
			pc.move(r, spec, et)
		}
		if prev >= pc.seal {
			late++
			continue
		}
		pc.tuples++
		row := pc.cur.Vals[int(g)*words : int(g)*words+words]
		fresh := row[0] == 0
		if fresh {
			pc.cur.Touched = append(pc.cur.Touched, g)
		}
		row[0]++
		for j := range aggs {
			a := &aggs[j]
			var v int64
			if a.wide {
				v = int64(binary.LittleEndian.Uint64(t[a.off:]))
			} else {
				v = int64(int32(binary.LittleEndian.Uint32(t[a.off:])))
			}
			fold(row, a.word, a.kind, v, fresh)
		}
	}
	pc.flush(r)
	r.Count(uint64(n), wm, filtered, unmatched, late)
}
