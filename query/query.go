// Package query holds saber-hx's query model: schemas of fixed-size binary
// tuples, window definitions and the operators of a windowed query, with
// validation that refuses an invalid query, naming what is wrong, before
// anything runs.
//
// A Query over range or row windows is either an aggregation (WHERE with
// AND, OR and arithmetic; a join with a static table; GROUP BY; aggregates;
// HAVING) or a stateless query (WHERE, then the tuples, projection
// expressions or a UDF). A WindowJoin is a theta-join of two streams over
// their windows. A query's output has a schema (OutputSchema), so that
// queries and joins chain into one another (engine.Spec.Upstream), as SABER's
// operators do.
package query

import (
	"errors"
	"fmt"
)

// Type is the type of one attribute of a tuple.
type Type uint8

const (
	Int32 Type = iota + 1
	Int64
	Float32
	Float64
	Bytes // fixed-size byte string, such as a 16-byte UUID
	// String is a string of any length as a 16-byte view (package
	// strview): its length, its first bytes, and the rest inline or the
	// address of its bytes in memory that outlives the tuple's reader.
	String
)

// Logical says what an attribute's numbers mean where that is more than
// their Type: every operator reads them as numbers, and the functions
// that take a time, and the outputs that print one, read them as that.
type Logical uint8

const (
	Plain Logical = iota
	// Time is an Int64 count of milliseconds since the Unix epoch, UTC
	// (SQL's TIMESTAMP(3)).
	Time
	// Boolean is an Int32 of 0 (false) or 1 (true) (SQL's BOOLEAN).
	Boolean
	// Real is a Float64 that holds a float32's value (SQL's REAL, FLOAT):
	// an output's MIN of a REAL column, say. It is read as the float64 it
	// is; the outputs print it as the float32 (0.1, not
	// 0.10000000149011612), as they do a Float32.
	Real
)

