package window

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
)

func floatWord(f float64) int64 { return int64(math.Float64bits(f)) }

// refAssembler is the assembly that Assembler replaced, kept as the
// reference: every window is assembled by merging all its live panes, and
// rows are filtered as Assembler filters them.
type refAssembler struct {
	spec   Spec
	layout *Layout

	wm      int64
	next    int64
	started bool

	live    []paneAcc
	free    []*GroupState
	scratch *GroupState
	out     Result
	keep    func(st *GroupState, group int32) bool
	rows    []int32
	merges  uint64 // window merges (scratch.Merge)

	Counters Counters
}

func newRefAssembler(spec Spec, l *Layout) *refAssembler {
	return &refAssembler{spec: spec, layout: l, wm: math.MinInt64, scratch: NewGroupState(l)}
}

func (a *refAssembler) Merge(r *TaskResult, emit func(*Result) error) error {
	c := &a.Counters
	c.Tuples += r.Tuples
	c.Filtered += r.Filtered
	c.Unmatched += r.Unmatched
	c.Late += r.Late
	for i := range r.Frags {
		f := &r.Frags[i]
		if f.Tuples == 0 {
			continue
		}
		if a.wm > a.spec.Open(f.Pane) {
			c.Late += f.Tuples
			continue
		}
		a.pane(f.Pane).Merge(f.State)
		c.Counted += f.Tuples
	}
	if r.Tuples > 0 && r.MaxTS > a.wm {
		a.wm = r.MaxTS
	}
	return a.emit(false, emit)
}

func (a *refAssembler) Flush(emit func(*Result) error) error { return a.emit(true, emit) }

func (a *refAssembler) pane(p int64) *GroupState {
	i := sort.Search(len(a.live), func(i int) bool { return a.live[i].pane >= p })
	if i < len(a.live) && a.live[i].pane == p {
		return a.live[i].state
	}
	var st *GroupState
	if n := len(a.free); n > 0 {
		st, a.free = a.free[n-1], a.free[:n-1]
	} else {
		st = NewGroupState(a.layout)
	}
	a.live = append(a.live, paneAcc{})
	copy(a.live[i+1:], a.live[i:])
	a.live[i] = paneAcc{pane: p, state: st}
	return st
}

func (a *refAssembler) emit(all bool, emit func(*Result) error) error {
	s := a.spec
	for len(a.live) > 0 {
		w := s.FirstWindow(a.live[0].pane)
		if a.started && a.next > w {
			w = a.next
		}
		if !all && !s.Closed(w, a.wm) {
			return nil
		}
		_, last := s.PaneSpan(w)
		n := 0
		for n < len(a.live) && a.live[n].pane <= last {
			n++
		}
		st := a.live[0].state
		if n > 1 {
			st = a.scratch
			st.Reset()
			for _, pa := range a.live[:n] {
				st.Merge(pa.state)
				a.merges++
			}
		}
		if n > 0 && !st.Empty() {
			st.SortTouched()
			a.rows = a.rows[:0]
			for _, g := range st.Touched {
				if a.keep == nil || a.keep(st, g) {
					a.rows = append(a.rows, g)
				}
			}
			if len(a.rows) > 0 {
				a.out = Result{Window: w, Start: s.Start(w), End: s.End(w), State: st, Rows: a.rows}
				a.Counters.Windows++
				a.Counters.Rows += uint64(len(a.rows))
				if err := emit(&a.out); err != nil {
					return err
				}
			}
		}
		a.next, a.started = w+1, true
		k := 0
		for k < len(a.live) && s.LastWindow(a.live[k].pane) <= w {
			st := a.live[k].state
			st.Reset()
			a.free = append(a.free, st)
			k++
		}
		a.live = append(a.live[:0], a.live[k:]...)
	}
	return nil
}

type winOut struct {
	w, start, end int64
	rows          []stateRow
}

