package query

import (
	"errors"
	"fmt"
	"strings"
)

// Expr is an expression over the attributes of one tuple: a column, a
// constant, arithmetic, a comparison, or AND/OR of predicates. Build them
// with C, Int, Float, Add, Sub, Mul, Div, Cmp and its shorthands, And, Or.
//
// Numbers are evaluated as int64 or float64: int32 and int64 columns and
// integer constants are integers, float32 and float64 columns and float
// constants are floats, and arithmetic with a float operand is float.
// Integer division truncates toward zero and x/0 is 0 (a stream engine
// cannot stop on one bad tuple); float division follows IEEE 754.
type Expr interface {
	String() string
	expr()
}

// Column is the value of a named attribute (or of a joined value or an
// aggregate, where those are in scope).
type Column struct{ Name string }

// IntConst is an integer constant.
type IntConst struct{ V int64 }

// FloatConst is a float constant.
type FloatConst struct{ V float64 }

// ArithOp is an arithmetic operator.
type ArithOp uint8

const (
	OpAdd ArithOp = iota + 1
	OpSub
	OpMul
	OpDiv
)

func (o ArithOp) String() string {
	switch o {
	case OpAdd:
		return "+"
	case OpSub:
		return "-"
	case OpMul:
		return "*"
	case OpDiv:
		return "/"
	}
	return fmt.Sprintf("arith(%d)", uint8(o))
}

// Arith is L op R.
type Arith struct {
	Op   ArithOp
	L, R Expr
}

// Compare is the predicate L op R.
type Compare struct {
	Op   CmpOp
	L, R Expr
}

// AndExpr holds when every term holds.
type AndExpr struct{ Terms []Expr }

// OrExpr holds when any term holds.
type OrExpr struct{ Terms []Expr }

func (Column) expr()     {}
func (IntConst) expr()   {}
func (FloatConst) expr() {}
func (Arith) expr()      {}
func (Compare) expr()    {}
func (AndExpr) expr()    {}
func (OrExpr) expr()     {}

func (c Column) String() string     { return c.Name }
func (c IntConst) String() string   { return fmt.Sprint(c.V) }
func (c FloatConst) String() string { return fmt.Sprint(c.V) }
func (a Arith) String() string {
	return "(" + a.L.String() + " " + a.Op.String() + " " + a.R.String() + ")"
}
func (c Compare) String() string { return c.L.String() + " " + c.Op.String() + " " + c.R.String() }
func (a AndExpr) String() string { return joinTerms(a.Terms, " AND ") }
func (o OrExpr) String() string  { return joinTerms(o.Terms, " OR ") }

func joinTerms(ts []Expr, sep string) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.String()
	}
	return "(" + strings.Join(s, sep) + ")"
}

// C is column name.
func C(name string) Expr { return Column{Name: name} }

// Int is an integer constant.
func Int(v int64) Expr { return IntConst{V: v} }

// Float is a float constant.
func Float(v float64) Expr { return FloatConst{V: v} }

func Add(l, r Expr) Expr { return Arith{OpAdd, l, r} }
func Sub(l, r Expr) Expr { return Arith{OpSub, l, r} }
func Mul(l, r Expr) Expr { return Arith{OpMul, l, r} }
func Div(l, r Expr) Expr { return Arith{OpDiv, l, r} }

// Cmp is the predicate l op r.
func Cmp(l Expr, op CmpOp, r Expr) Expr { return Compare{op, l, r} }

// Shorthands comparing a column with an integer constant.
func ColEq(col string, v int64) Expr { return Compare{Eq, C(col), Int(v)} }
func ColNe(col string, v int64) Expr { return Compare{Ne, C(col), Int(v)} }
func ColLt(col string, v int64) Expr { return Compare{Lt, C(col), Int(v)} }
func ColLe(col string, v int64) Expr { return Compare{Le, C(col), Int(v)} }
func ColGt(col string, v int64) Expr { return Compare{Gt, C(col), Int(v)} }
func ColGe(col string, v int64) Expr { return Compare{Ge, C(col), Int(v)} }

// And holds when every term holds.
func And(terms ...Expr) Expr { return AndExpr{Terms: terms} }

// Or holds when any term holds.
func Or(terms ...Expr) Expr { return OrExpr{Terms: terms} }

// ValueType is the type an expression evaluates to.
type ValueType uint8

const (
	IntValue ValueType = iota + 1
	FloatValue
	BoolValue
	BytesValue // a bytes column: usable as a group key or join key only
	// StringValue is a string (a String attribute, a literal, a string
	// function's result).
	StringValue
	// TimeValue is a timestamp, int64 milliseconds since the epoch (a
	// Time attribute, ts + INTERVAL, a time function's result): an
	// integer to arithmetic and comparisons, a time to the functions.
	TimeValue
)

