package window

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// bigSpec is the window arithmetic in unbounded integers: the oracle of
// Spec at the int64 edges.
type bigSpec struct{ size, slide, pane, delay *big.Int }

func newBigSpec(s Spec) bigSpec {
	return bigSpec{big.NewInt(s.Size), big.NewInt(s.Slide), big.NewInt(s.Pane), big.NewInt(s.Delay)}
}

// closes is the watermark that closes window w: its end plus the delay.
func (b bigSpec) closes(w *big.Int) *big.Int { return new(big.Int).Add(b.end(w), b.delay) }

// edgeDelays are watermark delays for s: none, small, the window's size and
// more, and near MaxInt64.
func edgeDelays(r *rand.Rand, s Spec) []int64 {
	ds := []int64{0, 1, 7, s.Size, math.MaxInt64 / 2, math.MaxInt64 - 1, math.MaxInt64, r.Int64N(1000), r.Int64()}
	if s.Size <= math.MaxInt64/3 {
		ds = append(ds, 3*s.Size-1)
	}
	return ds
}

var (
	bigMin = big.NewInt(math.MinInt64)
	bigMax = big.NewInt(math.MaxInt64)
)

// floorDiv is a/b rounded down (b > 0).
func floorDiv(a, b *big.Int) *big.Int {
	q, _ := new(big.Int).DivMod(a, b, new(big.Int)) // Euclidean: floor for b > 0
	return q
}

// windows returns the first and last windows containing position x.
func (b bigSpec) windows(x int64) (first, last *big.Int) {
	bx := big.NewInt(x)
	first = floorDiv(new(big.Int).Sub(bx, b.size), b.slide)
	first.Add(first, big.NewInt(1))
	return first, floorDiv(bx, b.slide)
}

func (b bigSpec) start(w *big.Int) *big.Int { return new(big.Int).Mul(w, b.slide) }
func (b bigSpec) end(w *big.Int) *big.Int   { return new(big.Int).Add(b.start(w), b.size) }

// accepted: the first window containing x starts at an int64.
func (b bigSpec) accepted(x int64) bool {
	first, _ := b.windows(x)
	return b.start(first).Cmp(bigMin) >= 0
}

func capMax(v *big.Int) int64 {
	if v.Cmp(bigMax) > 0 {
		return math.MaxInt64
	}
	if !v.IsInt64() {
		panic("below the int64 range: " + v.String())
	}
	return v.Int64()
}

// edgePositions are positions near both ends of int64, near zero, and
// around the spec's Lowest, plus random ones.
func edgePositions(r *rand.Rand, s Spec) []int64 {
	var xs []int64
	for d := int64(0); d < 4; d++ {
		xs = append(xs, math.MinInt64+d, math.MaxInt64-d, d-2)
	}
	span := int64(math.MaxInt64)
	if s.Size < span/3 {
		span = 3 * s.Size
	}
	for range 6 {
		xs = append(xs, math.MinInt64+r.Int64N(span), math.MaxInt64-r.Int64N(span), int64(r.Uint64()))
	}
	lo := s.Lowest()
	for d := int64(-2); d <= 2; d++ {
		if x := lo + d; (d < 0) == (x < lo) { // no wrap
			xs = append(xs, x)
		}
	}
	return xs
}

// edgeSpecs are specs of every shape: tiny, YSB's, random, and sizes near
// MaxInt64.
func edgeSpecs(r *rand.Rand) []Spec {
	ws := []query.Window{
		query.Tumbling(1), query.Tumbling(10000), query.Sliding(20000, 10000), query.Sliding(7, 3), query.Sliding(9, 1),
		query.Tumbling(math.MaxInt64), query.Sliding(math.MaxInt64, 1), query.Sliding(math.MaxInt64, math.MaxInt64/7),
		query.Sliding(math.MaxInt64-1, (math.MaxInt64-1)/2), query.Tumbling(1 << 62), query.Sliding(3<<61, 1<<61),
	}
	for range 40 {
		size := 1 + r.Int64N(1000)
		if r.IntN(4) == 0 {
			size = 1 + r.Int64N(math.MaxInt64)
		}
		slide := size
		if r.IntN(2) == 0 {
			slide = 1 + r.Int64N(size)
		}
		ws = append(ws, query.Sliding(size, slide))
	}
	var specs []Spec
	for _, w := range ws {
		s, err := NewSpec(w)
		if err != nil {
			panic(err)
		}
		specs = append(specs, s)
	}
	return specs
}

