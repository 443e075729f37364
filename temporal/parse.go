package temporal

import "encoding/binary"

// ParseTimestamp parses a timestamp in one of the forms event streams
// carry, and reports whether b is one:
//
//	2024-03-01T10:00:01Z             RFC 3339 / ISO 8601
//	2024-03-01T10:00:01.250+02:00    a fraction of 1 to 9 digits
//	2024-03-01t10:00:01.25z          t and z in lower case
//	2024-03-01T10:00:01-0530         an offset as ±hh:mm, ±hhmm or ±hh
//	2024-03-01 10:00:01              SQL, Flink's JSON and CSV default
//	2024-03-01 10:00:01.250          (no zone: UTC)
//	2024-03-01                       a date alone: midnight UTC
//
// The separator between date and time is T, t or a space; a zone (Z, z or
// an offset) may follow any of them. Years are 0000 to 9999, months and
// days a valid date (February 29 in leap years only), hours 0-23, minutes
// and seconds 0-59 (a leap second, 60, is refused), offsets up to ±23:59.
// Seconds are required, and nothing may precede or follow the timestamp.
//
// A fraction finer than milliseconds is truncated, which rounds the
// instant toward negative infinity (floor), also before 1970: the
// fraction adds to a whole second.
func ParseTimestamp(b []byte) (ms int64, ok bool) {
	return parseTimestamp(b, nil)
}

// DateCache holds the last date a decoder's column parsed: a stream's
// timestamps run in order, so most share the date before them, and are
// then read as their time of day alone.
type DateCache struct {
	w0   uint64 // the date's first eight bytes
	w1   uint16 // and its last two
	days int64
	set  bool
}

// ParseTimestamp is the package's ParseTimestamp, with the date taken from
// the cache where it is the last one parsed.
// A nil c caches nothing.
func (c *DateCache) ParseTimestamp(b []byte) (ms int64, ok bool) {
	return parseTimestamp(b, c)
}

// date is parseDate's, through c where c is not nil.
func (c *DateCache) date(b []byte) (int64, bool) {
	if c == nil || len(b) < 10 {
		return parseDate(b)
	}
	w0, w1 := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint16(b[8:])
	if c.set && w0 == c.w0 && w1 == c.w1 {
		return c.days, true
	}
	days, ok := parseDate(b)
	if ok {
		c.w0, c.w1, c.days, c.set = w0, w1, days, true
	}
	return days, ok
}

func parseTimestamp(b []byte, c *DateCache) (ms int64, ok bool) {
	days, ok := c.date(b)
	if !ok {
		return 0, false
	}
	ms = days * MillisPerDay
	if len(b) == 10 {
		return ms, true
	}
	// b[10] is the separator, then hh:mm:ss.
	if len(b) < 19 || (b[10] != 'T' && b[10] != 't' && b[10] != ' ') || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	h, ok1 := digits2(b[11], b[12])
	m, ok2 := digits2(b[14], b[15])
	s, ok3 := digits2(b[17], b[18])
	if !ok1 || !ok2 || !ok3 || h > 23 || m > 59 || s > 59 {
		return 0, false
	}
	ms += int64(h*MillisPerHour + m*MillisPerMinute + s*MillisPerSecond)
	i := 19
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		frac, scale := 0, 100
		for i < len(b) && i-start < 10 {
			d := b[i] - '0'
			if d > 9 {
				break
			}
			frac += int(d) * scale
			scale /= 10
			i++
		}
		if n := i - start; n == 0 || n > 9 {
			return 0, false
		}
		ms += int64(frac)
	}
	if i == len(b) {
		return ms, true
	}
	switch b[i] {
	case 'Z', 'z':
		return ms, i+1 == len(b)
	case '+', '-':
		off, ok := parseOffset(b[i+1:])
		if !ok {
			return 0, false
		}
		if b[i] == '+' {
			// Local time is ahead of UTC: UTC is earlier.
			off = -off
		}
		return ms + off, true
	}
	return 0, false
}

