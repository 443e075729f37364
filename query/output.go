package query

import (
	"errors"
	"fmt"
)

// UDF is a user-defined operator: a Go function over a task's batch of
// input tuples (those that pass WHERE) that appends its output tuples, of
// schema Output, to out and returns it. Fn is called once per task, from
// several workers at once: it must be safe for concurrent use and keep no
// state between calls (a query with state is a windowed aggregation).
type UDF struct {
	Name   string
	Output *Schema
	Fn     func(in []byte, tupleSize int, out []byte) []byte
}

// OutputSchema is the schema of the tuples q outputs, so that another query
// can take them as its input:
//
//   - a stateless query: its input schema (SELECT *), or the event time
//     "timestamp" followed by one 8-byte int64 or float64 per projection
//     (named by As, else p1, p2, ...), or its UDF's output schema;
//   - an aggregation: one tuple per emitted row: "timestamp" (the window's
//     start), then each GROUP BY value (integers as int64, bytes as they
//     are; named after the column, else key1, key2, ...), then each
//     aggregate (int64, or float64 for float results; named by As, else
//     agg1, agg2, ...).
func (q *Query) OutputSchema() (*Schema, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if q.Stateless() {
		switch {
		case q.UDF != nil:
			return q.UDF.Output, nil
		case len(q.Project) == 0:
			return q.Schema, nil
		}
	}
	attrs := []Attribute{{Name: "timestamp", Type: Int64}}
	add := func(name string, t Type, size int) {
		last := attrs[len(attrs)-1]
		attrs = append(attrs, Attribute{Name: name, Type: t, Offset: last.Offset + last.Size, Size: size})
	}
	attrs[0].Size = 8
	numeric := func(t ValueType) Type {
		if t == FloatValue {
			return Float64
		}
		return Int64
	}
	scope := q.Scope()
	for i, p := range q.Project {
		t, _ := TypeOf(p.Expr, scope)
		add(nameOr(p.As, "p", i), numeric(t), 8)
	}
	for i, g := range q.GroupBy {
		name := fmt.Sprintf("key%d", i+1)
		if c, ok := g.(Column); ok {
			name = c.Name
		}
		t, _ := TypeOf(g, scope)
		if t == BytesValue {
			add(name, Bytes, q.KeyWidth(g))
		} else {
			add(name, Int64, 8)
		}
	}
	for i, a := range q.Aggregates {
		add(nameOr(a.As, "agg", i), numeric(q.AggType(a)), 8)
	}
	last := attrs[len(attrs)-1]
	return NewSchema(last.Offset+last.Size, attrs...)
}

func nameOr(name, prefix string, i int) string {
	if name != "" {
		return name
	}
	return fmt.Sprintf("%s%d", prefix, i+1)
}

// SameLayout reports whether tuples of a can be read as tuples of b: same
// size, and the same attribute types at the same offsets (names may differ).
func SameLayout(a, b *Schema) error {
	if a.TupleSize != b.TupleSize {
		return fmt.Errorf("tuples of %d bytes, want %d", a.TupleSize, b.TupleSize)
	}
	if len(a.Attrs) != len(b.Attrs) {
		return fmt.Errorf("%d attributes, want %d", len(a.Attrs), len(b.Attrs))
	}
	for i := range a.Attrs {
		x, y := a.Attrs[i], b.Attrs[i]
		if x.Type != y.Type || x.Offset != y.Offset || x.Size != y.Size {
			return fmt.Errorf("attribute %d (%s) is %s at offset %d, want %s at offset %d", i, y.Name, x.Type, x.Offset, y.Type, y.Offset)
		}
	}
	return nil
}

func (u *UDF) validate() error {
	switch {
	case u.Fn == nil:
		return errors.New("udf: no function")
	case u.Output == nil:
		return errors.New("udf: no output schema")
	}
	return nil
}
