package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/saber-hx/saber-hx/query"
)

// chunk is the number of tuples a kernel processes per step. Every
// intermediate result is a vector of chunk values indexed by the tuple's
// position in the chunk, so that each operator is one tight loop over a
// selection vector per chunk: one switch per operator per chunk, none per
// tuple. 1024 values of 8 bytes keep a vector in L1.
const chunk = 1024

// vexpr is a compiled numeric expression: evaluated over the selected tuples
// of a chunk into its own register (ints or floats).
type vexpr struct {
	float bool
	kind  vkind
	off   int // column offset
	op    query.ArithOp
	l, r  *vexpr
	ints  []int64   // register, or the broadcast constant
	flts  []float64 // register, or the broadcast constant
	// div: an integer division by a constant, by multiplication (divisor).
	div    divisor
	divide bool
	// vAffine: the column at off (int64 if wide, else int32) times mul
	// plus add.
	wide     bool
	mul, add int64
}

type vkind uint8

const (
	vColI32 vkind = iota + 1
	vColI64
	vColF32
	vColF64
	vConst
	vArith
	vToFloat // l converted to float
	vAffine  // integer column * mul + add (affineOf), read in place
)

// compileExpr compiles e over schema s. Constants become registers filled
// once, so that arithmetic and comparisons have one shape: register op
// register.
func compileExpr(e query.Expr, s *query.Schema) (*vexpr, error) {
	switch e := e.(type) {
	case query.Column:
		a, err := s.Lookup(e.Name)
		if err != nil {
			return nil, err
		}
		v := &vexpr{off: a.Offset}
		switch a.Type {
		case query.Int32:
			v.kind = vColI32
		case query.Int64:
			v.kind = vColI64
		case query.Float32:
			v.kind, v.float = vColF32, true
		case query.Float64:
			v.kind, v.float = vColF64, true
		default:
			return nil, fmt.Errorf("column %q is %s, not a number", e.Name, a.Type)
		}
		v.alloc()
		return v, nil
	case query.IntConst:
		v := &vexpr{kind: vConst, ints: make([]int64, chunk)}
		for i := range v.ints {
			v.ints[i] = e.V
		}
		return v, nil
	case query.FloatConst:
		v := &vexpr{kind: vConst, float: true, flts: make([]float64, chunk)}
		for i := range v.flts {
			v.flts[i] = e.V
		}
		return v, nil
	case query.Arith:
		if v, ok := affineOf(e, s); ok {
			return v, nil
		}
		l, r, err := compileOperands(e.L, e.R, s)
		if err != nil {
			return nil, err
		}
		v := &vexpr{kind: vArith, op: e.Op, float: l.float, l: l, r: r}
		if e.Op == query.OpDiv && !v.float && r.kind == vConst {
			v.div, v.divide = newDivisor(r.ints[0]), true
		}
		v.alloc()
		return v, nil
	}
	return nil, fmt.Errorf("%s is not a numeric expression", e)
}

// compileOperands compiles the operands of a binary operator (arithmetic
// or comparison), both as floats when either is.
func compileOperands(le, re query.Expr, s *query.Schema) (l, r *vexpr, err error) {
	if l, err = compileExpr(le, s); err != nil {
		return nil, nil, err
	}
	if r, err = compileExpr(re, s); err != nil {
		return nil, nil, err
	}
	if l.float || r.float {
		l, r = toFloat(l), toFloat(r)
	}
	return l, r, nil
}

func (v *vexpr) alloc() {
	if v.float {
		v.flts = make([]float64, chunk)
	} else {
		v.ints = make([]int64, chunk)
	}
}

func toFloat(v *vexpr) *vexpr {
	if v.float {
		return v
	}
	if v.kind == vConst {
		c := &vexpr{kind: vConst, float: true, flts: make([]float64, chunk)}
		for i := range c.flts {
			c.flts[i] = float64(v.ints[0])
		}
		return c
	}
	c := &vexpr{kind: vToFloat, float: true, l: v}
	c.alloc()
	return c
}

