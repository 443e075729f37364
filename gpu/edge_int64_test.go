package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// edgeWindow is a random window for positions near the ends of int64:
// small, YSB's, or of sizes up to MaxInt64; tumbling or sliding.
func edgeWindow(r *rand.Rand, typ query.WindowType) query.Window {
	var size int64
	switch r.IntN(6) {
	case 0:
		size = 1 + r.Int64N(4)
	case 1:
		size = 10000
	case 2:
		size = 1 + r.Int64N(math.MaxInt64)
	case 3:
		size = math.MaxInt64 - r.Int64N(3)
	default:
		size = 1 + r.Int64N(200)
	}
	slide := size
	if r.IntN(2) == 0 {
		slide = 1 + r.Int64N(size)
		if r.IntN(3) == 0 {
			slide = max(1, size/(1+r.Int64N(8)))
		}
	}
	return query.Window{Type: typ, Size: size, Slide: slide}
}

// edgeTimes overwrites the event times of data's tuples: near MinInt64
// (from a little below the spec's lowest accepted position), near MaxInt64
// (saturating there), or jumping between both ends and zero; roughly
// rising, with jitter and some far-late tuples.
func edgeTimes(r *rand.Rand, data []byte, tupleSize int, spec window.Spec) string {
	n := len(data) / tupleSize
	span := int64(math.MaxInt64)
	if spec.Size < span/4 {
		span = 4 * spec.Size
	}
	step := max(1, span/int64(max(n, 1))*int64(1+r.IntN(3)))
	mode := []string{"min", "max", "mixed"}[r.IntN(3)]
	sat := func(a, b int64) int64 { // a+b, b >= 0, saturated
		if a > math.MaxInt64-b {
			return math.MaxInt64
		}
		return a + b
	}
	lo := spec.Lowest()
	cur := lo - min(r.Int64N(3), lo-math.MinInt64)
	if mode == "max" {
		cur = math.MaxInt64 - r.Int64N(span)
	}
	for i := range n {
		et := cur
		if j := r.Int64N(step + 1); r.IntN(4) == 0 && et-math.MinInt64 >= j {
			et -= j // jitter back
		}
		switch {
		case mode == "mixed" && r.IntN(10) == 0:
			et = []int64{math.MinInt64, lo, lo + r.Int64N(span), 0, math.MaxInt64, math.MaxInt64 - r.Int64N(span)}[r.IntN(6)]
		case r.IntN(50) == 0 && et-math.MinInt64 >= span/2:
			et -= r.Int64N(span / 2) // far late
		}
		binary.LittleEndian.PutUint64(data[i*tupleSize:], uint64(et))
		cur = sat(cur, r.Int64N(step+1))
	}
	return mode
}

// runEdgeCase runs data's tasks through pr (several in flight) and the CPU
// kernel of p, from stream index first. Where the program says ok, its
// result is the CPU's, exactly; it says ok wherever every CPU fragment lies
// in the task's pane range and the CPU refused no tuple, and never where it
// refused one. It returns the tasks run and how many fell back.
func runEdgeCase(t *testing.T, r *rand.Rand, p *kernels.Plan, pr *program, data []byte, first uint64, maxTuples int, msg string) (tasks, fallbacks, refused int) {
	t.Helper()
	k := p.NewKernel()
	type inflight struct {
		data         []byte
		first        uint64
		base, npanes int64
		slots        int64
		i            int
	}
	busy := make([]*inflight, pr.Depth())
	var got, want window.TaskResult
	wait := func(s int) {
		f := busy[s]
		busy[s] = nil
		got.Reset(pr.sh.layout)
		ok, err := pr.Wait(s, &got)
		require.NoError(t, err)
		want.Reset(p.Layout)
		k.Process(f.data, f.first, &want)
		m := fmt.Sprintf("%s, task %d (%d tuples from %d, panes [%d, +%d), %d slots)", msg, f.i, len(f.data)/p.TupleSize, f.first, f.base, f.npanes, f.slots)
		fits := !pr.sh.hashed || groupsOf(&want) <= f.slots
		if want.Refused {
			refused++
			require.False(t, ok, "%s: a refused tuple is outside the range", m)
		} else if inRange(&want, f.base, f.npanes) && fits && (f.npanes > 0 || len(f.data) == 0) {
			require.True(t, ok, "%s: ok; CPU panes %v", m, panes(&want))
		}
		if ok {
			requireSameResult(t, &want, &got, m)
			return
		}
		fallbacks++
		require.False(t, inRange(&want, f.base, f.npanes) && fits && f.npanes > 0 && !want.Refused, "%s: fell back though it fits", m)
	}
	for i, task := range cutTasks(r, data, p.TupleSize, maxTuples) {
		s := r.IntN(len(busy))
		if busy[s] != nil {
			wait(s)
		}
		require.NoError(t, pr.Submit(s, task, first))
		st := pr.slots[s].t
		busy[s] = &inflight{data: task, first: first, base: st.base, npanes: st.npanes, slots: st.slots, i: i}
		if st.npanes > 0 {
			lo, hi := pr.exactLo, pr.exactHi
			require.True(t, st.base >= lo && st.base <= hi && uint64(st.npanes-1) <= uint64(hi)-uint64(st.base), "%s: task %d's panes [%d, +%d) within the exact ones [%d, %d]", msg, i, st.base, st.npanes, lo, hi)
		}
		first += uint64(len(task) / p.TupleSize)
		tasks++
	}
	for _, s := range r.Perm(len(busy)) {
		if busy[s] != nil {
			wait(s)
		}
	}
	return tasks, fallbacks, refused
}

