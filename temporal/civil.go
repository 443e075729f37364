package temporal

// Milliseconds in the units of a day.
const (
	MillisPerSecond = 1000
	MillisPerMinute = 60 * MillisPerSecond
	MillisPerHour   = 60 * MillisPerMinute
	MillisPerDay    = 24 * MillisPerHour
)

// floorDiv is a/b rounded toward negative infinity, and the remainder in
// [0, b), for b > 0.
func floorDiv(a, b int64) (q, r int64) {
	q, r = a/b, a%b
	if r < 0 {
		q--
		r += b
	}
	return q, r
}

// DaysFromCivil is the number of days from 1970-01-01 to year-month-day,
// which must be a valid date (month 1-12, day within the month).
func DaysFromCivil(year, month, day int) int64 {
	y, m, d := int64(year), int64(month), int64(day)
	// Years start on March 1 here, which puts the leap day last.
	if m <= 2 {
		y--
	}
	era, yoe := floorDiv(y, 400) // yoe in [0, 399]
	mp := m + 9                  // March = 0 ... February = 11
	if m > 2 {
		mp = m - 3
	}
	doy := (153*mp+2)/5 + d - 1            // [0, 365]
	doe := yoe*365 + yoe/4 - yoe/100 + doy // [0, 146096]
	return era*146097 + doe - 719468
}

// CivilFromDays is the date days after 1970-01-01 (before it when
// negative).
func CivilFromDays(days int64) (year, month, day int) {
	era, doe := floorDiv(days+719468, 146097)              // doe in [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // [0, 399]
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // [0, 365]
	mp := (5*doy + 2) / 153                                // March = 0
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if mp >= 10 {
		m = mp - 9
	}
	y := yoe + era*400
	if m <= 2 {
		y++
	}
	return int(y), int(m), int(d)
}

func isLeap(year int) bool {
	return year%4 == 0 && (year%100 != 0 || year%400 == 0)
}

// daysIn is the number of days of month in year.
func daysIn(year, month int) int {
	switch month {
	case 2:
		if isLeap(year) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// Fields is timestamp ms's date and time of day, UTC.
func Fields(ms int64) (year, month, day, hour, minute, second, millis int) {
	days, rem := floorDiv(ms, MillisPerDay)
	year, month, day = CivilFromDays(days)
	t := int(rem)
	return year, month, day, t / MillisPerHour, t / MillisPerMinute % 60, t / MillisPerSecond % 60, t % MillisPerSecond
}

// Days is the date of timestamp ms, in days since 1970-01-01 (CAST(ts AS
// DATE)).
func Days(ms int64) int64 {
	d, _ := floorDiv(ms, MillisPerDay)
	return d
}

// DayOfWeek is the day of the week of timestamp ms, 1 for Sunday to 7 for
// Saturday, as Flink's and Calcite's EXTRACT(DOW ...).
func DayOfWeek(ms int64) int { return dow(Days(ms)) }

// 1970-01-01 was a Thursday: day 0 is DOW 5.
func dow(days int64) int {
	_, r := floorDiv(days+4, 7)
	return int(r) + 1
}

// isoDow is 1 for Monday to 7 for Sunday.
func isoDow(days int64) int {
	_, r := floorDiv(days+3, 7)
	return int(r) + 1
}

// DayOfYear is the day of the year of timestamp ms, 1 to 366.
func DayOfYear(ms int64) int {
	days := Days(ms)
	y, _, _ := CivilFromDays(days)
	return int(days-DaysFromCivil(y, 1, 1)) + 1
}

// isoWeek is the ISO 8601 week-numbering year and week of a date: weeks
// start on Monday, and week 1 is the one with the year's first Thursday.
func isoWeek(days int64) (year, week int) {
	// The Thursday of the date's week decides both.
	thu := days - int64(isoDow(days)) + 4
	year, _, _ = CivilFromDays(thu)
	return year, int(thu-DaysFromCivil(year, 1, 1))/7 + 1
}
