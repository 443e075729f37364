package sql

import (
	"fmt"
	"slices"

	"github.com/saber-hx/saber-hx/query"
)

// Sink tables, as Flink writes its sinks: CREATE TABLE name (cols) WITH
// (connector = 'blackhole' | 'print' | 'filesystem' | 'kafka' | ...),
// then INSERT INTO name SELECT ...: the SELECT's columns by position (or
// as INSERT INTO name (cols) lists them), each cast to its table
// column's type where it is another.

// declaredColumns are a sink table's columns as output columns, for its
// options (a kafka key, a redis key template) to name.
func declaredColumns(s *stmt) []OutputColumn {
	cols := make([]OutputColumn, len(s.cols))
	for i, col := range s.cols {
		cols[i] = OutputColumn{Name: col.name.name, Kind: Attribute, Index: i, Attr: i, Type: col.typ.String(), Labels: col.typ.labels}
	}
	return cols
}

func (c *compiler) sinkTable(s *stmt) error {
	if err := c.declare(s.name, "sink table"); err != nil {
		return err
	}
	if err := columnsOf(s, "table"); err != nil {
		return err
	}
	if s.wm != nil {
		return errAt(s.wm.pos, "table %s is a sink (INSERT INTO writes it): it has no event time to declare", s.name.name)
	}
	for _, col := range s.cols {
		if col.proctime {
			return errAt(col.typPos, "table %s is a sink (INSERT INTO writes it): it has no processing time", s.name.name)
		}
	}
	if _, err := sinkOptions(s.name.name, s, declaredColumns(s)); err != nil {
		return err
	}
	c.sinks[s.name.name] = s
	return nil
}

