package kernels

// The window join's pair loop, chosen when the join is compiled: cross
// terms (an expression of each side compared) over typed slices, one loop
// per operator and type, pairs written as fixed-size copies (by assembly
// for 32-byte tuples, joinemit_amd64.s); the first integer cross term read
// from ranks of the right side where the window's sizes suit
// (joinmask.go); any other WHERE filtered a chunk of candidate pairs at a
// time.

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/saber-hx/saber-hx/query"
)

// pairPlan is a window join's WHERE compiled for the pair loop, once per
// join; each task compiles its own pairState from it (the vectorised
// expressions hold registers).
//
// A conjunction of comparisons that each compare an expression of the left
// tuple with one of the right tuple (cross terms: l.a < r.a), or involve one
// side only, runs specialised: one-side terms filter that side's tuples
// before the loop, each cross term's two operands are evaluated once per
// window into typed slices (one value per tuple), and the pairs are found
// left tuple by left tuple with one loop per operator and type over the
// right side's values, no call per pair. A comparison of the difference
// (or sum) of two int32 columns of opposite sides with an integer constant
// (JOIN_r's l.a - r.a >= -1000) is a cross term too: l.a >= r.a - 1000 is
// exact where no int64 can overflow, which int32 columns and a constant
// within ±2^60 guarantee. Any other WHERE (OR, arithmetic over both sides)
// is evaluated over chunks of candidate pairs, as before.
type pairPlan struct {
	lts, rts int
	special  bool
	cross    []crossTerm
	side     [2][]query.Expr // one-side terms (constant-only ones on the left)
	schemas  [2]*query.Schema
	where    query.Expr // the general path's predicate
	out      *query.Schema
	emit     emitter
	emitMask maskEmitter
}

type crossTerm struct {
	op   query.CmpOp
	l, r query.Expr // over the left and the right tuple
}

// maxRewriteConst bounds the constant of a rewritten difference, so that
// an int32 column plus or minus it cannot overflow.
const maxRewriteConst = 1 << 60

func newPairPlan(j *query.WindowJoin) (*pairPlan, error) {
	p := &pairPlan{lts: j.Left.TupleSize, rts: j.Right.TupleSize, out: j.OutputSchemaUnchecked(),
		emit: emitterFor(j.Left.TupleSize, j.Right.TupleSize), emitMask: maskEmitterFor(j.Left.TupleSize, j.Right.TupleSize)}
	for i, s := range []*query.Schema{j.Left, j.Right} {
		prefix := [2]string{query.LeftPrefix, query.RightPrefix}[i]
		ss := &query.Schema{TupleSize: s.TupleSize}
		for _, a := range s.Attrs {
			a.Name = prefix + a.Name
			ss.Attrs = append(ss.Attrs, a)
		}
		p.schemas[i] = ss
	}
	p.special = true
	if j.Where != nil {
		for _, term := range conjuncts(j.Where, nil) {
			if !p.addTerm(term) {
				p.special = false
				break
			}
		}
	}
	if !p.special {
		p.cross, p.side, p.where = nil, [2][]query.Expr{}, j.Where
	}
	// Compile once here: what fails to compile fails the join now, not a
	// task later.
	if _, err := p.compile(); err != nil {
		return nil, err
	}
	return p, nil
}

// conjuncts appends the terms of e's top-level ANDs to ts.
func conjuncts(e query.Expr, ts []query.Expr) []query.Expr {
	if a, ok := e.(query.AndExpr); ok && len(a.Terms) > 0 {
		for _, t := range a.Terms {
			ts = conjuncts(t, ts)
		}
		return ts
	}
	return append(ts, e)
}

// sidesOf is the sides e reads: bit 0 the left tuple, bit 1 the right one
// (3 for a column of neither, which no valid join has).
func sidesOf(e query.Expr) int {
	m := 0
	query.Walk(e, func(x query.Expr) bool {
		if c, ok := x.(query.Column); ok {
			switch {
			case len(c.Name) >= 2 && c.Name[:2] == query.LeftPrefix:
				m |= 1
			case len(c.Name) >= 2 && c.Name[:2] == query.RightPrefix:
				m |= 2
			default:
				m |= 3
			}
		}
		return true
	})
	return m
}

