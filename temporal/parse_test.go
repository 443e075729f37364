package temporal

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
)

// msOf is the oracle's timestamp: the time package's, floored to
// milliseconds (UnixMilli adds a non-negative fraction of the second).
func msOf(t time.Time) int64 { return t.UnixMilli() }

func utc(y int, mo time.Month, d, h, mi, s, ns int) int64 {
	return msOf(time.Date(y, mo, d, h, mi, s, ns, time.UTC))
}

// Bounds of the years ParseTimestamp reads, 0001 to 9999 for the oracle
// (time.Parse refuses year 0).
var (
	minOracle = utc(1, 1, 2, 0, 0, 0, 0)
	maxOracle = utc(9999, 12, 30, 0, 0, 0, 0)
)

func TestParseTimestampForms(t *testing.T) {
	base := utc(2024, 3, 1, 10, 0, 1, 0)
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"2024-03-01T10:00:01Z", base},
		{"2024-03-01T10:00:01z", base},
		{"2024-03-01t10:00:01Z", base},
		{"2024-03-01 10:00:01", base},
		{"2024-03-01 10:00:01Z", base},
		{"2024-03-01T10:00:01", base},
		{"2024-03-01T10:00:01.250Z", base + 250},
		{"2024-03-01 10:00:01.250", base + 250},
		{"2024-03-01 10:00:01.25", base + 250},
		{"2024-03-01 10:00:01.2", base + 200},
		{"2024-03-01 10:00:01.2509", base + 250},
		{"2024-03-01 10:00:01.999999999", base + 999},
		{"2024-03-01 10:00:01.000000001", base},
		{"2024-03-01T10:00:01+02:00", base - 2*3600000},
		{"2024-03-01T10:00:01+0200", base - 2*3600000},
		{"2024-03-01T10:00:01+02", base - 2*3600000},
		{"2024-03-01T10:00:01-05:30", base + 5*3600000 + 30*60000},
		{"2024-03-01T10:00:01-0530", base + 5*3600000 + 30*60000},
		{"2024-03-01T10:00:01.5+23:59", base + 500 - 23*3600000 - 59*60000},
		{"2024-03-01T10:00:01-00:00", base},
		{"2024-03-01", utc(2024, 3, 1, 0, 0, 0, 0)},
		{"2024-02-29 23:59:59.999", utc(2024, 2, 29, 23, 59, 59, 999000000)},
		{"2000-02-29", utc(2000, 2, 29, 0, 0, 0, 0)},
		{"1970-01-01 00:00:00", 0},
		{"1969-12-31 23:59:59.999", -1},
		{"1969-12-31 23:59:59.9999", -1},
		{"1969-12-31 23:59:59.0001", -1000},
		{"0000-01-01 00:00:00", -62167219200000},
		{"0000-02-29", -62167219200000 + 59*MillisPerDay},
		{"9999-12-31 23:59:59.999", 253402300799999},
		{"9999-12-31T23:59:59.999-23:59", 253402300799999 + 23*3600000 + 59*60000},
	} {
		got, ok := ParseTimestamp([]byte(c.in))
		if assert.True(t, ok, "%q", c.in) {
			assert.Equal(t, c.want, got, "%q", c.in)
		}
	}
}

func TestParseTimestampRefuses(t *testing.T) {
	for _, in := range []string{
		"",
		"2024",
		"2024-03",
		"2024-3-01",
		"2024-03-1",
		"24-03-01",
		"+2024-03-01",
		"2024/03/01",
		"2024-00-01",
		"2024-13-01",
		"2024-03-00",
		"2024-03-32",
		"2024-02-30",
		"2023-02-29",
		"1900-02-29",
		"2024-04-31",
		"2024-03-01T",
		"2024-03-01 ",
		" 2024-03-01",
		"2024-03-01x",
		"2024-03-01Z",
		"2024-03-01T10",
		"2024-03-01T10:00",
		"2024-03-01T10:00Z",
		"2024-03-01T10:00:0",
		"2024-03-01T24:00:00",
		"2024-03-01T23:60:00",
		"2024-03-01T23:59:60",
		"2024-03-01T1a:00:00",
		"2024-03-01X10:00:00",
		"2024-03-01T10-00-00",
		"2024-03-01T10:00:01.",
		"2024-03-01T10:00:01.Z",
		"2024-03-01T10:00:01.1234567890",
		"2024-03-01T10:00:01,250",
		"2024-03-01T10:00:01ZZ",
		"2024-03-01T10:00:01Z ",
		"2024-03-01T10:00:01 ",
		"2024-03-01T10:00:01+",
		"2024-03-01T10:00:01+2",
		"2024-03-01T10:00:01+24:00",
		"2024-03-01T10:00:01+02:60",
		"2024-03-01T10:00:01+02:0",
		"2024-03-01T10:00:01+020",
		"2024-03-01T10:00:01+02:000",
		"2024-03-01T10:00:01+02-00",
		"2024-03-01T10:00:01 +02:00",
		"2024-03-01T10:00:01UTC",
		"2024-03-01T10:00:01.5x",
		"2024-03-01T10:00:01\x00",
		"２０２４-03-01",
	} {
		_, ok := ParseTimestamp([]byte(in))
		assert.False(t, ok, "%q", in)
	}
}

