package source

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

func TestParseTime(t *testing.T) {
	base := time.Date(2024, 3, 1, 10, 0, 1, 0, time.UTC).UnixMilli()
	for _, tc := range []struct {
		s       string
		unit    TimeUnit
		ms      int64
		ok, ovf bool
	}{
		{"2024-03-01T10:00:01Z", Milliseconds, base, true, false},
		{"2024-03-01T10:00:01.25+01:00", Seconds, base + 250 - 3600000, true, false},
		{"2024-03-01 10:00:01.999", Nanoseconds, base + 999, true, false},
		{"2024-03-01 10:00:01", Milliseconds, base, true, false},
		{"2024-03-01", Milliseconds, base - 10*3600000 - 1000, true, false},
		{"1709287201000", Milliseconds, base, true, false},
		{"+1709287201000", Milliseconds, base, true, false},
		{"1709287201", Seconds, base, true, false},
		{"1709287201000000", Microseconds, base, true, false},
		{"1709287201000000000", Nanoseconds, base, true, false},
		{"0", Seconds, 0, true, false},
		{"-0", Milliseconds, 0, true, false},
		// Fractions and negatives: floor to a millisecond.
		{"1.5", Seconds, 1500, true, false},
		{"1.0005", Seconds, 1000, true, false},
		{"-1.0005", Seconds, -1001, true, false},
		{"-1.5", Seconds, -1500, true, false},
		{"1.999", Milliseconds, 1, true, false},
		{"-1.5", Milliseconds, -2, true, false},
		{"-1.000", Milliseconds, -1, true, false},
		{"1999", Microseconds, 1, true, false},
		{"-1", Microseconds, -1, true, false},
		{"-1000", Microseconds, -1, true, false},
		{"-1001", Microseconds, -2, true, false},
		{"-1", Nanoseconds, -1, true, false},
		{"1999999.9", Nanoseconds, 1, true, false},
		{"9223372036854775807", Milliseconds, math.MaxInt64, true, false},
		{"-9223372036854775808", Milliseconds, math.MinInt64, true, false},
		{"9223372036854775807", Nanoseconds, math.MaxInt64 / 1000000, true, false},
		{"9223372036854775", Seconds, 9223372036854775000, true, false},
		// Past uint64 in the unit, its milliseconds within int64.
		{"18446744073709551616", Nanoseconds, 18446744073709, true, false},
		{"20000000000000000000", Nanoseconds, 20000000000000, true, false},
		{"99999999999999999999999", Nanoseconds, 99999999999999999, true, false},
		{"-20000000000000000001", Nanoseconds, -20000000000001, true, false},
		{"9223372036854775807999", Microseconds, math.MaxInt64, true, false},
		{"-9223372036854775808000", Microseconds, math.MinInt64, true, false},
		{"00000000000000000000001999", Microseconds, 1, true, false},
		// Refused.
		{"9223372036854775808", Milliseconds, 0, false, true},
		{"-9223372036854775808.5", Milliseconds, 0, false, true},
		{"9223372036854776", Seconds, 0, false, true},
		{"9223372036854775808000000", Nanoseconds, 0, false, true},
		{"9223372036854775808000", Microseconds, 0, false, true},
		{"-9223372036854775808000001", Nanoseconds, 0, false, true},
		{"", Milliseconds, 0, false, false},
		{"-", Milliseconds, 0, false, false},
		{"1.", Milliseconds, 0, false, false},
		{".5", Milliseconds, 0, false, false},
		{"1e3", Milliseconds, 0, false, false},
		{"1.5.5", Milliseconds, 0, false, false},
		{" 1", Milliseconds, 0, false, false},
		{"2024-03-01T10:00", Milliseconds, 0, false, false},
		{"2024-02-30", Milliseconds, 0, false, false},
		{"now", Milliseconds, 0, false, false},
	} {
		ms, ok, ovf := parseTime([]byte(tc.s), tc.unit, nil)
		assert.Equal(t, [3]any{tc.ms, tc.ok, tc.ovf}, [3]any{ms, ok, ovf}, "%q in %s", tc.s, tc.unit)
		if v, n := scanInt([]byte(tc.s)); n == len(tc.s) && ok {
			got, eok := epochInt(v, tc.unit)
			assert.True(t, eok)
			assert.Equal(t, tc.ms, got, "epochInt %q in %s", tc.s, tc.unit)
		}
	}
	_, ok := epochInt(math.MaxInt64/1000+1, Seconds)
	assert.False(t, ok)
}

