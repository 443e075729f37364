package gpu

import (
	"fmt"
	"math"

	"github.com/saber-hx/saber-hx/query"
)

// Expression programs: query.Expr compiled on the host to a postfix
// bytecode of 64-bit words that the kernels (kernels.cu's eval) and the
// emulator (evalCode) interpret per tuple over a stack of 64-bit values,
// with exactly the CPU kernels' semantics (kernels/vector.go):
//
//   - int32 columns are sign-extended to int64, float32 columns widened to
//     float64 exactly (a NaN quieted with its payload kept, as x86 and Go do);
//   - integer arithmetic is int64 and wraps as Go's does; integer division
//     truncates toward zero, x/0 is 0, and MinInt64/-1 is MinInt64 (Go's
//     result; C leaves it undefined, so the kernels negate for -1);
//   - an operator with a float operand is float64: its integer operand is
//     converted (round to nearest) right after it is computed, an integer
//     constant at compile time, as compileExpr's toFloat does; float
//     operations are single IEEE 754 operations rounded to nearest (the
//     kernels use __dadd_rn and friends, which nvcc never contracts into
//     fused multiply-adds);
//   - a comparison of a float with an integer compares float64s;
//   - AND and OR of predicates are boolean (0 or 1) values.
//
// One instruction is one word (and a constant one more): the opcode in bits
// 0..7, opK in bit 8 (the right operand of a binary operator is the next
// word rather than the top of the stack), the query.CmpOp of a comparison
// in bits 16..23, a column's byte offset in bits 32..63. opEnd ends a
// program, whose value is the top of the stack; opRequire pops a predicate
// and ends the program with 0 when it is false (WHERE's terms are chained
// by it). Keep in step with kernels.cu's OP_* and eval.
const (
	opEnd     = 0
	opLdI32   = 1
	opLdI64   = 2
	opLdF32   = 3
	opLdF64   = 4
	opConst   = 5
	opI2F     = 6
	opIAdd    = 7
	opISub    = 8
	opIMul    = 9
	opIDiv    = 10
	opFAdd    = 11
	opFSub    = 12
	opFMul    = 13
	opFDiv    = 14
	opICmp    = 15
	opFCmp    = 16
	opAnd     = 17
	opOr      = 18
	opRequire = 19

	opK = 1 << 8

	// maxStack is the evaluation stack of kernels.cu's eval, in words: a
	// program that needs more is refused.
	maxStack = 16
)

// exprCompiler appends programs to one code array (a shape's), over the
// columns of schema s.
type exprCompiler struct {
	s    *query.Schema
	code []uint64
}

// program compiles e as a program of its own and returns where it starts
// in the code array, and whether its value is a float.
func (c *exprCompiler) program(e query.Expr) (start int64, float bool, err error) {
	start = int64(len(c.code))
	float, depth, err := c.emit(e)
	if err != nil {
		c.code = c.code[:start]
		return 0, false, err
	}
	if depth > maxStack {
		c.code = c.code[:start]
		return 0, false, fmt.Errorf("needs %d evaluation stack words, the GPU has %d", depth, maxStack)
	}
	c.code = append(c.code, opEnd)
	return start, float, nil
}

// conjunction compiles the predicates terms, all of which must hold, as one
// program: each term but the last followed by opRequire.
func (c *exprCompiler) conjunction(terms []query.Expr) (start int64, err error) {
	start = int64(len(c.code))
	for i, t := range terms {
		_, depth, err := c.emit(t)
		if err == nil && depth > maxStack {
			err = fmt.Errorf("needs %d evaluation stack words, the GPU has %d", depth, maxStack)
		}
		if err != nil {
			c.code = c.code[:start]
			return 0, fmt.Errorf("%s: %w", t, err)
		}
		if i < len(terms)-1 {
			c.code = append(c.code, opRequire)
		}
	}
	c.code = append(c.code, opEnd)
	return start, nil
}

// isFloat is e's type as the CPU kernels compile it (compileExpr): a float
// column or constant, or arithmetic with a float operand.
func (c *exprCompiler) isFloat(e query.Expr) (bool, error) {
	switch e := e.(type) {
	case query.Column:
		a, err := c.s.Lookup(e.Name)
		if err != nil {
			return false, err
		}
		switch a.Type {
		case query.Int32, query.Int64:
			return false, nil
		case query.Float32, query.Float64:
			return true, nil
		}
		return false, fmt.Errorf("column %s is %s, not a number", e.Name, a.Type)
	case query.IntConst:
		return false, nil
	case query.FloatConst:
		return true, nil
	case query.Arith:
		l, r, err := c.operands(e.L, e.R)
		return l || r, err
	}
	return false, fmt.Errorf("%s is not a number", e)
}