// A form the oracle prints and ParseTimestamp must read.
type form struct {
	name   string
	layout string // for the instant in its zone
	// edit turns the oracle's text into the variant under test (lower
	// case T or Z); nil for none.
	edit func(string) string
	// zoned: the text carries the offset; else it is the local time
	// read as UTC.
	zoned bool
}

func fracLayout(n int) string {
	if n == 0 {
		return ""
	}
	return "." + strings.Repeat("0", n)
}

func forms(frac int, offsetMinutes int) []form {
	f := fracLayout(frac)
	fs := []form{
		{name: "RFC 3339 numeric offset", layout: "2006-01-02T15:04:05" + f + "-07:00", zoned: true},
		{name: "offset without colon", layout: "2006-01-02T15:04:05" + f + "-0700", zoned: true},
		{name: "space, offset", layout: "2006-01-02 15:04:05" + f + "-07:00", zoned: true},
		{name: "SQL", layout: "2006-01-02 15:04:05" + f},
		{name: "ISO local", layout: "2006-01-02T15:04:05" + f},
		{name: "lower t, offset", layout: "2006-01-02T15:04:05" + f + "-07:00", zoned: true, edit: func(s string) string {
			return strings.Replace(s, "T", "t", 1)
		}},
	}
	if offsetMinutes%60 == 0 {
		fs = append(fs, form{name: "offset hours only", layout: "2006-01-02T15:04:05" + f + "-07", zoned: true})
	}
	if offsetMinutes == 0 {
		fs = append(fs,
			form{name: "RFC 3339 Z", layout: "2006-01-02T15:04:05" + f + "Z07:00", zoned: true},
			form{name: "lower z", layout: "2006-01-02T15:04:05" + f + "Z07:00", zoned: true, edit: func(s string) string {
				return strings.ToLower(s)
			}},
		)
	}
	if frac == 0 {
		fs = append(fs, form{name: "date", layout: "2006-01-02"})
	}
	return fs
}

func TestParseTimestampAgainstTime(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	rounds := testenv.Scale(20000, 200000)
	for i := 0; i < rounds; i++ {
		// Nanoseconds, so that fractions past the millisecond occur.
		ms := minOracle + r.Int64N(maxOracle-minOracle)
		instant := time.UnixMilli(ms).Add(time.Duration(r.Int64N(1e6))).UTC()
		off := 0
		if r.IntN(3) > 0 {
			off = r.IntN(2*(23*60+59)+1) - (23*60 + 59)
			if r.IntN(2) == 0 {
				off = off / 60 * 60
			}
		}
		zone := time.FixedZone("", off*60)
		local := instant.In(zone)
		frac := r.IntN(10)
		for _, f := range forms(frac, off) {
			text := local.Format(f.layout)
			want, err := time.Parse(f.layout, text)
			require.NoError(t, err, "the oracle parses its own %q", text)
			if !f.zoned {
				// Without a zone the text is read as UTC: the
				// oracle did too.
				require.Equal(t, time.UTC, want.Location())
			}
			if f.edit != nil {
				text = f.edit(text)
			}
			got, ok := ParseTimestamp([]byte(text))
			require.True(t, ok, "%s: %q", f.name, text)
			require.Equal(t, msOf(want), got, "%s: %q", f.name, text)
		}
	}
}

