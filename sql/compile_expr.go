package sql

import (
	"slices"
	"strings"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
	"github.com/saber-hx/saber-hx/temporal"
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
	e   query.Expr
	t   query.ValueType
	typ sqlType // a plain column's declared type (kind 0 otherwise)
}

// exprCtx says what an expression may use: its columns (col), their
// types (scope), aggregates (call; nil: none allowed, callErr says why),
// and, in an aggregation's select list, the group keys and window
// functions (hook, tried first at every node).
type exprCtx struct {
	col     func(n *node) (val, error)
	call    func(n *node) (val, error)
	callErr string
	scope   query.Scope
	hook    func(n *node) (val, bool, error)
	// timeUnit is the unit (ns) of e where it is an integer event time
	// (a BIGINT's, in its source's time_unit): the event time column, a
	// window's bound, either plus or minus a constant; 0 where it is
	// none or its unit is not known. nil: none is.
	timeUnit func(e query.Expr) int64
}

// timeIn is the unit of e (timeUnit) where times holds the attributes
// that are integer event times in unit unitNs.
func timeIn(e query.Expr, unitNs int64, times func(attr string) bool) int64 {
	switch x := e.(type) {
	case query.Column:
		if times(x.Name) {
			return unitNs
		}
	case query.Arith:
		_, lk := x.L.(query.IntConst)
		_, rk := x.R.(query.IntConst)
		switch {
		case x.Op == query.OpAdd && lk:
			return timeIn(x.R, unitNs, times)
		case (x.Op == query.OpAdd || x.Op == query.OpSub) && rk:
			return timeIn(x.L, unitNs, times)
		}
	}
	return 0
}

// intervalArith compiles t + INTERVAL, INTERVAL + t and t - INTERVAL
// where t is an integer (a BIGINT event time, or a window's bound over
// one): the interval in t's unit (the source's time_unit), refused where
// t's unit is not known. ok false: n is no such arithmetic (a TIMESTAMP
// takes its interval in milliseconds, as eInterval compiles it).
func (c *compiler) intervalArith(ctx *exprCtx, n *node) (val, bool, error) {
	if n.op != "+" && n.op != "-" {
		return val{}, false, nil
	}
	ivn, other, ivLeft := n.r, n.l, false
	if n.op == "+" && n.l.kind == eInterval && n.r.kind != eInterval {
		ivn, other, ivLeft = n.l, n.r, true
	}
	if ivn.kind != eInterval || other.kind == eInterval {
		return val{}, false, nil
	}
	o, err := c.numeric(ctx, other)
	if err != nil || o.t != query.IntValue {
		return val{}, false, err
	}
	unit := int64(0)
	if ctx.timeUnit != nil {
		unit = ctx.timeUnit(o.e)
	}
	if unit <= 0 {
		return val{}, true, errAt(ivn.pos, "%s %s %s: %s is a number of no known time unit (INTERVAL arithmetic takes a TIMESTAMP, or a BIGINT event time or window bound in its source's time_unit): CAST it AS TIMESTAMP (milliseconds) first", exprText(n.l), n.op, exprText(n.r), exprText(other))
	}
	k, err := toUnits(ivn.iv, unit, "the interval")
	if err != nil {
		return val{}, true, err
	}
	if ivn.i < 0 { // negated by the parser
		k = -k
	}
	op := query.OpAdd
	if n.op == "-" {
		op = query.OpSub
	}
	if ivLeft {
		v, err := typed(ctx, n, query.Arith{Op: op, L: query.Int(k), R: o.e})
		return v, true, err
	}
	v, err := typed(ctx, n, query.Arith{Op: op, L: o.e, R: query.Int(k)})
	return v, true, err
}

// typed types e, compiled from n, in ctx's scope: an error is at n.
func typed(ctx *exprCtx, n *node, e query.Expr) (val, error) {
	t, err := query.TypeOf(e, ctx.scope)
	if err != nil {
		return val{}, errAt(n.pos, "%s", err)
	}
	return val{e: e, t: t}, nil
}

