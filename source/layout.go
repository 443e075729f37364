package source

import (
	"fmt"
	"slices"
	"strings"

	"github.com/saber-hx/saber-hx/query"
)

// Kind is how a column's text is parsed and stored in the tuple.
type Kind uint8

const (
	// Int32 is a decimal integer (optional sign), stored as int32.
	Int32 Kind = iota + 1
	// Int64 is a decimal integer (optional sign), stored as int64.
	Int64
	// Float32 is a number in strconv.ParseFloat's syntax, stored as float32.
	Float32
	// Float64 is a number in strconv.ParseFloat's syntax, stored as float64.
	Float64
	// UUID is the canonical 8-4-4-4-12 hex text, either case, stored as
	// its 16 bytes in text order.
	UUID
	// Bytes is a string of at most Size bytes, stored as its bytes,
	// zero-padded to Size.
	Bytes
	// Enum is one of Labels, stored as the label's position as int32.
	Enum
	// IPv4 is a dotted quad a.b.c.d, stored as the int32 whose value is
	// a<<24 | b<<16 | c<<8 | d (little-endian like every int32: the bytes
	// in the tuple are d, c, b, a).
	IPv4
)

func (k Kind) String() string {
	switch k {
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	case UUID:
		return "uuid"
	case Bytes:
		return "bytes"
	case Enum:
		return "enum"
	case IPv4:
		return "ipv4"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// width is the stored size of a fixed-size kind; 0 for Bytes.
func (k Kind) width() int {
	switch k {
	case Int32, Float32, Enum, IPv4:
		return 4
	case Int64, Float64:
		return 8
	case UUID:
		return 16
	}
	return 0
}

// Column is one field of a record and where it goes in the tuple.
type Column struct {
	Name   string
	Kind   Kind
	Offset int      // byte offset in the tuple
	Size   int      // bytes; implied by Kind except for Bytes (0 is filled in)
	Labels []string // Enum only: label i is stored as int32 i
}

// Layout is the tuple a decoder writes: each column at its offset, every
// byte no column covers zero. The order of Columns is the order of a CSV
// record's fields when the CSV has no header; it need not be the order of
// the offsets.
type Layout struct {
	TupleSize int
	Columns   []Column
}

// NewLayout checks and returns a layout (a copy of cols, sizes filled in).
func NewLayout(tupleSize int, cols ...Column) (*Layout, error) {
	l := &Layout{TupleSize: tupleSize, Columns: slices.Clone(cols)}
	if tupleSize <= 0 {
		return nil, fmt.Errorf("layout: tuple size %d must be positive", tupleSize)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("layout: no columns")
	}
	seen := make(map[string]bool, len(cols))
	for i := range l.Columns {
		c := &l.Columns[i]
		if c.Name == "" {
			return nil, fmt.Errorf("layout: column %d has no name", i)
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("layout: column %q defined twice", c.Name)
		}
		seen[c.Name] = true
		if w := c.Kind.width(); w > 0 {
			if c.Size != 0 && c.Size != w {
				return nil, fmt.Errorf("layout: column %q of kind %s has size %d, want %d", c.Name, c.Kind, c.Size, w)
			}
			c.Size = w
		} else if c.Kind != Bytes {
			return nil, fmt.Errorf("layout: column %q has unknown kind %d", c.Name, uint8(c.Kind))
		} else if c.Size <= 0 {
			return nil, fmt.Errorf("layout: bytes column %q needs a positive size", c.Name)
		}
		if c.Kind == Enum {
			if len(c.Labels) == 0 {
				return nil, fmt.Errorf("layout: enum column %q has no labels", c.Name)
			}
			labels := make(map[string]bool, len(c.Labels))
			for _, s := range c.Labels {
				if labels[s] {
					return nil, fmt.Errorf("layout: enum column %q has label %q twice", c.Name, s)
				}
				labels[s] = true
			}
			c.Labels = slices.Clone(c.Labels)
		} else if len(c.Labels) > 0 {
			return nil, fmt.Errorf("layout: column %q of kind %s has labels; only enum columns do", c.Name, c.Kind)
		}
		if c.Offset < 0 || c.Offset+c.Size > tupleSize {
			return nil, fmt.Errorf("layout: column %q at offset %d size %d does not fit a %d-byte tuple", c.Name, c.Offset, c.Size, tupleSize)
		}
		for _, b := range l.Columns[:i] {
			if c.Offset < b.Offset+b.Size && b.Offset < c.Offset+c.Size {
				return nil, fmt.Errorf("layout: columns %q and %q overlap", b.Name, c.Name)
			}
		}
	}
	return l, nil
}

// Lookup returns the index of the column called name, or -1.
func (l *Layout) Lookup(name string) int {
	for i, c := range l.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// Schema is the query model's view of the tuple: the columns by offset
// (so the event time, at offset 0, is attribute 0), UUID as 16 bytes,
// Enum and IPv4 as int32. query.NewSchema's rules apply: the column at
// offset 0 must be the int64 event time.
func (l *Layout) Schema() (*query.Schema, error) {
	cols := slices.Clone(l.Columns)
	slices.SortFunc(cols, func(a, b Column) int { return a.Offset - b.Offset })
	attrs := make([]query.Attribute, len(cols))
	for i, c := range cols {
		a := query.Attribute{Name: c.Name, Offset: c.Offset, Size: c.Size}
		switch c.Kind {
		case Int32, Enum, IPv4:
			a.Type = query.Int32
		case Int64:
			a.Type = query.Int64
		case Float32:
			a.Type = query.Float32
		case Float64:
			a.Type = query.Float64
		default:
			a.Type = query.Bytes
		}
		attrs[i] = a
	}
	return query.NewSchema(l.TupleSize, attrs...)
}

// String describes the layout, one column after another.
func (l *Layout) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d bytes:", l.TupleSize)
	for _, c := range l.Columns {
		fmt.Fprintf(&b, " %s %s@%d", c.Name, c.Kind, c.Offset)
		if c.Kind == Bytes {
			fmt.Fprintf(&b, "(%d)", c.Size)
		}
	}
	return b.String()
}