func TestParseDate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int32
	}{
		{"1970-01-01", 0},
		{"1970-01-02", 1},
		{"1969-12-31", -1},
		{"2024-03-01", 19783},
		{"0000-01-01", -719528},
		{"9999-12-31", 2932896},
	} {
		got, ok := ParseDate([]byte(c.in))
		require.True(t, ok, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
	for _, in := range []string{"", "2024-02-30", "2024-03-01 ", "2024-03-01T00:00:00", "2024-3-1", "x024-03-01"} {
		_, ok := ParseDate([]byte(in))
		assert.False(t, ok, "%q", in)
	}
	r := rand.New(rand.NewPCG(23, 24))
	for i := 0; i < 10000; i++ {
		d := time.Date(1+r.IntN(9999), time.Month(1+r.IntN(12)), 1+r.IntN(31), 0, 0, 0, 0, time.UTC)
		got, ok := ParseDate([]byte(d.Format("2006-01-02")))
		require.True(t, ok)
		require.Equal(t, d.Unix()/86400, int64(got), d)
	}
}

func TestAppendTimestampAgainstTime(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	const span = 10000 * 366 * MillisPerDay // ±10,000 years around 1970
	edges := []int64{0, -1, 1, 999, -999, -1000, -1001, MillisPerDay - 1, -MillisPerDay, -MillisPerDay - 1,
		-62167219200000, -62167219200001, 253402300799999, 253402300800000, span, -span}
	buf := make([]byte, 0, 64)
	check := func(ms int64) {
		want := time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000")
		if strings.IndexByte(want, '-') > 4 {
			// The time package prints a year above 9999 without
			// the + that ISO 8601 and java.time put before it.
			want = "+" + want
		}
		if got := AppendTimestamp(buf[:0], ms); string(got) != want {
			t.Fatalf("AppendTimestamp(%d) = %q, the time package says %q", ms, got, want)
		}
	}
	for _, ms := range edges {
		check(ms)
	}
	for i := 0; i < testenv.Scale(100000, 1000000); i++ {
		check(r.Int64N(2*span) - span)
	}
	// The widest years: the time package formats them too.
	check(1<<63 - 1)
	check(-1 << 63)
}

func TestAppendTimestampRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	lo, hi := int64(-62167219200000), int64(253402300799999)
	for i := 0; i < 100000; i++ {
		ms := lo + r.Int64N(hi-lo+1)
		text := AppendTimestamp(nil, ms)
		if got, ok := ParseTimestamp(text); !ok || got != ms {
			t.Fatalf("%d printed as %q reads back as %d (%v)", ms, text, got, ok)
		}
	}
}

func TestAppendDate(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 30))
	check := func(days int32) {
		want := time.Unix(int64(days)*86400, 0).UTC().Format("2006-01-02")
		if strings.IndexByte(want, '-') > 4 {
			want = "+" + want
		}
		text := AppendDate(nil, days)
		if string(text) != want {
			t.Fatalf("AppendDate(%d) = %q, the time package says %q", days, text, want)
		}
		if y, _, _ := CivilFromDays(int64(days)); y >= 0 && y <= 9999 {
			if back, ok := ParseDate(text); !ok || back != days {
				t.Fatalf("%d printed as %q reads back as %d (%v)", days, text, back, ok)
			}
		}
	}
	for _, d := range []int32{0, -1, 1, -719528, -719529, 2932896, 2932897, 1<<31 - 1, -1 << 31} {
		check(d)
	}
	for i := 0; i < 100000; i++ {
		check(int32(r.Uint32()))
	}
}

func TestCivilAgainstTime(t *testing.T) {
	// Every day of 1600 to 2400 (leap rules of 1700, 1900, 2000, 2100),
	// then random days of ±1,000,000 years.
	first := DaysFromCivil(1600, 1, 1)
	day := time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)
	for d := first; d < DaysFromCivil(2400, 1, 1); d++ {
		y, m, dd := CivilFromDays(d)
		if y != day.Year() || m != int(day.Month()) || dd != day.Day() || DaysFromCivil(y, m, dd) != d {
			t.Fatalf("day %d: %d-%d-%d, the time package says %s", d, y, m, dd, day)
		}
		day = day.AddDate(0, 0, 1)
	}
	r := rand.New(rand.NewPCG(31, 32))
	for i := 0; i < 100000; i++ {
		d := r.Int64N(2*365_000_000) - 365_000_000
		tm := time.Unix(d*86400, 0).UTC()
		y, m, dd := CivilFromDays(d)
		if y != tm.Year() || m != int(tm.Month()) || dd != tm.Day() || DaysFromCivil(y, m, dd) != d {
			t.Fatalf("day %d: %d-%d-%d, the time package says %s", d, y, m, dd, tm)
		}
	}
}