// collect returns an emit func appending every output to *dst, rows as keys
// and values in Rows order.
func collect(dst *[]winOut) func(*Result) error {
	return func(o *Result) error {
		wo := winOut{w: o.Window, start: o.Start, end: o.End}
		for _, g := range o.Rows {
			wo.rows = append(wo.rows, keyedRow(o.State, g))
		}
		*dst = append(*dst, wo)
		return nil
	}
}

// genTask fills res with a random task around event time *now, and moves
// *now on: panes out of order inside the open range, panes ahead, late
// fragments, empty fragments, empty tasks, gaps of several windows.
func genTask(r *rand.Rand, s Spec, l *Layout, res *TaskResult, now *int64, exact bool) {
	res.Reset(l)
	t := *now
	maxTS := t - r.Int64N(3)
	var tuples uint64
	for range r.IntN(5) {
		var ts int64
		if r.IntN(5) > 0 {
			ts = t - r.Int64N(s.Size+2*s.Slide+1)
		} else {
			ts = t + r.Int64N(2*s.Pane+1)
		}
		p := s.PaneOf(ts)
		st := res.Fragment(p)
		if r.IntN(10) == 0 {
			continue // fragment without tuples
		}
		n := 1 + r.IntN(4)
		for range n {
			addTuple(r, st, r.IntN(2*max(l.Groups, 6)), exact)
		}
		res.AddTuples(p, uint64(n))
		tuples += uint64(n)
		maxTS = max(maxTS, ts)
	}
	res.Filtered, res.Late, res.Unmatched = uint64(r.IntN(3)), uint64(r.IntN(2)), uint64(r.IntN(2))
	res.Tuples = tuples + res.Filtered + res.Late + res.Unmatched
	if r.IntN(20) == 0 { // an empty task: no tuple, no watermark
		res.Reset(l)
		res.Tuples = 0
	}
	res.MaxTS = maxTS
	if r.IntN(40) == 0 {
		*now += s.Size*(1+r.Int64N(3)) + r.Int64N(s.Size)
	} else {
		*now += r.Int64N(3*s.Pane + 1)
	}
}

func randomSpec(r *rand.Rand) Spec {
	var size, slide int64
	switch r.IntN(4) {
	case 0: // tumbling
		size = 1 + r.Int64N(20)
		slide = size
	case 1: // slide of one pane, 1..200 panes per window
		pane := 1 + r.Int64N(3)
		size, slide = pane*(1+r.Int64N(200)), pane
	case 2: // slide not dividing size
		slide = 2 + r.Int64N(10)
		size = slide*(1+r.Int64N(10)) + 1 + r.Int64N(slide-1)
	default:
		size = 1 + r.Int64N(200)
		slide = 1 + r.Int64N(size)
	}
	return Spec{Size: size, Slide: slide, Pane: gcd(size, slide)}
}

// rowKey is a row's key as a number, the same in every state.
func rowKey(st *GroupState, g int32) uint64 {
	if st.Layout().Hashed {
		k0, _ := st.Key(g) // test keys are (g, g%3) or (g, 0)
		return k0
	}
	return uint64(g)
}

var testFilters = []func(st *GroupState, g int32) bool{
	nil,
	func(st *GroupState, g int32) bool { return (uint64(st.Row(g)[0])+rowKey(st, g))%3 != 0 },
	func(st *GroupState, g int32) bool { return st.Row(g)[0] >= 6 }, // drops whole windows
	func(st *GroupState, g int32) bool { return rowKey(st, g)%4 == 1 },
}

