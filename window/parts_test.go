package window

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var partCounts = []int{1, 2, 3, 5, 8}

// TestPartsMatchAssembler: random tasks (panes out of order, late and
// empty fragments, gaps) over hashed layouts of every kind, with and
// without HAVING, fed to one Assembler and to Parts of 1 to 8 partitions:
// the same windows, rows in the same order, bit for bit (float sums not
// kept exact: a group's arithmetic is the one Assembler's), the same
// counters, also across snapshots taken of one and restored into the
// other, and at the flush.
func TestPartsMatchAssembler(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 1))
	kindsets := [][]AggKind{{AggAdd}, invertibleKinds, allKinds, {AggMinF, AggMax}, {AggAddF}}
	for c := range 60 {
		s := randomSpec(r)
		kinds := kindsets[c%len(kindsets)]
		n := partCounts[c%len(partCounts)]
		l := &Layout{Groups: 1 + r.IntN(12), Hashed: true, Kinds: kinds}
		a, p := NewAssembler(s, l), NewParts(s, l, n)
		keep := testFilters[c%len(testFilters)]
		a.SetFilter(keep)
		p.SetFilters(func() func(*GroupState, int32) bool { return keep })
		var want, got []winOut
		now := int64(r.IntN(100))
		var res TaskResult
		for i := range 300 {
			genTask(r, s, l, &res, &now, false)
			require.NoError(t, p.MergeTake(&res, collect(&got)), "case %d", c)
			require.NoError(t, a.MergeTake(&res, collect(&want)), "case %d", c)
			require.Equal(t, a.Counters, *p.Counts(), "case %d task %d", c, i)
			require.Equal(t, a.Watermark(), p.Watermark())
			require.Equal(t, a.Complete(), p.Complete())
			if i%100 == 99 {
				// Each restores the other's snapshot.
				sa, sp := a.AppendSnapshot(nil), p.AppendSnapshot(nil)
				a, p = NewAssembler(s, l), NewParts(s, l, partCounts[(c+i)%len(partCounts)])
				a.SetFilter(keep)
				p.SetFilters(func() func(*GroupState, int32) bool { return keep })
				rest, err := a.RestoreSnapshot(sp)
				require.NoError(t, err)
				require.Empty(t, rest)
				rest, err = p.RestoreSnapshot(sa)
				require.NoError(t, err)
				require.Empty(t, rest)
				require.Equal(t, a.Counters, *p.Counts())
				require.Equal(t, a.Complete(), p.Complete())
			}
		}
		require.NoError(t, p.Flush(collect(&got)))
		require.NoError(t, a.Flush(collect(&want)))
		require.Equal(t, a.Counters, *p.Counts(), "case %d", c)
		require.Equal(t, want, got, "case %d (%d partitions, spec %+v, kinds %v)", c, n, s, kinds)
	}
}