func (c *compiler) expr(ctx *exprCtx, n *node) (val, error) {
	if ctx.hook != nil {
		if v, ok, err := ctx.hook(n); ok || err != nil {
			return v, err
		}
	}
	switch n.kind {
	case eCol:
		return ctx.col(n)
	case eInt:
		return val{e: query.Int(n.i), t: query.IntValue}, nil
	case eFloat:
		return val{e: query.Float(n.f), t: query.FloatValue}, nil
	case eString:
		return val{e: query.Str(n.s), t: query.StringValue}, nil
	case eBool:
		return val{e: query.BoolConst{V: n.b}, t: query.BoolValue}, nil
	case eNull:
		return val{e: query.Null{}}, nil
	case eInterval:
		ms, err := toUnits(n.iv, 1e6, "the interval")
		if err != nil {
			return val{}, err
		}
		if n.i < 0 { // negated by the parser
			ms = -ms
		}
		return val{e: query.Int(ms), t: query.IntValue}, nil
	case eTime:
		ms, ok := temporal.ParseTimestamp([]byte(n.s))
		if !ok || (n.name == "date" && len(n.s) != 10) {
			what := "a timestamp (2024-03-01 10:00:01[.250])"
			if n.name == "date" {
				what = "a date (2024-03-01)"
			}
			return val{}, errAt(n.parenPos, "'%s' is not %s", n.s, what)
		}
		return val{e: query.Cast{X: query.Int(ms), To: query.TimeValue}, t: query.TimeValue}, nil
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
		return typed(ctx, n, query.Mul(query.Int(-1), v.e))
	case eNot:
		v, err := c.boolean(ctx, n.l, "NOT")
		if err != nil {
			return val{}, err
		}
		return val{e: negate(v.e, ctx.scope), t: query.BoolValue}, nil
	case eFunc:
		return c.function(ctx, n)
	case eCase:
		return c.caseExpr(ctx, n)
	case eCast:
		return c.cast(ctx, n)
	case eIsNull:
		v, err := c.expr(ctx, n.l)
		if err != nil {
			return val{}, err
		}
		return val{e: query.IsNull{X: v.e, Not: n.not}, t: query.BoolValue}, nil
	case eIsBool:
		v, err := c.boolean(ctx, n.l, "IS "+map[bool]string{true: "TRUE", false: "FALSE"}[n.b])
		if err != nil {
			return val{}, err
		}
		x := v.e
		if !n.b {
			x = negate(x, ctx.scope)
		}
		var e query.Expr = query.Call{Fn: "coalesce", Args: []query.Expr{x, query.BoolConst{}}}
		if n.not {
			e = query.NotExpr{X: e}
		}
		return val{e: e, t: query.BoolValue}, nil
	case eLike:
		v, err := c.expr(ctx, n.l)
		if err != nil {
			return val{}, err
		}
		if v.t != query.StringValue && v.t != 0 {
			return val{}, errAt(n.pos, "LIKE applies to strings; %s is %s", exprText(n.l), typeName(v))
		}
		if _, err := strview.CompileLike(n.s, n.esc); err != nil {
			return val{}, errAt(n.pos, "LIKE '%s': %v", n.s, err)
		}
		return val{e: query.Like{X: v.e, Pattern: n.s, Escape: n.esc, Not: n.not}, t: query.BoolValue}, nil
	case eIn:
		x, err := c.expr(ctx, n.l)
		if err != nil {
			return val{}, err
		}
		list := make([]query.Expr, len(n.args))
		for i, a := range n.args {
			v, err := c.expr(ctx, a)
			if err != nil {
				return val{}, err
			}
			if v, err = compatible(v, x, a, n.l); err != nil {
				return val{}, err
			}
			list[i] = v.e
		}
		if x, err = compatible(x, val{t: list0Type(ctx, list)}, n.l, n.args[0]); err != nil {
			return val{}, err
		}
		return typed(ctx, n, query.InList{X: x.e, List: list, Not: n.not})
	case eBetween:
		x, err := c.expr(ctx, n.l)
		if err != nil {
			return val{}, err
		}
		var b [2]val
		for i, a := range n.args {
			if b[i], err = c.expr(ctx, a); err != nil {
				return val{}, err
			}
			if b[i], err = compatible(b[i], x, a, n.l); err != nil {
				return val{}, err
			}
			if x, err = compatible(x, b[i], n.l, a); err != nil {
				return val{}, err
			}
		}
		between := query.And(query.Cmp(x.e, query.Ge, b[0].e), query.Cmp(x.e, query.Le, b[1].e))
		if n.not {
			// NOT (x BETWEEN a AND b): x < a OR x > b but for a NaN
			return typed(ctx, n, negate(between, ctx.scope))
		}
		return typed(ctx, n, between)
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
	case "+", "-", "*", "/", "%":
		if v, ok, err := c.intervalArith(ctx, n); ok || err != nil {
			return v, err
		}
		l, err := c.numeric(ctx, n.l)
		if err != nil {
			return val{}, err
		}
		r, err := c.numeric(ctx, n.r)
		if err != nil {
			return val{}, err
		}
		if n.op == "%" {
			return typed(ctx, n, query.Call{Fn: "mod", Args: []query.Expr{l.e, r.e}})
		}
		op := map[string]query.ArithOp{"+": query.OpAdd, "-": query.OpSub, "*": query.OpMul, "/": query.OpDiv}[n.op]
		return typed(ctx, n, query.Arith{Op: op, L: l.e, R: r.e})
	case "||":
		l, err := c.expr(ctx, n.l)
		if err != nil {
			return val{}, err
		}
		r, err := c.expr(ctx, n.r)
		if err != nil {
			return val{}, err
		}
		l, r = enumText(l), enumText(r) // CONCAT's rule: an ENUM's label
		args := []query.Expr{l.e, r.e}
		if lc, ok := l.e.(query.Call); ok && lc.Fn == "concat" {
			args = append(slices.Clone(lc.Args), r.e)
		}
		return typed(ctx, n, query.Call{Fn: "concat", Args: args})
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
	if _, lit := r.e.(query.StrConst); lit {
		if r, err = compatible(r, l, n.r, n.l); err != nil {
			return val{}, err
		}
	}
	if l, err = compatible(l, r, n.l, n.r); err != nil {
		return val{}, err
	}
	if r, err = compatible(r, l, n.r, n.l); err != nil {
		return val{}, err
	}
	op := map[string]query.CmpOp{"=": query.Eq, "!=": query.Ne, "<": query.Lt, "<=": query.Le, ">": query.Gt, ">=": query.Ge}[n.op]
	if l.t == query.BoolValue && r.t == query.BoolValue && op != query.Eq && op != query.Ne {
		return val{}, errAt(n.pos, "booleans compare with = and <> only")
	}
	return typed(ctx, n, query.Cmp(l.e, op, r.e))
}

// list0Type is the type of the first non-NULL item of an IN list.
func list0Type(ctx *exprCtx, list []query.Expr) query.ValueType {
	for _, e := range list {
		if t, err := query.TypeOf(e, ctx.scope); err == nil && t != 0 {
			return t
		}
	}
	return 0
}

// compatible checks that v (from node at) can be compared with other
// (from node on): a string literal compared with an ENUM column becomes
// its label's code; the types must mix (query.CommonType).
func compatible(v, other val, at, on *node) (val, error) {
	if s, ok := v.e.(query.StrConst); ok && other.typ.kind == tyEnum {
		i := slices.Index(other.typ.labels, s.V)
		if i < 0 {
			return val{}, errAt(at.pos, "'%s' is not a label of the ENUM (valid: %s)", s.V, strings.Join(other.typ.labels, ", "))
		}
		return val{e: query.Int(int64(i)), t: query.IntValue}, nil
	}
	if _, ok := other.e.(query.StrConst); ok && v.typ.kind == tyEnum {
		return v, nil // the literal becomes a code
	}
	if v.typ.kind == tyEnum && other.typ.kind == tyEnum && !slices.Equal(v.typ.labels, other.typ.labels) {
		// Two ENUMs of different labels: a code of one is not the same
		// label's in the other. v's codes become other's for its labels
		// (-1, no code, for a label other has not), so that they compare
		// by label, ordered as other's.
		whens := make([]query.When, len(v.typ.labels))
		for i, l := range v.typ.labels {
			whens[i] = query.When{Cond: query.Cmp(v.e, query.Eq, query.Int(int64(i))), Then: query.Int(int64(slices.Index(other.typ.labels, l)))}
		}
		return val{e: query.Case{Whens: whens}, t: query.IntValue, typ: other.typ}, nil
	}
	if v.t == query.BytesValue || other.t == query.BytesValue {
		if v.t == query.BytesValue {
			return val{}, errAt(at.pos, "%s is %s, not a number", exprText(at), typeName(v))
		}
		return v, nil
	}
	if _, ok := query.CommonType(v.t, other.t); !ok && other.t != 0 && v.t != 0 {
		if _, isStr := v.e.(query.StrConst); isStr {
			what := typeName(other)
			if other.typ.kind == 0 {
				what = "a " + other.t.String()
			}
			return val{}, errAt(at.pos, "a string ('%s') cannot be compared with %s, which is %s (CAST one of them)", v.e.(query.StrConst).V, exprText(on), what)
		}
		if v.t == query.BoolValue {
			return val{}, errAt(at.pos, "a condition is not a number")
		}
		return val{}, errAt(at.pos, "%s is %s; %s is %s: they do not compare (CAST one of them)", exprText(at), typeName(v), exprText(on), typeName(other))
	}
	return v, nil
}

// typeName is v's type as SQL names it: its declared type where it is a
// column, else its value type.
func typeName(v val) string {
	if v.typ.kind != 0 {
		return v.typ.String()
	}
	switch v.t {
	case 0:
		return "NULL"
	case query.IntValue:
		return "an integer"
	case query.FloatValue:
		return "a float"
	case query.StringValue:
		return "a string"
	case query.BoolValue:
		return "a condition"
	}
	return "a " + v.t.String()
}

func isNumber(v val, at *node) error {
	switch {
	case v.t == query.StringValue:
		if s, ok := v.e.(query.StrConst); ok {
			return errAt(at.pos, "a string ('%s') is not a number (CAST it)", s.V)
		}
		return errAt(at.pos, "%s is %s, not a number (CAST it)", exprText(at), typeName(v))
	case v.t == query.BoolValue:
		return errAt(at.pos, "a condition is not a number")
	case v.t == query.BytesValue:
		return errAt(at.pos, "%s is %s, not a number", exprText(at), typeName(v))
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
	if v.t == 0 { // NULL: a condition that never holds
		return val{e: query.Null{T: query.BoolValue}, t: query.BoolValue}, nil
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

// negate is NOT e (of scope), pushed down to the comparisons (De Morgan)
// where it can be, so that the kernels see comparisons; NOT of anything
// else is a NotExpr. NULL agrees either way (NULL); NaN does not: NOT
// (x < y) is TRUE where x is NaN, x >= y FALSE, so that an ordering
// comparison of floats keeps its NOT (= and <> flip: NaN <> y is TRUE as
// NOT (NaN = y) is).
func negate(e query.Expr, scope query.Scope) query.Expr {
	switch t := e.(type) {
	case query.Compare:
		if t.Op != query.Eq && t.Op != query.Ne && (isFloat(t.L, scope) || isFloat(t.R, scope)) {
			return query.NotExpr{X: e}
		}
		op := map[query.CmpOp]query.CmpOp{query.Eq: query.Ne, query.Ne: query.Eq, query.Lt: query.Ge, query.Ge: query.Lt, query.Le: query.Gt, query.Gt: query.Le}[t.Op]
		return query.Cmp(t.L, op, t.R)
	case query.AndExpr:
		terms := make([]query.Expr, len(t.Terms))
		for i, x := range t.Terms {
			terms[i] = negate(x, scope)
		}
		return query.Or(terms...)
	case query.OrExpr:
		terms := make([]query.Expr, len(t.Terms))
		for i, x := range t.Terms {
			terms[i] = negate(x, scope)
		}
		return query.And(terms...)
	case query.NotExpr:
		return t.X
	case query.IsNull:
		t.Not = !t.Not
		return t
	case query.InList:
		t.Not = !t.Not
		return t
	case query.Like:
		t.Not = !t.Not
		return t
	case query.BoolConst:
		return query.BoolConst{V: !t.V}
	}
	return query.NotExpr{X: e}
}

// isFloat reports whether e is a float in scope.
func isFloat(e query.Expr, scope query.Scope) bool {
	t, err := query.TypeOf(e, scope)
	return err == nil && t == query.FloatValue
}

func colVal(s scol, scope query.Scope) val {
	t, _ := scope(s.col.attr)
	return val{e: query.C(s.col.attr), t: t, typ: s.col.typ}
}

// hasCall reports whether n holds an aggregate.
func hasCall(n *node) bool {
	if n == nil {
		return false
	}
	if n.kind == eCall || hasCall(n.l) || hasCall(n.r) {
		return true
	}
	return slices.ContainsFunc(n.args, hasCall)
}

// hasColumn reports whether n refers to a column.
func hasColumn(n *node) bool {
	found := false
	walkNodes(n, func(m *node) { found = found || m.kind == eCol })
	return found
}

// walkNodes calls f on n and every node under it (not into an
// aggregate's FILTER).
func walkNodes(n *node, f func(*node)) {
	if n == nil {
		return
	}
	f(n)
	walkNodes(n.l, f)
	walkNodes(n.r, f)
	for _, a := range n.args {
		walkNodes(a, f)
	}
}
