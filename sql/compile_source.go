package sql

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/saber-hx/saber-hx/query"
)

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
	if src.Connector == "nexmark" {
		return c.nexmarkSource(src, s)
	}
	text := src.Format != "binary"
	declared := len(s.cols) // the columns of the DDL; a view's slot after them
	if id, ok := c.procSlots[src.Name]; ok && text && !slices.ContainsFunc(s.cols, func(col colDef) bool { return col.proctime }) {
		// A view adds PROCTIME() AS p to the source: its slot is laid
		// out as a column p AS PROCTIME() is, visible in the view only.
		name := procSlotName(id.name, func(n string) bool {
			return slices.ContainsFunc(s.cols, func(col colDef) bool { return col.name.name == n })
		})
		s.cols = append(slices.Clip(s.cols), colDef{name: ident{name: name, pos: id.pos}, typ: procTimeType, typPos: id.pos, notNull: true, proctime: true})
	}
	for _, col := range s.cols {
		if !col.proctime {
			continue
		}
		if !text {
			return errAt(col.typPos, "%s AS PROCTIME(): a binary source's records are its tuples, with no room for a processing time (declare format = 'csv' or 'json')", col.name.name)
		}
		if src.ProcTime != "" {
			return errAt(col.name.pos, "a second PROCTIME() column: source %s has %s", src.Name, src.ProcTime)
		}
		src.ProcTime = col.name.name
	}
	// The event time: WATERMARK FOR's column, else the first column
	// (binary: the layout is as declared, and the model reads the event
	// time at offset 0); for other formats, else the column a window over
	// the source names, else the first TIMESTAMP, else the first BIGINT.
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
		if s.cols[timeIdx].proctime {
			return errAt(wm.col.pos, "%s is a processing time (PROCTIME()): a WATERMARK is for an event time that the records carry", wm.col.name)
		}
		src.Watermark = true
		why = "its WATERMARK"
	} else if id, ok := c.timeCols[s.name.name]; ok && text {
		for i, col := range s.cols[:declared] {
			if col.name.name == id.name {
				timeIdx = i
			}
		}
		why = fmt.Sprintf("the window at line %d", id.pos.line)
	}
	for _, kind := range []typeKind{tyTimestamp, tyBigint} {
		if timeIdx >= 0 {
			break
		}
		for i, col := range s.cols {
			if col.typ.kind == kind && !col.proctime && (text || i == 0) {
				timeIdx, why = i, "its first "+map[typeKind]string{tyTimestamp: "TIMESTAMP", tyBigint: "BIGINT"}[kind]+" column"
				break
			}
		}
	}
	if timeIdx < 0 {
		return errAt(s.cols[0].name.pos, "source %s has no event time: its first column must be a BIGINT or a TIMESTAMP (or name one in WATERMARK FOR)", src.Name)
	}
	tc := s.cols[timeIdx]
	if tc.typ.kind != tyBigint && tc.typ.kind != tyTimestamp {
		return errAt(tc.name.pos, "the event time %s of source %s (from %s) must be a BIGINT or a TIMESTAMP, not %s", tc.name.name, src.Name, why, tc.typ)
	}
	if !text && timeIdx != 0 {
		return errAt(tc.name.pos, "the event time %s of binary source %s (from %s) must be its first column: the query model reads the event time as an int64 at offset 0", tc.name.name, src.Name, why)
	}
	if tc.typ.kind == tyTimestamp {
		unitNs = 1e6 // a TIMESTAMP holds milliseconds whatever time_unit says
	}
	if wm := s.wm; wm != nil && wm.delay != nil && wm.delay.n != 0 {
		d, err := toUnits(wm.delay, unitNs, "the watermark delay")
		if err != nil {
			return err
		}
		src.WatermarkDelay = d
	}
	src.EventTime = tc.name.name
	order := make([]int, 0, len(s.cols))
	order = append(order, timeIdx)
	for i := range s.cols {
		if i != timeIdx {
			order = append(order, i)
		}
	}
	if text {
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
		attrs[i] = s.cols[i].typ.attr(s.cols[i].name.name, off)
		off += attrs[i].Size
	}
	// NULL bits, in the bytes after the columns: a column of a CSV or JSON
	// record can be missing or empty, unless declared NOT NULL.
	bit := off * 8
	for _, i := range order {
		col := s.cols[i]
		if text && i != timeIdx && !col.notNull && !col.proctime {
			attrs[i].Nullable, attrs[i].NullBit = true, bit
			bit++
		}
	}
	end := (bit + 7) / 8
	if text {
		end = c.dictNumbers(src, s.cols, attrs, end)
	}
	if tupleSize == 0 {
		tupleSize = int64(end)
		if text {
			// a power of two, so that any power-of-two task size
			// (the engine's 256 KiB) holds whole tuples
			tupleSize = 8
			for tupleSize < int64(end) {
				tupleSize *= 2
			}
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
		if i < declared {
			rel.cols = append(rel.cols, relCol{name: col.name.name, attr: col.name.name, typ: col.typ})
		}
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
	if s.wm != nil {
		return errAt(s.wm.pos, "a table has no event time: WATERMARK belongs in CREATE SOURCE")
	}
	t := &Table{Name: s.name.name, Line: s.pos.line}
	if err := tableOptions(t, s); err != nil {
		return err
	}
	// A row: a byte of NULL bits for every eight nullable columns, then
	// the columns in declared order.
	nulls := 0
	for _, col := range s.cols {
		if col.proctime {
			return errAt(col.typPos, "a table is static: it has no processing time")
		}
		if !col.notNull {
			nulls++
		}
	}
	off, bit := (nulls+7)/8, 0
	for _, col := range s.cols {
		a := col.typ.attr(col.name.name, off)
		off += a.Size
		if !col.notNull {
			a.Nullable, a.NullBit = true, bit
			bit++
		}
		t.Columns = append(t.Columns, Column{Name: col.name.name, Kind: Kind(col.typ.kind), Type: col.typ.String(), Labels: col.typ.labels, Attr: a})
		t.types = append(t.types, col.typ)
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

// window compiles window w over rel; ok false when there is none.
func (c *compiler) window(w windowSpec, rel *relation) (query.Window, bool, error) {
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
		// A view that passes a delayed source's tuples on (filtered,
		// projected, joined with a table) has the delay too: they come
		// in the source's order, which the delay says is not time's.
		if rel.watermarkDelay() != 0 {
			what := "source " + rel.name
			if rel.source == nil {
				what = "view " + rel.name + " (its source's WATERMARK)"
			}
			return query.Window{}, false, errAt(w.pos, "%s has a watermark delay, in time: a ROWS window counts tuples, so it cannot honour it (drop the delay, or use a time window)", what)
		}
		return query.Window{Type: query.Rows, Size: w.rows, Slide: step}, true, nil
	}
	if w.timeCol != nil && !slices.Contains(rel.times, w.timeCol.name) { // a view's copy of the time is it too
		if rel.timeName == "" || w.timeCol.name != rel.timeName {
			what := "source"
			if rel.source == nil {
				what = "view"
			}
			if rel.timeName == "" {
				return query.Window{}, false, errAt(w.timeCol.pos, "%s %s has no visible event-time column", what, rel.name)
			}
			if rel.source != nil && rel.source.ProcTime == w.timeCol.name {
				return query.Window{}, false, errAt(w.timeCol.pos, "%s is the processing time of source %s, whose event time is %s (its WATERMARK): a stream has one time (drop the WATERMARK to window by processing time)", w.timeCol.name, rel.name, rel.timeName)
			}
			return query.Window{}, false, errAt(w.timeCol.pos, "%s is not the event time of %s %s, which is %s (a stream has one event time)", w.timeCol.name, what, rel.name, rel.timeName)
		}
	}
	if rel.unitNs == 0 {
		return query.Window{}, false, errAt(w.pos, "%s's times are row positions (it is windowed by ROWS): a time window over it needs ROWS too", rel.name)
	}
	what := "the window size"
	if w.kind == winSession {
		what = "the session gap"
	}
	size, err := toUnits(w.size, rel.unitNs, what)
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
	win := query.Window{Type: query.Range, Size: size, Slide: slide}
	if w.kind == winSession {
		win = query.Sessions(size)
	}
	// The source's WATERMARK delay, in its time unit like the window
	// (a view's of the source's tuples too): windows close, and tuples
	// are late, that much later.
	win.Delay = windowDelay(rel)
	return win, true, nil
}

// windowDelay is the query.Window.Delay of a time window over rel: the
// WATERMARK delay d of its event time (relation.watermarkDelay) less a
// millisecond. Flink's watermark is the largest event time minus d (no
// minus one, as the DataStream API's has), and it fires a window [s, e)
// once it reaches e - 1 ms, the window's last millisecond (the window's
// timer and lateness test are at window_end - 1), where a window closes
// when the largest event time minus Delay reaches e. A unit coarser than
// the millisecond needs no shift: a whole second minus d reaches e - 1 ms
// only where it reaches e. Delay is not negative: without a delay
// (WATERMARK FOR ts AS ts) a window closes 1 ms after Flink's, as with
// ts - INTERVAL '1' MILLISECOND.
func windowDelay(rel *relation) int64 {
	d := rel.watermarkDelay()
	if rel.unitNs <= 0 {
		return d
	}
	return max(d-int64(1e6)/rel.unitNs, 0)
}

// groupedColumns are, by source name, the columns that a query reading
// the source itself (its FROM, with no join and no WHERE) groups by, or
// counts the distinct values of (COUNT(DISTINCT x) groups by x), by name:
// the source's VARCHAR columns among them are dictionary-encoded
// (dictNumbers), laid out with the tuple before any query is compiled,
// since the queries' schemas are the source's. The source's dictionary
// then holds what that query's own would: every value of the column. A
// query with a WHERE keeps only some, and does not make the column
// encoded on its own (though it reads the numbers where another query
// made it so). A name that turns out to be no VARCHAR column, or a query
// that reads the source otherwise, costs the decoders a number they
// write and no query reads.
func groupedColumns(stmts []*stmt) map[string][]string {
	m := map[string][]string{}
	var walk func(sel *selectStmt)
	walk = func(sel *selectStmt) {
		if sel == nil {
			return
		}
		walk(sel.from.sub)
		if sel.join != nil {
			walk(sel.join.sub)
			return
		}
		if sel.from.sub != nil || sel.where != nil {
			return
		}
		src := sel.from.name.name
		add := func(n *node) {
			if n != nil && n.kind == eCol && !slices.Contains(m[src], n.name) {
				m[src] = append(m[src], n.name)
			}
		}
		for _, g := range sel.groupBy {
			add(g)
		}
		distinct := func(n *node) {
			if n.kind == eCall && n.distinct {
				add(n.l)
			}
		}
		for _, it := range sel.items {
			walkNodes(it.expr, distinct)
		}
		walkNodes(sel.having, distinct)
	}
	for _, s := range stmts {
		walk(s.sel)
	}
	return m
}

// dictNumbers lays out the numbers of the dictionary-encoded columns of
// text source src (Source.DictNumbers): its VARCHAR columns that a query
// groups by (groupedColumns), their numbers 4 bytes each from byte end,
// the end of the columns and NULL bits. It returns the new end. The
// decoders write each string's number there (source.Column.Dict) and the
// queries group by the number rather than hash the string
// (kernels.DictColumns; docs/performance.md).
func (c *compiler) dictNumbers(src *Source, cols []colDef, attrs []query.Attribute, end int) int {
	at := (end + 3) &^ 3
	for i, col := range cols {
		if attrs[i].Type != query.String || col.proctime || !slices.Contains(c.grouped[src.Name], col.name.name) {
			continue
		}
		if src.DictNumbers == nil {
			src.DictNumbers = map[string]int{}
		}
		src.DictNumbers[attrs[i].Name] = at
		at += 4
	}
	if src.DictNumbers == nil {
		return end
	}
	return at
}