func TestParseBool(t *testing.T) {
	for s, want := range map[string]uint32{"true": 1, "TRUE": 1, "True": 1, "tRUe": 1, "1": 1, "false": 0, "FALSE": 0, "False": 0, "0": 0} {
		v, ok := parseBool([]byte(s))
		assert.True(t, ok, s)
		assert.Equal(t, want, v, s)
	}
	for _, s := range []string{"", "t", "f", "yes", "no", "2", "01", "-1", "true ", " true", "truee", "fals", "tru\x05", "TRUE\x00", "falsE!", "on", "\x14RUE", "FALS\x05"} {
		_, ok := parseBool([]byte(s))
		assert.False(t, ok, "%q", s)
	}
}

// TestTimestampsAndBooleans: both decoders read the same texts into the
// same values; the time unit applies to epoch numbers only.
func TestTimestampsAndBooleans(t *testing.T) {
	for _, unit := range []TimeUnit{Milliseconds, Seconds, Microseconds, Nanoseconds} {
		l, err := NewLayout(24,
			Column{Name: "t", Kind: Timestamp},
			Column{Name: "u", Kind: Timestamp, Offset: 8, Nullable: true, NullBit: 160},
			Column{Name: "b", Kind: Bool, Offset: 16},
		)
		require.NoError(t, err)
		l.TimeUnit = unit
		scale := map[TimeUnit]float64{Milliseconds: 1, Seconds: 1000, Microseconds: 1e-3, Nanoseconds: 1e-6}[unit]
		for _, tc := range []struct {
			t, u, b string
			tm, um  int64
			bv      uint32
			unull   bool
		}{
			{"1700000000000", "2023-11-14T22:13:20Z", "true", int64(1700000000000 * scale), 1700000000000, 1, false},
			{"2023-11-14 22:13:20.5", "-5", "FALSE", 1700000000500, int64(math.Floor(-5 * scale)), 0, false},
			{"0", "", "1", 0, 0, 1, true},
		} {
			csvLine := tc.t + "," + tc.u + "," + tc.b + "\n"
			uj := `"` + tc.u + `"`
			if tc.unull {
				uj = "null"
			} else if _, ok, _ := parseInt([]byte(tc.u)); ok {
				uj = tc.u // a JSON number
			}
			jsonLine := `{"t": "` + tc.t + `", "u": ` + uj + `, "b": "` + tc.b + `"}` + "\n"
			want := make([]byte, 24)
			le.PutUint64(want, uint64(tc.tm))
			le.PutUint64(want[8:], uint64(tc.um))
			le.PutUint32(want[16:], tc.bv)
			if tc.unull {
				want[20] = 1
			}
			cd, err := NewCSVDecoder(l, CSVOptions{})
			require.NoError(t, err)
			got, err := decodeAll(t, cd, []byte(csvLine))
			require.NoError(t, err, csvLine)
			assert.Equal(t, want, got, "%s: %q", unit, csvLine)
			jd, err := NewJSONDecoder(l, JSONOptions{})
			require.NoError(t, err)
			got, err = decodeAll(t, jd, []byte(jsonLine))
			require.NoError(t, err, jsonLine)
			assert.Equal(t, want, got, "%s: %q", unit, jsonLine)
		}
	}
}

