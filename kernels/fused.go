package kernels

import (
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

	// fast: the query has fastScanner's shape; fastTemplate holds what of
	// the scanner does not change between tasks.
	fast         bool
	fastTemplate fastScanner
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
	q := p.kq
	if p.nq != nil {
		return nil // NULLs: the vectorised kernels, whose null-free one keeps their fast paths
	}
	if p.Stateless() || p.Layout.Hashed || q.Window.Type == query.Session {
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
		w := i + 1 // q is the lowered query: aggregate i is word i+1
		k.aggs = append(k.aggs, fusedAgg{off: a.Offset, wide: a.Type == query.Int64, word: w, kind: p.Layout.Kinds[w-1]})
	}
	k.initFast()
	return k
}

// fusedPredOf accepts `int column op int constant` (either side).
func fusedPredOf(e query.Expr, s *query.Schema) (fusedPred, bool) {
	col, op, k, ok := query.ColumnConst(e)
	if !ok {
		return fusedPred{}, false
	}
	a, err := s.Lookup(col)
	if err != nil || (a.Type != query.Int32 && a.Type != query.Int64) || a.Nullable {
		return fusedPred{}, false
	}
	return fusedPred{off: a.Offset, wide: a.Type == query.Int64, op: op, c: k}, true
}

// holds evaluates the predicate on the tuple at t. The tuple's bytes
// [off, off+8) are inside it: newFusedKernel takes offsets from the schema.
// It is inlined into Process's loop, query.Holds with it, which the
// per-tuple cost depends on: at the time of writing its inlining cost is
// the budget exactly (80; go build -gcflags=-m=2 ./kernels/), so anything
// added here must be paid for elsewhere in it.
func (p *fusedPred) holds(t unsafe.Pointer) bool {
	var v int64
	if p.wide {
		v = int64(load64(t, p.off))
	} else {
		v = int64(int32(load32(t, p.off)))
	}
	return query.Holds(p.op, v, p.c)
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
		jp         joinProbe
		joinOff    = k.joinOff
		dense      = k.denseJoin
		rowsWindow = k.rows
		firstTS    = int64(first)
		vals       unsafe.Pointer // the current pane's group rows
		rowBytes   = uintptr(words) * 8
		filtered   uint64
		unmatched  uint64
		late       uint64
		wm         = int64(math.MinInt64) // watermark before the current tuple
		pc         = newPaneCursor(spec)
		fs         = k.fastTemplate
	)
	if jt != nil {
		jp = jt.probe()
	}
	fast := k.fast
	if fast {
		fs.base, fs.ts, fs.n, fs.jp = base, uintptr(ts), n, jp
	}
tuples:
	for i := 0; i < n; i++ {
		if fast && vals != nil {
			// The fast loop runs until a tuple it leaves to this one: a
			// tuple of another pane, or a new group when Touched is full.
			fs.vals, fs.start, fs.last, fs.open = vals, pc.start, pc.last, pc.open
			fs.touched = pc.cur.Touched
			var tuples uint64
			i, wm, tuples = fs.scan(i, wm, &filtered, &unmatched, &late)
			pc.tuples += tuples
			pc.cur.Touched = fs.touched
			if i == n {
				break
			}
		}
		t := unsafe.Add(base, i*ts)
		et := int64(load64(t, 0))
		if rowsWindow {
			et = firstTS + int64(i)
		}
		prev := wm
		wm = max(wm, et)
		for j := range preds {
			if !preds[j].holds(t) {
				filtered++
				continue tuples
			}
		}
		var g uintptr
		if jt != nil {
			hi, lo := load64(t, joinOff), load64(t, joinOff+8)
			o := jp.find(hi, lo)
			if o < 0 {
				unmatched++
				continue
			}
			if dense {
				g = uintptr(o)
			}
		}
		if !pc.in(et) {
			if !pc.move(r, spec, et) {
				r.Refuse(i, et)
				break
			}
			vals = unsafe.Pointer(unsafe.SliceData(pc.cur.Vals))
		}
		if prev > pc.open {
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
				*w = a.kind.Combine(*w, v)
			}
		}
	}
	pc.flush(r)
	r.Count(uint64(n), wm, filtered, unmatched, late)
}

