package sql

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/saber-hx/saber-hx/query"
)

// An aggregation: GROUP BY, the aggregates (with FILTER), HAVING, and the
// select list over them. Where the select list is window bounds, group
// keys and aggregates as they are, it is one query; where it computes
// over them (SUM(b) * 1.0 / SUM(n), window_end in a view, TUMBLE_ROWTIME,
// CASE over a key, ...), the aggregation is a part and a stateless query
// over its output computes the select list (chained: Spec.Upstream).
//
// COUNT(DISTINCT x) is two aggregations: the inner one groups by the keys
// and x in the query's window, with the other aggregates' partial values
// (COUNT, SUM, MIN, MAX; AVG as a SUM and a COUNT); the outer one reads the
// inner's rows, a tumbling window of the inner window's slide over their
// window starts (each of its windows holds the rows of one inner window),
// groups by the keys, and counts the rows whose x is not NULL (the
// distinct values), sums the counts and sums, and takes the MIN of the
// MINs and the MAX of the MAXes.

type group struct {
	v    val
	node *node
	s    *scol
	out  string // its attribute in the aggregation's output
}

// aggState is an aggregation being compiled.
type aggState struct {
	c      *compiler
	sel    *selectStmt
	in     *input
	ws     windowSpec
	mq     *query.Query // the aggregation over the input (the inner one under COUNT(DISTINCT))
	groups []group
	usedAs map[string]bool
	seen   map[string]val             // an aggregate's text -> its value over the top aggregation's output
	types  map[string]query.ValueType // the top aggregation's names -> their types
	tsType query.ValueType            // the window start's
	size   int64                      // the window's size: window_end = window_start + size
	// session: session windows, whose end is an attribute of the output
	// (window_end, after the aggregates), not the start plus a size.
	session bool
	// COUNT(DISTINCT x): dnode is x, dx its value, dxOut its attribute
	// in the inner aggregation's output; outer the outer aggregates.
	dnode    *node
	dx       val
	dxOut    string
	outer    []query.Aggregate
	partials int
	// direct is the aggregate that is a whole select item, directName
	// that item's name; hidden names aggregates nothing names.
	direct     *node
	directName string
	hidden     string
	nHidden    int
}

// isPseudo is the window column n names (window_start, window_end,
// window_time), or "".
func isPseudo(n *node) string {
	if n.kind == eCol && n.qual == "" && (n.name == "window_start" || n.name == "window_end" || n.name == "window_time") {
		return n.name
	}
	return ""
}

