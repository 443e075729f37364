package window

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// directKey is the key of slot s of test mapping m: mappings 1 and 2 cover
// overlapping key ranges, so that a key lies in a slot of each.
func directKey(m uint32, s int) (uint64, uint64) {
	const width = 7
	return uint64(s%width) + uint64(m-1)*3, uint64(s / width)
}

// addDirect counts one tuple of slot s (value v) into pane p's fragment, a
// direct table of slots slots under mapping m as the kernel writes it: the
// keys of every slot once per mapping (SetKeysFor), the count word first,
// Touched listing the slots. A fragment the task already has under another
// mapping, or probed, is made probed (Undirect) and the tuple looked up.
func addDirect(res *TaskResult, p int64, m uint32, slots, s int, v float64) {
	st := res.DirectFragment(p, slots, m)
	if st.Direct() != 0 && st.Direct() != m {
		st.Undirect()
	}
	gr := int32(s)
	if st.Direct() == 0 {
		gr = st.Lookup(directKey(m, s))
	} else if st.KeysFor() != m {
		for i := range slots {
			st.Keys[2*i], st.Keys[2*i+1] = directKey(m, i)
		}
		st.SetKeysFor(m)
	}
	row := st.Row(gr)
	if row[0] == 0 && st.Direct() != 0 {
		st.Touched = append(st.Touched, gr)
	}
	row[0]++
	for i, k := range st.Layout().Kinds {
		if k == AggAdd {
			row[i+1] += int64(v * 8)
		} else {
			row[i+1] = int64(math.Float64bits(math.Float64frombits(uint64(row[i+1])) + v))
		}
	}
	res.AddTuples(p, 1)
}

// TestAssemblerPinnedMatchesHashedStates: fragments as the kernel's direct
// tables make the first dense one's mapping pinned (its slots the
// dictionary's ids), and the engine's MergeTake takes their storage; with
// tables of a second mapping and probed ones among them, panes out of
// order, late fragments, gaps, flushes, snapshots restored midway (which
// unpin) and first tables too sparse to pin (both pinned later by repin,
// the running sum carried over), the assembly emits exactly (bit for bit)
// what the assembly over hashed states emits from Merge of the same
// results, with the same counters. (Broken on purpose, to see it fail: absorbPinned's later
// fragments copied instead of combined; the running sum's rows of the last
// window kept after a group came.)
func TestAssemblerPinnedMatchesHashedStates(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 19))
	pinned, pinnedAtEnd, repins := 0, 0, 0
	for c := range 30 {
		sparseFirst := c%2 == 1
		s := Spec{Size: 2 + r.Int64N(30), Slide: 1, Pane: 1}
		if c%3 == 1 {
			s = Spec{Size: 12, Slide: 4, Pane: 4}
		}
		kinds := [][]AggKind{invertibleKinds, {AggAddF}, {AggAdd}}[(c/3)%3]
		l := &Layout{Groups: 16, Hashed: true, Kinds: kinds}
		a, old := NewAssembler(s, l), oldHashedSum(NewAssembler(s, l))
		a.SetFilter(keepOf(c))
		old.SetFilter(keepOf(c))
		slots := 7 * (2 + r.IntN(6))
		var got, want []winOut
		now := int64(0)
		var res TaskResult
		for i := range 400 {
			res.Reset(l)
			t0 := now
			res.MaxTS = t0
			var tuples uint64
			for range 1 + r.IntN(3) {
				ts := t0 - r.Int64N(s.Size+2)
				if i == 0 {
					ts = t0
				}
				p := s.PaneOf(ts)
				m := uint32(1)
				if i > 100 && r.IntN(8) == 0 {
					m = 2
				}
				n := 1 + r.IntN(slots)
				if i == 0 {
					n = slots // a dense first table: its mapping is pinned
					if sparseFirst {
						n = slots / 4 // pinned later, by repin
					}
				}
				for j := range n {
					slot := r.IntN(slots)
					if i == 0 {
						slot = j
					}
					if i > 0 && r.IntN(30) == 0 {
						// A probed fragment's tuple (the kernel's table of a
						// chunk outside the mapping).
						st := res.Fragment(p)
						if st.Direct() != 0 {
							st.Undirect()
						}
						row := st.Row(st.Lookup(directKey(m, slot)))
						row[0]++
						for w := 1; w < len(row); w++ {
							row[w] += int64(j) * 4
						}
						res.AddTuples(p, 1)
						continue
					}
					addDirect(&res, p, m, slots, slot, r.Float64()*100-20)
				}
				tuples += uint64(n)
				res.MaxTS = max(res.MaxTS, ts)
			}
			res.Tuples = tuples
			require.NoError(t, old.Merge(&res, collect(&want)))
			require.NoError(t, a.MergeTake(&res, collect(&got)))
			if i == 0 && a.dict.npin > 0 {
				pinned++
			}
			if i%150 == 149 {
				snaps := [][]byte{a.AppendSnapshot(nil), old.AppendSnapshot(nil)}
				repins += a.repins
				a, old = NewAssembler(s, l), oldHashedSum(NewAssembler(s, l))
				a.keep, old.keep = keepOf(c), keepOf(c)
				for j, x := range []*Assembler{a, old} {
					rest, err := x.RestoreSnapshot(snaps[j])
					require.NoError(t, err)
					require.Empty(t, rest)
				}
			}
			if r.IntN(60) == 0 {
				now += s.Size * (1 + r.Int64N(2))
			} else {
				now += r.Int64N(3)
			}
		}
		require.NoError(t, a.Flush(collect(&got)))
		require.NoError(t, old.Flush(collect(&want)))
		require.Equal(t, old.Counters, a.Counters, "case %d", c)
		require.Equal(t, want, got, "case %d", c)
		if a.dict.npin > 0 {
			pinnedAtEnd++
		}
		repins += a.repins
	}
	assert.Equal(t, 15, pinned, "every case with a dense first table pins its mapping")
	assert.Equal(t, 30, pinnedAtEnd, "every case is pinned at its end: after sparse first tables and restores, by repin")
	assert.Equal(t, 15+2*30, repins, "a repin for each sparse first table and each restore")
}

