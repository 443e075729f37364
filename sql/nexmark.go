package sql

import (
	"slices"
	"strings"

	"github.com/saber-hx/saber-hx/nexmark"
	"github.com/saber-hx/saber-hx/query"
)

// nexmarkOptions checks a nexmark source's WITH clause (connector =
// 'nexmark': package nexmark's generator, one table of its sequence) and
// returns the options it takes.
func nexmarkOptions(src *Source, s *optionSet) ([]string, error) {
	valid := append([]string{"connector"}, nexmark.OptionNames()...)
	given := map[string]string{}
	for _, o := range s.opts {
		if slices.Contains(valid, o.key) {
			s.used[o.key] = true
			given[o.key] = o.val
		}
	}
	cfg, table, err := nexmark.ParseOptions(given, "connector")
	if err != nil {
		return nil, errAt(s.withPos, "a nexmark source: %v", err)
	}
	src.Nexmark, src.NexmarkTable = cfg, table
	src.Format, src.TimeUnit, src.OnError = "binary", "ms", "fail"
	return valid, nil
}

// nexmarkSource lays out a nexmark source: its tuples are the generator's
// (package nexmark's schema of the table), so each declared column must be
// one of the table's, of its type, and is read where the generator writes
// it; columns not declared are not read. The event time is dateTime.
func (c *compiler) nexmarkSource(src *Source, s *stmt) error {
	full := src.NexmarkTable.Schema()
	var have []string
	for _, a := range full.Attrs {
		have = append(have, a.Name+" "+nexmarkType(a))
	}
	timeAttr := full.Attrs[0] // dateTime, at offset 0
	timeIdx := -1
	attrs := make([]query.Attribute, len(s.cols))
	for i, col := range s.cols {
		if col.proctime {
			return errAt(col.typPos, "%s AS PROCTIME(): a nexmark source's tuples are the generator's; declare the processing time in a view (SELECT *, PROCTIME() AS p FROM %s)", col.name.name, src.Name)
		}
		k := slices.IndexFunc(full.Attrs, func(a query.Attribute) bool { return strings.EqualFold(a.Name, col.name.name) })
		if k < 0 {
			return errAt(col.name.pos, "the nexmark table %s has no column %s (it has %s)", src.NexmarkTable, col.name.name, strings.Join(have, ", "))
		}
		a := full.Attrs[k]
		decl := col.typ.attr(col.name.name, a.Offset)
		if decl.Type != a.Type || decl.Logical != a.Logical {
			return errAt(col.typPos, "column %s of the nexmark table %s is %s, not %s", col.name.name, src.NexmarkTable, nexmarkType(a), col.typ)
		}
		a.Name = col.name.name
		attrs[i] = a
		if a.Offset == timeAttr.Offset {
			timeIdx = i
		}
	}
	if wm := s.wm; wm != nil {
		if !strings.EqualFold(wm.col.name, timeAttr.Name) {
			return errAt(wm.col.pos, "the nexmark table %s's event time is %s: WATERMARK FOR %s", src.NexmarkTable, timeAttr.Name, timeAttr.Name)
		}
		if wm.of.name != wm.col.name {
			return errAt(wm.of.pos, "the watermark must be %s or %s - INTERVAL '...' unit", wm.col.name, wm.col.name)
		}
		src.Watermark = true
		if wm.delay != nil && wm.delay.n != 0 {
			d, err := toUnits(wm.delay, 1e6, "the watermark delay")
			if err != nil {
				return err
			}
			src.WatermarkDelay = d
		}
	}
	if timeIdx < 0 {
		return errAt(s.name.pos, "source %s: declare the nexmark table's event time, %s TIMESTAMP(3)", src.Name, timeAttr.Name)
	}
	ordered := []query.Attribute{attrs[timeIdx]}
	for i, a := range attrs {
		if i != timeIdx {
			ordered = append(ordered, a)
		}
	}
	size := full.TupleSize
	var slot *Column
	if id, ok := c.procSlots[src.Name]; ok {
		// A view adds PROCTIME() AS p: its slot follows the generator's
		// tuple (at its size rounded up to 8), which the reader widens
		// into tuples of Schema.TupleSize and stamps.
		name := procSlotName(id.name, func(n string) bool {
			return slices.ContainsFunc(ordered, func(a query.Attribute) bool { return a.Name == n })
		})
		a := procTimeType.attr(name, (size+7)/8*8)
		ordered = append(ordered, a)
		size = a.Offset + a.Size
		slot = &Column{Name: name, Kind: KindTimestamp, Type: procTimeType.String(), Attr: a}
		src.ProcTime = name
	}
	schema, err := query.NewSchema(size, ordered...)
	if err != nil {
		return errAt(s.name.pos, "source %s: %v", src.Name, err)
	}
	src.Schema, src.EventTime = schema, attrs[timeIdx].Name
	rel := &relation{name: src.Name, schema: schema, source: src, unitNs: 1e6, timeName: src.EventTime, line: src.Line}
	for i, col := range s.cols {
		src.Columns = append(src.Columns, Column{Name: col.name.name, Kind: Kind(col.typ.kind), Type: col.typ.String(), Attr: attrs[i]})
		rel.cols = append(rel.cols, relCol{name: col.name.name, attr: col.name.name, typ: col.typ})
	}
	if slot != nil {
		src.Columns = append(src.Columns, *slot)
	}
	c.prog.Sources = append(c.prog.Sources, src)
	c.rels[src.Name] = rel
	return nil
}

// nexmarkType is the SQL type of a nexmark column.
func nexmarkType(a query.Attribute) string {
	switch {
	case a.Type == query.String:
		return "VARCHAR"
	case a.Logical == query.Time:
		return "TIMESTAMP(3)"
	}
	return "BIGINT"
}