// eval computes v for the tuples sel of the chunk data (tuples of size ts).
// A selection of every tuple (no WHERE, no join) loads columns in one
// strided pass, without reading the selection.
func (v *vexpr) eval(data []byte, ts int, sel []int32) {
	if n := len(data) / ts; len(sel) == n && n > 0 && v.kind <= vColF64 {
		v.load(data, ts, n)
		return
	}
	switch v.kind {
	case vConst:
	case vAffine:
		v.affine(data, ts, sel)
	case vColI32:
		dst := v.ints
		for _, i := range sel {
			o := int(i)*ts + v.off
			dst[i] = int64(int32(binary.LittleEndian.Uint32(data[o : o+4])))
		}
	case vColI64:
		dst := v.ints
		for _, i := range sel {
			o := int(i)*ts + v.off
			dst[i] = int64(binary.LittleEndian.Uint64(data[o : o+8]))
		}
	case vColF32:
		dst := v.flts
		for _, i := range sel {
			o := int(i)*ts + v.off
			dst[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(data[o : o+4])))
		}
	case vColF64:
		dst := v.flts
		for _, i := range sel {
			o := int(i)*ts + v.off
			dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[o : o+8]))
		}
	case vToFloat:
		v.l.eval(data, ts, sel)
		src, dst := v.l.ints, v.flts
		for _, i := range sel {
			dst[i] = float64(src[i])
		}
	case vArith:
		v.l.eval(data, ts, sel)
		v.r.eval(data, ts, sel)
		n := len(data) / ts
		switch {
		case v.divide && len(sel) == n:
			v.div.divAll(v.ints[:n], v.l.ints[:n])
		case v.divide:
			v.div.divSel(v.ints, v.l.ints, sel)
		case v.float && len(sel) == n:
			arithAll(v.op, v.flts[:n], v.l.operand(n), v.r.operand(n), v.r.kind == vConst, false)
		case v.float:
			arith(v.op, v.flts, v.l.flts, v.r.flts, sel, false)
		case len(sel) == n:
			arithAll(v.op, v.ints[:n], v.l.operandInts(n), v.r.operandInts(n), v.r.kind == vConst, true)
		default:
			arith(v.op, v.ints, v.l.ints, v.r.ints, sel, true)
		}
	}
}

// affineOf compiles `int column * k1 + k2` and its parts (`column * k`,
// `column + k`, `column - k`, `column * k1 - k2`, constants either side of +
// and *) into one vAffine pass. The integers wrap as the separate
// operations do (x*k1 + k2, and x - k as x + -k, are the same bits), so
// the values are the operations'.
func affineOf(e query.Arith, s *query.Schema) (*vexpr, bool) {
	col, mul, add, ok := affineParts(e)
	if !ok {
		return nil, false
	}
	a, err := s.Lookup(col)
	if err != nil || (a.Type != query.Int32 && a.Type != query.Int64) {
		return nil, false
	}
	v := &vexpr{kind: vAffine, off: a.Offset, wide: a.Type == query.Int64, mul: mul, add: add}
	v.alloc()
	return v, true
}

// affineParts matches e as col*mul + add.
func affineParts(e query.Expr) (col string, mul, add int64, ok bool) {
	ar, isArith := e.(query.Arith)
	if !isArith {
		if c, isCol := e.(query.Column); isCol {
			return c.Name, 1, 0, true
		}
		return "", 0, 0, false
	}
	l, r := ar.L, ar.R
	lk, lConst := l.(query.IntConst)
	rk, rConst := r.(query.IntConst)
	switch ar.Op {
	case query.OpAdd, query.OpMul:
		if lConst && !rConst { // k op x: commutes
			l, r, rk, rConst = r, l, lk, true
		}
	case query.OpSub:
	default:
		return "", 0, 0, false
	}
	if !rConst {
		return "", 0, 0, false
	}
	switch ar.Op {
	case query.OpMul:
		// Only a column scaled: (x*m + c)*k would reorder the wrapping
		// multiplication of c.
		if c, isCol := l.(query.Column); isCol {
			return c.Name, rk.V, 0, true
		}
		return "", 0, 0, false
	default:
		inner, isArith := l.(query.Arith)
		if isArith && inner.Op != query.OpMul {
			return "", 0, 0, false // x + k1 + k2: left to the general path
		}
		col, mul, add, ok := affineParts(l)
		if !ok || add != 0 {
			return "", 0, 0, false
		}
		if ar.Op == query.OpSub {
			return col, mul, -rk.V, true
		}
		return col, mul, rk.V, true
	}
}

