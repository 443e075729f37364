package source

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/saber-hx/saber-hx/query"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewLayoutErrors(t *testing.T) {
	i64 := Column{Name: "t", Kind: Int64}
	for _, tc := range []struct {
		size int
		cols []Column
		msg  string
	}{
		{0, []Column{i64}, "layout: tuple size 0 must be positive"},
		{8, nil, "layout: no columns"},
		{16, []Column{i64, {Kind: Int32, Offset: 8}}, "layout: column 1 has no name"},
		{16, []Column{i64, {Name: "t", Kind: Int32, Offset: 8}}, `layout: column "t" defined twice`},
		{16, []Column{i64, {Name: "a", Kind: Int32, Offset: 8, Size: 8}}, `layout: column "a" of kind int32 has size 8, want 4`},
		{16, []Column{i64, {Name: "a", Kind: 99, Offset: 8}}, `layout: column "a" has unknown kind 99`},
		{16, []Column{i64, {Name: "a", Kind: Bytes, Offset: 8}}, `layout: bytes column "a" needs a positive size`},
		{16, []Column{i64, {Name: "a", Kind: Enum, Offset: 8}}, `layout: enum column "a" has no labels`},
		{16, []Column{i64, {Name: "a", Kind: Enum, Offset: 8, Labels: []string{"x", "x"}}}, `layout: enum column "a" has label "x" twice`},
		{16, []Column{i64, {Name: "a", Kind: Int32, Offset: 8, Labels: []string{"x"}}}, `layout: column "a" of kind int32 has labels; only enum columns do`},
		{16, []Column{i64, {Name: "a", Kind: UUID, Offset: 8}}, `layout: column "a" at offset 8 size 16 does not fit a 16-byte tuple`},
		{16, []Column{i64, {Name: "a", Kind: Int32, Offset: -1}}, `layout: column "a" at offset -1 size 4 does not fit a 16-byte tuple`},
		{16, []Column{i64, {Name: "a", Kind: Int32, Offset: 4}}, `layout: columns "t" and "a" overlap`},
	} {
		_, err := NewLayout(tc.size, tc.cols...)
		assert.EqualError(t, err, tc.msg)
	}
}

func TestLayoutSchema(t *testing.T) {
	l := allLayout(t)
	assert.Equal(t, 4, l.Columns[7].Size, "sizes filled in")
	assert.Equal(t, 16, l.Columns[4].Size)
	assert.Equal(t, 5, l.Lookup("name"))
	assert.Equal(t, -1, l.Lookup("nope"))
	s, err := l.Schema()
	require.NoError(t, err)
	assert.Equal(t, 80, s.TupleSize)
	var names []string
	var types []query.Type
	for _, a := range s.Attrs {
		names = append(names, a.Name)
		types = append(types, a.Type)
	}
	assert.Equal(t, []string{"t", "i32", "f32", "f64", "id", "name", "color", "ip", "i64"}, names, "by offset")
	assert.Equal(t, []query.Type{query.Int64, query.Int32, query.Float32, query.Float64, query.Bytes, query.Bytes, query.Int32, query.Int32, query.Int64}, types)
	ys, err := ysbLayout(t).Schema()
	require.NoError(t, err)
	a, err := ys.Lookup("ad_id")
	require.NoError(t, err)
	assert.Equal(t, query.Attribute{Name: "ad_id", Type: query.Bytes, Offset: 40, Size: 16}, a)
	// The event time must be at offset 0.
	l, err = NewLayout(16, Column{Name: "a", Kind: Int32}, Column{Name: "t", Kind: Int64, Offset: 8})
	require.NoError(t, err)
	_, err = l.Schema()
	assert.EqualError(t, err, `schema: attribute 0 ("a") must be the int64 event time at offset 0, never NULL`)
	assert.Equal(t, "16 bytes: a int32@0 t int64@8", l.String())
}