func (c *compiler) aggregation(name string, sel *selectStmt, in *input, win query.Window, ws windowSpec, view bool) (*Query, *relation, error) {
	a := &aggState{c: c, sel: sel, in: in, ws: ws, usedAs: map[string]bool{"timestamp": true}, seen: map[string]val{}, types: map[string]query.ValueType{},
		tsType: in.rel.schema.Attrs[0].Value(), size: win.Size, session: win.Type == query.Session}
	if a.session {
		a.usedAs["window_end"] = true
	}
	mq := &query.Query{Name: name, Schema: in.rel.schema, Join: in.join, Window: win}
	a.mq = mq
	var err error
	if mq.Where, err = c.whereOf(sel, in); err != nil {
		return nil, nil, err
	}
	if err := a.groupBy(); err != nil {
		return nil, nil, err
	}
	if err := a.sessionPartition(); err != nil {
		return nil, nil, err
	}
	for _, at := range in.rel.schema.Attrs {
		a.usedAs[at.Name] = true
	}
	if in.join != nil {
		a.usedAs[in.join.As] = true
	}
	for i := range a.groups {
		a.usedAs[fmt.Sprintf("key%d", i+1)] = true
	}
	if err := a.distinctArg(); err != nil {
		return nil, nil, err
	}
	// the select list, over the top aggregation's output
	type item struct {
		name  string
		kind  ColumnKind
		index int
		v     val
		pos   pos
	}
	var items []item
	names, aliases := map[string]bool{}, selectAliases(sel)
	octx := a.outCtx()
	complexItems := false
	for i, it := range sel.items {
		if it.star {
			return nil, nil, errAt(it.pos, "SELECT * in an aggregation: list the group columns and aggregates")
		}
		n := it.expr
		iname := uniqueOutputName(names, aliases, it, i)
		if names[iname] {
			return nil, nil, errAt(it.pos, "output column %s is named twice (give one an alias with AS)", iname)
		}
		names[iname] = true
		a.direct, a.directName, a.hidden = nil, "", "$agg"
		if n.kind == eCall {
			a.direct, a.directName = n, iname
		}
		v, err := c.expr(octx, n)
		if err != nil {
			return nil, nil, err
		}
		if err := projectable(v, it); err != nil {
			return nil, nil, err
		}
		itm := item{name: iname, v: v, pos: it.pos}
		prop := windowProp(n)
		col, isCol := v.e.(query.Column)
		switch {
		case prop == "start" || (isCol && col.Name == "timestamp"):
			itm.kind = WindowStart
		case prop == "end":
			itm.kind = WindowEnd
		case prop == "" && isCol && n.kind == eCall && a.topAgg(col.Name) >= 0:
			itm.kind, itm.index = Aggregate, a.topAgg(col.Name)
		case prop == "" && isCol && slices.ContainsFunc(a.groups, func(g group) bool { return g.out == col.Name }):
			itm.kind, itm.index = GroupKey, slices.IndexFunc(a.groups, func(g group) bool { return g.out == col.Name })
		default:
			complexItems = true
		}
		items = append(items, itm)
	}
	// HAVING, over the top aggregation's aggregates and group columns
	var having query.Expr
	if sel.having != nil {
		a.direct, a.hidden = nil, "$having"
		hctx := a.outCtx()
		hctx.hook = nil
		// A name is the input's column first, as in Flink (whose HAVING
		// knows no select-list alias): a GROUP BY column; an alias of the
		// select list only where no GROUP BY column has the name.
		alias := func(n *node) (val, bool, error) {
			if n.qual != "" {
				return val{}, false, nil
			}
			for _, it := range items {
				if it.name != n.name {
					continue
				}
				switch it.kind {
				case Aggregate:
					return it.v, true, nil
				case GroupKey:
					g := a.groups[it.index]
					if g.s == nil {
						return val{}, true, errAt(n.pos, "HAVING can use a GROUP BY column, not the expression %s", g.v.e)
					}
					return val{e: query.C(g.out), t: g.v.t, typ: g.v.typ}, true, nil
				}
				return val{}, true, errAt(n.pos, "HAVING cannot use %s", n.name)
			}
			return val{}, false, nil
		}
		hctx.col = func(n *node) (val, error) {
			s, err := in.sc.resolve(n)
			if err != nil {
				if v, ok, err := alias(n); ok {
					return v, err
				}
				return val{}, errAt(n.pos, "HAVING can use aggregates, their aliases and GROUP BY columns; %s is none of them", exprText(n))
			}
			for _, g := range a.groups {
				if g.s != nil && g.s.col.attr == s.col.attr && g.s.side == s.side {
					return val{e: query.C(g.out), t: g.v.t, typ: g.v.typ}, nil
				}
			}
			if v, ok, err := alias(n); ok {
				return v, err
			}
			return val{}, errAt(n.pos, "HAVING can use aggregates, their aliases and GROUP BY columns; %s is not in GROUP BY", exprText(n))
		}
		v, err := c.boolean(hctx, sel.having, "HAVING")
		if err != nil {
			return nil, nil, err
		}
		having = v.e
	}
	// the top aggregation
	top := &Query{Name: name}
	if a.dnode == nil {
		if len(mq.Aggregates) == 0 {
			mq.Aggregates = append(mq.Aggregates, query.Aggregate{Func: query.Count, As: a.aggAs("$count", len(mq.Aggregates))})
		}
		mq.Having = having
		c.reading(top, in.rel)
		if err := c.finishQuery(top, mq, sel); err != nil {
			return nil, nil, err
		}
	} else {
		if len(mq.Aggregates) == 0 {
			mq.Aggregates = append(mq.Aggregates, query.Aggregate{Func: query.Count, As: "$p0"})
		}
		inner := &Query{Name: name}
		c.reading(inner, in.rel)
		if err := c.finishQuery(inner, mq, sel); err != nil {
			return nil, nil, err
		}
		inner = c.addPart(inner, name, sel.pos.line)
		outer := &query.Query{Name: name, Schema: inner.Output, Window: query.Tumbling(win.Slide), Aggregates: a.outer, Having: having}
		for _, g := range a.groups {
			outer.GroupBy = append(outer.GroupBy, query.C(g.out))
		}
		top.From, top.Spec.Upstream = inner.Name, c.output(inner)
		if err := c.finishQuery(top, outer, sel); err != nil {
			return nil, nil, err
		}
	}
	tq := top.Spec.Query
	for i, it := range items {
		switch {
		case it.kind == WindowEnd && a.session:
			// the output's own attribute: the session's end
			items[i].kind, items[i].index = Attribute, len(top.Output.Attrs)-1
		case it.kind == WindowEnd && (view || a.size != tq.Window.Size):
			items[i].kind, complexItems = 0, true
		}
	}
	unitNs := in.rel.unitNs
	if win.Type == query.Rows {
		unitNs = 0
	}
	slide, size := int64(0), int64(0)
	if win.Type == query.Range {
		slide, size = win.Slide, win.Size
	}
	if !complexItems {
		out := &relation{name: name, view: top, unitNs: unitNs, slide: slide, size: size}
		var cols []relCol
		for _, it := range items {
			oc := OutputColumn{Name: it.name, Kind: it.kind, Index: it.index}
			var labels []string
			switch it.kind {
			case WindowStart:
				oc.Attr = 0
			case WindowEnd:
				oc.Attr = -1
			case GroupKey:
				oc.Attr = 1 + it.index
				_, labels = outType(a.groups[it.index].v)
			case Aggregate:
				oc.Attr = 1 + len(a.groups) + it.index
			case Attribute:
				oc.Attr = it.index
			}
			at := top.Output.Attrs[max(oc.Attr, 0)]
			oc.Type, oc.Labels = typeText(at, outDeclOf(it.v)), labels
			if labels != nil {
				oc.Type = "BIGINT"
			}
			top.Columns = append(top.Columns, oc)
			if oc.Attr >= 0 {
				cols = append(cols, relCol{name: it.name, typ: outSQLTypeDecl(at, it.v)})
			}
		}
		c.viewRelation(out, top, cols, true)
		for _, it := range items {
			if it.kind == WindowStart {
				out.times = append(out.times, it.name)
			}
		}
		return top, out, nil
	}
	// the select list computed over the top aggregation's output
	top = c.addPart(top, name, sel.pos.line)
	q := &Query{Name: name, From: top.Name, TimeUnit: time.Duration(unitNs)}
	q.Spec.Upstream = c.output(top)
	pq := &query.Query{Name: name, Schema: top.Output}
	var cols []relCol
	startName := ""
	for i, it := range items {
		as := it.name
		if as == "timestamp" || slices.ContainsFunc(pq.Project, func(p query.Projection) bool { return p.As == as }) {
			as = fmt.Sprintf("$p%d", i+1)
		}
		pq.Project = append(pq.Project, query.Projection{Expr: it.v.e, As: as})
		oc := OutputColumn{Name: it.name, Kind: Attribute, Index: 1 + i, Attr: 1 + i}
		oc.Type, oc.Labels = outType(it.v)
		q.Columns = append(q.Columns, oc)
		cols = append(cols, relCol{name: it.name, typ: outDecl(it.v)})
		if it.kind == WindowStart && startName == "" {
			startName = it.name
		}
	}
	if err := c.finishQuery(q, pq, sel); err != nil {
		return nil, nil, err
	}
	out := &relation{name: name, view: q, unitNs: unitNs, slide: slide, size: size}
	c.viewRelation(out, q, cols, true)
	if out.timeName == "" && startName != "" {
		out.timeName = startName
	}
	for i, it := range items {
		switch {
		case it.kind == WindowStart:
			out.times = append(out.times, it.name)
		case slide > 0 && windowProp(sel.items[i].expr) == "end":
			out.ends = append(out.ends, it.name) // window_start + size
		}
	}
	return q, out, nil
}

