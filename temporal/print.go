package temporal

// AppendTimestamp appends timestamp ms as yyyy-MM-dd HH:mm:ss.SSS (UTC,
// always three fraction digits: SQL's TIMESTAMP(3) as Flink prints it) and
// returns the extended buffer. Years 0000 to 9999 have four digits, the
// only ones ParseTimestamp reads back; outside them the year is printed as
// ISO 8601 and java.time expand it: a sign, then at least four digits
// (+10000-01-01, -0001-12-31).
func AppendTimestamp(dst []byte, ms int64) []byte {
	days, rem := floorDiv(ms, MillisPerDay)
	dst = appendDate(dst, days)
	t := int(rem)
	h, m, s, f := t/MillisPerHour, t/MillisPerMinute%60, t/MillisPerSecond%60, t%MillisPerSecond
	return append(dst, ' ',
		byte('0'+h/10), byte('0'+h%10), ':',
		byte('0'+m/10), byte('0'+m%10), ':',
		byte('0'+s/10), byte('0'+s%10), '.',
		byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

// AppendDate appends date days (since 1970-01-01) as yyyy-MM-dd, with
// AppendTimestamp's rule for years outside 0000 to 9999.
func AppendDate(dst []byte, days int32) []byte { return appendDate(dst, int64(days)) }

func appendDate(dst []byte, days int64) []byte {
	y, m, d := CivilFromDays(days)
	dst = appendYear(dst, y)
	return append(dst, '-', byte('0'+m/10), byte('0'+m%10), '-', byte('0'+d/10), byte('0'+d%10))
}

func appendYear(dst []byte, y int) []byte {
	if y >= 0 && y <= 9999 {
		return append(dst, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10))
	}
	if y < 0 {
		dst = append(dst, '-')
	} else {
		dst = append(dst, '+')
	}
	return appendPadded(dst, absU(y), 4)
}

func absU(v int) uint64 {
	if v < 0 {
		return uint64(-int64(v))
	}
	return uint64(v)
}

// appendPadded appends v in decimal with at least width digits.
func appendPadded(dst []byte, v uint64, width int) []byte {
	var buf [20]byte
	i := len(buf)
	for v >= 10 || width > 1 {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
		width--
	}
	i--
	buf[i] = byte('0' + v)
	return append(dst, buf[i:]...)
}
