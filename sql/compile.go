package sql

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/saber-hx/saber-hx/query"
)

// Compile parses and checks a SQL text and compiles it into a Program.
// Every error is an *Error naming the line and column.
func Compile(text string) (*Program, error) {
	stmts, err := parse(text)
	if err != nil {
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
		if q.Sink, err = sinkOptions(name, s); err != nil {
			return err
		}
	default:
		q.Sink = &Sink{Connector: "stdout", Format: "csv", Options: map[string]string{}}
	}
	c.prog.Queries = append(c.prog.Queries, q)
	return nil
}

// --- sources and tables -----------------------------------------------------

func columnsOf(s *stmt, what string) error {
	seen := map[string]bool{}
	for _, col := range s.cols {
		if seen[col.name.name] {
			return errAt(col.name.pos, "column %s declared twice in %s %s", col.name.name, what, s.name.name)
		}
		seen[col.name.name] = true
	}
	return nil
}

func (c *compiler) source(s *stmt) error {
	if err := c.declare(s.name, "source"); err != nil {
		return err
	}
	if err := columnsOf(s, "source"); err != nil {
		return err
	}
	src := &Source{Name: s.name.name, Line: s.pos.line}
	unitNs, tupleSize, err := sourceOptions(src, s)
	if err != nil {
		return err
	}
	// The event time: WATERMARK FOR's column, else the first column
	// (binary: the layout is as declared, and the model reads the event
	// time at offset 0); for other formats, else the column a window over
	// the source names, else the first BIGINT.
	timeIdx := -1
	var why string
	find := func(id ident) (int, error) {
		for i, col := range s.cols {
			if col.name.name == id.name {
				return i, nil
			}
		}
		return -1, errAt(id.pos, "no column %s in source %s", id.name, s.name.name)
	}
	if wm := s.wm; wm != nil {
		if timeIdx, err = find(wm.col); err != nil {
			return err
		}
		if wm.of.name != wm.col.name {
			return errAt(wm.of.pos, "the watermark must be %s or %s - INTERVAL '...' unit", wm.col.name, wm.col.name)
		}
		src.Watermark = true
		if wm.delay != nil && wm.delay.n != 0 {
			d, err := toUnits(wm.delay, unitNs, "the watermark delay")
			if err != nil {
				return err
			}
			src.WatermarkDelay = d
			return errAt(wm.delayP, "a watermark delay (%s) is not supported yet: the engine's watermark is the largest event time seen, so tuples later than that are late (write WATERMARK FOR %s AS %s)", wm.delay.text, wm.col.name, wm.col.name)
		}
		why = "its WATERMARK"
	} else if id, ok := c.timeCols[s.name.name]; ok && src.Format != "binary" {
		for i, col := range s.cols {
			if col.name.name == id.name {
				timeIdx = i
			}
		}
		why = fmt.Sprintf("the window at line %d", id.pos.line)
	}
	if timeIdx < 0 {
		for i, col := range s.cols {
			if col.typ.kind == tyBigint && (src.Format != "binary" || i == 0) {
				timeIdx, why = i, "its first BIGINT column"
				break
			}
		}
	}
	if timeIdx < 0 {
		return errAt(s.cols[0].name.pos, "source %s has no event time: its first column must be a BIGINT (or name one in WATERMARK FOR)", src.Name)
	}
	tc := s.cols[timeIdx]
	if tc.typ.kind != tyBigint {
		return errAt(tc.name.pos, "the event time %s of source %s (from %s) must be a BIGINT, not %s", tc.name.name, src.Name, why, tc.typ)
	}
	if src.Format == "binary" && timeIdx != 0 {
		return errAt(tc.name.pos, "the event time %s of binary source %s (from %s) must be its first column: the query model reads the event time as an int64 at offset 0", tc.name.name, src.Name, why)
	}
	src.EventTime = tc.name.name
	order := make([]int, 0, len(s.cols))
	order = append(order, timeIdx)
	for i := range s.cols {
		if i != timeIdx {
			order = append(order, i)
		}
	}
	if src.Format != "binary" {
		rest := order[1:]
		slices.SortStableFunc(rest, func(a, b int) int {
			_, sa := s.cols[a].typ.attrType()
			_, sb := s.cols[b].typ.attrType()
			return sb - sa
		})
	}
	attrs := make([]query.Attribute, len(s.cols))
	off := 0
	for _, i := range order {
		t, size := s.cols[i].typ.attrType()
		attrs[i] = query.Attribute{Name: s.cols[i].name.name, Type: t, Offset: off, Size: size}
		off += size
	}
	if tupleSize == 0 {
		tupleSize = int64(off)
		if src.Format != "binary" {
			tupleSize = int64((off + 7) / 8 * 8)
		}
	} else if tupleSize < int64(off) {
		o, _ := newOptions("", s.opts, s.withPos).get("tuple_size")
		p := o.valPos
		if o.key == "" { // a generator's size
			p = s.name.pos
		}
		return errAt(p, "tuple_size %d is smaller than the %d bytes of the columns of %s", tupleSize, off, src.Name)
	}
	ordered := make([]query.Attribute, len(order))
	for k, i := range order {
		ordered[k] = attrs[i]
	}
	schema, err := query.NewSchema(int(tupleSize), ordered...)
	if err != nil {
		return errAt(s.name.pos, "source %s: %v", src.Name, err)
	}
	src.Schema = schema
	rel := &relation{name: src.Name, schema: schema, source: src, unitNs: unitNs, timeName: src.EventTime, line: src.Line}
	for i, col := range s.cols {
		src.Columns = append(src.Columns, Column{Name: col.name.name, Kind: Kind(col.typ.kind), Type: col.typ.String(), Labels: col.typ.labels, Attr: attrs[i]})
		rel.cols = append(rel.cols, relCol{name: col.name.name, attr: col.name.name, typ: col.typ})
	}
	if src.Connector == "generator" {
		if err := checkGenerator(src, s); err != nil {
			return err
		}
	}
	c.prog.Sources = append(c.prog.Sources, src)
	c.rels[src.Name] = rel
	return nil
}

