package source

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/saber-hx/saber-hx/strview"
	"github.com/saber-hx/saber-hx/temporal"
)

// parseInt parses a decimal integer with an optional sign ('+' or '-'):
// at least one digit, nothing else. ok is false on a syntax error;
// overflow is true when the value does not fit an int64.
func parseInt(s []byte) (v int64, ok, overflow bool) {
	if len(s) == 0 {
		return 0, false, false
	}
	neg := false
	i := 0
	switch s[0] {
	case '-':
		neg = true
		i = 1
	case '+':
		i = 1
	}
	if i == len(s) {
		return 0, false, false
	}
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	cutoff, cutlim := limit/10, limit%10
	var u uint64
	for ; i < len(s); i++ {
		d := uint64(s[i] - '0')
		if d > 9 {
			return 0, false, false
		}
		if u > cutoff || (u == cutoff && d > cutlim) {
			overflow = true
		}
		u = u*10 + d
	}
	if overflow {
		return 0, true, true
	}
	if neg {
		return int64(-u), true, false
	}
	return int64(u), true, false
}

// scanInt parses the longest prefix of s that is a signed decimal
// integer, for the fast paths: n is the bytes taken (0: none, or more
// than 19 digits or an overflow, which the slow path reports).
func scanInt(s []byte) (v int64, n int) {
	i := 0
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		i = 1
	}
	start := i
	var u uint64
	for ; i < len(s); i++ {
		d := uint64(s[i] - '0')
		if d > 9 {
			break
		}
		u = u*10 + d
	}
	// 19 digits fit a uint64 (< 10^19 < 2^64); then the sign's limit.
	if i == start || i-start > 19 {
		return 0, 0
	}
	if neg {
		if u > 1<<63 {
			return 0, 0
		}
		return int64(-u), i
	}
	if u > math.MaxInt64 {
		return 0, 0
	}
	return int64(u), i
}

// parseFloat parses s in strconv.ParseFloat's syntax without copying it.
func parseFloat(s []byte, bits int) (float64, bool) {
	if len(s) == 0 {
		return 0, false
	}
	if bits == 64 {
		if f, ok := parseDecimal(s); ok {
			return f, true
		}
	}
	f, err := strconv.ParseFloat(unsafe.String(&s[0], len(s)), bits)
	return f, err == nil
}

// pow10 are the powers of ten that float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// parseDecimal is the fast path of parseFloat for the usual text of a
// number in a CSV or JSON record: [+-]digits[.digits], 15 digits at most
// and no exponent (false for anything else: strconv's general parser
// takes it).
func parseDecimal(s []byte) (float64, bool) {
	v, n := decimalPrefix(s)
	return v, n > 0 && n == len(s)
}

// decimalPrefix parses the longest prefix of s of the form
// [+-]digits[.digits] (either part's digits may be empty, not both): its
// value and length, or n 0 where it has more than 15 digits. The digits
// make an integer below 2^53 and the fraction a power of ten below 10^16,
// both exact in a float64, so their quotient, one IEEE division, is the
// correctly rounded value strconv gives the prefix.
func decimalPrefix(s []byte) (float64, int) {
	i := 0
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg, i = s[0] == '-', 1
	}
	// The integer part, then the fraction: a tight loop each, where one
	// loop over both tested for the point at every byte.
	start := i
	i, m := digitsFrom(s, i, 0)
	digits, frac := i-start, 0
	if i < len(s) && s[i] == '.' {
		j := i + 1
		i, m = digitsFrom(s, j, m)
		frac = i - j
	}
	if digits+frac == 0 || digits+frac > 15 {
		return 0, 0
	}
	f := float64(m) / pow10[frac]
	if neg {
		f = -f
	}
	return f, i
}

// digitsFrom reads the decimal digits of s from i on into m (m*10 plus
// each): the position after them and m.
func digitsFrom(s []byte, i int, m uint64) (int, uint64) {
	for ; i < len(s); i++ {
		d := s[i] - '0'
		if d > 9 {
			break
		}
		m = m*10 + uint64(d)
	}
	return i, m
}

// unhex maps a byte to its hex value, 0xff for a non-hex byte.
var unhex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
		t[c-'a'+'A'] = byte(c - 'a' + 10)
	}
	return t
}()

// uuidText is the length of a UUID's canonical text form.
const uuidText = 36

// parseUUID writes the 16 bytes of the UUID whose canonical text
// (8-4-4-4-12 hex, either case) starts s into dst; false if s does not
// start with one. Eight hex digits at a time, in a uint64.
func parseUUID(dst []byte, s []byte) bool {
	if len(s) < uuidText || len(dst) < 16 {
		return false
	}
	s = s[:uuidText]
	if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	a := le.Uint64(s[0:])
	b := uint64(le.Uint32(s[9:])) | uint64(le.Uint32(s[14:]))<<32
	c := uint64(le.Uint32(s[19:])) | uint64(le.Uint32(s[24:]))<<32
	d := le.Uint64(s[28:])
	if !hex8ok(a) || !hex8ok(b) || !hex8ok(c) || !hex8ok(d) {
		return false
	}
	le.PutUint32(dst[0:], hex8(a))
	le.PutUint32(dst[4:], hex8(b))
	le.PutUint32(dst[8:], hex8(c))
	le.PutUint32(dst[12:], hex8(d))
	return true
}