func TestNewLayoutNullable(t *testing.T) {
	ts := Column{Name: "t", Kind: Timestamp}
	for _, tc := range []struct {
		cols []Column
		msg  string
	}{
		{[]Column{{Name: "t", Kind: Int64, Nullable: true, NullBit: 64}}, `layout: column "t" at offset 0 is the event time, never NULL: it cannot be nullable`},
		{[]Column{ts, {Name: "a", Kind: Int32, Offset: 8, NullBit: 100}}, `layout: column "a" has NULL bit 100 but is not nullable`},
		{[]Column{ts, {Name: "a", Kind: Int32, Offset: 8, Nullable: true, NullBit: 128}}, `layout: the NULL bit 128 of column "a" is outside the 16-byte tuple`},
		{[]Column{ts, {Name: "a", Kind: Int32, Offset: 8, Nullable: true, NullBit: -1}}, `layout: the NULL bit -1 of column "a" is outside the 16-byte tuple`},
		{[]Column{ts, {Name: "a", Kind: Int32, Offset: 8, Nullable: true, NullBit: 70}}, `layout: the NULL bit 70 of column "a" is inside column "a"`},
		{[]Column{ts, {Name: "a", Kind: Int32, Offset: 8, Nullable: true, NullBit: 3}}, `layout: the NULL bit 3 of column "a" is inside column "t"`},
		{[]Column{ts, {Name: "a", Kind: Bool, Offset: 8, Nullable: true, NullBit: 96}, {Name: "b", Kind: Bool, Offset: 4, Nullable: true, NullBit: 96}}, `layout: columns "t" and "b" overlap`},
		{[]Column{ts, {Name: "a", Kind: Bool, Offset: 8, Nullable: true, NullBit: 97}, {Name: "b", Kind: Bool, Offset: 12, Nullable: true, NullBit: 97}}, `layout: the NULL bit 97 of column "a" is inside column "b"`},
		{[]Column{ts, {Name: "s", Kind: String, Offset: 8, Size: 8}}, `layout: column "s" of kind string has size 8, want 16`},
	} {
		_, err := NewLayout(16, tc.cols...)
		assert.EqualError(t, err, tc.msg)
	}
	_, err := NewLayout(32, ts, Column{Name: "a", Kind: Bool, Offset: 8, Nullable: true, NullBit: 200}, Column{Name: "b", Kind: Bool, Offset: 12, Nullable: true, NullBit: 200})
	assert.EqualError(t, err, `layout: columns "a" and "b" share NULL bit 200`)
	_, err = NewLayout(32, ts, Column{Name: "s", Kind: String, Offset: 4})
	assert.EqualError(t, err, `layout: columns "t" and "s" overlap`)
	_, err = NewLayout(25, ts, Column{Name: "s", Kind: String, Offset: 8}, Column{Name: "b", Kind: Bool, Offset: 20, Nullable: true, NullBit: 192})
	assert.EqualError(t, err, `layout: columns "s" and "b" overlap`)
	_, err = NewLayout(25, ts, Column{Name: "s", Kind: String, Offset: 8, Nullable: true, NullBit: 199})
	assert.NoError(t, err, "the last bit of the last byte")
}

func TestLayoutSchemaNewKinds(t *testing.T) {
	l := strLayout(t)
	assert.Equal(t, 16, l.Columns[1].Size)
	assert.Equal(t, 8, l.Columns[0].Size)
	assert.Equal(t, 4, l.Columns[4].Size)
	s, err := l.Schema()
	require.NoError(t, err)
	at := func(name string) query.Attribute {
		a, err := s.Lookup(name)
		require.NoError(t, err)
		return a
	}
	assert.Equal(t, query.Attribute{Name: "ts", Type: query.Int64, Logical: query.Time, Offset: 0, Size: 8}, at("ts"))
	assert.Equal(t, query.Attribute{Name: "name", Type: query.String, Offset: 8, Size: 16}, at("name"))
	assert.Equal(t, query.Attribute{Name: "note", Type: query.String, Offset: 24, Size: 16, Nullable: true, NullBit: 704}, at("note"))
	assert.Equal(t, query.Attribute{Name: "ok", Type: query.Int32, Logical: query.Boolean, Offset: 48, Size: 4, Nullable: true, NullBit: 706}, at("ok"))
	assert.Equal(t, query.Attribute{Name: "at", Type: query.Int64, Logical: query.Time, Offset: 64, Size: 8, Nullable: true, NullBit: 708}, at("at"))
	assert.Equal(t, query.Attribute{Name: "color", Type: query.Int32, Offset: 72, Size: 4, Nullable: true, NullBit: 709}, at("color"))
	l.TimeUnit = Microseconds
	assert.Equal(t, "96 bytes: ts timestamp@0 name string@8 note string@24 null@704 n int64@40 null@705 ok bool@48 null@706 f float64@56 null@707 at timestamp@64 null@708 color enum@72 null@709 id int32@76 flag bool@80 (epoch in us)", l.String())
	for name, want := range map[string]TimeUnit{"": Milliseconds, "ms": Milliseconds, "S": Seconds, "us": Microseconds, "ns": Nanoseconds} {
		u, err := ParseTimeUnit(name)
		require.NoError(t, err)
		assert.Equal(t, want, u)
	}
	_, err = ParseTimeUnit("min")
	assert.EqualError(t, err, `time unit "min": want s, ms, us or ns`)
	assert.Equal(t, "string", String.String())
	assert.Equal(t, "timestamp", Timestamp.String())
	assert.Equal(t, "bool", Bool.String())
	l.TimeUnit = 9
	_, err = NewCSVDecoder(l, CSVOptions{})
	assert.EqualError(t, err, "source: layout has unknown time unit 9")
}