func (c *compiler) table(s *stmt) error {
	if err := c.declare(s.name, "table"); err != nil {
		return err
	}
	if err := columnsOf(s, "table"); err != nil {
		return err
	}
	t := &Table{Name: s.name.name, Line: s.pos.line}
	if err := tableOptions(t, s); err != nil {
		return err
	}
	off := 0
	for _, col := range s.cols {
		ty, size := col.typ.attrType()
		t.Columns = append(t.Columns, Column{Name: col.name.name, Kind: Kind(col.typ.kind), Type: col.typ.String(), Labels: col.typ.labels,
			Attr: query.Attribute{Name: col.name.name, Type: ty, Offset: off, Size: size}})
		t.types = append(t.types, col.typ)
		off += size
	}
	c.prog.Tables = append(c.prog.Tables, t)
	c.tables[t.Name] = t
	return nil
}

// toUnits converts iv into the unit of unitNs nanoseconds.
func toUnits(iv *interval, unitNs int64, what string) (int64, error) {
	hi, lo := bits.Mul64(uint64(iv.n), uint64(iv.unitNs))
	if hi != 0 || lo > 1<<63-1 {
		return 0, errAt(iv.pos, "%s %s is too long", what, iv.text)
	}
	ns := int64(lo)
	if ns%unitNs != 0 {
		return 0, errAt(iv.pos, "%s %s is not a whole number of the event time's unit (%s)", what, iv.text, unitName(unitNs))
	}
	return ns / unitNs, nil
}

func unitName(unitNs int64) string {
	for n, u := range timeUnits {
		if u == unitNs {
			return n
		}
	}
	return "?"
}

// --- windows ----------------------------------------------------------------

// window compiles f's window over rel; ok false when f has none.
func (c *compiler) window(f *fromItem, rel *relation) (query.Window, bool, error) {
	w := f.win
	if w.kind == winNone {
		return query.Window{}, false, nil
	}
	if w.kind == winRows {
		step := w.step
		if step == 0 {
			step = w.rows
		}
		if step > w.rows {
			return query.Window{}, false, errAt(w.slidePos, "SLIDE %d is larger than ROWS %d (valid: 0 < slide <= size)", step, w.rows)
		}
		return query.Window{Type: query.Rows, Size: w.rows, Slide: step}, true, nil
	}
	if w.timeCol != nil {
		if rel.timeName == "" || w.timeCol.name != rel.timeName {
			what := "source"
			if rel.source == nil {
				what = "view"
			}
			if rel.timeName == "" {
				return query.Window{}, false, errAt(w.timeCol.pos, "%s %s has no visible event-time column", what, rel.name)
			}
			return query.Window{}, false, errAt(w.timeCol.pos, "%s is not the event time of %s %s, which is %s (a stream has one event time)", w.timeCol.name, what, rel.name, rel.timeName)
		}
	}
	if rel.unitNs == 0 {
		return query.Window{}, false, errAt(w.pos, "%s's times are row positions (it is windowed by ROWS): a time window over it needs ROWS too", rel.name)
	}
	size, err := toUnits(w.size, rel.unitNs, "the window size")
	if err != nil {
		return query.Window{}, false, err
	}
	slide := size
	if w.slide != nil {
		if slide, err = toUnits(w.slide, rel.unitNs, "the window slide"); err != nil {
			return query.Window{}, false, err
		}
		if slide > size {
			return query.Window{}, false, errAt(w.slidePos, "the slide %s is larger than the size %s (valid: 0 < slide <= size)", w.slide.text, w.size.text)
		}
	}
	return query.Window{Type: query.Range, Size: size, Slide: slide}, true, nil
}

// --- scopes and expressions -------------------------------------------------

type side uint8

const (
	sideLeft  side = iota // the stream (or a join's left stream)
	sideRight             // a window join's right stream
	sideTable             // a static table's column
)

type scol struct {
	qual string
	col  relCol
	side side
	tcol int // sideTable: the table's column index
}

type scope struct {
	cols []scol
	// onCol, if set, is told of every column an expression uses (static
	// joins track the table's value column).
	onCol func(sc scol, n *node) (string, error)
}

func (sc *scope) resolve(n *node) (scol, error) {
	var found []scol
	for _, s := range sc.cols {
		if s.col.name == n.name && (n.qual == "" || n.qual == s.qual) {
			found = append(found, s)
		}
	}
	if len(found) == 0 && n.qual != "" {
		// a view of a join names its columns qual.name
		for _, s := range sc.cols {
			if s.col.name == n.qual+"."+n.name {
				found = append(found, s)
			}
		}
	}
	full := n.name
	if n.qual != "" {
		full = n.qual + "." + n.name
	}
	switch len(found) {
	case 0:
		var names []string
		for _, s := range sc.cols {
			names = append(names, s.qual+"."+s.col.name)
		}
		if n.qual != "" && !slices.ContainsFunc(sc.cols, func(s scol) bool { return s.qual == n.qual }) {
			return scol{}, errAt(n.pos, "unknown name %s in %s (the query reads %s)", n.qual, full, quals(sc))
		}
		return scol{}, errAt(n.pos, "unknown column %s (valid: %s)", full, strings.Join(names, ", "))
	case 1:
		return found[0], nil
	}
	return scol{}, errAt(n.pos, "column %s is ambiguous: it is in both %s and %s (qualify it)", full, found[0].qual, found[1].qual)
}

func quals(sc *scope) string {
	var q []string
	for _, s := range sc.cols {
		if !slices.Contains(q, s.qual) {
			q = append(q, s.qual)
		}
	}
	return strings.Join(q, " and ")
}

// val is a compiled expression with its type.
type val struct {
	e      query.Expr
	t      query.ValueType
	typ    sqlType // a plain column's declared type (kind 0 otherwise)
	isStr  bool    // a string literal (only comparable with an ENUM column)
	str    string
	isAggr bool
}

// exprCtx says what an expression may use: its columns (col) and
// aggregates (call; nil: none allowed, callErr says why).
type exprCtx struct {
	col     func(n *node) (val, error)
	call    func(n *node) (val, error)
	callErr string
}

