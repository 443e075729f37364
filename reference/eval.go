package reference

import (
	"errors"
	"fmt"
	"strings"

	"github.com/saber-hx/saber-hx/query"
)

// env is what an expression is evaluated in: col, the values of the names
// in scope (a tuple's attributes, a group's aggregates), and scope, their
// types, from which CASE, COALESCE and the functions take their static
// result types (query.TypeOf).
type env struct {
	col   func(name string) (Value, error)
	scope query.Scope
	// real says which names hold SQL's REAL values (query.IsReal: they
	// print as float32s); nil: none.
	real query.RealScope
}

// tupleEnv resolves the attributes of tuple t of schema s.
func tupleEnv(s *query.Schema, t []byte) env {
	return env{
		col: func(name string) (Value, error) {
			a, err := s.Lookup(name)
			if err != nil {
				return Value{}, err
			}
			return readAttr(a, t)
		},
		scope: query.SchemaScope(s),
		real:  query.SchemaReal(s),
	}
}

// Eval evaluates expression e over tuple t of schema s, as Evaluate does.
func Eval(e query.Expr, s *query.Schema, t []byte) (Value, error) {
	return tupleEnv(s, t).eval(e)
}

// EvalNum evaluates the numeric expression e over tuple t of schema s, as
// Evaluate does; a value that is not a number (nor NULL) is an error.
func EvalNum(e query.Expr, s *query.Schema, t []byte) (Value, error) {
	v, err := Eval(e, s, t)
	if err != nil {
		return Value{}, err
	}
	if k := v.kind(); !v.Null && k != IntKind && k != FloatKind && k != TimeKind {
		return Value{}, fmt.Errorf("%s is %s, not a number", e, k)
	}
	return v, nil
}

// EvalPred evaluates the predicate e over tuple t of schema s, as Evaluate
// does WHERE: true only where e is TRUE (FALSE and NULL drop the tuple).
func EvalPred(e query.Expr, s *query.Schema, t []byte) (bool, error) {
	return tupleEnv(s, t).holds(e)
}

// holds reports whether condition e is TRUE: WHERE, HAVING, CASE WHEN and
// FILTER keep a row only then, not where it is FALSE or NULL.
func (en env) holds(e query.Expr) (bool, error) {
	v, err := en.eval(e)
	if err != nil {
		return false, err
	}
	b, null, err := truth(v, e)
	return b && !null, err
}

// truth is condition v's value: b, or NULL (null).
func truth(v Value, e query.Expr) (b, null bool, err error) {
	if v.Null {
		return false, true, nil
	}
	if v.kind() != BoolKind {
		return false, false, fmt.Errorf("%s is %s, not a condition", e, v.kind())
	}
	return v.I != 0, false, nil
}

// typeOf is e's static type in en's scope.
func (en env) typeOf(e query.Expr) (query.ValueType, error) {
	if en.scope == nil {
		return 0, fmt.Errorf("%s: no scope to type it in", e)
	}
	return query.TypeOf(e, en.scope)
}

// eval evaluates x. Where e is wanted as an Expr (an error's text), x is
// passed: converting e back would allocate per tuple.
func (en env) eval(x query.Expr) (Value, error) {
	switch e := x.(type) {
	case nil:
		return Value{}, errors.New("missing expression")
	case query.Column:
		return en.col(e.Name)
	case query.IntConst:
		return Int(e.V), nil
	case query.FloatConst:
		return Float(e.V), nil
	case query.StrConst:
		return Str(e.V), nil
	case query.BoolConst:
		return Bool(e.V), nil
	case query.Null:
		return Null(kindOf(e.T)), nil
	case query.Arith:
		return en.arith(e)
	case query.Compare:
		l, err := en.eval(e.L)
		if err != nil {
			return Value{}, err
		}
		r, err := en.eval(e.R)
		if err != nil {
			return Value{}, err
		}
		return compareOp(e.Op, l, r, x)
	case query.AndExpr:
		return en.kleene(e.Terms, "AND", x)
	case query.OrExpr:
		return en.kleene(e.Terms, "OR", x)
	case query.NotExpr:
		v, err := en.eval(e.X)
		if err != nil {
			return Value{}, err
		}
		b, null, err := truth(v, e.X)
		if err != nil || null {
			return Null(BoolKind), err // NOT NULL is NULL
		}
		return Bool(!b), nil
	case query.IsNull:
		v, err := en.eval(e.X)
		if err != nil {
			return Value{}, err
		}
		return Bool(v.Null != e.Not), nil // never NULL itself
	case query.InList:
		return en.inList(e)
	case query.Like:
		return en.like(e)
	case query.Case:
		return en.caseWhen(e)
	case query.Cast:
		v, err := en.eval(e.X)
		if err != nil {
			return Value{}, err
		}
		if e.To == query.StringValue && !v.Null && v.kind() == FloatKind && query.IsReal(e.X, en.real) {
			return Str(realText(v.F)), nil
		}
		if e.Real && e.To == query.FloatValue && !v.Null {
			return castReal(v)
		}
		v, err = cast(v, e.To)
		if u := e.Unit; err == nil && u > 1 && e.To == query.TimeValue && !v.Null {
			// CAST AS TIMESTAMP(p), p < 3: p digits of the fraction, the
			// time floored (toward the past) to a multiple of u ms
			v = Time(v.I - ((v.I%u)+u)%u)
		}
		return v, err
	case query.Call:
		return en.call(e)
	}
	return Value{}, fmt.Errorf("unknown expression %T (%s)", x, x)
}

