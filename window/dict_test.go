package window

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGroupDictAgainstMap: keys handed ids, held and dropped at random
// (the table grows, and backward-shift deletion moves probe chains), agree
// with a map: a live key keeps its id, no two live keys share one, a key
// whose last hold is dropped is gone, and order lists the live ids in key
// order.
func TestGroupDictAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for c := range 20 {
		d := newGroupDict()
		type key [2]uint64
		ids := map[key]int32{}
		refs := map[key]int{}
		universe := 8 + r.IntN(600)
		for step := range 5000 {
			k := key{uint64(r.IntN(universe)), uint64(r.IntN(3))}
			if refs[k] > 0 && r.IntN(2) == 0 {
				d.drop(ids[k])
				if refs[k]--; refs[k] == 0 {
					delete(refs, k)
					delete(ids, k)
				}
			} else {
				id := d.id(k[0], k[1])
				if want, ok := ids[k]; ok {
					require.Equal(t, want, id, "case %d step %d: a live key keeps its id", c, step)
				}
				ids[k] = id
				d.hold(id)
				refs[k]++
			}
			if step%97 == 0 {
				d.sortOrder()
				live := make([]key, 0, len(ids))
				for k := range ids {
					live = append(live, k)
				}
				slices.SortFunc(live, func(a, b key) int {
					if c := cmp.Compare(a[0], b[0]); c != 0 {
						return c
					}
					return cmp.Compare(a[1], b[1])
				})
				got := make([]key, 0, len(d.order))
				for _, id := range d.order {
					got = append(got, key{d.keys[2*id], d.keys[2*id+1]})
				}
				require.Equal(t, live, got, "case %d step %d: order lists the live keys in key order", c, step)
			}
		}
		seen := map[int32]key{}
		for k, id := range ids {
			_, dup := seen[id]
			require.False(t, dup, "two live keys share id %d", id)
			seen[id] = k
			require.Equal(t, int32(refs[k]), d.refs[id])
		}
		// Every live key is found where it is; every dropped one is not in
		// the table (it would be handed a fresh id, and hold no refs).
		for k := range universe {
			kk := key{uint64(k), uint64(k % 3)}
			if id, ok := ids[kk]; ok {
				assert.Equal(t, id, d.id(kk[0], kk[1]))
			} else {
				id := d.id(kk[0], kk[1])
				assert.Zero(t, d.refs[id], "a dropped key's id holds no refs")
				_, taken := seen[id]
				assert.False(t, taken, "a dropped key is handed a live id")
				seen[id] = kk
			}
		}
	}
}

// oldHashedSum makes a slide its invertible hashed layout by the running
// sum over hashed pane states, as before the group dictionary: the
// reference the id-indexed assembly must match bit for bit.
func oldHashedSum(a *Assembler) *Assembler {
	a.dict = nil
	a.sum = newRunningSum(a.layout, nil)
	a.win = a.sum
	return a
}

// TestAssemblerIDsMatchHashedStates: with float sums of arbitrary values,
// groups coming and going, late and out-of-order fragments, a HAVING
// filter, gaps, flushes and snapshots restored midway, the id-indexed
// assembly emits exactly (bit for bit) what the assembly over hashed states
// emits, with the same counters.
func TestAssemblerIDsMatchHashedStates(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 13))
	for c := range 40 {
		s := Spec{Size: 2 + r.Int64N(30), Slide: 1, Pane: 1}
		if c%3 == 1 {
			s = Spec{Size: 12, Slide: 4, Pane: 4}
		}
		kinds := [][]AggKind{invertibleKinds, {AggAddF}, {AggAdd}}[(c/3)%3]
		l := &Layout{Groups: 4 + r.IntN(60), Hashed: true, Kinds: kinds}
		a, old := NewAssembler(s, l), oldHashedSum(NewAssembler(s, l))
		require.NotNil(t, a.dict)
		a.SetFilter(keepOf(c))
		old.SetFilter(keepOf(c))
		var got, want []winOut
		now := int64(0)
		var res TaskResult
		for i := range 600 {
			genTask(r, s, l, &res, &now, false)
			require.NoError(t, a.Merge(&res, collect(&got)))
			require.NoError(t, old.Merge(&res, collect(&want)))
			if i%150 == 149 {
				// Restore fresh assemblers from the snapshots and go on with
				// them (both rebuild their running sums from the panes).
				snaps := [][]byte{a.AppendSnapshot(nil), old.AppendSnapshot(nil)}
				a, old = NewAssembler(s, l), oldHashedSum(NewAssembler(s, l))
				a.keep, old.keep = keepOf(c), keepOf(c)
				for j, x := range []*Assembler{a, old} {
					rest, err := x.RestoreSnapshot(snaps[j])
					require.NoError(t, err)
					require.Empty(t, rest)
				}
			}
		}
		require.NoError(t, a.Flush(collect(&got)))
		require.NoError(t, old.Flush(collect(&want)))
		require.Equal(t, old.Counters, a.Counters, "case %d", c)
		require.Equal(t, want, got, "case %d", c)
	}
}

// keepOf is case c's HAVING filter: one case in four has one.
func keepOf(c int) func(st *GroupState, g int32) bool {
	if c%4 != 0 {
		return nil
	}
	return func(st *GroupState, g int32) bool { return st.Row(g)[0]%3 != 1 }
}