// addTerm files one term of the conjunction; false: the pair loop cannot
// run it.
func (p *pairPlan) addTerm(term query.Expr) bool {
	switch m := sidesOf(term); m {
	case 0, 1:
		p.side[0] = append(p.side[0], term)
		return true
	case 2:
		p.side[1] = append(p.side[1], term)
		return true
	}
	c, ok := term.(query.Compare)
	if !ok {
		return false
	}
	ml, mr := sidesOf(c.L), sidesOf(c.R)
	if !p.numeric(c.L) || !p.numeric(c.R) {
		return false // the pair loops compare numbers: the general path
	}
	switch {
	case ml == 1 && mr == 2:
		p.cross = append(p.cross, crossTerm{op: c.Op, l: c.L, r: c.R})
		return true
	case ml == 2 && mr == 1:
		p.cross = append(p.cross, crossTerm{op: c.Op.Mirror(), l: c.R, r: c.L})
		return true
	}
	// (X - Y) op k, (X + Y) op k, or k op (...): the constant on the right.
	a, op, k := c.L, c.Op, c.R
	if mr == 3 {
		a, op, k = c.R, c.Op.Mirror(), c.L
	}
	ar, ok1 := a.(query.Arith)
	kc, ok2 := k.(query.IntConst)
	if !ok1 || !ok2 || kc.V > maxRewriteConst || kc.V < -maxRewriteConst || (ar.Op != query.OpSub && ar.Op != query.OpAdd) {
		return false
	}
	x, ok1 := ar.L.(query.Column)
	y, ok2 := ar.R.(query.Column)
	if !ok1 || !ok2 || !p.isInt32(x.Name) || !p.isInt32(y.Name) {
		return false
	}
	switch {
	case ar.Op == query.OpAdd && sidesOf(x) != sidesOf(y):
		// l + r op k: l op k - r.
		if sidesOf(x) == 2 {
			x, y = y, x
		}
		p.cross = append(p.cross, crossTerm{op: op, l: x, r: query.Sub(query.Int(kc.V), y)})
	case ar.Op == query.OpSub && sidesOf(x) == 1 && sidesOf(y) == 2:
		// l - r op k: l op r + k.
		p.cross = append(p.cross, crossTerm{op: op, l: x, r: query.Add(y, query.Int(kc.V))})
	case ar.Op == query.OpSub && sidesOf(x) == 2 && sidesOf(y) == 1:
		// r - l op k: l - r op' -k (op' mirrored), l op' r - k.
		p.cross = append(p.cross, crossTerm{op: op.Mirror(), l: y, r: query.Add(x, query.Int(-kc.V))})
	default:
		return false
	}
	return true
}

// numeric reports whether e is a number the pair loops read (no NULL).
func (p *pairPlan) numeric(e query.Expr) bool {
	t, err := query.TypeOf(e, query.SchemaScope(p.out))
	return err == nil && t.Number() && !query.MayBeNull(e, query.SchemaNulls(p.out))
}

func (p *pairPlan) isInt32(name string) bool {
	a, err := p.out.Lookup(name)
	return err == nil && a.Type == query.Int32
}

// pairState is a task's compiled pairPlan, with the buffers of its loop.
type pairState struct {
	cross  []crossState
	side   [2]*Filter
	filter *Filter // the general path's
	pairs  []byte  // the general path's chunk of candidate pairs
	iota   []int32 // 0, 1, ...: a chunk's selection of every tuple
	sel    []int32 // the right tuples paired with one left tuple
	all    []int32 // 0, 1, ... over the right side, for no cross term
	rank   rankIndex
}

// crossState is a cross term's operands, compiled and evaluated over the
// window's left and right tuples (as integers, or floats where either is).
type crossState struct {
	op     query.CmpOp
	float  bool
	l, r   *vexpr
	li, ri []int64
	lf, rf []float64
}