// fastScanner is the fused kernel's loop for its most common shape, YSB's:
// range windows, no predicate or one `int32 column == constant`, either a
// 16-byte static join whose value is the group or neither join nor groups,
// and COUNT with at most a MAX over an int64 column. Its loop makes no call:
// it returns to Process at every tuple that needs one (the first of
// another pane, a new group when Touched is full, the end), so that Go's
// register allocator keeps its state in registers. The general loop keeps
// the watermark, the counters and the loop index on the stack, because
// calls on its rare paths (a new pane, a new group row) force them there:
// that cost a quarter of the kernel (alternating BenchmarkYSBKernel runs,
// docs/performance.md).
type fastScanner struct {
	base              unsafe.Pointer // the task
	ts                uintptr        // tuple size
	n                 int            // tuples in the task
	hasPred           bool
	predOff           int
	c32               int32
	hasJoin           bool
	joinOff           int
	jp                joinProbe
	max64             bool
	aggOff            int
	aggWord           uintptr
	rowBytes          uintptr
	vals              unsafe.Pointer // the current pane's rows
	start, last, open int64          // the current pane's positions [start, last] and Open
	touched           []int32        // the current pane's Touched: appended to within its capacity
}

// initFast decides whether k has fastScanner's shape.
func (k *fusedKernel) initFast() {
	f := fastScanner{rowBytes: uintptr(k.layout.Words()) * 8}
	switch {
	case k.rows:
		return
	case len(k.preds) == 1:
		p := k.preds[0]
		if p.wide || p.op != query.Eq || p.c != int64(int32(p.c)) {
			return
		}
		f.hasPred, f.predOff, f.c32 = true, p.off, int32(p.c)
	case len(k.preds) > 1:
		return
	}
	switch {
	case k.join != nil && k.denseJoin:
		f.hasJoin, f.joinOff = true, k.joinOff
	case k.join != nil, k.layout.Groups != 1:
		return
	}
	switch {
	case len(k.aggs) == 1 && k.aggs[0].wide && k.aggs[0].kind == window.AggMax:
		f.max64, f.aggOff, f.aggWord = true, k.aggs[0].off, uintptr(k.aggs[0].word)
	case len(k.aggs) > 0:
		return
	}
	k.fast, k.fastTemplate = true, f
}

// scan processes tuples from i on while they fall in the current pane (and
// Touched has room for new groups), and returns the first tuple it left
// (or n), the watermark before it, and the tuples aggregated; it adds to
// the counters and to f.touched.
func (f *fastScanner) scan(i int, wm int64, filtered, unmatched, late *uint64) (next int, wmBefore int64, tuples uint64) {
	// Locals, not fields: the stores into rows could alias *f as far as
	// the compiler knows, which would reload every field at every tuple.
	base, ts, n := f.base, f.ts, f.n
	hasPred, predOff, c32 := f.hasPred, f.predOff, f.c32
	hasJoin, joinOff, jp := f.hasJoin, f.joinOff, f.jp
	max64, aggOff, aggWord := f.max64, f.aggOff, f.aggWord
	rowBytes, vals := f.rowBytes, f.vals
	start, last, open := f.start, f.last, f.open
	touched := unsafe.Pointer(unsafe.SliceData(f.touched))
	nt, ct := len(f.touched), cap(f.touched)
	var nf, nu, nl uint64
	for ; i < n; i++ {
		t := unsafe.Add(base, uintptr(i)*ts)
		et := int64(load64(t, 0))
		if hasPred && int32(load32(t, predOff)) != c32 {
			nf++
			wm = max(wm, et)
			continue
		}
		var g uintptr
		if hasJoin {
			o := jp.find(load64(t, joinOff), load64(t, joinOff+8))
			if o < 0 {
				nu++
				wm = max(wm, et)
				continue
			}
			g = uintptr(o)
		}
		if et < start || et > last {
			break // another pane: Process moves to it
		}
		if wm > open {
			nl++
			wm = max(wm, et)
			continue
		}
		row := (*int64)(unsafe.Add(vals, g*rowBytes))
		fresh := *row == 0
		if fresh {
			// The group's first tuple in the pane: Touched records it,
			// in place while it has room (growing it is a call).
			if nt == ct {
				break
			}
			*(*int32)(unsafe.Add(touched, uintptr(nt)*4)) = int32(g)
			nt++
		}
		*row++
		tuples++
		if max64 {
			w := (*int64)(unsafe.Add(unsafe.Pointer(row), aggWord*8))
			if v := int64(load64(t, aggOff)); fresh || v > *w {
				*w = v
			}
		}
		wm = max(wm, et)
	}
	f.touched = f.touched[:nt]
	*filtered += nf
	*unmatched += nu
	*late += nl
	return i, wm, tuples
}
