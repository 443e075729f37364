package source

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
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
	// String is a string of any length, its bytes kept as they are,
	// stored as a 16-byte view (package strview): inline up to
	// strview.MaxInline bytes, else the address of a copy in memory that
	// Options.Strings gives.
	String
	// Timestamp is a time (RFC 3339, ISO 8601 or SQL's
	// "2024-03-01 10:00:01.5") or an epoch number in the layout's
	// TimeUnit, stored as int64 milliseconds since the Unix epoch, UTC.
	Timestamp
	// Bool is true or false (any case), 1 or 0, stored as int32 1 or 0.
	Bool
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
	case String:
		return "string"
	case Timestamp:
		return "timestamp"
	case Bool:
		return "bool"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// width is the stored size of a fixed-size kind; 0 for Bytes.
func (k Kind) width() int {
	switch k {
	case Int32, Float32, Enum, IPv4, Bool:
		return 4
	case Int64, Float64, Timestamp:
		return 8
	case UUID, String:
		return 16
	}
	return 0
}

// Column is one field of a record and where it goes in the tuple.
//
// A Nullable column may be NULL (a JSON member missing or null; an
// empty CSV field, but for String and Bytes columns, whose empty field
// is the empty string): its value's bytes are then zero and bit NullBit
// of the tuple (bit NullBit%8 of byte NullBit/8) is set; the bit is clear
// when it has a value. query.Attribute's rule. A column that is not
// Nullable has no bit: a missing or null value is a malformed record.
type Column struct {
	Name     string
	Kind     Kind
	Offset   int      // byte offset in the tuple
	Size     int      // bytes; implied by Kind except for Bytes (0 is filled in)
	Labels   []string // Enum only: label i is stored as int32 i
	Nullable bool
	NullBit  int // Nullable only: the bit of the tuple set when NULL
	// Dict, on a String column, dictionary-encodes it: the decoders give
	// each string its number in Dict and write it, an int32, at NumberAt
	// (0 where the value is NULL), and the view points to Dict's copy of
	// a long string rather than to a copy of its own. A query grouping by
	// the column then reads the number (kernels.DictColumns); the strings
	// of a column of few distinct values are stored once. Dict keeps every
	// string it is given for its life: a column of that many distinct
	// values, each grouped by, costs a query's dictionary as much.
	Dict     *strview.Dict
	NumberAt int
}

// Layout is the tuple a decoder writes: each column at its offset, every
// byte no column covers zero (but the NULL bits of NULL values). The
// order of Columns is the order of a CSV record's fields when the CSV has
// no header; it need not be the order of the offsets.
type Layout struct {
	TupleSize int
	Columns   []Column
	// TimeUnit is the unit of an epoch number in a Timestamp column
	// (milliseconds unless set); it may be set after NewLayout, before a
	// decoder is made.
	TimeUnit TimeUnit
}

// TimeUnit is the unit of the epoch numbers of Timestamp columns.
type TimeUnit uint8

const (
	// Milliseconds is the default unit (the zero TimeUnit).
	Milliseconds TimeUnit = iota
	Seconds
	Microseconds
	Nanoseconds
)

// ParseTimeUnit reads a unit's name: "s", "ms" (or ""), "us" or "ns".
func ParseTimeUnit(s string) (TimeUnit, error) {
	switch strings.ToLower(s) {
	case "ms", "":
		return Milliseconds, nil
	case "s":
		return Seconds, nil
	case "us":
		return Microseconds, nil
	case "ns":
		return Nanoseconds, nil
	}
	return 0, fmt.Errorf("time unit %q: want s, ms, us or ns", s)
}

// Duration is the length of one unit.
func (u TimeUnit) Duration() time.Duration {
	switch u {
	case Seconds:
		return time.Second
	case Microseconds:
		return time.Microsecond
	case Nanoseconds:
		return time.Nanosecond
	}
	return time.Millisecond
}