// TestPartsPinnedMatchAssembler: fragments as the kernel's direct tables
// (a first dense one pins its mapping in each partition), tables of a
// second mapping and probed ones among them, a restore midway (the
// partitions pinned again by repin): Parts emit what one Assembler emits,
// bit for bit.
func TestPartsPinnedMatchAssembler(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 2))
	pinnedAgain := 0
	for c := range 24 {
		s := Spec{Size: 2 + r.Int64N(30), Slide: 1, Pane: 1}
		if c%3 == 1 {
			s = Spec{Size: 12, Slide: 4, Pane: 4}
		}
		kinds := [][]AggKind{invertibleKinds, {AggAddF}, {AggAdd}, {AggMax}}[c%4]
		n := partCounts[c%len(partCounts)]
		l := &Layout{Groups: 16, Hashed: true, Kinds: kinds}
		a, p := NewAssembler(s, l), NewParts(s, l, n)
		a.SetFilter(keepOf(c))
		p.SetFilters(func() func(*GroupState, int32) bool { return keepOf(c) })
		slots := 7 * (2 + r.IntN(6))
		var got, want []winOut
		now := int64(0)
		var res TaskResult
		var wasPinned [maxParts]bool
		for i := range 300 {
			res.Reset(l)
			res.MaxTS = now
			var tuples uint64
			for range 1 + r.IntN(3) {
				ts := now - r.Int64N(s.Size+2)
				if i == 0 {
					ts = now
				}
				pn := s.PaneOf(ts)
				m := uint32(1)
				if i > 100 && r.IntN(8) == 0 {
					m = 2
				}
				k := 1 + r.IntN(slots)
				if i == 0 {
					k = slots
				}
				for j := range k {
					slot := r.IntN(slots)
					if i == 0 {
						slot = j
					}
					if i > 0 && r.IntN(30) == 0 {
						st := res.Fragment(pn)
						if st.Direct() != 0 {
							st.Undirect()
						}
						row := st.Row(st.Lookup(directKey(m, slot)))
						row[0]++
						for w := 1; w < len(row); w++ {
							row[w] += int64(j) * 4
						}
						res.AddTuples(pn, 1)
						continue
					}
					addDirect(&res, pn, m, slots, slot, r.Float64()*100-20)
				}
				tuples += uint64(k)
				res.MaxTS = max(res.MaxTS, ts)
			}
			res.Tuples = tuples
			require.NoError(t, p.MergeTake(&res, collect(&got)))
			require.NoError(t, a.MergeTake(&res, collect(&want)))
			if i == 0 && n > 1 && kinds[0] != AggMax {
				pinned := 0
				for _, x := range p.asms {
					if x.dict != nil && x.dict.npin > 0 {
						pinned++
					}
				}
				assert.Positive(t, pinned, "case %d: the partitions pin their part of the mapping", c)
			}
			if i == 150 {
				for k, x := range p.asms {
					wasPinned[k] = x.dict != nil && x.dict.npin > 0
				}
				// Restored, the partitions' dictionaries number the
				// groups of the mapping's tables one by one: their next
				// merges pin the mapping again (repin). (The assembler is
				// restored too: a restore rebuilds the sliding sums, whose
				// floats then round as the rebuild adds.)
				sp, sa := p.AppendSnapshot(nil), a.AppendSnapshot(nil)
				p, a = NewParts(s, l, n), NewAssembler(s, l)
				p.SetFilters(func() func(*GroupState, int32) bool { return keepOf(c) })
				a.SetFilter(keepOf(c))
				_, err := p.RestoreSnapshot(sp)
				require.NoError(t, err)
				_, err = a.RestoreSnapshot(sa)
				require.NoError(t, err)
			}
			if r.IntN(60) == 0 {
				now += s.Size * (1 + r.Int64N(2))
			} else {
				now += r.Int64N(3)
			}
		}
		require.NoError(t, p.Flush(collect(&got)))
		require.NoError(t, a.Flush(collect(&want)))
		require.Equal(t, a.Counters, *p.Counts(), "case %d", c)
		require.Equal(t, want, got, "case %d", c)
		for k, x := range p.asms {
			if wasPinned[k] {
				assert.Positive(t, x.dict.npin, "case %d: partition %d pinned again after the restore", c, k)
				pinnedAgain++
			}
		}
	}
	assert.Positive(t, pinnedAgain, "partitions pinned before a restore")
}

// TestPartsConcurrent drives Parts as the engine does: tasks split by
// several goroutines at once, each partition merged by a goroutine of
// its own in task order while the others merge theirs, each task
// assembled once its partitions are merged, and committed and emitted in
// task order. The windows are the sequential ones. Run it with -race.
func TestPartsConcurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 3))
	s := Spec{Size: 40, Slide: 2, Pane: 2}
	l := &Layout{Groups: 8, Hashed: true, Kinds: invertibleKinds}
	const tasks, n = 400, 4
	results := make([]TaskResult, tasks)
	now := int64(0)
	for i := range results {
		genTask(r, s, l, &results[i], &now, false)
	}
	seq := NewParts(s, l, n)
	assert.Equal(t, runPartsConcurrently(t, seq, NewParts(s, l, n), results), *seq.Counts())
}

// TestPartsConcurrentDirect is TestPartsConcurrent over the kernels'
// direct tables, which Split copies into tables of each partition's own
// (splitDirect), taken from the partition's pool and given back at each
// task's release while other tasks are split: the windows are still the
// sequential ones. (Broken on purpose, to see it fail: a pool handing
// its states back uncleared.)
func TestPartsConcurrentDirect(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 4))
	s := Spec{Size: 40, Slide: 2, Pane: 2}
	l := &Layout{Groups: 16, Hashed: true, Kinds: invertibleKinds}
	const tasks, n, slots = 400, 4, 14
	results := make([]TaskResult, tasks)
	now := int64(0)
	for i := range results {
		res := &results[i]
		res.Reset(l)
		for range 1 + r.IntN(3) {
			ts := now - r.Int64N(s.Size)
			p := s.PaneOf(ts)
			for range 1 + r.IntN(2*slots) {
				addDirect(res, p, 1, slots, r.IntN(slots), float64(r.IntN(100))/4)
			}
			res.Count(0, ts, 0, 0, 0)
		}
		res.Tuples = 0
		for _, f := range res.Frags {
			res.Tuples += f.Tuples
		}
		now += r.Int64N(3)
	}
	seq := NewParts(s, l, n)
	assert.Equal(t, runPartsConcurrently(t, seq, NewParts(s, l, n), results), *seq.Counts())
}