// TestAssemblerAgainstFullMerge feeds the incremental assembler and the
// full-merge reference the same random task results and expects the same
// windows, rows, values and counters.
func TestAssemblerAgainstFullMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	// 400 in the long run, 60 under -short, 100 by default.
	cases := testenv.Scale(100, 400)
	if testing.Short() {
		cases = min(cases, 60)
	}
	for c := range cases {
		s := randomSpec(r)
		if c%3 == 1 { // a watermark delay: up to three windows
			s.Delay = r.Int64N(3*s.Size + 1)
		}
		l := &Layout{Groups: 1 + r.IntN(16), Hashed: r.IntN(2) == 0}
		for range r.IntN(4) {
			l.Kinds = append(l.Kinds, allKinds[r.IntN(len(allKinds))])
		}
		if c%5 == 0 {
			l.Kinds = allKinds
		}
		keep := testFilters[r.IntN(len(testFilters))]
		name := fmt.Sprintf("case %d size %d slide %d pane %d delay %d hashed %v kinds %v filter %v", c, s.Size, s.Slide, s.Pane, s.Delay, l.Hashed, l.Kinds, keep != nil)

		a, ref := NewAssembler(s, l), newRefAssembler(s, l)
		a.SetFilter(keep)
		ref.keep = keep
		var got, want []winOut
		emitGot, emitWant := collect(&got), collect(&want)
		now := r.Int64N(2000) - 1000
		var res TaskResult
		for range 100 + r.IntN(400) {
			genTask(r, s, l, &res, &now, true)
			require.NoError(t, a.Merge(&res, emitGot), name)
			require.NoError(t, ref.Merge(&res, emitWant), name)
			require.Equal(t, ref.Counters, a.Counters, name)
		}
		require.NoError(t, a.Flush(emitGot), name)
		require.NoError(t, ref.Flush(emitWant), name)
		require.Equal(t, ref.Counters, a.Counters, name)
		require.Equal(t, len(want), len(got), name)
		for i := range want {
			require.Equal(t, want[i], got[i], "%s window %d", name, i)
		}
		require.Equal(t, len(want), int(a.Counters.Windows), name)
		require.Empty(t, a.live, name)
		if a.agg != nil {
			require.Zero(t, a.agg.Len(), name)
		}
	}
}

// TestAssemblerFloatSums compares float sums of arbitrary values with a
// tolerance: the incremental assembly adds panes in another association.
func TestAssemblerFloatSums(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	for c := range 20 {
		s := Spec{Size: 1 + r.Int64N(100), Slide: 1}
		s.Pane = 1
		l := &Layout{Groups: 6, Hashed: c%2 == 0, Kinds: allKinds}
		a, ref := NewAssembler(s, l), newRefAssembler(s, l)
		var got, want []winOut
		now := int64(0)
		var res TaskResult
		for range 300 {
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
			require.Equal(t, len(want[i].rows), len(got[i].rows))
			// testify only where a value is wrong: its calls, a stack
			// walk each, were most of the test's time.
			for j, wr := range want[i].rows {
				gr := got[i].rows[j]
				if wr.k0 != gr.k0 || wr.k1 != gr.k1 {
					require.Equal(t, [2]uint64{wr.k0, wr.k1}, [2]uint64{gr.k0, gr.k1})
				}
				for k, v := range wr.vals {
					if k > 0 && l.Kinds[k-1] == AggAddF {
						x, y := math.Float64frombits(uint64(v)), math.Float64frombits(uint64(gr.vals[k]))
						if delta := 1e-9 * max(1, math.Abs(x)); !(math.Abs(x-y) <= delta) {
							require.InDelta(t, x, y, delta)
						}
					} else if v != gr.vals[k] {
						require.Equal(t, v, gr.vals[k])
					}
				}
			}
		}
	}
}

// slidingTask fills res with one pane of groups rows (dense: ordinals
// 0..groups-1; hashed: keys 0..groups-1) at time p*s.Pane.
func slidingTask(s Spec, l *Layout, res *TaskResult, p int64, groups int) {
	res.Reset(l)
	st := res.Fragment(p)
	for g := range groups {
		var gr int32
		if l.Hashed {
			gr = st.Lookup(uint64(g), 0)
		} else {
			gr = int32(g)
			st.Touched = append(st.Touched, gr)
		}
		row := st.Row(gr)
		row[0] = 1
		for i := range l.Kinds {
			row[i+1] = p + int64(g)
		}
	}
	res.AddTuples(p, uint64(groups))
	res.Tuples = uint64(groups)
	res.MaxTS = p * s.Pane
}

