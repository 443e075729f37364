package sql

import (
	"fmt"
	"slices"

	"github.com/saber-hx/saber-hx/query"
)

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

// windowJoin compiles FROM a [window] JOIN b [window] ON ... (WHERE ...).
func (c *compiler) windowJoin(q *Query, sel *selectStmt, left *relation) (*Query, *relation, error) {
	right, err := c.fromRel(sel.join)
	if err != nil {
		return nil, nil, err
	}
	if right.view != nil {
		q.FromRight, q.Spec.UpstreamRight = right.name, c.output(right.view)
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