// partStage is what Parts and SessionParts give the engine to drive them.
type partStage interface {
	Stage
	N() int
	Split(r *TaskResult, subs []TaskResult)
	MergePart(k int, sub *TaskResult, out *PartOut) error
	Assemble(outs []PartOut, dst *Assembled)
	Commit(a *Assembled)
}

// runPartsConcurrently merges results into seq on one goroutine, and into
// p as the engine does: split by 3 goroutines, each partition merged by
// one of its own, each task assembled and committed in order once every
// partition merged it. Both must emit the same windows and count the
// same; it returns p's counters. Each task's splits are released once it
// is emitted, while later tasks are split.
func runPartsConcurrently(t *testing.T, seq, p partStage, results []TaskResult) Counters {
	t.Helper()
	tasks, n := len(results), p.N()
	var want []winOut
	for i := range results {
		require.NoError(t, seq.MergeTake(&results[i], collect(&want)))
	}
	require.NoError(t, seq.Flush(collect(&want)))

	subs := make([][]TaskResult, tasks)
	outs := make([][]PartOut, tasks)
	asm := make([]Assembled, tasks)
	split := make([]chan struct{}, tasks)
	merged := make([]sync.WaitGroup, tasks)
	for i := range subs {
		subs[i], outs[i], split[i] = make([]TaskResult, n), make([]PartOut, n), make(chan struct{})
		for k := range outs[i] {
			outs[i][k].Rows = true
		}
		merged[i].Add(n)
	}
	var wg sync.WaitGroup
	for g := range 3 { // splitters
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < tasks; i += 3 {
				p.Split(&results[i], subs[i])
				close(split[i])
			}
		}()
	}
	errs := make(chan error, n)
	for k := range n { // partitions
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range tasks {
				<-split[i]
				if err := p.MergePart(k, &subs[i][k], &outs[i][k]); err != nil {
					errs <- err
				}
				merged[i].Done()
			}
		}()
	}
	var got []winOut
	emit := collect(&got)
	var res Result
	rows := make([]int32, 1<<16)
	for i := range tasks { // the result stage: assemble, commit, emit
		merged[i].Wait()
		p.Assemble(outs[i], &asm[i])
		p.Commit(&asm[i])
		for w := range asm[i].Wins {
			asm[i].Result(w, &res, rows)
			require.NoError(t, emit(&res))
		}
		// The engine's merge: the task's states back to the partitions'
		// pools, for the splitters still running to take.
		for k := range subs[i] {
			subs[i][k].Release()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, p.Flush(emit))
	require.NotEmpty(t, want)
	assert.Equal(t, want, got)
	return *p.Counts()
}

// TestPartsAllocateNothing: in steady state a sliding window's task is
// split, merged into every partition, assembled and emitted without
// allocating.
func TestPartsAllocateNothing(t *testing.T) {
	s := Spec{Size: 100, Slide: 1, Pane: 1}
	for _, kinds := range [][]AggKind{invertibleKinds, {AggMax}} {
		l := &Layout{Groups: 64, Hashed: true, Kinds: kinds}
		p := NewParts(s, l, 4)
		var res TaskResult
		rows := 0
		emit := func(o *Result) error { rows += len(o.Rows); return nil }
		pane := int64(0)
		task := func() {
			slidingTask(s, l, &res, pane, 64)
			require.NoError(t, p.MergeTake(&res, emit))
			pane++
		}
		for range 3 * 100 {
			task()
		}
		assert.Zero(t, testing.AllocsPerRun(200, task), "kinds %v", kinds)
		assert.Positive(t, rows)
	}
}

// BenchmarkPartsSplit is the workers' share of Parts: cutting a task's
// fragments of a thousand groups into partitions.
func BenchmarkPartsSplit(b *testing.B) {
	s := Spec{Size: 100, Slide: 1, Pane: 1}
	l := &Layout{Groups: 1024, Hashed: true, Kinds: invertibleKinds}
	p := NewParts(s, l, 4)
	var res TaskResult
	slidingTask(s, l, &res, 0, 1024)
	subs := make([]TaskResult, 4)
	b.ReportAllocs()
	for b.Loop() {
		p.Split(&res, subs)
	}
}
