package source

import (
	"bytes"
	"math"
	"math/bits"

	"github.com/saber-hx/saber-hx/temporal"
)

// parseBool reads true or false (any case), 1 or 0: 1 or 0.
func parseBool(s []byte) (uint32, bool) {
	switch len(s) {
	case 1:
		if s[0] == '1' {
			return 1, true
		}
		if s[0] == '0' {
			return 0, true
		}
	case 4:
		// |0x20 folds 'A'-'Z' to 'a'-'z' and maps nothing else to a
		// letter of "true".
		if le.Uint32(s)|0x20202020 == le.Uint32([]byte("true")) {
			return 1, true
		}
	case 5:
		if le.Uint32(s)|0x20202020 == le.Uint32([]byte("fals")) && s[4]|0x20 == 'e' {
			return 0, true
		}
	}
	return 0, false
}

// parseTime reads a Timestamp's text: an epoch number in unit (an
// optional sign, digits, optionally '.' and digits) or a time that
// temporal.ParseTimestamp reads; milliseconds since the epoch, the
// epoch's fraction of a millisecond dropped toward negative infinity.
// overflow: a number out of int64 milliseconds.
// dates, where not nil, is the column's last date (temporal.DateCache).
func parseTime(s []byte, unit TimeUnit, dates *temporal.DateCache) (ms int64, ok, overflow bool) {
	if len(s) > 4 && s[4] == '-' { // yyyy-: a date
		v, ok := dates.ParseTimestamp(s)
		return v, ok, false
	}
	if v, isNum, ovf := parseEpoch(s, unit); isNum {
		return v, !ovf, ovf
	}
	v, ok := dates.ParseTimestamp(s)
	return v, ok, false
}

// epochMul: how many milliseconds one unit is (seconds, milliseconds);
// epochDrop: how many decimal digits of a number in unit are below a
// millisecond (microseconds 3, nanoseconds 6).
var epochMul = [...]uint64{Milliseconds: 1, Seconds: 1000, Microseconds: 1, Nanoseconds: 1}
var epochDrop = [...]int{Microseconds: 3, Nanoseconds: 6}

// parseEpoch reads an epoch number in unit: isNum false if s is not one
// (then it may be a time's text).
func parseEpoch(s []byte, unit TimeUnit) (ms int64, isNum, overflow bool) {
	i := 0
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		i = 1
	}
	start := i
	for ; i < len(s) && s[i]-'0' <= 9; i++ {
	}
	if i == start {
		return 0, false, false
	}
	digits := s[start:i]
	frac := s[i:i]
	if i < len(s) {
		if s[i] != '.' {
			return 0, false, false
		}
		f0 := i + 1
		for i = f0; i < len(s) && s[i]-'0' <= 9; i++ {
		}
		if i == f0 || i != len(s) {
			return 0, false, false
		}
		frac = s[f0:i]
	}
	// whole: the magnitude in whole milliseconds; rem: a fraction of one
	// is left over.
	var whole uint64
	rem := false
	if drop := epochDrop[unit]; drop > 0 {
		// Microseconds and nanoseconds: the digits but the last 3 or 6
		// are the milliseconds, so that a number past uint64 whose
		// milliseconds fit is read (2e19 ns is in the year 2603).
		cut := max(len(digits)-drop, 0)
		u, ovf := digitsValue(digits[:cut])
		if ovf {
			return 0, true, true
		}
		whole, rem = u, nonzero(digits[cut:]) || nonzero(frac)
	} else {
		u, ovf := digitsValue(digits)
		if ovf {
			return 0, true, true
		}
		// Seconds: the fraction's first 3 digits are milliseconds.
		var f3 uint64
		var msDigits []byte
		if unit == Seconds {
			msDigits = frac[:min(3, len(frac))]
			for k := range 3 {
				f3 *= 10 // .5 s is 500 ms
				if k < len(msDigits) {
					f3 += uint64(msDigits[k] - '0')
				}
			}
		}
		hi, lo := bits.Mul64(u, epochMul[unit])
		var c uint64
		whole, c = bits.Add64(lo, f3, 0)
		if hi != 0 || c != 0 {
			return 0, true, true
		}
		rem = nonzero(frac[len(msDigits):])
	}
	if !neg {
		if whole > math.MaxInt64 {
			return 0, true, true
		}
		return int64(whole), true, false
	}
	if rem {
		whole++ // floor: -1.5 ms is -2 ms
	}
	if whole > 1<<63 {
		return 0, true, true
	}
	return int64(-whole), true, false
}

// digitsValue is the value of decimal digits (0 for none); overflow past
// uint64.
func digitsValue(digits []byte) (u uint64, overflow bool) {
	for _, c := range digits {
		d := uint64(c - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, true
		}
		u = u*10 + d
	}
	return u, false
}

// epochInt is the integer epoch v in unit as milliseconds (floor); false
// if they overflow.
func epochInt(v int64, unit TimeUnit) (int64, bool) {
	switch unit {
	case Seconds:
		if v > math.MaxInt64/1000 || v < math.MinInt64/1000 {
			return 0, false
		}
		return v * 1000, true
	case Microseconds:
		return floorDiv(v, 1000), true
	case Nanoseconds:
		return floorDiv(v, 1000000), true
	}
	return v, true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func nonzero(digits []byte) bool {
	for _, c := range digits {
		if c != '0' {
			return true
		}
	}
	return false
}

// SWAR (8 bytes at a time) helpers, bytes in a uint64 little-endian.
// For y = x^c (c < 0x80), (y - ones) has a byte's high bit set where x's
// byte is c, or above it after a borrow, or where x's byte is 0x81 or
// more; &^x drops the latter. Borrows only go up from a byte that matched:
// the lowest flagged byte is the first match.

// jsonStop is the index in s of the first '"', '\\' or control byte
// (< 0x20), len(s) if none.
func jsonStop(s []byte) int {
	const q, bs, ctl = '"' * ones, '\\' * ones, 0x20 * ones
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := le.Uint64(s[i:])
		if m := ((x ^ q - ones) | (x ^ bs - ones) | (x - ctl)) &^ x & high; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return len(s)
}

// indexComma is bytes.IndexByte(s, c), faster on the short fields of a
// CSV record: a word at a time before the call (for c < 0x80).
func indexComma(s []byte, c byte) int {
	if c >= 0x80 {
		return bytes.IndexByte(s, c)
	}
	cc := uint64(c) * ones
	i := 0
	for ; i+8 <= len(s) && i < 64; i += 8 {
		x := le.Uint64(s[i:])
		if m := (x ^ cc - ones) &^ x & high; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	if i+8 > len(s) {
		for ; i < len(s); i++ {
			if s[i] == c {
				return i
			}
		}
		return -1
	}
	if j := bytes.IndexByte(s[i:], c); j >= 0 {
		return i + j
	}
	return -1
}
