package temporal

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
)

func TestFormatTable(t *testing.T) {
	friday := utc(2024, 3, 1, 10, 0, 1, 250000000)
	evening := utc(2024, 12, 31, 21, 7, 9, 5000000)
	midnight := utc(2024, 1, 7, 0, 3, 0, 0)
	noon := utc(2024, 1, 7, 12, 0, 0, 0)
	for _, c := range []struct {
		pattern string
		ms      int64
		want    string
	}{
		{"yyyy-MM-dd HH:mm:ss", friday, "2024-03-01 10:00:01"},
		{"yyyy-MM-dd HH:mm:ss.SSS", friday, "2024-03-01 10:00:01.250"},
		{"yyyy-MM-dd'T'HH:mm:ss.SSS'Z'", friday, "2024-03-01T10:00:01.250Z"},
		{"yyyyMMdd", friday, "20240301"},
		{"yy/M/d H:m:s", friday, "24/3/1 10:0:1"},
		{"y yyy yyyyy", friday, "2024 2024 02024"},
		{"uuuu-MM", friday, "2024-03"},
		{"MMM MMMM MMMMM LLL", friday, "Mar March M Mar"},
		{"E EE EEE EEEE EEEEE", friday, "Fri Fri Fri Friday F"},
		{"EEEE, d MMMM yyyy", evening, "Tuesday, 31 December 2024"},
		{"h:mm a", friday, "10:00 AM"},
		{"hh:mm a", evening, "09:07 PM"},
		{"h a, K, k, H", midnight, "12 AM, 0, 24, 0"},
		{"h a, K, k, H", noon, "12 PM, 0, 12, 12"},
		{"HH:mm:ss.SSS", evening, "21:07:09.005"},
		{"s.S s.SS s.SSS s.SSSS s.SSSSSSSSS", friday, "1.2 1.25 1.250 1.2500 1.250000000"},
		{"s.S s.SS", evening, "9.0 9.00"},
		{"D DD DDD", friday, "61 61 061"},
		{"D DD DDD", midnight, "7 07 007"},
		{"Q QQ QQQ QQQQ QQQQQ qqq", evening, "4 04 Q4 4th quarter 4 Q4"},
		{"QQQQ", friday, "1st quarter"},
		{"'o''clock' ''", friday, "o'clock '"},
		{"'it''s' h 'o''''clock'", friday, "it's 10 o''clock"},
		{"''''", friday, "''"},
		{"[yyyy][-MM]", friday, "2024-03"},
		{"dd.MM.yyyy, HH:mm ('UTC') ~ ^ @ !", friday, "01.03.2024, 10:00 (UTC) ~ ^ @ !"},
		{"yyyy-MM-dd é 😀", friday, "2024-03-01 é 😀"},
		{"", friday, ""},
		{"yyyy-MM-dd HH:mm:ss.SSS", -1, "1969-12-31 23:59:59.999"},
		{"yyyy yy y", utc(12345, 1, 1, 0, 0, 0, 0), "+12345 45 12345"},
		// y is the year of the era (year -5 is 6 BC), u the proleptic year,
		// as in Java.
		{"yyyy yy y", utc(-5, 1, 1, 0, 0, 0, 0), "0006 06 6"},
		{"uuuu uu u", utc(-5, 1, 1, 0, 0, 0, 0), "-0005 05 -5"},
		{"yyyy yy y|uuuu uu u", utc(0, 1, 1, 0, 0, 0, 0), "0001 01 1|0000 00 0"},
		{"yyyy|uuuu", utc(-12345, 1, 1, 0, 0, 0, 0), "+12346|-12345"},
		{"yyyy-MM-dd HH:mm:ss.SSS|uuuu", math.MaxInt64, "+292278994-08-17 07:12:55.807|+292278994"},
		{"yyyy-MM-dd HH:mm:ss.SSS|uuuu|yy|uu", math.MinInt64, "+292275056-05-16 16:47:04.192|-292275055|56|55"},
		{"yyyy-MM-dd", utc(7, 1, 1, 0, 0, 0, 0), "0007-01-01"},
	} {
		f, err := CompileFormat(c.pattern)
		require.NoError(t, err, c.pattern)
		assert.Equal(t, c.want, string(f.Append(nil, c.ms)), "DATE_FORMAT(%s, %q)", AppendTimestamp(nil, c.ms), c.pattern)
		assert.Equal(t, c.pattern, f.String())
	}
}

