package sql

import (
	"fmt"
	"os"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/query"
)

// The compiler, a file per job: compile.go (the entry point, the
// compiler's state, statements), compile_source.go (sources, tables and
// windows), compile_expr.go (scopes and expressions), compile_select.go
// (SELECT over one relation: aggregates, group by, stateless queries),
// compile_join.go (static and window joins), compile_output.go (output
// columns and views). The parser: parser.go (statements, types, options),
// parser_select.go (SELECT, FROM, windows, intervals), parser_expr.go
// (expressions).

// Compile parses and checks a SQL text and compiles it into a Program.
// Every error is an *Error naming the line and column. Option values'
// ${NAME} placeholders are read from the environment (CompileEnv).
func Compile(text string) (*Program, error) {
	return CompileEnv(text, os.LookupEnv)
}

// CompileEnv is Compile with env (os.LookupEnv's signature) as the
// environment that ${NAME} placeholders are read from.
func CompileEnv(text string, env func(string) (string, bool)) (*Program, error) {
	stmts, err := parse(text)
	if e, ok := err.(*Error); ok {
		e.secrets = secretSpans(text)
		hideSyntax(e)
		return nil, e
	}
	p, err := compile(stmts, env)
	if e, ok := err.(*Error); ok {
		e.secrets = secretSpans(text)
	}
	return p, err
}

func compile(stmts []*stmt, env func(string) (string, bool)) (*Program, error) {
	if err := expandOptions(stmts, env); err != nil {
		return nil, err
	}
	c := &compiler{
		prog:   &Program{},
		names:  map[string]string{},
		rels:   map[string]*relation{},
		tables: map[string]*Table{},
	}
	c.timeCols = eventTimeUses(stmts)
	for _, s := range stmts {
		if err := c.statement(s); err != nil {
			return nil, err
		}
	}
	return c.prog, nil
}

// relCol is a visible column of a relation: its name in SQL, its attribute
// in the relation's schema and its declared type.
type relCol struct {
	name string
	attr string
	typ  sqlType
}

// relation is what FROM can name: a source or a view.
type relation struct {
	name     string
	schema   *query.Schema
	cols     []relCol
	source   *Source
	view     *Query
	unitNs   int64  // the event time's unit in ns; 0: row positions
	timeName string // the visible column that is attribute 0 ("" if none)
	line     int
}

type compiler struct {
	prog     *Program
	names    map[string]string // every statement's name -> what it is
	rels     map[string]*relation
	tables   map[string]*Table
	timeCols map[string]ident // source -> the first event-time column a window names on it
	nSelect  int
	inView   bool // compiling a CREATE VIEW
}

// eventTimeUses finds, per FROM name, the first time column named in a
// TUMBLE or HOP over it.
func eventTimeUses(stmts []*stmt) map[string]ident {
	m := map[string]ident{}
	for _, s := range stmts {
		if s.sel == nil {
			continue
		}
		for _, f := range []*fromItem{&s.sel.from, s.sel.join} {
			if f != nil && f.win.timeCol != nil {
				if _, ok := m[f.name.name]; !ok {
					m[f.name.name] = *f.win.timeCol
				}
			}
		}
	}
	return m
}

func (c *compiler) declare(id ident, what string) error {
	if prev, ok := c.names[id.name]; ok {
		return errAt(id.pos, "%s is already defined (as a %s)", id.name, prev)
	}
	c.names[id.name] = what
	return nil
}

func (c *compiler) statement(s *stmt) error {
	switch s.kind {
	case stSource:
		return c.source(s)
	case stTable:
		return c.table(s)
	}
	var name string
	switch s.kind {
	case stView, stSink:
		what := "view"
		if s.kind == stSink {
			what = "sink"
		}
		if err := c.declare(s.name, what); err != nil {
			return err
		}
		name = s.name.name
	default:
		for {
			c.nSelect++
			name = fmt.Sprintf("select%d", c.nSelect)
			if _, taken := c.names[name]; !taken {
				break
			}
		}
		c.names[name] = "query"
	}
	c.inView = s.kind == stView
	q, rel, err := c.selectQuery(name, s.sel)
	if err != nil {
		return err
	}
	q.Line = s.pos.line
	switch s.kind {
	case stView:
		q.View = true
		rel.line = s.pos.line
		c.rels[name] = rel
	case stSink:
		if q.Sink, err = sinkOptions(name, s, q.Columns); err != nil {
			return err
		}
	default:
		q.Sink = &Sink{Connector: "stdout", Format: "csv", Options: map[string]string{}}
	}
	c.prog.Queries = append(c.prog.Queries, q)
	return nil
}

// output refers to the output of view, a query compiled before.
func (c *compiler) output(view *Query) engine.Ref {
	for i, q := range c.prog.Queries {
		if q == view {
			return engine.Output(i)
		}
	}
	panic("sql: a view read before it is compiled")
}
