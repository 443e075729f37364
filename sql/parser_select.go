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
