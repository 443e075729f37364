package kernels

import (
	"encoding/binary"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

// foldSet is the literals that LOWER(x) (UPPER(x)) is compared with by =,
// <>, IN or a CASE's WHENs. An ASCII x of at most 16 bytes (a channel, a
// city, a category) is compared as two words, its case folded eight bytes
// at a time, with the literals' words: no loop per byte, nor per literal
// of another length. Any other x is compared as foldedIndex does.
type foldSet struct {
	lits  [][]byte
	upper bool
	short []foldWords // the literals of at most 16 bytes, in list order
}

// foldWords is a literal of at most 16 bytes as shortWords reads it, and
// its index in the list.
type foldWords struct {
	n      int
	lo, hi uint64
	i      int
}

func newFoldSet(lits [][]byte, upper bool) *foldSet {
	f := &foldSet{lits: lits, upper: upper}
	for i, l := range lits {
		if len(l) <= 16 {
			lo, hi := shortWords(l)
			f.short = append(f.short, foldWords{n: len(l), lo: lo, hi: hi, i: i})
		}
	}
	return f
}

// index is the index of the first literal that x case-mapped is, or -1.
func (f *foldSet) index(x []byte, sc *rowScratch) int {
	if n := len(x); n <= 16 {
		lo, hi := shortWords(x)
		if (lo|hi)&highBits == 0 {
			// ASCII: its case maps byte for byte, so only a literal of
			// its length can be it.
			lo, hi = foldWord(lo, f.upper), foldWord(hi, f.upper)
			for _, w := range f.short {
				if w.n == n && w.lo == lo && w.hi == hi {
					return w.i
				}
			}
			return -1
		}
	}
	return foldedIndex(x, f.lits, f.upper, sc)
}

// foldIn is `LOWER(x) [NOT] IN ('a', ...)` (UPPER) over string literals
// and NULLs, evaluated without a row function's closure and value per
// tuple: in a WHERE it filters a chunk in one loop (Nexmark q21's
// `lower(channel) in ('apple', 'google', 'facebook', 'baidu')`).
type foldIn struct {
	x    strArg
	set  *foldSet
	not  bool
	null bool // the list holds a NULL: a miss is NULL, not false
}

// newFoldIn compiles e where its shape is foldIn's; ok false where not.
func newFoldIn(e query.InList, s *query.Schema) (*foldIn, bool, error) {
	inner, upper, isCase := caseCall(e.X)
	if !isCase || typeIn(e.X, s) != query.StringValue {
		return nil, false, nil
	}
	f := &foldIn{not: e.Not}
	var list [][]byte
	for _, v := range e.List {
		switch c := v.(type) {
		case query.StrConst:
			list = append(list, []byte(c.V))
		case query.Null:
			f.null = true
		default:
			return nil, false, nil
		}
	}
	x, err := newStrArg(inner, s)
	if err != nil {
		return nil, false, err
	}
	f.x, f.set = x, newFoldSet(list, upper)
	return f, true, nil
}

// eval is e's value in tuple t: true, false or NULL (null true).
func (f *foldIn) eval(t []byte, sc *rowScratch) (v, null bool) {
	b, isNull := f.x.read(t, sc)
	if isNull {
		return false, true
	}
	if f.set.index(b, sc) >= 0 {
		return !f.not, false
	}
	return f.not, f.null
}

const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
)

// shortWords reads b, at most 16 bytes, into two words such that two
// strings of one length are equal exactly where their words are: the
// first and last eight bytes where there are eight or more (overlapping),
// else the bytes in place in lo, without reading past b.
func shortWords(b []byte) (lo, hi uint64) {
	n := len(b)
	switch {
	case n >= 8:
		return binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[n-8:])
	case n >= 4:
		return uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint32(b[n-4:]))<<(8*(n-4)), 0
	case n > 0:
		return uint64(b[0]) | uint64(b[n/2])<<(8*(n/2)) | uint64(b[n-1])<<(8*(n-1)), 0
	}
	return 0, 0
}

// foldWord lower-cases (upper-cases) the ASCII bytes of w: a byte has
// 0x80 added past 'A'-1 ('a'-1) and not past 'Z' ('z'), which no byte
// below 0x80 carries out of, and its 0x20 bit set (cleared) where so.
func foldWord(w uint64, upper bool) uint64 {
	first, last := uint64('A'), uint64('Z')
	if upper {
		first, last = 'a', 'z'
	}
	in := (w + lowBits*(0x80-first)) &^ (w + lowBits*(0x80-last-1)) & highBits
	if upper {
		return w &^ (in >> 2)
	}
	return w | in>>2
}

// strArg reads a string operand: a string column's view in place, with
// no call, or else its row function's value.
type strArg struct {
	fn  rowFn // nil: the column col
	col query.Attribute
}

func newStrArg(e query.Expr, s *query.Schema) (strArg, error) {
	if c, ok := e.(query.Column); ok {
		if a, err := s.Lookup(c.Name); err == nil && a.Type == query.String {
			return strArg{col: a}, nil
		}
	}
	fn, err := rowOf(e, s)
	return strArg{fn: fn}, err
}

// read returns the operand's bytes in tuple t, and whether it is NULL.
func (a *strArg) read(t []byte, sc *rowScratch) ([]byte, bool) {
	if a.fn != nil {
		v := a.fn(t, sc)
		return v.s, v.null
	}
	if a.col.IsNull(t) {
		return nil, true
	}
	return strview.Bytes(t[a.col.Offset : a.col.Offset+strview.Size]), false
}
