package temporal

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
)

// oracleExtract is each unit read from the time package.
func oracleExtract(u Unit, tm time.Time) int64 {
	isoYear, isoWeek := tm.ISOWeek()
	y := int64(tm.Year())
	switch u {
	case Year:
		return y
	case Quarter:
		return int64(tm.Month()+2) / 3
	case Month:
		return int64(tm.Month())
	case Week:
		return int64(isoWeek)
	case Day:
		return int64(tm.Day())
	case Hour:
		return int64(tm.Hour())
	case Minute:
		return int64(tm.Minute())
	case Second:
		return int64(tm.Second())
	case Millisecond:
		return int64(tm.Nanosecond() / 1e6)
	case Microsecond:
		return int64(tm.Nanosecond()/1e6) * 1000
	case Nanosecond:
		return int64(tm.Nanosecond()/1e6) * 1e6
	case DOW:
		return int64(tm.Weekday()) + 1
	case ISODOW:
		return (int64(tm.Weekday())+6)%7 + 1
	case DOY:
		return int64(tm.YearDay())
	case ISOYear:
		return int64(isoYear)
	case Decade:
		return y / 10
	case Century:
		if y > 0 {
			return (y + 99) / 100
		}
		return (y - 99) / 100
	case Millennium:
		if y > 0 {
			return (y + 999) / 1000
		}
		return (y - 999) / 1000
	case Epoch:
		return tm.Unix()
	}
	panic(u)
}

func TestExtractAgainstTime(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	const span = 10000 * 366 * MillisPerDay
	for i := 0; i < testenv.Scale(50000, 500000); i++ {
		ms := r.Int64N(2*span) - span
		if i%2 == 0 {
			// Near year boundaries, where the ISO weeks change year.
			y := 1 + r.IntN(9999)
			ms = utc(y, 1, 1, 0, 0, 0, 0) + r.Int64N(8*MillisPerDay) - 4*MillisPerDay
		}
		tm := time.UnixMilli(ms).UTC()
		for u := Year; u <= Epoch; u++ {
			if got, want := Extract(u, ms), oracleExtract(u, tm); got != want {
				t.Fatalf("EXTRACT(%s FROM %s) = %d, the time package says %d", u, tm, got, want)
			}
		}
		y, mo, d, h, mi, s, milli := Fields(ms)
		if got, want := [7]int{y, mo, d, h, mi, s, milli},
			[7]int{tm.Year(), int(tm.Month()), tm.Day(), tm.Hour(), tm.Minute(), tm.Second(), tm.Nanosecond() / 1e6}; got != want {
			t.Fatalf("Fields(%d) = %v, the time package says %v", ms, got, want)
		}
		if DayOfWeek(ms) != int(tm.Weekday())+1 || DayOfYear(ms) != tm.YearDay() ||
			Days(ms) != tm.Unix()/86400-boolInt(tm.Unix()%86400 < 0) {
			t.Fatalf("%s: DayOfWeek %d, DayOfYear %d, Days %d", tm, DayOfWeek(ms), DayOfYear(ms), Days(ms))
		}
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func TestExtractTable(t *testing.T) {
	ts := utc(2024, 3, 3, 13, 4, 5, 678000000) // a Sunday
	for _, c := range []struct {
		unit Unit
		ms   int64
		want int64
	}{
		{Year, ts, 2024}, {Quarter, ts, 1}, {Month, ts, 3}, {Day, ts, 3},
		{Hour, ts, 13}, {Minute, ts, 4}, {Second, ts, 5},
		{Millisecond, ts, 678}, {Microsecond, ts, 678000}, {Nanosecond, ts, 678000000},
		{DOW, ts, 1}, {ISODOW, ts, 7}, {DOY, ts, 31 + 29 + 3}, {Week, ts, 9}, {ISOYear, ts, 2024},
		{Decade, ts, 202}, {Century, ts, 21}, {Millennium, ts, 3},
		{Epoch, ts, ts / 1000},
		{DOW, utc(2024, 3, 9, 0, 0, 0, 0), 7},   // Saturday
		{DOW, utc(1970, 1, 1, 0, 0, 0, 0), 5},   // Thursday
		{DOW, -1, 4},                            // Wednesday 1969-12-31
		{Week, utc(2021, 1, 3, 0, 0, 0, 0), 53}, // ISO week 53 of 2020
		{ISOYear, utc(2021, 1, 3, 0, 0, 0, 0), 2020},
		{Week, utc(2024, 12, 30, 0, 0, 0, 0), 1}, // week 1 of 2025
		{ISOYear, utc(2024, 12, 30, 0, 0, 0, 0), 2025},
		{Century, utc(2000, 12, 31, 0, 0, 0, 0), 20},
		{Century, utc(2001, 1, 1, 0, 0, 0, 0), 21},
		{Millennium, utc(2000, 6, 1, 0, 0, 0, 0), 2},
		{Century, utc(0, 6, 1, 0, 0, 0, 0), 0},
		{Century, utc(-100, 6, 1, 0, 0, 0, 0), -1},
		{Decade, utc(-15, 6, 1, 0, 0, 0, 0), -1},
		{DOY, utc(2023, 12, 31, 0, 0, 0, 0), 365},
		{DOY, utc(2024, 12, 31, 0, 0, 0, 0), 366},
		// Before 1970 every field floors: -1 ms is the last millisecond
		// of 1969-12-31.
		{Hour, -1, 23}, {Minute, -1, 59}, {Second, -1, 59}, {Millisecond, -1, 999}, {Epoch, -1, -1},
		{Day, -1, 31}, {Year, -1, 1969},
	} {
		assert.Equal(t, c.want, Extract(c.unit, c.ms), "EXTRACT(%s FROM %s)", c.unit, AppendTimestamp(nil, c.ms))
	}
	assert.Panics(t, func() { Extract(0, 0) })
	assert.Panics(t, func() { Extract(Epoch+1, 0) })
}

func TestParseUnit(t *testing.T) {
	for u := Year; u <= Epoch; u++ {
		got, ok := ParseUnit(u.String())
		require.True(t, ok, u.String())
		assert.Equal(t, u, got)
	}
	for name, want := range map[string]Unit{"year": Year, "Dow": DOW, "isoyear": ISOYear, "MilliSecond": Millisecond,
		"DAYOFWEEK": DOW, "dayofyear": DOY, "DayOfMonth": Day} {
		got, ok := ParseUnit(name)
		require.True(t, ok, name)
		assert.Equal(t, want, got, name)
	}
	for _, name := range []string{"", "YEARS", "WEEKDAY", "Unit(1)", "millis"} {
		_, ok := ParseUnit(name)
		assert.False(t, ok, name)
	}
	assert.Equal(t, "Unit(0)", Unit(0).String())
	assert.Equal(t, "Unit(99)", Unit(99).String())
}