func TestAssemblerSlidingAllocatesNothing(t *testing.T) {
	for _, hashed := range []bool{false, true} {
		s := Spec{Size: 20, Slide: 2, Pane: 2}
		l := &Layout{Groups: 64, Hashed: hashed, Kinds: []AggKind{AggAdd, AggMin, AggMaxF}}
		a := NewAssembler(s, l)
		a.SetFilter(func(st *GroupState, g int32) bool { return st.Row(g)[1]%2 == 0 })
		var res TaskResult
		res.Prealloc(l, 2)
		windows := 0
		emit := func(o *Result) error { windows += len(o.Rows); return nil }
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
		assert.Positive(t, windows)
	}
}

// TestAssemblerMergesPerWindow counts the pane merges per emitted window of
// a window of 3600 panes sliding by one pane.
func TestAssemblerMergesPerWindow(t *testing.T) {
	const panes = 3600
	s := Spec{Size: panes, Slide: 1, Pane: 1}
	l := &Layout{Groups: 64, Kinds: []AggKind{AggAdd, AggMaxF}}
	a, ref := NewAssembler(s, l), newRefAssembler(s, l)
	var res TaskResult
	nop := func(*Result) error { return nil }
	ref.next, ref.started = 0, true // skip the reference's partial windows before window 0: they are slow
	p := int64(0)
	for ; p < panes; p++ { // warm up: fill the first window
		slidingTask(s, l, &res, p, 8)
		require.NoError(t, a.Merge(&res, nop))
		require.NoError(t, ref.Merge(&res, nop))
	}
	rm0, rw0 := ref.merges, ref.Counters.Windows
	for q := p; q < p+100; q++ { // the reference is slow: a sample suffices
		slidingTask(s, l, &res, q, 8)
		require.NoError(t, ref.Merge(&res, nop))
	}
	w0, m0, c0 := a.Counters.Windows, a.agg.merges, a.agg.copies
	for range 3 * panes {
		slidingTask(s, l, &res, p, 8)
		p++
		require.NoError(t, a.Merge(&res, nop))
	}
	windows := float64(a.Counters.Windows - w0)
	merges := float64(a.agg.merges-m0) / windows
	copies := float64(a.agg.copies-c0) / windows
	refMerges := float64(ref.merges-rm0) / float64(ref.Counters.Windows-rw0)
	t.Logf("per window of %d panes sliding by 1: incremental %.3f merges + %.3f copies; full merge %.1f merges", panes, merges, copies, refMerges)
	assert.Greater(t, windows, float64(2*panes))
	assert.Less(t, merges, 4.0)
	assert.Less(t, merges+copies, 6.0)
	assert.Greater(t, refMerges, float64(panes-1))
}