func (c *compiler) expr(ctx *exprCtx, n *node) (val, error) {
	switch n.kind {
	case eCol:
		return ctx.col(n)
	case eInt:
		return val{e: query.Int(n.i), t: query.IntValue}, nil
	case eFloat:
		return val{e: query.Float(n.f), t: query.FloatValue}, nil
	case eString:
		return val{isStr: true, str: n.s}, nil
	case eCall:
		if ctx.call == nil {
			return val{}, errAt(n.pos, "%s", ctx.callErr)
		}
		return ctx.call(n)
	case eNeg:
		v, err := c.numeric(ctx, n.l)
		if err != nil {
			return val{}, err
		}
		return val{e: query.Mul(query.Int(-1), v.e), t: v.t}, nil
	case eNot:
		v, err := c.boolean(ctx, n.l, "NOT")
		if err != nil {
			return val{}, err
		}
		return val{e: negate(v.e), t: query.BoolValue}, nil
	}
	switch n.op {
	case "and", "or":
		l, err := c.boolean(ctx, n.l, strings.ToUpper(n.op))
		if err != nil {
			return val{}, err
		}
		r, err := c.boolean(ctx, n.r, strings.ToUpper(n.op))
		if err != nil {
			return val{}, err
		}
		if n.op == "and" {
			return val{e: flatten(l.e, r.e, true), t: query.BoolValue}, nil
		}
		return val{e: flatten(l.e, r.e, false), t: query.BoolValue}, nil
	case "+", "-", "*", "/":
		l, err := c.numeric(ctx, n.l)
		if err != nil {
			return val{}, err
		}
		r, err := c.numeric(ctx, n.r)
		if err != nil {
			return val{}, err
		}
		t := query.IntValue
		if l.t == query.FloatValue || r.t == query.FloatValue {
			t = query.FloatValue
		}
		op := map[string]query.ArithOp{"+": query.OpAdd, "-": query.OpSub, "*": query.OpMul, "/": query.OpDiv}[n.op]
		return val{e: query.Arith{Op: op, L: l.e, R: r.e}, t: t}, nil
	}
	// a comparison
	l, err := c.expr(ctx, n.l)
	if err != nil {
		return val{}, err
	}
	r, err := c.expr(ctx, n.r)
	if err != nil {
		return val{}, err
	}
	if l, err = enumCode(l, r, n.l); err != nil {
		return val{}, err
	}
	if r, err = enumCode(r, l, n.r); err != nil {
		return val{}, err
	}
	if err := isNumber(l, n.l); err != nil {
		return val{}, err
	}
	if err := isNumber(r, n.r); err != nil {
		return val{}, err
	}
	op := map[string]query.CmpOp{"=": query.Eq, "!=": query.Ne, "<": query.Lt, "<=": query.Le, ">": query.Gt, ">=": query.Ge}[n.op]
	return val{e: query.Cmp(l.e, op, r.e), t: query.BoolValue}, nil
}

// enumCode turns the string literal v, compared with the ENUM column
// other, into the label's code.
func enumCode(v, other val, at *node) (val, error) {
	if !v.isStr {
		return v, nil
	}
	if other.typ.kind != tyEnum {
		return val{}, errAt(at.pos, "a string ('%s') can only be compared with an ENUM column", v.str)
	}
	i := slices.Index(other.typ.labels, v.str)
	if i < 0 {
		return val{}, errAt(at.pos, "'%s' is not a label of the ENUM (valid: %s)", v.str, strings.Join(other.typ.labels, ", "))
	}
	return val{e: query.Int(int64(i)), t: query.IntValue}, nil
}

func isNumber(v val, at *node) error {
	switch {
	case v.isStr:
		return errAt(at.pos, "a string ('%s') is not a number: strings only compare with ENUM columns", v.str)
	case v.t == query.BoolValue:
		return errAt(at.pos, "a condition is not a number")
	case v.t == query.BytesValue:
		return errAt(at.pos, "%s is %s, not a number", exprText(at), v.typ)
	}
	return nil
}

func (c *compiler) numeric(ctx *exprCtx, n *node) (val, error) {
	v, err := c.expr(ctx, n)
	if err != nil {
		return val{}, err
	}
	return v, isNumber(v, n)
}

func (c *compiler) boolean(ctx *exprCtx, n *node, op string) (val, error) {
	v, err := c.expr(ctx, n)
	if err != nil {
		return val{}, err
	}
	if v.t != query.BoolValue {
		return val{}, errAt(n.pos, "%s needs a condition (a comparison), not a value", op)
	}
	return v, nil
}

func flatten(l, r query.Expr, and bool) query.Expr {
	var terms []query.Expr
	for _, e := range []query.Expr{l, r} {
		switch t := e.(type) {
		case query.AndExpr:
			if and {
				terms = append(terms, t.Terms...)
				continue
			}
		case query.OrExpr:
			if !and {
				terms = append(terms, t.Terms...)
				continue
			}
		}
		terms = append(terms, e)
	}
	if and {
		return query.And(terms...)
	}
	return query.Or(terms...)
}

// negate is NOT e: the model has no NOT, so it is pushed down to the
// comparisons (De Morgan). For floats, NOT (x < y) becomes x >= y, which
// differs for NaN only.
func negate(e query.Expr) query.Expr {
	switch t := e.(type) {
	case query.Compare:
		op := map[query.CmpOp]query.CmpOp{query.Eq: query.Ne, query.Ne: query.Eq, query.Lt: query.Ge, query.Ge: query.Lt, query.Le: query.Gt, query.Gt: query.Le}[t.Op]
		return query.Cmp(t.L, op, t.R)
	case query.AndExpr:
		terms := make([]query.Expr, len(t.Terms))
		for i, x := range t.Terms {
			terms[i] = negate(x)
		}
		return query.Or(terms...)
	case query.OrExpr:
		terms := make([]query.Expr, len(t.Terms))
		for i, x := range t.Terms {
			terms[i] = negate(x)
		}
		return query.And(terms...)
	}
	panic(fmt.Sprintf("sql: negate of %T", e))
}

func colVal(s scol) val {
	t, _ := s.col.typ.attrType()
	return val{e: query.C(s.col.attr), t: t.Value(), typ: s.col.typ}
}

func hasCall(n *node) bool {
	if n == nil {
		return false
	}
	return n.kind == eCall || hasCall(n.l) || hasCall(n.r)
}

