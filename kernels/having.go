package kernels

import (
	"math"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// Having returns the query's HAVING predicate over a group row, or nil
// without HAVING. The expression is compiled once into a tree of closures,
// its columns resolved to aggregate positions and key parts, so that a row
// costs the closures' calls and no name lookup; rows are few next to
// tuples, so no more than that is needed.
func (p *Plan) Having() func(st *window.GroupState, g int32) bool {
	h := p.Query.Having
	if h == nil {
		return nil
	}
	if f := p.havingOverRow(h); f != nil {
		return f
	}
	if f := p.havingCompare(h); f != nil {
		return f
	}
	f := p.compileRow(h)
	return func(st *window.GroupState, g int32) bool { return f(st, g).i != 0 }
}

// havingOverRow compiles a HAVING that reads more than numbers (a string
// or boolean key, a value that can be NULL, SQL's other expressions): the
// group is written as an output tuple and the condition is the row
// evaluator's over the output schema, where the keys and aggregates have
// their names. nil where the numeric closures below serve.
func (p *Plan) havingOverRow(h query.Expr) func(st *window.GroupState, g int32) bool {
	out, err := p.Query.OutputSchema()
	if err != nil || !p.needsRowHaving(h, out) {
		return nil
	}
	rx, err := compileRow(h, out)
	if err != nil {
		panic("kernels: HAVING not validated: " + err.Error())
	}
	t := make([]byte, out.TupleSize)
	sc := &rowScratch{}
	return func(st *window.GroupState, g int32) bool {
		clear(t)
		p.EncodeRow(t, out, 0, 0, st, g)
		sc.arena.Reset()
		v := rx.fn(t, sc)
		return !v.null && v.i != 0
	}
}

// needsRowHaving reports whether HAVING h needs havingOverRow: the output
// has a string, boolean or NULL value, or h an expression the numeric
// closures do not know.
func (p *Plan) needsRowHaving(h query.Expr, out *query.Schema) bool {
	for _, a := range out.Attrs {
		if a.Nullable || a.Type == query.String || a.Logical == query.Boolean {
			return true
		}
	}
	var plain func(e query.Expr) bool
	plain = func(e query.Expr) bool {
		switch e := e.(type) {
		case query.IntConst, query.FloatConst, query.Column:
			return true
		case query.Arith:
			return plain(e.L) && plain(e.R)
		case query.Compare:
			return plain(e.L) && plain(e.R)
		case query.AndExpr:
			for _, t := range e.Terms {
				if !plain(t) {
					return false
				}
			}
			return true
		case query.OrExpr:
			for _, t := range e.Terms {
				if !plain(t) {
					return false
				}
			}
			return true
		}
		return false
	}
	return !plain(h)
}

// rowFunc evaluates an expression over row g of st.
type rowFunc func(st *window.GroupState, g int32) rowValue

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

// compileRow compiles e over a group row: integer arithmetic unless a
// side is a float, an integer division by zero gives 0, AND and OR stop
// at the first term that decides.
func (p *Plan) compileRow(e query.Expr) rowFunc {
	switch e := e.(type) {
	case query.IntConst:
		v := rowValue{i: e.V}
		return func(*window.GroupState, int32) rowValue { return v }
	case query.FloatConst:
		v := rowValue{x: e.V, float: true}
		return func(*window.GroupState, int32) rowValue { return v }
	case query.Column:
		return p.compileColumn(e.Name)
	case query.Arith:
		l, r, op := p.compileRow(e.L), p.compileRow(e.R), e.Op
		return func(st *window.GroupState, g int32) rowValue { return arithRow(op, l(st, g), r(st, g)) }
	case query.Compare:
		l, r, op := p.compileRow(e.L), p.compileRow(e.R), e.Op
		return func(st *window.GroupState, g int32) rowValue {
			a, b := l(st, g), r(st, g)
			if a.float || b.float {
				return boolValue(query.Holds(op, a.asFloat(), b.asFloat()))
			}
			return boolValue(query.Holds(op, a.i, b.i))
		}
	case query.AndExpr:
		terms := p.compileTerms(e.Terms)
		return func(st *window.GroupState, g int32) rowValue {
			for _, t := range terms {
				if t(st, g).i == 0 {
					return boolValue(false)
				}
			}
			return boolValue(true)
		}
	case query.OrExpr:
		terms := p.compileTerms(e.Terms)
		return func(st *window.GroupState, g int32) rowValue {
			for _, t := range terms {
				if t(st, g).i != 0 {
					return boolValue(true)
				}
			}
			return boolValue(false)
		}
	}
	panic("kernels: HAVING expression not validated: " + e.String())
}

func (p *Plan) compileTerms(terms []query.Expr) []rowFunc {
	fs := make([]rowFunc, len(terms))
	for i, t := range terms {
		fs[i] = p.compileRow(t)
	}
	return fs
}

func arithRow(op query.ArithOp, l, r rowValue) rowValue {
	if l.float || r.float {
		a, b := l.asFloat(), r.asFloat()
		switch op {
		case query.OpAdd:
			return rowValue{x: a + b, float: true}
		case query.OpSub:
			return rowValue{x: a - b, float: true}
		case query.OpMul:
			return rowValue{x: a * b, float: true}
		}
		return rowValue{x: a / b, float: true}
	}
	switch op {
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
}

// compileColumn resolves an aggregate (by its As name) or an integer GROUP
// BY column of the row.
func (p *Plan) compileColumn(name string) rowFunc {
	for a, ag := range p.Query.Aggregates {
		if ag.As == name {
			return func(st *window.GroupState, g int32) rowValue {
				i, f, isFloat := p.AggValue(st.Row(g), a)
				return rowValue{i: i, x: f, float: isFloat}
			}
		}
	}
	for _, kp := range p.KeyParts {
		if kp.Name == name && kp.Int {
			pos, width := kp.Pos, kp.Width
			return func(st *window.GroupState, g int32) rowValue {
				kb := st.KeyBytes(g)
				return rowValue{i: query.DecodeIntKey(kb[pos:], width)}
			}
		}
	}
	panic("kernels: HAVING column not validated: " + name)
}

// havingCompare compiles HAVING aggregate op constant (lrb1's avg_speed <
// 40) into one closure that reads the aggregate's words and compares, with
// no closure per operand and no interpreted value: the shape of nearly every
// HAVING, and its cost is per row of every emitted window. The comparison
// is compileRow's, bit for bit (a float side makes it a float one); nil
// for any other shape.
func (p *Plan) havingCompare(e query.Expr) func(st *window.GroupState, g int32) bool {
	c, ok := e.(query.Compare)
	if !ok {
		return nil
	}
	col, isCol := c.L.(query.Column)
	a := -1
	for i, ag := range p.Query.Aggregates {
		if isCol && ag.As == col.Name {
			a = i
		}
	}
	if a < 0 {
		return nil
	}
	var ci int64
	var cf float64
	cFloat := false
	switch r := c.R.(type) {
	case query.IntConst:
		ci, cf = r.V, float64(r.V)
	case query.FloatConst:
		cf, cFloat = r.V, true
	default:
		return nil
	}
	o, op := p.Aggs[a], c.Op
	w := o.Word
	switch {
	case o.Avg && o.floatWord:
		return func(st *window.GroupState, g int32) bool {
			row := st.Row(g)
			return query.Holds(op, math.Float64frombits(uint64(row[w]))/float64(row[0]), cf)
		}
	case o.Avg:
		return func(st *window.GroupState, g int32) bool {
			row := st.Row(g)
			return query.Holds(op, float64(row[w])/float64(row[0]), cf)
		}
	case o.floatWord:
		return func(st *window.GroupState, g int32) bool {
			return query.Holds(op, math.Float64frombits(uint64(st.Row(g)[w])), cf)
		}
	case cFloat:
		return func(st *window.GroupState, g int32) bool { return query.Holds(op, float64(st.Row(g)[w]), cf) }
	}
	return func(st *window.GroupState, g int32) bool { return query.Holds(op, st.Row(g)[w], ci) }
}
