package reference

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/saber-hx/saber-hx/query"
)

// cast is CAST(v AS to), by query.Funcs's rules: NULL stays NULL; numbers
// to numbers (a float to an integer or a timestamp truncated toward zero,
// NaN 0, out of range the nearest bound); integers and timestamps to one
// another as milliseconds; booleans to integers 0 and 1, integers to
// booleans x <> 0; anything to a string as text prints it; a string to a
// number, a timestamp or a boolean by parsing it (a float as Java's
// Double.parseDouble, ParseJavaFloat; a boolean from t, true, y, yes, 1 or f,
// false, n, no, 0 in any case), NULL where it does not parse.
func cast(v Value, to query.ValueType) (Value, error) {
	if v.Null {
		return Null(kindOf(to)), nil
	}
	k := v.kind()
	fail := func() (Value, error) { return Value{}, fmt.Errorf("CAST of %s to %s", k, to) }
	switch to {
	case query.StringValue:
		s, err := text(v)
		return Str(s), err
	case query.IntValue, query.TimeValue:
		var i int64
		switch k {
		case IntKind, TimeKind, BoolKind:
			i = v.I
		case FloatKind:
			i = saturate(v.F)
		case StringKind:
			var ok bool
			if to == query.TimeValue {
				i, ok = parseTimestamp(v.Str)
			} else {
				i, ok = parseInt(v.Str)
			}
			if !ok {
				return Null(kindOf(to)), nil
			}
		default:
			return fail()
		}
		if to == query.TimeValue {
			return Time(i), nil
		}
		return Int(i), nil
	case query.FloatValue:
		switch k {
		case IntKind, TimeKind:
			return Float(float64(v.I)), nil // exact where |v| <= 2^53, else rounded to the nearest
		case FloatKind:
			return v, nil
		case StringKind:
			f, ok := ParseJavaFloat(v.Str, 64)
			if !ok {
				return Null(FloatKind), nil
			}
			return Float(f), nil
		}
		return fail()
	case query.BoolValue:
		switch k {
		case IntKind:
			return Bool(v.I != 0), nil
		case BoolKind:
			return v, nil
		case StringKind:
			// Flink's words, in any case (BinaryStringDataUtil.toBoolean)
			switch strings.ToLower(trimSpaces(v.Str)) {
			case "t", "true", "y", "yes", "1":
				return Bool(true), nil
			case "f", "false", "n", "no", "0":
				return Bool(false), nil
			}
			return Null(BoolKind), nil
		}
		return fail()
	}
	return fail()
}

// saturate is float f as an int64: truncated toward zero, NaN 0, beyond
// the int64 range its nearest bound.
func saturate(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.Exp2(63):
		return math.MaxInt64
	case f < -math.Exp2(63):
		return math.MinInt64
	}
	return int64(f) // truncates toward zero
}

// text is v as a string, as the outputs print it: integers in decimal,
// floats in the shortest form that reads back (strconv 'g' -1, as the
// sinks print them; Infinity and -Infinity), timestamps as 2006-01-02 15:04:05.000 in UTC
// (timestampText: a year past 9999 as +10000, one before 0 as -0001),
// booleans TRUE and FALSE, strings as they are.
func text(v Value) (string, error) {
	switch v.kind() {
	case IntKind:
		return strconv.FormatInt(v.I, 10), nil
	case FloatKind:
		return floatText(v.F, 64), nil
	case TimeKind:
		return timestampText(v.I), nil
	case BoolKind:
		if v.I != 0 {
			return "TRUE", nil
		}
		return "FALSE", nil
	case StringKind:
		return v.Str, nil
	}
	return "", fmt.Errorf("a %s value has no text", v.kind())
}

// castReal is v cast AS REAL: rounded to the nearest float32 once, as
// Flink's (Java's Float.parseFloat of a string, its (float) of a long),
// not through a double, which rounds twice.
func castReal(v Value) (Value, error) {
	switch v.kind() {
	case IntKind, TimeKind:
		return Float(float64(float32(v.I))), nil
	case StringKind:
		f, ok := ParseJavaFloat(v.Str, 32)
		if !ok {
			return Null(FloatKind), nil
		}
		return Float(f), nil
	}
	v, err := cast(v, query.FloatValue)
	if err == nil && !v.Null {
		v = Float(float64(float32(v.F)))
	}
	return v, err
}

// realText is the text of a value of SQL's REAL (query.IsReal): the
// shortest form that reads back as the float32 it is (0.1, where its
// float64 digits are 0.10000000149011612).
func realText(f float64) string { return floatText(float64(float32(f)), 32) }

// floatText is a float's text: the shortest form that reads back, and the
// infinities as Java (Flink) and PostgreSQL spell them.
func floatText(f float64, bitSize int) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, bitSize)
}

// trimSpaces removes the spaces (U+0020, as TRIM) around a string that is
// cast.
func trimSpaces(s string) string { return strings.Trim(s, " ") }

