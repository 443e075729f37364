package kernels

// The row evaluator's fast paths: shapes that queries write often (a
// function of one column and constants, a comparison or IN with
// constants, LOWER(x) = 'literal'), compiled to fewer closures than the
// general tree of rowexpr.go, with the same values. Each is chosen when
// the expression is compiled; the general path stays for everything else
// and is the oracle the tests compare these with.

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf8"

	"github.com/saber-hx/saber-hx/query"
)

// constOf is the value of a literal: what its closure would return for
// every tuple.
func constOf(e query.Expr) (rval, bool) {
	switch e := e.(type) {
	case query.IntConst:
		return rval{i: e.V}, true
	case query.FloatConst:
		return rval{f: e.V}, true
	case query.StrConst:
		return rval{s: []byte(e.V)}, true
	case query.BoolConst:
		return boolVal(e.V), true
	case query.Null:
		return rnull, true
	}
	return rval{}, false
}

// constAs is constOf's value as an operand, converted to a float where
// the operator meets its operands as floats (asFloat's conversion, done
// once rather than per tuple).
func constAs(e query.Expr, s *query.Schema, float bool) (rval, bool) {
	v, ok := constOf(e)
	if ok && float && !v.null && typeIn(e, s) != query.FloatValue {
		v.f = float64(v.i)
	}
	return v, ok
}

// strictCall is a function of non-NULL arguments as a row function: NULL
// where any argument is. Literal arguments are put in the values once, so
// that a tuple calls only the closures of the others (SPLIT_INDEX(url,
// '/', 3) calls one). The values are the node's own: a kernel, and so its
// closures, belongs to one worker.
func strictCall(exprs []query.Expr, args []rowFn, f func(vs []rval, sc *rowScratch) rval) rowFn {
	vs := make([]rval, len(args))
	var vars []int
	for i, e := range exprs {
		c, ok := constOf(e)
		switch {
		case !ok:
			vars = append(vars, i)
		case c.null:
			return func([]byte, *rowScratch) rval { return rnull }
		default:
			vs[i] = c
		}
	}
	if len(vars) == 1 {
		k, a := vars[0], args[vars[0]]
		return func(t []byte, sc *rowScratch) rval {
			v := a(t, sc)
			if v.null {
				return rnull
			}
			vs[k] = v
			return f(vs, sc)
		}
	}
	return func(t []byte, sc *rowScratch) rval {
		for _, i := range vars {
			v := args[i](t, sc)
			if v.null {
				return rnull
			}
			vs[i] = v
		}
		return f(vs, sc)
	}
}

// splitIndexByte is SPLIT_INDEX(x, 'c', i) for a one-byte separator and a
// literal index, in the row evaluator (inside a CASE, say; a projection or
// a condition of its own is vSplit): one closure, the pieces found by
// splitAtByte.
func splitIndexByte(e query.Call, x rowFn) (rowFn, bool) {
	c, i, ok := byteSplit(e)
	if !ok {
		return nil, false
	}
	if i < 0 {
		return func([]byte, *rowScratch) rval { return rnull }, true
	}
	return func(t []byte, sc *rowScratch) rval {
		v := x(t, sc)
		if v.null {
			return rnull
		}
		b, ok := splitAtByte(v.s, c, i)
		if !ok {
			return rnull
		}
		return rval{s: b}
	}, true
}

// byteSplit reads SPLIT_INDEX(x, 'c', i) of a one-byte separator and a
// literal index: the separator and the index.
func byteSplit(e query.Call) (sep byte, piece int64, ok bool) {
	if e.Fn != "split_index" || len(e.Args) != 3 {
		return 0, 0, false
	}
	c, cOK := e.Args[1].(query.StrConst)
	i, iOK := e.Args[2].(query.IntConst)
	if !cOK || !iOK || len(c.V) != 1 {
		return 0, 0, false
	}
	return c.V[0], i.V, true
}

// splitAtByte is piece i >= 0 (zero-based) of s split at every c (an
// empty s has none). It
// reads s eight bytes at a time: a word's separators are a mask, and a
// word with no more than the pieces still to skip is skipped whole.
func splitAtByte(s []byte, c byte, i int64) ([]byte, bool) {
	if len(s) == 0 {
		return nil, false // no pieces (Flink's): NULL
	}
	const lo7, hi = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	pat := uint64(c) * 0x0101010101010101
	start, j := 0, 0
	for ; j+8 <= len(s); j += 8 {
		x := binary.LittleEndian.Uint64(s[j:]) ^ pat
		// The high bit of each byte of x that is zero, and no other.
		m := ^((x & lo7) + lo7 | x | lo7) & hi
		if m == 0 {
			continue
		}
		if n := int64(bits.OnesCount64(m)); n <= i {
			i -= n
			start = j + (63-bits.LeadingZeros64(m))>>3 + 1
			continue
		}
		for ; i > 0; i-- {
			start = j + bits.TrailingZeros64(m)>>3 + 1
			m &= m - 1
		}
		return s[start : j+bits.TrailingZeros64(m)>>3], true
	}
	for ; j < len(s); j++ {
		if s[j] != c {
			continue
		}
		if i == 0 {
			return s[start:j], true
		}
		i--
		start = j + 1
	}
	if i == 0 {
		return s[start:], true
	}
	return nil, false
}

