package kernels

import (
	"math"
	"strconv"
	"unsafe"
)

// parseJavaFloat reads b as Java's Double.parseDouble does (bits 64),
// which Flink's CAST of a string to DOUBLE calls, or as Float.parseFloat
// does (bits 32), which its CAST to REAL calls: the text rounded to the
// nearest float32 at once (rounded to a double first, a text whose
// double lands on the tie of two float32s would round twice, to the
// wrong one). Characters up to U+0020 around it are ignored; then an
// optional sign and NaN or Infinity, spelt so, or a number: decimal
// (digits with at most one '.', one digit at least, and an optional
// exponent, e or E, a sign and digits) or hexadecimal (0x or 0X, hex
// digits with at most one '.', one at least, and an exponent, p or P, a
// sign and digits), with an optional f, F, d or D after it. A number past
// the type's range is ±Infinity, one below its least ±0, as Java's.
// Anything else does not parse.
func parseJavaFloat(b []byte, bits int) (float64, bool) {
	for len(b) > 0 && b[0] <= ' ' {
		b = b[1:]
	}
	for len(b) > 0 && b[len(b)-1] <= ' ' {
		b = b[:len(b)-1]
	}
	i := 0
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		i = 1
	}
	switch w := b[i:]; {
	case string(w) == "NaN":
		return math.NaN(), true
	case string(w) == "Infinity":
		if b[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	hex := len(b)-i > 2 && b[i] == '0' && b[i+1]|0x20 == 'x'
	if hex {
		i += 2
	}
	digits, dot := 0, false
	for ; i < len(b); i++ {
		c := b[i]
		if c >= '0' && c <= '9' || hex && c|0x20 >= 'a' && c|0x20 <= 'f' {
			digits++
		} else if c == '.' && !dot {
			dot = true
		} else {
			break
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(b) && (!hex && b[i]|0x20 == 'e' || hex && b[i]|0x20 == 'p') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		from := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == from {
			return 0, false
		}
	} else if hex {
		return 0, false
	}
	end := i
	if i < len(b) {
		switch b[i] {
		case 'f', 'F', 'd', 'D':
			i++
		}
	}
	if i != len(b) {
		return 0, false
	}
	// What is left is in strconv's syntax too; past the range it gives
	// ±Inf and ErrRange (its error copies the text it quotes).
	f, err := strconv.ParseFloat(unsafe.String(&b[0], end), bits)
	if err != nil && err.(*strconv.NumError).Err != strconv.ErrRange {
		return 0, false
	}
	return f, true
}