// TestAssemblerFilter checks HAVING: filtered rows are not emitted, windows
// left empty are neither emitted nor counted, and pane states are not
// changed by filtering.
func TestAssemblerFilter(t *testing.T) {
	for _, hashed := range []bool{false, true} {
		s := Spec{Size: 3, Slide: 1, Pane: 1}
		l := &Layout{Groups: 4, Hashed: hashed, Kinds: []AggKind{AggAdd}}
		a := NewAssembler(s, l)
		// Keep group 1 only, and only where its sum is at least 10.
		a.SetFilter(func(st *GroupState, g int32) bool { return rowKey(st, g) == 1 && st.Row(g)[1] >= 10 })
		var got []winOut
		emit := collect(&got)
		var res TaskResult
		task := func(p int64, rows map[int]int64) {
			res.Reset(l)
			st := res.Fragment(p)
			for g, v := range rows {
				var gr int32
				if hashed {
					gr = st.Lookup(uint64(g), 0)
				} else {
					gr = int32(g)
					st.Touched = append(st.Touched, gr)
				}
				st.Row(gr)[0], st.Row(gr)[1] = 1, v
			}
			res.AddTuples(p, uint64(len(rows)))
			res.Tuples, res.MaxTS = uint64(len(rows)), p
			require.NoError(t, a.Merge(&res, emit))
		}
		task(0, map[int]int64{0: 100, 1: 4})
		task(1, map[int]int64{1: 3, 2: 7})
		task(2, map[int]int64{1: 2})  // window -2..0 end at 3: not closed yet
		task(3, map[int]int64{3: 50}) // closes window 0 ([0,3)): group 1 sum 9: filtered, window not emitted
		task(4, map[int]int64{1: 8})  // closes window 1 ([1,4)): group 1 sum 5: not emitted
		task(5, map[int]int64{0: 1})  // closes window 2 ([2,5)): group 1 sum 10: emitted
		require.NoError(t, a.Flush(emit))
		// Windows -2 and -1 hold group 1 with 4 and 7: filtered away.
		require.Len(t, got, 1, "hashed %v: %+v", hashed, got)
		assert.Equal(t, int64(2), got[0].w)
		require.Len(t, got[0].rows, 1)
		assert.Equal(t, uint64(1), got[0].rows[0].k0)
		assert.Equal(t, []int64{2, 10}, got[0].rows[0].vals)
		assert.Equal(t, uint64(1), a.Counters.Windows)
		assert.Equal(t, uint64(1), a.Counters.Rows)

		// Unfiltered, the same input shows every group: filtering changed
		// no state that later windows read.
		b := NewAssembler(s, l)
		var all []winOut
		a, emit = b, collect(&all)
		task(0, map[int]int64{0: 100, 1: 4})
		task(1, map[int]int64{1: 3, 2: 7})
		task(2, map[int]int64{1: 2})
		task(3, map[int]int64{3: 50})
		task(4, map[int]int64{1: 8})
		task(5, map[int]int64{0: 1})
		require.NoError(t, a.Flush(emit))
		require.Len(t, all, 8) // windows -2..5
		assert.Equal(t, got[0], winOut{w: 2, start: 2, end: 5, rows: filterRows(all[4].rows, 1)})
	}
}

func filterRows(rows []stateRow, key uint64) []stateRow {
	return slices.DeleteFunc(slices.Clone(rows), func(r stateRow) bool { return r.k0 != key })
}

// TestAssemblerFilterLeavesStateIntact filters every row of every window
// with a filter that reads the state: later overlapping windows still see
// the filtered groups, as an unfiltered assembler shows them.
func TestAssemblerFilterLeavesStateIntact(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	s := Spec{Size: 12, Slide: 3, Pane: 3}
	l := &Layout{Groups: 8, Kinds: []AggKind{AggAdd, AggMin}}
	a, b := NewAssembler(s, l), NewAssembler(s, l)
	var seen []winOut
	a.SetFilter(func(st *GroupState, g int32) bool {
		if g == 0 {
			seen = append(seen, winOut{rows: []stateRow{keyedRow(st, g)}})
		}
		return g%2 == 1
	})
	var got, all []winOut
	now := int64(0)
	var res TaskResult
	for range 300 {
		genTask(r, s, l, &res, &now, true)
		require.NoError(t, a.Merge(&res, collect(&got)))
		require.NoError(t, b.Merge(&res, collect(&all)))
	}
	require.NoError(t, a.Flush(collect(&got)))
	require.NoError(t, b.Flush(collect(&all)))
	var wantSeen []winOut
	var wantGot []winOut
	for _, w := range all {
		var odd []stateRow
		for _, row := range w.rows {
			if row.k0 == 0 {
				wantSeen = append(wantSeen, winOut{rows: []stateRow{row}})
			}
			if row.k0%2 == 1 {
				odd = append(odd, row)
			}
		}
		if odd != nil {
			wantGot = append(wantGot, winOut{w: w.w, start: w.start, end: w.end, rows: odd})
		}
	}
	assert.NotEmpty(t, wantSeen)
	assert.Equal(t, wantSeen, seen)
	assert.Equal(t, wantGot, got)
	assert.Equal(t, uint64(len(wantGot)), a.Counters.Windows)
}

