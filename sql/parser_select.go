package sql

import (
	"strconv"
	"strings"
)

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
		} else if t := p.peek(); t.kind == tIdent && p.peekAt(1).op(".") && p.peekAt(2).op("*") {
			p.next()
			p.next()
			p.next()
			it.star, it.qual = true, t.text
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
			} else if p.implicitAlias() {
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
	if p.peek().op(",") {
		return nil, errAt(p.peek().pos, "FROM a, b (a join written as a list, its condition in WHERE) is not supported: write FROM a JOIN b ON the condition")
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
		if err := p.moreJoins(s); err != nil {
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
			if err := p.refuseGroupingSets(); err != nil {
				return nil, err
			}
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
	for _, kw := range []string{"order", "limit", "offset", "fetch", "union", "intersect", "except"} {
		if t := p.peek(); t.is(kw) {
			what := strings.ToUpper(kw)
			if kw == "fetch" && (p.peekAt(1).is("first") || p.peekAt(1).is("next")) {
				what += " " + strings.ToUpper(p.peekAt(1).text) // FETCH FIRST | NEXT n ROWS ONLY
			}
			return nil, errAt(t.pos, "%s is not supported in a streaming query", what)
		}
	}
	s.end = p.peek().pos
	return s, nil
}

// refuseGroupingSets refuses GROUPING SETS (...), ROLLUP (...) and CUBE
// (...) at a GROUP BY item, which would otherwise be read as a column
// named grouping (and SETS blamed) or a call of an unknown function.
func (p *parser) refuseGroupingSets() error {
	t := p.peek()
	what := ""
	switch {
	case t.is("grouping") && p.peekAt(1).is("sets"):
		what = "GROUPING SETS"
	case (t.is("rollup") || t.is("cube")) && p.peekAt(1).op("("):
		what = strings.ToUpper(t.text)
	default:
		return nil
	}
	return errAt(t.pos, "%s is not supported: GROUP BY one set of keys (a query per grouping set)", what)
}

// setOps are names that follow a query, never an alias without AS (a
// name still, quoted or after AS): read as FROM's alias, INTERSECT and
// EXCEPT left the SELECT after them blamed, OFFSET n and FETCH FIRST n
// ROWS ONLY the token after them.
var setOps = map[string]bool{"intersect": true, "except": true, "offset": true, "fetch": true}

// implicitAlias reports whether the next token is an alias without AS.
func (p *parser) implicitAlias() bool {
	t := p.peek()
	if t.kind != tIdent {
		return false
	}
	w := strings.ToLower(t.text)
	return t.quoted || !reserved[w] && !setOps[w]
}

func (p *parser) fromItem() (fromItem, error) {
	var f fromItem
	t := p.peek()
	switch {
	case t.op("("):
		// FROM (SELECT ...) [AS] alias: an anonymous view.
		p.next()
		if err := p.refuseQueryStart(); err != nil {
			return f, err
		}
		if !p.peek().is("select") {
			return f, p.expected("SELECT in a subquery after '('")
		}
		f.name = ident{name: "", pos: t.pos}
		sel, err := p.selectStmt()
		if err != nil {
			return f, err
		}
		f.sub = sel
		if _, err := p.punct(")", "')' to close the subquery"); err != nil {
			return f, err
		}
	case t.is("table") && p.peekAt(1).op("("):
		// Flink's window TVFs: TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size)).
		p.next()
		p.next()
		if err := p.windowTVF(&f, true); err != nil {
			return f, err
		}
		if _, err := p.punct(")", "')' to close TABLE(...)"); err != nil {
			return f, err
		}
	case (t.is("tumble") || t.is("hop") || t.is("session") || t.is("cumulate")) && p.peekAt(1).op("("):
		if err := p.windowTVF(&f, false); err != nil {
			return f, err
		}
	default:
		var err error
		if f.name, err = p.name("a source, table or view name after FROM or JOIN"); err != nil {
			return f, err
		}
		if p.peek().op("[") {
			if f.win, err = p.cqlWindow(); err != nil {
				return f, err
			}
		}
		if p.peek().is("for") {
			f.asOfPos = p.next().pos
			for _, kw := range []string{"system_time", "as", "of"} {
				if _, err := p.keyword(kw, "FOR SYSTEM_TIME AS OF and a time column"); err != nil {
					return f, err
				}
			}
			if f.asOf, err = p.columnRef("the time column after FOR SYSTEM_TIME AS OF"); err != nil {
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
	} else if p.implicitAlias() {
		a, _ := p.name("")
		f.alias = &a
	}
	if f.sub != nil && f.alias == nil {
		return f, errAt(f.name.pos, "a subquery in FROM needs a name: (SELECT ...) AS name")
	}
	return f, nil
}

// windowTVF parses TUMBLE(src, col, size), HOP(src, col, slide, size)
// and SESSION(src, col, gap), RisingWave's spelling, or with flink
// Flink's: TUMBLE(TABLE src, DESCRIPTOR(col), size), ... (CUMULATE is
// refused).
func (p *parser) windowTVF(f *fromItem, flink bool) error {
	t := p.peek()
	if !(t.is("tumble") || t.is("hop") || t.is("session") || t.is("cumulate")) || !p.peekAt(1).op("(") {
		return p.expected("TUMBLE(...), HOP(...) or SESSION(...) in TABLE(...)")
	}
	fn := strings.ToUpper(t.text)
	if fn == "CUMULATE" {
		return errAt(t.pos, "CUMULATE windows are not supported: use HOP (a sliding window) or TUMBLE")
	}
	p.next()
	p.next()
	f.win.pos = t.pos
	switch fn {
	case "TUMBLE":
		f.win.kind = winTumble
	case "HOP":
		f.win.kind = winHop
	default:
		f.win.kind = winSession
	}
	if a := p.peek(); a.kind == tIdent && p.peekAt(1).op("=") && p.peekAt(2).op(">") {
		// Flink's named arguments, DATA => TABLE src, ...
		return errAt(a.pos, "named arguments (%s => ...) are not supported: pass them in order, %s(TABLE src, DESCRIPTOR(time_col), ...)", strings.ToUpper(a.text), fn)
	}
	var err error
	if flink || p.peek().is("table") {
		if _, err := p.keyword("table", "TABLE and the source or view as the first argument of "+fn); err != nil {
			return err
		}
	}
	if f.name, err = p.name("the source or view name as the first argument of " + fn); err != nil {
		return err
	}
	f.win.input = f.name.name
	if fn == "SESSION" && p.peek().is("partition") {
		p.next()
		if _, err := p.keyword("by", "BY after PARTITION"); err != nil {
			return err
		}
		// PARTITION BY k, j or (k, j): unparenthesised, the list ends
		// before DESCRIPTOR or before the time column, the name followed
		// by the gap.
		paren := p.peek().op("(")
		if paren {
			p.next()
		}
		for {
			col, err := p.columnRef("a column after PARTITION BY")
			if err != nil {
				return err
			}
			f.win.partition = append(f.win.partition, col)
			if paren {
				if p.peek().op(",") {
					p.next()
					continue
				}
				if _, err := p.punct(")", "')' after PARTITION BY's columns"); err != nil {
					return err
				}
				break
			}
			if !p.peek().op(",") || p.peekAt(1).is("descriptor") || (p.peekAt(2).op(",") && p.peekAt(3).is("interval")) {
				break
			}
			p.next()
		}
	}
	if _, err := p.punct(",", "',' and the event-time column after the source of "+fn); err != nil {
		return err
	}
	descriptor := flink || p.peek().is("descriptor")
	if descriptor {
		if _, err := p.keyword("descriptor", "DESCRIPTOR(column) as the second argument of "+fn); err != nil {
			return err
		}
		if _, err := p.punct("(", "'(' after DESCRIPTOR"); err != nil {
			return err
		}
	}
	tc, err := p.name("the event-time column as the second argument of " + fn)
	if err != nil {
		return err
	}
	f.win.timeCol = &tc
	if descriptor {
		if _, err := p.punct(")", "')' after DESCRIPTOR's column"); err != nil {
			return err
		}
	}
	what := "the window size (INTERVAL ...)"
	if fn == "SESSION" {
		what = "the session gap (INTERVAL ...)"
	}
	if _, err := p.punct(",", "',' and "+what+" after the event-time column"); err != nil {
		return err
	}
	first, err := p.interval()
	if err != nil {
		return err
	}
	f.win.size = first
	if f.win.kind == winHop {
		if _, err := p.punct(",", "',' and the window size after HOP's slide"); err != nil {
			return err
		}
		f.win.slide, f.win.slidePos = first, first.pos
		if f.win.size, err = p.interval(); err != nil {
			return err
		}
	}
	if p.peek().op(",") && f.win.kind != winSession {
		return errAt(p.peek().pos, "%s's offset argument is not supported: windows start at multiples of their slide from the epoch", fn)
	}
	_, err = p.punct(")", "')' after the arguments of "+fn)
	return err
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
	"day": 86400e9, "days": 86400e9,
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
	length, unit := strings.TrimSpace(n.text), ""
	if f := strings.Fields(n.text); n.kind == tString && len(f) > 1 {
		// RisingWave's (PostgreSQL's) INTERVAL '10 MINUTES': the unit in
		// the string.
		if len(f) > 2 {
			return nil, errAt(n.pos, "INTERVAL %s: one length and one unit ('90 minutes', or INTERVAL '90' MINUTE)", n.describe())
		}
		length, unit = f[0], f[1]
	}
	v, err := strconv.ParseInt(length, 10, 64)
	if err != nil || v < 0 || (v == 0 && !zero) {
		what := "a positive integer"
		if zero {
			what = "a non-negative integer"
		}
		return nil, errAt(n.pos, "INTERVAL %s: the length must be %s", n.describe(), what)
	}
	if unit != "" {
		ns, ok := units[strings.ToLower(unit)]
		if !ok {
			return nil, errAt(n.pos, "INTERVAL %s: the unit must be MILLISECOND, SECOND, MINUTE, HOUR or DAY", n.describe())
		}
		p.next()
		iv.n, iv.unitNs = v, ns
		iv.text = "INTERVAL " + n.describe()
		return iv, nil
	}
	p.next()
	u := p.peek()
	ns, ok := units[strings.ToLower(u.text)]
	if u.kind != tIdent || u.quoted || !ok {
		return nil, p.expected("a unit (MILLISECOND, SECOND, MINUTE, HOUR or DAY) after INTERVAL " + n.describe())
	}
	p.next()
	iv.n, iv.unitNs = v, ns
	iv.text = "INTERVAL " + n.describe() + " " + strings.ToUpper(u.text)
	return iv, nil
}

// moreJoins reads the joins after s's first, JOIN x ON cond each: FROM a
// JOIN b ON p JOIN c ON q is FROM (a JOIN b ON p) JOIN c ON q, the join
// of the first two a subquery of their columns (a chain: the compiler
// fills its select list and points the outer query's columns of a and b
// at it, chainJoin), as Flink's multi-way join is the join of each input
// with the join of those before it (Nexmark's q23).
func (p *parser) moreJoins(s *selectStmt) error {
	for {
		t := p.peek()
		for _, kw := range []string{"left", "right", "full", "cross"} {
			if t.is(kw) {
				return errAt(t.pos, "%s JOIN is not supported: only inner joins (JOIN ... ON ...)", strings.ToUpper(kw))
			}
		}
		if t.is("inner") {
			p.next()
			if !p.peek().is("join") {
				return p.expected("JOIN after INNER")
			}
		}
		if !p.peek().is("join") {
			return nil
		}
		p.next()
		inner := &selectStmt{pos: s.from.name.pos, from: s.from, join: s.join, on: s.on, onPos: s.onPos, end: t.pos, chain: true}
		alias := ident{name: qualOf(&inner.from) + " JOIN " + qualOf(inner.join), pos: s.from.name.pos}
		s.from = fromItem{name: ident{pos: s.from.name.pos}, alias: &alias, sub: inner}
		j, err := p.fromItem()
		if err != nil {
			return err
		}
		s.join = &j
		on, err := p.keyword("on", "ON and the join condition")
		if err != nil {
			return err
		}
		s.onPos = on.pos
		if s.on, err = p.expr(); err != nil {
			return err
		}
	}
}
