package reference

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// dateFormat is DATE_FORMAT(ts, pattern): ts in UTC as java.time's
// DateTimeFormatter prints it with pattern (what Flink runs for a
// timestamp), written here from that class's rules rather than translated
// to Go's layouts. A run of one pattern letter is one field; its length n
// says how:
//
//	y     year of the era (1 - year before year 1, as Java's y counts 1 BC
//	      as 1); n == 2: its last two digits, else zero-padded to n digits
//	      (yyyy 2024, y 2024), with a + before it where n >= 4 and it has
//	      more than n digits (yyyy +12345)
//	u     the proleptic year (0 is 1 BC, -1 2 BC): as y, but a year below
//	      0 has a - before its digits (uu: the last two digits of |year|)
//	M L   month; n == 5 its first letter, n == 4 its name (January),
//	      n == 3 its short name (Jan), else its number zero-padded to n
//	      digits (MM 01, M 1); L (standalone) prints as M in English
//	Q q   quarter; n == 5 its number, n == 4 1st quarter ... 4th quarter,
//	      n == 3 Q1 ... Q4, else its number zero-padded to n (QQ 01)
//	d H m s   day of month, hour 0-23, minute, second, zero-padded to n (n <= 2)
//	h k K     hour 1-12, hour 1-24, hour 0-11, zero-padded to n (n <= 2)
//	S     the fraction of the second, its first n digits (S tenths, SSS
//	      milliseconds, SSSS milliseconds and a 0)
//	D     day of year, zero-padded to n (n <= 3)
//	E     day of the week; n == 5 its first letter, n == 4 its name
//	      (Monday), else short (Mon)
//	a     AM or PM (n == 1)
//
// A run longer than the letter allows is an error, as in java.time (y and
// u: 19).
//
// Text between single quotes is literal, and two single quotes in a row
// are one (inside quotes or not). [ and ] open and close an optional
// section, which a timestamp always fills: they print nothing (a ] that
// closes no [ is an error, a [ left open is not). # { } are reserved by
// java.time: errors. Any other character that is not a letter is itself.
// Another letter (G, Y, w, z, ...) and an unterminated quote are errors:
// the pattern is a constant of the query.
func dateFormat(ms int64, pattern string) (string, error) {
	t := utc(ms)
	var b strings.Builder
	pad := func(v, n int) { fmt.Fprintf(&b, "%0*d", n, v) }
	letter := func(c byte) bool { return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }
	// year prints a year as java.time's y and u do: the last two digits
	// of |year| for n == 2; else a - before a negative year, a + before
	// one of more than n digits where n >= 4, and the digits of |year|
	// zero-padded to n.
	year := func(y, n int) {
		a := y
		if a < 0 {
			a = -a
		}
		if n == 2 {
			pad(a%100, 2)
			return
		}
		if y < 0 {
			b.WriteByte('-')
		} else if n >= 4 && len(strconv.Itoa(y)) > n {
			b.WriteByte('+')
		}
		pad(a, n)
	}
	optional := 0
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
		switch c {
		case '[':
			optional++
			i++
			continue
		case ']':
			if optional == 0 {
				return "", errors.New("DATE_FORMAT: a ] in the pattern closes no [")
			}
			optional--
			i++
			continue
		case '#', '{', '}':
			return "", fmt.Errorf("DATE_FORMAT: %q is reserved in a pattern", c)
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
		if most := map[byte]int{'y': 19, 'u': 19, 'd': 2, 'H': 2, 'h': 2, 'k': 2, 'K': 2, 'm': 2, 's': 2, 'D': 3, 'a': 1, 'E': 5, 'M': 5, 'L': 5, 'Q': 5, 'q': 5, 'S': 9}[c]; most > 0 && n > most {
			return "", fmt.Errorf("DATE_FORMAT: %d pattern letters %q, at most %d", n, c, most)
		}
		switch c {
		case 'y':
			y := t.Year()
			if y <= 0 {
				y = 1 - y // year of the era (BC)
			}
			year(y, n)
		case 'u':
			year(t.Year(), n)
		case 'M', 'L':
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
		case 'Q', 'q':
			q := (int(t.Month())-1)/3 + 1
			switch n {
			case 5:
				pad(q, 1)
			case 4:
				b.WriteString([]string{"1st", "2nd", "3rd", "4th"}[q-1] + " quarter")
			case 3:
				b.WriteString("Q" + strconv.Itoa(q))
			default:
				pad(q, n)
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

// timestampText is timestamp ms as CAST(ts AS VARCHAR) and the outputs
// print it: yyyy-MM-dd HH:mm:ss.SSS in UTC. A year outside 0000 to 9999
// is printed as ISO 8601 and java.time's ISO_LOCAL_DATE expand it: a sign
// (+ or -), then at least four digits (+10000-01-01, -0001-12-31).
func timestampText(ms int64) string {
	t := utc(ms)
	y := t.Year()
	var year string
	switch {
	case y < 0:
		year = fmt.Sprintf("-%04d", -y)
	case y > 9999:
		year = fmt.Sprintf("+%d", y)
	default:
		year = fmt.Sprintf("%04d", y)
	}
	return year + t.Format("-01-02 15:04:05.000")
}
