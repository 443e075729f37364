package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// goQuo is the oracle: Go's `/`, with the kernels' 0 for a zero divisor.
func goQuo(x, c int64) int64 {
	if c == 0 {
		return 0
	}
	return x / c
}

// edgeInts are the values next to every power of two, either sign, and the
// extremes: where a magic number's rounding error would show first.
func edgeInts() []int64 {
	vals := []int64{0, math.MinInt64, math.MinInt64 + 1, math.MaxInt64, math.MaxInt64 - 1,
		math.MinInt32, math.MinInt32 - 1, math.MinInt32 + 1, math.MaxInt32, math.MaxInt32 + 1, math.MaxInt32 - 1}
	for s := range 63 {
		p := int64(1) << s
		for _, v := range []int64{p - 1, p, p + 1} {
			vals = append(vals, v, -v)
		}
	}
	for v := int64(-1100); v <= 1100; v++ {
		vals = append(vals, v)
	}
	return vals
}

// divisorsUnderTest: every small divisor, the edges, and their multiples
// near the dividends' edges.
func divisorsUnderTest(r *rand.Rand) []int64 {
	cs := edgeInts()
	for _, c := range []int64{3, 5, 7, 10, 1000, 1001, 641, 6700417, 1e9 + 7, 1e18 + 9} {
		cs = append(cs, c, -c, math.MaxInt64/c, -(math.MaxInt64 / c), math.MaxInt64/c+1)
	}
	for range 2000 {
		cs = append(cs, int64(r.Uint64()), r.Int64N(1<<20)-1<<19, int64(r.Uint64()>>r.IntN(64)))
	}
	return cs
}

// TestDivisorMatchesGo: the magic-number quotient (one value, a chunk, a
// selection) equals Go's `/` for every divisor under test against every
// edge dividend, the multiples of the divisor and their neighbours, and
// random dividends.
func TestDivisorMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 6))
	edges := edgeInts()
	xs := make([]int64, 0, len(edges)+64)
	for _, c := range divisorsUnderTest(r) {
		d := newDivisor(c)
		xs = append(xs[:0], edges...)
		for range 32 {
			// q*c-1, q*c, q*c+1 for a random quotient q in range.
			var q int64
			if c != 0 {
				q = int64(r.Uint64N(uint64(math.MaxInt64)/absU64(c)+1)) * []int64{1, -1}[r.IntN(2)]
			}
			xs = append(xs, q*c-1, q*c, q*c+1, int64(r.Uint64()))
		}
		for _, x := range xs {
			if got, want := d.quo(x), goQuo(x, c); got != want {
				t.Fatalf("%d / %d: quo %d, Go %d", x, c, got, want)
			}
		}
		all := make([]int64, len(xs))
		d.divAll(all, xs)
		sel := make([]int32, 0, len(xs))
		for i := range xs {
			if i%3 != 1 {
				sel = append(sel, int32(i))
			}
		}
		some := make([]int64, len(xs))
		d.divSel(some, xs, sel)
		for i, x := range xs {
			want := goQuo(x, c)
			if all[i] != want {
				t.Fatalf("%d / %d: divAll %d, Go %d", x, c, all[i], want)
			}
			if i%3 != 1 && some[i] != want {
				t.Fatalf("%d / %d: divSel %d, Go %d", x, c, some[i], want)
			}
		}
	}
}

// TestDivisorInt32Exhaustive: for the divisors SELECT_n uses and a few
// others, every int32 dividend within 2^20 of zero and of either end, all of
// them sign-extended, as the int32 columns are loaded.
func TestDivisorInt32Exhaustive(t *testing.T) {
	if testing.Short() {
		t.Skip("exhaustive over 2^22 dividends per divisor")
	}
	for _, c := range []int64{1000, 1001, 1029, -1000, 7, -3, 1 << 10, math.MaxInt32, math.MinInt32} {
		d := newDivisor(c)
		for _, base := range []int64{math.MinInt32, -1 << 20, math.MaxInt32 - 1<<21 + 1} {
			for x := base; x < base+1<<21 && x <= math.MaxInt32; x++ {
				if got := d.quo(x); got != x/c {
					t.Fatalf("%d / %d: quo %d, Go %d", x, c, got, x/c)
				}
			}
		}
	}
}

func absU64(x int64) uint64 {
	if x < 0 {
		return -uint64(x)
	}
	return uint64(x)
}

// FuzzDivisor: any dividend by any divisor, as Go's `/`.
func FuzzDivisor(f *testing.F) {
	for _, seed := range [][2]int64{{7, 3}, {math.MinInt64, -1}, {math.MinInt64, math.MinInt64}, {-1, 1000}, {math.MaxInt64, 6700417}, {5, 0}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, x, c int64) {
		d := newDivisor(c)
		got := []int64{0}
		d.divAll(got, []int64{x})
		assert.Equal(t, goQuo(x, c), d.quo(x), "%d / %d", x, c)
		assert.Equal(t, goQuo(x, c), got[0], "%d / %d, divAll", x, c)
	})
}

// TestDivisorKinds: the divisor of each kind is recognised (so that the
// tests above cover every loop).
func TestDivisorKinds(t *testing.T) {
	for c, k := range map[int64]divKind{0: divZero, 1: divOne, -1: divOne, 2: divPow2, -8: divPow2, math.MinInt64: divPow2, 3: divMagic, -1000: divMagic, math.MaxInt64: divMagic} {
		require.Equal(t, k, newDivisor(c).kind, "divisor %d", c)
	}
}

// TestDivideByConstantExpr: `column / constant` compiles to a divisor and,
// over every tuple or a selection, int32 and int64 columns, gives Go's
// quotient of the loaded value.
func TestDivideByConstantExpr(t *testing.T) {
	const ts = 24 // a int32 at 8, b int64 at 16
	s, err := query.NewSchema(ts, query.Attribute{Name: "ts", Type: query.Int64}, query.Attribute{Name: "a", Type: query.Int32, Offset: 8}, query.Attribute{Name: "b", Type: query.Int64, Offset: 16})
	require.NoError(t, err)
	vals := edgeInts()[:200]
	n := len(vals)
	data := make([]byte, n*ts)
	for i, v := range vals {
		binary.LittleEndian.PutUint32(data[i*ts+8:], uint32(int32(v)))
		binary.LittleEndian.PutUint64(data[i*ts+16:], uint64(v))
	}
	var odd []int32
	for i := 1; i < n; i += 2 {
		odd = append(odd, int32(i))
	}
	all := make([]int32, n)
	for i := range all {
		all[i] = int32(i)
	}
	for _, c := range []int64{0, 1, -1, 2, -2, 3, 1000, -1000, 1 << 40, math.MinInt64, math.MaxInt64} {
		for _, col := range []string{"a", "b"} {
			for _, sel := range [][]int32{all, odd} {
				e := query.Div(query.C(col), query.Int(c))
				v, err := compileExpr(e, s)
				require.NoError(t, err)
				require.True(t, v.divide, "%v", e)
				v.eval(data, ts, sel)
				for _, i := range sel {
					x := vals[i]
					if col == "a" {
						x = int64(int32(x))
					}
					assert.Equal(t, goQuo(x, c), v.ints[i], "%v, tuple %d (%d)", e, i, x)
				}
			}
		}
	}
}