// TestSpecAtTheEdges: every method of Spec against unbounded arithmetic, at
// positions near MinInt64, MaxInt64, zero and Lowest, for window sizes up to
// MaxInt64.
//
// Each spec runs with watermark delays from 0 to MaxInt64 (edgeDelays):
// Open and Closed shift by the delay, saturating, never wrapping.
func TestSpecAtTheEdges(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	for _, s0 := range edgeSpecs(r) {
		for _, d := range edgeDelays(r, s0) {
			s := s0
			s.Delay = d
			testSpecAtTheEdges(t, r, s)
		}
	}
}

func testSpecAtTheEdges(t *testing.T, r *rand.Rand, s Spec) {
	t.Helper()
	{
		b := newBigSpec(s)
		// Lowest is the smallest accepted position.
		lo := s.Lowest()
		assert.True(t, b.accepted(lo), "%+v: Lowest %d accepted", s, lo)
		if lo > math.MinInt64 {
			assert.False(t, b.accepted(lo-1), "%+v: Lowest-1 refused", s)
		}
		assert.Equal(t, s.PaneOf(lo), s.LowestPane(), "%+v", s)
		assert.Equal(t, lo, s.PaneStart(s.LowestPane()), "%+v: Lowest starts a pane", s)
		for _, x := range edgePositions(r, s) {
			p := s.PaneOf(x)
			acc := b.accepted(x)
			require.Equal(t, acc, s.Accepted(x), "%+v x %d", s, x)
			require.Equal(t, acc, p >= s.LowestPane(), "%+v x %d", s, x)
			// The pane's bounds.
			bp := big.NewInt(p)
			pstart := new(big.Int).Mul(bp, b.pane)
			plast := new(big.Int).Add(pstart, new(big.Int).Sub(b.pane, big.NewInt(1)))
			require.True(t, pstart.Cmp(big.NewInt(x)) <= 0 && plast.Cmp(big.NewInt(x)) >= 0)
			assert.Equal(t, capMax(plast), s.PaneLast(p), "%+v x %d", s, x)
			if !acc {
				continue
			}
			assert.Equal(t, pstart.Int64(), s.PaneStart(p), "%+v x %d", s, x)
			first, last := b.windows(x)
			require.True(t, first.IsInt64() && last.IsInt64())
			assert.Equal(t, first.Int64(), s.FirstWindow(p), "%+v x %d", s, x)
			assert.Equal(t, last.Int64(), s.LastWindow(p), "%+v x %d", s, x)
			open := new(big.Int).Sub(b.closes(first), big.NewInt(1))
			assert.Equal(t, capMax(open), s.Open(p), "%+v x %d", s, x)
			for _, w := range []*big.Int{first, last} {
				wi := w.Int64()
				assert.Equal(t, b.start(w).Int64(), s.Start(wi))
				assert.Equal(t, capMax(b.end(w)), s.End(wi), "%+v window %d", s, wi)
				plo, plast := s.PaneSpan(wi)
				assert.Equal(t, floorDiv(b.start(w), b.pane).Int64(), plo)
				wantLast := floorDiv(new(big.Int).Sub(b.end(w), big.NewInt(1)), b.pane)
				if top := big.NewInt(s.PaneOf(math.MaxInt64)); wantLast.Cmp(top) > 0 {
					wantLast = top
				}
				assert.Equal(t, wantLast.Int64(), plast, "%+v window %d", s, wi)
				assert.True(t, plo <= p && p <= plast)
				c := capMax(b.closes(w))
				for _, wm := range []int64{math.MinInt64, x, math.MaxInt64 - 1, math.MaxInt64, capMax(b.end(w)), capMax(b.end(w)) - 1, c, c - 1} {
					assert.Equal(t, b.closes(w).Cmp(big.NewInt(wm)) <= 0, s.Closed(wi, wm), "%+v window %d wm %d", s, wi, wm)
				}
				// Open and Closed agree: a pane is sealed exactly when its
				// first window is closed.
				if w == first {
					assert.False(t, s.Closed(wi, s.Open(p)), "%+v pane %d", s, p)
					if o := s.Open(p); o < math.MaxInt64 {
						assert.True(t, s.Closed(wi, o+1), "%+v pane %d", s, p)
					}
				}
			}
		}
	}
}