// --- SELECT -----------------------------------------------------------------

func (c *compiler) fromRel(f *fromItem) (*relation, error) {
	if rel, ok := c.rels[f.name.name]; ok {
		return rel, nil
	}
	if _, ok := c.tables[f.name.name]; ok {
		return nil, errAt(f.name.pos, "%s is a table: a query reads a stream (a source or a view) and can JOIN a table", f.name.name)
	}
	if what, ok := c.names[f.name.name]; ok {
		return nil, errAt(f.name.pos, "%s is a %s: FROM reads a source or a view", f.name.name, what)
	}
	return nil, errAt(f.name.pos, "unknown source or view %s (define it above with CREATE SOURCE or CREATE VIEW)", f.name.name)
}

func qualOf(f *fromItem) string {
	if f.alias != nil {
		return f.alias.name
	}
	return f.name.name
}

func streamScope(rel *relation, qual string, sd side, prefix string) []scol {
	out := make([]scol, len(rel.cols))
	for i, col := range rel.cols {
		col.attr = prefix + col.attr
		out[i] = scol{qual: qual, col: col, side: sd}
	}
	return out
}

func (c *compiler) selectQuery(name string, sel *selectStmt) (*Query, *relation, error) {
	rel, err := c.fromRel(&sel.from)
	if err != nil {
		return nil, nil, err
	}
	q := &Query{Name: name}
	if rel.view != nil {
		q.Spec.From = rel.name
	} else {
		q.Input = rel.name
	}
	if sel.join != nil {
		if t, ok := c.tables[sel.join.name.name]; ok {
			return c.staticJoin(q, sel, rel, t)
		}
		return c.windowJoin(q, sel, rel)
	}
	sc := &scope{cols: streamScope(rel, qualOf(&sel.from), sideLeft, "")}
	return c.single(q, sel, rel, sc, nil)
}

// staticJoin compiles FROM stream JOIN table ON stream.k = table.k.
func (c *compiler) staticJoin(q *Query, sel *selectStmt, rel *relation, t *Table) (*Query, *relation, error) {
	j := sel.join
	if j.win.kind != winNone {
		return nil, nil, errAt(j.win.pos, "table %s is static: it takes no window", t.Name)
	}
	tq := qualOf(j)
	sq := qualOf(&sel.from)
	if tq == sq {
		return nil, nil, errAt(j.name.pos, "the stream and the table are both called %s: give one an alias", tq)
	}
	sc := &scope{cols: streamScope(rel, sq, sideLeft, "")}
	for i, col := range t.Columns {
		sc.cols = append(sc.cols, scol{qual: tq, col: relCol{name: col.Name, attr: col.Name, typ: t.types[i]}, side: sideTable, tcol: i})
	}
	// ON stream.col = table.col
	on := sel.on
	if on.kind != eBinary || on.op != "=" || on.l.kind != eCol || on.r.kind != eCol {
		return nil, nil, errAt(on.pos, "a join with table %s needs ON stream.column = %s.column (one equality of a stream column with a table column)", t.Name, tq)
	}
	a, err := sc.resolve(on.l)
	if err != nil {
		return nil, nil, err
	}
	b, err := sc.resolve(on.r)
	if err != nil {
		return nil, nil, err
	}
	if (a.side == sideTable) == (b.side == sideTable) {
		return nil, nil, errAt(on.pos, "ON must compare a column of the stream with a column of table %s", t.Name)
	}
	if a.side == sideTable {
		a, b = b, a
	}
	for _, s := range []scol{a, b} {
		if !s.col.typ.isBytes() {
			return nil, nil, errAt(on.pos, "the join key %s.%s is %s: a join with a table matches UUID or BYTES(n) columns only, for now", s.qual, s.col.name, s.col.typ)
		}
	}
	if a.col.typ.size != b.col.typ.size {
		return nil, nil, errAt(on.pos, "the join keys differ in size: %s.%s is %s, %s.%s is %s", a.qual, a.col.name, a.col.typ, b.qual, b.col.name, b.col.typ)
	}
	// The value column: the one table column (besides the key) the query uses.
	key, value := b.tcol, -1
	var walkErr error
	var walk func(n *node)
	walk = func(n *node) {
		if n == nil || walkErr != nil {
			return
		}
		if n.kind == eCol {
			if s, err := sc.resolve(n); err == nil && s.side == sideTable && s.tcol != key {
				switch {
				case value >= 0 && value != s.tcol:
					walkErr = errAt(n.pos, "only one column of table %s besides the key can be used, for now: %s and %s are", t.Name, t.Columns[value].Name, s.col.name)
				case !s.col.typ.isBytes():
					walkErr = errAt(n.pos, "the table column %s is %s: the engine joins UUID or BYTES(n) values only, for now", s.col.name, s.col.typ)
				}
				value = s.tcol
			}
		}
		walk(n.l)
		walk(n.r)
	}
	for _, it := range sel.items {
		walk(it.expr)
	}
	walk(sel.where)
	for _, g := range sel.groupBy {
		walk(g)
	}
	walk(sel.having)
	if walkErr != nil {
		return nil, nil, walkErr
	}
	join := &query.StaticJoin{Column: a.col.attr, As: "$value"}
	if value >= 0 {
		join.As = t.Columns[value].Name
		if _, err := rel.schema.Lookup(join.As); err == nil {
			return nil, nil, errAt(j.name.pos, "table %s's column %s has the name of a column of %s: rename one of them", t.Name, join.As, rel.name)
		}
	} else {
		value = key
	}
	sc.onCol = func(s scol, n *node) (string, error) {
		if s.side != sideTable {
			return s.col.attr, nil
		}
		if s.tcol == key {
			return a.col.attr, nil // the same bytes as the stream's key
		}
		return join.As, nil
	}
	join.Table = &query.StaticTable{KeyWidth: t.Columns[key].Attr.Size, ValueWidth: t.Columns[value].Attr.Size}
	q2, out, err := c.single(q, sel, rel, sc, join)
	if err != nil {
		return nil, nil, err
	}
	t.uses = append(t.uses, tableUse{key: key, value: value, t: join.Table})
	return q2, out, nil
}

