package window

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// randomState returns a state of l with a few random groups.
func randomState(r *rand.Rand, l *Layout) *GroupState {
	st := NewGroupState(l)
	for range r.IntN(6) {
		addTuple(r, st, r.IntN(12), true)
	}
	return st
}

// addTuple aggregates one random tuple into st: group g for dense layouts,
// key g for hashed ones. exact keeps float values multiples of 1/8, so that
// float sums do not depend on their association.
func addTuple(r *rand.Rand, st *GroupState, g int, exact bool) {
	l := st.Layout()
	var gr int32
	if l.Hashed {
		gr = st.Lookup(uint64(g), uint64(g%3))
	} else {
		gr = int32(g % l.Groups)
	}
	row := st.Row(gr)
	first := row[0] == 0
	if first && !l.Hashed {
		st.Touched = append(st.Touched, gr)
	}
	row[0]++
	for i, k := range l.Kinds {
		var v int64
		switch {
		case !k.Float():
			v = r.Int64N(2000) - 1000
		case exact:
			v = floatWord(float64(r.IntN(4000)-2000) / 8)
		default:
			v = floatWord(r.NormFloat64() * 1000)
		}
		if first {
			row[i+1] = v
		} else {
			row[i+1] = k.Combine(row[i+1], v)
		}
	}
}

var allKinds = []AggKind{AggAdd, AggMin, AggMax, AggAddF, AggMinF, AggMaxF}

// TestTwoStacksAgainstFullMerge checks every query of random push/pop
// sequences against merging the panes held, oldest first.
func TestTwoStacksAgainstFullMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for _, hashed := range []bool{false, true} {
		l := &Layout{Groups: 12, Hashed: hashed, Kinds: allKinds}
		ts := newTwoStacks(l)
		var held []*GroupState
		want := NewGroupState(l)
		for step := range 3000 {
			switch {
			case step%500 == 499:
				ts.reset()
				held = held[:0]
			case len(held) > 0 && r.IntN(2) == 0:
				require.Same(t, held[0], ts.pop())
				held = held[1:]
			default:
				p := randomState(r, l)
				ts.push(p)
				held = append(held, p)
			}
			require.Equal(t, len(held), ts.Len())
			got := ts.query()
			if len(held) == 0 {
				require.Nil(t, got)
				continue
			}
			want.Reset()
			for _, p := range held {
				want.Merge(p)
			}
			require.Equal(t, stateRows(want), stateRows(got), "step %d", step)
		}
		// Pooled: no more aggregate states than panes ever held at once.
		require.LessOrEqual(t, len(ts.free), 3000)
	}
}

// TestTwoStacksPanesUnchanged checks that the aggregator never writes to the
// pane states it holds.
func TestTwoStacksPanesUnchanged(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	l := &Layout{Groups: 8, Kinds: []AggKind{AggAdd, AggMaxF}}
	ts := newTwoStacks(l)
	var held []*GroupState
	var before [][]stateRow
	for range 500 {
		if len(held) > 0 && r.IntN(2) == 0 {
			ts.pop()
			held, before = held[1:], before[1:]
		} else {
			p := randomState(r, l)
			held, before = append(held, p), append(before, stateRows(p))
			ts.push(p)
		}
		ts.query()
		for i, p := range held {
			require.Equal(t, before[i], stateRows(p))
		}
	}
}

func TestCopyFrom(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, hashed := range []bool{false, true} {
		l := &Layout{Groups: 4, Hashed: hashed, Kinds: allKinds}
		small, big := NewGroupState(l), NewGroupState(l)
		for g := range 200 {
			addTuple(r, big, g, true) // grows a hashed table
		}
		for g := range 3 {
			addTuple(r, small, g, true)
		}
		dst := NewGroupState(l)
		dst.CopyFrom(big)
		require.Equal(t, stateRows(big), stateRows(dst))
		dst.CopyFrom(small) // larger hashed table: rehashes
		require.Equal(t, stateRows(small), stateRows(dst))
		dst2 := NewGroupState(l)
		dst2.CopyFrom(small)
		require.Equal(t, stateRows(small), stateRows(dst2))
		dst2.Merge(small)
		want := NewGroupState(l)
		want.Merge(small)
		want.Merge(small)
		require.Equal(t, stateRows(want), stateRows(dst2))
	}
	require.Panics(t, func() { NewGroupState(&Layout{Groups: 1}).CopyFrom(NewGroupState(&Layout{Groups: 1})) })
}

type stateRow struct {
	k0, k1 uint64
	vals   []int64
}

// stateRows lists st's groups in key order, as keys and rows, so that
// states of different table sizes compare.
func stateRows(st *GroupState) []stateRow {
	c := NewGroupState(st.Layout())
	c.Merge(st)
	c.SortTouched()
	var rows []stateRow
	for _, g := range c.Touched {
		rows = append(rows, keyedRow(c, g))
	}
	return rows
}

func keyedRow(st *GroupState, g int32) stateRow {
	row := stateRow{vals: append([]int64(nil), st.Row(g)...)}
	if st.Layout().Hashed {
		row.k0, row.k1 = st.Key(g)
	} else {
		row.k0 = uint64(g)
	}
	return row
}