func TestFormatErrors(t *testing.T) {
	for _, c := range []struct{ pattern, msg string }{
		{"yyyy-MM-dd b", "unknown or unsupported pattern letter 'b'"},
		{"YYYY", "pattern letter 'Y'"},
		{"G yyyy", "pattern letter 'G'"},
		{"ww", "pattern letter 'w'"},
		{"yyyy-MM-dd HH:mm:ssZ", "'Z' is a time zone"},
		{"HH:mm z", "'z' is a time zone"},
		{"XXX", "'X' is a time zone"},
		{"ddd", "too many pattern letters 'd' (3; at most 2)"},
		{"HHH", "too many pattern letters 'H'"},
		{"MMMMMM", "too many pattern letters 'M' (6; at most 5)"},
		{"EEEEEE", "too many pattern letters 'E'"},
		{"aa", "too many pattern letters 'a'"},
		{"SSSSSSSSSS", "too many pattern letters 'S' (10; at most 9)"},
		{"DDDD", "too many pattern letters 'D'"},
		{"QQQQQQ", "too many pattern letters 'Q'"},
		{strings.Repeat("y", 20), "too many pattern letters 'y' (20; at most 19)"},
		{"yyyy 'at", "a quote at byte 5 is not closed"},
		{"'it''s", "a quote at byte 0 is not closed"},
		{"yyyy]", "a ] at byte 4 closes no ["},
		{"yyyy #", "'#' at byte 5 is reserved"},
		{"{yyyy}", "'{' at byte 0 is reserved"},
	} {
		_, err := CompileFormat(c.pattern)
		require.Error(t, err, c.pattern)
		assert.Contains(t, err.Error(), c.msg, c.pattern)
		assert.Contains(t, err.Error(), c.pattern)
		assert.Panics(t, func() { MustCompileFormat(c.pattern) })
	}
}

// javaToGo: pattern pieces that both DATE_FORMAT and time.Format print,
// for the oracle.
var javaToGo = []struct{ java, goLayout string }{
	{"yyyy", "2006"}, {"yy", "06"}, {"MM", "01"}, {"M", "1"}, {"MMM", "Jan"}, {"MMMM", "January"},
	{"dd", "02"}, {"d", "2"}, {"DDD", "002"}, {"HH", "15"}, {"hh", "03"}, {"h", "3"}, {"mm", "04"},
	{"m", "4"}, {"ss", "05"}, {"s", "5"}, {"ss.SSS", "05.000"}, {"a", "PM"}, {"EEE", "Mon"},
	{"EEEE", "Monday"},
}

// Separators that the time package does not read as layout elements.
var separators = []string{" ", "-", ":", "/", ", ", " | ", "'T'"}

func TestFormatAgainstTime(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	// From year 1: Go's 2006 and 06 print year 0 as 0000 and 00, Java's y
	// (the year of the era) as 0001 and 01.
	lo, hi := utc(1, 1, 1, 0, 0, 0, 0), utc(9999, 12, 31, 23, 59, 59, 999000000)
	for i := 0; i < testenv.Scale(5000, 50000); i++ {
		var java, goLayout strings.Builder
		for n := 1 + r.IntN(6); n > 0; n-- {
			p := javaToGo[r.IntN(len(javaToGo))]
			java.WriteString(p.java)
			goLayout.WriteString(p.goLayout)
			if n > 1 {
				sep := separators[r.IntN(len(separators))]
				java.WriteString(sep)
				goLayout.WriteString(strings.Trim(sep, "'"))
			}
		}
		f, err := CompileFormat(java.String())
		require.NoError(t, err, java.String())
		for k := 0; k < 10; k++ {
			ms := lo + r.Int64N(hi-lo)
			want := time.UnixMilli(ms).UTC().Format(goLayout.String())
			require.Equal(t, want, string(f.Append(nil, ms)), "DATE_FORMAT(%s, %q), Go layout %q", AppendTimestamp(nil, ms), java.String(), goLayout.String())
		}
	}
}

func BenchmarkFormatAppend(b *testing.B) {
	f := MustCompileFormat("yyyy-MM-dd HH:mm:ss.SSS")
	buf := make([]byte, 0, 64)
	b.SetBytes(23)
	b.ReportAllocs()
	for b.Loop() {
		buf = f.Append(buf[:0], 1709287201250)
	}
}

// FuzzCompileFormat: a DATE_FORMAT pattern compiles or is an error, and a
// compiled one formats any instant without a panic, the same text twice
// (Append reuses nothing between calls).
func FuzzCompileFormat(f *testing.F) {
	for _, p := range []string{"yyyy-MM-dd HH:mm:ss.SSS", "EEE, d MMM yyyy", "'o''clock' h a", "yy-M-d H:m:s", "G u w D", "VV", "''", "'"} {
		f.Add(p, int64(1_700_000_000_123))
	}
	f.Fuzz(func(t *testing.T, pattern string, ms int64) {
		fm, err := CompileFormat(pattern)
		if err != nil {
			return
		}
		a := fm.Append(nil, ms)
		assert.Equal(t, string(a), string(fm.Append(nil, ms)), "%q at %d", pattern, ms)
	})
}
