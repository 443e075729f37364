package kernels

import (
	"encoding/binary"
	"math"
	"unsafe"

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

// holds evaluates the predicate on the tuple at t. The tuple's bytes
// [off, off+8) are inside it: newFusedKernel takes offsets from the schema.
func (p *fusedPred) holds(t unsafe.Pointer) bool {
	var v int64
	if p.wide {
		v = int64(load64(t, p.off))
	} else {
		v = int64(int32(load32(t, p.off)))
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

// Process runs one pass over the task. The loads go through unsafe
// pointers: every offset comes from the schema and is inside the tuple, and
// the loop stays below len(data)/tupleSize tuples, so the bounds are proven
// once per task instead of at every load (with slices the compiler checks
// each of the six to eight loads per tuple). Likewise the join table's and
// the pane's arrays are indexed through pointers: slots are masked by the
// table size, group ordinals come from the join table and are below the
// layout's dense rows.
func (k *fusedKernel) Process(data []byte, first uint64, r *window.TaskResult) {
	ts := k.tupleSize
	n := len(data) / ts
	if n == 0 {
		r.Count(0, math.MinInt64, 0, 0, 0)
		return
	}
	base := unsafe.Pointer(unsafe.SliceData(data))
	words := k.layout.Words()
	spec := k.spec
	preds, aggs := k.preds, k.aggs
	jt := k.join
	var (
		jmask        uint64
		jshift       uint8
		jslot, jkey  unsafe.Pointer
		jord         unsafe.Pointer
		joinOff      = k.joinOff
		dense        = k.denseJoin
		rowsWindow   = k.rows
		firstTS      = int64(first)
		vals         unsafe.Pointer // the current pane's group rows
		rowBytes     = uintptr(words) * 8
		filtered     uint64
		unmatched    uint64
		late         uint64
		wm           = int64(math.MinInt64) // watermark before the current tuple
		pc           = newPaneCursor()
		p0           fusedPred
		morePredsOff = 0
		eq32         bool
		c32          int32
		max64        = len(aggs) == 1 && aggs[0].wide && aggs[0].kind == window.AggMax
		a0off        int
		a0word       uintptr
	)
	if max64 {
		a0off, a0word = aggs[0].off, uintptr(aggs[0].word)
	}
	if jt != nil {
		jmask, jshift = jt.mask, jt.shift
		jslot = unsafe.Pointer(unsafe.SliceData(jt.slot))
		jkey = unsafe.Pointer(unsafe.SliceData(jt.key))
		jord = unsafe.Pointer(unsafe.SliceData(jt.ord))
	}
	if len(preds) > 0 {
		p0, morePredsOff = preds[0], 1
		eq32 = !p0.wide && p0.op == query.Eq && p0.c == int64(int32(p0.c))
		c32 = int32(p0.c)
	}
tuples:
	for i := 0; i < n; i++ {
		t := unsafe.Add(base, i*ts)
		et := int64(load64(t, 0))
		if rowsWindow {
			et = firstTS + int64(i)
		}
		prev := wm
		wm = max(wm, et)
		if eq32 {
			// The common first predicate, an int32 column equal to a
			// constant, without the switch over operators.
			if int32(load32(t, p0.off)) != c32 {
				filtered++
				continue
			}
		} else if morePredsOff > 0 && !p0.holds(t) {
			filtered++
			continue
		}
		for j := morePredsOff; j < len(preds); j++ {
			if !preds[j].holds(t) {
				filtered++
				continue tuples
			}
		}
		var g uintptr
		if jt != nil {
			hi, lo := load64(t, joinOff), load64(t, joinOff+8)
			s := homeSlot(hi, lo, jshift)
			o := int32(-1)
			for {
				e := *(*int32)(unsafe.Add(jslot, s*4))
				if e < 0 {
					break
				}
				if k := (*joinKey)(unsafe.Add(jkey, uintptr(e)*unsafe.Sizeof(joinKey{}))); k.hi == hi && k.lo == lo {
					o = *(*int32)(unsafe.Add(jord, uintptr(e)*4))
					break
				}
				s = (s + 1) & jmask
			}
			if o < 0 {
				unmatched++
				continue
			}
			if dense {
				g = uintptr(o)
			}
		}
		if !pc.in(et) {
			pc.move(r, spec, et)
			vals = unsafe.Pointer(unsafe.SliceData(pc.cur.Vals))
		}
		if prev >= pc.seal {
			late++
			continue
		}
		pc.tuples++
		row := (*int64)(unsafe.Add(vals, g*rowBytes))
		fresh := *row == 0
		if fresh {
			pc.cur.Touched = append(pc.cur.Touched, int32(g))
		}
		*row++
		if max64 {
			// The common single aggregate besides COUNT, MAX of an int64
			// column (YSB's MAX(event_time)), without the loop and the
			// switch over kinds: on BenchmarkYSBKernel the general loop
			// costs about a fifth of the kernel.
			w := (*int64)(unsafe.Add(unsafe.Pointer(row), a0word*8))
			v := int64(load64(t, a0off))
			if fresh || v > *w {
				*w = v
			}
			continue
		}
		for j := range aggs {
			a := &aggs[j]
			var v int64
			if a.wide {
				v = int64(load64(t, a.off))
			} else {
				v = int64(int32(load32(t, a.off)))
			}
			w := (*int64)(unsafe.Add(unsafe.Pointer(row), a.word*8))
			if fresh {
				*w = v
			} else {
				*w = combine(a.kind, *w, v)
			}
		}
	}
	pc.flush(r)
	r.Count(uint64(n), wm, filtered, unmatched, late)
}

// load64 and load32 read a little-endian word at byte off of the tuple at
// t. The fixed-length slice lets binary.LittleEndian compile to one load
// without a bounds check; the caller guarantees off is inside the tuple.
func load64(t unsafe.Pointer, off int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice((*byte)(unsafe.Add(t, off)), 8))
}

func load32(t unsafe.Pointer, off int) uint32 {
	return binary.LittleEndian.Uint32(unsafe.Slice((*byte)(unsafe.Add(t, off)), 4))
}
