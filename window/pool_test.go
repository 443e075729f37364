package window

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatePoolLendsClearedStates: a result with a pool takes its states
// from it and gives them back at Release, rows and all; the next result
// gets them cleared, a direct table keeping the keys of its mapping, so
// that a record's first task writes no key. (Broken on purpose, to see it
// fail: take without the Reset; Release leaving the spares with r.)
func TestStatePoolLendsClearedStates(t *testing.T) {
	l := &Layout{Groups: 16, Hashed: true, Kinds: []AggKind{AggAdd}}
	pool := NewStatePool(l)
	var a, b TaskResult
	a.SetPool(pool)
	b.SetPool(pool)

	const slots, m = 14, 1
	probed := a.Fragment(1)
	row := probed.Row(probed.Lookup(3, 4))
	row[0], row[1] = 1, 9
	a.AddTuples(1, 1)
	addDirect(&a, 2, m, slots, 5, 2.5)
	direct := a.Frags[1].State
	require.Equal(t, uint32(m), direct.KeysFor())
	spare := a.Fragment(3)
	a.Reset(l) // the fragments become a's spares, cleared
	a.Fragment(1)
	a.Frags[0].State.Row(a.Frags[0].State.Lookup(5, 6))[0] = 1
	assert.Equal(t, 3, a.States())

	a.Release()
	assert.Empty(t, a.Frags)
	assert.Zero(t, a.States(), "a released result holds no state")
	states, directs := pool.Len()
	assert.Equal(t, [2]int{2, 1}, [2]int{states, directs})

	s1, s2 := b.Fragment(7), b.Fragment(8)
	assert.ElementsMatch(t, []*GroupState{probed, spare}, []*GroupState{s1, s2}, "the pool's states")
	for _, st := range []*GroupState{s1, s2} {
		assert.Empty(t, st.Touched)
		assert.Equal(t, make([]int64, len(st.Vals)), st.Vals, "cleared")
	}
	st := b.DirectFragment(9, slots, m)
	assert.Same(t, direct, st)
	assert.Empty(t, st.Touched)
	assert.Equal(t, make([]int64, len(st.Vals)), st.Vals, "cleared")
	assert.Equal(t, uint32(m), st.KeysFor(), "its keys kept")
	states, directs = pool.Len()
	assert.Equal(t, [2]int{0, 0}, [2]int{states, directs})

	pool.Prealloc(3)
	states, _ = pool.Len()
	assert.Equal(t, 3, states)

	var plain TaskResult // no pool: Release keeps everything
	plain.Reset(l)
	plain.Fragment(1)
	plain.Release()
	assert.Len(t, plain.Frags, 1)
}

// TestPartsReleaseViews: a partition's split holds views of the kernel's
// tables and states of its own; Release gives the partition's pool the
// states only, and the views let go of the tables they read.
func TestPartsReleaseViews(t *testing.T) {
	s := Spec{Size: 10, Slide: 1, Pane: 1}
	l := &Layout{Groups: 16, Hashed: true, Kinds: []AggKind{AggAdd}}
	p := NewParts(s, l, 2)
	var res TaskResult
	res.Reset(l)
	st := res.Fragment(0) // probed: read in place, through views
	for k := range uint64(8) {
		st.Row(st.Lookup(k, k))[0] = 1
	}
	res.AddTuples(0, 8)
	subs := make([]TaskResult, 2)
	p.Split(&res, subs)
	for k := range subs {
		require.Len(t, subs[k].Frags, 1)
		v := subs[k].Frags[0].State
		require.True(t, v.view)
		subs[k].Release()
		assert.Nil(t, v.Vals, "the view let go of the kernel's table")
		states, directs := p.pools[k].Len()
		assert.Zero(t, states+directs, "partition %d: views are not the pool's", k)
	}
}
