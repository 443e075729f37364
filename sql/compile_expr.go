package sql

import (
	"fmt"
	"slices"
	"strings"

	"github.com/saber-hx/saber-hx/query"
)

type side uint8

const (
	sideLeft  side = iota // the stream (or a join's left stream)
	sideRight             // a window join's right stream
	sideTable             // a static table's column
)

type scol struct {
	qual string
	col  relCol
	side side
	tcol int // sideTable: the table's column index
}

type scope struct {
	cols []scol
	// onCol, if set, is told of every column an expression uses (static
	// joins track the table's value column).
	onCol func(sc scol, n *node) (string, error)
}

func (sc *scope) resolve(n *node) (scol, error) {
	var found []scol
	for _, s := range sc.cols {
		if s.col.name == n.name && (n.qual == "" || n.qual == s.qual) {
			found = append(found, s)
		}
	}
	if len(found) == 0 && n.qual != "" {
		// a view of a join names its columns qual.name
		for _, s := range sc.cols {
			if s.col.name == n.qual+"."+n.name {
				found = append(found, s)
			}
		}
	}
	full := n.name
	if n.qual != "" {
		full = n.qual + "." + n.name
	}
	switch len(found) {
	case 0:
		var names []string
		for _, s := range sc.cols {
			names = append(names, s.qual+"."+s.col.name)
		}
		if n.qual != "" && !slices.ContainsFunc(sc.cols, func(s scol) bool { return s.qual == n.qual }) {
			return scol{}, errAt(n.pos, "unknown name %s in %s (the query reads %s)", n.qual, full, quals(sc))
		}
		return scol{}, errAt(n.pos, "unknown column %s (valid: %s)", full, strings.Join(names, ", "))
	case 1:
		return found[0], nil
	}
	return scol{}, errAt(n.pos, "column %s is ambiguous: it is in both %s and %s (qualify it)", full, found[0].qual, found[1].qual)
}

func quals(sc *scope) string {
	var q []string
	for _, s := range sc.cols {
		if !slices.Contains(q, s.qual) {
			q = append(q, s.qual)
		}
	}
	return strings.Join(q, " and ")
}

// val is a compiled expression with its type.
type val struct {
	e      query.Expr
	t      query.ValueType
	typ    sqlType // a plain column's declared type (kind 0 otherwise)
	isStr  bool    // a string literal (only comparable with an ENUM column)
	str    string
	isAggr bool
}

// exprCtx says what an expression may use: its columns (col) and
// aggregates (call; nil: none allowed, callErr says why).
type exprCtx struct {
	col     func(n *node) (val, error)
	call    func(n *node) (val, error)
	callErr string
}

func (c *compiler) expr(ctx *exprCtx, n *node) (val, error) {
	switch n.kind {
	case eCol:
		return ctx.col(n)
	case eInt:
		return val{e: query.Int(n.i), t: query.IntValue}, nil
	case eFloat:
		return val{e: query.Float(n.f), t: query.FloatValue}, nil
	case eString:
		return val{isStr: true, str: n.s}, nil
	case eCall:
		if ctx.call == nil {
			return val{}, errAt(n.pos, "%s", ctx.callErr)
		}
		return ctx.call(n)
	case eNeg:
		v, err := c.numeric(ctx, n.l)
		if err != nil {
			return val{}, err
		}
		return val{e: query.Mul(query.Int(-1), v.e), t: v.t}, nil
	case eNot:
		v, err := c.boolean(ctx, n.l, "NOT")
		if err != nil {
			return val{}, err
		}
		return val{e: negate(v.e), t: query.BoolValue}, nil
	}
	switch n.op {
	case "and", "or":
		l, err := c.boolean(ctx, n.l, strings.ToUpper(n.op))
		if err != nil {
			return val{}, err
		}
		r, err := c.boolean(ctx, n.r, strings.ToUpper(n.op))
		if err != nil {
			return val{}, err
		}
		if n.op == "and" {
			return val{e: flatten(l.e, r.e, true), t: query.BoolValue}, nil
		}
		return val{e: flatten(l.e, r.e, false), t: query.BoolValue}, nil
	case "+", "-", "*", "/":
		l, err := c.numeric(ctx, n.l)
		if err != nil {
			return val{}, err
		}
		r, err := c.numeric(ctx, n.r)
		if err != nil {
			return val{}, err
		}
		t := query.IntValue
		if l.t == query.FloatValue || r.t == query.FloatValue {
			t = query.FloatValue
		}
		op := map[string]query.ArithOp{"+": query.OpAdd, "-": query.OpSub, "*": query.OpMul, "/": query.OpDiv}[n.op]
		return val{e: query.Arith{Op: op, L: l.e, R: r.e}, t: t}, nil
	}
	// a comparison
	l, err := c.expr(ctx, n.l)
	if err != nil {
		return val{}, err
	}
	r, err := c.expr(ctx, n.r)
	if err != nil {
		return val{}, err
	}
	if l, err = enumCode(l, r, n.l); err != nil {
		return val{}, err
	}
	if r, err = enumCode(r, l, n.r); err != nil {
		return val{}, err
	}
	if err := isNumber(l, n.l); err != nil {
		return val{}, err
	}
	if err := isNumber(r, n.r); err != nil {
		return val{}, err
	}
	op := map[string]query.CmpOp{"=": query.Eq, "!=": query.Ne, "<": query.Lt, "<=": query.Le, ">": query.Gt, ">=": query.Ge}[n.op]
	return val{e: query.Cmp(l.e, op, r.e), t: query.BoolValue}, nil
}