// parseOffset parses hh, hhmm or hh:mm (after the sign) into milliseconds.
func parseOffset(b []byte) (int64, bool) {
	if len(b) < 2 {
		return 0, false
	}
	h, ok := digits2(b[0], b[1])
	if !ok || h > 23 {
		return 0, false
	}
	m := 0
	switch len(b) {
	case 2:
	case 4:
		m, ok = digits2(b[2], b[3])
	case 5:
		if b[2] != ':' {
			return 0, false
		}
		m, ok = digits2(b[3], b[4])
	default:
		return 0, false
	}
	if !ok || m > 59 {
		return 0, false
	}
	return int64(h*MillisPerHour + m*MillisPerMinute), true
}

// ParseDate parses a date, yyyy-MM-dd with a year 0000 to 9999, into days
// since 1970-01-01.
func ParseDate(b []byte) (days int32, ok bool) {
	if len(b) != 10 {
		return 0, false
	}
	d, ok := parseDate(b)
	return int32(d), ok
}

// parseDate parses the yyyy-MM-dd at the start of b.
func parseDate(b []byte) (int64, bool) {
	if len(b) < 10 || b[4] != '-' || b[7] != '-' {
		return 0, false
	}
	y1, ok1 := digits2(b[0], b[1])
	y2, ok2 := digits2(b[2], b[3])
	m, ok3 := digits2(b[5], b[6])
	d, ok4 := digits2(b[8], b[9])
	y := y1*100 + y2
	if !ok1 || !ok2 || !ok3 || !ok4 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, false
	}
	return DaysFromCivil(y, m, d), true
}

func digits2(a, b byte) (int, bool) {
	a, b = a-'0', b-'0'
	return int(a)*10 + int(b), a <= 9 && b <= 9
}

// ParseCastTimestamp parses what CAST(s AS TIMESTAMP) reads: the forms of
// ParseTimestamp, and Flink's CAST form (DateTimeUtils.parseTimestampData),
// whose month, day, hour, minute and second may have one digit or two:
//
//	2024-3-1                         a date alone: midnight UTC
//	2024-3-1 1:2:3                   a space before the time, no zone
//	2024-3-1 1:2:3.25                a fraction of 0 to 9 digits
//
// The fields are in range as ParseTimestamp's; a fraction finer than
// milliseconds is truncated.
func ParseCastTimestamp(b []byte) (ms int64, ok bool) {
	if ms, ok := parseTimestamp(b, nil); ok {
		return ms, true
	}
	// Flink's form, which a cast reads where the strict one did not parse.
	y, i, ok := field(b, 0, 4, 4)
	if !ok || i == len(b) || b[i] != '-' {
		return 0, false
	}
	m, i, ok := field(b, i+1, 1, 2)
	if !ok || i == len(b) || b[i] != '-' {
		return 0, false
	}
	d, i, ok := field(b, i+1, 1, 2)
	if !ok || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, false
	}
	ms = DaysFromCivil(y, m, d) * MillisPerDay
	if i == len(b) {
		return ms, true
	}
	if b[i] != ' ' {
		return 0, false
	}
	h, i, ok := field(b, i+1, 1, 2)
	if !ok || h > 23 || i == len(b) || b[i] != ':' {
		return 0, false
	}
	mi, i, ok := field(b, i+1, 1, 2)
	if !ok || mi > 59 || i == len(b) || b[i] != ':' {
		return 0, false
	}
	s, i, ok := field(b, i+1, 1, 2)
	if !ok || s > 59 {
		return 0, false
	}
	ms += int64(h*MillisPerHour + mi*MillisPerMinute + s*MillisPerSecond)
	if i < len(b) && b[i] == '.' {
		// 0 to 9 digits (Flink's appendFraction(NANO_OF_SECOND, 0, 9,
		// true)), whose first three are the milliseconds
		i++
		if f, j, ok := field(b, i, 1, 9); ok {
			for n := j - i; n < 3; n++ {
				f *= 10
			}
			for n := j - i; n > 3; n-- {
				f /= 10
			}
			ms += int64(f)
			i = j
		}
	}
	return ms, i == len(b)
}

// field reads the decimal digits of b from i, at least least and at most
// most of them (no more follow), and returns their value and the index
// after them.
func field(b []byte, i, least, most int) (v, next int, ok bool) {
	j := i
	for j < len(b) && j-i < most && b[j]-'0' <= 9 {
		v = v*10 + int(b[j]-'0')
		j++
	}
	if j-i < least || j < len(b) && b[j]-'0' <= 9 {
		return 0, 0, false
	}
	return v, j, true
}