// TestAssemblerPinnedSparseNotPinned: a first direct table holding few of
// its slots pins nothing (every id-indexed state would be as large as the
// mapping).
func TestAssemblerPinnedSparseNotPinned(t *testing.T) {
	l := &Layout{Groups: 16, Hashed: true, Kinds: []AggKind{AggAddF}}
	a := NewAssembler(Spec{Size: 10, Slide: 1, Pane: 1}, l)
	var res TaskResult
	res.Reset(l)
	for s := range 10 {
		addDirect(&res, 0, 1, 1000, s*97, 1)
	}
	res.Tuples, res.MaxTS = 10, 0
	require.NoError(t, a.MergeTake(&res, func(*Result) error { return nil }))
	assert.Zero(t, a.dict.npin)
	assert.Equal(t, int32(10), a.dict.n)
}

// TestAssemblerPinnedAllocatesNothing: sg2's shape in steady state, every
// pane's groups in two direct tables of the pinned mapping, merged by
// MergeTake, allocates nothing per task, and an empty pane takes its first
// table's storage rather than copying it (the task's table comes back
// empty). (Broken on purpose: growTouched called per fragment.)
func TestAssemblerPinnedAllocatesNothing(t *testing.T) {
	const slots, panes = 700, 40
	s := Spec{Size: panes, Slide: 1, Pane: 1}
	l := &Layout{Groups: 16, Hashed: true, Kinds: []AggKind{AggAddF}}
	a := NewAssembler(s, l)
	var res TaskResult
	rows := 0
	emit := func(o *Result) error { rows += len(o.Rows); return nil }
	p := int64(0)
	took := 0
	step := func() {
		// A task: the second half of pane p, the first half of pane p+1.
		res.Reset(l)
		for sl := slots / 2; sl < slots; sl++ {
			addDirect(&res, p, 1, slots, sl, float64(sl))
		}
		for sl := range slots / 2 {
			addDirect(&res, p+1, 1, slots, sl, float64(sl))
		}
		res.Tuples, res.MaxTS = slots, p
		second := res.Frags[1].State
		if err := a.MergeTake(&res, emit); err != nil {
			panic(err)
		}
		if second.Empty() {
			took++
		}
		p++
	}
	for range 3 * panes {
		step()
	}
	require.Equal(t, int32(slots), a.dict.npin)
	allocs := testing.AllocsPerRun(200, step)
	assert.Zero(t, allocs)
	assert.Positive(t, rows)
	assert.Zero(t, (rows-slots/2)%slots, "every window's every group (the first one's pane half)")
	assert.Equal(t, int(p), took, "each task's new pane takes its table")
}

// BenchmarkAssemblerRestored is sg2's shape (a float sum over 8,192
// groups of one direct mapping, a sliding window of 64 panes, a task a
// pane's dense table) merged by an assembler as it starts ("fresh": the
// first table pins the mapping) and by one restored from a snapshot of it
// ("restored": repin pins the mapping again at its first merge; before
// repin, a restored assembler numbered every group through its dictionary
// for good). One task's table is merged as each pane's (Merge: not taken).
func BenchmarkAssemblerRestored(b *testing.B) {
	const slots, panes = 8192, 64
	s := Spec{Size: panes, Slide: 1, Pane: 1}
	l := &Layout{Groups: 16, Hashed: true, Kinds: []AggKind{AggAddF}}
	emit := func(*Result) error { return nil }
	var res TaskResult
	res.Reset(l)
	for sl := range slots {
		addDirect(&res, 0, 1, slots, sl, float64(sl&63))
	}
	res.Tuples = slots
	task := func(a *Assembler, p int64) {
		res.Frags[0].Pane, res.MaxTS = p, p
		if err := a.Merge(&res, emit); err != nil {
			b.Fatal(err)
		}
	}
	for _, restored := range []bool{false, true} {
		name := map[bool]string{false: "fresh", true: "restored"}[restored]
		b.Run(name, func(b *testing.B) {
			a := NewAssembler(s, l)
			p := int64(0)
			for ; p < 2*panes; p++ {
				task(a, p)
			}
			if restored {
				snap := a.AppendSnapshot(nil)
				a = NewAssembler(s, l)
				if _, err := a.RestoreSnapshot(snap); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(slots * 32) // sg2's 32-byte tuples, one per group
			b.ReportAllocs()
			for b.Loop() {
				task(a, p)
				p++
			}
		})
	}
}
