package nexmark

import (
	"math"
	"math/bits"
)

// rng is SplitMix64 (Steele, Lea and Flood, 2014): a 64-bit counter
// advanced by the golden gamma and mixed by two multiply-xorshift rounds.
// It is the generator under Java's SplittableRandom, which the Nexmark
// project draws from; here every event has its own stream (see seedEvent),
// so that any event can be generated on its own.
type rng struct{ s uint64 }

const golden = 0x9e3779b97f4a7c15

func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// seedEvent starts the stream of the event with event id id.
func (r *rng) seedEvent(seed uint64, id int64) {
	r.s = mix64(seed^mix64(uint64(id)+golden)) + golden
}

func (r *rng) next() uint64 {
	r.s += golden
	return mix64(r.s)
}

// intn is uniform in [0, n) for n > 0 (Lemire's multiply-shift with
// rejection: no modulo bias).
func (r *rng) intn(n int64) int64 {
	un := uint64(n)
	hi, lo := bits.Mul64(r.next(), un)
	if lo < un {
		t := -un % un
		for lo < t {
			hi, lo = bits.Mul64(r.next(), un)
		}
	}
	return int64(hi)
}

// int32 is 32 random bits as a signed int, as Java's nextInt().
func (r *rng) int32() int32 { return int32(uint32(r.next() >> 32)) }

// float64 is uniform in [0, 1) with 53 random bits, as Java's nextDouble().
func (r *rng) float64() float64 { return float64(r.next()>>11) * 0x1p-53 }

// price is Nexmark's price in cents (PriceGenerator.nextPrice):
// round(10^(6u) * 100) for u uniform in [0, 1): log-uniform from $1 to
// $1,000,000, so that each decade of prices is equally likely.
//
// 10^(6u) is computed from a table of 10^(k/512) and a fifth-degree Taylor
// polynomial of 10^r for the rest r < 1/512, to about one part in 10^15,
// which math.Pow (Java's Math.pow likewise) needs several times as long
// for: the two round to different cents only where the exact value lies
// within 10^-7 of half a cent.
func (r *rng) price() int64 { return priceOf(r.next() >> 11) }

// priceOf is the price for u = m / 2^53.
func priceOf(m uint64) int64 {
	hi, lo := bits.Mul64(m, 6*powSteps)
	// 6u*powSteps = k + f with k = (hi:lo) >> 53, f the 53 bits below.
	k := hi<<11 | lo>>53
	f := float64(lo&(1<<53-1)) * 0x1p-53
	y := f * (math.Ln10 / powSteps)
	p := tenPow[k] * (1 + y*(1+y*(1.0/2+y*(1.0/6+y*(1.0/24+y*(1.0/120))))))
	return int64(math.Floor(p*100 + 0.5))
}

// powSteps is the table's steps per decade.
const powSteps = 512

// tenPow[k] is 10^(k/powSteps).
var tenPow = func() (t [6*powSteps + 1]float64) {
	for k := range t {
		t[k] = math.Pow(10, float64(k)/powSteps)
	}
	return t
}()