// affine computes column * mul + add for the tuples sel of the chunk data,
// all of them in one strided pass when sel is every tuple.
func (v *vexpr) affine(data []byte, ts int, sel []int32) {
	n := len(data) / ts
	if n == 0 || len(sel) == 0 {
		return
	}
	width := 4
	if v.wide {
		width = 8
	}
	_ = data[(n-1)*ts+v.off+width-1]
	col := unsafe.Add(unsafe.Pointer(unsafe.SliceData(data)), v.off)
	m, c := v.mul, v.add
	dst := v.ints
	switch {
	case len(sel) == n && v.wide:
		for i := range dst[:n] {
			dst[i] = int64(load64(col, i*ts))*m + c
		}
	case len(sel) == n:
		for i := range dst[:n] {
			dst[i] = int64(int32(load32(col, i*ts)))*m + c
		}
	case v.wide:
		for _, i := range sel {
			dst[i] = int64(load64(col, int(i)*ts))*m + c
		}
	default:
		for _, i := range sel {
			dst[i] = int64(int32(load32(col, int(i)*ts)))*m + c
		}
	}
}

// operand is a float register's first n values (a constant's broadcast).
func (v *vexpr) operand(n int) []float64 { return v.flts[:n] }

func (v *vexpr) operandInts(n int) []int64 { return v.ints[:n] }

// load reads column v of all n tuples of the chunk data.
func (v *vexpr) load(data []byte, ts, n int) {
	d := data[v.off:]
	switch v.kind {
	case vColI32:
		dst := v.ints[:n]
		for i := range dst {
			o := i * ts
			dst[i] = int64(int32(binary.LittleEndian.Uint32(d[o : o+4])))
		}
	case vColI64:
		dst := v.ints[:n]
		for i := range dst {
			o := i * ts
			dst[i] = int64(binary.LittleEndian.Uint64(d[o : o+8]))
		}
	case vColF32:
		dst := v.flts[:n]
		for i := range dst {
			o := i * ts
			dst[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(d[o : o+4])))
		}
	case vColF64:
		dst := v.flts[:n]
		for i := range dst {
			o := i * ts
			dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(d[o : o+8]))
		}
	}
}

// arith computes dst = a op b over sel. Integer division by zero gives 0
// (intDiv), so that one bad tuple cannot stop the stream; a float one
// follows IEEE 754.
func arith[T number](op query.ArithOp, dst, a, b []T, sel []int32, intDiv bool) {
	switch op {
	case query.OpAdd:
		for _, i := range sel {
			dst[i] = a[i] + b[i]
		}
	case query.OpSub:
		for _, i := range sel {
			dst[i] = a[i] - b[i]
		}
	case query.OpMul:
		for _, i := range sel {
			dst[i] = a[i] * b[i]
		}
	default:
		for _, i := range sel {
			if intDiv && b[i] == 0 {
				dst[i] = 0
			} else {
				dst[i] = a[i] / b[i]
			}
		}
	}
}