// operands is isFloat of a binary operator's operands.
func (c *exprCompiler) operands(l, r query.Expr) (lf, rf bool, err error) {
	if lf, err = c.isFloat(l); err != nil {
		return false, false, err
	}
	rf, err = c.isFloat(r)
	return lf, rf, err
}

// constWord returns e's value as an operand of type float (converted as the
// CPU's toFloat does) or int, if e is a constant.
func constWord(e query.Expr, float bool) (uint64, bool) {
	switch e := e.(type) {
	case query.IntConst:
		if float {
			return math.Float64bits(float64(e.V)), true
		}
		return uint64(e.V), true
	case query.FloatConst:
		return math.Float64bits(e.V), true
	}
	return 0, false
}

// emit appends e's instructions and returns its type (float, else an
// integer or a boolean) and the most stack words its evaluation holds.
func (c *exprCompiler) emit(e query.Expr) (float bool, depth int, err error) {
	switch e := e.(type) {
	case query.Column:
		a, err := c.s.Lookup(e.Name)
		if err != nil {
			return false, 0, err
		}
		var op uint64
		switch a.Type {
		case query.Int32:
			op = opLdI32
		case query.Int64:
			op = opLdI64
		case query.Float32:
			op, float = opLdF32, true
		case query.Float64:
			op, float = opLdF64, true
		default:
			return false, 0, fmt.Errorf("column %s is %s, not a number", e.Name, a.Type)
		}
		c.code = append(c.code, op|uint64(a.Offset)<<32)
		return float, 1, nil
	case query.IntConst:
		c.code = append(c.code, opConst, uint64(e.V))
		return false, 1, nil
	case query.FloatConst:
		c.code = append(c.code, opConst, math.Float64bits(e.V))
		return true, 1, nil
	case query.Arith:
		if e.Op < query.OpAdd || e.Op > query.OpDiv {
			return false, 0, fmt.Errorf("unknown arithmetic operator %d", e.Op)
		}
		d := uint64(e.Op - query.OpAdd)
		return c.binary(e.L, e.R, uint64(opIAdd)+d, uint64(opFAdd)+d)
	case query.Compare:
		if e.Op < query.Eq || e.Op > query.Ge {
			return false, 0, fmt.Errorf("unknown comparison operator %d", e.Op)
		}
		cmp := uint64(e.Op) << 16
		_, depth, err = c.binary(e.L, e.R, uint64(opICmp)|cmp, uint64(opFCmp)|cmp)
		return false, depth, err
	case query.AndExpr:
		depth, err = c.terms(e.Terms, opAnd)
		return false, depth, err
	case query.OrExpr:
		depth, err = c.terms(e.Terms, opOr)
		return false, depth, err
	}
	return false, 0, fmt.Errorf("%s has no GPU form", e)
}

// binary emits l, then r (or r as an immediate operand when it is a
// constant), each converted to float where the other is a float and it is
// not, then iop, or fop on floats. float is whether the operands are.
func (c *exprCompiler) binary(l, r query.Expr, iop, fop uint64) (float bool, depth int, err error) {
	lf, rf, err := c.operands(l, r)
	if err != nil {
		return false, 0, err
	}
	float, op := lf || rf, iop
	if float {
		op = fop
	}
	_, dl, err := c.emit(l)
	if err != nil {
		return false, 0, err
	}
	if float && !lf {
		c.code = append(c.code, opI2F)
	}
	if k, ok := constWord(r, float); ok {
		c.code = append(c.code, op|opK, k)
		return float, dl, nil
	}
	_, dr, err := c.emit(r)
	if err != nil {
		return false, 0, err
	}
	if float && !rf {
		c.code = append(c.code, opI2F)
	}
	c.code = append(c.code, op)
	return float, max(dl, 1+dr), nil
}

// terms emits an AND or OR of predicates.
func (c *exprCompiler) terms(ts []query.Expr, op uint64) (int, error) {
	if len(ts) == 0 {
		return 0, fmt.Errorf("an AND or OR of no terms")
	}
	depth := 0
	for i, t := range ts {
		_, d, err := c.emit(t)
		if err != nil {
			return 0, err
		}
		if i == 0 {
			depth = d
			continue
		}
		depth = max(depth, 1+d)
		c.code = append(c.code, op)
	}
	return depth, nil
}