// outDeclOf is v's declared type where it has one (kind 0: none).
func outDeclOf(v val) sqlType {
	if v.typ.isBytes() {
		return v.typ
	}
	return sqlType{}
}

// outSQLTypeDecl is the type of output attribute at, of value v, as a
// view's column: v's declared type where it is a column's (ENUM labels,
// BYTES), else the attribute's.
func outSQLTypeDecl(at query.Attribute, v val) sqlType {
	switch {
	case v.typ.kind == tyEnum:
		return outSQLType(at, v.typ.labels)
	case v.typ.isBytes():
		return v.typ
	}
	return outSQLType(at, nil)
}

// windowProp is the window property that select item n is as it is:
// "start" (window_start, TUMBLE_START(...)), "end", or "".
func windowProp(n *node) string {
	switch {
	case isPseudo(n) == "window_start":
		return "start"
	case isPseudo(n) == "window_end":
		return "end"
	case n.kind == eFunc && (windowFuncs[n.name] == "start" || windowFuncs[n.name] == "end"):
		return windowFuncs[n.name]
	}
	return ""
}

// topAgg is the index of the top aggregation's aggregate called name, or -1.
func (a *aggState) topAgg(name string) int {
	aggs := a.mq.Aggregates
	if a.dnode != nil {
		aggs = a.outer
	}
	return slices.IndexFunc(aggs, func(ag query.Aggregate) bool { return ag.As == name })
}