// arithAll computes dst = a op b for every tuple of the chunk (no WHERE
// narrowed it): loops over ranges, without the selection's indirection,
// and with b's first value as a scalar when b is a constant (bConst).
// Integer division by zero gives 0, as in arith.
func arithAll[T number](op query.ArithOp, dst, a, b []T, bConst, intDiv bool) {
	a, b = a[:len(dst)], b[:len(dst)]
	if bConst && len(b) > 0 {
		c := b[0]
		switch op {
		case query.OpAdd:
			for i := range dst {
				dst[i] = a[i] + c
			}
		case query.OpSub:
			for i := range dst {
				dst[i] = a[i] - c
			}
		case query.OpMul:
			for i := range dst {
				dst[i] = a[i] * c
			}
		default:
			if intDiv && c == 0 {
				clear(dst)
				return
			}
			for i := range dst {
				dst[i] = a[i] / c
			}
		}
		return
	}
	switch op {
	case query.OpAdd:
		for i := range dst {
			dst[i] = a[i] + b[i]
		}
	case query.OpSub:
		for i := range dst {
			dst[i] = a[i] - b[i]
		}
	case query.OpMul:
		for i := range dst {
			dst[i] = a[i] * b[i]
		}
	default:
		for i := range dst {
			if intDiv && b[i] == 0 {
				dst[i] = 0
			} else {
				dst[i] = a[i] / b[i]
			}
		}
	}
}

// vpred is a compiled predicate: it narrows a selection vector.
type vpred struct {
	kind  vpkind
	op    query.CmpOp
	l, r  *vexpr
	terms []*vpred
	// ranged: the comparison is an integer column against an integer
	// constant, as an interval (colRange) tested on the column in place,
	// without a branch per tuple.
	ranged bool
	rng    colRange
	// pAnd: the intervals of its ranged terms, tested before the other
	// terms (AND commutes; they are the cheapest), several per pass.
	ranges []colRange
	// ranges32: ranges as range32s, when every one is over an int32
	// column; nil otherwise.
	ranges32 []range32
	// OR scratch selections, chunk capacity each.
	in, buf, acc, tmp []int32
}

type vpkind uint8

const (
	pCmp vpkind = iota + 1
	pAnd
	pOr
)

func compilePred(e query.Expr, s *query.Schema) (*vpred, error) {
	switch e := e.(type) {
	case query.Compare:
		l, r, err := compileOperands(e.L, e.R, s)
		if err != nil {
			return nil, err
		}
		p := &vpred{kind: pCmp, op: e.Op, l: l, r: r}
		p.rng, p.ranged = colRangeOf(e, s)
		if !p.ranged {
			p.rng, p.ranged = divRangeOf(e, s)
		}
		return p, nil
	case query.AndExpr:
		return compileTerms(pAnd, e.Terms, s)
	case query.OrExpr:
		p, err := compileTerms(pOr, e.Terms, s)
		if err != nil {
			return nil, err
		}
		p.in, p.buf = make([]int32, 0, chunk), make([]int32, 0, chunk)
		p.acc, p.tmp = make([]int32, 0, chunk), make([]int32, 0, chunk)
		return p, nil
	}
	return nil, fmt.Errorf("%s is not a predicate", e)
}

func compileTerms(kind vpkind, terms []query.Expr, s *query.Schema) (*vpred, error) {
	p := &vpred{kind: kind}
	for _, t := range terms {
		c, err := compilePred(t, s)
		if err != nil {
			return nil, err
		}
		if kind == pAnd && c.ranged {
			p.ranges = append(p.ranges, c.rng)
			continue
		}
		p.terms = append(p.terms, c)
	}
	if kind == pAnd {
		p.ranges = mergeRanges(p.ranges)
	}
	p.ranges32 = ranges32Of(p.ranges)
	return p, nil
}

// mergeRanges returns the intervals of a conjunction rs, those over one
// column intersected into one (AND commutes), and the exclusions (!=) that
// the column's interval makes redundant dropped or folded into it, in the
// order of each column's first term (the query's first term stays first:
// selectRows tests it over the whole chunk). A column with an interval that
// wraps (none rangeOf or divRangeOf makes) keeps its terms as they are.
func mergeRanges(rs []colRange) []colRange {
	type col struct {
		off  int
		wide bool
	}
	var order []col
	in := map[col][]colRange{}
	for _, r := range rs {
		c := col{r.off, r.wide}
		if _, seen := in[c]; !seen {
			order = append(order, c)
		}
		in[c] = append(in[c], r)
	}
	out := make([]colRange, 0, len(rs))
	for _, c := range order {
		out = append(out, mergeColumn(in[c])...)
	}
	return out
}

