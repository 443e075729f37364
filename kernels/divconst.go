package kernels

import "math/bits"

// divisor divides int64s by a constant known when the query is compiled,
// without a division instruction: a multiplication by a magic number and
// shifts, as compilers do for `x / 7` (Granlund and Montgomery, "Division
// by invariant integers using multiplication"; the Go compiler's smagic).
// The quotient is Go's: truncated toward zero, MinInt64 / -1 wraps to
// MinInt64, and a divisor of 0 gives 0 (the kernels' rule, so that one bad
// tuple cannot stop the stream).
type divisor struct {
	kind  divKind
	neg   int64  // -1 when the divisor is negative (the quotient negated), else 0
	magic uint64 // ⌈2^(64+shift) / |c|⌉ (divMagic)
	shift uint   // divMagic: ⌊log2 |c|⌋; divPow2: log2 |c|
	mask  int64  // divPow2: |c| - 1
}

type divKind uint8

const (
	divZero  divKind = iota // c == 0: every quotient is 0
	divOne                  // |c| == 1
	divPow2                 // |c| a power of two above 1
	divMagic                // any other |c|
)

// newDivisor prepares the division by c.
func newDivisor(c int64) divisor {
	if c == 0 {
		return divisor{kind: divZero}
	}
	d := divisor{}
	u := uint64(c)
	if c < 0 {
		d.neg, u = -1, -u // |MinInt64| is 1<<63, a power of two
	}
	switch {
	case u == 1:
		d.kind = divOne
	case u&(u-1) == 0:
		d.kind, d.shift, d.mask = divPow2, uint(bits.TrailingZeros64(u)), int64(u-1)
	default:
		// ⌈2^(64+s) / u⌉ with 2^s < u < 2^(s+1): the high word 2^s is below
		// u, so the quotient fits in 64 bits and Div64 does not panic.
		s := uint(bits.Len64(u) - 1)
		q, _ := bits.Div64(1<<s, u-1, u)
		d.kind, d.shift, d.magic = divMagic, s, q
	}
	return d
}

// quo is x / c for one x.
func (d *divisor) quo(x int64) int64 {
	var q int64
	switch d.kind {
	case divZero:
		return 0
	case divOne:
		q = x
	case divPow2:
		q = (x + (x >> 63 & d.mask)) >> d.shift
	default:
		q = magicQuo(x, d.magic, d.shift)
	}
	return (q ^ d.neg) - d.neg
}

// magicQuo is x / u for u (not a power of two) of magic m and shift s: the
// floor of x*m / 2^(64+s), x*m taken as a 128-bit signed product (m is
// unsigned: the high word of the unsigned product, less m where x is
// negative), plus one where x is negative, which truncates toward zero.
func magicQuo(x int64, m uint64, s uint) int64 {
	hi, _ := bits.Mul64(uint64(x), m)
	h := int64(hi) - int64(m&uint64(x>>63))
	return h>>s - x>>63
}

// divAll writes a[i] / c into dst[i] for every i.
func (d *divisor) divAll(dst, a []int64) {
	a = a[:len(dst)]
	neg := d.neg
	switch d.kind {
	case divZero:
		clear(dst)
	case divOne:
		for i, x := range a {
			dst[i] = (x ^ neg) - neg
		}
	case divPow2:
		mask, s := d.mask, d.shift
		for i, x := range a {
			q := (x + (x >> 63 & mask)) >> s
			dst[i] = (q ^ neg) - neg
		}
	default:
		m, s := d.magic, d.shift
		for i, x := range a {
			q := magicQuo(x, m, s)
			dst[i] = (q ^ neg) - neg
		}
	}
}

// divSel writes a[i] / c into dst[i] for the tuples i of sel.
func (d *divisor) divSel(dst, a []int64, sel []int32) {
	neg := d.neg
	switch d.kind {
	case divZero:
		for _, i := range sel {
			dst[i] = 0
		}
	case divOne:
		for _, i := range sel {
			x := a[i]
			dst[i] = (x ^ neg) - neg
		}
	case divPow2:
		mask, s := d.mask, d.shift
		for _, i := range sel {
			x := a[i]
			q := (x + (x >> 63 & mask)) >> s
			dst[i] = (q ^ neg) - neg
		}
	default:
		m, s := d.magic, d.shift
		for _, i := range sel {
			q := magicQuo(a[i], m, s)
			dst[i] = (q ^ neg) - neg
		}
	}
}