// single compiles a query over one stream (with an optional static join):
// an aggregation or a stateless query.
func (c *compiler) single(q *Query, sel *selectStmt, rel *relation, sc *scope, join *query.StaticJoin) (*Query, *relation, error) {
	win, windowed, err := c.window(&sel.from, rel)
	if err != nil {
		return nil, nil, err
	}
	colCtx := func(callErr string) *exprCtx {
		return &exprCtx{callErr: callErr, col: func(n *node) (val, error) {
			s, err := sc.resolve(n)
			if err != nil {
				return val{}, err
			}
			v := colVal(s)
			if sc.onCol != nil {
				attr, err := sc.onCol(s, n)
				if err != nil {
					return val{}, err
				}
				v.e = query.C(attr)
			}
			if s.side == sideTable && v.t != query.BytesValue {
				v.t = query.BytesValue
			}
			return v, nil
		}}
	}
	mq := &query.Query{Name: q.Name, Schema: rel.schema, Join: join}
	if sel.where != nil {
		ctx := colCtx("aggregates are not allowed in WHERE (use HAVING)")
		v, err := c.boolean(ctx, sel.where, "WHERE")
		if err != nil {
			return nil, nil, err
		}
		mq.Where = v.e
	}
	aggregating := len(sel.groupBy) > 0 || sel.having != nil || slices.ContainsFunc(sel.items, func(it selectItem) bool { return hasCall(it.expr) })
	if !aggregating {
		return c.stateless(q, sel, rel, sc, mq, windowed, colCtx)
	}
	if !windowed {
		return nil, nil, errAt(sel.from.name.pos, "an aggregation needs a window: TUMBLE(%s, ...), HOP(%s, ...), %s [RANGE ...] or %s [ROWS ...]", rel.name, rel.name, rel.name, rel.name)
	}
	mq.Window = win
	pseudo := func(n *node) string {
		if n.kind == eCol && n.qual == "" && (n.name == "window_start" || n.name == "window_end") {
			return n.name
		}
		return ""
	}
	// GROUP BY
	type group struct {
		v    val
		node *node
		s    *scol
	}
	var groups []group
	ctx := colCtx("aggregates are not allowed in GROUP BY")
	for _, g := range sel.groupBy {
		if pseudo(g) != "" {
			continue
		}
		if hasCall(g) {
			return nil, nil, errAt(g.pos, "aggregates are not allowed in GROUP BY")
		}
		v, err := c.expr(ctx, g)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case v.isStr || v.t == query.BoolValue:
			return nil, nil, errAt(g.pos, "GROUP BY takes columns and integer expressions, not a condition or a string")
		case v.t == query.FloatValue:
			return nil, nil, errAt(g.pos, "GROUP BY %s: a float is not a group key (group keys are integers, UUID or BYTES columns)", v.e)
		case v.t == query.BytesValue && g.kind != eCol:
			return nil, nil, errAt(g.pos, "GROUP BY takes UUID and BYTES columns as they are, not in expressions")
		}
		for _, prev := range groups {
			if prev.v.e.String() == v.e.String() {
				return nil, nil, errAt(g.pos, "%s is in GROUP BY twice", v.e)
			}
		}
		gr := group{v: v, node: g}
		if g.kind == eCol {
			s, _ := sc.resolve(g)
			gr.s = &s
		}
		groups = append(groups, gr)
		mq.GroupBy = append(mq.GroupBy, v.e)
	}
	for _, g := range groups {
		if g.s != nil && g.s.side == sideTable && len(groups) > 1 {
			return nil, nil, errAt(g.node.pos, "GROUP BY a table column together with other keys is not supported yet: the engine groups by the joined value alone")
		}
	}
	// aggregates of the select list
	aggCtx := colCtx("an aggregate cannot contain another aggregate")
	// An aggregate's As is its output name unless that is a name the
	// model's output schema or HAVING scope already has (an input column,
	// the joined value, "timestamp", keyN, another aggregate's).
	usedAs := map[string]bool{"timestamp": true}
	for _, a := range rel.schema.Attrs {
		usedAs[a.Name] = true
	}
	if join != nil {
		usedAs[join.As] = true
	}
	for i := range groups {
		usedAs[fmt.Sprintf("key%d", i+1)] = true
	}
	aggAs := func(name string) string {
		if usedAs[name] {
			name = fmt.Sprintf("$agg%d", len(mq.Aggregates)+1)
		}
		for usedAs[name] {
			name = "$" + name
		}
		usedAs[name] = true
		return name
	}
	makeAgg := func(n *node, as string) (query.Aggregate, val, error) {
		f := query.AggFuncs[n.name]
		ag := query.Aggregate{Func: f, As: as}
		if n.star {
			return ag, val{t: query.IntValue, isAggr: true}, nil
		}
		if hasCall(n.l) {
			return ag, val{}, errAt(n.l.pos, "an aggregate cannot contain another aggregate")
		}
		v, err := c.expr(aggCtx, n.l)
		if err != nil {
			return ag, val{}, err
		}
		if err := isNumber(v, n.l); err != nil {
			if f == query.Count && v.t == query.BytesValue {
				return ag, val{t: query.IntValue, isAggr: true}, nil // COUNT(col): no NULLs, so COUNT(*)
			}
			return ag, val{}, errAt(n.l.pos, "%s(%s): %s", strings.ToUpper(n.name), exprText(n.l), err.(*Error).Msg)
		}
		if f == query.Count {
			return ag, val{t: query.IntValue, isAggr: true}, nil
		}
		ag.Arg = v.e
		t := v.t
		if f == query.Avg {
			t = query.FloatValue
		}
		return ag, val{t: t, isAggr: true}, nil
	}
	names := map[string]bool{}
	type item struct {
		name  string
		kind  ColumnKind
		index int
		v     val
	}
	var items []item
	for i, it := range sel.items {
		if it.star {
			return nil, nil, errAt(it.pos, "SELECT * in an aggregation: list the group columns and aggregates")
		}
		n := it.expr
		name := outputName(it, i)
		if names[name] {
			return nil, nil, errAt(it.pos, "output column %s is named twice (give one an alias with AS)", name)
		}
		names[name] = true
		switch {
		case n.kind == eCall:
			ag, v, err := makeAgg(n, aggAs(name))
			if err != nil {
				return nil, nil, err
			}
			items = append(items, item{name: name, kind: Aggregate, index: len(mq.Aggregates), v: v})
			mq.Aggregates = append(mq.Aggregates, ag)
		case hasCall(n):
			return nil, nil, errAt(it.pos, "arithmetic over aggregates is not supported yet: select the aggregates in a view and compute over them in a query FROM the view")
		case pseudo(n) == "window_start":
			items = append(items, item{name: name, kind: WindowStart, v: val{t: query.IntValue}})
		case pseudo(n) == "window_end":
			if c.inView {
				return nil, nil, errAt(it.pos, "a view cannot output window_end yet: its tuples carry the window's start only (window_end is window_start plus the window's size)")
			}
			items = append(items, item{name: name, kind: WindowEnd, v: val{t: query.IntValue}})
		default:
			v, err := c.expr(ctx, n)
			if err != nil {
				return nil, nil, err
			}
			idx := slices.IndexFunc(groups, func(g group) bool { return g.v.e != nil && v.e != nil && g.v.e.String() == v.e.String() })
			if idx < 0 {
				return nil, nil, errAt(it.pos, "%s is neither in GROUP BY nor an aggregate", exprText(n))
			}
			items = append(items, item{name: name, kind: GroupKey, index: idx, v: groups[idx].v})
		}
	}
	if len(mq.Aggregates) == 0 && sel.having == nil {
		// GROUP BY alone: the model needs an aggregate to run the windows.
		return nil, nil, errAt(sel.pos, "an aggregation needs at least one aggregate in the select list (COUNT(*), SUM, AVG, MIN or MAX)")
	}
	// HAVING
	if sel.having != nil {
		hidden := 0
		hctx := &exprCtx{
			col: func(n *node) (val, error) {
				if n.qual == "" {
					for _, it := range items {
						if it.name != n.name {
							continue
						}
						switch it.kind {
						case Aggregate:
							return val{e: query.C(mq.Aggregates[it.index].As), t: it.v.t}, nil
						case GroupKey:
							g := groups[it.index]
							if g.s == nil {
								return val{}, errAt(n.pos, "HAVING can use a GROUP BY column, not the expression %s", g.v.e)
							}
							return g.v, nil
						}
						return val{}, errAt(n.pos, "HAVING cannot use %s", n.name)
					}
				}
				s, err := sc.resolve(n)
				if err != nil {
					return val{}, errAt(n.pos, "HAVING can use aggregates, their aliases and GROUP BY columns; %s is none of them", exprText(n))
				}
				for _, g := range groups {
					if g.s != nil && g.s.col.attr == s.col.attr && g.s.side == s.side {
						return g.v, nil
					}
				}
				return val{}, errAt(n.pos, "HAVING can use aggregates, their aliases and GROUP BY columns; %s is not in GROUP BY", exprText(n))
			},
			call: func(n *node) (val, error) {
				ag, v, err := makeAgg(n, "")
				if err != nil {
					return val{}, err
				}
				for _, have := range mq.Aggregates {
					if have.Func == ag.Func && fmt.Sprint(have.Arg) == fmt.Sprint(ag.Arg) {
						return val{e: query.C(have.As), t: v.t}, nil
					}
				}
				hidden++
				ag.As = aggAs(fmt.Sprintf("$having%d", hidden))
				mq.Aggregates = append(mq.Aggregates, ag)
				return val{e: query.C(ag.As), t: v.t}, nil
			},
		}
		v, err := c.boolean(hctx, sel.having, "HAVING")
		if err != nil {
			return nil, nil, err
		}
		mq.Having = v.e
	}
	if err := c.finishQuery(q, mq, sel); err != nil {
		return nil, nil, err
	}
	// output columns: attribute 0 the window start, then the groups, then the aggregates
	out := &relation{name: q.Name, view: q, unitNs: rel.unitNs}
	if win.Type == query.Rows {
		out.unitNs = 0
	}
	var cols []relCol
	for _, it := range items {
		oc := OutputColumn{Name: it.name, Kind: it.kind, Index: it.index}
		switch it.kind {
		case WindowStart:
			oc.Attr, oc.Type = 0, "BIGINT"
		case WindowEnd:
			oc.Attr, oc.Type = -1, "BIGINT"
		case GroupKey:
			oc.Attr = 1 + it.index
			oc.Type, oc.Labels = outType(groups[it.index].v)
		case Aggregate:
			oc.Attr = 1 + len(groups) + it.index
			oc.Type = "BIGINT"
			if it.v.t == query.FloatValue {
				oc.Type = "DOUBLE"
			}
		}
		q.Columns = append(q.Columns, oc)
		if oc.Attr >= 0 {
			cols = append(cols, relCol{name: it.name, typ: outSQLType(q.Output.Attrs[oc.Attr], oc.Labels)})
		}
	}
	c.viewRelation(out, q, cols)
	return q, out, nil
}