// mergeColumn merges the intervals rs of one column (mergeRanges).
func mergeColumn(rs []colRange) []colRange {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64) // the intersection
	var excl []colRange
	for _, r := range rs {
		rhi := int64(uint64(r.lo) + r.span)
		if rhi < r.lo {
			return rs
		}
		if r.neg {
			excl = append(excl, r)
			continue
		}
		lo, hi = max(lo, r.lo), min(hi, rhi)
	}
	empty := colRange{off: rs[0].off, wide: rs[0].wide, lo: math.MinInt64, span: math.MaxUint64, neg: true}
	if lo > hi {
		return []colRange{empty}
	}
	// Exclusions at an end of [lo, hi] shrink it; until none does, as one
	// may uncover another.
	for changed := true; changed; {
		changed = false
		for _, x := range excl {
			xhi := int64(uint64(x.lo) + x.span)
			if x.lo <= lo && lo <= xhi {
				if xhi == math.MaxInt64 || xhi >= hi {
					return []colRange{empty}
				}
				lo, changed = xhi+1, true
			}
			if x.lo <= hi && hi <= xhi {
				if x.lo == math.MinInt64 || x.lo <= lo {
					return []colRange{empty}
				}
				hi, changed = x.lo-1, true
			}
		}
	}
	out := []colRange{{off: rs[0].off, wide: rs[0].wide, lo: lo, span: uint64(hi - lo)}}
	for _, x := range excl {
		if xhi := int64(uint64(x.lo) + x.span); x.lo > lo && xhi < hi {
			out = append(out, x) // strictly inside: still excludes values
		}
	}
	return out
}

// filter returns the tuples of sel (ascending) for which p holds, written
// over sel's own backing array: a selection only ever shrinks.
func (p *vpred) filter(data []byte, ts int, sel []int32) []int32 {
	switch p.kind {
	case pCmp:
		if p.ranged {
			return p.rng.filter(data, ts, sel)
		}
		p.l.eval(data, ts, sel)
		p.r.eval(data, ts, sel)
		if p.l.float {
			return cmpSel(p.op, p.l.flts, p.r.flts, sel)
		}
		return cmpSel(p.op, p.l.ints, p.r.ints, sel)
	case pAnd:
		if p.ranges32 != nil {
			sel = ranges32Sel(data, ts, p.ranges32, sel)
		} else {
			sel = rangesSel(data, ts, p.ranges, sel)
		}
		for _, t := range p.terms {
			if len(sel) == 0 {
				break
			}
			sel = t.filter(data, ts, sel)
		}
		return sel
	default: // pOr: the union of what each term keeps of sel
		in := append(p.in[:0], sel...)
		acc := p.acc[:0]
		for _, t := range p.terms {
			kept := t.filter(data, ts, append(p.buf[:0], in...))
			merged := mergeSorted(p.tmp[:0], acc, kept)
			p.tmp, p.acc = acc[:0], merged
			acc = merged
		}
		return append(sel[:0], acc...)
	}
}

// mergeSorted appends the union of ascending a and b to dst.
func mergeSorted(dst, a, b []int32) []int32 {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			dst = append(dst, a[i])
			i++
		case a[i] > b[j]:
			dst = append(dst, b[j])
			j++
		default:
			dst = append(dst, a[i])
			i++
			j++
		}
	}
	dst = append(dst, a[i:]...)
	return append(dst, b[j:]...)
}

type number interface{ ~int64 | ~float64 }

func cmpSel[T number](op query.CmpOp, a, b []T, sel []int32) []int32 {
	out := sel[:0]
	switch op {
	case query.Eq:
		for _, i := range sel {
			if a[i] == b[i] {
				out = append(out, i)
			}
		}
	case query.Ne:
		for _, i := range sel {
			if a[i] != b[i] {
				out = append(out, i)
			}
		}
	case query.Lt:
		for _, i := range sel {
			if a[i] < b[i] {
				out = append(out, i)
			}
		}
	case query.Le:
		for _, i := range sel {
			if a[i] <= b[i] {
				out = append(out, i)
			}
		}
	case query.Gt:
		for _, i := range sel {
			if a[i] > b[i] {
				out = append(out, i)
			}
		}
	default:
		for _, i := range sel {
			if a[i] >= b[i] {
				out = append(out, i)
			}
		}
	}
	return out
}