// groupBy compiles GROUP BY's keys (but window columns and the window).
func (a *aggState) groupBy() error {
	ctx := a.in.ctx("aggregates are not allowed in GROUP BY")
	for _, g := range a.sel.groupBy {
		if isPseudo(g) != "" || (g.kind == eFunc && groupWindows[g.name]) || a.isTimeKey(g) {
			continue
		}
		if hasCall(g) {
			return errAt(g.pos, "aggregates are not allowed in GROUP BY")
		}
		if !hasColumn(g) {
			// A constant groups nothing (Flink's reading of GROUP BY 1),
			// and RisingWave's GROUP BY 1 names the select list's first
			// column: refused, not read either way.
			return errAt(g.pos, "GROUP BY %s: a constant is not a group key (nor a position in the select list: name the column)", exprText(g))
		}
		v, err := a.c.expr(ctx, g)
		if err != nil {
			return err
		}
		if err := groupKey(v, g, "GROUP BY"); err != nil {
			return err
		}
		for _, prev := range a.groups {
			if prev.v.e.String() == v.e.String() {
				return errAt(g.pos, "%s is in GROUP BY twice", v.e)
			}
		}
		gr := group{v: v, node: g, out: fmt.Sprintf("key%d", len(a.groups)+1)}
		if col, ok := v.e.(query.Column); ok {
			gr.out = col.Name
		}
		if g.kind == eCol {
			s, _ := a.in.sc.resolve(g)
			gr.s = &s
		}
		a.groups = append(a.groups, gr)
		a.mq.GroupBy = append(a.mq.GroupBy, v.e)
	}
	return nil
}

