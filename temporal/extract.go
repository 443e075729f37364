package temporal

import (
	"strconv"
	"strings"
)

// Unit is a field EXTRACT reads from a timestamp.
type Unit uint8

// The units of EXTRACT(unit FROM ts), with Flink's values (Flink's
// DateTimeUtils, after Calcite's), UTC.
const (
	Year        Unit = iota + 1 // the proleptic year: 0 before 1, negative before that
	Quarter                     // 1 to 4
	Month                       // 1 to 12
	Week                        // ISO 8601 week of the ISO week-numbering year, 1 to 53
	Day                         // day of the month, 1 to 31
	Hour                        // 0 to 23
	Minute                      // 0 to 59
	Second                      // 0 to 59
	Millisecond                 // 0 to 999, within the second (Flink; Calcite and PostgreSQL count the seconds too, 0 to 59999)
	Microsecond                 // Millisecond × 1000: the timestamps have millisecond precision
	Nanosecond                  // Millisecond × 1000000
	DOW                         // day of the week, 1 (Sunday) to 7 (Saturday)
	ISODOW                      // ISO 8601 day of the week, 1 (Monday) to 7 (Sunday)
	DOY                         // day of the year, 1 to 366
	ISOYear                     // ISO 8601 week-numbering year, which WEEK counts in
	Decade                      // Year / 10, truncated toward zero (Calcite's)
	Century                     // 1 for 1-100, 21 for 2001-2100; 0 and before: (Year - 99) / 100 (Calcite's)
	Millennium                  // 1 for 1-1000, 3 for 2001-3000; 0 and before: (Year - 999) / 1000 (Calcite's)
	Epoch                       // seconds since 1970-01-01 00:00:00 UTC, floor
)

var unitNames = [...]string{
	Year: "YEAR", Quarter: "QUARTER", Month: "MONTH", Week: "WEEK", Day: "DAY",
	Hour: "HOUR", Minute: "MINUTE", Second: "SECOND", Millisecond: "MILLISECOND",
	Microsecond: "MICROSECOND", Nanosecond: "NANOSECOND", DOW: "DOW", ISODOW: "ISODOW",
	DOY: "DOY", ISOYear: "ISOYEAR", Decade: "DECADE", Century: "CENTURY",
	Millennium: "MILLENNIUM", Epoch: "EPOCH",
}

// String is the unit's SQL name.
func (u Unit) String() string {
	if int(u) < len(unitNames) && unitNames[u] != "" {
		return unitNames[u]
	}
	return "Unit(" + strconv.Itoa(int(u)) + ")"
}

// unitFunctions are the SQL functions that are a unit under another name
// (Flink's DAYOFMONTH(ts) is EXTRACT(DAY FROM ts)).
var unitFunctions = map[string]Unit{"dayofmonth": Day, "dayofweek": DOW, "dayofyear": DOY}

// ParseUnit is the unit of a SQL name (YEAR, DOW, ...) or of the function
// that extracts it (DAYOFWEEK, ...), in any case.
func ParseUnit(name string) (Unit, bool) {
	for u, n := range unitNames {
		if n != "" && strings.EqualFold(n, name) {
			return Unit(u), true
		}
	}
	u, ok := unitFunctions[strings.ToLower(name)]
	return u, ok
}

// Extract is EXTRACT(unit FROM ts) of timestamp ms. It panics on a unit
// that is none of the constants.
func Extract(unit Unit, ms int64) int64 {
	days, rem := floorDiv(ms, MillisPerDay)
	switch unit {
	case Hour:
		return rem / MillisPerHour
	case Minute:
		return rem / MillisPerMinute % 60
	case Second:
		return rem / MillisPerSecond % 60
	case Millisecond:
		return rem % MillisPerSecond
	case Microsecond:
		return rem % MillisPerSecond * 1000
	case Nanosecond:
		return rem % MillisPerSecond * 1000000
	case Epoch:
		s, _ := floorDiv(ms, MillisPerSecond)
		return s
	case DOW:
		return int64(dow(days))
	case ISODOW:
		return int64(isoDow(days))
	case Week:
		_, w := isoWeek(days)
		return int64(w)
	case ISOYear:
		y, _ := isoWeek(days)
		return int64(y)
	}
	y, m, d := CivilFromDays(days)
	switch unit {
	case Year:
		return int64(y)
	case Quarter:
		return int64(m+2) / 3
	case Month:
		return int64(m)
	case Day:
		return int64(d)
	case DOY:
		return days - DaysFromCivil(y, 1, 1) + 1
	case Decade:
		return int64(y / 10)
	case Century:
		if y > 0 {
			return int64((y + 99) / 100)
		}
		return int64((y - 99) / 100)
	case Millennium:
		if y > 0 {
			return int64((y + 999) / 1000)
		}
		return int64((y - 999) / 1000)
	}
	panic("temporal: Extract of " + unit.String())
}