// TestEmulatorAtTheInt64Edges: random GPU queries, range and row windows of
// every size up to MaxInt64, over positions near MinInt64, near MaxInt64
// and mixed (row windows: stream indexes near MaxInt64): wherever the
// emulator (kernels.cu's wrapping arithmetic) says ok its result is the CPU
// kernel's exact one, and the tasks whose panes it cannot compute exactly
// fall back to the CPU.
func TestEmulatorAtTheInt64Edges(t *testing.T) {
	dev := NewEmulator()
	defer dev.Close()
	// The long run's 150, at most 40 under -short, 25 by default.
	seeds := testenv.Scale(25, 150)
	if testing.Short() {
		seeds = min(seeds, 40)
	}
	var tasks, fallbacks, refused int
	modes := map[string]int{}
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 12))
		ts := newTestSchema(t, seed%3 == 2)
		table := testTable(r, 1+r.IntN(40), 1+r.IntN(12))
		var q *query.Query
		for q == nil || q.Stateless() {
			q = randQuery(r, ts, table)
		}
		q.Window = edgeWindow(r, q.Window.Type)
		vec := r.IntN(3) == 0
		p, pg := compilePlans(t, q, kernels.Options{Vectorised: vec})
		require.NoError(t, Supported(p), "seed %d", seed)
		pr := compileEmu(t, dev, pg, 1+r.IntN(4))
		data := randData(r, ts, table, randGen(r), 100+r.IntN(1500))
		mode := edgeTimes(r, data, ts.s.TupleSize, p.Spec)
		var first uint64
		if q.Window.Type == query.Rows && r.IntN(2) == 0 {
			first = uint64(math.MaxInt64 - int64(len(data)/ts.s.TupleSize) - r.Int64N(3*min(q.Window.Size, 1<<40)))
			mode = "rows-top"
		}
		modes[mode]++
		msg := fmt.Sprintf("seed %d, %s, vectorised %v, where=%v window=%+v join=%v group=%v aggs=%v", seed, mode, vec, q.Where, q.Window, q.Join != nil, q.GroupBy, q.Aggregates)
		nt, nf, nr := runEdgeCase(t, r, p, pr, data, first, 1+r.IntN(600), msg)
		tasks += nt
		fallbacks += nf
		refused += nr
	}
	t.Logf("%d tasks, %d fell back (%d with a refused tuple); modes %v", tasks, fallbacks, refused, modes)
	assert.Positive(t, refused)
	assert.Less(t, fallbacks, tasks, "the GPU ran tasks near the edges too")
}

// TestExactPanes: the panes the device computes exactly, for small and
// huge windows; none is below the lowest accepted pane.
func TestExactPanes(t *testing.T) {
	for _, w := range []query.Window{query.Tumbling(10000), query.Sliding(20000, 10000), query.Tumbling(1), query.Sliding(7, 3),
		query.Tumbling(math.MaxInt64), query.Sliding(math.MaxInt64, 1), query.Sliding(1<<62, 1<<61)} {
		spec, err := window.NewSpec(w)
		require.NoError(t, err)
		lo, hi, ok := exactPanes(spec)
		require.True(t, ok, "%+v", w)
		assert.GreaterOrEqual(t, lo, spec.LowestPane(), "%+v", w)
		// The bounds: p*pane - size and the first window's end are int64
		// at lo and hi, and not one pane further.
		assert.GreaterOrEqual(t, lo*spec.Pane, int64(math.MinInt64)+w.Size, "%+v", w)
		assert.Less(t, (lo-1)*spec.Pane, int64(math.MinInt64)+w.Size, "%+v", w)
		assert.Less(t, spec.Open(hi), int64(math.MaxInt64), "%+v: hi's first window ends at an int64", w)
		assert.Equal(t, int64(math.MaxInt64), spec.Open(hi+1), "%+v: hi+1's first window ends past MaxInt64", w)
		assert.False(t, spec.Closed(spec.FirstWindow(hi+1), math.MaxInt64), "%+v", w)
	}
}