// sessionPartition checks FROM's SESSION against GROUP BY: the engine's
// sessions are per group, Flink's SESSION table function's per PARTITION
// BY key (without it, one session over the whole stream), and Flink
// refuses an aggregation whose keys, window_start and window_end aside,
// are not exactly the PARTITION BY columns. So does this.
func (a *aggState) sessionPartition() error {
	ws := a.ws
	if ws.kind != winSession || ws.group {
		return nil
	}
	var part []string
	for _, id := range ws.partition {
		col := id
		if id.qual != "" && strings.EqualFold(id.qual, ws.input) {
			// src.k: the column of the windowed stream, whatever FROM's
			// alias, and never a joined table's of the same name.
			col = &node{kind: eCol, name: id.name, pos: id.pos, qual: a.in.streamQual()}
		}
		s, err := a.in.sc.resolve(col)
		if err != nil {
			return err
		}
		if s.side == sideTable {
			return errAt(id.pos, "PARTITION BY %s: the sessions are partitioned by the windowed stream's columns, and %s is the joined table's", exprText(id), exprText(id))
		}
		if slices.Contains(part, s.col.name) {
			return errAt(id.pos, "%s is in PARTITION BY twice", exprText(id))
		}
		part = append(part, s.col.name)
	}
	var keys []string
	for _, g := range a.groups {
		if g.s == nil || !slices.Contains(part, g.s.col.name) {
			if len(part) == 0 {
				return errAt(g.node.pos, "SESSION without PARTITION BY is one session over the whole stream, which GROUP BY %s would cut into sessions per key: partition the sessions, SESSION(TABLE src PARTITION BY key, ...) with GROUP BY window_start, window_end and the key (Flink's rule), or group them, GROUP BY SESSION(time, gap), %s", exprText(g.node), exprText(g.node))
			}
			return errAt(g.node.pos, "GROUP BY %s over SESSION(... PARTITION BY %s, ...): the sessions are per PARTITION BY key, so GROUP BY holds window_start, window_end and exactly the PARTITION BY columns (Flink's rule)", exprText(g.node), strings.Join(part, ", "))
		}
		keys = append(keys, g.s.col.name)
	}
	for i, name := range part {
		if !slices.Contains(keys, name) {
			return errAt(ws.partition[i].pos, "SESSION(... PARTITION BY %s, ...) needs %s in GROUP BY too: the sessions are per PARTITION BY key, so GROUP BY holds window_start, window_end and exactly the PARTITION BY columns (Flink's rule)", strings.Join(part, ", "), exprText(ws.partition[i]))
		}
	}
	return nil
}

// isTimeKey reports whether n names the input's time that the window
// folds into its start (input.timeKey).
func (a *aggState) isTimeKey(n *node) bool {
	if a.in.timeKey == nil || n.kind != eCol {
		return false
	}
	s, err := a.in.sc.resolve(n)
	return err == nil && s.qual == a.in.timeKey.qual && s.col.name == a.in.timeKey.col.name
}

// groupKey refuses a value that cannot be a group key.
func groupKey(v val, g *node, what string) error {
	switch {
	case v.t == 0:
		return errAt(g.pos, "%s NULL: a constant is not a group key", what)
	case v.t == query.FloatValue:
		return errAt(g.pos, "%s %s: a float is not a group key (group keys are integers, timestamps, booleans, strings, UUID or BYTES columns)", what, v.e)
	case v.t == query.BytesValue && g.kind != eCol:
		return errAt(g.pos, "%s takes UUID and BYTES columns as they are, not in expressions", what)
	}
	return nil
}

