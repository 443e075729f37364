package window

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var invertibleKinds = []AggKind{AggAdd, AggAddF}

// TestRunningSumFloatSums: with float sums of arbitrary values, the
// running sum (add the entering pane, subtract the leaving one) agrees
// with the full merge within a tolerance, over windows long enough for
// rebuilds, with groups coming and going.
func TestRunningSumFloatSums(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for c := range 20 {
		s := Spec{Size: 1 + r.Int64N(40), Slide: 1, Pane: 1}
		l := &Layout{Groups: 6, Hashed: c%2 == 0, Kinds: invertibleKinds}
		a, ref := NewAssembler(s, l), newRefAssembler(s, l)
		require.NotNil(t, a.sum, "an invertible layout slides by a running sum")
		var got, want []winOut
		now := int64(0)
		var res TaskResult
		for range 400 {
			genTask(r, s, l, &res, &now, false)
			require.NoError(t, a.Merge(&res, collect(&got)))
			require.NoError(t, ref.Merge(&res, collect(&want)))
		}
		require.NoError(t, a.Flush(collect(&got)))
		require.NoError(t, ref.Flush(collect(&want)))
		require.Equal(t, ref.Counters, a.Counters)
		require.Equal(t, len(want), len(got))
		for i := range want {
			require.Equal(t, want[i].w, got[i].w)
			require.Equal(t, len(want[i].rows), len(got[i].rows), "window %d", want[i].w)
			for j, wr := range want[i].rows {
				gr := got[i].rows[j]
				require.Equal(t, [2]uint64{wr.k0, wr.k1}, [2]uint64{gr.k0, gr.k1})
				require.Equal(t, wr.vals[:2], gr.vals[:2], "count and integer sum are exact")
				x, y := math.Float64frombits(uint64(wr.vals[2])), math.Float64frombits(uint64(gr.vals[2]))
				assert.InDelta(t, x, y, 1e-9*max(1, math.Abs(x)), "window %d row %d", want[i].w, j)
			}
		}
	}
}

// TestRunningSumCostPerWindow: sliding a window of 3600 panes by one pane
// merges about one pane in and subtracts one out per window, and the
// running state stays in key order from window to window.
func TestRunningSumCostPerWindow(t *testing.T) {
	const panes = 3600
	s := Spec{Size: panes, Slide: 1, Pane: 1}
	for _, hashed := range []bool{false, true} {
		l := &Layout{Groups: 64, Hashed: hashed, Kinds: invertibleKinds}
		a := NewAssembler(s, l)
		var res TaskResult
		sorted, windows := 0, 0
		emit := func(o *Result) error {
			windows++
			return nil
		}
		p := int64(0)
		for ; p < panes; p++ {
			slidingTask(s, l, &res, p, 64)
			require.NoError(t, a.Merge(&res, emit))
		}
		w0, m0, s0 := windows, a.sum.merges, a.sum.subtracts
		for range 2 * panes {
			slidingTask(s, l, &res, p, 64)
			p++
			require.NoError(t, a.Merge(&res, emit))
			st := a.sum.query()
			if st != nil && isSorted(st) {
				sorted++
			}
		}
		n := float64(windows - w0)
		require.Greater(t, n, float64(panes))
		merges := float64(a.sum.merges-m0) / n
		subtracts := float64(a.sum.subtracts-s0) / n
		t.Logf("hashed %v: per window of %d panes sliding by 1: %.3f merges, %.3f subtractions", hashed, panes, merges, subtracts)
		assert.Less(t, merges, 1.2, "hashed %v", hashed)
		assert.Less(t, subtracts, 1.01, "hashed %v", hashed)
		assert.Equal(t, 2*panes, sorted, "hashed %v: the running state stays sorted", hashed)
	}
}

func isSorted(st *GroupState) bool {
	for i := 1; i < len(st.Touched); i++ {
		if st.Layout().Hashed {
			if st.compareKeys(st.Touched[i-1], st.Touched[i]) > 0 {
				return false
			}
		} else if st.Touched[i-1] > st.Touched[i] {
			return false
		}
	}
	return true
}

// TestRunningSumAllocatesNothing: groups come and go (DropEmpty rebuilds
// the hashed table into its spare arrays) without allocating.
func TestRunningSumAllocatesNothing(t *testing.T) {
	for _, hashed := range []bool{false, true} {
		s := Spec{Size: 20, Slide: 2, Pane: 2}
		l := &Layout{Groups: 64, Hashed: hashed, Kinds: invertibleKinds}
		a := NewAssembler(s, l)
		var res TaskResult
		res.Prealloc(l, 2)
		rows := 0
		emit := func(o *Result) error { rows += len(o.Rows); return nil }
		p := int64(0)
		step := func() {
			slidingTask(s, l, &res, p, 48+int(p%16))
			p++
			if err := a.Merge(&res, emit); err != nil {
				panic(err)
			}
		}
		for range 500 {
			step()
		}
		allocs := testing.AllocsPerRun(500, step)
		assert.Zero(t, allocs, "hashed %v", hashed)
		assert.Positive(t, rows)
	}
}
