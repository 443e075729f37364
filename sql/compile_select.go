package sql

import (
	"fmt"
	"slices"
	"time"

	"github.com/saber-hx/saber-hx/query"
)

// fromRel is the relation FROM item f reads: a source, a view, or a
// subquery, compiled here as an anonymous view, a part of query of.
func (c *compiler) fromRel(f *fromItem, of string) (*relation, error) {
	if f.sub != nil {
		if rel, done, err := c.procTimeRel(qualOf(f), "subquery", f.sub, f.sub.pos.line); done {
			return rel, err
		}
		q, rel, err := c.selectQuery(of, f.sub, true)
		if err != nil {
			return nil, err
		}
		q = c.addPart(q, of, f.sub.pos.line)
		rel.name, rel.view = q.Name, q
		return rel, nil
	}
	if rel, ok := c.rels[f.name.name]; ok {
		return rel, nil
	}
	if _, ok := c.tables[f.name.name]; ok {
		return nil, errAt(f.name.pos, "%s is a table: a query reads a stream (a source or a view) and can JOIN a table", f.name.name)
	}
	if _, ok := c.sinks[f.name.name]; ok {
		return nil, errAt(f.name.pos, "%s is a sink table: INSERT INTO writes it, nothing reads it", f.name.name)
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

// fromName names f in messages: a stream or view as FROM names it, a
// subquery by its alias.
func fromName(f *fromItem) string {
	if f.sub != nil {
		return qualOf(f)
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

// reading makes q read rel: a source's stream, or a view's output.
func (c *compiler) reading(q *Query, rel *relation) {
	q.TimeUnit = time.Duration(rel.unitNs)
	if rel.view != nil {
		q.From, q.Spec.Upstream = rel.name, c.output(rel.view)
	} else {
		q.Input = rel.inputName()
	}
}

// input is what a query over one stream reads: the relation, the names
// in scope, the schema its expressions read (the input's, joined with a
// lookup join's values), and a static join.
type input struct {
	rel    *relation
	sc     *scope
	schema *query.Schema
	join   *query.StaticJoin
	// sides are a window join's two relations (rel nil), by scol.side:
	// what a column's time unit is read from.
	sides []*relation
	// timeKey: GROUP BY's column that is the time of rel, a view of
	// windows (relation.slide), which the aggregation's tumbling window of
	// the slide folds into its window start.
	timeKey *scol
}

// streamQual is the qualifier of the stream's columns in scope (FROM's
// alias, or the stream's name), beside a joined table's.
func (in *input) streamQual() string {
	for _, s := range in.sc.cols {
		if s.side == sideLeft {
			return s.qual
		}
	}
	return ""
}

// isTime reports whether the visible column name holds rel's event time
// or a window's end over it, an integer (not a TIMESTAMP's).
func (rel *relation) isTime(name string) bool {
	if rel.unitNs == 0 || rel.schema == nil || len(rel.schema.Attrs) == 0 || rel.schema.Attrs[0].Logical == query.Time {
		return false
	}
	return name == rel.timeName || slices.Contains(rel.times, name) || slices.Contains(rel.ends, name)
}

// isTime reports whether s is rel's time column.
func isTime(rel *relation, s scol) bool {
	return (rel.timeName != "" && s.col.name == rel.timeName) || slices.Contains(rel.times, s.col.name)
}

// scope is the model's types of the names the query's expressions use.
func (in *input) scope() query.Scope {
	base := query.SchemaScope(in.schema)
	return func(name string) (query.ValueType, error) {
		if in.join != nil && in.join.Values == nil && name == in.join.As {
			return query.BytesValue, nil
		}
		return base(name)
	}
}

// ctx is the expression context of the input's columns (no aggregates:
// callErr says why).
func (in *input) ctx(callErr string) *exprCtx {
	scope := in.scope()
	times := func(attr string) bool {
		if in.rel == nil || in.schema == nil || len(in.schema.Attrs) == 0 {
			return false
		}
		if a := in.schema.Attrs[0]; attr == a.Name {
			return a.Logical != query.Time
		}
		for _, col := range in.rel.cols {
			if col.attr == attr && (slices.Contains(in.rel.times, col.name) || slices.Contains(in.rel.ends, col.name)) {
				a, err := in.schema.Lookup(attr)
				return err == nil && a.Logical != query.Time
			}
		}
		return false
	}
	timeUnit := func(e query.Expr) int64 {
		switch {
		case in.rel != nil:
			return timeIn(e, in.rel.unitNs, times)
		case in.sides != nil:
			// A join's column is a time of the side it comes from.
			unit := int64(0)
			timeIn(e, 1, func(attr string) bool {
				for _, s := range in.sc.cols {
					if s.col.attr == attr && int(s.side) < len(in.sides) && in.sides[s.side].isTime(s.col.name) {
						unit = in.sides[s.side].unitNs
						return true
					}
				}
				return false
			})
			return unit
		}
		return 0
	}
	return &exprCtx{callErr: callErr, scope: scope, timeUnit: timeUnit, col: func(n *node) (val, error) {
		s, err := in.sc.resolve(n)
		if err != nil {
			return val{}, err
		}
		v := colVal(s, scope)
		if in.sc.onCol != nil {
			attr, err := in.sc.onCol(s, n)
			if err != nil {
				return val{}, err
			}
			v.e = query.C(attr)
			if s.side == sideTable {
				v.t = query.BytesValue
			}
		}
		return v, nil
	}}
}

// columnsRead is the columns sel names (selectColumns), and the names it
// defines (its select list's aliases), or nil where it reads every column
// of its FROM (a * in its select list) or another relation too (a join).
func columnsRead(sel *selectStmt) *readNames {
	if sel.join != nil || slices.ContainsFunc(sel.items, func(it selectItem) bool { return it.star }) {
		return nil
	}
	r := &readNames{defined: selectAliases(sel)}
	selectColumns(sel, func(n *node) { r.cols = append(r.cols, n) })
	return r
}

// selectColumns calls f on each column that sel's select list, ON, WHERE,
// GROUP BY, HAVING and aggregates' FILTERs name.
func selectColumns(sel *selectStmt, f func(*node)) {
	var walk func(n *node)
	walk = func(n *node) {
		walkNodes(n, func(x *node) {
			if x.kind == eCol {
				f(x)
			}
			if x.filter != nil {
				walk(x.filter)
			}
		})
	}
	for _, it := range sel.items {
		walk(it.expr)
	}
	walk(sel.on)
	walk(sel.where)
	walk(sel.having)
	for _, g := range sel.groupBy {
		walk(g)
	}
}

// selectAliases is the names sel's select list gives with AS.
func selectAliases(sel *selectStmt) map[string]bool {
	m := map[string]bool{}
	for _, it := range sel.items {
		if it.alias != nil {
			m[it.alias.name] = true
		}
	}
	return m
}

// readNames is what columnsRead found.
type readNames struct {
	cols    []*node
	defined map[string]bool
}

// of is the columns of rel that r reads (a column named qual.name where a
// view of a join names it so), and whether r names only those, names it
// defines and a window's (window_start, ...). Where it names another, the
// query will fail, and the error should list every column of rel.
func (r *readNames) of(rel *relation) (read map[string]bool, only bool) {
	read = map[string]bool{}
	has := func(name string) bool {
		return slices.ContainsFunc(rel.cols, func(c relCol) bool { return c.name == name })
	}
	for _, n := range r.cols {
		switch {
		case has(n.name):
			read[n.name] = true
		case n.qual != "" && has(n.qual+"."+n.name):
			read[n.qual+"."+n.name] = true
		case n.qual == "" && (r.defined[n.name] || isPseudo(n) != ""):
		default:
			return nil, false
		}
	}
	return read, true
}

// selectQuery compiles sel as the query called name (its parts are added
// to the program as they are compiled; the query itself is not): a view
// when view is set. It returns the query and the relation its output is.
func (c *compiler) selectQuery(name string, sel *selectStmt, view bool) (*Query, *relation, error) {
	if sel.from.sub != nil && sel.from.sub.chain && sel.from.sub.items == nil {
		if err := c.chainJoin(sel); err != nil {
			return nil, nil, err
		}
	}
	rel, err := c.fromRel(&sel.from, name)
	if err != nil {
		return nil, nil, err
	}
	ws := sel.from.win
	if gw, at, err := groupWindow(sel); err == nil && at != nil {
		ws = gw
	}
	rel = c.procTimed(rel, ws, columnsRead(sel), name, sel.pos.line)
	if sel.from.asOf != nil {
		return nil, nil, errAt(sel.from.asOfPos, "FOR SYSTEM_TIME AS OF belongs to the table a stream joins: FROM stream JOIN table FOR SYSTEM_TIME AS OF stream.p ON ...")
	}
	if sel.join != nil {
		if t, ok := c.tables[sel.join.name.name]; ok && sel.join.sub == nil {
			return c.staticJoin(name, sel, rel, t, view)
		}
		if sel.join.asOf != nil {
			return nil, nil, errAt(sel.join.asOfPos, "FOR SYSTEM_TIME AS OF: %s is a stream; a temporal join looks up a table (CREATE TABLE %s (...) WITH (connector = 'file' | 'filesystem', ...)), and two streams join in a window", fromName(sel.join), fromName(sel.join))
		}
		return c.windowJoin(name, sel, rel, view)
	}
	in := &input{rel: rel, sc: &scope{cols: streamScope(rel, qualOf(&sel.from), sideLeft, "")}, schema: rel.schema}
	return c.single(name, sel, in, sel.from.win, view)
}

// groupWindow is the window of GROUP BY TUMBLE(col, size), HOP(col,
// slide, size) or SESSION(col, gap), if GROUP BY has one.
func groupWindow(sel *selectStmt) (windowSpec, *node, error) {
	var w windowSpec
	var at *node
	for _, g := range sel.groupBy {
		if g.kind != eFunc || !groupWindows[g.name] {
			continue
		}
		if at != nil {
			return w, nil, errAt(g.pos, "a second window in GROUP BY: a query has one")
		}
		at = g
		fn := g.name
		want := map[string]int{"tumble": 2, "hop": 3, "session": 2}[fn]
		if len(g.args) != want {
			what := map[string]string{"tumble": "TUMBLE(time_col, size)", "hop": "HOP(time_col, slide, size)", "session": "SESSION(time_col, gap)"}[fn]
			return w, nil, errAt(g.pos, "%s takes %d arguments: %s", upperName(fn), want, what)
		}
		if g.args[0].kind != eCol {
			return w, nil, errAt(g.args[0].pos, "the first argument of %s is the event-time column", upperName(fn))
		}
		for _, a := range g.args[1:] {
			if a.kind != eInterval || a.i < 0 || a.iv.n == 0 {
				return w, nil, errAt(a.pos, "expected a positive INTERVAL 'n' unit in %s", upperName(fn))
			}
		}
		w = windowSpec{pos: g.pos, timeCol: &ident{name: g.args[0].name, pos: g.args[0].pos}, size: g.args[1].iv, group: true}
		switch fn {
		case "tumble":
			w.kind = winTumble
		case "hop":
			w.kind, w.slide, w.slidePos, w.size = winHop, g.args[1].iv, g.args[1].pos, g.args[2].iv
		default:
			w.kind = winSession
		}
	}
	if at != nil && sel.from.win.kind != winNone {
		return w, nil, errAt(at.pos, "a window in GROUP BY and another in FROM: a query has one")
	}
	return w, at, nil
}

// single compiles a query over one stream (with an optional static join):
// an aggregation or a stateless query.
func (c *compiler) single(name string, sel *selectStmt, in *input, ws windowSpec, view bool) (*Query, *relation, error) {
	gw, gwNode, err := groupWindow(sel)
	if err != nil {
		return nil, nil, err
	}
	if gwNode != nil {
		ws = gw
	}
	win, windowed, err := c.window(ws, in.rel)
	if err != nil {
		return nil, nil, err
	}
	aggregating := len(sel.groupBy) > 0 || sel.having != nil || slices.ContainsFunc(sel.items, func(it selectItem) bool { return hasCall(it.expr) })
	if !aggregating {
		return c.stateless(name, sel, in, windowed, ws, view)
	}
	if !windowed && in.rel.slide > 0 && in.rel.unitNs > 0 {
		// GROUP BY the time of a view of windows: a tumbling window of its
		// slide holds the rows of one of its windows.
		for _, g := range sel.groupBy {
			if g.kind != eCol {
				continue
			}
			if s, err := in.sc.resolve(g); err == nil && isTime(in.rel, s) {
				in.timeKey = &s
				win, windowed = query.Tumbling(in.rel.slide), true
				ws = windowSpec{kind: winTumble, pos: g.pos}
				break
			}
		}
	}
	if !windowed {
		rel := in.rel.name
		return nil, nil, errAt(sel.from.name.pos, "an aggregation needs a window: TUMBLE(%s, ...), HOP(%s, ...), %s [RANGE ...], %s [ROWS ...] or GROUP BY TUMBLE(time_col, ...)", rel, rel, rel, rel)
	}
	return c.aggregation(name, sel, in, win, ws, view)
}

// whereOf compiles WHERE over the input.
func (c *compiler) whereOf(sel *selectStmt, in *input) (query.Expr, error) {
	if sel.where == nil {
		return sel.extraWhere, nil
	}
	v, err := c.boolean(in.ctx("aggregates are not allowed in WHERE (use HAVING)"), sel.where, "WHERE")
	if err != nil {
		return nil, err
	}
	return andTerms(v.e, sel.extraWhere), nil
}

// stateless compiles a query without aggregates: WHERE and a projection
// (or SELECT *).
func (c *compiler) stateless(name string, sel *selectStmt, in *input, windowed bool, ws windowSpec, view bool) (*Query, *relation, error) {
	if windowed {
		if ws.kind == winTumble || ws.kind == winHop || ws.kind == winSession {
			// Not nothing, as a CQL window over a projection is: Flink's
			// and RisingWave's table functions give each row its
			// window's bounds (a HOP's rows once per window).
			return nil, nil, errAt(ws.pos, "a window table function without an aggregation (each row with its window_start and window_end) is not supported: aggregate over it (GROUP BY window_start, window_end, ...) or remove the window")
		}
		return nil, nil, errAt(ws.pos, "a window in a query without aggregates does nothing: add an aggregate (COUNT(*), SUM, ...) or remove the window")
	}
	q := &Query{Name: name}
	c.reading(q, in.rel)
	mq := &query.Query{Name: name, Schema: in.rel.schema, Join: in.join}
	var err error
	if mq.Where, err = c.whereOf(sel, in); err != nil {
		return nil, nil, err
	}
	rel := in.rel
	// Its tuples are its input's, filtered, in their order, their times
	// its input's (attribute 0): they are as late as the input's.
	out := &relation{name: name, view: q, unitNs: rel.unitNs, delay: rel.watermarkDelay(), pairs: rel.pairs}
	if len(sel.items) == 1 && sel.items[0].star && sel.items[0].qual == "" && in.join == nil {
		if err := c.finishQuery(q, mq, sel); err != nil {
			return nil, nil, err
		}
		out.schema, out.timeName, out.slide, out.times = rel.schema, rel.timeName, rel.slide, rel.times
		out.size, out.ends, out.procTime = rel.size, rel.ends, rel.procTime
		for _, col := range rel.cols {
			out.cols = append(out.cols, col)
			a := slices.IndexFunc(rel.schema.Attrs, func(a query.Attribute) bool { return a.Name == col.attr })
			oc := OutputColumn{Name: col.name, Kind: Attribute, Index: a, Attr: a, Labels: col.typ.labels}
			oc.Type = typeText(rel.schema.Attrs[a], col.typ)
			q.Columns = append(q.Columns, oc)
		}
		return q, out, nil
	}
	items, err := expandStars(sel.items, in.sc)
	if err != nil {
		return nil, nil, err
	}
	ctx := in.ctx("")
	names, aliases := map[string]bool{}, selectAliases(sel)
	var cols []relCol
	timeItem := "" // an item that is the input's event time, as it is
	var times, ends []string
	for i, it := range items {
		name := uniqueOutputName(names, aliases, it, i)
		if names[name] {
			return nil, nil, errAt(it.pos, "output column %s is named twice (give one an alias with AS)", name)
		}
		names[name] = true
		v, err := c.expr(ctx, it.expr)
		if err != nil {
			return nil, nil, err
		}
		if err := projectable(v, it); err != nil {
			return nil, nil, err
		}
		if col, ok := v.e.(query.Column); ok {
			if s, err := in.sc.resolve(it.expr); err == nil && it.expr.kind == eCol && (col.Name == rel.schema.Attrs[0].Name || isTime(rel, s)) {
				times = append(times, name)
				if timeItem == "" {
					timeItem = name
				}
			}
			if s, err := in.sc.resolve(it.expr); err == nil && it.expr.kind == eCol {
				// a column as it is: a window's end, the processing time
				if slices.Contains(rel.ends, s.col.name) {
					ends = append(ends, name)
				}
				if rel.procTime != "" && s.col.name == rel.procTime && out.procTime == "" {
					out.procTime = name
				}
			}
		}
		as := name // the output schema's name: unique, and not the event time's
		if as == "timestamp" || slices.ContainsFunc(mq.Project, func(p query.Projection) bool { return p.As == as }) {
			as = fmt.Sprintf("$p%d", i+1)
		}
		mq.Project = append(mq.Project, query.Projection{Expr: v.e, As: as})
		oc := OutputColumn{Name: name, Kind: Attribute, Index: 1 + i, Attr: 1 + i}
		oc.Type, oc.Labels = outType(v)
		q.Columns = append(q.Columns, oc)
		cols = append(cols, relCol{name: name, typ: outDecl(v)})
	}
	if err := c.finishQuery(q, mq, sel); err != nil {
		return nil, nil, err
	}
	c.viewRelation(out, q, cols, false)
	// attribute 0 carries the input's event time: visible under its name
	// unless the select list uses that name; a column that selects it is
	// the event time too.
	nameTime(out, rel.timeName, names)
	if out.timeName == "" {
		out.timeName = timeItem
	}
	if out.timeName != "" {
		out.slide, out.times = rel.slide, times
		if rel.slide > 0 {
			out.size, out.ends = rel.size, ends
		}
	}
	return q, out, nil
}

// nameTime names attribute 0 of out, a projection's output, after the
// input's event time (timeName), where the select list leaves both free.
func nameTime(out *relation, timeName string, names map[string]bool) {
	if out.timeName != "" || timeName == "" || names[timeName] || out.schema.Attrs[0].Name != "$0" {
		return
	}
	attrs := slices.Clone(out.schema.Attrs)
	attrs[0].Name = timeName
	if s, err := query.NewSchema(out.schema.TupleSize, attrs...); err == nil {
		out.schema, out.timeName = s, timeName
		out.cols = append(out.cols, relCol{name: timeName, attr: timeName, typ: outSQLType(attrs[0], nil)})
	}
}

// projectable refuses a value the model cannot output: an untyped NULL,
// a bytes value that is not a column.
func projectable(v val, it selectItem) error {
	switch {
	case v.t == 0:
		return errAt(it.pos, "NULL has no type here: write CAST(NULL AS type)")
	case v.t == query.BytesValue && it.expr.kind != eCol:
		return errAt(it.pos, "%s is %s: a bytes value is selected as a column, not computed", exprText(it.expr), typeName(v))
	}
	return nil
}

// expandStars replaces * and qual.* in items with the columns in scope
// (all, or those of qual), named after the columns (qual.name where a
// name is in scope twice).
func expandStars(items []selectItem, sc *scope) ([]selectItem, error) {
	var out []selectItem
	for _, it := range items {
		if !it.star {
			out = append(out, it)
			continue
		}
		count := map[string]int{}
		for _, s := range sc.cols {
			if it.qual == "" || s.qual == it.qual {
				count[s.col.name]++
			}
		}
		found := false
		for _, s := range sc.cols {
			if it.qual != "" && s.qual != it.qual {
				continue
			}
			found = true
			n := &node{kind: eCol, qual: s.qual, name: s.col.name, pos: it.pos}
			alias := s.col.name
			if count[alias] > 1 {
				alias = s.qual + "." + alias
			}
			out = append(out, selectItem{expr: n, alias: &ident{name: alias, pos: it.pos}, pos: it.pos})
		}
		if !found {
			return nil, errAt(it.pos, "unknown name %s in %s.* (the query reads %s)", it.qual, it.qual, quals(sc))
		}
	}
	return out, nil
}