// Filter is a compiled predicate over tuples of one schema, for operators
// outside the kernels (the window join's pairs). Not safe for concurrent
// use.
type Filter struct {
	p   *vpred
	sel []int32
}

// NewFilter compiles predicate e over schema s.
func NewFilter(e query.Expr, s *query.Schema) (*Filter, error) {
	p, err := compilePred(e, s)
	if err != nil {
		return nil, err
	}
	return &Filter{p: p, sel: make([]int32, chunk)}, nil
}

// FilterChunk is the most tuples one Filter call takes.
const FilterChunk = chunk

// Keep returns the indexes of the tuples of data (at most FilterChunk
// tuples of ts bytes) for which the predicate holds; valid until the next
// call.
func (f *Filter) Keep(data []byte, ts int) []int32 {
	sel, _ := selectRows(f.p, f.sel, data, ts)
	return sel
}

// selectRows returns the indexes of the tuples of chunk data (ts bytes
// each, at most cap(buf) of them) that pass where (all of them when where
// is nil), written into buf, and how many did not.
//
// A WHERE whose first test is an interval (alone or the first term of an
// AND) writes the selection of that test straight from the tuples, instead
// of filtering a selection of all of them.
func selectRows(where *vpred, buf []int32, data []byte, ts int) (sel []int32, filtered uint64) {
	n := len(data) / ts
	sel = buf[:n]
	switch {
	case where == nil:
		for i := range sel {
			sel[i] = int32(i)
		}
		return sel, 0
	case where.ranged:
		sel = where.rng.filterAll(data, ts, sel)
	case where.kind == pAnd && len(where.ranges) > 0:
		sel = where.ranges[0].filterAll(data, ts, sel)
		if where.ranges32 != nil {
			sel = ranges32Sel(data, ts, where.ranges32[1:], sel)
		} else {
			sel = rangesSel(data, ts, where.ranges[1:], sel)
		}
		for _, t := range where.terms {
			if len(sel) == 0 {
				break
			}
			sel = t.filter(data, ts, sel)
		}
	default:
		for i := range sel {
			sel[i] = int32(i)
		}
		sel = where.filter(data, ts, sel)
	}
	return sel, uint64(n - len(sel))
}

// rangesSel keeps the tuples of sel that pass every interval of rs, over
// sel's backing array: up to four intervals per pass over the selection.
func rangesSel(cd []byte, ts int, rs []colRange, sel []int32) []int32 {
	for len(rs) > 0 && len(sel) > 0 {
		if len(rs) == 1 {
			return rs[0].filter(cd, ts, sel)
		}
		k := min(4, len(rs))
		sel = rangeBlock(cd, ts, rs[:k], sel)
		rs = rs[k:]
	}
	return sel
}

// rangeBlock keeps the tuples of sel that pass the two to four intervals
// rs, in one pass; missing ones are intervals that always hold.
func rangeBlock(cd []byte, ts int, rs []colRange, sel []int32) []int32 {
	var b [4]colRange
	end := 0 // the end of the farthest column read
	for j := range b {
		if j < len(rs) {
			b[j] = rs[j]
		} else {
			b[j] = colRange{off: rs[0].off, wide: rs[0].wide, lo: math.MinInt64, span: math.MaxUint64}
		}
		end = max(end, b[j].off+4+4*bit(b[j].wide))
	}
	_ = cd[int(sel[len(sel)-1])*ts+end-1] // sel is ascending
	base := unsafe.Pointer(unsafe.SliceData(cd))
	out := unsafe.Pointer(unsafe.SliceData(sel))
	ns := 0
	for _, i := range sel {
		t := unsafe.Add(base, int(i)*ts)
		*(*int32)(unsafe.Add(out, ns*4)) = i
		ns += b[0].holds(t) & b[1].holds(t) & b[2].holds(t) & b[3].holds(t)
	}
	return sel[:ns]
}

