package sql

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/saber-hx/saber-hx/query"
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
		return nil, errAt(p.peek().pos, "expected a statement (CREATE SOURCE, CREATE TABLE, CREATE VIEW, CREATE SINK, INSERT INTO or SELECT), found the end of the input")
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
	"is": true, "in": true, "like": true, "between": true, "case": true, "null": true, "true": true, "false": true,
	"insert": true,
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
	case t.is("insert"):
		return p.insert()
	case t.is("create"):
		p.next()
		if p.peek().is("temporary") {
			p.next()
		}
		if p.peek().is("system") && p.peekAt(1).is("function") {
			p.next()
		}
		k := p.peek()
		switch {
		case k.is("function"):
			p.next()
			return p.createFunction(t.pos)
		case k.is("source"), k.is("stream"):
			p.next()
			return p.createSource(t.pos, true)
		case k.is("table"):
			p.next()
			return p.createSource(t.pos, false)
		case k.is("view"):
			p.next()
			return p.createView(t.pos, stView)
		case k.is("materialized") && p.peekAt(1).is("view"):
			p.next()
			p.next()
			return p.createView(t.pos, stView)
		case k.is("sink"):
			p.next()
			return p.createView(t.pos, stSink)
		}
		return nil, p.expected("SOURCE, TABLE, VIEW, SINK or FUNCTION after CREATE")
	}
	if err := p.refuseQueryStart(); err != nil {
		return nil, err
	}
	return nil, p.expected("a statement (CREATE SOURCE, CREATE TABLE, CREATE VIEW, CREATE SINK, INSERT INTO or SELECT)")
}

// refuseQueryStart refuses, where a query starts, Flink's WITH name AS
// (SELECT ...) and VALUES (...), ..., which were syntax errors at WITH
// and VALUES ("expected SELECT").
func (p *parser) refuseQueryStart() error {
	switch t := p.peek(); {
	case t.is("with") && p.peekAt(1).kind == tIdent:
		return errAt(t.pos, "WITH (a common table expression) is not supported: declare it as a view, CREATE VIEW name AS SELECT ..., before the query")
	case t.is("values"):
		return errAt(t.pos, "VALUES is not supported: a query reads a source, a table or a view (declare a table of the rows, connector = 'file')")
	}
	return nil
}