func (p *pairPlan) newState() *pairState {
	st, err := p.compile()
	if err != nil {
		panic(fmt.Sprintf("kernels: window join predicate compiled at NewWindowJoin fails now: %v", err))
	}
	return st
}

func (p *pairPlan) compile() (*pairState, error) {
	st := &pairState{iota: make([]int32, chunk)}
	for i := range st.iota {
		st.iota[i] = int32(i)
	}
	if !p.special {
		if p.where != nil {
			f, err := NewFilter(p.where, p.out)
			if err != nil {
				return nil, err
			}
			st.filter = f
		}
		st.pairs = make([]byte, 0, FilterChunk*(p.lts+p.rts))
		return st, nil
	}
	for i, terms := range p.side {
		if len(terms) == 0 {
			continue
		}
		e := terms[0]
		if len(terms) > 1 {
			e = query.And(terms...)
		}
		f, err := NewFilter(e, p.schemas[i])
		if err != nil {
			return nil, err
		}
		st.side[i] = f
	}
	for _, c := range p.cross {
		l, err := compileExpr(c.l, p.schemas[0])
		if err != nil {
			return nil, err
		}
		r, err := compileExpr(c.r, p.schemas[1])
		if err != nil {
			return nil, err
		}
		cs := crossState{op: c.op, float: l.float || r.float}
		if cs.float {
			l, r = toFloat(l), toFloat(r)
		}
		cs.l, cs.r = l, r
		st.cross = append(st.cross, cs)
	}
	return st, nil
}

// join appends to out the pairs of the window whose tuples are left and
// right (in position order) and returns it.
func (st *pairState) join(p *pairPlan, left, right, out []byte) []byte {
	if !p.special {
		return st.joinChunks(p, left, right, out)
	}
	lts, rts := p.lts, p.rts
	left = st.keep(st.side[0], left, lts)
	right = st.keep(st.side[1], right, rts)
	nl, nr := len(left)/lts, len(right)/rts
	if nl == 0 || nr == 0 {
		return out
	}
	for i := range st.cross {
		c := &st.cross[i]
		if c.float {
			c.lf = evalAll(c.l, left, lts, c.lf[:0], st.iota, func(v *vexpr) []float64 { return v.flts })
			c.rf = evalAll(c.r, right, rts, c.rf[:0], st.iota, func(v *vexpr) []float64 { return v.flts })
		} else {
			c.li = evalAll(c.l, left, lts, c.li[:0], st.iota, func(v *vexpr) []int64 { return v.ints })
			c.ri = evalAll(c.r, right, rts, c.ri[:0], st.iota, func(v *vexpr) []int64 { return v.ints })
		}
	}
	if cap(st.sel) < nr {
		st.sel = make([]int32, nr)
	}
	if len(st.cross) == 0 {
		if len(st.all) < nr {
			st.all = make([]int32, nr)
			for j := range st.all {
				st.all[j] = int32(j)
			}
		}
		for i := range nl {
			out = p.emit(out, left[i*lts:(i+1)*lts], right, rts, st.all[:nr])
		}
		return out
	}
	c0, rest := &st.cross[0], st.cross[1:]
	byRank := !c0.float && nr <= rankMaxRight && nl >= rankMinLeft
	byEq := !byRank && !c0.float && c0.op == query.Eq && nr >= eqMinRight && nl >= rankMinLeft
	switch {
	case byRank:
		st.rank.build(c0.ri)
	case byEq:
		st.rank.rankOnly(c0.ri)
	}
	for i := range nl {
		var sel []int32
		if byRank {
			from, minus, all := st.rank.bitmaps(st.rank.ranks(c0.op, c0.li[i]))
			if len(rest) == 0 {
				out = p.emitMask(out, left[i*lts:(i+1)*lts], right, rts, from, minus, all)
				continue
			}
			sel = selectRanks(from, minus, all, st.sel[:nr])
		} else if byEq {
			sel = st.rank.equal(c0.li[i], st.sel[:0])
		} else if c0.float {
			sel = cmpFirst(c0.op, c0.lf[i], c0.rf, st.sel[:nr])
		} else {
			sel = cmpFirst(c0.op, c0.li[i], c0.ri, st.sel[:nr])
		}
		for k := range rest {
			if len(sel) == 0 {
				break
			}
			c := &rest[k]
			if c.float {
				sel = cmpNarrow(c.op, c.lf[i], c.rf, sel)
			} else {
				sel = cmpNarrow(c.op, c.li[i], c.ri, sel)
			}
		}
		if len(sel) > 0 {
			out = p.emit(out, left[i*lts:(i+1)*lts], right, rts, sel)
		}
	}
	return out
}