// TestAssemblerIDsDriftingKeys: keys that drift (each pane brings new ones,
// the old ones leave with their panes) keep the dictionary at what the
// live panes hold, not at every key seen.
func TestAssemblerIDsDriftingKeys(t *testing.T) {
	const panes, groups = 50, 40
	s := Spec{Size: panes, Slide: 1, Pane: 1}
	l := &Layout{Groups: groups, Hashed: true, Kinds: invertibleKinds}
	a := NewAssembler(s, l)
	var res TaskResult
	rows := 0
	emit := func(o *Result) error {
		rows += len(o.Rows)
		for i := 1; i < len(o.Rows); i++ {
			if c := o.State.compareKeys(o.Rows[i-1], o.Rows[i]); c >= 0 { // testify only on a failure: a stack walk a call
				require.Negative(t, c, "rows in key order")
			}
		}
		return nil
	}
	for p := range int64(5000) {
		res.Reset(l)
		st := res.Fragment(p)
		for g := range int64(groups) {
			row := st.Row(st.Lookup(uint64(p+g), 0)) // key p+g lives in panes p-groups+1..p
			row[0], row[1] = 1, g
		}
		res.AddTuples(p, groups)
		res.Tuples, res.MaxTS = groups, p
		require.NoError(t, a.Merge(&res, emit))
	}
	require.NoError(t, a.Flush(emit))
	live := panes + 2*groups // keys of the window's panes, and one pane ahead
	assert.LessOrEqual(t, int(a.dict.n), 2*live, "ids handed out")
	assert.LessOrEqual(t, a.dict.capIDs(), 4*live, "dictionary capacity")
	for id, n := range a.dict.refs {
		require.Zero(t, n, "flushed: id %d still held", id)
	}
	assert.Positive(t, rows)
}

// BenchmarkAssemblerManyGroups is sg2's shape in the result stage: panes
// of a few thousand of 8000 groups with a float sum (AVG), fragments of
// hashed tables, a window of many panes sliding by one: one window per
// task, every group in it emitted. Old runs the hashed running sum the
// group dictionary replaced.
func BenchmarkAssemblerManyGroups(b *testing.B) {
	const panes, groups, perPane = 600, 8000, 5000
	s := Spec{Size: panes, Slide: 1, Pane: 1}
	for _, impl := range []string{"ids", "old"} {
		b.Run(impl, func(b *testing.B) {
			l := &Layout{Groups: 1024, Hashed: true, Kinds: []AggKind{AggAddF}}
			r := rand.New(rand.NewPCG(1, 2))
			// A few tasks' worth of fragments, replayed at every pane.
			tasks := make([]TaskResult, 16)
			for i := range tasks {
				res := &tasks[i]
				res.Reset(l)
				st := res.Fragment(0)
				for range perPane {
					k := uint64(r.IntN(groups))
					row := st.Row(st.Lookup(k<<32|k%7, k%5))
					row[0]++
					row[1] = floatWord(math.Float64frombits(uint64(row[1])) + r.Float64())
				}
				res.AddTuples(0, perPane)
				res.Tuples = perPane
			}
			a := NewAssembler(s, l)
			if impl == "old" {
				oldHashedSum(a)
			}
			rows := 0
			emit := func(o *Result) error { rows += len(o.Rows); return nil }
			p := int64(0)
			step := func() {
				res := &tasks[p%int64(len(tasks))]
				res.Frags[0].Pane, res.MaxTS = p, p
				p++
				if err := a.Merge(res, emit); err != nil {
					b.Fatal(err)
				}
			}
			for range 2 * panes {
				step()
			}
			b.ReportAllocs()
			for b.Loop() {
				step()
			}
			b.ReportMetric(float64(rows)/float64(p), "rows/window")
		})
	}
}

// occupiedBranchy is occupied as a plain filter: the oracle, and the
// benchmark's other side.
func occupiedBranchy(dst []int32, vals []int64, n, words int) []int32 {
	dst = dst[:0]
	for s := range n {
		if vals[s*words] != 0 {
			dst = append(dst, int32(s))
		}
	}
	return dst
}

// TestOccupied: the taken slots of random tables of every density, rows
// of one to four words, counts of any sign, against the plain filter,
// into scratch too small, as large and larger.
func TestOccupied(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	for c := range 200 {
		n, words := r.IntN(300), 1+r.IntN(4)
		vals := make([]int64, n*words+r.IntN(3)*words)
		for s := range len(vals) / words {
			if r.IntN(100) < c%100 {
				vals[s*words] = []int64{1, 7, -1, math.MinInt64, math.MaxInt64}[r.IntN(5)]
			}
			for w := 1; w < words; w++ {
				vals[s*words+w] = r.Int64() // only the count word decides
			}
		}
		want := occupiedBranchy(nil, vals, n, words)
		got := occupied(make([]int32, r.IntN(n+2)), vals, n, words)
		require.Equal(t, len(want), len(got), "case %d", c)
		if len(want) > 0 {
			assert.Equal(t, want, got, "case %d: %d slots of %d words", c, n, words)
		}
	}
}

// BenchmarkOccupied lists the taken slots of a direct table of 8,192
// slots a quarter and half full at random (a task smaller than a pane
// holds part of its groups), by occupied and by the plain filter.
func BenchmarkOccupied(b *testing.B) {
	const n, words = 8192, 2
	r := rand.New(rand.NewPCG(1, 1))
	for _, full := range []int{25, 50} {
		vals := make([]int64, n*words)
		for s := range n {
			if r.IntN(100) < full {
				vals[s*words] = 1
			}
		}
		dst := make([]int32, n)
		for _, bc := range []struct {
			name string
			f    func([]int32, []int64, int, int) []int32
		}{{"branchless", occupied}, {"branchy", occupiedBranchy}} {
			b.Run(fmt.Sprintf("%d%%/%s", full, bc.name), func(b *testing.B) {
				b.SetBytes(n * words * 8)
				b.ReportAllocs()
				for b.Loop() {
					dst = bc.f(dst, vals, n, words)
				}
			})
		}
	}
}
