package sql

import (
	"fmt"
	"slices"
	"strings"

	"github.com/saber-hx/saber-hx/query"
)

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
		q.From, q.Spec.Upstream = rel.name, c.output(rel.view)
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
