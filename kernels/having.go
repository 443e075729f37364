package kernels

import (
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// Having returns the query's HAVING predicate over a group row, or nil
// without HAVING. It interprets the expression per emitted row: rows are
// few next to tuples, so this is not a hot path.
func (p *Plan) Having() func(st *window.GroupState, g int32) bool {
	h := p.Query.Having
	if h == nil {
		return nil
	}
	return func(st *window.GroupState, g int32) bool {
		return p.evalRow(h, st, g).i != 0
	}
}

// rowValue is an interpreted value: an integer (and boolean: 0 or 1), or a
// float when f is set.
type rowValue struct {
	i     int64
	x     float64
	float bool
}

func (v rowValue) asFloat() float64 {
	if v.float {
		return v.x
	}
	return float64(v.i)
}

func boolValue(b bool) rowValue {
	if b {
		return rowValue{i: 1}
	}
	return rowValue{}
}

func (p *Plan) evalRow(e query.Expr, st *window.GroupState, g int32) rowValue {
	switch e := e.(type) {
	case query.IntConst:
		return rowValue{i: e.V}
	case query.FloatConst:
		return rowValue{x: e.V, float: true}
	case query.Column:
		return p.rowColumn(e.Name, st, g)
	case query.Arith:
		l, r := p.evalRow(e.L, st, g), p.evalRow(e.R, st, g)
		if l.float || r.float {
			a, b := l.asFloat(), r.asFloat()
			switch e.Op {
			case query.OpAdd:
				return rowValue{x: a + b, float: true}
			case query.OpSub:
				return rowValue{x: a - b, float: true}
			case query.OpMul:
				return rowValue{x: a * b, float: true}
			}
			return rowValue{x: a / b, float: true}
		}
		switch e.Op {
		case query.OpAdd:
			return rowValue{i: l.i + r.i}
		case query.OpSub:
			return rowValue{i: l.i - r.i}
		case query.OpMul:
			return rowValue{i: l.i * r.i}
		}
		if r.i == 0 {
			return rowValue{}
		}
		return rowValue{i: l.i / r.i}
	case query.Compare:
		l, r := p.evalRow(e.L, st, g), p.evalRow(e.R, st, g)
		if l.float || r.float {
			return boolValue(query.Holds(e.Op, l.asFloat(), r.asFloat()))
		}
		return boolValue(query.Holds(e.Op, l.i, r.i))
	case query.AndExpr:
		for _, t := range e.Terms {
			if p.evalRow(t, st, g).i == 0 {
				return boolValue(false)
			}
		}
		return boolValue(true)
	case query.OrExpr:
		for _, t := range e.Terms {
			if p.evalRow(t, st, g).i != 0 {
				return boolValue(true)
			}
		}
		return boolValue(false)
	}
	panic("kernels: HAVING expression not validated: " + e.String())
}

// rowColumn is an aggregate (by its As name) or a GROUP BY column of the row.
func (p *Plan) rowColumn(name string, st *window.GroupState, g int32) rowValue {
	for a, ag := range p.Query.Aggregates {
		if ag.As == name {
			i, f, isFloat := p.AggValue(st.Row(g), a)
			return rowValue{i: i, x: f, float: isFloat}
		}
	}
	for _, kp := range p.KeyParts {
		if kp.Name == name && kp.Int {
			kb := st.KeyBytes(g)
			return rowValue{i: query.DecodeIntKey(kb[kp.Pos:], kp.Width)}
		}
	}
	panic("kernels: HAVING column not validated: " + name)
}