// BenchmarkSlidingAssembly merges one pane of 64 groups per task into a
// window of 3600 panes sliding by one pane: one window per task.
func BenchmarkSlidingAssembly(b *testing.B) {
	const panes = 3600
	s := Spec{Size: panes, Slide: 1, Pane: 1}
	l := &Layout{Groups: 64, Kinds: []AggKind{AggAdd, AggMax}}
	for _, impl := range []string{"incremental", "fullmerge"} {
		b.Run(impl, func(b *testing.B) {
			var merge func(*TaskResult) error
			var windows func() uint64
			nop := func(*Result) error { return nil }
			if impl == "incremental" {
				a := NewAssembler(s, l)
				merge = func(r *TaskResult) error { return a.Merge(r, nop) }
				windows = func() uint64 { return a.Counters.Windows }
			} else {
				a := newRefAssembler(s, l)
				merge = func(r *TaskResult) error { return a.Merge(r, nop) }
				windows = func() uint64 { return a.Counters.Windows }
			}
			var res TaskResult
			p := int64(0)
			for ; p < 2*panes; p++ {
				slidingTask(s, l, &res, p, 64)
				if err := merge(&res); err != nil {
					b.Fatal(err)
				}
			}
			w0 := windows()
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				slidingTask(s, l, &res, p, 64)
				p++
				if err := merge(&res); err != nil {
					b.Fatal(err)
				}
			}
			if n := windows() - w0; n > 0 {
				b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(n), "ns/window")
			}
		})
	}
}

// TestAssemblerDelay: with a watermark delay, a window is emitted once the
// watermark reaches its end plus the delay, its panes accept the fragments
// of later tasks until then, and are sealed after.
func TestAssemblerDelay(t *testing.T) {
	s := Spec{Size: 10, Slide: 10, Pane: 10, Delay: 5}
	l := &Layout{Groups: 1, Kinds: []AggKind{AggAdd}}
	a := NewAssembler(s, l)
	var got []winOut
	emit := collect(&got)
	var res TaskResult
	task := func(maxTS int64, panes ...int64) {
		t.Helper()
		res.Reset(l)
		for _, p := range panes {
			st := res.Fragment(p)
			st.Row(0)[0]++
			st.Row(0)[1] += 1
			if len(st.Touched) == 0 {
				st.Touched = append(st.Touched, 0)
			}
			res.AddTuples(p, 1)
		}
		res.Tuples, res.MaxTS = uint64(len(panes)), maxTS
		require.NoError(t, a.Merge(&res, emit))
	}
	task(12, 0, 1) // [0,10) and [10,20) open; watermark 12
	task(14, 0)    // 14 <= Open(0) = 14: counted; watermark 14
	assert.Empty(t, got, "[0,10) closes at 15")
	task(15, 0) // the watermark before it, 14, is not > Open(0): counted; then 15 closes [0,10)
	require.Len(t, got, 1)
	assert.Equal(t, winOut{w: 0, start: 0, end: 10, rows: []stateRow{{vals: []int64{3, 3}}}}, got[0])
	task(24, 0) // the watermark 15 sealed pane 0: late
	assert.Equal(t, Counters{Tuples: 5, Late: 1, Counted: 4, Windows: 1, Rows: 1}, a.Counters)
	assert.Len(t, got, 1, "[10,20) closes at 25")
	task(25, 2)
	require.Len(t, got, 2)
	assert.Equal(t, winOut{w: 1, start: 10, end: 20, rows: []stateRow{{vals: []int64{1, 1}}}}, got[1])
}
