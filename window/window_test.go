package window

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

func TestFloorDiv(t *testing.T) {
	for _, c := range [][3]int64{{7, 2, 3}, {-7, 2, -4}, {-8, 2, -4}, {0, 5, 0}, {-1, 10000, -1}, {9999, 10000, 0}} {
		assert.Equal(t, c[2], FloorDiv(c[0], c[1]), "%d / %d", c[0], c[1])
	}
}

// TestSpecAgainstBruteForce checks the pane arithmetic against window
// membership computed by enumeration.
func TestSpecAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for range 300 {
		size := 1 + r.Int64N(50)
		slide := 1 + r.Int64N(size)
		s, err := NewSpec(query.Sliding(size, slide))
		require.NoError(t, err)
		assert.Zero(t, size%s.Pane)
		assert.Zero(t, slide%s.Pane)
		ts := r.Int64N(2000) - 1000
		p := s.PaneOf(ts)
		assert.True(t, p*s.Pane <= ts && ts < (p+1)*s.Pane)
		var wins []int64
		for w := (ts-size)/slide - 2; w <= ts/slide+2; w++ {
			if w*slide <= ts && ts < w*slide+size {
				wins = append(wins, w)
			}
		}
		require.NotEmpty(t, wins)
		assert.Equal(t, wins[0], s.FirstWindow(p), "size %d slide %d ts %d", size, slide, ts)
		assert.Equal(t, wins[len(wins)-1], s.LastWindow(p))
		assert.Equal(t, wins[0]*slide+size-1, s.Open(p))
		lo, last := s.PaneSpan(wins[0])
		assert.True(t, lo <= p && p <= last)
		assert.Equal(t, size/s.Pane-1, last-lo)
		assert.True(t, s.Accepted(ts))
		wm := ts + r.Int64N(100)
		for _, w := range wins {
			assert.Equal(t, w*slide+size <= wm, s.Closed(w, wm))
		}
	}
}

func TestNewSpecRefusesBadWindows(t *testing.T) {
	for _, w := range []query.Window{{Type: query.Range, Size: 0, Slide: 0}, {Type: query.Range, Size: 5, Slide: 6}, {Type: 9, Size: 5, Slide: 5}} {
		_, err := NewSpec(w)
		assert.Error(t, err, "%+v", w)
	}
}

func TestGroupStateMergeAndReset(t *testing.T) {
	l := &Layout{Groups: 4, Kinds: []AggKind{AggAdd, AggMin, AggMax}}
	a, b := NewGroupState(l), NewGroupState(l)
	set := func(g *GroupState, gr int32, vals ...int64) {
		g.Touched = append(g.Touched, gr)
		copy(g.Row(gr), vals)
	}
	set(a, 1, 2, 10, 3, 7)
	set(b, 1, 1, 5, 1, 9)
	set(b, 3, 4, 4, 4, 4)
	a.Merge(b)
	assert.Equal(t, []int64{3, 15, 1, 9}, a.Row(1))
	assert.Equal(t, []int64{4, 4, 4, 4}, a.Row(3))
	a.SortTouched()
	assert.Equal(t, []int32{1, 3}, a.Touched)
	a.Reset()
	assert.True(t, a.Empty())
	assert.Equal(t, make([]int64, 16), a.Vals)
	assert.Panics(t, func() { a.Merge(NewGroupState(&Layout{Groups: 4})) })
}

// TestGroupStateMergeWhole: dense states merged in the arrays' order
// (mergeWhole: g holding every group, src most of them) end as merged by
// src's groups (the oracle), over every kind, negative values and
// NaNs (where a zero row of src combined would change MIN, MAX and the
// float words), and src's rows of a count of zero skipped; states that
// do not qualify take the merge by groups.
func TestGroupStateMergeWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	kinds := []AggKind{AggAdd, AggMin, AggMax, AggAddF, AggMinF, AggMaxF}
	for round := range 300 {
		groups := 1 + r.IntN(40)
		ks := make([]AggKind, r.IntN(4))
		for i := range ks {
			ks[i] = kinds[r.IntN(len(kinds))]
		}
		l := &Layout{Groups: groups, Kinds: ks}
		fill := func(g *GroupState, share float64) {
			for gr := range int32(groups) {
				if r.Float64() >= share {
					continue
				}
				row := g.Row(gr)
				row[0] = 1 + r.Int64N(5)
				for i, k := range ks {
					if k.Float() {
						v := r.NormFloat64() * 100
						if r.IntN(20) == 0 {
							v = math.NaN()
						}
						row[i+1] = int64(math.Float64bits(v))
					} else {
						row[i+1] = r.Int64N(200) - 100
					}
				}
				g.Touched = append(g.Touched, gr)
			}
		}
		g, src := NewGroupState(l), NewGroupState(l)
		full := r.IntN(4) != 0
		share := 1.0
		if !full {
			share = r.Float64()
		}
		fill(g, share)
		fill(src, 0.2+0.8*r.Float64())
		want := NewGroupState(l)
		want.CopyFrom(g)
		for _, gr := range src.Touched { // the merge by groups, by hand
			d, s := want.Row(gr), src.Row(gr)
			if d[0] == 0 {
				want.Touched = append(want.Touched, gr)
				copy(d, s)
				continue
			}
			d[0] += s[0]
			for i, k := range ks {
				d[i+1] = k.Combine(d[i+1], s[i+1])
			}
		}
		whole := len(g.Touched) == groups && 4*len(src.Touched) >= groups
		g.Merge(src)
		for gr := range int32(groups) {
			assert.Equal(t, want.Row(gr), g.Row(gr), "round %d group %d (whole %v)", round, gr, whole)
		}
		g.SortTouched()
		want.SortTouched()
		assert.Equal(t, want.Touched, g.Touched, "round %d", round)
	}
}

func TestTaskResultReuse(t *testing.T) {
	l := &Layout{Groups: 2}
	var r TaskResult
	r.Prealloc(l, 2)
	s1 := r.Fragment(5)
	s2 := r.Fragment(6)
	assert.Same(t, s1, r.Fragment(5))
	r.AddTuples(6, 3)
	assert.Equal(t, uint64(3), r.Frags[1].Tuples)
	allocs := testing.AllocsPerRun(50, func() {
		r.Reset(l)
		r.Fragment(1)
		r.Fragment(2)
	})
	assert.Zero(t, allocs)
	_ = s2
}

// TestAggKindCombine: each kind's combination, the float ones over
// Float64bits words.
func TestAggKindCombine(t *testing.T) {
	f := func(x float64) int64 { return int64(math.Float64bits(x)) }
	for _, tc := range []struct {
		k          AggKind
		a, b, want int64
	}{
		{AggAdd, 3, -5, -2},
		{AggAdd, math.MaxInt64, 1, math.MinInt64}, // wraps, as Go's int64
		{AggMin, 3, -5, -5},
		{AggMax, 3, -5, 3},
		{AggAddF, f(1.5), f(-4), f(-2.5)},
		{AggMinF, f(1.5), f(-4), f(-4)},
		{AggMaxF, f(1.5), f(-4), f(1.5)},
		{AggMaxF, f(math.Inf(-1)), f(-4), f(-4)},
	} {
		if got := tc.k.Combine(tc.a, tc.b); got != tc.want {
			t.Errorf("kind %d: Combine(%#x, %#x) = %#x, want %#x", tc.k, tc.a, tc.b, got, tc.want)
		}
	}
}
