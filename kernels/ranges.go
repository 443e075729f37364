package kernels

// Comparisons of integer columns with constants as interval tests: a
// conjunction's terms on one column merged when the plan is made, each
// tested without a branch (one unsigned difference), int32 ones several
// per pass.

import (
	"math"
	"unsafe"

	"github.com/saber-hx/saber-hx/query"
)

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

// colRange is `integer column op constant` as an interval: it holds for v
// when uint64(v-lo) <= span, negated when neg (!=, and the empty ranges of
// `< MinInt64` and `> MaxInt64`).
type colRange struct {
	off  int
	wide bool // int64, else int32
	lo   int64
	span uint64
	neg  bool
}

// rangeOf returns the interval of `v op c`.
func rangeOf(op query.CmpOp, c int64) (lo int64, span uint64, neg bool) {
	const all = math.MaxUint64
	switch op {
	case query.Eq:
		return c, 0, false
	case query.Ne:
		return c, 0, true
	case query.Lt:
		if c == math.MinInt64 {
			return math.MinInt64, all, true
		}
		return math.MinInt64, uint64(c-1) + 1<<63, false
	case query.Le:
		return math.MinInt64, uint64(c) + 1<<63, false
	case query.Gt:
		if c == math.MaxInt64 {
			return math.MinInt64, all, true
		}
		return c + 1, uint64(math.MaxInt64) - uint64(c+1), false
	default: // Ge
		return c, uint64(math.MaxInt64) - uint64(c), false
	}
}

// colRangeOf accepts `int column op int constant` (either side).
func colRangeOf(e query.Expr, s *query.Schema) (colRange, bool) {
	col, op, c, ok := query.ColumnConst(e)
	if !ok {
		return colRange{}, false
	}
	a, err := s.Lookup(col)
	// A nullable column's NULL holds a value slot that a range would
	// read as a number: its comparisons go through the general predicate
	// (the null-free kernel of a task without NULLs still gets ranges).
	if err != nil || (a.Type != query.Int32 && a.Type != query.Int64) || a.Nullable {
		return colRange{}, false
	}
	lo, span, neg := rangeOf(op, c)
	return colRange{off: a.Offset, wide: a.Type == query.Int64, lo: lo, span: span, neg: neg}, true
}

// colRangesOf returns WHERE e as intervals, if every term of it is one.
func colRangesOf(e query.Expr, s *query.Schema) ([]colRange, bool) {
	var terms []query.Expr
	switch w := e.(type) {
	case nil:
		return nil, false
	case query.AndExpr:
		terms = w.Terms
	default:
		terms = []query.Expr{w}
	}
	var out []colRange
	for _, t := range terms {
		r, ok := colRangeOf(t, s)
		if !ok {
			return nil, false
		}
		out = append(out, r)
	}
	return out, len(out) > 0
}

// filter keeps the tuples of sel that pass c, over sel's backing array.
func (c *colRange) filter(cd []byte, ts int, sel []int32) []int32 {
	if c.wide {
		return rangeSel[int64](cd, ts, c, sel)
	}
	return rangeSel[int32](cd, ts, c, sel)
}

// filterAll writes into sel (len(sel) tuples of cd, sel's capacity) the
// tuples that pass c, and returns them.
func (c *colRange) filterAll(cd []byte, ts int, sel []int32) []int32 {
	if c.wide {
		return rangeAll[int64](cd, ts, c, sel)
	}
	return rangeAll[int32](cd, ts, c, sel)
}

func rangeAll[T int32 | int64](cd []byte, ts int, c *colRange, sel []int32) []int32 {
	n := len(sel)
	if n == 0 {
		return sel
	}
	_ = cd[(n-1)*ts+c.off+int(unsafe.Sizeof(T(0)))-1]
	col := unsafe.Add(unsafe.Pointer(unsafe.SliceData(cd)), c.off)
	out := unsafe.Pointer(unsafe.SliceData(sel))
	lo, span := c.lo, c.span
	ns, o := 0, 0
	if c.neg {
		for i := range n {
			v := int64(*(*T)(unsafe.Add(col, o)))
			o += ts
			*(*int32)(unsafe.Add(out, ns*4)) = int32(i)
			if uint64(v-lo) > span {
				ns++
			}
		}
		return sel[:ns]
	}
	for i := range n {
		v := int64(*(*T)(unsafe.Add(col, o)))
		o += ts
		*(*int32)(unsafe.Add(out, ns*4)) = int32(i)
		if uint64(v-lo) <= span {
			ns++
		}
	}
	return sel[:ns]
}

func rangeSel[T int32 | int64](cd []byte, ts int, c *colRange, sel []int32) []int32 {
	if len(sel) == 0 {
		return sel
	}
	// sel is ascending: its last tuple bounds every load.
	_ = cd[int(sel[len(sel)-1])*ts+c.off+int(unsafe.Sizeof(T(0)))-1]
	base := unsafe.Add(unsafe.Pointer(unsafe.SliceData(cd)), c.off)
	out := unsafe.Pointer(unsafe.SliceData(sel))
	lo, span, neg := c.lo, c.span, c.neg
	ns := 0
	for _, i := range sel {
		v := int64(*(*T)(unsafe.Add(base, int(i)*ts)))
		*(*int32)(unsafe.Add(out, ns*4)) = i
		if (uint64(v-lo) <= span) != neg {
			ns++
		}
	}
	return sel[:ns]
}
