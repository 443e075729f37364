package kernels

// WHERE compiled for the vectorised kernels: predicates over chunks of
// tuples into selection vectors, and Filter, the same for the window
// join's pairs.

import (
	"fmt"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

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
	// pLike's matcher, pIn's constant set (ints or strings), not: NOT LIKE
	// or NOT IN.
	like  *strview.Like
	ints  map[int64]struct{}
	strs  map[string]struct{}
	null  bool // pIn: the list holds a NULL (then NOT IN never holds)
	not   bool
	truth bool // pConst's value
	row   *rexpr
	fold  *foldIn // pFoldIn's
	sc    *rowScratch
}

type vpkind uint8

const (
	pCmp vpkind = iota + 1
	pAnd
	pOr
	pTruth  // a boolean register: true and not NULL
	pLike   // l LIKE pattern
	pIn     // l IN (constants)
	pIsNull // l IS [NOT] NULL
	pConst  // TRUE or FALSE
	pRow    // the row evaluator's condition is true
	pFoldIn // LOWER(x) IN (string literals), foldIn
)

// compilePred compiles a condition: it keeps the tuples for which it is
// true (a NULL condition drops the tuple, as SQL's WHERE does). NOT is
// pushed down to the leaves first (pushNot), so that a leaf's NULL can be
// read as false.
func compilePred(e query.Expr, s *query.Schema) (*vpred, error) {
	return compileLeaf(pushNot(e, false, query.SchemaScope(s)), s)
}

