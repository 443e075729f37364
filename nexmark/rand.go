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
// $1,000,000, so that each decade of prices is equally likely. 10^x is
// computed as e^(x ln 10), which is faster than math.Pow and differs from
// it in the last bits only.
func (r *rng) price() int64 {
	return int64(math.Floor(math.Exp(r.float64()*6*math.Ln10)*100 + 0.5))
}
