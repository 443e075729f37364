package reference

import (
	"fmt"
	"time"

	"github.com/saber-hx/saber-hx/query"
)

// Kind is the kind of a Value: what its fields mean.
type Kind uint8

const (
	// IntKind is an integer in I. It is the zero Kind, so that the
	// Value{I: v} of callers that predate Kind stays an integer.
	IntKind    Kind = iota
	FloatKind       // a float in F (and Float is true)
	StringKind      // a string in Str
	TimeKind        // a timestamp in I: milliseconds since the epoch, UTC
	BoolKind        // a boolean in I: 0 false, 1 true
	BytesKind       // a bytes column's value in Str, byte for byte
)

func (k Kind) String() string {
	switch k {
	case IntKind:
		return "int"
	case FloatKind:
		return "float"
	case StringKind:
		return "string"
	case TimeKind:
		return "time"
	case BoolKind:
		return "bool"
	case BytesKind:
		return "bytes"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Value is one value of an expression, an aggregate or an output
// attribute: NULL (Null, of kind Kind), or an integer, a float, a string, a
// timestamp, a boolean or a bytes value, as Kind says.
//
// Float is kept for the callers that predate Kind: it is true exactly when
// the value is a float (Kind FloatKind). Build Values with the
// constructors (Int, Float, Str, Time, Bool, Bytes, Null), which keep the
// two in step.
type Value struct {
	Kind  Kind
	Float bool
	Null  bool
	I     int64   // IntKind, TimeKind (ms), BoolKind (0 or 1)
	F     float64 // FloatKind
	Str   string  // StringKind, BytesKind
}

// Int returns an integer Value.
func Int(v int64) Value { return Value{I: v} }

// Float returns a float Value.
func Float(v float64) Value { return Value{Kind: FloatKind, Float: true, F: v} }

// Str returns a string Value.
func Str(s string) Value { return Value{Kind: StringKind, Str: s} }

// Time returns a timestamp Value: ms milliseconds since the epoch.
func Time(ms int64) Value { return Value{Kind: TimeKind, I: ms} }

// Bool returns a boolean Value.
func Bool(b bool) Value {
	if b {
		return Value{Kind: BoolKind, I: 1}
	}
	return Value{Kind: BoolKind}
}

// Bytes returns the Value of a bytes column (a copy of b).
func Bytes(b []byte) Value { return Value{Kind: BytesKind, Str: string(b)} }

// Null returns the NULL of kind k.
func Null(k Kind) Value { return Value{Kind: k, Float: k == FloatKind, Null: true} }

// kind is v's kind; a Value built as a literal with Float set and no Kind
// is a float.
func (v Value) kind() Kind {
	if v.Float {
		return FloatKind
	}
	return v.Kind
}

// timeLayout is how a timestamp prints: CAST(ts AS VARCHAR), and Value's
// String.
const timeLayout = "2006-01-02 15:04:05.000"

// utc is the time.Time of ms milliseconds since the epoch, in UTC.
func utc(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// String formats v with its kind: an integer in decimal, a float with the
// precision needed to round-trip it, a string quoted, a timestamp as its
// milliseconds and its UTC time, a boolean TRUE or FALSE, a bytes value in
// hex; NULL as NULL.
func (v Value) String() string {
	k := v.kind()
	if v.Null {
		return fmt.Sprintf("NULL (%s)", k)
	}
	switch k {
	case FloatKind:
		return fmt.Sprintf("%v (float)", v.F)
	case StringKind:
		return fmt.Sprintf("%q (string)", v.Str)
	case TimeKind:
		return fmt.Sprintf("%d (time %s)", v.I, utc(v.I).Format(timeLayout))
	case BoolKind:
		if v.I != 0 {
			return "TRUE (bool)"
		}
		return "FALSE (bool)"
	case BytesKind:
		return fmt.Sprintf("%x (bytes)", v.Str)
	}
	return fmt.Sprintf("%d (int)", v.I)
}

// Text is v's plain text, as tests compare rows: a string as it is, a
// float by %v, NULL as NULL, anything else its integer.
func (v Value) Text() string {
	switch {
	case v.Null:
		return "NULL"
	case v.Kind == StringKind:
		return v.Str
	case v.Float:
		return fmt.Sprint(v.F)
	}
	return fmt.Sprint(v.I)
}

// asFloat is v as a float64, converting an integer or a timestamp.
func (v Value) asFloat() float64 {
	if v.Float {
		return v.F
	}
	return float64(v.I)
}

// kindOf is the Kind of values of type t. An untyped NULL (t 0) is given
// IntKind: it is NULL whatever its kind, and the context that gives it a
// type converts it (see conform).
func kindOf(t query.ValueType) Kind {
	switch t {
	case query.FloatValue:
		return FloatKind
	case query.StringValue:
		return StringKind
	case query.TimeValue:
		return TimeKind
	case query.BoolValue:
		return BoolKind
	case query.BytesValue:
		return BytesKind
	}
	return IntKind
}

// conform is v as a value of static type t, where the IR mixes types
// implicitly (query.CommonType): an integer where a float is expected
// becomes that float, an integer where a timestamp is expected is that
// timestamp, and back; a NULL takes t's kind. CASE and COALESCE, whose
// branches may be of different types, and every output (projections,
// aggregate arguments, group keys) go through it, so that a value's kind
// is always its expression's type. t 0 (an untyped NULL) leaves v as it
// is.
func conform(v Value, t query.ValueType) Value {
	if t == 0 {
		return v
	}
	if v.Null {
		return Null(kindOf(t))
	}
	switch k := v.kind(); {
	case t == query.FloatValue && (k == IntKind || k == TimeKind):
		return Float(float64(v.I))
	case t == query.TimeValue && k == IntKind:
		return Time(v.I)
	case t == query.IntValue && k == TimeKind:
		return Int(v.I)
	}
	return v
}