func outputName(it selectItem, i int) string {
	if it.alias != nil {
		return it.alias.name
	}
	n := it.expr
	switch {
	case n.kind == eCol:
		return n.name
	case n.kind == eCall && (n.name == "count"):
		return "count"
	case n.kind == eCall && n.l.kind == eCol:
		return n.name + "_" + n.l.name
	case n.kind == eCall:
		return n.name
	}
	return fmt.Sprintf("expr%d", i+1)
}

func exprText(n *node) string {
	switch n.kind {
	case eCol:
		if n.qual != "" {
			return n.qual + "." + n.name
		}
		return n.name
	case eInt:
		return fmt.Sprint(n.i)
	case eFloat:
		return fmt.Sprint(n.f)
	case eString:
		return "'" + n.s + "'"
	case eNeg:
		return "-" + exprText(n.l)
	case eNot:
		return "NOT " + exprText(n.l)
	case eCall:
		if n.star {
			return strings.ToUpper(n.name) + "(*)"
		}
		return strings.ToUpper(n.name) + "(" + exprText(n.l) + ")"
	}
	return "(" + exprText(n.l) + " " + strings.ToUpper(n.op) + " " + exprText(n.r) + ")"
}

// outType is the SQL type of the values of v in an output tuple.
func outType(v val) (string, []string) {
	switch {
	case v.typ.isBytes():
		return v.typ.String(), nil
	case v.typ.kind == tyEnum:
		return "BIGINT", v.typ.labels
	case v.t == query.FloatValue:
		return "DOUBLE", nil
	case v.t == query.BytesValue:
		return fmt.Sprintf("BYTES(%d)", v.typ.size), nil
	}
	return "BIGINT", nil
}

