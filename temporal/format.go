package temporal

import (
	"fmt"
	"strings"
)

// Format is a compiled DATE_FORMAT pattern. A Format is safe for
// concurrent use.
type Format struct {
	pattern string
	items   []fmtItem
}

type fmtKind uint8

const (
	fmtLiteral      fmtKind = iota
	fmtYear                 // u: the proleptic year; width the minimum digits
	fmtYear2                // uu: the last two digits
	fmtYearOfEra            // y: the year of the era; width the minimum digits
	fmtYearOfEra2           // yy: the last two digits
	fmtMonth                // M, MM
	fmtMonthShort           // MMM
	fmtMonthLong            // MMMM
	fmtMonthNarrow          // MMMMM
	fmtDay                  // d, dd
	fmtDayOfYear            // D, DD, DDD
	fmtDayShort             // E, EE, EEE
	fmtDayLong              // EEEE
	fmtDayNarrow            // EEEEE
	fmtAmPm                 // a
	fmtHour23               // H: 0-23
	fmtHour24               // k: 1-24
	fmtHour11               // K: 0-11
	fmtHour12               // h: 1-12
	fmtMinute               // m
	fmtSecond               // s
	fmtFraction             // S...: width digits of the second's fraction
	fmtQuarter              // Q, QQ
	fmtQuarterShort         // QQQ
	fmtQuarterLong          // QQQQ
)

type fmtItem struct {
	kind  fmtKind
	width int
	lit   string
}

var (
	monthNames = [13]string{"", "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
	dayNames   = [8]string{"", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"} // by ISO day of the week
	quarters   = [5]string{"", "1st quarter", "2nd quarter", "3rd quarter", "4th quarter"}
)

// CompileFormat compiles a DATE_FORMAT pattern.
//
// Flink's DATE_FORMAT(timestamp, pattern) formats with Java's
// DateTimeFormatter.ofPattern (its documentation says SimpleDateFormat;
// the two agree on the common letters), and so does this, in English and
// UTC:
//
//	y u    year: yy its last two digits; y one digit or more; yyy, yyyy, ...
//	       that many at least, and a + before a year with more digits
//	       than letters when there are four or more. y is the year of
//	       the era (1 BC is 1, 2 BC 2: no sign), u the proleptic year
//	       (1 BC is 0, 2 BC -1: a - before a year below 0), as in Java
//	M L    month: M 3, MM 03, MMM Mar, MMMM March, MMMMM M
//	d      day of the month: d 1, dd 01
//	D      day of the year: D 5, DD 05, DDD 005
//	E      day of the week: E, EE, EEE Fri; EEEE Friday; EEEEE F
//	a      AM or PM
//	H      hour 0-23; k hour 1-24; K hour 0-11; h hour 1-12 (H 7, HH 07)
//	m s    minute, second (m 5, mm 05)
//	S      fraction of the second, as many digits as letters (1 to 9):
//	       SSS milliseconds, S tenths; digits past the third are 0
//	Q q    quarter: Q 1, QQ 01, QQQ Q1, QQQQ 1st quarter, QQQQQ 1
//	'...'  literal text; '' a single quote, inside quotes or out
//	[ ]    an optional section, which a timestamp always fills: its
//	       contents are printed
//
// Other characters are printed as they are, except # { }, which
// DateTimeFormatter reserves. Any other letter is an error naming it,
// among them the zone letters (z Z X x O V v: a TIMESTAMP has no zone, and
// Flink fails on them when it formats) and the letters for eras and
// week-based fields. A letter repeated more than its field allows (ddd) is
// an error, as in Java. y and u differ only for years before 1.
func CompileFormat(pattern string) (*Format, error) {
	f := &Format{pattern: pattern}
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			f.items = append(f.items, fmtItem{kind: fmtLiteral, lit: string(lit)})
			lit = lit[:0]
		}
	}
	fail := func(format string, args ...any) (*Format, error) {
		return nil, fmt.Errorf("DATE_FORMAT pattern %q: %s", pattern, fmt.Sprintf(format, args...))
	}
	optional := 0
	for i := 0; i < len(pattern); {
		c := pattern[i]
		switch {
		case c == '\'':
			if i+1 < len(pattern) && pattern[i+1] == '\'' {
				lit = append(lit, '\'')
				i += 2
				continue
			}
			j := i + 1
			for {
				k := strings.IndexByte(pattern[j:], '\'')
				if k < 0 {
					return fail("a quote at byte %d is not closed", i)
				}
				lit = append(lit, pattern[j:j+k]...)
				j += k + 1
				if j < len(pattern) && pattern[j] == '\'' {
					lit = append(lit, '\'')
					j++
					continue
				}
				break
			}
			i = j
			continue
		case c == '[':
			optional++
			i++
			continue
		case c == ']':
			if optional == 0 {
				return fail("a ] at byte %d closes no [", i)
			}
			optional--
			i++
			continue
		case c == '#' || c == '{' || c == '}':
			return fail("%q at byte %d is reserved", c, i)
		case !isLetter(c):
			lit = append(lit, c)
			i++
			continue
		}
		n := 1
		for i+n < len(pattern) && pattern[i+n] == c {
			n++
		}
		it, err := letterItem(c, n)
		if err != nil {
			return fail("%v", err)
		}
		flush()
		f.items = append(f.items, it)
		i += n
	}
	flush()
	return f, nil
}