// keep compacts data (tuples of ts bytes) to the tuples f passes, in
// order, in place; f nil passes every tuple.
func (st *pairState) keep(f *Filter, data []byte, ts int) []byte {
	if f == nil {
		return data
	}
	w := 0
	for c := 0; c < len(data); c += FilterChunk * ts {
		part := data[c:min(len(data), c+FilterChunk*ts)]
		for _, i := range f.Keep(part, ts) {
			o := c + int(i)*ts
			w += copy(data[w:w+ts], data[o:o+ts])
		}
	}
	return data[:w]
}

// evalAll evaluates v over every tuple of data, a chunk at a time, and
// appends the values (reg: v's register) to dst.
func evalAll[T number](v *vexpr, data []byte, ts int, dst []T, iota []int32, reg func(*vexpr) []T) []T {
	for c := 0; c < len(data); c += chunk * ts {
		part := data[c:min(len(data), c+chunk*ts)]
		n := len(part) / ts
		v.eval(part, ts, iota[:n])
		dst = append(dst, reg(v)[:n]...)
	}
	return dst
}

// cmpFirst writes into sel (len(g) long) the indexes j for which a op g[j]
// holds, in order, and returns them: one loop per operator, the index
// written whether or not it holds and kept by advancing, no branch per
// pair. The writes go through a pointer: n <= j < len(sel), which the
// compiler cannot prove, and its bounds check would double the loop.
func cmpFirst[T number](op query.CmpOp, a T, g []T, sel []int32) []int32 {
	sel = sel[:len(g)]
	if len(g) == 0 {
		return sel
	}
	p := unsafe.Pointer(unsafe.SliceData(sel))
	n := 0
	switch op {
	case query.Eq:
		for j, v := range g {
			*(*int32)(unsafe.Add(p, 4*n)) = int32(j)
			n += b2i(a == v)
		}
	case query.Ne:
		for j, v := range g {
			*(*int32)(unsafe.Add(p, 4*n)) = int32(j)
			n += b2i(a != v)
		}
	case query.Lt:
		for j, v := range g {
			*(*int32)(unsafe.Add(p, 4*n)) = int32(j)
			n += b2i(a < v)
		}
	case query.Le:
		for j, v := range g {
			*(*int32)(unsafe.Add(p, 4*n)) = int32(j)
			n += b2i(a <= v)
		}
	case query.Gt:
		for j, v := range g {
			*(*int32)(unsafe.Add(p, 4*n)) = int32(j)
			n += b2i(a > v)
		}
	default:
		for j, v := range g {
			*(*int32)(unsafe.Add(p, 4*n)) = int32(j)
			n += b2i(a >= v)
		}
	}
	return sel[:n]
}

// cmpNarrow keeps the indexes j of sel for which a op g[j] holds, in place.
func cmpNarrow[T number](op query.CmpOp, a T, g []T, sel []int32) []int32 {
	n := 0
	switch op {
	case query.Eq:
		for _, j := range sel {
			sel[n] = j
			n += b2i(a == g[j])
		}
	case query.Ne:
		for _, j := range sel {
			sel[n] = j
			n += b2i(a != g[j])
		}
	case query.Lt:
		for _, j := range sel {
			sel[n] = j
			n += b2i(a < g[j])
		}
	case query.Le:
		for _, j := range sel {
			sel[n] = j
			n += b2i(a <= g[j])
		}
	case query.Gt:
		for _, j := range sel {
			sel[n] = j
			n += b2i(a > g[j])
		}
	default:
		for _, j := range sel {
			sel[n] = j
			n += b2i(a >= g[j])
		}
	}
	return sel[:n]
}