// arith is L op R: NULL where either is; in float64 when either is a float
// (converting the other), else in int64 with Go's wrapping arithmetic,
// integer division truncating toward zero and x/0 == 0. A timestamp plus or
// minus an integer is a timestamp; a timestamp minus a timestamp is an
// integer (a span of milliseconds).
func (en env) arith(e query.Arith) (Value, error) {
	l, err := en.eval(e.L)
	if err != nil {
		return Value{}, err
	}
	r, err := en.eval(e.R)
	if err != nil {
		return Value{}, err
	}
	lk, rk := l.kind(), r.kind()
	for _, k := range []Kind{lk, rk} {
		if k != IntKind && k != FloatKind && k != TimeKind {
			return Value{}, fmt.Errorf("%s: an operand is %s, not a number", e, k)
		}
	}
	kind := IntKind
	switch {
	case lk == FloatKind || rk == FloatKind:
		kind = FloatKind
	case (lk == TimeKind) != (rk == TimeKind) && (e.Op == query.OpAdd || e.Op == query.OpSub):
		kind = TimeKind
	}
	if l.Null || r.Null {
		return Null(kind), nil
	}
	if kind == FloatKind {
		a, b := l.asFloat(), r.asFloat()
		switch e.Op {
		case query.OpAdd:
			return Float(a + b), nil
		case query.OpSub:
			return Float(a - b), nil
		case query.OpMul:
			return Float(a * b), nil
		case query.OpDiv:
			return Float(a / b), nil // IEEE 754: x/0.0 is ±Inf or NaN
		}
		return Value{}, fmt.Errorf("unknown arithmetic operator %d in %s", uint8(e.Op), e)
	}
	a, b := l.I, r.I
	var v int64
	switch e.Op {
	case query.OpAdd:
		v = a + b // wraps
	case query.OpSub:
		v = a - b
	case query.OpMul:
		v = a * b
	case query.OpDiv:
		if b != 0 {
			v = a / b // truncates; MinInt64 / -1 wraps to MinInt64
		}
	default:
		return Value{}, fmt.Errorf("unknown arithmetic operator %d in %s", uint8(e.Op), e)
	}
	return Value{Kind: kind, I: v}, nil
}

// order compares two values that are not NULL: c < 0, 0 or > 0 as a is
// less than, equal to or greater than b; unordered where a float is NaN.
// Strings compare byte-wise; numbers as float64 when either is a float,
// else as int64 (an integer with a timestamp as milliseconds); booleans
// false before true.
func order(a, b Value) (c int, unordered bool, err error) {
	ak, bk := a.kind(), b.kind()
	number := func(k Kind) bool { return k == IntKind || k == FloatKind || k == TimeKind }
	switch {
	case ak == StringKind && bk == StringKind:
		return strings.Compare(a.Str, b.Str), false, nil
	case number(ak) && number(bk) && (ak == FloatKind || bk == FloatKind):
		x, y := a.asFloat(), b.asFloat()
		switch {
		case x < y:
			return -1, false, nil
		case x > y:
			return 1, false, nil
		case x == y:
			return 0, false, nil
		}
		return 0, true, nil // NaN
	case number(ak) && number(bk), ak == BoolKind && bk == BoolKind:
		switch {
		case a.I < b.I:
			return -1, false, nil
		case a.I > b.I:
			return 1, false, nil
		}
		return 0, false, nil
	}
	return 0, false, fmt.Errorf("%s and %s do not compare", ak, bk)
}