// range32 is a colRange over an int32 column as an interval of the
// column's 2^32 values taken cyclically: it holds for v when
// uint32(v) - lo < n, n from 0 (no value) to 2^32 (every value), so that
// the complement of an interval (!=) is one too and the test needs no
// flag: fewer operations per term than colRange's.
type range32 struct {
	off int
	lo  uint32
	n   uint64
}

// range32Of is c as a range32, if c is over an int32 column and an
// interval of int64s that does not wrap (as rangeOf and divRangeOf make
// them).
func range32Of(c colRange) (range32, bool) {
	hi := int64(uint64(c.lo) + c.span)
	if c.wide || hi < c.lo {
		return range32{}, false
	}
	a, b := max(c.lo, math.MinInt32), min(hi, math.MaxInt32)
	r := range32{off: c.off}
	switch {
	case a > b && !c.neg: // no int32 value
	case a > b: // every value
		r.n = 1 << 32
	case !c.neg:
		r.lo, r.n = uint32(a), uint64(b-a)+1
	default: // the values from b+1 round to a-1
		r.lo, r.n = uint32(b+1), 1<<32-(uint64(b-a)+1)
	}
	return r, true
}

// ranges32Of is rs as range32s, or nil where one is not one (or rs is
// empty).
func ranges32Of(rs []colRange) []range32 {
	var out []range32
	for _, c := range rs {
		r, ok := range32Of(c)
		if !ok {
			return nil
		}
		out = append(out, r)
	}
	return out
}

// ranges32Sel keeps the tuples of sel that pass every range of rs, over
// sel's backing array: up to eight per pass over the selection, so that a
// chunk's tuples are read again as seldom as they can be.
func ranges32Sel(cd []byte, ts int, rs []range32, sel []int32) []int32 {
	for len(rs) > 0 && len(sel) > 0 {
		if len(rs) <= 4 {
			return range32Block4(cd, ts, rs, sel)
		}
		k := min(8, len(rs))
		sel = range32Block8(cd, ts, rs[:k], sel)
		rs = rs[k:]
	}
	return sel
}

// padRanges fills b with rs and ranges that hold for every value, and
// returns the end of the farthest column read.
func padRanges(b []range32, rs []range32) int {
	end := 0
	for j := range b {
		if j < len(rs) {
			b[j] = rs[j]
		} else {
			b[j] = range32{off: rs[0].off, n: 1 << 32}
		}
		end = max(end, b[j].off+4)
	}
	return end
}

// range32Block4 keeps the tuples of sel that pass the one to four ranges
// rs, in one pass; missing ones hold for every value. A term's test is
// uint64(uint32(v)-lo) - n, negative (bit 63 set) where v passes: the AND
// of the terms' bits 63 is the tuple's verdict, without a comparison. The
// bounds stay in b (memory operands): as locals they would crowd the loop's
// own variables out of the registers.
func range32Block4(cd []byte, ts int, rs []range32, sel []int32) []int32 {
	var b [4]range32
	end := padRanges(b[:], rs)
	_ = cd[int(sel[len(sel)-1])*ts+end-1] // sel is ascending
	base := unsafe.Pointer(unsafe.SliceData(cd))
	out := unsafe.Pointer(unsafe.SliceData(sel))
	ns := 0
	for _, i := range sel {
		t := unsafe.Add(base, int(i)*ts)
		*(*int32)(unsafe.Add(out, ns*4)) = i
		d := b[0].test(t) & b[1].test(t) & b[2].test(t) & b[3].test(t)
		ns += int(d >> 63)
	}
	return sel[:ns]
}

