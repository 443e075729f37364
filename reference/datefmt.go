package reference

import (
	"errors"
	"fmt"
	"strings"
)

// dateFormat is DATE_FORMAT(ts, pattern): ts in UTC as java.time's
// DateTimeFormatter prints it with pattern (what Flink runs for a
// timestamp), written here from that class's rules rather than translated
// to Go's layouts. A run of one pattern letter is one field; its length n
// says how:
//
//	y     year (of the era: 1 - year before year 1); n == 2: its last two
//	      digits, else zero-padded to n digits (yyyy 2024, y 2024)
//	M     month; n == 5 its first letter, n == 4 its name (January),
//	      n == 3 its short name (Jan), else its number zero-padded to n
//	      digits (MM 01, M 1)
//	d H m s   day of month, hour 0-23, minute, second, zero-padded to n (n <= 2)
//	h k K     hour 1-12, hour 1-24, hour 0-11, zero-padded to n (n <= 2)
//	S     the fraction of the second, its first n digits (S tenths, SSS
//	      milliseconds, SSSS milliseconds and a 0)
//	D     day of year, zero-padded to n (n <= 3)
//	E     day of the week; n == 5 its first letter, n == 4 its name
//	      (Monday), else short (Mon)
//	a     AM or PM (n == 1)
//
// A run longer than the letter allows is an error, as in java.time.
//
// Text between single quotes is literal, and two single quotes in a row
// are one (inside quotes or not); any other character that is not a letter is
// itself. Another letter (G, Y, w, z, ...) and an unterminated quote are
// errors: the pattern is a constant of the query.
func dateFormat(ms int64, pattern string) (string, error) {
	t := utc(ms)
	var b strings.Builder
	pad := func(v, n int) { fmt.Fprintf(&b, "%0*d", n, v) }
	letter := func(c byte) bool { return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }
	for i := 0; i < len(pattern); {
		c := pattern[i]
		if c == '\'' {
			if i+1 < len(pattern) && pattern[i+1] == '\'' {
				b.WriteByte('\'')
				i += 2
				continue
			}
			// Quoted text up to the closing quote; '' inside is a quote.
			i++
			for {
				if i >= len(pattern) {
					return "", errors.New("DATE_FORMAT: unterminated quote in the pattern")
				}
				if pattern[i] == '\'' {
					if i+1 < len(pattern) && pattern[i+1] == '\'' {
						b.WriteByte('\'')
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteByte(pattern[i])
				i++
			}
			continue
		}
		if !letter(c) {
			b.WriteByte(c)
			i++
			continue
		}
		n := 1
		for i+n < len(pattern) && pattern[i+n] == c {
			n++
		}
		i += n
		if most := map[byte]int{'d': 2, 'H': 2, 'h': 2, 'k': 2, 'K': 2, 'm': 2, 's': 2, 'D': 3, 'a': 1, 'E': 5, 'M': 5, 'S': 9}[c]; most > 0 && n > most {
			return "", fmt.Errorf("DATE_FORMAT: %d pattern letters %q, at most %d", n, c, most)
		}
		switch c {
		case 'y':
			year := t.Year()
			if year <= 0 {
				year = 1 - year // year of the era (BC)
			}
			if n == 2 {
				pad(year%100, 2)
			} else {
				pad(year, n)
			}
		case 'M':
			switch {
			case n == 5:
				b.WriteString(t.Month().String()[:1])
			case n == 4:
				b.WriteString(t.Month().String())
			case n == 3:
				b.WriteString(t.Month().String()[:3])
			default:
				pad(int(t.Month()), n)
			}
		case 'd':
			pad(t.Day(), n)
		case 'H':
			pad(t.Hour(), n)
		case 'h':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			pad(h, n)
		case 'k':
			h := t.Hour()
			if h == 0 {
				h = 24
			}
			pad(h, n)
		case 'K':
			pad(t.Hour()%12, n)
		case 'm':
			pad(t.Minute(), n)
		case 's':
			pad(t.Second(), n)
		case 'S':
			frac := fmt.Sprintf("%03d000000", t.Nanosecond()/1e6)
			b.WriteString(frac[:n])
		case 'D':
			pad(t.YearDay(), n)
		case 'E':
			if n == 5 {
				b.WriteString(t.Weekday().String()[:1])
			} else if n == 4 {
				b.WriteString(t.Weekday().String())
			} else {
				b.WriteString(t.Weekday().String()[:3])
			}
		case 'a':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		default:
			return "", fmt.Errorf("DATE_FORMAT: pattern letter %q is not supported", c)
		}
	}
	return b.String(), nil
}
