package kernels

import (
	"math"
	"unsafe"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// denseKernel is the vectorised aggregate kernel of the dense group
// layouts: one group (no GROUP BY), or the ordinals of a static join's
// values. It works a chunk at a time, as the hashed kernel does, but its
// passes are chosen when the kernel is made, by the query's shape:
//
//   - the front pass reads every tuple of the chunk once: its window
//     position, the watermark before it and, when WHERE is a conjunction
//     of integer columns compared with constants, its first term, as an
//     interval test whose outcome advances the selection's length instead
//     of branching (a predicate keeping one tuple in three at random costs
//     a mispredicted branch every few tuples otherwise); the other terms
//     narrow the selection the same way, any other WHERE runs as a vpred;
//   - the join pass probes the kept tuples' keys and drops the unmatched,
//     again without a branch per tuple;
//   - an aggregate over the event time of a range window reads the
//     positions the front pass loaded; other arguments are evaluated over
//     the selection;
//   - one count loop per group layout and one fold loop per aggregate kind
//     and value type.
type denseKernel struct {
	tupleSize int
	spec      window.Spec
	rows      bool
	layout    *window.Layout

	// WHERE: ranges (all its terms are integer column-constant
	// comparisons; the first runs in the front pass), else where.
	ranges []colRange
	where  *vpred

	join      *joinTable
	joinOff   int
	joinWidth int
	jk        joinKey // the probe where the key is a string or can be NULL
	jkSlow    bool
	byJoin    bool // the group is the join's ordinal

	args  []denseArg
	ident []int64 // a new row's aggregate words (words 1..)

	pos, wmb []int64 // per chunk: window position, watermark before the tuple
	sel      []int32
	ord      []int32 // per chunk: the join's ordinal of each kept tuple
	run      []int32 // the chunk's tuples in the current pane's run
	grp      []int32 // their groups, by run index

	// all is 0, 1, ... chunk-1: the selection of a chunk when neither WHERE
	// nor the join narrows it, read-only (nothing writes over it).
	all []int32
}

// denseArg is one aggregate's argument.
type denseArg struct {
	expr    *vexpr
	fromPos bool // the event time of a range window: the positions register
	word    int
	kind    window.AggKind
}

func newDenseKernel(p *Plan, q *query.Query, where *vpred) (*denseKernel, error) {
	k := &denseKernel{
		tupleSize: p.TupleSize, spec: p.Spec, rows: q.Window.Type == query.Rows,
		layout: p.Layout, join: p.join,
		pos: make([]int64, chunk), wmb: make([]int64, chunk),
		sel: make([]int32, chunk), ord: make([]int32, chunk),
		run: make([]int32, 0, chunk), grp: make([]int32, chunk),
	}
	if rs, ok := colRangesOf(q.Where, q.Schema); ok {
		k.ranges = rs
	} else {
		k.where = where
	}
	if j := q.Join; j != nil {
		a, _ := q.Schema.Lookup(j.Column)
		k.joinOff, k.joinWidth = a.Offset, a.Size
		k.jk, k.jkSlow = newJoinKey(p.join, a), a.Type == query.String || a.Nullable
		k.byJoin = groupsByJoin(q)
	}
	tsAttr := q.Schema.Attrs[0]
	for i, ag := range q.Aggregates {
		if ag.Func == query.Count {
			continue
		}
		w := i + 1 // q is the lowered query: aggregate i is word i+1
		a := denseArg{word: w, kind: p.Layout.Kinds[w-1]}
		if c, ok := ag.Arg.(query.Column); ok && !k.rows && c.Name == tsAttr.Name && tsAttr.Offset == 0 && tsAttr.Type == query.Int64 {
			a.fromPos = true
		} else {
			e, err := compileExpr(ag.Arg, q.Schema)
			if err != nil {
				return nil, err
			}
			a.expr = e
		}
		k.args = append(k.args, a)
	}
	k.all = make([]int32, chunk)
	for i := range k.all {
		k.all[i] = int32(i)
	}
	k.ident = make([]int64, len(p.Layout.Kinds))
	for i, kind := range p.Layout.Kinds {
		k.ident[i] = identity(kind)
	}
	return k, nil
}

func (k *denseKernel) Process(data []byte, first uint64, r *window.TaskResult) {
	ts := k.tupleSize
	n := len(data) / ts
	spec := k.spec
	var (
		wm                  = int64(math.MinInt64) // watermark before the current tuple
		filtered, unmatched uint64
		late                uint64
		pc                  = newPaneCursor(spec)
	)
chunks:
	for c0 := 0; c0 < n; c0 += chunk {
		cn := min(chunk, n-c0)
		cd := data[c0*ts : (c0+cn)*ts]
		pos, wmb := k.pos[:cn], k.wmb[:cn]

		var sel []int32
		lowest := int64(first) + int64(c0) // the chunk's lowest position
		switch {
		case k.rows:
			wm = rowPositions(pos, wmb, int64(first)+int64(c0), wm)
			sel = k.sel[:cn]
			for i := range sel {
				sel[i] = int32(i)
			}
			for j := range k.ranges {
				sel = k.ranges[j].filter(cd, ts, sel)
			}
		case len(k.ranges) > 0:
			var ns int
			if k.ranges[0].wide {
				ns, wm, lowest = frontRange[int64](cd, ts, &k.ranges[0], pos, wmb, k.sel, wm)
			} else {
				ns, wm, lowest = frontRange[int32](cd, ts, &k.ranges[0], pos, wmb, k.sel, wm)
			}
			sel = k.sel[:ns]
			for j := 1; j < len(k.ranges) && len(sel) > 0; j++ {
				sel = k.ranges[j].filter(cd, ts, sel)
			}
		default:
			wm, lowest = timePositions(cd, ts, pos, wmb, wm)
			if k.where == nil && k.join == nil {
				sel = k.all[:cn]
				break
			}
			sel = k.sel[:cn]
			for i := range sel {
				sel[i] = int32(i)
			}
		}
		if k.where != nil {
			sel = k.where.filter(cd, ts, sel)
		}
		filtered += uint64(cn - len(sel))
		if k.join != nil {
			kept := k.probe(cd, sel)
			unmatched += uint64(len(sel) - len(kept))
			sel = kept
		}
		for j := range k.args {
			if a := &k.args[j]; !a.fromPos {
				a.expr.eval(cd, ts, sel)
			}
		}

		for len(sel) > 0 {
			if p := pos[sel[0]]; !pc.in(p) {
				if !pc.move(r, spec, p) {
					r.Refuse(c0+int(sel[0]), p)
					break chunks
				}
			}
			if lowest >= pc.start && wm <= min(pc.last, pc.open) {
				// The whole chunk is in the pane and none of it is late
				// (every watermark before a tuple is at most wm): the
				// selection is the run, counted without a test per tuple.
				k.countAll(&pc, sel)
				pc.tuples += uint64(len(sel))
				k.fold(pc.cur.Vals, pos, sel)
				break
			}
			var rest []int32
			var runLate uint64
			if k.byJoin {
				rest, runLate = k.countJoin(&pc, sel, pos, wmb)
			} else {
				rest, runLate = k.countOne(&pc, sel, pos, wmb)
			}
			late += runLate
			pc.tuples += uint64(len(k.run))
			k.fold(pc.cur.Vals, pos, k.run)
			sel = rest
		}
	}
	pc.flush(r)
	r.Count(uint64(n), wm, filtered, unmatched, late)
}

// timePositions sets the positions of a range window's chunk (the event
// time at offset 0) and the watermark before each tuple, and returns the
// watermark after the chunk and its lowest position.
func timePositions(cd []byte, ts int, pos, wmb []int64, wm int64) (wmAfter, lowest int64) {
	lowest = math.MaxInt64
	if len(pos) == 0 {
		return wm, lowest
	}
	base := unsafe.Pointer(unsafe.SliceData(cd))
	_ = cd[(len(pos)-1)*ts+7] // every tuple's event time is inside cd
	wmb = wmb[:len(pos)]
	o := 0 // stepped as an integer: no multiplication per tuple
	for i := range pos {
		p := int64(load64(unsafe.Add(base, o), 0))
		o += ts
		pos[i] = p
		wmb[i] = wm
		wm = max(wm, p)
		lowest = min(lowest, p)
	}
	return wm, lowest
}

// rowPositions is timePositions for a row window: positions base, base+1...
func rowPositions(pos, wmb []int64, base, wm int64) int64 {
	wmb = wmb[:len(pos)]
	for i := range pos {
		p := base + int64(i)
		pos[i] = p
		wmb[i] = wm
		wm = max(wm, p)
	}
	return wm
}

// frontRange is the front pass of a range window whose WHERE starts with
// the interval c over a column of type T: positions, watermarks and the
// tuples that pass c, written into sel; it returns how many passed and the
// watermark after the chunk. neg picks one of two loops, so that the
// loop's state fits in registers.
func frontRange[T int32 | int64](cd []byte, ts int, c *colRange, pos, wmb []int64, sel []int32, wm int64) (ns int, wmAfter, lowest int64) {
	n := len(pos)
	lowest = math.MaxInt64
	if n == 0 {
		return 0, wm, lowest
	}
	_ = cd[(n-1)*ts+7] // every tuple's event time is inside cd
	_ = cd[(n-1)*ts+c.off+int(unsafe.Sizeof(T(0)))-1]
	wmb, sel = wmb[:n], sel[:n]
	base := unsafe.Pointer(unsafe.SliceData(cd))
	off := c.off
	out := unsafe.Pointer(unsafe.SliceData(sel))
	lo, span := c.lo, c.span
	// The index is written whatever the outcome and kept only when the
	// tuple passes (ns <= i): no branch on the predicate.
	// o is the tuple's offset: stepped as an integer, never a pointer past
	// the end (checkptr), and no multiplication per tuple.
	o := 0
	if c.neg {
		for i := range pos {
			t := unsafe.Add(base, o)
			o += ts
			p := int64(load64(t, 0))
			v := int64(*(*T)(unsafe.Add(t, off)))
			pos[i] = p
			wmb[i] = wm
			wm = max(wm, p)
			lowest = min(lowest, p)
			*(*int32)(unsafe.Add(out, ns*4)) = int32(i)
			if uint64(v-lo) > span {
				ns++
			}
		}
		return ns, wm, lowest
	}
	for i := range pos {
		t := unsafe.Add(base, o)
		o += ts
		p := int64(load64(t, 0))
		v := int64(*(*T)(unsafe.Add(t, off)))
		pos[i] = p
		wmb[i] = wm
		wm = max(wm, p)
		lowest = min(lowest, p)
		*(*int32)(unsafe.Add(out, ns*4)) = int32(i)
		if uint64(v-lo) <= span {
			ns++
		}
	}
	return ns, wm, lowest
}

// probe looks the join keys of the tuples sel up, records their ordinals
// in k.ord and returns the matched ones, over sel's backing array.
func (k *denseKernel) probe(cd []byte, sel []int32) []int32 {
	if len(sel) == 0 {
		return sel
	}
	ts, off, width := k.tupleSize, k.joinOff, k.joinWidth
	_ = cd[int(sel[len(sel)-1])*ts+off+width-1] // sel is ascending
	ord := k.ord[:chunk]
	if k.jkSlow {
		ns := 0
		for _, i := range sel {
			g := k.jk.find(cd[int(i)*ts : int(i+1)*ts])
			ord[i&(chunk-1)] = g
			sel[ns] = i
			if g >= 0 {
				ns++
			}
		}
		return sel[:ns]
	}
	out := unsafe.Pointer(unsafe.SliceData(sel))
	jp := k.join.probe()
	ns := 0
	if width == 16 {
		base := unsafe.Pointer(unsafe.SliceData(cd))
		for _, i := range sel {
			t := unsafe.Add(base, int(i)*ts)
			g := jp.find(load64(t, off), load64(t, off+8))
			ord[i&(chunk-1)] = g
			*(*int32)(unsafe.Add(out, ns*4)) = i
			if g >= 0 {
				ns++
			}
		}
		return sel[:ns]
	}
	for _, i := range sel {
		o := int(i)*ts + off
		hi, lo := keyWords(cd[o : o+width])
		g := jp.find(hi, lo)
		ord[i&(chunk-1)] = g
		*(*int32)(unsafe.Add(out, ns*4)) = i
		if g >= 0 {
			ns++
		}
	}
	return sel[:ns]
}

// The count loops take the tuples of sel (ascending) from the first up to
// the first outside the current pane: each tuple not late goes to k.run,
// its group to k.grp, and is counted in its row. They return the rest of
// sel and the late tuples.

func (k *denseKernel) countOne(pc *paneCursor, sel []int32, pos, wmb []int64) ([]int32, uint64) {
	start, last, open := pc.start, pc.last, pc.open
	run := k.run[:0]
	var late uint64
	j := 0
	for ; j < len(sel); j++ {
		i := sel[j]
		if p := pos[i]; p < start || p > last {
			break
		}
		if wmb[i] > open {
			late++
			continue
		}
		run = append(run, i)
	}
	k.run = run
	if len(run) > 0 {
		st := pc.cur
		if st.Vals[0] == 0 {
			copy(st.Vals[1:1+len(k.ident)], k.ident)
			st.Touched = append(st.Touched, 0)
		}
		st.Vals[0] += int64(len(run))
	}
	return sel[j:], late
}

func (k *denseKernel) countJoin(pc *paneCursor, sel []int32, pos, wmb []int64) ([]int32, uint64) {
	start, last, open := pc.start, pc.last, pc.open
	st, words := pc.cur, k.layout.Words()
	vals, ord, grp := st.Vals, k.ord[:chunk], k.grp[:chunk]
	run := k.run[:0]
	var late uint64
	j := 0
	for ; j < len(sel); j++ {
		i := sel[j]
		if p := pos[i]; p < start || p > last {
			break
		}
		if wmb[i] > open {
			late++
			continue
		}
		g := ord[i&(chunk-1)]
		o := int(g) * words
		if vals[o] == 0 {
			copy(vals[o+1:o+1+len(k.ident)], k.ident)
			st.Touched = append(st.Touched, g)
		}
		vals[o]++
		grp[len(run)&(chunk-1)] = g
		run = append(run, i)
	}
	k.run = run
	return sel[j:], late
}

// countAll counts every tuple of sel in the current pane (none is late,
// none outside it) and sets k.grp.
func (k *denseKernel) countAll(pc *paneCursor, sel []int32) {
	st := pc.cur
	if !k.byJoin {
		if st.Vals[0] == 0 {
			copy(st.Vals[1:1+len(k.ident)], k.ident)
			st.Touched = append(st.Touched, 0)
		}
		st.Vals[0] += int64(len(sel))
		return
	}
	words := k.layout.Words()
	vals, ord, grp := st.Vals, k.ord[:chunk], k.grp[:chunk]
	for r, i := range sel {
		g := ord[i&(chunk-1)]
		o := int(g) * words
		if vals[o] == 0 {
			copy(vals[o+1:o+1+len(k.ident)], k.ident)
			st.Touched = append(st.Touched, g)
		}
		vals[o]++
		grp[r&(chunk-1)] = g
	}
}

// fold combines each aggregate's argument over the tuples run into the
// rows; k.grp holds their groups.
func (k *denseKernel) fold(vals []int64, pos []int64, run []int32) {
	if len(run) == 0 {
		return
	}
	words := k.layout.Words()
	for j := range k.args {
		a := &k.args[j]
		ints, flts := pos, []float64(nil)
		if !a.fromPos {
			ints, flts = a.expr.ints, a.expr.flts
		}
		if k.byJoin {
			foldRows(a.kind, vals, words, a.word, k.grp[:len(run)], run, ints, flts)
		} else {
			vals[a.word] = foldOne(a.kind, vals[a.word], run, ints, flts)
		}
	}
}

// foldRange is foldOne over the first n values of the register.
func foldRange(kind window.AggKind, acc int64, n int, ints []int64, flts []float64) int64 {
	switch kind {
	case window.AggAdd:
		for _, v := range ints[:n] {
			acc += v
		}
	case window.AggMin:
		for _, v := range ints[:n] {
			acc = min(acc, v)
		}
	case window.AggMax:
		for _, v := range ints[:n] {
			acc = max(acc, v)
		}
	case window.AggAddF:
		f := math.Float64frombits(uint64(acc))
		for _, v := range flts[:n] {
			f += v
		}
		acc = int64(math.Float64bits(f))
	case window.AggMinF:
		f := math.Float64frombits(uint64(acc))
		for _, v := range flts[:n] {
			f = window.MinF(f, v)
		}
		acc = int64(math.Float64bits(f))
	default:
		f := math.Float64frombits(uint64(acc))
		for _, v := range flts[:n] {
			f = window.MaxF(f, v)
		}
		acc = int64(math.Float64bits(f))
	}
	return acc
}

// foldRows combines src (ints or flts, by chunk index) of the tuples run
// into word w of their groups' rows grp (by run index), under kind.
func foldRows(kind window.AggKind, vals []int64, words, w int, grp, run []int32, ints []int64, flts []float64) {
	grp = grp[:len(run)]
	switch kind {
	case window.AggAdd:
		for r, i := range run {
			vals[int(grp[r])*words+w] += ints[i]
		}
	case window.AggMin:
		for r, i := range run {
			o := int(grp[r])*words + w
			vals[o] = min(vals[o], ints[i])
		}
	case window.AggMax:
		for r, i := range run {
			o := int(grp[r])*words + w
			vals[o] = max(vals[o], ints[i])
		}
	case window.AggAddF:
		for r, i := range run {
			o := int(grp[r])*words + w
			vals[o] = int64(math.Float64bits(math.Float64frombits(uint64(vals[o])) + flts[i]))
		}
	case window.AggMinF:
		for r, i := range run {
			o := int(grp[r])*words + w
			vals[o] = int64(math.Float64bits(window.MinF(math.Float64frombits(uint64(vals[o])), flts[i])))
		}
	default:
		for r, i := range run {
			o := int(grp[r])*words + w
			vals[o] = int64(math.Float64bits(window.MaxF(math.Float64frombits(uint64(vals[o])), flts[i])))
		}
	}
}

// foldOne reduces src of the tuples run into the word acc, in tuple order
// (float sums are not reassociated).
func foldOne(kind window.AggKind, acc int64, run []int32, ints []int64, flts []float64) int64 {
	if n := len(run); n > 0 && int(run[n-1]) == n-1 {
		// run is ascending from 0 or above: 0, 1, ..., n-1, every tuple
		// of the chunk's first n: read the register without it.
		return foldRange(kind, acc, n, ints, flts)
	}
	switch kind {
	case window.AggAdd:
		for _, i := range run {
			acc += ints[i]
		}
	case window.AggMin:
		for _, i := range run {
			acc = min(acc, ints[i])
		}
	case window.AggMax:
		for _, i := range run {
			acc = max(acc, ints[i])
		}
	case window.AggAddF:
		f := math.Float64frombits(uint64(acc))
		for _, i := range run {
			f += flts[i]
		}
		acc = int64(math.Float64bits(f))
	case window.AggMinF:
		f := math.Float64frombits(uint64(acc))
		for _, i := range run {
			f = window.MinF(f, flts[i])
		}
		acc = int64(math.Float64bits(f))
	default:
		f := math.Float64frombits(uint64(acc))
		for _, i := range run {
			f = window.MaxF(f, flts[i])
		}
		acc = int64(math.Float64bits(f))
	}
	return acc
}