// compareOp is l op r: NULL where either is; a NaN compares false but with
// != (Ne), which it satisfies.
func compareOp(op query.CmpOp, l, r Value, e query.Expr) (Value, error) {
	if l.Null || r.Null {
		return Null(BoolKind), nil
	}
	c, unordered, err := order(l, r)
	if err != nil {
		return Value{}, fmt.Errorf("%s: %w", e, err)
	}
	var holds bool
	switch op {
	case query.Eq:
		holds = !unordered && c == 0
	case query.Ne:
		holds = unordered || c != 0
	case query.Lt:
		holds = !unordered && c < 0
	case query.Le:
		holds = !unordered && c <= 0
	case query.Gt:
		holds = !unordered && c > 0
	case query.Ge:
		holds = !unordered && c >= 0
	default:
		return Value{}, fmt.Errorf("unknown comparison operator %d in %s", uint8(op), e)
	}
	return Bool(holds), nil
}

// kleene is AND (or OR) of terms in Kleene's three-valued logic: AND is
// FALSE where any term is FALSE, else NULL where any is NULL, else TRUE;
// OR is TRUE where any term is TRUE, else NULL where any is NULL, else
// FALSE. Every term is evaluated (no short cut: an error in any is
// reported).
func (en env) kleene(terms []query.Expr, op string, e query.Expr) (Value, error) {
	if len(terms) == 0 {
		return Value{}, fmt.Errorf("%s of no terms", op)
	}
	decisive := op == "OR" // the value that decides: TRUE for OR, FALSE for AND
	decided, sawNull := false, false
	for _, t := range terms {
		v, err := en.eval(t)
		if err != nil {
			return Value{}, err
		}
		b, null, err := truth(v, t)
		if err != nil {
			return Value{}, fmt.Errorf("%s: %w", e, err)
		}
		switch {
		case null:
			sawNull = true
		case b == decisive:
			decided = true
		}
	}
	switch {
	case decided:
		return Bool(decisive), nil
	case sawNull:
		return Null(BoolKind), nil
	}
	return Bool(!decisive), nil
}

// inList is X [NOT] IN (List): TRUE where X equals an item; else NULL where
// X or an item is NULL; else FALSE. NOT IN is its negation (NULL stays
// NULL).
func (en env) inList(e query.InList) (Value, error) {
	x, err := en.eval(e.X)
	if err != nil {
		return Value{}, err
	}
	match, sawNull := false, x.Null
	for _, item := range e.List {
		v, err := en.eval(item)
		if err != nil {
			return Value{}, err
		}
		eq, err := compareOp(query.Eq, x, v, e)
		if err != nil {
			return Value{}, err
		}
		switch {
		case eq.Null:
			sawNull = true
		case eq.I == 1:
			match = true
		}
	}
	switch {
	case x.Null:
		return Null(BoolKind), nil
	case match:
		return Bool(!e.Not), nil
	case sawNull:
		return Null(BoolKind), nil
	}
	return Bool(e.Not), nil
}

// like is X [NOT] LIKE Pattern: NULL where X is.
func (en env) like(e query.Like) (Value, error) {
	x, err := en.eval(e.X)
	if err != nil {
		return Value{}, err
	}
	if x.Null {
		return Null(BoolKind), nil
	}
	if x.kind() != StringKind {
		return Value{}, fmt.Errorf("%s: LIKE of %s, not a string", e, x.kind())
	}
	m, err := likeMatch(x.Str, e.Pattern, e.Escape)
	if err != nil {
		return Value{}, fmt.Errorf("%s: %w", e, err)
	}
	return Bool(m != e.Not), nil
}

// caseWhen is the THEN of the first branch whose condition is TRUE (FALSE
// and NULL pass on), else ELSE, else NULL; of the CASE's type.
func (en env) caseWhen(e query.Case) (Value, error) {
	t, err := en.typeOf(e)
	if err != nil {
		return Value{}, err
	}
	for _, w := range e.Whens {
		ok, err := en.holds(w.Cond)
		if err != nil {
			return Value{}, err
		}
		if ok {
			v, err := en.eval(w.Then)
			return conform(v, t), err
		}
	}
	if e.Else == nil {
		return Null(kindOf(t)), nil
	}
	v, err := en.eval(e.Else)
	return conform(v, t), err
}

// call evaluates a scalar function: its arguments, then the function (see
// funcs.go), its result of the call's type.
func (en env) call(e query.Call) (Value, error) {
	t, err := en.typeOf(e)
	if err != nil {
		return Value{}, err
	}
	args := make([]Value, len(e.Args))
	for i, a := range e.Args {
		if args[i], err = en.eval(a); err != nil {
			return Value{}, err
		}
		if v := args[i]; e.Fn == "concat" && !v.Null && v.kind() == FloatKind && query.IsReal(a, en.real) {
			args[i] = Str(realText(v.F)) // a REAL's text is a float32's
		}
	}
	v, err := callFunc(e.Fn, args)
	if err != nil {
		return Value{}, fmt.Errorf("%s: %w", e, err)
	}
	return conform(v, t), nil
}