// enumCode turns the string literal v, compared with the ENUM column
// other, into the label's code.
func enumCode(v, other val, at *node) (val, error) {
	if !v.isStr {
		return v, nil
	}
	if other.typ.kind != tyEnum {
		return val{}, errAt(at.pos, "a string ('%s') can only be compared with an ENUM column", v.str)
	}
	i := slices.Index(other.typ.labels, v.str)
	if i < 0 {
		return val{}, errAt(at.pos, "'%s' is not a label of the ENUM (valid: %s)", v.str, strings.Join(other.typ.labels, ", "))
	}
	return val{e: query.Int(int64(i)), t: query.IntValue}, nil
}

func isNumber(v val, at *node) error {
	switch {
	case v.isStr:
		return errAt(at.pos, "a string ('%s') is not a number: strings only compare with ENUM columns", v.str)
	case v.t == query.BoolValue:
		return errAt(at.pos, "a condition is not a number")
	case v.t == query.BytesValue:
		return errAt(at.pos, "%s is %s, not a number", exprText(at), v.typ)
	}
	return nil
}

func (c *compiler) numeric(ctx *exprCtx, n *node) (val, error) {
	v, err := c.expr(ctx, n)
	if err != nil {
		return val{}, err
	}
	return v, isNumber(v, n)
}

func (c *compiler) boolean(ctx *exprCtx, n *node, op string) (val, error) {
	v, err := c.expr(ctx, n)
	if err != nil {
		return val{}, err
	}
	if v.t != query.BoolValue {
		return val{}, errAt(n.pos, "%s needs a condition (a comparison), not a value", op)
	}
	return v, nil
}

func flatten(l, r query.Expr, and bool) query.Expr {
	var terms []query.Expr
	for _, e := range []query.Expr{l, r} {
		switch t := e.(type) {
		case query.AndExpr:
			if and {
				terms = append(terms, t.Terms...)
				continue
			}
		case query.OrExpr:
			if !and {
				terms = append(terms, t.Terms...)
				continue
			}
		}
		terms = append(terms, e)
	}
	if and {
		return query.And(terms...)
	}
	return query.Or(terms...)
}

// negate is NOT e: the model has no NOT, so it is pushed down to the
// comparisons (De Morgan). For floats, NOT (x < y) becomes x >= y, which
// differs for NaN only.
func negate(e query.Expr) query.Expr {
	switch t := e.(type) {
	case query.Compare:
		op := map[query.CmpOp]query.CmpOp{query.Eq: query.Ne, query.Ne: query.Eq, query.Lt: query.Ge, query.Ge: query.Lt, query.Le: query.Gt, query.Gt: query.Le}[t.Op]
		return query.Cmp(t.L, op, t.R)
	case query.AndExpr:
		terms := make([]query.Expr, len(t.Terms))
		for i, x := range t.Terms {
			terms[i] = negate(x)
		}
		return query.Or(terms...)
	case query.OrExpr:
		terms := make([]query.Expr, len(t.Terms))
		for i, x := range t.Terms {
			terms[i] = negate(x)
		}
		return query.And(terms...)
	}
	panic(fmt.Sprintf("sql: negate of %T", e))
}

func colVal(s scol) val {
	t, _ := s.col.typ.attrType()
	return val{e: query.C(s.col.attr), t: t.Value(), typ: s.col.typ}
}

func hasCall(n *node) bool {
	if n == nil {
		return false
	}
	return n.kind == eCall || hasCall(n.l) || hasCall(n.r)
}
