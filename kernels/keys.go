package kernels

import (
	"encoding/binary"
	"math"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
	"github.com/saber-hx/saber-hx/window"
)

// The GROUP BY values of a hashed group key, as the kernels hold them
// (lowerGroups' parts), decoded for the outputs: into output tuples
// (EncodeKeys), into the canonical forms rows are ordered and compared by
// (AppendCanonicalKey).

// StringKeys reports whether a GROUP BY value is a string: then the rows of
// an emitted window are ordered by their canonical keys (SortRows), not by
// the kernels' key bytes, whose string numbers follow the workers' timing.
func (p *Plan) StringKeys() bool { return p.strings != nil }

// Strings is the dictionary of the query's string keys (nil: none).
func (p *Plan) Strings() *strview.Dict { return p.strings }

// KeyValue is GROUP BY value v of key bytes kb: an integer (a time; a
// boolean as 0 or 1; a string's number, with the string in b), or a bytes
// column's bytes; kind says which, null whether it is NULL.
func (p *Plan) KeyValue(kb []byte, v int) (i int64, b []byte, kind KeyKind, null bool) {
	return p.keyValue(kb, v)
}

func (p *Plan) keyValue(kb []byte, v int) (i int64, b []byte, kind KeyKind, null bool) {
	for j := range p.KeyParts {
		kp := &p.KeyParts[j]
		if kp.Key != v {
			continue
		}
		switch kp.Kind {
		case KeyNullFlag:
			if query.DecodeIntKey(kb[kp.Pos:], kp.Width) == 0 {
				return 0, nil, KeyInt, true
			}
			continue
		case KeyBytes:
			return 0, kb[kp.Pos : kp.Pos+kp.Width], KeyBytes, false
		case KeyString:
			id := query.DecodeIntKey(kb[kp.Pos:], kp.Width)
			if id == 0 {
				return 0, nil, KeyString, true
			}
			return id, p.strings.String(id), KeyString, false
		case KeyBool:
			x := query.DecodeIntKey(kb[kp.Pos:], kp.Width)
			return x - 1, nil, KeyBool, x == 0
		}
		return query.DecodeIntKey(kb[kp.Pos:], kp.Width), nil, KeyInt, false
	}
	return 0, nil, KeyInt, true
}

// EncodeKeys writes the GROUP BY values of key bytes kb into output tuple
// t at the attributes attrs (the output schema's, one per value): a
// string's view points into the query's Strings, which outlive the tuple.
func (p *Plan) EncodeKeys(t []byte, attrs []query.Attribute, kb []byte) {
	for v, a := range attrs {
		i, b, kind, null := p.keyValue(kb, v)
		if null {
			a.SetNull(t, true)
			continue
		}
		dst := t[a.Offset : a.Offset+a.Size]
		switch kind {
		case KeyBytes:
			copy(dst, b)
		case KeyString:
			strview.PutRef(dst, b)
		case KeyBool:
			binary.LittleEndian.PutUint32(dst, uint32(i))
		default:
			binary.LittleEndian.PutUint64(dst, uint64(i))
		}
	}
}

// AppendCanonicalKey appends the canonical form of the GROUP BY values of
// key bytes kb (query's key forms: what the reference's rows hold).
func (p *Plan) AppendCanonicalKey(dst, kb []byte) []byte {
	for v, c := range p.canonInt {
		i, b, kind, null := p.keyValue(kb, v)
		switch kind {
		case KeyBytes:
			dst = append(dst, b...)
		case KeyString:
			dst = query.AppendStringKey(dst, b, null)
		case KeyBool:
			dst = query.AppendBoolKey(dst, i == 1, null)
		default:
			if c.nullable {
				dst = query.AppendNullableIntKey(dst, i, c.width-1, null)
			} else {
				dst = query.AppendIntKey(dst, i, c.width)
			}
		}
	}
	return dst
}

// EncodeRow writes group g of st as an output tuple into t (zeroed, of
// out's size): the window's start, the GROUP BY values, the aggregates,
// NULL by their bits, and a session's end.
func (p *Plan) EncodeRow(t []byte, out *query.Schema, start, end int64, st *window.GroupState, g int32) {
	nk := len(p.Query.GroupBy)
	binary.LittleEndian.PutUint64(t, uint64(start))
	if p.Layout.Hashed {
		kb := st.KeyBytes(g)
		p.EncodeKeys(t, out.Attrs[1:1+nk], kb[:])
	} else if nk > 0 {
		copy(t[out.Attrs[1].Offset:], p.GroupKeys[g])
	}
	row := st.Row(g)
	if p.Query.Window.Type == query.Session {
		binary.LittleEndian.PutUint64(t[out.Attrs[len(out.Attrs)-1].Offset:], uint64(end))
	}
	for a, at := range out.Attrs[1+nk : 1+nk+len(p.Aggs)] {
		if p.AggNull(row, a) {
			at.SetNull(t, true)
			continue
		}
		i, f, isFloat := p.AggValue(row, a)
		if isFloat {
			i = int64(math.Float64bits(f))
		}
		binary.LittleEndian.PutUint64(t[at.Offset:], uint64(i))
	}
}