// MustCompileFormat is CompileFormat for patterns known to be valid; it
// panics on an error.
func MustCompileFormat(pattern string) *Format {
	f, err := CompileFormat(pattern)
	if err != nil {
		panic(err)
	}
	return f
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func letterItem(c byte, n int) (fmtItem, error) {
	tooMany := func(max int) error {
		return fmt.Errorf("too many pattern letters %q (%d; at most %d)", c, n, max)
	}
	num := func(kind fmtKind, max int) (fmtItem, error) {
		if n > max {
			return fmtItem{}, tooMany(max)
		}
		return fmtItem{kind: kind, width: n}, nil
	}
	pick := func(kinds ...fmtKind) (fmtItem, error) {
		if n > len(kinds) {
			return fmtItem{}, tooMany(len(kinds))
		}
		return fmtItem{kind: kinds[n-1], width: n}, nil
	}
	switch c {
	case 'u':
		if n == 2 {
			return fmtItem{kind: fmtYear2, width: 2}, nil
		}
		return num(fmtYear, 19)
	case 'y':
		if n == 2 {
			return fmtItem{kind: fmtYearOfEra2, width: 2}, nil
		}
		return num(fmtYearOfEra, 19)
	case 'M', 'L':
		return pick(fmtMonth, fmtMonth, fmtMonthShort, fmtMonthLong, fmtMonthNarrow)
	case 'd':
		return num(fmtDay, 2)
	case 'D':
		return num(fmtDayOfYear, 3)
	case 'E':
		return pick(fmtDayShort, fmtDayShort, fmtDayShort, fmtDayLong, fmtDayNarrow)
	case 'a':
		return num(fmtAmPm, 1)
	case 'H':
		return num(fmtHour23, 2)
	case 'k':
		return num(fmtHour24, 2)
	case 'K':
		return num(fmtHour11, 2)
	case 'h':
		return num(fmtHour12, 2)
	case 'm':
		return num(fmtMinute, 2)
	case 's':
		return num(fmtSecond, 2)
	case 'S':
		return num(fmtFraction, 9)
	case 'Q', 'q':
		it, err := pick(fmtQuarter, fmtQuarter, fmtQuarterShort, fmtQuarterLong, fmtQuarter)
		if n == 5 {
			it.width = 1
		}
		return it, err
	case 'z', 'Z', 'X', 'x', 'O', 'V', 'v':
		return fmtItem{}, fmt.Errorf("pattern letter %q is a time zone, which a TIMESTAMP does not have", c)
	}
	return fmtItem{}, fmt.Errorf("unknown or unsupported pattern letter %q", c)
}

// String is the pattern as compiled.
func (f *Format) String() string { return f.pattern }

// Append appends timestamp ms formatted by f and returns the extended
// buffer.
func (f *Format) Append(dst []byte, ms int64) []byte {
	days, rem := floorDiv(ms, MillisPerDay)
	year, month, day := CivilFromDays(days)
	t := int(rem)
	hour := t / MillisPerHour
	for i := range f.items {
		it := &f.items[i]
		switch it.kind {
		case fmtLiteral:
			dst = append(dst, it.lit...)
		case fmtYear:
			if year < 0 {
				dst = append(dst, '-')
			} else if it.width >= 4 && digitCount(uint64(year)) > it.width {
				dst = append(dst, '+')
			}
			dst = appendPadded(dst, absU(year), it.width)
		case fmtYear2:
			dst = appendPadded(dst, absU(year)%100, 2)
		case fmtYearOfEra:
			yoe := uint64(yearOfEra(year))
			if it.width >= 4 && digitCount(yoe) > it.width {
				dst = append(dst, '+')
			}
			dst = appendPadded(dst, yoe, it.width)
		case fmtYearOfEra2:
			dst = appendPadded(dst, uint64(yearOfEra(year))%100, 2)
		case fmtMonth:
			dst = appendPadded(dst, uint64(month), it.width)
		case fmtMonthShort:
			dst = append(dst, monthNames[month][:3]...)
		case fmtMonthLong:
			dst = append(dst, monthNames[month]...)
		case fmtMonthNarrow:
			dst = append(dst, monthNames[month][0])
		case fmtDay:
			dst = appendPadded(dst, uint64(day), it.width)
		case fmtDayOfYear:
			dst = appendPadded(dst, uint64(days-DaysFromCivil(year, 1, 1)+1), it.width)
		case fmtDayShort:
			dst = append(dst, dayNames[isoDow(days)][:3]...)
		case fmtDayLong:
			dst = append(dst, dayNames[isoDow(days)]...)
		case fmtDayNarrow:
			dst = append(dst, dayNames[isoDow(days)][0])
		case fmtAmPm:
			if hour < 12 {
				dst = append(dst, "AM"...)
			} else {
				dst = append(dst, "PM"...)
			}
		case fmtHour23:
			dst = appendPadded(dst, uint64(hour), it.width)
		case fmtHour24:
			h := hour
			if h == 0 {
				h = 24
			}
			dst = appendPadded(dst, uint64(h), it.width)
		case fmtHour11:
			dst = appendPadded(dst, uint64(hour%12), it.width)
		case fmtHour12:
			h := hour % 12
			if h == 0 {
				h = 12
			}
			dst = appendPadded(dst, uint64(h), it.width)
		case fmtMinute:
			dst = appendPadded(dst, uint64(t/MillisPerMinute%60), it.width)
		case fmtSecond:
			dst = appendPadded(dst, uint64(t/MillisPerSecond%60), it.width)
		case fmtFraction:
			ms := t % MillisPerSecond
			for k, scale := 0, 100; k < it.width; k++ {
				dst = append(dst, byte('0'+ms/scale%10))
				if scale /= 10; scale == 0 {
					// Past milliseconds: zeros, and a scale
					// that keeps them zeros.
					ms, scale = 0, 1
				}
			}
		case fmtQuarter:
			dst = appendPadded(dst, uint64(month+2)/3, it.width)
		case fmtQuarterShort:
			dst = append(dst, 'Q', byte('0'+(month+2)/3))
		case fmtQuarterLong:
			dst = append(dst, quarters[(month+2)/3]...)
		}
	}
	return dst
}

// yearOfEra is proleptic year y counted in its era, as Java's y does:
// itself from year 1 (AD), 1 - y before (0 is 1 BC).
func yearOfEra(y int) int {
	if y <= 0 {
		return 1 - y
	}
	return y
}

func digitCount(v uint64) int {
	n := 1
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}