func FuzzParseTimestamp(f *testing.F) {
	for _, s := range []string{
		"2024-03-01T10:00:01Z", "2024-03-01T10:00:01.250Z", "2024-03-01 10:00:01.123456789",
		"2024-03-01T10:00:01-0530", "2024-03-01t10:00:01+02", "2024-03-01", "0000-01-01T00:00:00+23:59",
		"9999-12-31 23:59:59.999-23:59", "2024-02-29", "2023-02-29", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, ok := ParseTimestamp(b)
		want, wantOK := oracleParse(b)
		if ok && (!wantOK || want != ms) {
			t.Fatalf("%q is %d; the time package says %d (%v)", b, ms, want, wantOK)
		}
		if !ok && wantOK && canonical(b) {
			t.Fatalf("%q refused; the time package reads %d", b, want)
		}
		if !ok {
			return
		}
		text := AppendTimestamp(nil, ms)
		back, ok := ParseTimestamp(text)
		if y, _, _, _, _, _, _ := Fields(ms); y < 0 || y > 9999 {
			// An offset moved the instant out of 0000-9999: it
			// prints with a sign, which the parser does not read.
			if ok || text[0] != '-' && text[0] != '+' {
				t.Fatalf("%q is %d, printed %q", b, ms, text)
			}
			return
		}
		if !ok || back != ms {
			t.Fatalf("%q is %d, printed %q, read back as %d (%v)", b, ms, text, back, ok)
		}
	})
}

// The layouts of the time package that together read what ParseTimestamp
// does, and more (see canonical).
var oracleLayouts = []string{
	"2006-01-02",
	"2006-01-02T15:04:05", "2006-01-02 15:04:05",
	"2006-01-02T15:04:05Z07:00", "2006-01-02 15:04:05Z07:00",
	"2006-01-02T15:04:05Z0700", "2006-01-02 15:04:05Z0700",
	"2006-01-02T15:04:05Z07", "2006-01-02 15:04:05Z07",
}

// oracleParse reads b with the time package. A fraction after the seconds
// needs no layout element: time.Parse reads one anyway. The time package
// knows only an upper-case T and Z.
func oracleParse(b []byte) (int64, bool) {
	s := []byte(string(b))
	if len(s) > 10 && s[10] == 't' {
		s[10] = 'T'
	}
	if n := len(s); n > 19 && s[n-1] == 'z' {
		s[n-1] = 'Z'
	}
	for _, l := range oracleLayouts {
		if tm, err := time.Parse(l, string(s)); err == nil {
			return msOf(tm), true
		}
	}
	return 0, false
}

// canonical reports whether b avoids what the time package reads and
// ParseTimestamp refuses on purpose: fields of one digit or padded with a
// space, a fraction after a comma or of more than 9 digits, an offset of
// 24 hours or of 60 minutes or more.
func canonical(b []byte) bool {
	for _, i := range []int{0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18} {
		if i < len(b) && (b[i] < '0' || b[i] > '9') {
			return false
		}
	}
	if len(b) == 10 {
		return true
	}
	if len(b) < 19 || b[13] != ':' || b[16] != ':' {
		return false
	}
	i := 19
	if i < len(b) && b[i] == ',' {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		if n > 9 {
			return false
		}
	}
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		off := strings.Replace(string(b[i+1:]), ":", "", 1)
		if len(off) >= 2 && off[:2] > "23" || len(off) >= 4 && off[2:4] > "59" {
			return false
		}
	}
	return true
}

// Benchmarks: the hand-written loops against the time package.

var benchInputs = []struct{ name, layout, text string }{
	{"RFC3339", time.RFC3339Nano, "2024-03-01T10:00:01.250+02:00"},
	{"SQL", "2006-01-02 15:04:05.000", "2024-03-01 10:00:01.250"},
}