func (c *compiler) insert(s *stmt) error {
	name := s.name.name
	st, ok := c.sinks[name]
	if !ok {
		if what, ok := c.names[name]; ok {
			return errAt(s.name.pos, "%s is a %s: INSERT INTO writes a sink table (CREATE TABLE %s (...) WITH (connector = 'blackhole' | 'print' | 'filesystem' | 'kafka' | ...))", name, what, name)
		}
		return errAt(s.name.pos, "unknown table %s: declare it above with CREATE TABLE %s (...) WITH (connector = ...)", name, name)
	}
	if line, dup := c.inserted[name]; dup {
		return errAt(s.name.pos, "table %s is written by the INSERT INTO at line %d already: a sink table takes one", name, line)
	}
	c.inserted[name] = s.pos.line
	// the table's columns in the SELECT's order
	targets := make([]colDef, len(st.cols))
	copy(targets, st.cols)
	if s.into != nil {
		if len(s.into) != len(st.cols) {
			return errAt(s.into[0].pos, "INSERT INTO %s names %d columns; the table has %d: name every one", name, len(s.into), len(st.cols))
		}
		for i, id := range s.into {
			k := slices.IndexFunc(st.cols, func(c colDef) bool { return c.name.name == id.name })
			if k < 0 {
				return errAt(id.pos, "table %s has no column %s", name, id.name)
			}
			if slices.ContainsFunc(s.into[:i], func(o ident) bool { return o.name == id.name }) {
				return errAt(id.pos, "column %s is named twice", id.name)
			}
			targets[i] = st.cols[k]
		}
	}
	q, rel, err := c.selectQuery(name, s.sel, false)
	if err != nil {
		return err
	}
	// what a partitioned sink's watermark reads: the event times that
	// the query's tuples carry, and the delay of the source they are
	// passed on from
	unit, stateless := q.TimeUnit, q.Spec.Join == nil && q.Spec.Query != nil && q.Spec.Query.Stateless() && q.Spec.Query.UDF == nil
	var delay int64
	if rel != nil {
		delay = rel.watermarkDelay()
		// a regular join's pairs carry no event time: their attribute
		// 0, a left row's time, comes in the order of the arrivals
		stateless = stateless && !rel.pairs
	}
	if len(q.Columns) != len(targets) {
		return errAt(s.sel.pos, "INSERT INTO %s: the SELECT has %d columns, the table %d", name, len(q.Columns), len(targets))
	}
	itemPos := func(i int) pos {
		if len(s.sel.items) == len(targets) {
			return s.sel.items[i].pos
		}
		return s.sel.pos
	}
	// what each column's values are, and what the table's column wants
	type conv struct {
		expr query.Expr
		cast bool
	}
	convs := make([]conv, len(targets))
	anyCast := false
	scope := query.SchemaScope(q.Output)
	for i, oc := range q.Columns {
		var e query.Expr
		if oc.Attr < 0 { // window_end
			e = query.Add(query.C(q.Output.Attrs[0].Name), query.Int(q.Spec.Query.Window.Size))
		} else {
			e = query.C(q.Output.Attrs[oc.Attr].Name)
		}
		have, _ := query.TypeOf(e, scope)
		tc := targets[i]
		want := tc.typ.value()
		switch {
		case tc.typ.isBytes():
			at := query.Attribute{}
			if oc.Attr >= 0 {
				at = q.Output.Attrs[oc.Attr]
			}
			if have != query.BytesValue || at.Size != tc.typ.size {
				return errAt(itemPos(i), "column %s of table %s is %s; the SELECT's %s is %s, which does not convert", tc.name.name, name, tc.typ, oc.Name, oc.Type)
			}
		case have == query.FloatValue && want == query.FloatValue:
			// a REAL column's value is a float32's (CAST AS REAL rounds a
			// DOUBLE's), a DOUBLE's prints as a float64 (Flink's implicit
			// casts)
			if real := tc.typ.kind == tyReal; real != query.IsReal(e, query.SchemaReal(q.Output)) {
				e = query.Cast{X: e, To: want, Real: real}
				convs[i].cast, anyCast = true, true
			}
		case have == want && (want != query.TimeValue || tc.typ.unit <= 1):
			// (a TIMESTAMP(p) column with p < 3 holds p digits of the
			// fraction: its time is cast below, whatever it comes from)
		default:
			if _, err := query.TypeOf(query.Cast{X: e, To: want}, scope); err != nil || have == query.BytesValue {
				return errAt(itemPos(i), "column %s of table %s is %s; the SELECT's %s is %s, which does not convert", tc.name.name, name, tc.typ, oc.Name, oc.Type)
			}
			cast := query.Cast{X: e, To: want, Real: tc.typ.kind == tyReal}
			if want == query.TimeValue {
				// floored to p digits as CAST AS TIMESTAMP(p) floors it
				// (Flink casts to the sink's type)
				cast.Unit = tc.typ.unit
			}
			e = cast
			convs[i].cast, anyCast = true, true
		}
		convs[i].expr = e
	}
	line := s.pos.line
	if anyCast {
		q = c.addPart(q, name, line)
		pq := &query.Query{Name: name, Schema: q.Output}
		fq := &Query{Name: name, From: q.Name}
		fq.Spec.Upstream = c.output(q)
		for i, tc := range targets {
			as := tc.name.name
			if as == "timestamp" {
				as = fmt.Sprintf("$p%d", i+1)
			}
			pq.Project = append(pq.Project, query.Projection{Expr: convs[i].expr, As: as})
			fq.Columns = append(fq.Columns, OutputColumn{Name: tc.name.name, Kind: Attribute, Index: 1 + i, Attr: 1 + i})
		}
		if err := c.finishQuery(fq, pq, s.sel); err != nil {
			return err
		}
		q = fq
	}
	if mq := q.Spec.Query; mq != nil && !anyCast && len(mq.Project) == len(targets) {
		// the projection's names are the table's (its output schema's too)
		pq := *mq
		pq.Project = slices.Clone(mq.Project)
		for i, tc := range targets {
			if tc.name.name != "timestamp" {
				pq.Project[i].As = tc.name.name
			}
		}
		if out, err := pq.OutputSchema(); err == nil {
			q.Spec.Query, q.Output = &pq, out
		}
	}
	for i, tc := range targets {
		oc := &q.Columns[i]
		oc.Name = tc.name.name
		oc.Type, oc.Labels = tc.typ.String(), tc.typ.labels
		if tc.typ.kind == tyEnum {
			oc.Type = "BIGINT"
		}
	}
	q.Line = line
	if q.Sink, err = sinkOptions(name, st, q.Columns); err != nil {
		return err
	}
	if pt := q.Sink.Partition; pt != nil && pt.Trigger != "" {
		if !stateless || unit == 0 {
			return errAt(s.sel.pos, "INSERT INTO %s: %s = 'partition-time' reads the watermark from the event times of the rows, and this query's rows are not its source's tuples passed on (an aggregation, a join or a row window makes new ones): partition a query that filters and projects a source", name, optTrigger)
		}
		pt.WatermarkDelay, pt.TimeUnit = delay, unit
	}
	c.prog.Queries = append(c.prog.Queries, q)
	return nil
}