// outSQLType is the declared type of output attribute a, as a view's column.
func outSQLType(a query.Attribute, labels []string) sqlType {
	switch a.Type {
	case query.Int32:
		if labels != nil {
			return sqlType{kind: tyEnum, labels: labels}
		}
		return sqlType{kind: tyInt}
	case query.Int64:
		if labels != nil {
			return sqlType{kind: tyEnum, labels: labels}
		}
		return sqlType{kind: tyBigint}
	case query.Float32:
		return sqlType{kind: tyReal}
	case query.Float64:
		return sqlType{kind: tyDouble}
	}
	if a.Size == 16 {
		return sqlType{kind: tyUUID, size: 16}
	}
	return sqlType{kind: tyBytes, size: a.Size}
}

// finishQuery validates mq with the model (a last check: the compiler's
// own checks come first, with better positions) and sets q's spec.
func (c *compiler) finishQuery(q *Query, mq *query.Query, sel *selectStmt) error {
	out, err := mq.OutputSchema()
	if err != nil {
		at := sel.pos
		if strings.Contains(err.Error(), "group by") && len(sel.groupBy) > 0 {
			at = sel.groupBy[0].pos
		}
		return errAt(at, "%v", err)
	}
	q.Spec.Query, q.Output = mq, out
	return nil
}

// viewRelation fills out, the relation a view of q is, from q's output
// schema renamed to the visible columns cols (in attribute order of their
// first use): attribute i is named after the first visible column on it,
// or $i.
func (c *compiler) viewRelation(out *relation, q *Query, cols []relCol) {
	attrs := slices.Clone(q.Output.Attrs)
	named := make([]bool, len(attrs))
	taken := map[string]bool{}
	colAttr := make([]int, len(cols))
	vi := 0
	for _, oc := range q.Columns {
		if oc.Attr < 0 {
			continue
		}
		colAttr[vi] = oc.Attr
		vi++
	}
	for i, col := range cols {
		a := colAttr[i]
		if !named[a] && !taken[col.name] {
			attrs[a].Name = col.name
			named[a], taken[col.name] = true, true
		}
	}
	for i := range attrs {
		if !named[i] {
			name := fmt.Sprintf("$%d", i)
			if i == 0 && !taken["window_start"] && q.Spec.Query != nil && !q.Spec.Query.Stateless() {
				name = "window_start"
			}
			for taken[name] { // a quoted select name may look like ours
				name = "$" + name
			}
			attrs[i].Name = name
			taken[name] = true
		}
	}
	for i := range cols {
		cols[i].attr = attrs[colAttr[i]].Name
		if colAttr[i] == 0 && out.timeName == "" {
			out.timeName = cols[i].name
		}
	}
	if out.timeName == "" && attrs[0].Name == "window_start" {
		out.timeName = "window_start"
		cols = append(cols, relCol{name: "window_start", attr: "window_start", typ: sqlType{kind: tyBigint}})
	}
	s, err := query.NewSchema(q.Output.TupleSize, attrs...)
	if err != nil {
		panic(fmt.Sprintf("sql: renaming %s's output: %v", q.Name, err))
	}
	out.schema, out.cols = s, cols
}

// stateless compiles a query without aggregates: WHERE and a projection
// (or SELECT *).
func (c *compiler) stateless(q *Query, sel *selectStmt, rel *relation, sc *scope, mq *query.Query, windowed bool, colCtx func(string) *exprCtx) (*Query, *relation, error) {
	if windowed {
		return nil, nil, errAt(sel.from.win.pos, "a window in a query without aggregates does nothing: add an aggregate (COUNT(*), SUM, ...) or remove the window")
	}
	if mq.Join != nil {
		return nil, nil, errAt(sel.join.name.pos, "a join with a table is supported in aggregations only, for now (the engine runs static joins with GROUP BY over a window)")
	}
	out := &relation{name: q.Name, view: q, unitNs: rel.unitNs}
	if len(sel.items) == 1 && sel.items[0].star {
		if err := c.finishQuery(q, mq, sel); err != nil {
			return nil, nil, err
		}
		out.schema, out.timeName = rel.schema, rel.timeName
		for _, col := range rel.cols {
			out.cols = append(out.cols, col)
			a := slices.IndexFunc(rel.schema.Attrs, func(a query.Attribute) bool { return a.Name == col.attr })
			oc := OutputColumn{Name: col.name, Kind: Attribute, Index: a, Attr: a, Type: col.typ.String(), Labels: col.typ.labels}
			if col.typ.kind == tyEnum {
				oc.Type = "INT"
			}
			q.Columns = append(q.Columns, oc)
		}
		return q, out, nil
	}
	ctx := colCtx("")
	names := map[string]bool{}
	var cols []relCol
	for i, it := range sel.items {
		if it.star {
			return nil, nil, errAt(it.pos, "SELECT * stands alone: list the columns instead")
		}
		name := outputName(it, i)
		if names[name] {
			return nil, nil, errAt(it.pos, "output column %s is named twice (give one an alias with AS)", name)
		}
		names[name] = true
		v, err := c.expr(ctx, it.expr)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case v.isStr:
			return nil, nil, errAt(it.pos, "a string cannot be selected: strings only compare with ENUM columns")
		case v.t == query.BoolValue:
			return nil, nil, errAt(it.pos, "a condition cannot be selected: projections are numbers")
		case v.t == query.BytesValue:
			return nil, nil, errAt(it.pos, "%s is %s: projections are numbers for now (SELECT * keeps every column)", exprText(it.expr), v.typ)
		}
		as := name // the output schema's name: unique, and not the event time's
		if as == "timestamp" || slices.ContainsFunc(mq.Project, func(p query.Projection) bool { return p.As == as }) {
			as = fmt.Sprintf("$p%d", i+1)
		}
		mq.Project = append(mq.Project, query.Projection{Expr: v.e, As: as})
		typ, labels := outType(v)
		q.Columns = append(q.Columns, OutputColumn{Name: name, Kind: Attribute, Index: 1 + i, Attr: 1 + i, Type: typ, Labels: labels})
		st := sqlType{kind: tyBigint}
		if v.t == query.FloatValue {
			st = sqlType{kind: tyDouble}
		}
		if labels != nil {
			st = sqlType{kind: tyEnum, labels: labels}
		}
		cols = append(cols, relCol{name: name, typ: st})
	}
	if err := c.finishQuery(q, mq, sel); err != nil {
		return nil, nil, err
	}
	// attribute 0 carries the input's event time: visible under its name
	// unless the select list uses that name.
	c.viewRelation(out, q, cols)
	if out.timeName == "" && rel.timeName != "" && !names[rel.timeName] && out.schema.Attrs[0].Name == "$0" {
		attrs := slices.Clone(out.schema.Attrs)
		attrs[0].Name = rel.timeName
		if s, err := query.NewSchema(out.schema.TupleSize, attrs...); err == nil {
			out.schema, out.timeName = s, rel.timeName
			out.cols = append(out.cols, relCol{name: rel.timeName, attr: rel.timeName, typ: sqlType{kind: tyBigint}})
		}
	}
	return q, out, nil
}