// parseInt reads a decimal int64, an optional sign before it, as Flink's
// CAST: a fraction of digits after a '.' is dropped (the integral part
// truncated; "-.5" and "." are 0); out of range does not parse.
func parseInt(s string) (int64, bool) {
	s = trimSpaces(s)
	if whole, frac, ok := strings.Cut(s, "."); ok {
		if strings.TrimLeft(frac, "0123456789") != "" {
			return 0, false
		}
		if whole == "" || whole == "+" || whole == "-" {
			return 0, true
		}
		s = whole
	}
	i, err := strconv.ParseInt(s, 10, 64)
	return i, err == nil
}

// javaDouble is the syntax of Java's Double.parseDouble (its
// FloatingDecimal.readJavaFormatString), which Flink's CAST to DOUBLE
// calls, once characters up to U+0020 around it are trimmed: a sign,
// then NaN or Infinity; or a decimal number with an optional exponent,
// or a hexadecimal one with its binary exponent, then an optional f, F,
// d or D. Its groups: the sign, NaN or Infinity, the number.
var javaDouble = regexp.MustCompile(`^([+-]?)(?:(NaN|Infinity)|((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?)$`)

// ParseJavaFloat reads a float as Java's Double.parseDouble (bits 64) or
// Float.parseFloat (bits 32: rounded to the float32 at once) does
// (javaDouble), as Flink's CAST of a string to DOUBLE or REAL; a number
// beyond the type's range is ±Infinity, one below its least ±0, as
// Java's. The kernels' decoder is tested against it.
func ParseJavaFloat(s string, bits int) (float64, bool) {
	m := javaDouble.FindStringSubmatch(strings.TrimFunc(s, func(r rune) bool { return r <= ' ' }))
	switch {
	case m == nil:
		return 0, false
	case m[2] == "NaN":
		return math.NaN(), true
	case m[2] == "Infinity" && m[1] == "-":
		return math.Inf(-1), true
	case m[2] == "Infinity":
		return math.Inf(1), true
	}
	f, err := strconv.ParseFloat(m[1]+m[3], bits)
	if errors.Is(err, strconv.ErrRange) {
		err = nil // ±Inf past the range
	}
	return f, err == nil
}

// timestampForm is the timestamps a string casts from, the forms the
// sources read: SQL's yyyy-MM-dd HH:mm:ss[.f...] and RFC 3339's
// yyyy-MM-ddTHH:mm:ss[.f...] (T or t, or a space, between date and time),
// with a fraction of 1 to 9 digits and an optional zone after either: Z
// or z, or an offset ±hh:mm, ±hhmm or ±hh; or a date alone, yyyy-MM-dd (its
// midnight). Without a zone a time is UTC. Digits of the fraction past
// milliseconds are dropped (the instant floored).
var timestampForm = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})(?:[ Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}(?::?\d{2})?)?)?$`)

// flinkCastForm is the other form a CAST reads, Flink's
// (DateTimeUtils.parseTimestampData): yyyy-M-d, and after a space H:m:s
// and a fraction of 0 to 9 digits, each field of one digit or two; no
// zone (its last group, empty, is timestampForm's zone).
var flinkCastForm = regexp.MustCompile(`^(\d{4})-(\d{1,2})-(\d{1,2})(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{0,9}))?)?$()`)

// parseTimestamp reads a timestamp of timestampForm or flinkCastForm, its
// fields in range (a day that its month has, hours 0-23, minutes and
// seconds 0-59, an offset below 24 hours), as milliseconds since the epoch.
func parseTimestamp(s string) (int64, bool) {
	m := timestampForm.FindStringSubmatch(trimSpaces(s))
	if m == nil {
		m = flinkCastForm.FindStringSubmatch(trimSpaces(s))
	}
	if m == nil {
		return 0, false
	}
	num := func(i int) int {
		if m[i] == "" {
			return 0
		}
		n, _ := strconv.Atoi(m[i])
		return n
	}
	year, month, day, hour, minute, sec := num(1), num(2), num(3), num(4), num(5), num(6)
	if month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return 0, false
	}
	if last := time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day(); day > last {
		return 0, false
	}
	ms := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC).UnixMilli()
	if f := m[7]; f != "" {
		f = (f + "00")[:3]
		n, _ := strconv.Atoi(f)
		ms += int64(n)
	}
	if z := m[8]; z != "" && z != "Z" && z != "z" {
		oh, _ := strconv.Atoi(z[1:3])
		om := 0
		if mm := strings.TrimPrefix(z[3:], ":"); mm != "" {
			om, _ = strconv.Atoi(mm)
		}
		if oh > 23 || om > 59 {
			return 0, false
		}
		off := int64(oh*60+om) * 60000
		if z[0] == '+' {
			ms -= off // 10:00+02:00 is 08:00 UTC
		} else {
			ms += off
		}
	}
	return ms, true
}
