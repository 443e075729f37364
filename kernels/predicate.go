package kernels

// WHERE compiled for the vectorised kernels: predicates over chunks of
// tuples into selection vectors, and Filter, the same for the window
// join's pairs.

import (
	"fmt"

	"github.com/saber-hx/saber-hx/query"
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