func (v ValueType) String() string {
	switch v {
	case IntValue:
		return "integer"
	case FloatValue:
		return "float"
	case BoolValue:
		return "boolean"
	case BytesValue:
		return "bytes"
	case StringValue:
		return "string"
	case TimeValue:
		return "timestamp"
	}
	return fmt.Sprintf("value-type(%d)", uint8(v))
}

// Integer reports whether values of v are int64s: integers and times.
func (v ValueType) Integer() bool { return v == IntValue || v == TimeValue }

// Number reports whether v is numeric: integers, times and floats.
func (v ValueType) Number() bool { return v.Integer() || v == FloatValue }

// Scope resolves column names for type checking.
type Scope func(name string) (ValueType, error)

// SchemaScope resolves the attributes of s.
func SchemaScope(s *Schema) Scope {
	return func(name string) (ValueType, error) {
		a, err := s.Lookup(name)
		if err != nil {
			return 0, err
		}
		return a.Value(), nil
	}
}

// Value is the type of an expression that reads the attribute: its Type's,
// or a time or a boolean where its Logical says so.
func (a Attribute) Value() ValueType {
	switch {
	case a.Logical == Time:
		return TimeValue
	case a.Logical == Boolean:
		return BoolValue
	}
	return a.Type.Value()
}

// Value is the type of an expression that reads the attribute.
func (t Type) Value() ValueType {
	switch t {
	case Int32, Int64:
		return IntValue
	case Float32, Float64:
		return FloatValue
	case String:
		return StringValue
	}
	return BytesValue
}

// TypeOf checks e in scope and returns its type, with an error naming the
// offending part.
func TypeOf(e Expr, scope Scope) (ValueType, error) {
	switch e := e.(type) {
	case nil:
		return 0, errors.New("missing expression")
	case Column:
		return scope(e.Name)
	case IntConst:
		return IntValue, nil
	case FloatConst:
		return FloatValue, nil
	case Arith:
		if e.Op < OpAdd || e.Op > OpDiv {
			return 0, fmt.Errorf("unknown arithmetic operator %d in %s", uint8(e.Op), e)
		}
		l, err := numeric(e.L, scope)
		if err != nil {
			return 0, err
		}
		r, err := numeric(e.R, scope)
		if err != nil {
			return 0, err
		}
		return arithType(e.Op, l, r, e)
	case Compare:
		if e.Op < Eq || e.Op > Ge {
			return 0, fmt.Errorf("unknown comparison operator %d in %s", uint8(e.Op), e)
		}
		l, err := TypeOf(e.L, scope)
		if err != nil {
			return 0, err
		}
		r, err := TypeOf(e.R, scope)
		if err != nil {
			return 0, err
		}
		t, ok := CommonType(l, r)
		if !ok || t == BytesValue || (t == BoolValue && e.Op != Eq && e.Op != Ne) {
			return 0, fmt.Errorf("%s compares %s with %s", e, l, r)
		}
		return BoolValue, nil
	case AndExpr:
		return boolTerms(e.Terms, "AND", scope)
	case OrExpr:
		return boolTerms(e.Terms, "OR", scope)
	}
	return typeOfSQL(e, scope)
}

func numeric(e Expr, scope Scope) (ValueType, error) {
	t, err := TypeOf(e, scope)
	if err != nil {
		return 0, err
	}
	if !t.Number() {
		return 0, fmt.Errorf("%s is %s, not a number", e, t)
	}
	return t, nil
}

func boolTerms(ts []Expr, op string, scope Scope) (ValueType, error) {
	if len(ts) == 0 {
		return 0, fmt.Errorf("%s of no terms", op)
	}
	for _, t := range ts {
		vt, err := TypeOf(t, scope)
		if err != nil {
			return 0, err
		}
		if vt != BoolValue {
			return 0, fmt.Errorf("%s term %s is %s, not a predicate", op, t, vt)
		}
	}
	return BoolValue, nil
}

// predicate checks the optional clause e (nil: none) is a predicate in
// scope, naming the clause in the error.
func predicate(clause string, e Expr, scope Scope) error {
	if e == nil {
		return nil
	}
	t, err := TypeOf(e, scope)
	if err != nil {
		return fmt.Errorf("%s: %w", clause, err)
	}
	if t != BoolValue {
		return fmt.Errorf("%s: %s is %s, not a predicate", clause, e, t)
	}
	return nil
}
