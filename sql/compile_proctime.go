package sql

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/saber-hx/saber-hx/query"
)

// A processing time added by a view (Flink's CREATE VIEW v AS SELECT *,
// PROCTIME() AS p FROM src, Nexmark's q12): the source lays out a slot
// for it (Source.ProcTime), which its reader stamps with the wall clock as
// the tuples are read, as it does a column declared p AS PROCTIME(); the
// view is the source with that column visible (no query of its own: the
// queries over it read the source). A window over p reads a part, a
// stateless query whose UDF prepends p's value to each tuple as its time
// (attribute 0): a processing-time window, without a watermark delay.

// procTimeType is the type of a processing-time column.
var procTimeType = sqlType{kind: tyTimestamp, name: "TIMESTAMP_LTZ(3)"}

// isProcTime reports whether n is PROCTIME().
func isProcTime(n *node) bool {
	return n != nil && n.kind == eFunc && n.name == "proctime" && len(n.args) == 0
}

// procTimeSlots finds the views that add a processing time to what they
// read (a select item PROCTIME() AS p): the name read -> the first such
// p. Where the name is a source, its layout has a slot for it.
func procTimeSlots(stmts []*stmt) map[string]ident {
	m := map[string]ident{}
	eachSelect(stmts, func(s *stmt, sel *selectStmt) {
		if (sel == s.sel && s.kind != stView) || sel.from.sub != nil {
			return
		}
		for _, it := range sel.items {
			if !it.star && isProcTime(it.expr) && it.alias != nil {
				if _, ok := m[sel.from.name.name]; !ok {
					m[sel.from.name.name] = *it.alias
				}
			}
		}
	})
	return m
}

// eachSelect calls fn with every SELECT of stmts: each statement's, and
// the subqueries in their FROM and JOIN, inner ones after outer ones.
func eachSelect(stmts []*stmt, fn func(s *stmt, sel *selectStmt)) {
	var walk func(s *stmt, sel *selectStmt)
	walk = func(s *stmt, sel *selectStmt) {
		if sel == nil {
			return
		}
		fn(s, sel)
		walk(s, sel.from.sub)
		if sel.join != nil {
			walk(s, sel.join.sub)
		}
	}
	for _, s := range stmts {
		walk(s, s.sel)
	}
}

// procSlotName is the attribute name of source s's processing-time slot,
// for view column name: name, or $name where a column is called so.
func procSlotName(name string, taken func(string) bool) string {
	for taken(name) {
		name = "$" + name
	}
	return name
}

// procTimeView compiles s where it is a view whose select list has
// PROCTIME() AS p (done: true), or reports that it is not one.
func (c *compiler) procTimeView(s *stmt) (done bool, err error) {
	if s.kind != stView {
		return false, nil
	}
	rel, done, err := c.procTimeRel(s.name.name, "view", s.sel, s.pos.line)
	if done && err == nil {
		c.rels[s.name.name] = rel
	}
	return done, err
}