// windowJoin compiles FROM a [window] JOIN b [window] ON ... (WHERE ...).
func (c *compiler) windowJoin(q *Query, sel *selectStmt, left *relation) (*Query, *relation, error) {
	right, err := c.fromRel(sel.join)
	if err != nil {
		return nil, nil, err
	}
	if right.view != nil {
		q.Spec.FromRight = right.name
	} else {
		q.InputRight = right.name
	}
	wl, okl, err := c.window(&sel.from, left)
	if err != nil {
		return nil, nil, err
	}
	wr, okr, err := c.window(sel.join, right)
	if err != nil {
		return nil, nil, err
	}
	if !okl {
		return nil, nil, errAt(sel.from.name.pos, "a join of two streams needs a window on each side ([ROWS n], [RANGE ...], TUMBLE or HOP); %s has none", left.name)
	}
	if !okr {
		return nil, nil, errAt(sel.join.name.pos, "a join of two streams needs a window on each side ([ROWS n], [RANGE ...], TUMBLE or HOP); %s has none", right.name)
	}
	if wl != wr {
		return nil, nil, errAt(sel.join.win.pos, "the two sides of a join need the same window, for now (%s %d/%d and %s %d/%d)", wl.Type, wl.Size, wl.Slide, wr.Type, wr.Size, wr.Slide)
	}
	lq, rq := qualOf(&sel.from), qualOf(sel.join)
	if lq == rq {
		return nil, nil, errAt(sel.join.name.pos, "both sides of the join are called %s: give them aliases", lq)
	}
	sc := &scope{cols: append(streamScope(left, lq, sideLeft, query.LeftPrefix), streamScope(right, rq, sideRight, query.RightPrefix)...)}
	ctx := &exprCtx{callErr: "aggregates are not allowed in a join condition", col: func(n *node) (val, error) {
		s, err := sc.resolve(n)
		if err != nil {
			return val{}, err
		}
		return colVal(s), nil
	}}
	on, err := c.boolean(ctx, sel.on, "ON")
	if err != nil {
		return nil, nil, err
	}
	where := on.e
	if sel.where != nil {
		ctx.callErr = "aggregates are not allowed in WHERE"
		w, err := c.boolean(ctx, sel.where, "WHERE")
		if err != nil {
			return nil, nil, err
		}
		where = flatten(where, w.e, true)
	}
	if len(sel.groupBy) > 0 || sel.having != nil || slices.ContainsFunc(sel.items, func(it selectItem) bool { return hasCall(it.expr) }) {
		return nil, nil, errAt(sel.pos, "an aggregation over a join of two streams is not supported in one query yet: make the join a view and aggregate FROM the view")
	}
	if len(sel.items) != 1 || !sel.items[0].star {
		return nil, nil, errAt(sel.items[0].pos, "a join of two streams outputs whole pairs (SELECT *), for now: make it a view and select FROM the view")
	}
	j := &query.WindowJoin{Name: q.Name, Left: left.schema, Right: right.schema, Window: wl, Where: where}
	outSchema, err := j.OutputSchema()
	if err != nil {
		return nil, nil, errAt(sel.onPos, "%v", err)
	}
	q.Spec.Join, q.Output = j, outSchema
	out := &relation{name: q.Name, view: q, unitNs: left.unitNs}
	// visible columns: a column's own name where it is unique, else qual.name
	count := map[string]int{}
	for _, s := range sc.cols {
		count[s.col.name]++
	}
	attrs := slices.Clone(outSchema.Attrs)
	named := make([]bool, len(attrs))
	for _, s := range sc.cols {
		name := s.col.name
		if count[name] > 1 {
			name = s.qual + "." + name
		}
		a := slices.IndexFunc(outSchema.Attrs, func(a query.Attribute) bool { return a.Name == s.col.attr })
		attrs[a].Name, named[a] = name, true
		oc := OutputColumn{Name: name, Kind: Attribute, Index: a, Attr: a, Type: s.col.typ.String(), Labels: s.col.typ.labels}
		if s.col.typ.kind == tyEnum {
			oc.Type = "INT"
		}
		q.Columns = append(q.Columns, oc)
		out.cols = append(out.cols, relCol{name: name, attr: name, typ: s.col.typ})
		if a == 0 {
			out.timeName = name
		}
	}
	taken := map[string]bool{}
	for i := range attrs {
		if named[i] {
			taken[attrs[i].Name] = true
		}
	}
	for i := range attrs {
		if !named[i] { // columns not visible in the sides
			name := fmt.Sprintf("$%d", i)
			for taken[name] {
				name = "$" + name
			}
			attrs[i].Name, taken[name] = name, true
		}
	}
	if out.schema, err = query.NewSchema(outSchema.TupleSize, attrs...); err != nil {
		return nil, nil, errAt(sel.pos, "join output: %v", err)
	}
	return q, out, nil
}
