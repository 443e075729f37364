package sql

import (
	"math"
	"strconv"
	"strings"
)

type parser struct {
	toks []token
	i    int
}

// parse parses a whole text: statements separated (and optionally ended)
// by semicolons.
func parse(src string) ([]*stmt, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	var out []*stmt
	for {
		for p.peek().op(";") {
			p.next()
		}
		if p.peek().kind == tEOF {
			break
		}
		s, err := p.statement()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		if t := p.peek(); !t.op(";") && t.kind != tEOF {
			return nil, p.expected("';' or the end of the input after the statement")
		}
	}
	if len(out) == 0 {
		return nil, errAt(p.peek().pos, "expected a statement (CREATE SOURCE, CREATE TABLE, CREATE VIEW, CREATE SINK or SELECT), found the end of the input")
	}
	return out, nil
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekAt(k int) token {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

// expected is the error "expected WHAT, found TOKEN" at the next token.
func (p *parser) expected(what string) *Error {
	t := p.peek()
	return errAt(t.pos, "expected %s, found %s", what, t.describe())
}

func (p *parser) keyword(kw, what string) (token, error) {
	if !p.peek().is(kw) {
		return token{}, p.expected(what)
	}
	return p.next(), nil
}

func (p *parser) punct(op, what string) (token, error) {
	if !p.peek().op(op) {
		return token{}, p.expected(what)
	}
	return p.next(), nil
}

// reserved words cannot be names unless quoted.
var reserved = map[string]bool{
	"select": true, "from": true, "where": true, "group": true, "by": true, "having": true,
	"join": true, "inner": true, "left": true, "right": true, "full": true, "outer": true, "cross": true,
	"on": true, "and": true, "or": true, "not": true, "as": true, "create": true, "with": true,
	"interval": true, "tumble": true, "hop": true, "range": true, "rows": true, "slide": true,
	"watermark": true, "for": true, "distinct": true, "order": true, "limit": true, "union": true,
}

func (p *parser) name(what string) (ident, error) {
	t := p.peek()
	if t.kind != tIdent || (!t.quoted && reserved[strings.ToLower(t.text)]) {
		return ident{}, p.expected(what)
	}
	p.next()
	return ident{name: t.text, pos: t.pos}, nil
}

func (p *parser) statement() (*stmt, error) {
	t := p.peek()
	switch {
	case t.is("select"):
		sel, err := p.selectStmt()
		if err != nil {
			return nil, err
		}
		return &stmt{kind: stSelect, pos: t.pos, sel: sel}, nil
	case t.is("create"):
		p.next()
		k := p.peek()
		switch {
		case k.is("source"), k.is("stream"):
			p.next()
			return p.createSource(t.pos, true)
		case k.is("table"):
			p.next()
			return p.createSource(t.pos, false)
		case k.is("view"):
			p.next()
			return p.createView(t.pos, stView)
		case k.is("sink"):
			p.next()
			return p.createView(t.pos, stSink)
		}
		return nil, p.expected("SOURCE, TABLE, VIEW or SINK after CREATE")
	}
	return nil, p.expected("a statement (CREATE SOURCE, CREATE TABLE, CREATE VIEW, CREATE SINK or SELECT)")
}

func (p *parser) createSource(at pos, source bool) (*stmt, error) {
	s := &stmt{kind: stTable, pos: at}
	what := "table"
	if source {
		s.kind, what = stSource, "source"
	}
	var err error
	if s.name, err = p.name("the " + what + "'s name"); err != nil {
		return nil, err
	}
	if _, err := p.punct("(", "'(' before the column list of "+s.name.name); err != nil {
		return nil, err
	}
	for {
		if p.peek().is("watermark") {
			if !source {
				return nil, errAt(p.peek().pos, "a table has no event time: WATERMARK belongs in CREATE SOURCE")
			}
			if s.wm != nil {
				return nil, errAt(p.peek().pos, "a second WATERMARK: a source has one event time")
			}
			if s.wm, err = p.watermark(); err != nil {
				return nil, err
			}
		} else {
			var c colDef
			if c.name, err = p.name("a column name"); err != nil {
				return nil, err
			}
			if c.typ, err = p.typ(); err != nil {
				return nil, err
			}
			s.cols = append(s.cols, c)
		}
		if p.peek().op(",") {
			p.next()
			continue
		}
		if _, err := p.punct(")", "',' or ')' after the column list"); err != nil {
			return nil, err
		}
		break
	}
	if len(s.cols) == 0 {
		return nil, errAt(s.name.pos, "%s %s has no columns", what, s.name.name)
	}
	w, err := p.keyword("with", "WITH (connector = ...) after the column list of "+s.name.name)
	if err != nil {
		return nil, err
	}
	s.withPos = w.pos
	s.opts, err = p.options()
	return s, err
}

func (p *parser) watermark() (*watermark, error) {
	w := &watermark{pos: p.next().pos}
	if _, err := p.keyword("for", "FOR after WATERMARK"); err != nil {
		return nil, err
	}
	var err error
	if w.col, err = p.name("the event-time column after WATERMARK FOR"); err != nil {
		return nil, err
	}
	if _, err := p.keyword("as", "AS after WATERMARK FOR "+w.col.name); err != nil {
		return nil, err
	}
	if w.of, err = p.name("the watermark expression (column or column - INTERVAL '...' unit)"); err != nil {
		return nil, err
	}
	if p.peek().op("-") {
		w.delayP = p.next().pos
		if w.delay, err = p.intervalOf(true); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func (p *parser) typ() (sqlType, error) {
	t := p.peek()
	if t.kind != tIdent || t.quoted {
		return sqlType{}, p.expected("a type (INT, BIGINT, REAL, DOUBLE, UUID, BYTES(n) or ENUM(...))")
	}
	switch strings.ToLower(t.text) {
	case "int", "integer":
		p.next()
		return sqlType{kind: tyInt}, nil
	case "bigint":
		p.next()
		return sqlType{kind: tyBigint}, nil
	case "real", "float":
		p.next()
		return sqlType{kind: tyReal}, nil
	case "double":
		p.next()
		if p.peek().is("precision") {
			p.next()
		}
		return sqlType{kind: tyDouble}, nil
	case "uuid":
		p.next()
		return sqlType{kind: tyUUID, size: 16}, nil
	case "bytes":
		p.next()
		if _, err := p.punct("(", "'(' and the size after BYTES"); err != nil {
			return sqlType{}, err
		}
		n := p.peek()
		if n.kind != tInt {
			return sqlType{}, p.expected("the size in bytes of BYTES(n)")
		}
		v, err := strconv.Atoi(n.text)
		if err != nil || v <= 0 || v > 1<<16 {
			return sqlType{}, errAt(n.pos, "BYTES(%s): the size must be in [1, 65536]", n.text)
		}
		p.next()
		if _, err := p.punct(")", "')' after the size of BYTES"); err != nil {
			return sqlType{}, err
		}
		return sqlType{kind: tyBytes, size: v}, nil
	case "enum":
		p.next()
		if _, err := p.punct("(", "'(' and the labels after ENUM"); err != nil {
			return sqlType{}, err
		}
		ty := sqlType{kind: tyEnum}
		seen := map[string]bool{}
		for {
			l := p.peek()
			if l.kind != tString {
				return sqlType{}, p.expected("a label ('...') of the ENUM")
			}
			if seen[l.text] {
				return sqlType{}, errAt(l.pos, "ENUM label %s given twice", l.describe())
			}
			seen[l.text] = true
			ty.labels = append(ty.labels, l.text)
			p.next()
			if p.peek().op(",") {
				p.next()
				continue
			}
			if _, err := p.punct(")", "',' or ')' after the ENUM label"); err != nil {
				return sqlType{}, err
			}
			return ty, nil
		}
	}
	return sqlType{}, p.expected("a type (INT, BIGINT, REAL, DOUBLE, UUID, BYTES(n) or ENUM(...))")
}

// options parses ( key = value, ... ). Keys are names (dotted, for
// connector properties) or strings; values are strings, numbers or names.
func (p *parser) options() ([]option, error) {
	if _, err := p.punct("(", "'(' after WITH"); err != nil {
		return nil, err
	}
	var opts []option
	for {
		var o option
		t := p.peek()
		o.keyPos = t.pos
		switch t.kind {
		case tString:
			o.key = t.text
			p.next()
		case tIdent:
			o.key = t.text
			p.next()
			for p.peek().op(".") && p.peekAt(1).kind == tIdent {
				p.next()
				o.key += "." + p.next().text
			}
		default:
			return nil, p.expected("an option name (connector, path, format, ...)")
		}
		o.key = strings.ToLower(o.key)
		if _, err := p.punct("=", "'=' after the option "+o.key); err != nil {
			return nil, err
		}
		v := p.peek()
		switch v.kind {
		case tString, tInt, tIdent:
			o.val, o.valPos = v.text, v.pos
			p.next()
		default:
			return nil, p.expected("the value of option " + o.key)
		}
		for _, prev := range opts {
			if prev.key == o.key {
				return nil, errAt(o.keyPos, "option %s given twice", o.key)
			}
		}
		opts = append(opts, o)
		if p.peek().op(",") {
			p.next()
			continue
		}
		if _, err := p.punct(")", "',' or ')' after the option "+o.key); err != nil {
			return nil, err
		}
		return opts, nil
	}
}

func (p *parser) createView(at pos, kind stmtKind) (*stmt, error) {
	s := &stmt{kind: kind, pos: at}
	what := "view"
	if kind == stSink {
		what = "sink"
	}
	var err error
	if s.name, err = p.name("the " + what + "'s name"); err != nil {
		return nil, err
	}
	if _, err := p.keyword("as", "AS SELECT ... after the "+what+"'s name"); err != nil {
		return nil, err
	}
	if !p.peek().is("select") {
		return nil, p.expected("SELECT after AS")
	}
	if s.sel, err = p.selectStmt(); err != nil {
		return nil, err
	}
	if kind == stSink {
		w, err := p.keyword("with", "WITH (connector = ...) after the sink's query")
		if err != nil {
			return nil, err
		}
		s.withPos = w.pos
		if s.opts, err = p.options(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (p *parser) selectStmt() (*selectStmt, error) {
	s := &selectStmt{pos: p.next().pos}
	if p.peek().is("distinct") {
		return nil, errAt(p.peek().pos, "SELECT DISTINCT is not supported yet")
	}
	for {
		it := selectItem{pos: p.peek().pos}
		if p.peek().op("*") {
			p.next()
			it.star = true
		} else {
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			it.expr = e
			if p.peek().is("as") {
				p.next()
				a, err := p.name("a name after AS")
				if err != nil {
					return nil, err
				}
				it.alias = &a
			} else if t := p.peek(); t.kind == tIdent && (t.quoted || !reserved[strings.ToLower(t.text)]) {
				a, _ := p.name("")
				it.alias = &a
			}
		}
		s.items = append(s.items, it)
		if !p.peek().op(",") {
			break
		}
		p.next()
	}
	if _, err := p.keyword("from", "',' or FROM after the select list"); err != nil {
		return nil, err
	}
	var err error
	if s.from, err = p.fromItem(); err != nil {
		return nil, err
	}
	if p.peek().is("inner") {
		p.next()
		if !p.peek().is("join") {
			return nil, p.expected("JOIN after INNER")
		}
	}
	for _, kw := range []string{"left", "right", "full", "cross"} {
		if p.peek().is(kw) {
			return nil, errAt(p.peek().pos, "%s JOIN is not supported: only inner joins (JOIN ... ON ...)", strings.ToUpper(kw))
		}
	}
	if p.peek().is("join") {
		p.next()
		j, err := p.fromItem()
		if err != nil {
			return nil, err
		}
		s.join = &j
		on, err := p.keyword("on", "ON and the join condition")
		if err != nil {
			return nil, err
		}
		s.onPos = on.pos
		if s.on, err = p.expr(); err != nil {
			return nil, err
		}
	}
	if p.peek().is("where") {
		p.next()
		if s.where, err = p.expr(); err != nil {
			return nil, err
		}
	}
	if p.peek().is("group") {
		p.next()
		if _, err := p.keyword("by", "BY after GROUP"); err != nil {
			return nil, err
		}
		for {
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			s.groupBy = append(s.groupBy, e)
			if !p.peek().op(",") {
				break
			}
			p.next()
		}
	}
	if p.peek().is("having") {
		p.next()
		if s.having, err = p.expr(); err != nil {
			return nil, err
		}
	}
	for _, kw := range []string{"order", "limit", "union"} {
		if p.peek().is(kw) {
			return nil, errAt(p.peek().pos, "%s is not supported in a streaming query", strings.ToUpper(kw))
		}
	}
	s.end = p.peek().pos
	return s, nil
}

func (p *parser) fromItem() (fromItem, error) {
	var f fromItem
	t := p.peek()
	if (t.is("tumble") || t.is("hop")) && p.peekAt(1).op("(") {
		p.next()
		p.next()
		f.win.pos = t.pos
		f.win.kind = winTumble
		fn := "TUMBLE"
		if t.is("hop") {
			f.win.kind, fn = winHop, "HOP"
		}
		var err error
		if f.name, err = p.name("the source or view name as the first argument of " + fn); err != nil {
			return f, err
		}
		if _, err := p.punct(",", "',' and the event-time column after the source of "+fn); err != nil {
			return f, err
		}
		tc, err := p.name("the event-time column as the second argument of " + fn)
		if err != nil {
			return f, err
		}
		f.win.timeCol = &tc
		if _, err := p.punct(",", "',' and the window size (INTERVAL ...) after the event-time column"); err != nil {
			return f, err
		}
		first, err := p.interval()
		if err != nil {
			return f, err
		}
		f.win.size = first
		if f.win.kind == winHop {
			if _, err := p.punct(",", "',' and the window size after HOP's slide"); err != nil {
				return f, err
			}
			f.win.slide, f.win.slidePos = first, first.pos
			if f.win.size, err = p.interval(); err != nil {
				return f, err
			}
		}
		if _, err := p.punct(")", "')' after the arguments of "+fn); err != nil {
			return f, err
		}
	} else {
		var err error
		if f.name, err = p.name("a source, table or view name after FROM or JOIN"); err != nil {
			return f, err
		}
		if p.peek().op("[") {
			if f.win, err = p.cqlWindow(); err != nil {
				return f, err
			}
		}
	}
	if p.peek().is("as") {
		p.next()
		a, err := p.name("an alias after AS")
		if err != nil {
			return f, err
		}
		f.alias = &a
	} else if t := p.peek(); t.kind == tIdent && (t.quoted || !reserved[strings.ToLower(t.text)]) {
		a, _ := p.name("")
		f.alias = &a
	}
	return f, nil
}

func (p *parser) cqlWindow() (windowSpec, error) {
	w := windowSpec{pos: p.next().pos}
	t := p.peek()
	switch {
	case t.is("range"):
		p.next()
		w.kind = winRange
		var err error
		if w.size, err = p.interval(); err != nil {
			return w, err
		}
		if p.peek().is("slide") {
			w.slidePos = p.next().pos
			if w.slide, err = p.interval(); err != nil {
				return w, err
			}
		}
	case t.is("rows"):
		p.next()
		w.kind = winRows
		var err error
		if w.rows, err = p.count("the number of rows after ROWS"); err != nil {
			return w, err
		}
		if p.peek().is("slide") {
			w.slidePos = p.next().pos
			if w.step, err = p.count("the number of rows after SLIDE"); err != nil {
				return w, err
			}
		}
	default:
		return w, p.expected("RANGE or ROWS after '['")
	}
	if _, err := p.punct("]", "SLIDE or ']' after the window size"); err != nil {
		return w, err
	}
	return w, nil
}

func (p *parser) count(what string) (int64, error) {
	t := p.peek()
	if t.kind != tInt {
		return 0, p.expected(what)
	}
	v, err := strconv.ParseInt(t.text, 10, 64)
	if err != nil || v <= 0 {
		return 0, errAt(t.pos, "%s: %s is not a positive 64-bit integer", what, t.text)
	}
	p.next()
	return v, nil
}

var units = map[string]int64{
	"millisecond": 1e6, "milliseconds": 1e6,
	"second": 1e9, "seconds": 1e9,
	"minute": 60e9, "minutes": 60e9,
	"hour": 3600e9, "hours": 3600e9,
}

// interval parses INTERVAL 'n' unit (n also unquoted), n > 0.
func (p *parser) interval() (*interval, error) { return p.intervalOf(false) }

// intervalOf parses an interval, of length 0 too if zero.
func (p *parser) intervalOf(zero bool) (*interval, error) {
	t, err := p.keyword("interval", "INTERVAL 'n' unit")
	if err != nil {
		return nil, err
	}
	iv := &interval{pos: t.pos}
	n := p.peek()
	if n.kind != tString && n.kind != tInt {
		return nil, p.expected("the length ('10') after INTERVAL")
	}
	v, err := strconv.ParseInt(strings.TrimSpace(n.text), 10, 64)
	if err != nil || v < 0 || (v == 0 && !zero) {
		what := "a positive integer"
		if zero {
			what = "a non-negative integer"
		}
		return nil, errAt(n.pos, "INTERVAL %s: the length must be %s", n.describe(), what)
	}
	p.next()
	u := p.peek()
	ns, ok := units[strings.ToLower(u.text)]
	if u.kind != tIdent || u.quoted || !ok {
		return nil, p.expected("a unit (MILLISECOND, SECOND, MINUTE or HOUR) after INTERVAL " + n.describe())
	}
	p.next()
	iv.n, iv.unitNs = v, ns
	iv.text = "INTERVAL " + n.describe() + " " + strings.ToUpper(u.text)
	return iv, nil
}

// --- expressions ----------------------------------------------------------

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