// procTimeRel is the relation of sel, a view's or a subquery's (what
// names it: "view" or "subquery") called name, where its select list has
// PROCTIME() AS p (done: true): the source it reads, with its slot for
// the processing time visible as p.
func (c *compiler) procTimeRel(name, what string, sel *selectStmt, line int) (_ *relation, done bool, err error) {
	at := -1
	for i, it := range sel.items {
		if it.star || !isProcTime(it.expr) {
			continue
		}
		if at >= 0 {
			return nil, true, errAt(it.pos, "a second PROCTIME() column: %s %s has %s", what, name, sel.items[at].alias.name)
		}
		if it.alias == nil {
			return nil, true, errAt(it.pos, "PROCTIME() needs a name in a %s: PROCTIME() AS p", what)
		}
		at = i
	}
	if at < 0 {
		return nil, false, nil
	}
	p := sel.items[at].alias
	plain := func(why string, where pos) (*relation, bool, error) {
		form := "CREATE VIEW v AS SELECT *, PROCTIME() AS p FROM source"
		if what != "view" {
			form = "(SELECT *, PROCTIME() AS p FROM source) AS s"
		}
		return nil, true, errAt(where, "a %s that adds PROCTIME() AS %s is a plain projection of a source (%s): %s (do it in a query over the %s)", what, p.name, form, why, what)
	}
	switch {
	case sel.from.sub != nil:
		return plain("it reads a subquery, not a source", sel.from.name.pos)
	case sel.join != nil:
		return plain("no join", sel.join.name.pos)
	case sel.from.win.kind != winNone:
		return plain("no window", sel.from.win.pos)
	case sel.where != nil:
		return plain("no WHERE", sel.where.pos)
	case len(sel.groupBy) > 0:
		return plain("no GROUP BY", sel.groupBy[0].pos)
	case sel.having != nil:
		return plain("no HAVING", sel.having.pos)
	}
	in, err := c.fromRel(&sel.from, name)
	if err != nil {
		return nil, true, err
	}
	src := in.source
	switch {
	case in.view != nil || src == nil:
		return nil, true, errAt(sel.from.name.pos, "PROCTIME() AS %s: %s is a view; a processing time is added to a source's tuples as they are read (CREATE VIEW v AS SELECT *, PROCTIME() AS p FROM source)", p.name, sel.from.name.name)
	case in.procTime != "":
		return nil, true, errAt(sel.items[at].pos, "a second PROCTIME() column: %s has %s", sel.from.name.name, in.procTime)
	case src.ProcTime == "":
		return nil, true, errAt(sel.items[at].pos, "PROCTIME() AS %s: source %s's records are its tuples (format '%s'), with no room for a processing time (declare format = 'csv' or 'json')", p.name, src.Name, src.Format)
	}
	slot, err := src.Schema.Lookup(src.ProcTime)
	if err != nil {
		panic(fmt.Sprintf("sql: source %s's processing time: %v", src.Name, err))
	}
	sc := &scope{cols: streamScope(in, qualOf(&sel.from), sideLeft, "")}
	out := &relation{name: name, schema: in.schema, source: src, unitNs: in.unitNs, line: line, procTime: p.name}
	names := map[string]bool{}
	add := func(col relCol, where pos) error {
		if names[col.name] {
			return errAt(where, "output column %s is named twice (give one an alias with AS)", col.name)
		}
		names[col.name] = true
		out.cols = append(out.cols, col)
		if col.attr == in.schema.Attrs[0].Name && out.timeName == "" && col.name != p.name {
			out.timeName = col.name
		}
		return nil
	}
	for i, it := range sel.items {
		var cols []relCol
		switch {
		case i == at:
			cols = []relCol{{name: p.name, attr: slot.Name, typ: procTimeType}}
		case it.star:
			for _, s := range sc.cols {
				if it.qual == "" || s.qual == it.qual {
					cols = append(cols, s.col)
				}
			}
			if len(cols) == 0 {
				return nil, true, errAt(it.pos, "unknown name %s in %s.* (the %s reads %s)", it.qual, it.qual, what, quals(sc))
			}
		case it.expr.kind == eCol:
			s, err := sc.resolve(it.expr)
			if err != nil {
				return nil, true, err
			}
			col := s.col
			if it.alias != nil {
				col.name = it.alias.name
			}
			cols = []relCol{col}
		default:
			return plain("its select list names the source's columns as they are (*, or names) beside PROCTIME()", it.pos)
		}
		for _, col := range cols {
			if err := add(col, it.pos); err != nil {
				return nil, true, err
			}
		}
	}
	return out, true, nil
}

