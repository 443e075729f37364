package sql

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/query"
)

// The compiler, a file per job: compile.go (the entry point, the
// compiler's state, statements), compile_source.go (sources, tables and
// windows), compile_expr.go (scopes and expressions), compile_select.go
// (SELECT: its input, stateless queries), compile_agg.go (aggregations:
// groups, aggregates, COUNT(DISTINCT), the select list over them),
// compile_join.go (static and window joins), compile_output.go (output
// columns and views), compile_sink.go (sink tables and INSERT INTO). The
// parser: parser.go (statements, types, options), parser_select.go
// (SELECT, FROM, windows, intervals), parser_expr.go (expressions).

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
	if err := renameLegacyOptions(stmts); err != nil {
		return nil, err
	}
	c := &compiler{
		prog:     &Program{},
		names:    map[string]string{},
		rels:     map[string]*relation{},
		tables:   map[string]*Table{},
		sinks:    map[string]*stmt{},
		inserted: map[string]int{},
		targets:  map[string]bool{},
	}
	c.timeCols = eventTimeUses(stmts)
	c.procSlots = procTimeSlots(stmts)
	c.lookups = map[string]bool{}
	eachSelect(stmts, func(_ *stmt, sel *selectStmt) {
		if sel.join != nil && sel.join.asOf != nil {
			c.lookups[sel.join.name.name] = true
		}
	})
	c.grouped = groupedColumns(stmts)
	for _, s := range stmts {
		if s.kind == stInsert {
			c.targets[s.name.name] = true
		}
	}
	for _, s := range stmts {
		if err := c.statement(s); err != nil {
			return nil, err
		}
	}
	return c.prog, nil
}

// relCol is a visible column of a relation: its name in SQL, its attribute
// in the relation's schema and its declared type (kind 0 where the type
// is the attribute's: a computed value).
type relCol struct {
	name string
	attr string
	typ  sqlType
}

// relation is what FROM can name: a source or a view (or a subquery).
type relation struct {
	name     string
	schema   *query.Schema
	cols     []relCol
	source   *Source
	view     *Query
	unitNs   int64  // the event time's unit in ns; 0: row positions
	timeName string // the visible column that is attribute 0 ("" if none)
	line     int
	// slide is, for the output of an aggregation in a time window (and
	// the views that keep its time), the window's slide: its rows come
	// window by window, their times the windows' starts, multiples of it.
	// An aggregation over it grouping by its time, or a join of two such
	// on their times, takes a tumbling window of the slide (each holds the
	// rows of one window). 0: none.
	slide int64
	// times are visible columns other than timeName whose values are
	// attribute 0's (window_start AS starttime beside window_start).
	times []string
	// size is, beside slide, the size of the windows the rows come from
	// (a TUMBLE's is its slide), and ends are the visible columns whose
	// values are attribute 0 plus size (window_end AS endtime): an
	// interval join reads them (compile_interval.go).
	size int64
	ends []string
	// procTime is the visible column that is the processing time a view
	// added to a source (CREATE VIEW v AS SELECT *, PROCTIME() AS p FROM
	// src): a window over it reads a part whose time it is
	// (compile_proctime.go).
	procTime string
	// delay is the WATERMARK delay (in the event time's unit) of the
	// source whose tuples a view outputs as they come, filtered or
	// projected: a window over it waits that delay too, as one over the
	// source does (watermarkDelay).
	delay int64
	// pairs says its rows are a regular join's pairs, or those passed on
	// from them: their attribute 0 is no event time (Flink's regular join
	// outputs no time attribute), and their order is their arrivals'.
	pairs bool
}

// watermarkDelay is the delay of r's event time's watermark: its source's
// WATERMARK delay, or that of the source a view passes the tuples of on.
func (r *relation) watermarkDelay() int64 {
	if r.source != nil {
		return r.source.WatermarkDelay
	}
	return r.delay
}

// inputName is the source that a relation which is no view reads.
func (r *relation) inputName() string {
	if r.source != nil {
		return r.source.Name
	}
	return r.name
}

type compiler struct {
	prog     *Program
	names    map[string]string // every statement's name -> what it is
	rels     map[string]*relation
	tables   map[string]*Table
	sinks    map[string]*stmt // sink tables (CREATE TABLE ... WITH a sink's connector)
	inserted map[string]int   // sink table -> the line of the INSERT INTO that writes it
	targets  map[string]bool  // the tables some INSERT INTO names
	timeCols map[string]ident // source -> the first event-time column a window names on it
	// procSlots: source -> the processing-time column that a view adds
	// to it (SELECT *, PROCTIME() AS p FROM source): the source lays out
	// a slot for it.
	procSlots map[string]ident
	// lookups: the tables some query joins FOR SYSTEM_TIME AS OF (a
	// CREATE TABLE of Flink's 'filesystem' connector is then static).
	lookups map[string]bool
	// grouped: source -> the columns that queries over it group by
	// (groupedColumns): its dictionary-encoded columns where VARCHAR.
	grouped map[string][]string
	nSelect int
	parts   map[string]int // query -> its parts so far
}

