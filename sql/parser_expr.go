package sql

import (
	"math"
	"strconv"
	"strings"
)

func (p *parser) expr() (expr, error) { return p.orExpr() }

func (p *parser) orExpr() (expr, error) {
	l, err := p.andExpr()
	if err != nil {
		return nil, err
	}
	for p.peek().is("or") {
		t := p.next()
		r, err := p.andExpr()
		if err != nil {
			return nil, err
		}
		l = &node{kind: eBinary, op: "or", l: l, r: r, pos: t.pos}
	}
	return l, nil
}

func (p *parser) andExpr() (expr, error) {
	l, err := p.notExpr()
	if err != nil {
		return nil, err
	}
	for p.peek().is("and") {
		t := p.next()
		r, err := p.notExpr()
		if err != nil {
			return nil, err
		}
		l = &node{kind: eBinary, op: "and", l: l, r: r, pos: t.pos}
	}
	return l, nil
}

func (p *parser) notExpr() (expr, error) {
	if p.peek().is("not") {
		t := p.next()
		e, err := p.notExpr()
		if err != nil {
			return nil, err
		}
		return &node{kind: eNot, l: e, pos: t.pos}, nil
	}
	return p.cmpExpr()
}

var cmpOps = map[string]bool{"=": true, "<>": true, "!=": true, "<": true, "<=": true, ">": true, ">=": true}

func (p *parser) cmpExpr() (expr, error) {
	l, err := p.addExpr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind == tOp && cmpOps[t.text] {
		p.next()
		r, err := p.addExpr()
		if err != nil {
			return nil, err
		}
		op := t.text
		if op == "<>" {
			op = "!="
		}
		l = &node{kind: eBinary, op: op, l: l, r: r, pos: t.pos}
		if t2 := p.peek(); t2.kind == tOp && cmpOps[t2.text] {
			return nil, errAt(t2.pos, "comparisons do not chain: write a < b AND b < c")
		}
	}
	return l, nil
}

func (p *parser) addExpr() (expr, error) {
	l, err := p.mulExpr()
	if err != nil {
		return nil, err
	}
	for p.peek().op("+") || p.peek().op("-") {
		t := p.next()
		r, err := p.mulExpr()
		if err != nil {
			return nil, err
		}
		l = &node{kind: eBinary, op: t.text, l: l, r: r, pos: t.pos}
	}
	return l, nil
}

func (p *parser) mulExpr() (expr, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.peek().op("*") || p.peek().op("/") {
		t := p.next()
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		l = &node{kind: eBinary, op: t.text, l: l, r: r, pos: t.pos}
	}
	return l, nil
}

func (p *parser) unary() (expr, error) {
	if p.peek().op("-") {
		t := p.next()
		if n := p.peek(); n.kind == tInt && n.text == "9223372036854775808" {
			p.next()
			return &node{kind: eInt, i: math.MinInt64, pos: t.pos}, nil
		}
		e, err := p.unary()
		if err != nil {
			return nil, err
		}
		switch e.kind {
		case eInt:
			e.i, e.pos = -e.i, t.pos
			return e, nil
		case eFloat:
			e.f, e.pos = -e.f, t.pos
			return e, nil
		}
		return &node{kind: eNeg, l: e, pos: t.pos}, nil
	}
	if p.peek().op("+") {
		p.next()
		return p.unary()
	}
	return p.primary()
}

var aggNames = map[string]bool{"count": true, "sum": true, "avg": true, "min": true, "max": true}

func (p *parser) primary() (expr, error) {
	t := p.peek()
	switch t.kind {
	case tInt:
		p.next()
		v, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return nil, errAt(t.pos, "integer %s out of the 64-bit range", t.text)
		}
		return &node{kind: eInt, i: v, pos: t.pos}, nil
	case tFloat:
		p.next()
		v, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			return nil, errAt(t.pos, "number %s out of range", t.text)
		}
		return &node{kind: eFloat, f: v, pos: t.pos}, nil
	case tString:
		p.next()
		return &node{kind: eString, s: t.text, pos: t.pos}, nil
	case tOp:
		if t.op("(") {
			p.next()
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			if _, err := p.punct(")", "')' to close the parenthesis"); err != nil {
				return nil, err
			}
			return e, nil
		}
	case tIdent:
		if !t.quoted && p.peekAt(1).op("(") {
			fn := strings.ToLower(t.text)
			if !aggNames[fn] {
				return nil, errAt(t.pos, "unknown function %s (valid: COUNT, SUM, AVG, MIN, MAX)", t.text)
			}
			p.next()
			n := &node{kind: eCall, name: fn, pos: t.pos, parenPos: p.next().pos}
			if p.peek().is("distinct") {
				return nil, errAt(p.peek().pos, "%s(DISTINCT ...) is not supported yet", strings.ToUpper(fn))
			}
			if p.peek().op("*") {
				if fn != "count" {
					return nil, errAt(p.peek().pos, "%s(*): only COUNT takes *", strings.ToUpper(fn))
				}
				p.next()
				n.star = true
			} else {
				a, err := p.expr()
				if err != nil {
					return nil, err
				}
				n.l = a
			}
			if _, err := p.punct(")", "')' after the argument of "+strings.ToUpper(fn)); err != nil {
				return nil, err
			}
			return n, nil
		}
		id, err := p.name("an expression")
		if err != nil {
			return nil, err
		}
		n := &node{kind: eCol, name: id.name, pos: id.pos}
		if p.peek().op(".") {
			p.next()
			c, err := p.name("a column name after '" + id.name + ".'")
			if err != nil {
				return nil, err
			}
			n.qual, n.name = id.name, c.name
		}
		return n, nil
	}
	return nil, p.expected("an expression")
}