func BenchmarkParseTimestamp(b *testing.B) {
	for _, in := range benchInputs {
		text := []byte(in.text)
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := ParseTimestamp(text); !ok {
					b.Fatal(in.text)
				}
			}
		})
		b.Run(in.name+"/time.Parse", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := time.Parse(in.layout, string(text)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAppendTimestamp(b *testing.B) {
	const ms = 1709287201250
	buf := make([]byte, 0, 64)
	b.Run("Append", func(b *testing.B) {
		b.SetBytes(23)
		b.ReportAllocs()
		for b.Loop() {
			buf = AppendTimestamp(buf[:0], ms)
		}
	})
	b.Run("time.AppendFormat", func(b *testing.B) {
		b.SetBytes(23)
		b.ReportAllocs()
		for b.Loop() {
			buf = time.UnixMilli(ms).UTC().AppendFormat(buf[:0], "2006-01-02 15:04:05.000")
		}
	})
	b.Run("time.Format", func(b *testing.B) {
		b.SetBytes(23)
		b.ReportAllocs()
		for b.Loop() {
			_ = time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000")
		}
	})
}

func ExampleParseTimestamp() {
	ms, ok := ParseTimestamp([]byte("2024-03-01T10:00:01.250+02:00"))
	fmt.Println(ms, ok, string(AppendTimestamp(nil, ms)))
	// Output: 1709280001250 true 2024-03-01 08:00:01.250
}

// TestDateCacheMatchesParse: a DateCache's parse is ParseTimestamp's over
// a sequence whose dates repeat, change, and share a cached date with
// times and zones that are not valid, and with dates that are not.
func TestDateCacheMatchesParse(t *testing.T) {
	seq := []string{
		"2024-03-01 10:00:01.250", "2024-03-01 10:00:02", "2024-03-01T23:59:59.999Z", "2024-03-01 24:00:00",
		"2024-03-01 10:00", "2024-03-01", "2024-03-01x", "2024-03-01 10:00:01+02:00", "2024-03-02 00:00:00",
		"2024-03-01 10:00:01", "2023-02-29 10:00:00", "2023-02-29", "2024-02-29 10:00:00", "2024-02-2910:00:00",
		"1700000000000", "", "2024-13-01 00:00:00", "2024-03-01 10:00:01",
	}
	var c DateCache
	for _, s := range seq {
		want, wantOK := ParseTimestamp([]byte(s))
		got, ok := c.ParseTimestamp([]byte(s))
		assert.Equal(t, wantOK, ok, "%q", s)
		assert.Equal(t, want, got, "%q", s)
	}
	var none *DateCache
	got, ok := none.ParseTimestamp([]byte(seq[0]))
	want, _ := ParseTimestamp([]byte(seq[0]))
	assert.True(t, ok)
	assert.Equal(t, want, got, "a nil cache parses")
}

// FuzzDateCache: two timestamps parsed in turn through one DateCache read
// as ParseTimestamp reads each.
func FuzzDateCache(f *testing.F) {
	f.Add([]byte("2024-03-01 10:00:01.250"), []byte("2024-03-01 25:00:00"))
	f.Add([]byte("2024-02-29T10:00:00Z"), []byte("2024-02-29"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var c DateCache
		for _, s := range [][]byte{a, b, a} {
			want, wantOK := ParseTimestamp(s)
			got, ok := c.ParseTimestamp(s)
			if ok != wantOK || got != want {
				t.Fatalf("%q through the cache: %d %v; ParseTimestamp: %d %v", s, got, ok, want, wantOK)
			}
		}
	})
}

// ParseCastTimestamp reads ParseTimestamp's forms and Flink's CAST form,
// whose fields may have one digit; ParseTimestamp does not.
func TestParseCastTimestampFlinkForm(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"2024-3-1", utc(2024, 3, 1, 0, 0, 0, 0)},
		{"2024-03-1 1:2:3", utc(2024, 3, 1, 1, 2, 3, 0)},
		{"2024-3-01 10:2:03.5", utc(2024, 3, 1, 10, 2, 3, 500e6)},
		{"2024-3-1 1:2:3.", utc(2024, 3, 1, 1, 2, 3, 0)},
		{"2024-2-29 23:59:59.123456789", utc(2024, 2, 29, 23, 59, 59, 123e6)},
		{"1969-12-31 23:59:59.999", -1},
		{"2024-03-01T10:00:01.25+02:00", utc(2024, 3, 1, 8, 0, 1, 250e6)},
	} {
		got, ok := ParseCastTimestamp([]byte(c.in))
		require.True(t, ok, c.in)
		assert.Equal(t, c.want, got, c.in)
		if strings.Count(c.in, "-") == 2 && len(c.in) != 10 && len(c.in) < 19 {
			_, ok = ParseTimestamp([]byte(c.in))
			assert.False(t, ok, "%s: the sources' form has two digits", c.in)
		}
	}
	for _, in := range []string{"", "2024-3", "24-3-1", "2024-123-1", "2024-3-1 ", "2024-3-1T1:2:3", "2024-3-1 1:2", "2024-3-1 1:2:3Z",
		"2024-3-1 1:2:3+01:00", "2023-2-29", "2024-4-31 0:0:0", "2024-3-1 24:0:0", "2024-3-1 1:60:0", "2024-3-1 1:2:60",
		"2024-3-1 1:2:3.1234567890", "2024-3-1 001:2:3", "2024-3-1 1:2:3.x"} {
		_, ok := ParseCastTimestamp([]byte(in))
		assert.False(t, ok, in)
	}
}