// caseCall is the argument of LOWER(x) or UPPER(x), and which.
func caseCall(e query.Expr) (x query.Expr, upper, ok bool) {
	c, isCall := e.(query.Call)
	if !isCall || len(c.Args) != 1 || (c.Fn != "lower" && c.Fn != "upper") {
		return nil, false, false
	}
	return c.Args[0], c.Fn == "upper", true
}

// foldsCase reports whether e is LOWER(x) or UPPER(x) = or <> a string
// literal, which compareConst compiles to compare without the copy.
func foldsCase(e query.Compare) bool {
	x, _, ok := withStringLiteral(e)
	_, _, isCase := caseCall(x)
	return ok && isCase && (e.Op == query.Eq || e.Op == query.Ne)
}

// withStringLiteral reads a comparison of an expression with a string
// literal, either side: the expression and the literal.
func withStringLiteral(e query.Compare) (x query.Expr, lit string, ok bool) {
	if c, isLit := e.L.(query.StrConst); isLit {
		return e.R, c.V, true
	}
	if c, isLit := e.R.(query.StrConst); isLit {
		return e.L, c.V, true
	}
	return nil, "", false
}

// isASCII reports whether b has no byte of a multi-byte character.
func isASCII(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// foldEqualASCII reports whether ASCII x lower- (upper-) cased is c.
func foldEqualASCII(x, c []byte, upper bool) bool {
	if len(x) != len(c) {
		return false
	}
	for i, b := range x {
		if upper && 'a' <= b && b <= 'z' {
			b -= 'a' - 'A'
		} else if !upper && 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if b != c[i] {
			return false
		}
	}
	return true
}

// foldedIndex is the index of the first of list that x lower- (upper-)
// cased is, or -1. An ASCII x is compared in place; another has its case
// mapped in full first (a non-ASCII character's other case may be
// another length, or ASCII).
func foldedIndex(x []byte, list [][]byte, upper bool, sc *rowScratch) int {
	if !isASCII(x) {
		m := mapCase(sc.str(len(x)), x, upper)
		return slices.IndexFunc(list, func(c []byte) bool { return bytes.Equal(m, c) })
	}
	for i, c := range list {
		if foldEqualASCII(x, c, upper) {
			return i
		}
	}
	return -1
}

// compareConst compiles `x op literal` and `literal op x` with the literal
// read once, and LOWER(x) = 'literal' (UPPER, <>) without the lower-cased
// copy where x is ASCII.
func compareConst(e query.Compare, s *query.Schema) (rowFn, bool, error) {
	l, r, op := e.L, e.R, e.Op
	if _, lConst := constOf(l); lConst {
		l, r, op = r, l, op.Mirror()
	}
	if _, rConst := constOf(r); !rConst {
		return nil, false, nil
	}
	lt, rt := typeIn(l, s), typeIn(r, s)
	float := lt == query.FloatValue || rt == query.FloatValue
	str := lt == query.StringValue || rt == query.StringValue
	c, _ := constAs(r, s, float)
	if c.null {
		return func([]byte, *rowScratch) rval { return rnull }, true, nil
	}
	if inner, upper, isCase := caseCall(l); isCase && str && (op == query.Eq || op == query.Ne) {
		x, err := newStrArg(inner, s)
		if err != nil {
			return nil, false, err
		}
		set, ne := newFoldSet([][]byte{c.s}, upper), op == query.Ne
		return func(t []byte, sc *rowScratch) rval {
			b, null := x.read(t, sc)
			if null {
				return rnull
			}
			return boolVal((set.index(b, sc) >= 0) != ne)
		}, true, nil
	}
	x, err := rowOf(l, s)
	if err != nil {
		return nil, false, err
	}
	if float {
		x = asFloat(x, lt)
	}
	return func(t []byte, sc *rowScratch) rval {
		v := x(t, sc)
		if v.null {
			return rnull
		}
		return boolVal(cmpHolds(op, cmpVals(v, c, float, str)))
	}, true, nil
}

// inConsts compiles `x [NOT] IN (literals)` with the literals read once,
// and LOWER(x) IN ('a', 'b') (UPPER too) without the lower-cased copy
// where x is ASCII.
func inConsts(e query.InList, s *query.Schema, float, str bool) (rowFn, bool, error) {
	if str {
		f, ok, err := newFoldIn(e, s)
		if err != nil {
			return nil, false, err
		}
		if ok {
			return func(t []byte, sc *rowScratch) rval {
				v, null := f.eval(t, sc)
				if null {
					return rnull
				}
				return boolVal(v)
			}, true, nil
		}
	}
	vals := make([]rval, 0, len(e.List))
	null := false
	for _, v := range e.List {
		c, ok := constAs(v, s, float)
		if !ok {
			return nil, false, nil
		}
		if c.null {
			null = true
			continue
		}
		vals = append(vals, c)
	}
	not := e.Not
	// No match is false, or NULL where the list has a NULL.
	miss := boolVal(not)
	if null {
		miss = rnull
	}
	x, err := rowOf(e.X, s)
	if err != nil {
		return nil, false, err
	}
	if float {
		x = asFloat(x, typeIn(e.X, s))
	}
	return func(t []byte, sc *rowScratch) rval {
		v := x(t, sc)
		if v.null {
			return rnull
		}
		for _, w := range vals {
			if cmpVals(v, w, float, str) == 0 {
				return boolVal(!not)
			}
		}
		return miss
	}, true, nil
}

// rowCost is a rough cost of evaluating e once, to order the terms of AND
// and OR: three-valued AND and OR give the same value in any order, and
// the row evaluator's expressions have no side effects, so the cheap
// terms go first and decide the row before the dear ones run (Nexmark
// q21's `REGEXP_EXTRACT(url, ...) IS NOT NULL OR lower(channel) IN (...)`
// holds by its second term for almost every bid).
func rowCost(e query.Expr) int {
	switch e := e.(type) {
	case query.Column, query.IntConst, query.FloatConst, query.StrConst, query.BoolConst, query.Null:
		return 1
	case query.Arith:
		return 1 + rowCost(e.L) + rowCost(e.R)
	case query.Compare:
		return 1 + rowCost(e.L) + rowCost(e.R)
	case query.AndExpr:
		return 1 + costSum(e.Terms)
	case query.OrExpr:
		return 1 + costSum(e.Terms)
	case query.NotExpr:
		return 1 + rowCost(e.X)
	case query.IsNull:
		return 1 + rowCost(e.X)
	case query.Like:
		return 8 + rowCost(e.X)
	case query.InList:
		return 1 + rowCost(e.X) + costSum(e.List)
	case query.Case:
		c := rowCost(e.Else)
		for _, w := range e.Whens {
			c += rowCost(w.Cond) + rowCost(w.Then)
		}
		return c
	case query.Cast:
		return 4 + rowCost(e.X)
	case query.Call:
		c := 4
		switch e.Fn {
		case "regexp_extract":
			c = 64
		case "split_index", "count_char", "concat", "date_format":
			c = 16
		}
		return c + costSum(e.Args)
	case nil:
		return 0
	}
	return 16
}

func costSum(es []query.Expr) int {
	c := 0
	for _, e := range es {
		c += rowCost(e)
	}
	return c
}

// cheapFirst orders terms by rowCost, keeping the written order among
// equals.
func cheapFirst(terms []query.Expr) []query.Expr {
	out := slices.Clone(terms)
	slices.SortStableFunc(out, func(a, b query.Expr) int { return rowCost(a) - rowCost(b) })
	return out
}

// caseOnOneValue compiles a CASE whose every WHEN is `x = 'literal'` for
// one x, or `LOWER(x) = 'literal'` (UPPER) for one x (Nexmark q21's
// channel_id): x is read once per tuple and matched against the
// literals in order, rather than once per WHEN.
func caseOnOneValue(e query.Case, s *query.Schema, thens []rowFn, els rowFn) (rowFn, bool, error) {
	var x query.Expr
	folded, upper := false, false
	lits := make([][]byte, len(e.Whens))
	for i, w := range e.Whens {
		c, ok := w.Cond.(query.Compare)
		if !ok || c.Op != query.Eq {
			return nil, false, nil
		}
		l, lit, ok := withStringLiteral(c)
		if !ok || typeIn(l, s) != query.StringValue {
			return nil, false, nil
		}
		inner, up, isCase := caseCall(l)
		if !isCase {
			inner = l
		}
		if i == 0 {
			x, folded, upper = inner, isCase, up
		} else if isCase != folded || up != upper || inner.String() != x.String() {
			return nil, false, nil
		}
		lits[i] = []byte(lit)
	}
	if x == nil {
		return nil, false, nil
	}
	xa, err := newStrArg(x, s)
	if err != nil {
		return nil, false, err
	}
	var set *foldSet
	if folded {
		set = newFoldSet(lits, upper)
	}
	// THENs that are literals (q21's '0' to '3') are values, not calls.
	vals := make([]rval, len(thens))
	for i, w := range e.Whens {
		v, ok := constAs(w.Then, s, typeIn(e, s) == query.FloatValue)
		if !ok {
			vals = nil
			break
		}
		vals[i] = v
	}
	if set != nil && vals != nil {
		return func(t []byte, sc *rowScratch) rval {
			b, null := xa.read(t, sc)
			if null {
				return els(t, sc)
			}
			if i := set.index(b, sc); i >= 0 {
				return vals[i]
			}
			return els(t, sc)
		}, true, nil
	}
	return func(t []byte, sc *rowScratch) rval {
		b, null := xa.read(t, sc)
		if null {
			return els(t, sc)
		}
		if set != nil {
			if i := set.index(b, sc); i >= 0 {
				return thens[i](t, sc)
			}
			return els(t, sc)
		}
		for i, c := range lits {
			if bytes.Equal(b, c) {
				return thens[i](t, sc)
			}
		}
		return els(t, sc)
	}, true, nil
}