// procTimed is rel, or where window w is over rel's processing time (a
// view's PROCTIME() column, not its time), a part of query of that reads
// rel and makes the processing time its time: a processing-time window.
// The part outputs the processing time and then the columns the query
// reads (reads; nil: the input tuple whole): its tuples are what the
// part's ordered stage copies into the query's ring, one for every input
// tuple, so the columns the query does not read are left out there.
func (c *compiler) procTimed(rel *relation, w windowSpec, reads *readNames, of string, line int) *relation {
	if rel.procTime == "" || w.timeCol == nil || w.timeCol.name != rel.procTime || rel.timeName == rel.procTime || w.kind == winRows || w.kind == winNone {
		return rel
	}
	k := slices.IndexFunc(rel.cols, func(col relCol) bool { return col.name == rel.procTime })
	a, err := rel.schema.Lookup(rel.cols[k].attr)
	if err != nil {
		panic(fmt.Sprintf("sql: %s's processing time: %v", rel.name, err))
	}
	if reads != nil {
		if read, only := reads.of(rel); only {
			return c.procTimedColumns(rel, a, func(col string) bool { return read[col] }, of, line)
		}
	}
	out, renamed := prependTime(rel.schema, rel.procTime, query.Time)
	q := c.udfPart(rel, out, fmt.Sprintf("time := %s, then the input tuple", rel.procTime), timeFrom(a.Offset), of, line)
	r := &relation{name: q.Name, schema: out, view: q, unitNs: 1e6, timeName: rel.procTime, line: rel.line}
	for _, col := range rel.cols {
		if col.name == rel.procTime {
			col.attr = rel.procTime
		} else if n, ok := renamed[col.attr]; ok {
			col.attr = n
		}
		r.cols = append(r.cols, col)
	}
	return r
}

// procTimedColumns is procTimed's part for a query that reads only some of
// rel's columns: the processing time (attribute p of rel's schema), then
// those columns.
func (c *compiler) procTimedColumns(rel *relation, p query.Attribute, reads func(col string) bool, of string, line int) *relation {
	out, cols, from, names := timedColumns(rel, rel.procTime, query.Time, reads)
	q := c.udfPart(rel, out, fmt.Sprintf("time := %s, then %s", rel.procTime, names), timeAndColumns(p.Offset, newColumnCopy(from, out)), of, line)
	return &relation{name: q.Name, schema: out, view: q, unitNs: 1e6, timeName: rel.procTime, line: rel.line, cols: cols}
}

// timedColumns lays out a part's output of a time called name (logical
// lg), then the attributes of rel's columns for which reads is true: the
// schema, the part's columns (a column called name is the time), the
// attributes copied (from rel's schema) and their columns' names, for the
// part's name in plans.
func timedColumns(rel *relation, name string, lg query.Logical, reads func(col string) bool) (out *query.Schema, cols []relCol, from []query.Attribute, names string) {
	var b query.OutputBuilder
	b.Add(query.Attribute{Name: name, Type: query.Int64, Logical: lg}, false)
	var read []string
	added := map[string]bool{name: true}
	for _, col := range rel.cols {
		switch {
		case col.name == name:
			col.attr = name
		case !reads(col.name):
			continue
		case !added[col.attr]:
			added[col.attr] = true
			a, err := rel.schema.Lookup(col.attr)
			if err != nil {
				panic(fmt.Sprintf("sql: %s's column %s: %v", rel.name, col.name, err))
			}
			b.Add(a, a.Nullable)
			from = append(from, a)
			read = append(read, col.name)
		}
		cols = append(cols, col)
	}
	out, err := b.Schema()
	if err != nil {
		panic(fmt.Sprintf("sql: %s's timed part: %v", rel.name, err))
	}
	if len(read) == 0 {
		return out, cols, from, "nothing else"
	}
	return out, cols, from, strings.Join(read, ", ")
}

// columnCopy copies attributes of an input tuple (from) to where an output
// schema lays them out (its attributes after the time, in order), NULL
// bits included. Attributes next to each other in both layouts are copied
// as one run.
type columnCopy struct {
	from, to []query.Attribute
	runs     []struct{ from, to, n int }
	nullable []int // indexes in from
	size     int   // the output's tuple size
}

func newColumnCopy(from []query.Attribute, out *query.Schema) *columnCopy {
	cc := &columnCopy{from: from, to: out.Attrs[1:], size: out.TupleSize}
	for i, a := range from {
		if l := len(cc.runs) - 1; l >= 0 && cc.runs[l].from+cc.runs[l].n == a.Offset && cc.runs[l].to+cc.runs[l].n == cc.to[i].Offset {
			cc.runs[l].n += a.Size
		} else {
			cc.runs = append(cc.runs, struct{ from, to, n int }{a.Offset, cc.to[i].Offset, a.Size})
		}
		if a.Nullable {
			cc.nullable = append(cc.nullable, i)
		}
	}
	return cc
}