const (
	ones = 0x0101010101010101
	high = 0x8080808080808080
)

// hex8ok reports whether the 8 bytes of x (little-endian: the first
// character lowest) are all hex digits: per byte, with no carry between
// bytes, c >= lo sets the high bit of c + 0x80 - lo.
func hex8ok(x uint64) bool {
	if x&high != 0 {
		return false
	}
	digit := (x + (0x80-'0')*ones) &^ (x + (0x7f-'9')*ones)
	l := x | 0x20*ones // 'A'-'F' to 'a'-'f', nothing else into them
	letter := (l + (0x80-'a')*ones) &^ (l + (0x7f-'f')*ones)
	return (digit|letter)&high == high
}

// hex8 is the 4 bytes that the 8 hex digits of x spell, first digit
// first (the first byte lowest).
func hex8(x uint64) uint32 {
	n := x&(0x0f*ones) + (x>>6)&ones*9 // each digit's value
	m := (n<<4 | n>>8) & 0x00ff00ff00ff00ff
	m = (m | m>>8) & 0x0000ffff0000ffff
	return uint32(m | m>>16)
}

// scanIPv4 parses the dotted quad a.b.c.d (each 0-255, one to three
// digits) that starts s: the value a<<24|b<<16|c<<8|d and the bytes
// taken, 0 if s does not start with one.
func scanIPv4(s []byte) (v uint32, n int) {
	i := 0
	for part := 0; part < 4; part++ {
		if part > 0 {
			if i >= len(s) || s[i] != '.' {
				return 0, 0
			}
			i++
		}
		var x uint32
		var k int
		if len(s)-i >= 3 {
			x, k = octet(s[i], s[i+1], s[i+2])
		} else {
			x, k = octetShort(s[i:])
		}
		if k == 0 || x > 255 {
			return 0, 0
		}
		i += k
		v = v<<8 | x
	}
	if i < len(s) && s[i]-'0' <= 9 { // a fourth digit
		return 0, 0
	}
	return v, i
}

// octet is the number that the digits among b0, b1, b2 start, and how
// many they are (0: b0 is no digit), without branches on them.
func octet(b0, b1, b2 byte) (uint32, int) {
	d0, d1, d2 := uint32(b0-'0'), uint32(b1-'0'), uint32(b2-'0')
	if d0 > 9 {
		return 0, 0
	}
	var m1, m2 uint32
	if d1 <= 9 {
		m1 = 1
	}
	if d2 <= 9 {
		m2 = 1
	}
	m2 &= m1
	x1 := d0*10 + d1
	x2 := x1*10 + d2
	return d0 + m1*(x1-d0) + m2*(x2-x1), int(1 + m1 + m2)
}

func octetShort(s []byte) (uint32, int) {
	var x uint32
	k := 0
	for k < len(s) && k < 3 && s[k]-'0' <= 9 {
		x = x*10 + uint32(s[k]-'0')
		k++
	}
	return x, k
}

// enumTable finds a label's code.
type enumTable struct {
	labels []string
	index  map[string]int32 // when there are many labels
}

func newEnumTable(labels []string) enumTable {
	t := enumTable{labels: labels}
	if len(labels) > 8 {
		t.index = make(map[string]int32, len(labels))
		for i, l := range labels {
			t.index[l] = int32(i)
		}
	}
	return t
}

func (t *enumTable) lookup(s []byte) (int32, bool) {
	if t.index != nil {
		c, ok := t.index[string(s)]
		return c, ok
	}
	for i, l := range t.labels {
		if l == string(s) {
			return int32(i), true
		}
	}
	return 0, false
}

// prefix returns the code of the label that s starts with, followed by
// stop, and the label's length.
func (t *enumTable) prefix(s []byte, stop byte) (code int32, n int, ok bool) {
	for i, l := range t.labels {
		if len(s) > len(l) && s[len(l)] == stop && string(s[:len(l)]) == l {
			return int32(i), len(l), true
		}
	}
	return 0, 0, false
}

var le = binary.LittleEndian

// field is a layout column prepared for decoding.
type field struct {
	kind     Kind
	off      int
	size     int
	name     string
	enum     enumTable
	fastOK   bool // the fast JSON path may match it raw (enum labels with no '"', '\\' or control bytes)
	csvFast  bool // the CSV decoder's fastField parses its kind
	ext      bool // nullable, a string, a boolean or a timestamp: the JSON fast path reads it with fastValueExt, the CSV decoder checks for NULL and strings
	nullable bool
	nullAt   int  // nullable: the byte of its NULL bit
	nullMask byte // nullable: the bit
	unit     TimeUnit
	dates    temporal.DateCache // Timestamp: the last date read
	// dict, on a dictionary-encoded String column (Column.Dict), is the
	// decoder's own cache of the dictionary; numAt the number's offset.
	dict  *strview.DictCache
	numAt int

	tooLong    string // Bytes: the message of a value over size
	labelsNote string // Enum: the labels, for the message of an unknown one
}

