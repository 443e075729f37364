package sql

import (
	"fmt"
	"slices"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

// keyClass is how a join key's values match: "bytes" (UUID, BYTES(n):
// their bytes), "int" (integers: their values), "string", or "" (none).
func keyClass(t sqlType) string {
	switch t.kind {
	case tyUUID, tyBytes:
		return "bytes"
	case tyInt, tyBigint, tyEnum:
		return "int"
	case tyTimestamp:
		return "time"
	case tyString:
		return "string"
	}
	return ""
}

// staticJoin compiles FROM stream JOIN table ON stream.k = table.k. An
// aggregation that groups by one table column of UUID or BYTES values
// alone, or uses none (a semi-join), joins as the model's aggregation
// join (query.StaticJoin.As, the engine's dense groups); anything else is
// a lookup join (query.StaticJoin.Values: the table's columns the query
// uses, read after the stream's), under an aggregation a part of its own
// whose output the aggregation reads.
func (c *compiler) staticJoin(name string, sel *selectStmt, rel *relation, t *Table, view bool) (*Query, *relation, error) {
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
	if j.asOf != nil {
		if err := asOfProcTime(j, rel, sc, t); err != nil {
			return nil, nil, err
		}
	}
	for i, col := range t.Columns {
		sc.cols = append(sc.cols, scol{qual: tq, col: relCol{name: col.Name, attr: col.Name, typ: t.types[i]}, side: sideTable, tcol: i})
	}
	// ON stream.col = table.col, or ON expr = table.col with expr over the
	// stream's columns (a part before the join computes it)
	on := sel.on
	if on.kind != eBinary || on.op != "=" {
		return nil, nil, errAt(on.pos, "a join with table %s needs ON stream.column = %s.column (one equality of a stream column, or an expression of them, with a table column)", t.Name, tq)
	}
	tableCol := func(n *node) (scol, bool) {
		if n.kind != eCol {
			return scol{}, false
		}
		s, err := sc.resolve(n)
		return s, err == nil && s.side == sideTable
	}
	streamSide, tableSide := on.l, on.r
	if _, ok := tableCol(on.l); ok {
		streamSide, tableSide = on.r, on.l
	}
	notStreamAndTable := func() error {
		return errAt(on.pos, "ON must compare a column of the stream (or an expression of them) with a column of table %s", t.Name)
	}
	b, ok := tableCol(tableSide)
	if !ok {
		if _, err := sc.resolve(tableSide); tableSide.kind == eCol && err != nil {
			return nil, nil, err
		}
		return nil, nil, notStreamAndTable()
	}
	var a scol
	var keyExpr query.Expr // a key the lookup kernel computes (computedKey)
	if streamSide.kind == eCol {
		var err error
		if a, err = sc.resolve(streamSide); err != nil {
			return nil, nil, err
		}
		if a.side == sideTable {
			return nil, nil, notStreamAndTable()
		}
	} else {
		if err := streamOnly(streamSide, sc, t.Name); err != nil {
			return nil, nil, err
		}
		var err error
		if keyExpr, a, err = c.computedKey(rel, sc, streamSide); err != nil {
			return nil, nil, err
		}
		if keyExpr == nil {
			keyed, key, err := c.keyPart(name, sel, rel, sc, streamSide)
			if err != nil {
				return nil, nil, err
			}
			rel, a = keyed, scol{qual: sq, col: key, side: sideLeft}
			sc = &scope{cols: append(streamScope(rel, sq, sideLeft, ""), sc.cols[len(sc.cols)-len(t.Columns):]...)}
		}
	}
	ka, kb := keyClass(a.col.typ), keyClass(b.col.typ)
	aName := a.qual + "." + a.col.name
	if streamSide.kind != eCol {
		aName = exprText(streamSide)
	}
	switch {
	case ka == "" || ka != kb:
		return nil, nil, errAt(on.pos, "the join keys %s (%s) and %s.%s (%s) do not match: a join with a table matches UUID or BYTES(n) columns of one size, integers, timestamps, or strings", aName, a.col.typ, b.qual, b.col.name, b.col.typ)
	case ka == "bytes" && a.col.typ.size != b.col.typ.size:
		return nil, nil, errAt(on.pos, "the join keys differ in size: %s.%s is %s, %s.%s is %s", a.qual, a.col.name, a.col.typ, b.qual, b.col.name, b.col.typ)
	case a.col.typ.kind == tyEnum && b.col.typ.kind == tyEnum && !slices.Equal(a.col.typ.labels, b.col.typ.labels):
		// The table is looked up by the stream's codes, which mean other
		// labels in the table's.
		return nil, nil, errAt(on.pos, "the join keys %s (%s) and %s.%s (%s) are ENUMs of different labels: declare them alike", aName, a.col.typ, b.qual, b.col.name, b.col.typ)
	}
	key := b.tcol
	keyAttr, _ := rel.schema.Lookup(a.col.attr)
	if keyExpr != nil {
		keyAttr = computedKeyAttr(a.col.typ)
	}
	keyWidth := keyAttr.Size
	if ka == "string" {
		keyWidth = 0
	}
	// The table's columns the query uses, and whether the aggregation
	// join can run it: one UUID or BYTES column, the only group key, used
	// as a column of the select list and nowhere else.
	used := map[int]bool{}
	asForm := ka == "bytes"
	// keyRead: the table's key column is read too (the aggregation join
	// reads it as the stream's key, the same bytes; a lookup join lays it
	// out with the other values, of its own type).
	keyRead := false
	onlyAsColumn := func(n *node, ok bool) {
		walkNodes(n, func(x *node) {
			if x.kind != eCol {
				return
			}
			s, err := sc.resolve(x)
			switch {
			case err != nil || s.side != sideTable:
			case s.tcol == key:
				keyRead = true
			default:
				used[s.tcol] = true
				if !ok || x != n {
					asForm = false
				}
			}
		})
	}
	for _, it := range sel.items {
		if it.star {
			asForm = false
			for _, s := range sc.cols {
				if s.side == sideTable && (it.qual == "" || it.qual == tq) {
					used[s.tcol] = true
				}
			}
			continue
		}
		onlyAsColumn(it.expr, true)
	}
	onlyAsColumn(sel.where, false)
	onlyAsColumn(sel.having, false)
	nGroups := 0
	for _, g := range sel.groupBy {
		if isPseudo(g) == "" && !(g.kind == eFunc && groupWindows[g.name]) {
			nGroups++
		}
	}
	value := -1
	for _, g := range sel.groupBy {
		if g.kind != eCol {
			onlyAsColumn(g, false)
			continue
		}
		if s, err := sc.resolve(g); err == nil && s.side == sideTable && s.tcol == key {
			keyRead = true
		} else if err == nil && s.side == sideTable {
			used[s.tcol] = true
			value = s.tcol
			if nGroups > 1 {
				asForm = false
			}
		}
	}
	aggregating := len(sel.groupBy) > 0 || sel.having != nil || slices.ContainsFunc(sel.items, func(it selectItem) bool { return hasCall(it.expr) })
	if gw, _, _ := groupWindow(sel); gw.kind == winSession || sel.from.win.kind == winSession {
		asForm = false // sessions aggregate the lookup join's output
	}
	if len(used) > 1 || (len(used) == 1 && (value < 0 || !used[value] || !t.types[value].isBytes())) || !aggregating {
		asForm = false
	}
	var keyNotNull query.Expr
	if keyAttr.Nullable && ka != "bytes" {
		// A NULL key matches no row. (A NULL UUID or BYTES key is its zero
		// bytes, which the kernels compare as they are: a table has no
		// NULL key, and a zero one is unlikely.)
		keyNotNull = query.IsNull{X: query.C(keyAttr.Name), Not: true}
	}
	if asForm {
		join := &query.StaticJoin{Column: a.col.attr, As: "$value"}
		if value >= 0 {
			join.As = t.Columns[value].Name
			if _, err := rel.schema.Lookup(join.As); err == nil {
				return nil, nil, errAt(j.name.pos, "table %s's column %s has the name of a column of %s: rename one of them", t.Name, join.As, rel.name)
			}
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
		vcol := value
		if vcol < 0 {
			vcol = key
		}
		join.Table = &query.StaticTable{KeyWidth: keyWidth, ValueWidth: t.Columns[vcol].Attr.Size}
		in := &input{rel: rel, sc: sc, schema: rel.schema, join: join}
		s2 := withWhere(sel, sel.where, keyNotNull)
		q, out, err := c.single(name, s2, in, sel.from.win, view)
		if err != nil {
			return nil, nil, err
		}
		t.uses = append(t.uses, &tableUse{key: key, value: vcol, keyAttr: keyAttr, t: join.Table})
		return q, out, nil
	}
	// A lookup join: the used columns laid out as the joined value, the
	// key among them where it is read (a semi-join's: the key alone).
	var values []int
	for i := range t.Columns {
		if used[i] || (i == key && (keyRead || len(used) == 0)) {
			values = append(values, i)
		}
	}
	taken := map[string]bool{}
	for _, at := range rel.schema.Attrs {
		taken[at.Name] = true
	}
	var vattrs []query.Attribute
	off := 0
	for _, i := range values {
		n := tq + "." + t.Columns[i].Name
		for taken[n] {
			n = "$" + n
		}
		taken[n] = true
		at := t.types[i].attr(n, off)
		off += at.Size
		vattrs = append(vattrs, at)
	}
	bit := off * 8
	for k, i := range values {
		if t.Columns[i].Attr.Nullable {
			vattrs[k].Nullable, vattrs[k].NullBit = true, bit
			bit++
		}
	}
	vs, err := query.NewRowSchema((bit+7)/8, vattrs...)
	if err != nil {
		return nil, nil, errAt(j.name.pos, "table %s's columns: %v", t.Name, err)
	}
	attrOf := map[int]string{}
	for k, i := range values {
		attrOf[i] = vs.Attrs[k].Name
	}
	for k := range sc.cols {
		if s := &sc.cols[k]; s.side == sideTable {
			if n, ok := attrOf[s.tcol]; ok {
				s.col.attr = n
			} else {
				s.col.attr = "$unused." + s.col.name
			}
		}
	}
	join := &query.StaticJoin{Column: a.col.attr, Key: keyExpr, Values: vs, Table: &query.StaticTable{KeyWidth: keyWidth, ValueWidth: vs.TupleSize}}
	if keyExpr != nil {
		join.Column = ""
	}
	use := &tableUse{key: key, value: -1, keyAttr: keyAttr, values: values, schema: vs, t: join.Table}
	joined := (&query.Query{Schema: rel.schema, Join: join}).JoinedSchema()
	if !aggregating {
		in := &input{rel: rel, sc: sc, schema: joined, join: join}
		q, out, err := c.stateless(name, withWhere(sel, sel.where, keyNotNull), in, sel.from.win.kind != winNone, sel.from.win, view)
		if err != nil {
			return nil, nil, err
		}
		t.uses = append(t.uses, use)
		return q, out, nil
	}
	if sel.from.win.kind == winRows {
		return nil, nil, errAt(sel.from.win.pos, "a ROWS window over a join with table %s that groups by its columns (or uses several) is not supported: the rows would be counted after the join (use a time window)", t.Name)
	}
	// The aggregation over the lookup join's output: the join (with
	// WHERE) is a part, its tuples the stream's then the table's values.
	jq := &Query{Name: name}
	c.reading(jq, rel)
	in0 := &input{rel: rel, sc: sc, schema: joined, join: join}
	mq := &query.Query{Name: name, Schema: rel.schema, Join: join}
	where, err := c.whereOf(sel, in0)
	if err != nil {
		return nil, nil, err
	}
	mq.Where = andTerms(where, keyNotNull)
	if err := c.finishQuery(jq, mq, sel); err != nil {
		return nil, nil, err
	}
	for _, at := range joined.Attrs {
		oc := OutputColumn{Name: at.Name, Kind: Attribute, Index: len(jq.Columns), Attr: len(jq.Columns), Type: typeText(at, sqlType{})}
		jq.Columns = append(jq.Columns, oc)
	}
	c.addPart(jq, name, sel.pos.line)
	t.uses = append(t.uses, use)
	// The join's tuples are the stream's, filtered, as late as they: a
	// window over them waits the stream's delay, rel's where rel is a
	// view or the key part, whose source is none (watermarkDelay).
	r0 := &relation{name: jq.Name, schema: jq.Output, view: jq, source: rel.source, unitNs: rel.unitNs, timeName: rel.timeName, line: rel.line, delay: rel.watermarkDelay(), pairs: rel.pairs}
	for _, s := range sc.cols {
		r0.cols = append(r0.cols, s.col)
	}
	in := &input{rel: r0, sc: sc, schema: r0.schema}
	return c.single(name, withWhere(sel, nil, nil), in, sel.from.win, view)
}

// asOfProcTime checks JOIN table FOR SYSTEM_TIME AS OF col (Flink's
// temporal join): col must be the stream's processing time. The table is
// static, loaded before the run, so that a lookup at any processing time
// finds the same rows, and the join is the lookup join without AS OF; an
// event time would ask for the table's version at that time, which a
// static table does not keep.
func asOfProcTime(j *fromItem, rel *relation, sc *scope, t *Table) error {
	s, err := sc.resolve(j.asOf)
	if err != nil {
		return err
	}
	if s.col.name == rel.procTime || (rel.source != nil && rel.source.ProcTime != "" && s.col.attr == rel.source.ProcTime) {
		return nil
	}
	return errAt(j.asOf.pos, "FOR SYSTEM_TIME AS OF %s: a temporal join of table %s is at the stream's processing time (a column AS PROCTIME(), or SELECT *, PROCTIME() AS p FROM source); %s is not one, and an event time asks for the table's versions, which a static table (loaded once before the run) does not have", j.asOf.name, t.Name, j.asOf.name)
}

// joinKeyName is the attribute a key part adds: the stream's side of
// ON expr = table.col, computed.
const joinKeyName = "$joinkey"

// streamOnly refuses an ON key expression that reads a column of table
// (its other side is the stream's).
func streamOnly(e *node, sc *scope, table string) error {
	var err error
	walkNodes(e, func(x *node) {
		if x.kind != eCol || err != nil {
			return
		}
		if s, rerr := sc.resolve(x); rerr != nil {
			err = rerr
		} else if s.side == sideTable {
			err = errAt(x.pos, "ON compares a column of table %s with an expression that reads the table's %s: the expression is the stream's side, of the stream's columns", table, x.name)
		}
	})
	return err
}

// keyPart is a part of query name that reads rel and outputs its visible
// columns and key, an expression of them: the stream that JOIN table ON
// key = table.col joins, keyed by a column (the lookup reads one). It
// returns the part's relation, key not among its visible columns, and
// key's column.
func (c *compiler) keyPart(name string, sel *selectStmt, rel *relation, sc *scope, key *node) (*relation, relCol, error) {
	ps := &selectStmt{pos: sel.pos, from: sel.from}
	ps.from.win = windowSpec{}
	// The part copies the columns the query reads (all under a * of the
	// stream), its time and processing time.
	all := slices.ContainsFunc(sel.items, func(it selectItem) bool { return it.star && it.qual != qualOf(sel.join) })
	read := map[string]bool{rel.timeName: true, rel.procTime: true}
	if gw, _, _ := groupWindow(sel); gw.timeCol != nil {
		read[gw.timeCol.name] = true
	}
	if sel.from.win.timeCol != nil {
		read[sel.from.win.timeCol.name] = true
	}
	selectColumns(sel, func(n *node) {
		if s, err := sc.resolve(n); err == nil && s.side != sideTable {
			read[s.col.name] = true
		}
	})
	for _, s := range sc.cols {
		if s.side != sideTable && (all || read[s.col.name]) {
			ps.items = append(ps.items, selectItem{expr: &node{kind: eCol, qual: s.qual, name: s.col.name, pos: key.pos}, pos: key.pos})
		}
	}
	ps.items = append(ps.items, selectItem{expr: key, alias: &ident{name: joinKeyName, pos: key.pos}, pos: key.pos})
	in := &input{rel: rel, sc: &scope{cols: streamScope(rel, qualOf(&sel.from), sideLeft, "")}, schema: rel.schema}
	q, out, err := c.stateless(name, ps, in, false, windowSpec{}, true)
	if err != nil {
		return nil, relCol{}, err
	}
	q = c.addPart(q, name, sel.pos.line)
	out.name, out.view = q.Name, q
	k := slices.IndexFunc(out.cols, func(col relCol) bool { return col.name == joinKeyName })
	col := out.cols[k]
	out.cols = slices.Delete(out.cols, k, k+1)
	if a, err := out.schema.Lookup(col.attr); err == nil && col.typ.kind == 0 {
		col.typ = outSQLType(a, nil) // a computed value's type is its attribute's
	}
	return out, col, nil
}

// computedKey compiles the stream's side of a lookup join's ON, an
// expression of the stream's columns, for the lookup kernel to compute as
// it looks the keys up: an integer or a string (query.StaticJoin.Key). It
// returns a nil key where the expression is of another type, which a part
// before the join computes (keyPart), and the key as a column of the
// stream's for the checks of the keys' types.
func (c *compiler) computedKey(rel *relation, sc *scope, key *node) (query.Expr, scol, error) {
	in := &input{rel: rel, sc: sc, schema: rel.schema}
	v, err := c.expr(in.ctx("aggregates are not allowed in a join's ON"), key)
	if err != nil {
		return nil, scol{}, err
	}
	var typ sqlType
	switch v.t {
	case query.IntValue:
		typ = sqlType{kind: tyBigint}
		if v.typ.kind == tyEnum {
			// an ENUM's codes (COALESCE, CASE of ENUM columns): the
			// table's ENUM must have its labels, as a column's must
			typ = v.typ
		}
	case query.StringValue:
		typ = sqlType{kind: tyString}
	default:
		return nil, scol{}, nil
	}
	return v.e, scol{col: relCol{name: joinKeyName, typ: typ}, side: sideLeft}, nil
}

// computedKeyAttr is the attribute that a computed key of type typ
// (computedKey) would be as a column: the table's keys are encoded as its
// values (an integer's 8 little-endian bytes, a string's bytes).
func computedKeyAttr(typ sqlType) query.Attribute {
	if typ.kind == tyString {
		return query.Attribute{Name: joinKeyName, Type: query.String, Size: strview.Size}
	}
	return query.Attribute{Name: joinKeyName, Type: query.Int64, Size: 8}
}

// withWhere is sel with WHERE where (nil: none), and term in the model's
// WHERE too (nil: none), without its join.
func withWhere(sel *selectStmt, where *node, term query.Expr) *selectStmt {
	s := *sel
	s.where, s.join = where, nil
	s.extraWhere = term
	return &s
}

// andTerms is a AND b, either nil.
func andTerms(a, b query.Expr) query.Expr {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return flatten(a, b, true)
}

// onTimes reports whether ON holds, among the terms it ANDs, left's time
// = right's time, or, where their windows have one size, left's window
// end = right's (the same windows: Nexmark's q8 as Flink's users may
// write it, ON P.endtime = A.endtime).
func onTimes(sel *selectStmt, left, right *relation) bool {
	lq, rq := qualOf(&sel.from), qualOf(sel.join)
	sc := &scope{cols: append(streamScope(left, lq, sideLeft, ""), streamScope(right, rq, sideRight, "")...)}
	var terms func(n *node) bool
	terms = func(n *node) bool {
		if n == nil || n.kind != eBinary {
			return false
		}
		if n.op == "and" {
			return terms(n.l) || terms(n.r)
		}
		if n.op != "=" || n.l.kind != eCol || n.r.kind != eCol {
			return false
		}
		a, err1 := sc.resolve(n.l)
		b, err2 := sc.resolve(n.r)
		if err1 != nil || err2 != nil || a.side == b.side {
			return false
		}
		if a.side == sideRight {
			a, b = b, a
		}
		if left.size == right.size && slices.Contains(left.ends, a.col.name) && slices.Contains(right.ends, b.col.name) {
			return true
		}
		return isTime(left, a) && isTime(right, b)
	}
	return terms(sel.on)
}

// windowJoin compiles FROM a [window] JOIN b [window] ON ... (WHERE ...):
// the join of the two streams' windows (its pairs), and where the select
// list is not *, a query over the pairs: a projection, or an aggregation
// in the join's tumbling time window.
func (c *compiler) windowJoin(name string, sel *selectStmt, left *relation, view bool) (*Query, *relation, error) {
	right, err := c.fromRel(sel.join, name)
	if err != nil {
		return nil, nil, err
	}
	right = c.procTimed(right, sel.join.win, nil, name, sel.pos.line)
	wl, okl, err := c.window(sel.from.win, left)
	if err != nil {
		return nil, nil, err
	}
	wr, okr, err := c.window(sel.join.win, right)
	if err != nil {
		return nil, nil, err
	}
	interval := false
	switch {
	case !okl && !okr && left.slide > 0 && left.slide == right.slide && left.unitNs == right.unitNs && left.unitNs > 0 && onTimes(sel, left, right):
		// Two views of windows joined on their times: a tumbling window of
		// their slide holds the rows of one window of each.
		wl, wr, okl, okr = query.Tumbling(left.slide), query.Tumbling(left.slide), true, true
	case !okl && !okr:
		// An interval join of a stream with a view of TUMBLE windows
		// (compile_interval.go), or an error naming that shape.
		if left, right, wl, err = c.intervalJoin(name, sel, left, right); err != nil {
			return nil, nil, err
		}
		if wl.Size > 0 {
			wr, okl, okr, interval = wl, true, true, true
		} else if left.slide == 0 && right.slide == 0 {
			// Neither is a view of windows: a regular join
			// (compile_regular.go).
			return c.regularJoin(name, sel, left, right, view)
		}
	}
	if !okl {
		return nil, nil, errAt(sel.from.name.pos, "a join of two streams needs a window on each side ([ROWS n], [RANGE ...], TUMBLE or HOP); %s has none (a regular join is of two streams neither windowed nor views of windows; %s)", fromName(&sel.from), intervalShape)
	}
	if !okr {
		return nil, nil, errAt(sel.join.name.pos, "a join of two streams needs a window on each side ([ROWS n], [RANGE ...], TUMBLE or HOP); %s has none (a regular join is of two streams neither windowed nor views of windows; %s)", fromName(sel.join), intervalShape)
	}
	q := &Query{Name: name}
	c.reading(q, left)
	if right.view != nil {
		q.FromRight, q.Spec.UpstreamRight = right.name, c.output(right.view)
	} else {
		q.InputRight = right.inputName()
	}
	if wl.Type == query.Session {
		return nil, nil, errAt(sel.from.win.pos, "a join of two streams over SESSION windows is not supported: join over TUMBLE, HOP, [RANGE ...] or [ROWS ...]")
	}
	if wl.Delay != wr.Delay {
		// The sides' WATERMARK delays differ: the join's windows wait the
		// longer, so that neither side loses as late a tuple its own
		// watermark keeps (Flink's join waits for the slower of its two
		// watermarks).
		wl.Delay = max(wl.Delay, wr.Delay)
		wr.Delay = wl.Delay
	}
	if wl != wr {
		return nil, nil, errAt(sel.join.win.pos, "the two sides of a join need the same window, for now (%s %d/%d and %s %d/%d)", wl.Type, wl.Size, wl.Slide, wr.Type, wr.Size, wr.Slide)
	}
	lq, rq := qualOf(&sel.from), qualOf(sel.join)
	if lq == rq {
		return nil, nil, errAt(sel.join.name.pos, "both sides of the join are called %s: give them aliases", lq)
	}
	sc := &scope{cols: append(streamScope(left, lq, sideLeft, query.LeftPrefix), streamScope(right, rq, sideRight, query.RightPrefix)...)}
	j := &query.WindowJoin{Name: name, Left: left.schema, Right: right.schema, Window: wl}
	in := &input{sc: sc, schema: j.OutputSchemaUnchecked(), sides: []*relation{sideLeft: left, sideRight: right}}
	ctx := in.ctx("aggregates are not allowed in a join condition")
	on, err := c.boolean(ctx, sel.on, "ON")
	if err != nil {
		return nil, nil, err
	}
	j.Where = on.e
	if sel.where != nil {
		ctx.callErr = "aggregates are not allowed in WHERE"
		w, err := c.boolean(ctx, sel.where, "WHERE")
		if err != nil {
			return nil, nil, err
		}
		j.Where = flatten(j.Where, w.e, true)
	}
	out, pairs, err := c.joinPairs(name, sel, q, j, sc, left.unitNs, true)
	if err != nil {
		return nil, nil, err
	}
	aggregating := len(sel.groupBy) > 0 || sel.having != nil || slices.ContainsFunc(sel.items, func(it selectItem) bool { return hasCall(it.expr) })
	if !aggregating && len(sel.items) == 1 && sel.items[0].star && sel.items[0].qual == "" {
		return q, out, nil
	}
	// The select list over the pairs: the join is a part.
	if aggregating && interval {
		return nil, nil, errAt(sel.pos, "an aggregation over an interval join is not supported: select the joined rows in a view, and aggregate over the view")
	}
	if aggregating && (wl.Type != query.Range || wl.Size != wl.Slide) {
		return nil, nil, errAt(sel.pos, "an aggregation over a join of two streams needs a tumbling time window on both sides (TUMBLE or [RANGE size]): a sliding or ROWS window outputs a pair once per window that holds it")
	}
	c.addPart(q, name, sel.pos.line)
	out.name = q.Name
	pin := &input{rel: out, sc: pairs, schema: out.schema}
	s2 := withWhere(sel, nil, nil)
	if !aggregating {
		return c.stateless(name, s2, pin, false, windowSpec{}, view)
	}
	// Each pair's time is its left tuple's, in the join's window: a
	// tumbling window of the same size holds the pairs of each window.
	return c.aggregation(name, s2, pin, query.Tumbling(wl.Size), sel.from.win, view)
}

// joinPairs makes q the join j of the sides of scope sc (their columns
// named l.<attr> and r.<attr>) and returns the relation of its pairs,
// each column visible by its own name where unique, else as qual.name,
// and the scope of those names by side, for the select list over the
// pairs. timed says whether the pairs' attribute 0 (the left time) is an
// event time the relation may window by: a window join's, not a regular
// join's (Flink's regular join outputs no time attribute).
func (c *compiler) joinPairs(name string, sel *selectStmt, q *Query, j *query.WindowJoin, sc *scope, unitNs int64, timed bool) (*relation, *scope, error) {
	outSchema, err := j.OutputSchema()
	if err != nil {
		return nil, nil, errAt(sel.onPos, "%v", err)
	}
	q.Spec.Join, q.Output = j, outSchema
	out := &relation{name: name, view: q, unitNs: unitNs}
	// visible columns: a column's own name where it is unique, else qual.name
	count := map[string]int{}
	for _, s := range sc.cols {
		count[s.col.name]++
	}
	attrs := slices.Clone(outSchema.Attrs)
	named := make([]bool, len(attrs))
	pairs := &scope{}
	for _, s := range sc.cols {
		name := s.col.name
		if count[name] > 1 {
			name = s.qual + "." + name
		}
		a := slices.IndexFunc(outSchema.Attrs, func(a query.Attribute) bool { return a.Name == s.col.attr })
		attrs[a].Name, named[a] = name, true
		oc := OutputColumn{Name: name, Kind: Attribute, Index: a, Attr: a, Type: typeText(outSchema.Attrs[a], s.col.typ), Labels: s.col.typ.labels}
		q.Columns = append(q.Columns, oc)
		out.cols = append(out.cols, relCol{name: name, attr: name, typ: s.col.typ})
		pairs.cols = append(pairs.cols, scol{qual: s.qual, col: relCol{name: s.col.name, attr: name, typ: s.col.typ}, side: s.side})
		if a == 0 && timed {
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
	return out, pairs, nil
}