// createFunction parses Flink's CREATE FUNCTION [IF NOT EXISTS] name AS
// 'class' [LANGUAGE lang]: the name must be a built-in function's.
func (p *parser) createFunction(at pos) (*stmt, error) {
	s := &stmt{kind: stFunction, pos: at}
	if p.peek().is("if") && p.peekAt(1).is("not") && p.peekAt(2).is("exists") {
		p.next()
		p.next()
		p.next()
	}
	var err error
	if s.name, err = p.name("the function's name"); err != nil {
		return nil, err
	}
	for p.peek().op(".") { // catalog.db.name: the last part names it
		p.next()
		if s.name, err = p.name("the function's name"); err != nil {
			return nil, err
		}
	}
	if _, err := p.keyword("as", "AS 'class' after the function's name"); err != nil {
		return nil, err
	}
	if p.peek().kind != tString {
		return nil, p.expected("the function's class ('...') after AS")
	}
	p.next()
	if p.peek().is("language") {
		p.next()
		if _, err := p.name("the function's language"); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// insert parses INSERT INTO table [(col, ...)] SELECT ...
func (p *parser) insert() (*stmt, error) {
	s := &stmt{kind: stInsert, pos: p.next().pos}
	if _, err := p.keyword("into", "INTO after INSERT"); err != nil {
		return nil, err
	}
	var err error
	if s.name, err = p.name("the table's name after INSERT INTO"); err != nil {
		return nil, err
	}
	if p.peek().op("(") {
		p.next()
		for {
			c, err := p.name("a column of " + s.name.name)
			if err != nil {
				return nil, err
			}
			s.into = append(s.into, c)
			if p.peek().op(",") {
				p.next()
				continue
			}
			if _, err := p.punct(")", "',' or ')' after the column"); err != nil {
				return nil, err
			}
			break
		}
	}
	if err := p.refuseQueryStart(); err != nil {
		return nil, err
	}
	if !p.peek().is("select") {
		return nil, p.expected("SELECT after INSERT INTO " + s.name.name)
	}
	if s.sel, err = p.selectStmt(); err != nil {
		return nil, err
	}
	return s, nil
}

func (p *parser) createSource(at pos, source bool) (*stmt, error) {
	s := &stmt{kind: stSource, pos: at, table: !source}
	what := "table"
	if source {
		what = "source"
	}
	var err error
	if s.name, err = p.name("the " + what + "'s name"); err != nil {
		return nil, err
	}
	if _, err := p.punct("(", "'(' before the column list of "+s.name.name); err != nil {
		return nil, err
	}
	for {
		switch t := p.peek(); {
		case t.is("watermark"):
			if s.wm != nil {
				return nil, errAt(p.peek().pos, "a second WATERMARK: a source has one event time")
			}
			if s.wm, err = p.watermark(); err != nil {
				return nil, err
			}
		case t.is("primary") && p.peekAt(1).is("key"):
			// PRIMARY KEY (a, ...) NOT ENFORCED: accepted, and ignored
			// (nothing is upserted).
			p.next()
			p.next()
			if _, err := p.punct("(", "'(' and the key's columns after PRIMARY KEY"); err != nil {
				return nil, err
			}
			for {
				if _, err := p.name("a column of the key"); err != nil {
					return nil, err
				}
				if !p.peek().op(",") {
					break
				}
				p.next()
			}
			if _, err := p.punct(")", "',' or ')' after the key's column"); err != nil {
				return nil, err
			}
			if _, err := p.keyword("not", "NOT ENFORCED after PRIMARY KEY (...): a key is not checked"); err != nil {
				return nil, err
			}
			if _, err := p.keyword("enforced", "ENFORCED after NOT"); err != nil {
				return nil, err
			}
		default:
			c, err := p.column()
			if err != nil {
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
	if t := p.peek(); t.is("partitioned") {
		if source {
			return nil, errAt(t.pos, "source %s: PARTITIONED BY is for a filesystem sink table (CREATE TABLE ... PARTITIONED BY (...) WITH ('connector' = 'filesystem', ...)), not a source", s.name.name)
		}
		p.next()
		s.partPos = t.pos
		if _, err := p.keyword("by", "BY after PARTITIONED"); err != nil {
			return nil, err
		}
		if _, err := p.punct("(", "'(' and the partition columns after PARTITIONED BY"); err != nil {
			return nil, err
		}
		for {
			c, err := p.name("a partition column")
			if err != nil {
				return nil, err
			}
			s.partitionBy = append(s.partitionBy, c)
			if !p.peek().op(",") {
				break
			}
			p.next()
		}
		if _, err := p.punct(")", "',' or ')' after the partition column"); err != nil {
			return nil, err
		}
	}
	w, err := p.keyword("with", "WITH (connector = ...) after the column list of "+s.name.name)
	if err != nil {
		return nil, err
	}
	s.withPos = w.pos
	s.opts, err = p.options()
	return s, err
}

// column parses one column: name type [NOT NULL | NULL], or name AS
// PROCTIME().
func (p *parser) column() (colDef, error) {
	var c colDef
	var err error
	if c.name, err = p.name("a column name"); err != nil {
		return c, err
	}
	if p.peek().is("as") {
		p.next()
		t := p.peek()
		if t.is("proctime") && p.peekAt(1).op("(") && p.peekAt(2).op(")") {
			p.next()
			p.next()
			p.next()
			c.proctime, c.typ, c.typPos, c.notNull = true, sqlType{kind: tyTimestamp, name: "TIMESTAMP_LTZ(3)"}, t.pos, true
			return c, nil
		}
		return c, errAt(t.pos, "a computed column (%s AS ...) can only be PROCTIME() for now: compute the value in a view", c.name.name)
	}
	c.typPos = p.peek().pos
	if c.typ, err = p.typ(); err != nil {
		return c, err
	}
	switch t := p.peek(); {
	case t.is("not") && p.peekAt(1).is("null"):
		p.next()
		p.next()
		c.notNull = true
	case t.is("null"):
		p.next()
	case t.is("metadata"):
		return c, errAt(t.pos, "METADATA columns are not supported: declare the value as a column of the records")
	}
	return c, nil
}

const typesHint = "a type (INT, BIGINT, DOUBLE, DECIMAL(p, s), VARCHAR, TIMESTAMP(3), BOOLEAN, UUID, BYTES(n), ENUM(...), ...)"

// typeParams parses an optional (n[, m]) after a type: -1 where absent.
func (p *parser) typeParams(typ string, two bool) (n, m int, err error) {
	n, m = -1, -1
	if !p.peek().op("(") {
		return n, m, nil
	}
	p.next()
	num := func() (int, error) {
		t := p.peek()
		if t.kind != tInt {
			return 0, p.expected("a number in " + typ + "(...)")
		}
		v, err := strconv.Atoi(t.text)
		if err != nil || v > 1<<20 {
			return 0, errAt(t.pos, "%s(%s): the number is too large", typ, t.text)
		}
		p.next()
		return v, nil
	}
	if n, err = num(); err != nil {
		return n, m, err
	}
	if two && p.peek().op(",") {
		p.next()
		if m, err = num(); err != nil {
			return n, m, err
		}
	}
	_, err = p.punct(")", "')' after "+typ+"'s size")
	return n, m, err
}

func (p *parser) typ() (sqlType, error) {
	t := p.peek()
	if t.kind != tIdent || t.quoted {
		return sqlType{}, p.expected(typesHint)
	}
	word := strings.ToLower(t.text)
	switch word {
	case "int", "integer", "smallint", "tinyint":
		p.next()
		ty := sqlType{kind: tyInt}
		if word == "smallint" || word == "tinyint" {
			ty.name = strings.ToUpper(word)
		}
		return ty, nil
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
	case "decimal", "numeric", "dec":
		p.next()
		n, m, err := p.typeParams(strings.ToUpper(word), true)
		if err != nil {
			return sqlType{}, err
		}
		name := "DECIMAL"
		switch {
		case m >= 0:
			name = fmt.Sprintf("DECIMAL(%d, %d)", n, m)
		case n >= 0:
			name = fmt.Sprintf("DECIMAL(%d)", n)
		}
		// Without a scale it is 0, as SQL's DECIMAL(p) and Flink's
		// DECIMAL (10, 0) have.
		return sqlType{kind: tyDouble, name: name, decimal: true, scale: max(m, 0)}, nil
	case "varchar", "string", "text", "character", "char":
		p.next()
		if word == "character" || word == "char" {
			if !p.peek().is("varying") {
				return sqlType{}, errAt(t.pos, "%s(n) pads its strings with spaces, which saber-hx does not: declare VARCHAR", strings.ToUpper(word))
			}
			p.next()
		}
		ty := sqlType{kind: tyString}
		if word != "string" && word != "text" {
			n, _, err := p.typeParams("VARCHAR", false)
			if err != nil {
				return sqlType{}, err
			}
			if n >= 0 {
				ty.name = fmt.Sprintf("VARCHAR(%d)", n)
			}
		}
		return ty, nil
	case "timestamp", "timestamp_ltz", "timestamptz":
		p.next()
		prec := 3
		if word != "timestamptz" {
			n, _, err := p.typeParams("TIMESTAMP", false)
			if err != nil {
				return sqlType{}, err
			}
			if n > 9 {
				return sqlType{}, errAt(t.pos, "TIMESTAMP(%d): the precision is 0 to 9", n)
			}
			if n >= 0 {
				prec = n
			}
		}
		ltz := word != "timestamp"
		switch {
		case p.peek().is("without") && p.peekAt(1).is("time") && p.peekAt(2).is("zone"):
			p.next()
			p.next()
			p.next()
		case p.peek().is("with") && p.peekAt(1).is("local") && p.peekAt(2).is("time") && p.peekAt(3).is("zone"):
			p.next()
			p.next()
			p.next()
			p.next()
			ltz = true
		case p.peek().is("with") && p.peekAt(1).is("time") && p.peekAt(2).is("zone"):
			p.next()
			p.next()
			p.next()
			ltz = true
		}
		ty := sqlType{kind: tyTimestamp, unit: query.TimestampUnit(prec)}
		switch {
		case ltz:
			ty.name = fmt.Sprintf("TIMESTAMP_LTZ(%d)", prec)
		case prec != 3:
			ty.name = fmt.Sprintf("TIMESTAMP(%d)", prec)
		}
		return ty, nil
	case "boolean", "bool":
		p.next()
		return sqlType{kind: tyBool}, nil
	case "date", "time":
		return sqlType{}, errAt(t.pos, "%s is not supported yet: declare TIMESTAMP(3) (a date alone reads as its midnight, UTC)", strings.ToUpper(word))
	case "row", "array", "map", "multiset":
		return sqlType{}, errAt(t.pos, "%s types are not supported: declare each field as a column of its own", strings.ToUpper(word))
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
	return sqlType{}, p.expected(typesHint)
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
			if secretOption(o.key) { // what was found may be the password
				return nil, errAt(p.peek().pos, "expected '=' after the option %s", o.key)
			}
			return nil, err
		}
		v := p.peek()
		switch v.kind {
		case tString, tInt, tIdent:
			o.val, o.valPos = v.text, v.pos
			p.next()
		default:
			if secretOption(o.key) {
				return nil, errAt(v.pos, "expected the value of option %s", o.key)
			}
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
	if err := p.refuseQueryStart(); err != nil {
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