// distinctArg finds COUNT(DISTINCT x) in the select list and HAVING: x,
// the one argument the lowering takes (MIN and MAX of DISTINCT values are
// MIN and MAX), and sets up the inner aggregation's key.
func (a *aggState) distinctArg() error {
	var err error
	visit := func(n *node) {
		if err != nil || n.kind != eCall || !n.distinct {
			return
		}
		switch {
		case n.name == "min" || n.name == "max":
			n.distinct = false
		case n.name != "count":
			err = errAt(n.pos, "%s(DISTINCT ...) is not supported: only COUNT(DISTINCT x) is", strings.ToUpper(n.name))
		case n.filter != nil:
			err = errAt(n.filter.pos, "COUNT(DISTINCT ...) FILTER (WHERE ...) is not supported: filter in WHERE, or count the distinct values in a view")
		case a.dnode != nil && exprText(a.dnode) != exprText(n.l):
			err = errAt(n.pos, "COUNT(DISTINCT %s) and COUNT(DISTINCT %s) in one query are not supported: one query counts the distinct values of one expression (count the others in another query)", exprText(a.dnode), exprText(n.l))
		case a.dnode == nil:
			a.dnode = n.l
		}
	}
	for _, it := range a.sel.items {
		walkNodes(it.expr, visit)
	}
	walkNodes(a.sel.having, visit)
	if err != nil || a.dnode == nil {
		return err
	}
	switch a.mq.Window.Type {
	case query.Rows:
		return errAt(a.dnode.pos, "COUNT(DISTINCT ...) over a ROWS window is not supported: it needs a time window (TUMBLE, HOP or [RANGE ...])")
	case query.Session:
		return errAt(a.dnode.pos, "COUNT(DISTINCT ...) over SESSION windows is not supported: it needs TUMBLE, HOP or [RANGE ...] (count the distinct values per session in a view of sessions over (key, value) groups)")
	}
	if hasCall(a.dnode) {
		return errAt(a.dnode.pos, "an aggregate cannot contain another aggregate")
	}
	v, err := a.c.expr(a.in.ctx(""), a.dnode)
	if err != nil {
		return err
	}
	if err := groupKey(v, a.dnode, "COUNT(DISTINCT ...) of"); err != nil {
		return err
	}
	for _, g := range a.groups {
		if g.v.e.String() == v.e.String() {
			return errAt(a.dnode.pos, "COUNT(DISTINCT %s) of a GROUP BY key is 1 in every group: write COUNT(%s) > 0 instead", exprText(a.dnode), exprText(a.dnode))
		}
	}
	a.dx, a.dxOut = v, fmt.Sprintf("key%d", len(a.groups)+1)
	if col, ok := v.e.(query.Column); ok {
		a.dxOut = col.Name
	}
	a.usedAs[a.dxOut] = true
	a.mq.GroupBy = append(a.mq.GroupBy, v.e)
	return nil
}

// aggAs is an aggregate's name: name unless the output schema or HAVING
// has it already (an input column, the joined value, "timestamp", keyN,
// another aggregate's).
func (a *aggState) aggAs(name string, n int) string {
	if a.usedAs[name] {
		name = fmt.Sprintf("$agg%d", n+1)
	}
	for a.usedAs[name] {
		name = "$" + name
	}
	a.usedAs[name] = true
	return name
}

// outCtx is the context of the select list: the top aggregation's
// output (window bounds, group keys, aggregates).
func (a *aggState) outCtx() *exprCtx {
	return &exprCtx{
		timeUnit: func(e query.Expr) int64 {
			if a.tsType != query.IntValue || a.in.rel == nil {
				return 0
			}
			return timeIn(e, a.in.rel.unitNs, func(attr string) bool {
				return attr == "timestamp" || (a.session && attr == "window_end")
			})
		},
		scope: func(name string) (query.ValueType, error) {
			if name == "timestamp" || (a.session && name == "window_end") {
				return a.tsType, nil
			}
			for _, g := range a.groups {
				if g.out == name {
					return g.v.t, nil
				}
			}
			if t, ok := a.types[name]; ok {
				return t, nil
			}
			return 0, fmt.Errorf("no column %q", name)
		},
		call: a.call,
		col: func(n *node) (val, error) {
			return val{}, errAt(n.pos, "%s is neither in GROUP BY nor an aggregate", exprText(n))
		},
		hook: a.outHook,
	}
}

