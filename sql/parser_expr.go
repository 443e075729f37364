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

// cmpExpr parses a comparison, IS [NOT] NULL|TRUE|FALSE, [NOT] IN,
// [NOT] BETWEEN and [NOT] LIKE, or a plain value.
func (p *parser) cmpExpr() (expr, error) {
	l, err := p.concatExpr()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	switch {
	case t.kind == tOp && cmpOps[t.text]:
		p.next()
		r, err := p.concatExpr()
		if err != nil {
			return nil, err
		}
		op := t.text
		if op == "<>" {
			op = "!="
		}
		l = &node{kind: eBinary, op: op, l: l, r: r, pos: t.pos}
	case t.is("is"):
		p.next()
		n := &node{l: l, pos: t.pos}
		if p.peek().is("not") {
			p.next()
			n.not = true
		}
		switch k := p.peek(); {
		case k.is("null"):
			n.kind = eIsNull
		case k.is("true"), k.is("false"):
			n.kind, n.b = eIsBool, k.is("true")
		case k.is("unknown"):
			n.kind = eIsNull
		default:
			return nil, p.expected("NULL, TRUE or FALSE after IS")
		}
		p.next()
		l = n
	case t.is("in"), t.is("between"), t.is("like"),
		t.is("not") && (p.peekAt(1).is("in") || p.peekAt(1).is("between") || p.peekAt(1).is("like")):
		n := &node{l: l, pos: t.pos}
		if t.is("not") {
			p.next()
			n.not = true
		}
		switch k := p.next(); {
		case k.is("in"):
			n.kind = eIn
			if _, err := p.punct("(", "'(' and the list of values after IN"); err != nil {
				return nil, err
			}
			if p.peek().is("select") {
				return nil, errAt(p.peek().pos, "IN (SELECT ...) is not supported: a subquery in an expression (list the values)")
			}
			for {
				e, err := p.expr()
				if err != nil {
					return nil, err
				}
				n.args = append(n.args, e)
				if !p.peek().op(",") {
					break
				}
				p.next()
			}
			if _, err := p.punct(")", "',' or ')' after a value of the IN list"); err != nil {
				return nil, err
			}
		case k.is("between"):
			n.kind = eBetween
			if p.peek().is("asymmetric") {
				p.next()
			}
			lo, err := p.concatExpr()
			if err != nil {
				return nil, err
			}
			if _, err := p.keyword("and", "AND between the bounds of BETWEEN"); err != nil {
				return nil, err
			}
			hi, err := p.concatExpr()
			if err != nil {
				return nil, err
			}
			n.args = []expr{lo, hi}
		default:
			n.kind = eLike
			pt := p.peek()
			if pt.kind != tString {
				return nil, p.expected("the pattern of LIKE (a string constant, '...')")
			}
			p.next()
			n.s = pt.text
			if p.peek().is("escape") {
				p.next()
				et := p.peek()
				if et.kind != tString || len([]rune(et.text)) != 1 {
					return nil, p.expected("one character ('\\') after ESCAPE")
				}
				p.next()
				n.esc = []rune(et.text)[0]
			}
		}
		l = n
	case t.is("similar") && p.peekAt(1).is("to"),
		t.is("not") && p.peekAt(1).is("similar") && p.peekAt(2).is("to"),
		t.is("ilike") && p.peekAt(1).kind == tString,
		t.is("not") && p.peekAt(1).is("ilike") && p.peekAt(2).kind == tString:
		// Flink's SIMILAR TO and RisingWave's ILIKE, which were read as
		// an alias and the token after them blamed.
		if t.is("not") {
			t = p.peekAt(1)
		}
		if t.is("ilike") {
			return nil, errAt(t.pos, "ILIKE is not supported: LOWER(s) LIKE 'pattern' in lower case")
		}
		return nil, errAt(t.pos, "SIMILAR TO is not supported: LIKE is ('%%' any characters, '_' one)")
	default:
		return l, nil
	}
	if t2 := p.peek(); t2.kind == tOp && cmpOps[t2.text] {
		return nil, errAt(t2.pos, "comparisons do not chain: write a < b AND b < c")
	}
	return l, nil
}