// put writes time at and the attributes of input tuple t into o, an output
// tuple of zeros.
func (cc *columnCopy) put(o []byte, at uint64, t []byte) {
	binary.LittleEndian.PutUint64(o, at)
	for _, r := range cc.runs {
		copy(o[r.to:r.to+r.n], t[r.from:r.from+r.n])
	}
	for _, k := range cc.nullable {
		if cc.from[k].IsNull(t) {
			cc.to[k].SetNull(o, true)
		}
	}
}

// grow extends dst by n output tuples of zeros and returns it, and where
// they start.
func (cc *columnCopy) grow(dst []byte, n int) ([]byte, int) {
	base := len(dst)
	dst = slices.Grow(dst, n*cc.size)[:base+n*cc.size]
	clear(dst[base:])
	return dst, base
}

// timeAndColumns is a UDF's function that outputs, for each input tuple,
// the int64 at offset off as the time, then cc's attributes.
func timeAndColumns(off int, cc *columnCopy) func(in []byte, tupleSize int, out []byte) []byte {
	return func(in []byte, ts int, dst []byte) []byte {
		n := len(in) / ts
		dst, base := cc.grow(dst, n)
		for i := range n {
			t := in[i*ts : (i+1)*ts]
			o := base + i*cc.size
			cc.put(dst[o:o+cc.size], binary.LittleEndian.Uint64(t[off:]), t)
		}
		return dst
	}
}

// udfPart adds to the program, and returns, a part of query of that reads
// rel and runs a UDF called name whose function fn outputs tuples of
// schema out.
func (c *compiler) udfPart(rel *relation, out *query.Schema, name string, fn func(in []byte, tupleSize int, out []byte) []byte, of string, line int) *Query {
	q := &Query{Name: of}
	c.reading(q, rel)
	mq := &query.Query{Name: of, Schema: rel.schema, UDF: &query.UDF{Name: name, Output: out, Fn: fn}}
	if err := mq.Validate(); err != nil {
		panic(fmt.Sprintf("sql: %s: %v", mq.Name, err))
	}
	q.Spec.Query, q.Output = mq, out
	return c.addPart(q, of, line)
}

// prependTime is schema s with a time attribute before its own: name at
// offset 0 (logical lg), then s's attributes 8 bytes further on, their
// NULL bits with them. An attribute of s called name is renamed ($name,
// or longer): renamed maps the old names to the new.
func prependTime(s *query.Schema, name string, lg query.Logical) (*query.Schema, map[string]string) {
	taken := map[string]bool{name: true}
	for _, a := range s.Attrs {
		taken[a.Name] = true
	}
	renamed := map[string]string{}
	attrs := []query.Attribute{{Name: name, Type: query.Int64, Offset: 0, Size: 8, Logical: lg}}
	for _, a := range s.Attrs {
		if a.Name == name {
			n := procSlotName("$"+name, func(x string) bool { return taken[x] })
			taken[n] = true
			renamed[a.Name] = n
			a.Name = n
		}
		a.Offset += 8
		if a.Nullable {
			a.NullBit += 64
		}
		attrs = append(attrs, a)
	}
	out, err := query.NewSchema(s.TupleSize+8, attrs...)
	if err != nil {
		panic(fmt.Sprintf("sql: prepending a time: %v", err))
	}
	return out, renamed
}

// timeFrom is a UDF's function that outputs each input tuple after a
// time: the int64 at offset off of the tuple.
func timeFrom(off int) func(in []byte, tupleSize int, out []byte) []byte {
	return func(in []byte, ts int, out []byte) []byte {
		n := len(in) / ts
		out = slices.Grow(out, n*(ts+8))
		for i := range n {
			t := in[i*ts : (i+1)*ts]
			out = append(out, t[off:off+8]...)
			out = append(out, t...)
		}
		return out
	}
}