// outHook compiles the window's columns and functions, and expressions
// that are group keys.
func (a *aggState) outHook(n *node) (val, bool, error) {
	ts := query.C("timestamp")
	end := query.Expr(query.Add(ts, query.Int(a.size)))
	if a.session {
		end = query.C("window_end") // a session's own end, after its aggregates
	}
	bound := func(prop string, at *node) (val, bool, error) {
		var e query.Expr = ts
		switch prop {
		case "end":
			e = end
		case "rowtime", "time":
			e = query.Sub(end, query.Int(1))
		case "proctime":
			return val{}, true, errAt(at.pos, "%s is not supported: a window's processing time is not kept", strings.ToUpper(at.name))
		}
		t, _ := query.TypeOf(e, func(string) (query.ValueType, error) { return a.tsType, nil })
		return val{e: e, t: t}, true, nil
	}
	if a.isTimeKey(n) {
		return bound("start", n)
	}
	switch p := isPseudo(n); {
	case p == "window_start":
		return bound("start", n)
	case p == "window_end":
		return bound("end", n)
	case p == "window_time":
		return bound("time", n)
	}
	if n.kind == eFunc && windowFuncs[n.name] != "" {
		if err := a.sameWindow(n); err != nil {
			return val{}, true, err
		}
		return bound(windowFuncs[n.name], n)
	}
	if n.kind == eCall || hasCall(n) || hasPseudoNode(n) || n.kind == eNull {
		return val{}, false, nil
	}
	v, err := a.c.expr(a.in.ctx(""), n)
	if err != nil {
		return val{}, false, nil // not a group key: compiled over the output, where the error says why
	}
	for _, g := range a.groups {
		if g.v.e.String() == v.e.String() {
			return val{e: query.C(g.out), t: g.v.t, typ: g.v.typ}, true, nil
		}
	}
	return val{}, false, nil
}

// hasPseudoNode reports whether n uses a window column or function.
func hasPseudoNode(n *node) bool {
	found := false
	walkNodes(n, func(x *node) {
		if isPseudo(x) != "" || (x.kind == eFunc && windowFuncs[x.name] != "") {
			found = true
		}
	})
	return found
}

// sameWindow checks that TUMBLE_START(col, size) and its kin name the
// query's window.
func (a *aggState) sameWindow(n *node) error {
	fn := n.name[:strings.IndexByte(n.name, '_')]
	kind := map[string]winKind{"tumble": winTumble, "hop": winHop, "session": winSession}[fn]
	w := a.ws
	bad := w.kind != kind || len(n.args) == 0 || n.args[0].kind != eCol || w.timeCol == nil || n.args[0].name != w.timeCol.name
	ivs := []*interval{w.size}
	if kind == winHop {
		ivs = []*interval{w.slide, w.size}
	}
	if !bad && len(n.args) != 1+len(ivs) {
		bad = true
	}
	for i, iv := range ivs {
		if bad {
			break
		}
		x := n.args[1+i]
		bad = x.kind != eInterval || iv == nil || x.iv.n*x.iv.unitNs != iv.n*iv.unitNs
	}
	if bad {
		return errAt(n.pos, "%s(...) must name the query's window: GROUP BY %s(...) with the same arguments", strings.ToUpper(n.name), strings.ToUpper(fn))
	}
	return nil
}