func (u TimeUnit) String() string {
	switch u {
	case Milliseconds:
		return "ms"
	case Seconds:
		return "s"
	case Microseconds:
		return "us"
	case Nanoseconds:
		return "ns"
	}
	return fmt.Sprintf("unit(%d)", uint8(u))
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
		if c.Dict != nil {
			if c.Kind != String {
				return nil, fmt.Errorf("layout: column %q of kind %s has a dictionary; only string columns do", c.Name, c.Kind)
			}
			if c.NumberAt < 0 || c.NumberAt+4 > tupleSize {
				return nil, fmt.Errorf("layout: the number of column %q at offset %d does not fit a %d-byte tuple", c.Name, c.NumberAt, tupleSize)
			}
		}
		if c.Nullable && c.Offset == 0 {
			return nil, fmt.Errorf("layout: column %q at offset 0 is the event time, never NULL: it cannot be nullable", c.Name)
		}
		if !c.Nullable && c.NullBit != 0 {
			return nil, fmt.Errorf("layout: column %q has NULL bit %d but is not nullable", c.Name, c.NullBit)
		}
	}
	// query.NewSchema's rule: the NULL bits lie in bytes no column
	// covers, one bit per column.
	for i, c := range l.Columns {
		if !c.Nullable {
			continue
		}
		at := c.NullBit >> 3
		if c.NullBit < 0 || at >= tupleSize {
			return nil, fmt.Errorf("layout: the NULL bit %d of column %q is outside the %d-byte tuple", c.NullBit, c.Name, tupleSize)
		}
		for j, b := range l.Columns {
			if at >= b.Offset && at < b.Offset+b.Size {
				return nil, fmt.Errorf("layout: the NULL bit %d of column %q is inside column %q", c.NullBit, c.Name, b.Name)
			}
			if j < i && b.Nullable && b.NullBit == c.NullBit {
				return nil, fmt.Errorf("layout: columns %q and %q share NULL bit %d", b.Name, c.Name, c.NullBit)
			}
		}
	}
	// A dictionary number lies in 4 bytes of its own.
	for i, c := range l.Columns {
		if c.Dict == nil {
			continue
		}
		lo, hi := c.NumberAt, c.NumberAt+4
		for j, b := range l.Columns {
			switch {
			case lo < b.Offset+b.Size && b.Offset < hi:
				return nil, fmt.Errorf("layout: the number of column %q at offset %d overlaps column %q", c.Name, lo, b.Name)
			case b.Nullable && b.NullBit>>3 >= lo && b.NullBit>>3 < hi:
				return nil, fmt.Errorf("layout: the number of column %q at offset %d holds the NULL bit of column %q", c.Name, lo, b.Name)
			case j < i && b.Dict != nil && lo < b.NumberAt+4 && b.NumberAt < hi:
				return nil, fmt.Errorf("layout: the numbers of columns %q and %q overlap", b.Name, c.Name)
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
// Enum and IPv4 as int32, String as query.String, Timestamp as int64 of
// Logical Time, Bool as int32 of Logical Boolean, with their NULL bits.
// query.NewSchema's rules apply: the column at offset 0 must be the
// int64 (or Timestamp) event time.
func (l *Layout) Schema() (*query.Schema, error) {
	cols := slices.Clone(l.Columns)
	slices.SortFunc(cols, func(a, b Column) int { return a.Offset - b.Offset })
	attrs := make([]query.Attribute, len(cols))
	for i, c := range cols {
		a := query.Attribute{Name: c.Name, Offset: c.Offset, Size: c.Size, Nullable: c.Nullable, NullBit: c.NullBit}
		switch c.Kind {
		case Int32, Enum, IPv4:
			a.Type = query.Int32
		case Bool:
			a.Type, a.Logical = query.Int32, query.Boolean
		case Timestamp:
			a.Type, a.Logical = query.Int64, query.Time
		case String:
			a.Type = query.String
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
		if c.Nullable {
			fmt.Fprintf(&b, " null@%d", c.NullBit)
		}
	}
	if l.TimeUnit != Milliseconds {
		fmt.Fprintf(&b, " (epoch in %s)", l.TimeUnit)
	}
	return b.String()
}