func compileLeaf(e query.Expr, s *query.Schema) (*vpred, error) {
	switch e := e.(type) {
	case query.NotExpr:
		// NOT (x < y) of floats (pushNot): the tuples whose operands are
		// not NULL and do not compare so, NaN's among them
		if c, ok := e.X.(query.Compare); ok && !foldsCase(c) {
			if l, r, err := compileOperands(c.L, c.R, s); err == nil && l.float {
				return &vpred{kind: pCmp, op: c.Op, l: l, r: r, not: true}, nil
			}
		}
	case query.Compare:
		if foldsCase(e) {
			return compileRowPred(e, s)
		}
		l, r, err := compileOperands(e.L, e.R, s)
		if err != nil {
			return compileRowPred(e, s)
		}
		p := &vpred{kind: pCmp, op: e.Op, l: l, r: r}
		if l.nulls == nil && r.nulls == nil && !l.str {
			p.rng, p.ranged = colRangeOf(e, s)
			if !p.ranged {
				p.rng, p.ranged = divRangeOf(e, s)
			}
		}
		return p, nil
	case query.BoolConst:
		return &vpred{kind: pConst, truth: e.V}, nil
	case query.Column:
		l, err := compileExpr(e, s)
		if err != nil {
			return nil, err
		}
		return &vpred{kind: pTruth, l: l}, nil
	case query.Like:
		l, err := compileExpr(e.X, s)
		if err != nil {
			return nil, err
		}
		m, err := strview.CompileLike(e.Pattern, e.Escape)
		if err != nil {
			return nil, err
		}
		return &vpred{kind: pLike, l: l, like: m, not: e.Not}, nil
	case query.IsNull:
		l, err := compileExpr(e.X, s)
		if err != nil {
			return nil, err
		}
		return &vpred{kind: pIsNull, l: l, not: e.Not}, nil
	case query.InList:
		switch f, ok, err := newFoldIn(e, s); {
		case err != nil:
			return nil, err
		case ok:
			return &vpred{kind: pFoldIn, fold: f, sc: &rowScratch{}}, nil
		}
		if _, _, isCase := caseCall(e.X); isCase {
			return compileRowPred(e, s) // inConsts compares without the copy
		}
		if p, ok, err := compileIn(e, s); ok || err != nil {
			return p, err
		}
		return compileRowPred(e, s)
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
	if t, err := query.TypeOf(e, query.SchemaScope(s)); err != nil {
		return nil, err
	} else if t != query.BoolValue {
		return nil, fmt.Errorf("%s is not a predicate", e)
	}
	return compileRowPred(e, s)
}

// compileRowPred makes condition e the row evaluator's.
func compileRowPred(e query.Expr, s *query.Schema) (*vpred, error) {
	rx, err := compileRow(e, s)
	if err != nil {
		return nil, err
	}
	return &vpred{kind: pRow, row: rx, sc: &rowScratch{}}, nil
}

// compileIn compiles X IN (constants) into a set lookup; ok false where
// the list is not constants of X's kind.
func compileIn(e query.InList, s *query.Schema) (*vpred, bool, error) {
	l, err := compileExpr(e.X, s)
	if err != nil {
		return nil, false, err
	}
	if l.float {
		return nil, false, nil
	}
	p := &vpred{kind: pIn, l: l, not: e.Not}
	if l.str {
		p.strs = map[string]struct{}{}
	} else {
		p.ints = map[int64]struct{}{}
	}
	for _, x := range e.List {
		switch c := x.(type) {
		case query.Null:
			p.null = true
		case query.StrConst:
			if !l.str {
				return nil, false, nil
			}
			p.strs[c.V] = struct{}{}
		case query.IntConst:
			if l.str {
				return nil, false, nil
			}
			p.ints[c.V] = struct{}{}
		default:
			return nil, false, nil
		}
	}
	return p, true, nil
}

// pushNot returns e (of scope) with NOT pushed down to its leaves (De
// Morgan, and each comparison, LIKE, IN and IS NULL negated in place);
// negate says whether e is under an odd number of NOTs. A leaf that stays
// under NOT (a CASE, a function; an ordering comparison of floats, whose
// negation differs for NaN) keeps a NotExpr.
func pushNot(e query.Expr, negate bool, scope query.Scope) query.Expr {
	switch x := e.(type) {
	case query.NotExpr:
		return pushNot(x.X, !negate, scope)
	case query.AndExpr, query.OrExpr:
		var terms []query.Expr
		isAnd := false
		if a, ok := x.(query.AndExpr); ok {
			terms, isAnd = a.Terms, true
		} else {
			terms = x.(query.OrExpr).Terms
		}
		out := make([]query.Expr, len(terms))
		for i, t := range terms {
			out[i] = pushNot(t, negate, scope)
		}
		if isAnd != negate {
			return query.AndExpr{Terms: out}
		}
		return query.OrExpr{Terms: out}
	}
	if !negate {
		return e
	}
	switch x := e.(type) {
	case query.Compare:
		if x.Op != query.Eq && x.Op != query.Ne && (isFloatIn(x.L, scope) || isFloatIn(x.R, scope)) {
			return query.NotExpr{X: e} // NOT (NaN < y) holds, NaN >= y does not
		}
		return query.Compare{Op: negateOp(x.Op), L: x.L, R: x.R}
	case query.Like:
		x.Not = !x.Not
		return x
	case query.InList:
		x.Not = !x.Not
		return x
	case query.IsNull:
		x.Not = !x.Not
		return x
	case query.BoolConst:
		return query.BoolConst{V: !x.V}
	}
	return query.NotExpr{X: e}
}

// isFloatIn reports whether e is a float in scope.
func isFloatIn(e query.Expr, scope query.Scope) bool {
	t, err := query.TypeOf(e, scope)
	return err == nil && t == query.FloatValue
}

func negateOp(op query.CmpOp) query.CmpOp {
	switch op {
	case query.Eq:
		return query.Ne
	case query.Ne:
		return query.Eq
	case query.Lt:
		return query.Ge
	case query.Le:
		return query.Gt
	case query.Gt:
		return query.Le
	}
	return query.Lt
}

func compileTerms(kind vpkind, terms []query.Expr, s *query.Schema) (*vpred, error) {
	p := &vpred{kind: kind}
	for _, t := range cheapFirst(terms) {
		c, err := compileLeaf(t, s)
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
		sel = dropNulls(sel, p.l.nulls, p.r.nulls)
		switch {
		case p.l.str:
			return cmpStrSel(p.op, p.l.strs, p.r.strs, sel)
		case p.l.float && p.not:
			return cmpSelNot(p.op, p.l.flts, p.r.flts, sel)
		case p.l.float:
			return cmpSel(p.op, p.l.flts, p.r.flts, sel)
		}
		return cmpSel(p.op, p.l.ints, p.r.ints, sel)
	case pConst:
		if p.truth {
			return sel
		}
		return sel[:0]
	case pTruth:
		p.l.eval(data, ts, sel)
		sel = dropNulls(sel, p.l.nulls, nil)
		out := sel[:0]
		for _, i := range sel {
			if p.l.ints[i] != 0 {
				out = append(out, i)
			}
		}
		return out
	case pIsNull:
		p.l.eval(data, ts, sel)
		out := sel[:0]
		for _, i := range sel {
			if (p.l.nulls != nil && p.l.nulls[i]) != p.not {
				out = append(out, i)
			}
		}
		return out
	case pLike:
		p.l.eval(data, ts, sel)
		sel = dropNulls(sel, p.l.nulls, nil)
		out := sel[:0]
		for _, i := range sel {
			if p.like.Match(p.l.strs[i]) != p.not {
				out = append(out, i)
			}
		}
		return out
	case pIn:
		p.l.eval(data, ts, sel)
		sel = dropNulls(sel, p.l.nulls, nil)
		out := sel[:0]
		for _, i := range sel {
			var in bool
			if p.strs != nil {
				_, in = p.strs[string(p.l.strs[i])]
			} else {
				_, in = p.ints[p.l.ints[i]]
			}
			// x NOT IN (..., NULL) is never true; x IN (..., NULL) only
			// where x is in the list.
			if in != p.not && !(p.not && p.null) {
				out = append(out, i)
			}
		}
		return out
	case pRow:
		p.sc.arena.Reset()
		fn := p.row.fn
		out := sel[:0]
		for _, i := range sel {
			if v := fn(data[int(i)*ts:int(i+1)*ts], p.sc); !v.null && v.i != 0 {
				out = append(out, i)
			}
		}
		return out
	case pFoldIn:
		p.sc.arena.Reset()
		out := sel[:0]
		for _, i := range sel {
			if v, null := p.fold.eval(data[int(i)*ts:int(i+1)*ts], p.sc); v && !null {
				out = append(out, i)
			}
		}
		return out
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
		// A term sees only the tuples that the terms before it did not
		// keep (in), so that a dear term after a cheap one (cheapFirst)
		// runs on what is left.
		in := append(p.in[:0], sel...)
		acc := p.acc[:0]
		for k, t := range p.terms {
			kept := t.filter(data, ts, append(p.buf[:0], in...))
			merged := mergeSorted(p.tmp[:0], acc, kept)
			p.tmp, p.acc = acc[:0], merged
			acc = merged
			if k < len(p.terms)-1 {
				if in = subtractSorted(in, kept); len(in) == 0 {
					break
				}
			}
		}
		p.in = in[:0]
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

// subtractSorted removes ascending b, a subset of ascending a, from a in
// place.
func subtractSorted(a, b []int32) []int32 {
	out, j := a[:0], 0
	for _, x := range a {
		if j < len(b) && b[j] == x {
			j++
			continue
		}
		out = append(out, x)
	}
	return out
}

// dropNulls keeps the tuples of sel where neither operand is NULL (a nil
// operand has none).
func dropNulls(sel []int32, a, b []bool) []int32 {
	if a == nil && b == nil {
		return sel
	}
	out := sel[:0]
	for _, i := range sel {
		if (a == nil || !a[i]) && (b == nil || !b[i]) {
			out = append(out, i)
		}
	}
	return out
}

// cmpStrSel is cmpSel over strings, byte-wise.
func cmpStrSel(op query.CmpOp, a, b [][]byte, sel []int32) []int32 {
	out := sel[:0]
	for _, i := range sel {
		if cmpHolds(op, bytesCompare(a[i], b[i])) {
			out = append(out, i)
		}
	}
	return out
}

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

// cmpSelNot is the tuples of sel for which a op b does not hold: NOT (a
// op b), where a NaN compares false.
func cmpSelNot(op query.CmpOp, a, b []float64, sel []int32) []int32 {
	out := sel[:0]
	switch op {
	case query.Eq:
		for _, i := range sel {
			if !(a[i] == b[i]) {
				out = append(out, i)
			}
		}
	case query.Ne:
		for _, i := range sel {
			if !(a[i] != b[i]) {
				out = append(out, i)
			}
		}
	case query.Lt:
		for _, i := range sel {
			if !(a[i] < b[i]) {
				out = append(out, i)
			}
		}
	case query.Le:
		for _, i := range sel {
			if !(a[i] <= b[i]) {
				out = append(out, i)
			}
		}
	case query.Gt:
		for _, i := range sel {
			if !(a[i] > b[i]) {
				out = append(out, i)
			}
		}
	default:
		for _, i := range sel {
			if !(a[i] >= b[i]) {
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
