package reference

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/saber-hx/saber-hx/query"
)

// tupleScope resolves columns of one tuple.
func tupleScope(s *query.Schema, t []byte) func(string) (Value, error) {
	return func(name string) (Value, error) {
		a, err := s.Lookup(name)
		if err != nil {
			return Value{}, err
		}
		return readAttr(a, t)
	}
}

// EvalNum evaluates the numeric expression e over tuple t of schema s, as
// Evaluate does.
func EvalNum(e query.Expr, s *query.Schema, t []byte) (Value, error) {
	return num(e, tupleScope(s, t))
}

// EvalPred evaluates the predicate e over tuple t of schema s, as Evaluate
// does WHERE.
func EvalPred(e query.Expr, s *query.Schema, t []byte) (bool, error) {
	return pred(e, tupleScope(s, t))
}

// readAttr reads attribute a of tuple t as a number.
func readAttr(a query.Attribute, t []byte) (Value, error) {
	b := t[a.Offset : a.Offset+a.Size]
	le := binary.LittleEndian
	switch a.Type {
	case query.Int32:
		return Int(int64(int32(le.Uint32(b)))), nil
	case query.Int64:
		return Int(int64(le.Uint64(b))), nil
	case query.Float32:
		return Float(float64(math.Float32frombits(le.Uint32(b)))), nil
	case query.Float64:
		return Float(math.Float64frombits(le.Uint64(b))), nil
	}
	return Value{}, fmt.Errorf("column %q is %s, not a number", a.Name, a.Type)
}

// num evaluates the numeric expression e, resolving columns with col.
func num(e query.Expr, col func(string) (Value, error)) (Value, error) {
	switch e := e.(type) {
	case query.Column:
		return col(e.Name)
	case query.IntConst:
		return Int(e.V), nil
	case query.FloatConst:
		return Float(e.V), nil
	case query.Arith:
		l, err := num(e.L, col)
		if err != nil {
			return Value{}, err
		}
		r, err := num(e.R, col)
		if err != nil {
			return Value{}, err
		}
		if l.Float || r.Float {
			a, b := l.asFloat(), r.asFloat()
			switch e.Op {
			case query.OpAdd:
				return Float(a + b), nil
			case query.OpSub:
				return Float(a - b), nil
			case query.OpMul:
				return Float(a * b), nil
			case query.OpDiv:
				return Float(a / b), nil
			}
		} else {
			a, b := l.I, r.I
			switch e.Op {
			case query.OpAdd:
				return Int(a + b), nil
			case query.OpSub:
				return Int(a - b), nil
			case query.OpMul:
				return Int(a * b), nil
			case query.OpDiv:
				if b == 0 {
					return Int(0), nil
				}
				return Int(a / b), nil // truncates; MinInt64 / -1 wraps to MinInt64
			}
		}
		return Value{}, fmt.Errorf("unknown arithmetic operator %d in %s", uint8(e.Op), e)
	}
	return Value{}, fmt.Errorf("%s is not a number", e)
}

// pred evaluates the predicate e, resolving columns with col.
func pred(e query.Expr, col func(string) (Value, error)) (bool, error) {
	switch e := e.(type) {
	case query.Compare:
		l, err := num(e.L, col)
		if err != nil {
			return false, err
		}
		r, err := num(e.R, col)
		if err != nil {
			return false, err
		}
		var holds, known bool
		if l.Float || r.Float {
			holds, known = compare(e.Op, l.asFloat(), r.asFloat())
		} else {
			holds, known = compare(e.Op, l.I, r.I)
		}
		if !known {
			return false, fmt.Errorf("unknown comparison operator %d in %s", uint8(e.Op), e)
		}
		return holds, nil
	case query.AndExpr:
		if len(e.Terms) == 0 {
			return false, errors.New("AND of no terms")
		}
		for _, t := range e.Terms {
			ok, err := pred(t, col)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case query.OrExpr:
		if len(e.Terms) == 0 {
			return false, errors.New("OR of no terms")
		}
		for _, t := range e.Terms {
			ok, err := pred(t, col)
			if err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	}
	return false, fmt.Errorf("%s is not a predicate", e)
}

// compare is a op b; known is false for an unknown operator.
func compare[T int64 | float64](op query.CmpOp, a, b T) (holds, known bool) {
	switch op {
	case query.Eq:
		return a == b, true
	case query.Ne:
		return a != b, true
	case query.Lt:
		return a < b, true
	case query.Le:
		return a <= b, true
	case query.Gt:
		return a > b, true
	case query.Ge:
		return a >= b, true
	}
	return false, false
}