// TestStringsMemory: Options.Strings must be set for string columns; it
// is asked once per record with long strings, for all of them; its error
// stops Decode before the record, which a later call decodes.
func TestStringsMemory(t *testing.T) {
	l := csvLayout(t)
	_, err := NewCSVDecoder(l, CSVOptions{})
	assert.EqualError(t, err, `source: column "s" is a string: Options.Strings must give the memory of long strings`)
	_, err = NewJSONDecoder(l, JSONOptions{})
	assert.EqualError(t, err, `source: column "s" is a string: Options.Strings must give the memory of long strings`)
	a := strview.NewArena(0)
	defer a.Free()
	var asked []int
	full := errors.New("full")
	fail := false
	strs := func(n int) ([]byte, error) {
		asked = append(asked, n)
		if fail {
			return nil, full
		}
		return a.Alloc(n), nil
	}
	long := strings.Repeat("y", 20)
	src := []byte("1,short,1,1,1\n2," + long + ",1,1,1\n3,x,1,1,1\n")
	d, err := NewCSVDecoder(l, CSVOptions{Options: Options{Strings: strs, OnError: Skip}})
	require.NoError(t, err)
	dst := make([]byte, 10*l.TupleSize)
	fail = true
	n, c, err := d.Decode(dst, src, true)
	assert.ErrorIs(t, err, full)
	assert.Equal(t, 1, n)
	assert.Equal(t, len("1,short,1,1,1\n"), c)
	assert.Equal(t, int64(1), d.Lines())
	assert.Equal(t, []int{20}, asked)
	fail = false
	n, c2, err := d.Decode(dst[l.TupleSize:], src[c:], true)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, len(src), c+c2)
	assert.Equal(t, []int{20, 20}, asked, "once a record with long strings")
	rows := rowsOf(l, dst[:3*l.TupleSize])
	assert.Equal(t, []string{"short", long, "x"}, []string{rows[0].S, rows[1].S, rows[2].S})
	// Memory short of n is an error.
	d, err = NewCSVDecoder(l, CSVOptions{Options: Options{Strings: func(n int) ([]byte, error) { return a.Alloc(n - 1), nil }}})
	require.NoError(t, err)
	_, _, err = d.Decode(dst, src, true)
	assert.EqualError(t, err, "source: Options.Strings gave 19 bytes for 20")
	// JSON: two long strings, one call for both: for the stretch of text
	// from the first to the end of the second, no more than twice theirs,
	// copied as one.
	jl := jsonLayout(t)
	asked = nil
	jd, err := NewJSONDecoder(jl, JSONOptions{Options: Options{Strings: strs}})
	require.NoError(t, err)
	_, err = decodeAll(t, jd, []byte(`{"t": 1, "s": "`+long+`", "ns": "`+long+`x", "k": 1}`))
	require.NoError(t, err)
	assert.Equal(t, []int{20 + len(`", "ns": "`) + 21}, asked)
}