func TestOnError(t *testing.T) {
	for s, want := range map[string]OnError{"": Fail, "fail": Fail, "SKIP": Skip, "skip": Skip} {
		got, err := ParseOnError(s)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := ParseOnError("ignore")
	assert.EqualError(t, err, `on_error "ignore": want fail or skip`)
	assert.Equal(t, "skip", Skip.String())
	assert.Equal(t, "fail", Fail.String())
	assert.Equal(t, "ipv4", IPv4.String())
	assert.Equal(t, "kind(42)", Kind(42).String())
	_, err = NewCSVDecoder(allLayout(t), CSVOptions{Comma: '"'})
	assert.EqualError(t, err, `csv: bad field separator '"': it may not be '"', '\r' or '\n'`)
}

func TestParseInt(t *testing.T) {
	for _, tc := range []struct {
		s       string
		v       int64
		ok, ovf bool
		scanned int
	}{
		{"0", 0, true, false, 1},
		{"-0", 0, true, false, 2},
		{"+17", 17, true, false, 3},
		{"007", 7, true, false, 3},
		{"9223372036854775807", math.MaxInt64, true, false, 19},
		{"-9223372036854775808", math.MinInt64, true, false, 20},
		{"9223372036854775808", 0, true, true, 0},
		{"-9223372036854775809", 0, true, true, 0},
		{"99999999999999999999", 0, true, true, 0},
		{"", 0, false, false, 0},
		{"-", 0, false, false, 0},
		{"+", 0, false, false, 0},
		{"1a", 0, false, false, 1},
		{" 1", 0, false, false, 0},
		{"1 ", 0, false, false, 1},
		{"--1", 0, false, false, 0},
	} {
		v, ok, ovf := parseInt([]byte(tc.s))
		assert.Equal(t, [3]any{tc.v, tc.ok, tc.ovf}, [3]any{v, ok, ovf}, tc.s)
		sv, n := scanInt([]byte(tc.s))
		assert.Equal(t, tc.scanned, n, tc.s)
		if tc.ok && !tc.ovf {
			assert.Equal(t, tc.v, sv, tc.s)
		}
	}
}

func TestKinds(t *testing.T) {
	l, err := NewLayout(40,
		Column{Name: "t", Kind: Int64},
		Column{Name: "i", Kind: Int32, Offset: 8},
		Column{Name: "f", Kind: Float32, Offset: 12},
		Column{Name: "d", Kind: Float64, Offset: 16},
		Column{Name: "ip", Kind: IPv4, Offset: 24},
		Column{Name: "e", Kind: Enum, Offset: 28, Labels: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}},
		Column{Name: "b", Kind: Bytes, Offset: 32, Size: 3},
	)
	require.NoError(t, err)
	d, err := NewCSVDecoder(l, CSVOptions{})
	require.NoError(t, err)
	dst := make([]byte, 40)
	ok := func(line string) []byte {
		n, _, err := d.Decode(dst, []byte(line), true)
		require.NoError(t, err, line)
		require.Equal(t, 1, n)
		return dst
	}
	bad := func(line, msg string) {
		_, _, err := d.Decode(dst, []byte(line), true)
		d.lines = 0
		assert.ErrorContains(t, err, msg, line)
	}
	bad("-1,-2147483648,1e39,0,0.0.0.0,j,abc", `(field "f"): bad float32 "1e39"`)
	tu := ok("-1,-2147483648,-Inf,0x1p-2,255.254.1.0,j,abc")
	assert.Equal(t, uint64(math.MaxUint64), binary.LittleEndian.Uint64(tu))
	assert.Equal(t, uint32(0x80000000), binary.LittleEndian.Uint32(tu[8:]))
	assert.Equal(t, float32(math.Inf(-1)), math.Float32frombits(binary.LittleEndian.Uint32(tu[12:])))
	assert.Equal(t, 0.25, math.Float64frombits(binary.LittleEndian.Uint64(tu[16:])))
	assert.Equal(t, []byte{0, 1, 254, 255}, tu[24:28], "ipv4: a<<24|b<<16|c<<8|d, little-endian")
	assert.Equal(t, uint32(9), binary.LittleEndian.Uint32(tu[28:]), "enum by map")
	assert.Equal(t, "abc", string(tu[32:35]))
	tu = ok("1,2147483647,NaN,1_0e0,001.02.3.4,a,")
	assert.True(t, math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(tu[12:])))))
	assert.Equal(t, []byte{4, 3, 2, 1}, tu[24:28])
	bad("1,2147483648,0,0,1.2.3.4,a,", `(field "i"): int32 out of range "2147483648"`)
	bad("1,-2147483649,0,0,1.2.3.4,a,", `(field "i"): int32 out of range "-2147483649"`)
	bad("1,x,0,0,1.2.3.4,a,", `(field "i"): bad int32 "x"`)
	bad("1,1,0,1e999,1.2.3.4,a,", `(field "d"): bad float64 "1e999"`)
	bad("1,1,0,,1.2.3.4,a,", `(field "d"): bad float64 ""`)
	for _, ip := range []string{"1.2.3", "1.2.3.4.5", "1.2.3.1000", "1..3.4", "a.b.c.d", "1.2.3.4 ", "-1.2.3.4", "256.0.0.0"} {
		bad("1,1,0,0,"+ip+",a,", `(field "ip"): bad IPv4 address "`+ip+`"`)
	}
	bad("1,1,0,0,1.2.3.4,k,", `(field "e"): unknown label "k" (labels: a, b, c, d, e, f, g, h, i, j)`)
	bad("1,1,0,0,1.2.3.4,a,abcd", `(field "b"): too long for bytes(3) "abcd"`)
	ok(`1,1,0,0,1.2.3.4,a,"a""b"`)
	assert.Equal(t, `a"b`, string(dst[32:35]))
}