func (t Type) String() string {
	switch t {
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	case Bytes:
		return "bytes"
	case String:
		return "string"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// StringSize is the bytes of a String attribute: its view.
const StringSize = 16

// width is the encoded size of a fixed-width type; 0 for Bytes, whose size is
// per attribute.
func (t Type) width() int {
	switch t {
	case Int32, Float32:
		return 4
	case Int64, Float64:
		return 8
	case String:
		return StringSize
	}
	return 0
}

// Attribute is one named field of a tuple at a fixed byte offset.
// All numbers are little-endian.
//
// A Nullable attribute has a validity bit (Arrow's rule: the value's slot
// stays, the bit says whether it counts): bit NullBit of the tuple, that
// is bit NullBit%8 of byte NullBit/8, is set when the value is NULL. The
// bits of a schema's attributes share bytes that no attribute overlaps.
type Attribute struct {
	Name     string
	Type     Type
	Offset   int
	Size     int // bytes; implied by Type except for Bytes
	Logical  Logical
	Nullable bool
	NullBit  int
}

// IsReal reports whether a holds SQL's REAL values: a Float32, or a
// Float64 of Logical Real. They print as float32s.
func (a Attribute) IsReal() bool {
	return a.Type == Float32 || (a.Type == Float64 && a.Logical == Real)
}

// IsNull reports whether a's value in tuple t is NULL.
func (a Attribute) IsNull(t []byte) bool {
	return a.Nullable && t[a.NullBit>>3]&(1<<(a.NullBit&7)) != 0
}

// SetNull sets or clears a's NULL bit in tuple t (a must be Nullable).
func (a Attribute) SetNull(t []byte, null bool) {
	if null {
		t[a.NullBit>>3] |= 1 << (a.NullBit & 7)
	} else {
		t[a.NullBit>>3] &^= 1 << (a.NullBit & 7)
	}
}

// Schema describes fixed-size tuples. Attribute 0 is the event time: int64
// milliseconds at offset 0 (Plain or Time), never NULL. TupleSize may
// exceed the attributes (padding, NULL bits).
type Schema struct {
	TupleSize int
	Attrs     []Attribute
}

// NewSchema checks and returns a schema. Sizes of fixed-width attributes may
// be left 0 and are filled in.
func NewSchema(tupleSize int, attrs ...Attribute) (*Schema, error) {
	return newSchema(tupleSize, true, attrs)
}

// NewRowSchema is NewSchema for what is not a stream's tuple, and has no
// event time: a static table's value (StaticJoin.Values).
func NewRowSchema(size int, attrs ...Attribute) (*Schema, error) {
	return newSchema(size, false, attrs)
}

func newSchema(tupleSize int, stream bool, attrs []Attribute) (*Schema, error) {
	s := &Schema{TupleSize: tupleSize, Attrs: append([]Attribute(nil), attrs...)}
	if tupleSize <= 0 {
		return nil, fmt.Errorf("schema: tuple size %d must be positive", tupleSize)
	}
	if len(attrs) == 0 {
		return nil, errors.New("schema: no attributes; attribute 0 must be the int64 event time")
	}
	seen := make(map[string]bool, len(attrs))
	for i := range s.Attrs {
		a := &s.Attrs[i]
		if a.Name == "" {
			return nil, fmt.Errorf("schema: attribute %d has no name", i)
		}
		if seen[a.Name] {
			return nil, fmt.Errorf("schema: attribute %q defined twice", a.Name)
		}
		seen[a.Name] = true
		switch {
		case a.Logical == Time && a.Type != Int64:
			return nil, fmt.Errorf("schema: attribute %q is a time of type %s, want int64", a.Name, a.Type)
		case a.Logical == Boolean && a.Type != Int32:
			return nil, fmt.Errorf("schema: attribute %q is a boolean of type %s, want int32", a.Name, a.Type)
		case a.Logical == Real && a.Type != Float64:
			return nil, fmt.Errorf("schema: attribute %q is a real of type %s, want float64", a.Name, a.Type)
		case a.Logical > Real:
			return nil, fmt.Errorf("schema: attribute %q has unknown logical type %d", a.Name, uint8(a.Logical))
		}
		if w := a.Type.width(); w > 0 {
			if a.Size != 0 && a.Size != w {
				return nil, fmt.Errorf("schema: attribute %q of type %s has size %d, want %d", a.Name, a.Type, a.Size, w)
			}
			a.Size = w
		} else if a.Type != Bytes {
			return nil, fmt.Errorf("schema: attribute %q has unknown type %d", a.Name, uint8(a.Type))
		} else if a.Size <= 0 {
			return nil, fmt.Errorf("schema: bytes attribute %q needs a positive size", a.Name)
		}
		if a.Offset < 0 || a.Offset+a.Size > tupleSize {
			return nil, fmt.Errorf("schema: attribute %q at offset %d size %d does not fit a %d-byte tuple", a.Name, a.Offset, a.Size, tupleSize)
		}
		for j := 0; j < i; j++ {
			b := s.Attrs[j]
			if a.Offset < b.Offset+b.Size && b.Offset < a.Offset+a.Size {
				return nil, fmt.Errorf("schema: attributes %q and %q overlap", b.Name, a.Name)
			}
		}
	}
	for _, a := range s.Attrs {
		if !a.Nullable {
			continue
		}
		at := a.NullBit >> 3
		if a.NullBit < 0 || at >= tupleSize {
			return nil, fmt.Errorf("schema: the NULL bit %d of attribute %q is outside the %d-byte tuple", a.NullBit, a.Name, tupleSize)
		}
		for _, b := range s.Attrs {
			if at >= b.Offset && at < b.Offset+b.Size {
				return nil, fmt.Errorf("schema: the NULL bit %d of attribute %q is inside attribute %q", a.NullBit, a.Name, b.Name)
			}
			if b.Nullable && b.Name != a.Name && b.NullBit == a.NullBit {
				return nil, fmt.Errorf("schema: attributes %q and %q share NULL bit %d", b.Name, a.Name, a.NullBit)
			}
		}
	}
	if t := s.Attrs[0]; stream && (t.Type != Int64 || t.Offset != 0 || t.Nullable) {
		return nil, fmt.Errorf("schema: attribute 0 (%q) must be the int64 event time at offset 0, never NULL", t.Name)
	}
	return s, nil
}

// Lookup returns the attribute called name.
func (s *Schema) Lookup(name string) (Attribute, error) {
	for _, a := range s.Attrs {
		if a.Name == name {
			return a, nil
		}
	}
	return Attribute{}, fmt.Errorf("no column %q in the schema", name)
}

// WindowType says what a window's size and slide count.
type WindowType uint8

const (
	Range WindowType = iota + 1 // event time, in the event-time unit (ms)
	Rows                        // tuples: positions in the input stream, before any selection
	// Session windows are per group: a session holds a group's tuples
	// whose event times are at most Size (the gap) apart, and ends Size
	// after its last tuple (Session).
	Session
)

// units names what a window's positions count.
func (t WindowType) units() string {
	if t == Rows {
		return "tuples for a row window"
	}
	return "event-time units for a range window"
}

func (t WindowType) String() string {
	switch t {
	case Range:
		return "range"
	case Rows:
		return "row"
	case Session:
		return "session"
	}
	return fmt.Sprintf("window-type(%d)", uint8(t))
}

// Window is a window definition: tumbling when Size == Slide, sliding when
// Size > Slide. Window w covers [w*Slide, w*Slide+Size).
//
// Delay is the watermark delay, in the window's position units (event-time
// units for a range window, tuples for a row window), >= 0: window
// [s, e) closes when the largest position seen minus Delay reaches e, and
// a tuple is late when the watermark before it minus Delay has reached the
// end of the first window containing it (an end past math.MaxInt64 is
// never reached, whatever the delay). 0, the default, closes a window as
// soon as the watermark reaches its end. It is SQL's
// `WATERMARK FOR t AS t - INTERVAL ...` less 1 ms (Flink fires a window
// at its last millisecond: package sql's windowDelay) and YSB's
// --watermark-delay.
type Window struct {
	Type  WindowType
	Size  int64
	Slide int64
	Delay int64
}

// Tumbling returns a range window of size ms.
func Tumbling(size int64) Window { return Window{Type: Range, Size: size, Slide: size} }

// Sliding returns a range window of size ms advancing by slide ms.
func Sliding(size, slide int64) Window { return Window{Type: Range, Size: size, Slide: slide} }

// Sessions returns session windows of gap ms (Flink's and SQL's SESSION):
// per group, a session starts at a tuple's event time and goes on while
// the next tuple of the group comes at most gap after the last one (two
// tuples exactly gap apart share a session); it ends gap after its last
// tuple, and closes when the watermark minus the delay reaches that end.
// A tuple is late when the watermark before it minus the delay has
// reached its time plus gap (its own session would have closed) and no
// open session of its group lies within gap of it: as Flink's merging
// windows, which merge a tuple's window first and then judge the merged
// one, a tuple that joins an open session is counted. A tuple that lands
// within gap of two open sessions of its group merges them. A closed
// session is gone: a later tuple near it starts a new one.
func Sessions(gap int64) Window { return Window{Type: Session, Size: gap, Slide: gap} }

// Validate refuses a window that cannot be evaluated.
func (w Window) Validate() error {
	if w.Type == Session {
		switch {
		case w.Size <= 0:
			return fmt.Errorf("window: session gap %d must be positive", w.Size)
		case w.Slide != 0 && w.Slide != w.Size:
			return fmt.Errorf("window: a session has a gap (Size), not a slide (%d)", w.Slide)
		case w.Delay < 0:
			return fmt.Errorf("window: watermark delay %d is negative (valid: delay >= 0, in %s)", w.Delay, w.Type.units())
		}
		return nil
	}
	switch {
	case w.Type != Range && w.Type != Rows:
		return fmt.Errorf("window: unknown type %d (valid: range, row, session)", uint8(w.Type))
	case w.Size <= 0:
		return fmt.Errorf("window: size %d must be positive", w.Size)
	case w.Slide <= 0:
		return fmt.Errorf("window: slide %d must be positive", w.Slide)
	case w.Slide > w.Size:
		return fmt.Errorf("window: slide %d larger than size %d (valid: 0 < slide <= size)", w.Slide, w.Size)
	case w.Delay < 0:
		return fmt.Errorf("window: watermark delay %d is negative (valid: delay >= 0, in %s)", w.Delay, w.Type.units())
	}
	return nil
}

// CmpOp is a comparison operator of a selection predicate.
type CmpOp uint8

const (
	Eq CmpOp = iota + 1
	Ne
	Lt
	Le
	Gt
	Ge
)

// Mirror is the operator with its operands swapped: `k op col` is
// `col op.Mirror() k`.
func (o CmpOp) Mirror() CmpOp {
	switch o {
	case Lt:
		return Gt
	case Le:
		return Ge
	case Gt:
		return Lt
	case Ge:
		return Le
	}
	return o
}

// Holds evaluates a op b: the one definition of a comparison, which the
// fused kernel's predicates, the HAVING filter and the GPU emulator call
// (inlined: no call per tuple). The vectorised kernels' cmpSel has one loop
// per operator instead, the switch outside the loop, and a test holds it
// to Holds; package reference, the oracle, keeps a copy of its own, as it
// shares no code with what it checks.
func Holds[T int64 | float64](op CmpOp, a, b T) bool {
	switch op {
	case Eq:
		return a == b
	case Ne:
		return a != b
	case Lt:
		return a < b
	case Le:
		return a <= b
	case Gt:
		return a > b
	}
	return a >= b
}

// ColumnConst recognises `column op integer constant`, the constant on
// either side: it returns the column, the operator with the column on its
// left (op.Mirror() when the constant was), and the constant.
func ColumnConst(e Expr) (col string, op CmpOp, k int64, ok bool) {
	c, isCmp := e.(Compare)
	if !isCmp {
		return "", 0, 0, false
	}
	if cl, lok := c.L.(Column); lok {
		if kr, rok := c.R.(IntConst); rok {
			return cl.Name, c.Op, kr.V, true
		}
	}
	if cr, rok := c.R.(Column); rok {
		if kl, lok := c.L.(IntConst); lok {
			return cr.Name, c.Op.Mirror(), kl.V, true
		}
	}
	return "", 0, 0, false
}

func (o CmpOp) String() string {
	switch o {
	case Eq:
		return "="
	case Ne:
		return "!="
	case Lt:
		return "<"
	case Le:
		return "<="
	case Gt:
		return ">"
	case Ge:
		return ">="
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// StaticTable is an in-memory relation of keys and fixed-width values,
// joined to the stream on equality of a column with the key. A key is the
// column's bytes as a tuple holds them: a bytes column's, an integer's
// little-endian bytes (4 for an int32, 8 for an int64), all KeyWidth wide;
// or, with KeyWidth 0, a string column's string (the bytes of the string,
// of any length).
type StaticTable struct {
	KeyWidth   int
	ValueWidth int
	Keys       [][]byte
	Values     [][]byte
}

// StaticJoin is an inner equi-join of the stream column Column with the keys
// of Table; the joined value is visible to GROUP BY under the name As.
//
// In a query without aggregates (a lookup join, enriching each tuple), Values
// lays out the value bytes instead: the table's columns, which WHERE and the
// projection read by their names as attributes after the input's
// (JoinedSchema); As is then unused. A String attribute's view in a value
// points to memory the table keeps for the query's life.
//
// Key, in a lookup join only, is the stream's key computed from the
// input's attributes in place of a column (Column then empty): an integer
// expression, matched with keys of 8 bytes (an integer's little-endian
// bytes), or a string one, matched with string keys; a NULL key matches
// nothing. The kernel computes it per chunk as it looks the keys up, where
// a column of its own would take a pass over the stream before the join
// (Nexmark's q13: ON mod(B.auction, 10000) = S.key).
type StaticJoin struct {
	Column string
	Key    Expr
	Table  *StaticTable
	As     string
	Values *Schema
}

// KeyText is the stream's side of the join as text: the column's name or
// the key expression's.
func (j *StaticJoin) KeyText() string {
	if j.Key != nil {
		return j.Key.String()
	}
	return j.Column
}

// JoinedSchema is what a lookup join's expressions read: the input's
// attributes, then the joined value's (Join.Values) after them, their
// offsets and NULL bits moved past the input tuple. Without a lookup join
// it is the input schema.
func (q *Query) JoinedSchema() *Schema {
	if q.Join == nil || q.Join.Values == nil {
		return q.Schema
	}
	in, v := q.Schema, q.Join.Values
	s := &Schema{TupleSize: in.TupleSize + v.TupleSize, Attrs: append([]Attribute(nil), in.Attrs...)}
	for _, a := range v.Attrs {
		a.Offset += in.TupleSize
		if a.Nullable {
			a.NullBit += 8 * in.TupleSize
		}
		s.Attrs = append(s.Attrs, a)
	}
	return s
}

// validateKey refuses a computed key that the table's keys cannot match,
// or one outside a lookup join.
func (j *StaticJoin) validateKey(scope Scope, want string) error {
	if j.Column != "" {
		return fmt.Errorf("join: a key column %q and a key expression %s: set one", j.Column, j.Key)
	}
	if j.Values == nil {
		return errors.New("join: a computed key is for a lookup join (Values)")
	}
	t, err := TypeOf(j.Key, scope)
	if err != nil {
		return fmt.Errorf("join: key %s: %w", j.Key, err)
	}
	switch {
	case t == IntValue && j.Table.KeyWidth == 8, t == StringValue && j.Table.KeyWidth == 0:
		return nil
	}
	return fmt.Errorf("join: key %s is %s; the table has %s (a computed key is an integer, of 8-byte keys, or a string)", j.Key, t, want)
}

// keyWidthOf is the width of the table keys a join column of attribute a
// takes: its size, or 0 (any) for a string.
func keyWidthOf(a Attribute) (int, bool) {
	switch a.Type {
	case Bytes, Int32, Int64:
		return a.Size, true
	case String:
		return 0, true
	}
	return 0, false
}

// AggFunc is an aggregate function.
type AggFunc uint8

const (
	Count AggFunc = iota + 1
	Sum
	Avg
	Min
	Max
)

// AggFuncs lists the aggregate functions by name.
var AggFuncs = map[string]AggFunc{"count": Count, "sum": Sum, "avg": Avg, "min": Min, "max": Max}

func (f AggFunc) String() string {
	for n, g := range AggFuncs {
		if g == f {
			return n
		}
	}
	return fmt.Sprintf("agg(%d)", uint8(f))
}

// Aggregate is one aggregate of the query: Func over Arg (nil for
// COUNT(*)), visible to HAVING under the name As. A NULL Arg is skipped:
// COUNT(x) counts the tuples whose x is not NULL, and SUM, AVG, MIN and MAX
// of a group with none are NULL. Filter (nil: none) is SQL's
// FILTER (WHERE cond): only the tuples for which it holds are aggregated.
type Aggregate struct {
	Func   AggFunc
	Arg    Expr
	As     string
	Filter Expr
}

// Projection is one output attribute of a projection query.
type Projection struct {
	Expr Expr
	As   string
}

// MaxGroupKeyBytes bounds the total width of the GROUP BY keys: int32
// columns take 4 bytes, other integer expressions 8, bytes columns their
// size.
const MaxGroupKeyBytes = 16

// Query is a windowed query over one input stream. It is either
//
//   - an aggregation: WHERE, an optional join with a static table, GROUP BY,
//     aggregates per window and HAVING over them; its output is windows; or
//   - a stateless query (no aggregates): WHERE and an optional projection;
//     its output is a stream of tuples (the input tuples that pass WHERE, or
//     the event time followed by the projected values), which can feed
//     another query.
type Query struct {
	Name       string
	Schema     *Schema
	Window     Window // required for aggregations; ignored by stateless queries
	Where      Expr   // a predicate; nil keeps every tuple
	Join       *StaticJoin
	Project    []Projection // stateless queries only
	GroupBy    []Expr       // columns and integer expressions, or the join's As alone
	Aggregates []Aggregate
	Having     Expr // a predicate over aggregates (by As) and GROUP BY columns
	UDF        *UDF // stateless queries only: replaces the projection
}

// Stateless reports whether q has no aggregation: its output is tuples.
func (q *Query) Stateless() bool { return len(q.Aggregates) == 0 }

// Reads reports whether q reads its input's attribute name: in WHERE, the
// projection, GROUP BY, an aggregate's argument or FILTER, HAVING, or as
// the lookup join's key; and every attribute where q passes its tuples on
// whole (a stateless query without a projection) or hands them to a UDF.
func (q *Query) Reads(name string) bool {
	if q.UDF != nil || (q.Stateless() && len(q.Project) == 0) || (q.Join != nil && q.Join.Key == nil && q.Join.Column == name) {
		return true
	}
	found := false
	find := func(x Expr) bool {
		if c, ok := x.(Column); ok && c.Name == name {
			found = true
		}
		return !found
	}
	Walk(q.Where, find)
	Walk(q.Having, find)
	if q.Join != nil {
		Walk(q.Join.Key, find)
	}
	for _, p := range q.Project {
		Walk(p.Expr, find)
	}
	for _, g := range q.GroupBy {
		Walk(g, find)
	}
	for _, a := range q.Aggregates {
		Walk(a.Arg, find)
		Walk(a.Filter, find)
	}
	return found
}

// Validate refuses a query that the engine cannot run, with an error naming
// the query and what is wrong.
func (q *Query) Validate() error {
	if err := q.validate(); err != nil {
		return fmt.Errorf("query %q: %w", q.Name, err)
	}
	return nil
}

// Scope is the names visible to WHERE, GROUP BY and aggregate arguments:
// the schema's attributes and the joined value.
func (q *Query) Scope() Scope {
	base := SchemaScope(q.JoinedSchema())
	return func(name string) (ValueType, error) {
		if q.Join != nil && name == q.Join.As {
			return BytesValue, nil
		}
		return base(name)
	}
}

// AggType is the type of aggregate a's result.
func (q *Query) AggType(a Aggregate) ValueType {
	switch a.Func {
	case Count:
		return IntValue
	case Avg:
		return FloatValue
	}
	t, _ := TypeOf(a.Arg, q.Scope())
	return t
}

// AggReal reports whether aggregate a's result is SQL's REAL: MIN or MAX
// of a REAL argument (IsReal).
func (q *Query) AggReal(a Aggregate) bool {
	return (a.Func == Min || a.Func == Max) && IsReal(a.Arg, SchemaReal(q.JoinedSchema()))
}

// HavingReal is the RealScope of HAVING's names (HavingScope): aggregates
// by As, and GROUP BY columns.
func (q *Query) HavingReal() RealScope {
	return func(name string) bool {
		for _, a := range q.Aggregates {
			if a.As != "" && a.As == name {
				return q.AggReal(a)
			}
		}
		for _, g := range q.GroupBy {
			if c, ok := g.(Column); ok && c.Name == name {
				return SchemaReal(q.JoinedSchema())(name)
			}
		}
		return false
	}
}

// Nulls is the NullScope of WHERE, GROUP BY and the aggregates'
// arguments: the schema's nullable attributes.
func (q *Query) Nulls() NullScope { return SchemaNulls(q.JoinedSchema()) }

// AggNullable reports whether aggregate a can be NULL: SUM, AVG, MIN and
// MAX of an argument that can be NULL, or under a FILTER (a group of the
// window with none aggregated).
func (q *Query) AggNullable(a Aggregate) bool {
	if a.Func == Count {
		return false
	}
	return a.Filter != nil || MayBeNull(a.Arg, q.Nulls())
}

// HavingScope is the names visible to HAVING: aggregates by As, and GROUP
// BY columns by name.
func (q *Query) HavingScope() Scope {
	return func(name string) (ValueType, error) {
		for _, a := range q.Aggregates {
			if a.As != "" && a.As == name {
				return q.AggType(a), nil
			}
		}
		for _, g := range q.GroupBy {
			if c, ok := g.(Column); ok && c.Name == name {
				return q.Scope()(name)
			}
		}
		return 0, fmt.Errorf("HAVING can use aggregates (by their names) and GROUP BY columns; %q is neither", name)
	}
}

// KeyWidth is the bytes group key expression g takes: a bytes column its
// size, an int32 column 4, any other integer or time 8, a boolean 1, a
// string 8 (the engine groups a string by a number it gives each distinct
// value, 0 for NULL); a key that can be NULL (but a string) takes one byte
// more, 0 for NULL and 1 before a value, so that NULL sorts first.
func (q *Query) KeyWidth(g Expr) int {
	w := q.keyWidth(g)
	if q.KeyNullable(g) {
		w++
	}
	return w
}

// KeyNullable reports whether group key g is encoded with a NULL byte.
func (q *Query) KeyNullable(g Expr) bool {
	t, _ := TypeOf(g, q.Scope())
	if c, ok := g.(Column); ok && q.Join != nil && c.Name == q.Join.As {
		return false
	}
	return t != StringValue && t != BoolValue && MayBeNull(g, q.Nulls())
}

// heldWidth is the bytes the engine holds key g in: its value's, 4 for a
// boolean, and 4 more for a NULL flag where it can be NULL (but a string,
// whose NULL is a number of its own).
func (q *Query) heldWidth(g Expr) int {
	w := q.keyWidth(g)
	if t, _ := TypeOf(g, q.Scope()); t == BoolValue {
		return 4
	}
	if q.KeyNullable(g) {
		w += 4
	}
	return w
}

func (q *Query) keyWidth(g Expr) int {
	if c, ok := g.(Column); ok {
		if q.Join != nil && c.Name == q.Join.As {
			return q.Join.Table.ValueWidth
		}
		if a, err := q.Schema.Lookup(c.Name); err == nil && a.Type != String && a.Logical != Boolean {
			return a.Size
		}
	}
	switch t, _ := TypeOf(g, q.Scope()); t {
	case BoolValue:
		return 1
	case StringValue:
		return StringKeyWidth
	}
	return 8
}

// StringKeyWidth is the bytes of a string group key in the engine: the
// number of the string in the query's dictionary (0 for NULL), which
// stays below 2^31 (a dictionary that large would hold tens of GB), so
// that a nullable BIGINT and a string (Nexmark q8 over JSON) fit the
// key's 16 bytes.
const StringKeyWidth = 4

func (q *Query) validate() error {
	if q.Schema == nil {
		return errors.New("no input schema")
	}
	scope := q.Scope()
	if err := predicate("where", q.Where, scope); err != nil {
		return err
	}
	if j := q.Join; j != nil {
		if j.Table == nil {
			return errors.New("join: no table")
		}
		want := fmt.Sprintf("keys of %d bytes", j.Table.KeyWidth)
		if j.Table.KeyWidth == 0 {
			want = "string keys"
		}
		if j.Key != nil {
			if err := j.validateKey(SchemaScope(q.Schema), want); err != nil {
				return err
			}
		} else {
			a, err := q.Schema.Lookup(j.Column)
			if err != nil {
				return fmt.Errorf("join: %w", err)
			}
			if w, ok := keyWidthOf(a); !ok || w != j.Table.KeyWidth {
				return fmt.Errorf("join: column %q is %s of %d bytes; the table has %s", j.Column, a.Type, a.Size, want)
			}
		}
		if err := j.Table.validate(); err != nil {
			return fmt.Errorf("join: %w", err)
		}
		if j.Values != nil {
			if !q.Stateless() {
				return errors.New("join: a lookup join's Values are for a query without aggregates (an aggregation groups by As)")
			}
			if j.Values.TupleSize != j.Table.ValueWidth {
				return fmt.Errorf("join: Values lay out %d bytes; the table's values are %d", j.Values.TupleSize, j.Table.ValueWidth)
			}
			for _, v := range j.Values.Attrs {
				if _, err := q.Schema.Lookup(v.Name); err == nil {
					return fmt.Errorf("join: the table's column %q is also a column of the stream", v.Name)
				}
			}
		} else {
			if j.As == "" {
				return errors.New("join: the joined value needs a name (As)")
			}
			if _, err := q.Schema.Lookup(j.As); err == nil {
				return fmt.Errorf("join: name %q of the joined value is already a column", j.As)
			}
		}
	}
	if q.UDF != nil {
		if !q.Stateless() || len(q.Project) > 0 || q.Join != nil {
			return errors.New("a UDF stands alone (after WHERE): no projection, join or aggregate in its query")
		}
		if err := q.UDF.validate(); err != nil {
			return err
		}
	}
	if q.Stateless() {
		if len(q.GroupBy) > 0 || q.Having != nil {
			return errors.New("GROUP BY and HAVING need at least one aggregate")
		}
		if q.Join != nil && q.Join.Values == nil {
			return errors.New("a static join in a query without aggregates reads the table's columns: set Join.Values")
		}
		for i, p := range q.Project {
			t, err := TypeOf(p.Expr, scope)
			if err != nil {
				return fmt.Errorf("projection %d: %w", i, err)
			}
			if t == BytesValue {
				if _, isCol := p.Expr.(Column); !isCol {
					return fmt.Errorf("projection %d: %s is %s; a bytes value is projected as a column", i, p.Expr, t)
				}
			}
			if t == 0 {
				return fmt.Errorf("projection %d: %s has no type (CAST the NULL)", i, p.Expr)
			}
		}
		return nil
	}
	if len(q.Project) > 0 {
		return errors.New("a projection and aggregates in one query: chain a projection query into an aggregation instead")
	}
	if err := q.Window.Validate(); err != nil {
		return err
	}
	width := 0
	for _, g := range q.GroupBy {
		if c, ok := g.(Column); ok && q.Join != nil && c.Name == q.Join.As {
			if len(q.GroupBy) > 1 {
				return fmt.Errorf("group by: the joined value %q together with other keys is not supported yet", c.Name)
			}
			continue
		}
		t, err := TypeOf(g, scope)
		if err != nil {
			return fmt.Errorf("group by: %w", err)
		}
		if !t.Integer() && t != BytesValue && t != StringValue && t != BoolValue {
			return fmt.Errorf("group by: %s is %s; group keys are integers, timestamps, booleans, strings or bytes columns", g, t)
		}
		width += q.heldWidth(g)
	}
	if width > MaxGroupKeyBytes {
		return fmt.Errorf("group by: keys of %d bytes; at most %d bytes are supported (a key that can be NULL, but a string, takes 4 bytes more)", width, MaxGroupKeyBytes)
	}
	names := map[string]bool{}
	for _, ag := range q.Aggregates {
		if ag.As != "" {
			if names[ag.As] {
				return fmt.Errorf("aggregate name %q used twice", ag.As)
			}
			names[ag.As] = true
		}
		if err := predicate("aggregate "+ag.Func.String()+" filter", ag.Filter, scope); err != nil {
			return err
		}
		if ag.Func == Count {
			if ag.Arg != nil {
				if _, err := TypeOf(ag.Arg, scope); err != nil {
					return fmt.Errorf("aggregate count: %w", err)
				}
			}
			continue
		}
		if ag.Func < Count || ag.Func > Max {
			return fmt.Errorf("aggregate: unknown function %d", uint8(ag.Func))
		}
		t, err := TypeOf(ag.Arg, scope)
		if err != nil {
			return fmt.Errorf("aggregate %s: %w", ag.Func, err)
		}
		if !t.Number() || (t == TimeValue && (ag.Func == Sum || ag.Func == Avg)) {
			return fmt.Errorf("aggregate %s: %s is %s, not a number", ag.Func, ag.Arg, t)
		}
	}
	return predicate("having", q.Having, q.HavingScope())
}

func (t *StaticTable) validate() error {
	if t.KeyWidth < 0 || t.ValueWidth <= 0 {
		return fmt.Errorf("table key width %d must not be negative (0: string keys) and value width %d must be positive", t.KeyWidth, t.ValueWidth)
	}
	if len(t.Keys) != len(t.Values) {
		return fmt.Errorf("table has %d keys but %d values", len(t.Keys), len(t.Values))
	}
	seen := make(map[string]int, len(t.Keys))
	for i, k := range t.Keys {
		if t.KeyWidth > 0 && len(k) != t.KeyWidth {
			return fmt.Errorf("table row %d: key of %d bytes, want %d", i, len(k), t.KeyWidth)
		}
		if len(t.Values[i]) != t.ValueWidth {
			return fmt.Errorf("table row %d: value of %d bytes, want %d", i, len(t.Values[i]), t.ValueWidth)
		}
		if j, dup := seen[string(k)]; dup {
			return fmt.Errorf("table rows %d and %d have the same key %x", j, i, k)
		}
		seen[string(k)] = i
	}
	return nil
}
