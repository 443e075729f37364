package reference

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/saber-hx/saber-hx/query"
)

// A String attribute is a 16-byte view (the layout of package strview,
// read here by code of our own, as the reference shares no code with what
// it checks):
//
//	bytes  0..4   length n, uint32 little-endian
//	bytes  4..8   the string's first 4 bytes, zero-padded
//	bytes  8..16  n <= 12: the string's bytes 4..12, zero-padded
//	              n >  12: the address of its n bytes, uint64
//	                       little-endian, in memory outside the Go heap
//
// The reference reads a view strictly, since a malformed one is a bug of
// whoever wrote it: an inline view's padding must be zero, and a long
// string's prefix must be its first 4 bytes at a non-zero address.

const (
	viewSize  = 16
	maxInline = 12
)

// readView returns the string of view v (a copy: it outlives the memory
// the view points to).
func readView(v []byte) (string, error) {
	v = v[:viewSize]
	n := binary.LittleEndian.Uint32(v[0:4])
	if n <= maxInline {
		for i := 4 + int(n); i < viewSize; i++ {
			if v[i] != 0 {
				return "", fmt.Errorf("string view %x: length %d, but padding byte %d is %#x, not 0", v, n, i, v[i])
			}
		}
		return string(v[4 : 4+n]), nil
	}
	addr := binary.LittleEndian.Uint64(v[8:16])
	if addr == 0 {
		return "", fmt.Errorf("string view %x: length %d at address 0", v, n)
	}
	// The bytes lie outside the Go heap (an arena, a ring, a test's
	// mmap): a pointer made from the address is one the garbage collector
	// never manages, and checkptr accepts it there.
	s := string(unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), uintptr(addr))), n))
	if s[:4] != string(v[4:8]) {
		return "", fmt.Errorf("string view %x: prefix %q, but the string at %#x starts %q", v, v[4:8], addr, s[:4])
	}
	return s, nil
}

// attrKind is the Kind of attribute a's values.
func attrKind(a query.Attribute) Kind { return kindOf(a.Value()) }

// readAttr reads attribute a of tuple t: NULL where its bit says so (the
// value's slot is then not read: it may hold anything); int32 and int64 as
// integers, or a timestamp (Logical Time) or a boolean (Logical Boolean,
// which must be 0 or 1); float32 (converted exactly to float64) and
// float64 as floats; a bytes column as its bytes; a String as its view's
// string.
func readAttr(a query.Attribute, t []byte) (Value, error) {
	if a.IsNull(t) {
		return Null(attrKind(a)), nil
	}
	b := t[a.Offset : a.Offset+a.Size]
	le := binary.LittleEndian
	switch a.Type {
	case query.Int32:
		v := int64(int32(le.Uint32(b)))
		if a.Logical == query.Boolean {
			if v != 0 && v != 1 {
				return Value{}, fmt.Errorf("boolean column %q holds %d, not 0 or 1", a.Name, v)
			}
			return Bool(v == 1), nil
		}
		return Int(v), nil
	case query.Int64:
		v := int64(le.Uint64(b))
		if a.Logical == query.Time {
			return Time(v), nil
		}
		return Int(v), nil
	case query.Float32:
		return Float(float64(math.Float32frombits(le.Uint32(b)))), nil
	case query.Float64:
		return Float(math.Float64frombits(le.Uint64(b))), nil
	case query.Bytes:
		return Bytes(b), nil
	case query.String:
		s, err := readView(b)
		if err != nil {
			return Value{}, fmt.Errorf("column %q: %w", a.Name, err)
		}
		return Str(s), nil
	}
	return Value{}, fmt.Errorf("column %q has unknown type %s", a.Name, a.Type)
}

// decodeTuple is every attribute of tuple t of schema s, in order.
func decodeTuple(s *query.Schema, t []byte) ([]Value, error) {
	vals := make([]Value, len(s.Attrs))
	for i, a := range s.Attrs {
		v, err := readAttr(a, t)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

// DecodeTuples reads tuples, a whole number of s.TupleSize-byte tuples,
// into the values of each tuple's attributes (attribute 0 included), as
// the reference reads its input: NULL where an attribute's NULL bit is
// set, strings copied out of their views (which must still be valid: decode
// an engine's output before the memory its views point to is freed). It
// is how a test brings an engine's output to Result.Values, for Diff.
func DecodeTuples(s *query.Schema, tuples []byte) ([][]Value, error) {
	if s == nil || s.TupleSize <= 0 {
		return nil, fmt.Errorf("reference: DecodeTuples: no schema")
	}
	if rem := len(tuples) % s.TupleSize; rem != 0 {
		return nil, fmt.Errorf("reference: DecodeTuples: %d bytes is not a whole number of %d-byte tuples (%d trailing bytes)", len(tuples), s.TupleSize, rem)
	}
	var out [][]Value
	for off := 0; off < len(tuples); off += s.TupleSize {
		vals, err := decodeTuple(s, tuples[off:off+s.TupleSize])
		if err != nil {
			return nil, fmt.Errorf("reference: DecodeTuples: tuple %d (byte offset %d): %w", off/s.TupleSize, off, err)
		}
		out = append(out, vals)
	}
	return out, nil
}

// encodeTuple lays vals out as a tuple of schema s, which has no String
// attribute (the reference has no memory of its own for views): each
// value at its attribute's offset, little-endian, a NULL as its bit and a
// zeroed slot. A NULL where s has no bit for it is an error: the query's
// output schema said the value could not be NULL.
func encodeTuple(s *query.Schema, vals []Value) ([]byte, error) {
	t := make([]byte, s.TupleSize)
	le := binary.LittleEndian
	for i, a := range s.Attrs {
		v := vals[i]
		if v.Null {
			if !a.Nullable {
				return nil, fmt.Errorf("attribute %d (%q) is NULL, but the output schema gives it no NULL bit", i, a.Name)
			}
			a.SetNull(t, true)
			continue
		}
		b := t[a.Offset : a.Offset+a.Size]
		switch a.Type {
		case query.Int64:
			le.PutUint64(b, uint64(v.I))
		case query.Int32:
			le.PutUint32(b, uint32(int32(v.I)))
		case query.Float64:
			le.PutUint64(b, math.Float64bits(v.F))
		case query.Float32:
			le.PutUint32(b, math.Float32bits(float32(v.F)))
		case query.Bytes:
			if len(v.Str) != a.Size {
				return nil, fmt.Errorf("attribute %d (%q): %d bytes, want %d", i, a.Name, len(v.Str), a.Size)
			}
			copy(b, v.Str)
		default:
			return nil, fmt.Errorf("attribute %d (%q) is %s: the reference does not encode it", i, a.Name, a.Type)
		}
	}
	return t, nil
}

// valueLevel reports whether outputs of schema s are compared value by
// value rather than byte for byte: a String attribute's bytes are a
// pointer, and a NULL's slot may hold anything.
func valueLevel(s *query.Schema) bool {
	for _, a := range s.Attrs {
		if a.Type == query.String || a.Nullable {
			return true
		}
	}
	return false
}