// TestSpecIssue12: the cases of issue 12. YSB's 10 s tumbling windows: the
// topmost window never closes and holds both of its tuples; -9223372036854770000
// starts its own window; MinInt64 is refused.
func TestSpecIssue12(t *testing.T) {
	s, err := NewSpec(query.Tumbling(10000))
	require.NoError(t, err)
	top := s.PaneOf(math.MaxInt64 - 100)
	assert.Equal(t, top, s.PaneOf(math.MaxInt64-50))
	assert.Equal(t, int64(math.MaxInt64), s.Open(top), "no watermark closes the topmost window")
	assert.Equal(t, int64(math.MaxInt64), s.PaneLast(top))
	assert.False(t, s.Closed(s.FirstWindow(top), math.MaxInt64))
	assert.Equal(t, int64(math.MaxInt64/10000*10000), s.Start(s.FirstWindow(top)))

	const low = -9223372036854770000 // a multiple of 10000
	assert.True(t, s.Accepted(low))
	assert.Equal(t, int64(low), s.Start(s.FirstWindow(s.PaneOf(low))))
	assert.Equal(t, int64(low), s.Lowest())
	assert.False(t, s.Accepted(low-1))
	assert.False(t, s.Accepted(math.MinInt64))

	// [0, MaxInt64]: the top row's window holds MaxInt64.
	assert.Equal(t, s.FirstWindow(top), s.FirstWindow(s.PaneOf(math.MaxInt64)))
	// Sliding: the first of two windows must start at an int64.
	sl, err := NewSpec(query.Sliding(20000, 10000))
	require.NoError(t, err)
	assert.False(t, sl.Accepted(low))
	assert.True(t, sl.Accepted(low+10000))
}

// TestSpecDelay: a watermark delay postpones closing and sealing by the
// delay, and a negative one is refused.
func TestSpecDelay(t *testing.T) {
	w := query.Tumbling(10)
	w.Delay = 5
	s, err := NewSpec(w)
	require.NoError(t, err)
	assert.Equal(t, int64(5), s.Delay)
	assert.False(t, s.Closed(0, 14), "[0, 10) with delay 5 is open at watermark 14")
	assert.True(t, s.Closed(0, 15), "and closes at 15")
	assert.Equal(t, int64(14), s.Open(0))
	assert.Equal(t, int64(24), s.Open(1))

	sl := query.Sliding(10, 5)
	sl.Delay = 3
	s, err = NewSpec(sl)
	require.NoError(t, err)
	// Pane 1 is [5, 10); its first window is [0, 10), closed at 13.
	assert.Equal(t, int64(12), s.Open(1))
	assert.False(t, s.Closed(0, 12))
	assert.True(t, s.Closed(0, 13))

	rows := query.Window{Type: query.Rows, Size: 4, Slide: 4, Delay: 100}
	s, err = NewSpec(rows)
	require.NoError(t, err)
	assert.Equal(t, int64(103), s.Open(0))

	// Saturated: the end plus the delay past MaxInt64 is reached by no
	// watermark.
	top := query.Tumbling(10)
	top.Delay = math.MaxInt64 - 15
	s, err = NewSpec(top)
	require.NoError(t, err)
	assert.Equal(t, int64(math.MaxInt64-6), s.Open(0), "10-1 + MaxInt64-15")
	assert.False(t, s.Closed(0, math.MaxInt64-6))
	assert.True(t, s.Closed(0, math.MaxInt64-5))
	assert.Equal(t, int64(math.MaxInt64), s.Open(1), "20-1 + MaxInt64-15 saturates")
	assert.False(t, s.Closed(1, math.MaxInt64))
	assert.False(t, s.Closed(-1, math.MinInt64), "MinInt64 minus a delay does not wrap")
	// The lowest window [-9223372036854775800, -9223372036854775790)
	// closes at its end plus MaxInt64-15: 2.
	assert.False(t, s.Closed(math.MinInt64/10, 1))
	assert.True(t, s.Closed(math.MinInt64/10, 2))

	for _, w := range []query.Window{{Type: query.Range, Size: 10, Slide: 10, Delay: -1}, {Type: query.Rows, Size: 3, Slide: 1, Delay: math.MinInt64}} {
		_, err := NewSpec(w)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "watermark delay")
		assert.Contains(t, err.Error(), "negative")
	}
}