// call compiles an aggregate: its value over the top aggregation's
// output (an aggregate's name, or AVG's quotient under COUNT(DISTINCT)).
func (a *aggState) call(n *node) (val, error) {
	f := query.AggFuncs[n.name]
	var arg val
	if !n.star {
		if hasCall(n.l) {
			return val{}, errAt(n.l.pos, "an aggregate cannot contain another aggregate")
		}
		var err error
		if arg, err = a.c.expr(a.in.ctx("an aggregate cannot contain another aggregate"), n.l); err != nil {
			return val{}, err
		}
		if err := aggArg(f, arg, n); err != nil {
			return val{}, err
		}
	}
	var filter query.Expr
	if n.filter != nil {
		if hasCall(n.filter) {
			return val{}, errAt(n.filter.pos, "aggregates are not allowed in FILTER")
		}
		v, err := a.c.boolean(a.in.ctx("aggregates are not allowed in FILTER"), n.filter, "FILTER (WHERE ...)")
		if err != nil {
			return val{}, err
		}
		filter = v.e
	}
	ag := query.Aggregate{Func: f, Filter: filter}
	if !n.star && (f != query.Count || query.MayBeNull(arg.e, a.mq.Nulls())) && arg.t != query.BytesValue {
		ag.Arg = arg.e // COUNT(x) of an x that is never NULL is COUNT(*)
	}
	key := fmt.Sprint(ag.Func, n.distinct, "|", ag.Arg, "|", ag.Filter)
	if v, ok := a.seen[key]; ok {
		return v, nil
	}
	name := a.directName
	if n != a.direct {
		a.nHidden++
		name = fmt.Sprintf("%s%d", a.hidden, a.nHidden)
	}
	var v val
	if a.dnode == nil {
		ag.As = a.aggAs(name, len(a.mq.Aggregates))
		a.mq.Aggregates = append(a.mq.Aggregates, ag)
		t := a.mq.AggType(ag)
		a.types[ag.As] = t
		v = val{e: query.C(ag.As), t: t}
	} else {
		outer := func(f query.AggFunc, arg query.Expr, t query.ValueType) val {
			o := query.Aggregate{Func: f, Arg: arg, As: a.aggAs(name, len(a.outer))}
			a.outer = append(a.outer, o)
			a.types[o.As] = t
			return val{e: query.C(o.As), t: t}
		}
		partial := func(p query.Aggregate) (string, query.ValueType) {
			a.partials++
			p.As = fmt.Sprintf("$p%d", a.partials)
			a.mq.Aggregates = append(a.mq.Aggregates, p)
			return p.As, a.mq.AggType(p)
		}
		switch {
		case n.distinct:
			v = outer(query.Count, query.C(a.dxOut), query.IntValue)
		case f == query.Count:
			p, _ := partial(ag)
			v = outer(query.Sum, query.C(p), query.IntValue)
		case f == query.Avg:
			s, st := partial(query.Aggregate{Func: query.Sum, Arg: ag.Arg, Filter: filter})
			k, _ := partial(query.Aggregate{Func: query.Count, Arg: ag.Arg, Filter: filter})
			sum := outer(query.Sum, query.C(s), st)
			name = name + "$n"
			cnt := outer(query.Sum, query.C(k), query.IntValue)
			v = val{e: query.Div(query.Cast{X: sum.e, To: query.FloatValue}, cnt.e), t: query.FloatValue}
		default:
			p, t := partial(ag)
			v = outer(f, query.C(p), t)
		}
	}
	a.seen[key] = v
	return v, nil
}

// aggArg refuses an argument aggregate f cannot take.
func aggArg(f query.AggFunc, arg val, n *node) error {
	what := ""
	switch {
	case f == query.Count:
		if arg.t == 0 {
			what = "NULL has no type"
		}
	case arg.t == query.BytesValue || arg.t == query.StringValue || arg.t == query.BoolValue || arg.t == 0:
		what = exprText(n.l) + " is " + typeName(arg) + ", not a number"
		if arg.t == query.BytesValue {
			what = exprText(n.l) + " is " + arg.typ.String() + ", not a number"
		}
	case arg.t == query.TimeValue && (f == query.Sum || f == query.Avg):
		what = exprText(n.l) + " is a timestamp: it takes MIN and MAX"
	}
	if what != "" {
		return errAt(n.l.pos, "%s(%s): %s", strings.ToUpper(n.name), exprText(n.l), what)
	}
	return nil
}