// b2i is 1 for true: the compiler makes it a SETcc, not a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// emitter appends to out, for each right tuple j of sel, the pair of lt
// and the right tuple j of right (rts bytes each), and returns it.
type emitter func(out, lt, right []byte, rts int, sel []int32) []byte

// emitterFor is the pair emission for tuples of lts and rts bytes: for
// equal sizes of 8 to 64 bytes in steps of 8 a copy of two fixed-size
// arrays per pair, moves the compiler inlines, against two calls of
// memmove with a copy.
func emitterFor(lts, rts int) emitter {
	if e := fastEmitter(lts, rts); e != nil {
		return e
	}
	if lts == rts {
		switch lts {
		case 8:
			return emitFixed[[8]byte]
		case 16:
			return emitFixed[[16]byte]
		case 24:
			return emitFixed[[24]byte]
		case 32:
			return emitFixed[[32]byte]
		case 40:
			return emitFixed[[40]byte]
		case 48:
			return emitFixed[[48]byte]
		case 56:
			return emitFixed[[56]byte]
		case 64:
			return emitFixed[[64]byte]
		}
	}
	return emitPairs
}

type tupleArray interface {
	[8]byte | [16]byte | [24]byte | [32]byte | [40]byte | [48]byte | [56]byte | [64]byte
}

// emitFixed is emitPairs for left and right tuples of T's size.
func emitFixed[T tupleArray](out, lt, right []byte, rts int, sel []int32) []byte {
	var z T
	ts := int(unsafe.Sizeof(z))
	o := len(out)
	out = slices.Grow(out, len(sel)*2*ts)[:o+len(sel)*2*ts]
	l := *(*T)(unsafe.Pointer(unsafe.SliceData(lt[:ts])))
	r := unsafe.Pointer(unsafe.SliceData(right))
	nr := len(right) / ts
	for _, j := range sel {
		if int(j) >= nr {
			panic("kernels: pair index out of range")
		}
		d := (*[2]T)(unsafe.Pointer(unsafe.SliceData(out[o : o+2*ts])))
		d[0] = l
		d[1] = *(*T)(unsafe.Add(r, int(j)*ts))
		o += 2 * ts
	}
	return out
}

// emitPairs is the emitter of any tuple sizes.
func emitPairs(out, lt, right []byte, rts int, sel []int32) []byte {
	lts := len(lt)
	ps := lts + rts
	o := len(out)
	out = slices.Grow(out, len(sel)*ps)[:o+len(sel)*ps]
	for _, j := range sel {
		d := out[o : o+ps : o+ps]
		copy(d, lt)
		r := int(j) * rts
		copy(d[lts:], right[r:r+rts])
		o += ps
	}
	return out
}

// joinChunks is the general path: every pair of left and right tuples,
// filtered a chunk of pairs at a time by WHERE.
func (st *pairState) joinChunks(p *pairPlan, left, right, out []byte) []byte {
	lts, rts, ps := p.lts, p.rts, p.lts+p.rts
	pairs := st.pairs[:0]
	flush := func() {
		if len(pairs) == 0 {
			return
		}
		if st.filter == nil {
			out = append(out, pairs...)
		} else {
			for _, i := range st.filter.Keep(pairs, ps) {
				out = append(out, pairs[int(i)*ps:int(i+1)*ps]...)
			}
		}
		pairs = pairs[:0]
	}
	for lo := 0; lo < len(left); lo += lts {
		lt := left[lo : lo+lts]
		for ro := 0; ro < len(right); ro += rts {
			pairs = append(pairs, lt...)
			pairs = append(pairs, right[ro:ro+rts]...)
			if len(pairs) == cap(pairs) {
				flush()
			}
		}
	}
	flush()
	st.pairs = pairs
	return out
}