func prepare(l *Layout, caches DictCaches) []field {
	fs := make([]field, len(l.Columns))
	for i, c := range l.Columns {
		f := field{kind: c.Kind, off: c.Offset, size: c.Size, name: c.Name, fastOK: true, unit: l.TimeUnit}
		switch c.Kind {
		case Int32, Int64, UUID, Enum, IPv4, Timestamp, Bool, Float64:
			f.csvFast = true
		}
		f.ext = c.Nullable || c.Kind == String || c.Kind == Bool || c.Kind == Timestamp
		if c.Nullable {
			f.nullable, f.nullAt, f.nullMask = true, c.NullBit>>3, 1<<(c.NullBit&7)
		}
		if c.Dict != nil {
			f.dict, f.numAt = caches.of(c.Dict), c.NumberAt
		}
		if c.Kind == Bytes {
			f.tooLong = "too long for bytes(" + strconv.Itoa(c.Size) + ")"
		}
		if c.Kind == Enum {
			f.labelsNote = " (labels: " + strings.Join(c.Labels, ", ") + ")"
			f.enum = newEnumTable(c.Labels)
			for _, s := range c.Labels {
				for j := 0; j < len(s); j++ {
					if s[j] == '"' || s[j] == '\\' || s[j] < 0x20 {
						f.fastOK = false
					}
				}
			}
		}
		fs[i] = f
	}
	return fs
}

// putText parses text s as field f's kind and stores it in tuple t; on
// failure it fills e (col is the value's column in the record) and
// returns false. Not for String (core.putString).
func putText(t []byte, f *field, fi int, s []byte, col int, e *errState) bool {
	switch f.kind {
	case Timestamp:
		v, ok, ovf := parseTime(s, f.unit, &f.dates)
		if !ok {
			if ovf {
				return e.set(col, fi, "timestamp out of range", s)
			}
			return e.set(col, fi, "bad timestamp", s)
		}
		le.PutUint64(t[f.off:], uint64(v))
	case Bool:
		v, ok := parseBool(s)
		if !ok {
			return e.set(col, fi, "bad boolean", s)
		}
		le.PutUint32(t[f.off:], v)
	case Int64, Int32:
		v, ok, ovf := parseInt(s)
		if !ok {
			if f.kind == Int64 {
				return e.set(col, fi, "bad int64", s)
			}
			return e.set(col, fi, "bad int32", s)
		}
		if f.kind == Int64 {
			if ovf {
				return e.set(col, fi, "int64 out of range", s)
			}
			le.PutUint64(t[f.off:], uint64(v))
			return true
		}
		if ovf || v < math.MinInt32 || v > math.MaxInt32 {
			return e.set(col, fi, "int32 out of range", s)
		}
		le.PutUint32(t[f.off:], uint32(int32(v)))
	case Float64:
		v, ok := parseFloat(s, 64)
		if !ok {
			return e.set(col, fi, "bad float64", s)
		}
		le.PutUint64(t[f.off:], math.Float64bits(v))
	case Float32:
		v, ok := parseFloat(s, 32)
		if !ok {
			return e.set(col, fi, "bad float32", s)
		}
		le.PutUint32(t[f.off:], math.Float32bits(float32(v)))
	case UUID:
		if len(s) != uuidText || !parseUUID(t[f.off:f.off+16], s) {
			return e.set(col, fi, "bad UUID", s)
		}
	case Bytes:
		if len(s) > f.size {
			return e.set(col, fi, f.tooLong, s)
		}
		// Zero-padded: cleared first, as a duplicate key overwrites.
		clear(t[f.off+copy(t[f.off:f.off+f.size], s) : f.off+f.size])
	case Enum:
		c, ok := f.enum.lookup(s)
		if !ok {
			e.set(col, fi, "unknown label", s)
			e.extra = f.labelsNote
			return false
		}
		le.PutUint32(t[f.off:], uint32(c))
	case IPv4:
		v, n := scanIPv4(s)
		if n == 0 || n != len(s) {
			return e.set(col, fi, "bad IPv4 address", s)
		}
		le.PutUint32(t[f.off:], v)
	}
	return true
}

// set records an error quoting text; it returns false for its callers.
func (e *errState) set(col, fi int, msg string, text []byte) bool {
	*e = errState{col: col, field: fi, msg: msg, text: text, quote: true}
	return false
}

// setNoText records an error that quotes nothing.
func (e *errState) setNoText(col, fi int, msg string) bool {
	*e = errState{col: col, field: fi, msg: msg}
	return false
}
