package query

import (
	"errors"
	"fmt"
)

// UDF is a user-defined operator: a Go function over a task's batch of
// input tuples (those that pass WHERE) that appends its output tuples, of
// schema Output, to out and returns it (not a slice of in: the engine may
// hand what it returns to the query downstream, uncopied, after in is
// reused, so a slice of in costs a copy). Fn is called once per task, from
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
//     "timestamp" followed by one attribute per projection (named by As,
//     else p1, p2, ...), or its UDF's output schema;
//   - an aggregation: one tuple per emitted row: "timestamp" (the window's
//     start), then each GROUP BY value (named after the column, else key1,
//     key2, ...), then each aggregate (named by As, else agg1, agg2, ...),
//     and for a session window its end, "window_end".
//
// A value is laid out by its type: integers as int64, floats as float64
// (Logical Real where the value is SQL's REAL: IsReal, or MIN or MAX of
// one), times as int64 (Logical Time), booleans as int32 (Logical Boolean),
// strings as 16-byte views, a bytes column as it is; a value that can be
// NULL is Nullable, its bit in the bytes after the attributes. The event
// time "timestamp" is a Time where the input's is.
func (q *Query) OutputSchema() (*Schema, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if q.Stateless() {
		switch {
		case q.UDF != nil:
			return q.UDF.Output, nil
		case len(q.Project) == 0:
			return q.JoinedSchema(), nil
		}
	}
	b := OutputBuilder{}
	b.Add(Attribute{Name: "timestamp", Type: Int64, Logical: q.Schema.Attrs[0].Logical}, false)
	scope, real := q.Scope(), SchemaReal(q.JoinedSchema())
	for i, p := range q.Project {
		t, _ := TypeOf(p.Expr, scope)
		size := 0
		if t == BytesValue {
			a, _ := q.JoinedSchema().Lookup(p.Expr.(Column).Name)
			size = a.Size
		}
		b.AddValue(nameOr(p.As, "p", i), t, size, MayBeNull(p.Expr, q.Nulls()))
		b.real(t == FloatValue && IsReal(p.Expr, real))
	}
	for i, g := range q.GroupBy {
		name := fmt.Sprintf("key%d", i+1)
		if c, ok := g.(Column); ok {
			name = c.Name
		}
		t, _ := TypeOf(g, scope)
		null := MayBeNull(g, q.Nulls())
		if c, ok := g.(Column); ok && q.Join != nil && c.Name == q.Join.As {
			null = false
		}
		b.AddValue(name, t, q.keyWidth(g), null)
		b.real(t == FloatValue && IsReal(g, real))
	}
	for i, a := range q.Aggregates {
		t := q.AggType(a)
		b.AddValue(nameOr(a.As, "agg", i), t, 0, q.AggNullable(a))
		b.real(t == FloatValue && q.AggReal(a))
	}
	if q.Window.Type == Session {
		// A session's bounds are its own: its end comes last.
		b.Add(Attribute{Name: "window_end", Type: Int64, Logical: q.Schema.Attrs[0].Logical}, false)
	}
	return b.Schema()
}

// OutputBuilder lays out an output schema: attributes one after another,
// then a byte of NULL bits for every eight that can be NULL.
type OutputBuilder struct {
	attrs []Attribute
	nulls []bool
}

// Add appends attribute a (its Offset is set; a Size of 0 is its Type's).
func (b *OutputBuilder) Add(a Attribute, nullable bool) {
	if a.Size == 0 {
		a.Size = a.Type.width()
	}
	if n := len(b.attrs); n > 0 {
		last := b.attrs[n-1]
		a.Offset = last.Offset + last.Size
	}
	b.attrs = append(b.attrs, a)
	b.nulls = append(b.nulls, nullable)
}

// AddValue appends an attribute for a value of type t: size is a bytes
// value's width.
func (b *OutputBuilder) AddValue(name string, t ValueType, size int, nullable bool) {
	a := Attribute{Name: name, Type: Int64}
	switch t {
	case FloatValue:
		a.Type = Float64
	case TimeValue:
		a.Logical = Time
	case BoolValue:
		a.Type, a.Logical = Int32, Boolean
	case StringValue:
		a.Type = String
	case BytesValue:
		a.Type, a.Size = Bytes, size
	}
	b.Add(a, nullable)
}

// real marks the float64 attribute added last as holding SQL's REAL
// values (Logical Real) where r.
func (b *OutputBuilder) real(r bool) {
	if a := &b.attrs[len(b.attrs)-1]; r && a.Type == Float64 {
		a.Logical = Real
	}
}

// Schema is the schema laid out.
func (b *OutputBuilder) Schema() (*Schema, error) {
	last := b.attrs[len(b.attrs)-1]
	size := last.Offset + last.Size
	bit := size * 8
	for i := range b.attrs {
		if b.nulls[i] {
			b.attrs[i].Nullable, b.attrs[i].NullBit = true, bit
			bit++
		}
	}
	size = (bit + 7) / 8
	return NewSchema(size, b.attrs...)
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