// concatExpr parses a || b || ..., which binds looser than + and -.
func (p *parser) concatExpr() (expr, error) {
	l, err := p.addExpr()
	if err != nil {
		return nil, err
	}
	for p.peek().op("||") {
		t := p.next()
		r, err := p.addExpr()
		if err != nil {
			return nil, err
		}
		l = &node{kind: eBinary, op: "||", l: l, r: r, pos: t.pos}
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
	for p.peek().op("*") || p.peek().op("/") || p.peek().op("%") {
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
		case eInt, eInterval:
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

// noParens are the functions written without parentheses.
var noParens = map[string]bool{"current_timestamp": true, "localtimestamp": true, "current_date": true, "current_time": true, "localtime": true, "current_row_timestamp": true}

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
			if p.peek().is("select") {
				return nil, errAt(p.peek().pos, "a subquery in an expression is not supported (a subquery may stand in FROM)")
			}
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
		if !t.quoted {
			if e, ok, err := p.keywordExpr(t); ok || err != nil {
				return e, err
			}
		}
		if !t.quoted && p.peekAt(1).op("(") {
			return p.call(t)
		}
		if !t.quoted && noParens[strings.ToLower(t.text)] {
			p.next()
			return &node{kind: eFunc, name: strings.ToLower(t.text), pos: t.pos}, nil
		}
		return p.columnRef("an expression")
	}
	return nil, p.expected("an expression")
}

// columnRef parses a column's name, col or qual.col.
func (p *parser) columnRef(what string) (*node, error) {
	id, err := p.name(what)
	if err != nil {
		return nil, err
	}
	n := &node{kind: eCol, name: id.name, pos: id.pos}
	if p.peek().op(".") && !p.peekAt(1).op("*") {
		p.next()
		c, err := p.name("a column name after '" + id.name + ".'")
		if err != nil {
			return nil, err
		}
		n.qual, n.name = id.name, c.name
	}
	return n, nil
}

// keywordExpr parses the expressions that start with a keyword: TRUE,
// FALSE, NULL, INTERVAL, TIMESTAMP '...', DATE '...', CASE, CAST,
// EXTRACT, SUBSTRING, TRIM. ok is false where t starts none of them.
func (p *parser) keywordExpr(t token) (expr, bool, error) {
	word := strings.ToLower(t.text)
	switch word {
	case "true", "false":
		p.next()
		return &node{kind: eBool, b: word == "true", pos: t.pos}, true, nil
	case "null":
		p.next()
		return &node{kind: eNull, pos: t.pos}, true, nil
	case "interval":
		iv, err := p.intervalOf(true)
		if err != nil {
			return nil, true, err
		}
		return &node{kind: eInterval, iv: iv, i: iv.n * (iv.unitNs / 1e6), pos: t.pos}, true, nil
	case "timestamp", "date", "timestamp_ltz":
		if p.peekAt(1).kind != tString {
			return nil, false, nil
		}
		p.next()
		s := p.next()
		return &node{kind: eTime, s: s.text, name: word, pos: t.pos, parenPos: s.pos}, true, nil
	case "case":
		e, err := p.caseExpr()
		return e, true, err
	}
	if !p.peekAt(1).op("(") {
		return nil, false, nil
	}
	switch word {
	case "cast", "try_cast":
		p.next()
		p.next()
		x, err := p.expr()
		if err != nil {
			return nil, true, err
		}
		if _, err := p.keyword("as", "AS and the type in CAST(... AS type)"); err != nil {
			return nil, true, err
		}
		n := &node{kind: eCast, l: x, pos: t.pos}
		n.parenPos = p.peek().pos
		if n.typ, err = p.typ(); err != nil {
			return nil, true, err
		}
		_, err = p.punct(")", "')' after the type of CAST")
		return n, true, err
	case "extract":
		p.next()
		p.next()
		u := p.peek()
		if u.kind != tIdent {
			return nil, true, p.expected("a unit (YEAR, MONTH, DAY, HOUR, MINUTE, SECOND, ...) after EXTRACT(")
		}
		p.next()
		if _, err := p.keyword("from", "FROM after EXTRACT's unit"); err != nil {
			return nil, true, err
		}
		x, err := p.expr()
		if err != nil {
			return nil, true, err
		}
		if _, err := p.punct(")", "')' after EXTRACT(unit FROM ...)"); err != nil {
			return nil, true, err
		}
		return &node{kind: eFunc, name: "extract", s: strings.ToLower(u.text), parenPos: u.pos, args: []expr{x}, pos: t.pos}, true, nil
	case "substring", "substr":
		if !p.substringFrom() {
			return nil, false, nil
		}
		p.next()
		p.next()
		s, err := p.expr()
		if err != nil {
			return nil, true, err
		}
		if _, err := p.keyword("from", "FROM or ',' in SUBSTRING"); err != nil {
			return nil, true, err
		}
		start, err := p.expr()
		if err != nil {
			return nil, true, err
		}
		args := []expr{s, start}
		if p.peek().is("for") {
			p.next()
			n, err := p.expr()
			if err != nil {
				return nil, true, err
			}
			args = append(args, n)
		}
		if _, err := p.punct(")", "FOR or ')' in SUBSTRING(... FROM ...)"); err != nil {
			return nil, true, err
		}
		return &node{kind: eFunc, name: "substring", args: args, pos: t.pos}, true, nil
	case "trim":
		p.next()
		p.next()
		n := &node{kind: eFunc, name: "trim", pos: t.pos}
		mode := ""
		for _, m := range []string{"both", "leading", "trailing"} {
			if p.peek().is(m) {
				mode = m
				p.next()
			}
		}
		var chars expr
		if !p.peek().is("from") {
			x, err := p.expr()
			if err != nil {
				return nil, true, err
			}
			if !p.peek().is("from") {
				if mode != "" {
					return nil, true, p.expected("FROM in TRIM(" + strings.ToUpper(mode) + " ... FROM s)")
				}
				if _, err := p.punct(")", "FROM or ')' in TRIM"); err != nil {
					return nil, true, err
				}
				n.args = []expr{x}
				return n, true, nil
			}
			chars = x
		}
		p.next() // FROM
		x, err := p.expr()
		if err != nil {
			return nil, true, err
		}
		if _, err := p.punct(")", "')' after TRIM(... FROM s)"); err != nil {
			return nil, true, err
		}
		switch mode {
		case "leading":
			n.name = "ltrim"
		case "trailing":
			n.name = "rtrim"
		}
		n.args = []expr{x}
		n.l = chars // the characters trimmed: spaces only (checked by the compiler)
		return n, true, nil
	}
	return nil, false, nil
}

// substringFrom reports whether the SUBSTRING at the next token is
// written SUBSTRING(s FROM start [FOR len]): a FROM at its top level
// before the closing parenthesis or a comma.
func (p *parser) substringFrom() bool {
	depth := 0
	for k := 1; ; k++ {
		t := p.peekAt(k)
		switch {
		case t.kind == tEOF:
			return false
		case t.op("("):
			depth++
		case t.op(")"):
			depth--
			if depth == 0 {
				return false
			}
		case depth == 1 && t.op(","):
			return false
		case depth == 1 && t.is("from"):
			return true
		}
	}
}

// caseExpr parses CASE [x] WHEN ... THEN ... [ELSE ...] END.
func (p *parser) caseExpr() (expr, error) {
	n := &node{kind: eCase, pos: p.next().pos}
	if !p.peek().is("when") {
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		n.l = x
	}
	for p.peek().is("when") {
		p.next()
		c, err := p.expr()
		if err != nil {
			return nil, err
		}
		if _, err := p.keyword("then", "THEN after CASE ... WHEN's condition"); err != nil {
			return nil, err
		}
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		n.args = append(n.args, c, v)
	}
	if len(n.args) == 0 {
		return nil, p.expected("WHEN in CASE")
	}
	if p.peek().is("else") {
		p.next()
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		n.r = e
	}
	if _, err := p.keyword("end", "WHEN, ELSE or END in CASE"); err != nil {
		return nil, err
	}
	return n, nil
}

// call parses name(args): an aggregate (with DISTINCT, * and FILTER) or
// a scalar function, whose name the compiler checks.
func (p *parser) call(t token) (expr, error) {
	fn := strings.ToLower(t.text)
	p.next()
	paren := p.next().pos
	if aggNames[fn] {
		n := &node{kind: eCall, name: fn, pos: t.pos, parenPos: paren}
		switch {
		case p.peek().is("distinct"):
			p.next()
			n.distinct = true
		case p.peek().is("all"):
			p.next()
		}
		if p.peek().op("*") && !n.distinct {
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
		if p.peek().is("filter") && p.peekAt(1).op("(") {
			p.next()
			p.next()
			if _, err := p.keyword("where", "WHERE in FILTER (WHERE ...)"); err != nil {
				return nil, err
			}
			f, err := p.expr()
			if err != nil {
				return nil, err
			}
			n.filter = f
			if _, err := p.punct(")", "')' after FILTER (WHERE ..."); err != nil {
				return nil, err
			}
		}
		if p.peek().is("over") {
			return nil, errAt(p.peek().pos, "OVER: window functions (aggregates over a window of rows per row) are not supported; aggregate over TUMBLE, HOP or [RANGE ...] with GROUP BY")
		}
		return n, nil
	}
	n := &node{kind: eFunc, name: fn, pos: t.pos, parenPos: paren}
	if p.peek().is("select") {
		// EXISTS (SELECT ...): not an expression to parse, which would
		// blame the SELECT.
		return nil, errAt(t.pos, "%s (SELECT ...) is not supported: a subquery in an expression (a subquery may stand in FROM)", strings.ToUpper(fn))
	}
	if p.peek().op(")") {
		p.next()
		// ROW_NUMBER(), RANK() and DENSE_RANK() take no argument: their
		// OVER must be refused here too, or it is read as an alias and
		// the '(' after it blamed.
		if err := p.refuseOver(fn); err != nil {
			return nil, err
		}
		return n, nil
	}
	for {
		a, err := p.expr()
		if err != nil {
			return nil, err
		}
		n.args = append(n.args, a)
		if !p.peek().op(",") {
			break
		}
		p.next()
	}
	if _, err := p.punct(")", "',' or ')' after an argument of "+strings.ToUpper(fn)); err != nil {
		return nil, err
	}
	if err := p.refuseOver(fn); err != nil {
		return nil, err
	}
	return n, nil
}

// refuseOver refuses the OVER of a window function after fn(...): Flink's
// OVER aggregation, Top-N and deduplication (ROW_NUMBER() OVER ...).
func (p *parser) refuseOver(fn string) error {
	if !p.peek().is("over") {
		return nil
	}
	return errAt(p.peek().pos, "%s(...) OVER: window functions (OVER aggregation, Top-N, deduplication) are not supported", strings.ToUpper(fn))
}