// eventTimeUses finds, per FROM name, the first time column named in a
// TUMBLE or HOP over it (in FROM, or GROUP BY TUMBLE(col, ...)).
func eventTimeUses(stmts []*stmt) map[string]ident {
	m := map[string]ident{}
	var walk func(sel *selectStmt)
	walk = func(sel *selectStmt) {
		if sel == nil {
			return
		}
		for _, f := range []*fromItem{&sel.from, sel.join} {
			if f == nil {
				continue
			}
			walk(f.sub)
			if f.win.timeCol != nil {
				if _, ok := m[f.name.name]; !ok {
					m[f.name.name] = *f.win.timeCol
				}
			}
		}
		for _, g := range sel.groupBy {
			if g.kind == eFunc && groupWindows[g.name] && len(g.args) > 0 && g.args[0].kind == eCol && sel.from.sub == nil {
				if _, ok := m[sel.from.name.name]; !ok {
					m[sel.from.name.name] = ident{name: g.args[0].name, pos: g.args[0].pos}
				}
			}
		}
	}
	for _, s := range stmts {
		walk(s.sel)
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
		if !s.table {
			return c.source(s)
		}
		conn := strings.ToLower(optionValue(s.opts, "connector"))
		sinkTable := c.targets[s.name.name] || conn == "blackhole" || conn == "print" || conn == "stdout" || conn == "redis"
		if len(s.partitionBy) > 0 && !sinkTable {
			return errAt(s.partPos, "table %s: PARTITIONED BY is for a filesystem sink table that INSERT INTO writes; %s is read (a source or a static table), and saber-hx reads no partitioned directories", s.name.name, s.name.name)
		}
		switch {
		case sinkTable:
			return c.sinkTable(s)
		case conn == "file" || (conn == "filesystem" && c.lookups[s.name.name]):
			return c.table(s)
		}
		return c.source(s)
	case stInsert:
		return c.insert(s)
	case stFunction:
		// Flink declares a UDF's class; saber-hx binds the name to a
		// function it has built in (Nexmark's COUNT_CHAR) or that the
		// embedding Go program registered (query.RegisterFunc).
		name := strings.ToLower(s.name.name)
		if a, ok := funcAliases[name]; ok {
			name = a
		}
		if _, ok := query.Funcs[name]; !ok {
			return errAt(s.name.pos, "CREATE FUNCTION %s: no function of that name: the built-in ones, and those a Go program registers (query.RegisterFunc), are %s", s.name.name, funcNames())
		}
		return nil
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
		name = c.selectName()
	}
	if done, err := c.procTimeView(s); done || err != nil {
		return err
	}
	q, rel, err := c.selectQuery(name, s.sel, s.kind == stView)
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

// selectName is the next free name of a plain SELECT: select1, ...
func (c *compiler) selectName() string {
	for {
		c.nSelect++
		name := fmt.Sprintf("select%d", c.nSelect)
		if _, taken := c.names[name]; !taken {
			c.names[name] = "query"
			return name
		}
	}
}

// addPart appends q, a part of the query called of, to the program, and
// returns it: its name is of$1, of$2, ... Where of already has a part
// that computes what q does (the same input, query and output: Nexmark
// q5's two subqueries count the same bids in the same windows), it
// returns that one, which then feeds both, as Flink and RisingWave reuse
// such a sub-plan.
func (c *compiler) addPart(q *Query, of string, line int) *Query {
	if len(q.Columns) == 0 || slices.ContainsFunc(q.Columns, func(oc OutputColumn) bool { return oc.Attr < 0 }) {
		// a part's columns are its output tuple's attributes
		q.Columns = q.Columns[:0]
		for i, a := range q.Output.Attrs {
			q.Columns = append(q.Columns, OutputColumn{Name: a.Name, Kind: Attribute, Index: i, Attr: i, Type: typeText(a, sqlType{})})
		}
	}
	for _, p := range c.prog.Queries {
		if p.Part == of && samePart(p, q) {
			return p
		}
	}
	if c.parts == nil {
		c.parts = map[string]int{}
	}
	c.parts[of]++
	q.Name, q.Part, q.Line = fmt.Sprintf("%s$%d", of, c.parts[of]), of, line
	if q.Spec.Query != nil {
		q.Spec.Query.Name = q.Name
	}
	if q.Spec.Join != nil {
		q.Spec.Join.Name = q.Name
	}
	c.prog.Queries = append(c.prog.Queries, q)
	return q
}

// samePart says whether parts a and b compute the same output from the
// same input: their queries, names aside, equal value for value (a UDF's
// function never does: functions are never equal). Window joins are not
// shared (their relations name the part before it is added).
func samePart(a, b *Query) bool {
	if a.Spec.Join != nil || b.Spec.Join != nil || a.Input != b.Input || a.InputRight != b.InputRight || a.From != b.From || a.FromRight != b.FromRight ||
		a.Spec.Upstream != b.Spec.Upstream || a.Spec.UpstreamRight != b.Spec.UpstreamRight || a.Sink != nil || b.Sink != nil ||
		a.Spec.Tuples != nil || b.Spec.Tuples != nil || a.Spec.Windows != nil || b.Spec.Windows != nil || a.Spec.Encoded != nil || b.Spec.Encoded != nil {
		return false
	}
	unnamed := func(q *Query) *query.Query {
		if q.Spec.Query == nil {
			return nil
		}
		c := *q.Spec.Query
		c.Name = ""
		return &c
	}
	return reflect.DeepEqual(unnamed(a), unnamed(b)) && reflect.DeepEqual(a.Output, b.Output) && reflect.DeepEqual(a.Columns, b.Columns)
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

// optionValue is the value of option key in opts ("" where absent).
func optionValue(opts []option, key string) string {
	for _, o := range opts {
		if o.key == key {
			return o.val
		}
	}
	return ""
}