func TestUUID(t *testing.T) {
	var u [16]byte
	require.True(t, parseUUID(u[:], []byte("0123ABCD-89ab-cdEF-0000-ffffffffffff")))
	assert.Equal(t, [16]byte{0x01, 0x23, 0xab, 0xcd, 0x89, 0xab, 0xcd, 0xef, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, u)
	for _, s := range []string{"", "0123ABCD-89ab-cdEF-0000-fffffffffff", "0123ABCD+89ab-cdEF-0000-ffffffffffff", "0123ABCD-89ab-cdEF-0000-fffffffffffg", "0123ABC-D89ab-cdEF-0000-ffffffffffff", "{123ABCD-89ab-cdEF-0000-ffffffffffff"} {
		assert.False(t, parseUUID(u[:], []byte(s)), s)
	}
}

// TestUUIDEveryByte: each position of a UUID's text, each byte value:
// parseUUID accepts exactly what a byte-at-a-time reference does.
func TestUUIDEveryByte(t *testing.T) {
	ref := func(s []byte) ([16]byte, bool) {
		var u [16]byte
		j := 0
		for i := 0; i < 36; i++ {
			if i == 8 || i == 13 || i == 18 || i == 23 {
				if s[i] != '-' {
					return u, false
				}
				continue
			}
			hi, lo := unhex[s[i]], unhex[s[i+1]]
			if hi == 0xff || lo == 0xff {
				return u, false
			}
			u[j] = hi<<4 | lo
			j++
			i++
		}
		return u, true
	}
	for _, base := range []string{"0123abcd-89AB-cdef-0000-ffffffffffff", "a0b1c2d3-e4f5-A6B7-C8D9-EaFb0c1d2e3f"} {
		for pos := range 36 {
			for c := range 256 {
				s := []byte(base)
				s[pos] = byte(c)
				var got [16]byte
				ok := parseUUID(got[:], s)
				want, wantOK := ref(s)
				require.Equal(t, wantOK, ok, "%q", s)
				if ok {
					require.Equal(t, want, got, "%q", s)
				}
			}
		}
	}
}

func TestIPv4(t *testing.T) {
	for s, want := range map[string]uint32{"0.0.0.0": 0, "255.255.255.255": 0xffffffff, "1.22.255.4": 0x0116ff04, "010.0.00.9": 0x0a000009, "9.99.199.0": 0x0963c700} {
		for _, tail := range []string{"", `"`, `", "x"`, ","} {
			v, n := scanIPv4([]byte(s + tail))
			assert.Equal(t, want, v, s+tail)
			assert.Equal(t, len(s), n, s+tail)
		}
	}
	for _, s := range []string{"", "1", "1.2.3", "1.2.3.", "1.2.3.4444", "1.2.3.256", "256.1.1.1", "1.2.3.x", ".1.2.3", "1.2..3", "1,2.3.4", "1.2.3.-4", "1111.2.3.4"} {
		_, n := scanIPv4([]byte(s))
		assert.Zero(t, n, s)
	}
}