// range32Block8 is range32Block4 for five to eight ranges.
func range32Block8(cd []byte, ts int, rs []range32, sel []int32) []int32 {
	var b [8]range32
	end := padRanges(b[:], rs)
	_ = cd[int(sel[len(sel)-1])*ts+end-1] // sel is ascending
	base := unsafe.Pointer(unsafe.SliceData(cd))
	out := unsafe.Pointer(unsafe.SliceData(sel))
	ns := 0
	for _, i := range sel {
		t := unsafe.Add(base, int(i)*ts)
		*(*int32)(unsafe.Add(out, ns*4)) = i
		d := b[0].test(t) & b[1].test(t) & b[2].test(t) & b[3].test(t) &
			b[4].test(t) & b[5].test(t) & b[6].test(t) & b[7].test(t)
		ns += int(d >> 63)
	}
	return sel[:ns]
}

// test has bit 63 set if the tuple at t passes r.
func (r *range32) test(t unsafe.Pointer) uint64 {
	return uint64(load32(t, r.off)-r.lo) - r.n
}

// holds is 1 if the tuple at t passes c, else 0.
func (c *colRange) holds(t unsafe.Pointer) int {
	var v int64
	if c.wide {
		v = int64(load64(t, c.off))
	} else {
		v = int64(int32(load32(t, c.off)))
	}
	return bit((uint64(v-c.lo) <= c.span) != c.neg)
}

func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}

// divRangeOf accepts `int32 column / int constant op int constant` (either
// side of op): the quotient is monotonic in the column, so the tuples it
// keeps are an interval of the column's values (or all of them but one
// interval, for !=), tested in place as the plain comparisons are, without
// dividing.
func divRangeOf(e query.Expr, s *query.Schema) (colRange, bool) {
	c, ok := e.(query.Compare)
	if !ok {
		return colRange{}, false
	}
	op := c.Op
	div, isDiv := c.L.(query.Arith)
	k, isK := c.R.(query.IntConst)
	if !isDiv || !isK {
		div, isDiv = c.R.(query.Arith)
		k, isK = c.L.(query.IntConst)
		op = op.Mirror()
	}
	if !isDiv || !isK || div.Op != query.OpDiv {
		return colRange{}, false
	}
	col, isCol := div.L.(query.Column)
	dc, isConst := div.R.(query.IntConst)
	if !isCol || !isConst {
		return colRange{}, false
	}
	a, err := s.Lookup(col.Name)
	if err != nil || a.Type != query.Int32 {
		return colRange{}, false
	}
	d := newDivisor(dc.V)
	holds := func(x int64) bool { return query.Holds(op, d.quo(x), k.V) }
	r := colRange{off: a.Offset}
	switch op {
	case query.Eq, query.Ne:
		// The quotient's = k is where both >= k and <= k hold.
		lo, hi, any := monotoneTrue(func(x int64) bool { return d.quo(x) >= k.V })
		lo2, hi2, any2 := monotoneTrue(func(x int64) bool { return d.quo(x) <= k.V })
		lo, hi = max(lo, lo2), min(hi, hi2)
		r.lo, r.span, r.neg = intervalOf(lo, hi, any && any2 && lo <= hi)
		if op == query.Ne {
			r.neg = !r.neg
		}
	default:
		lo, hi, any := monotoneTrue(holds)
		r.lo, r.span, r.neg = intervalOf(lo, hi, any)
	}
	return r, true
}

// monotoneTrue returns the interval [lo, hi] of the int32 values where f,
// monotonic over them (false then true, or true then false), holds, and
// whether it holds anywhere.
func monotoneTrue(f func(int64) bool) (lo, hi int64, any bool) {
	lo, hi = math.MinInt32, math.MaxInt32
	fl, fh := f(lo), f(hi)
	switch {
	case fl && fh:
		return lo, hi, true
	case !fl && !fh:
		return 0, 0, false
	}
	// The one switch lies in (a, b]: f(a) != f(b) = f(hi).
	a, b := lo, hi
	for b-a > 1 {
		m := a + (b-a)/2
		if f(m) == fh {
			b = m
		} else {
			a = m
		}
	}
	if fh {
		return b, hi, true
	}
	return lo, a, true
}

// intervalOf is colRange's lo, span and neg for [lo, hi], or for no value.
func intervalOf(lo, hi int64, any bool) (int64, uint64, bool) {
	if !any {
		return math.MinInt64, math.MaxUint64, true
	}
	return lo, uint64(hi - lo), false
}
