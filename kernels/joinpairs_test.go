package kernels_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/workloads"
)

// TestPairLoopShapes: the WHERE shapes the pair loop specialises, and the
// ones left to the general path.
func TestPairLoopShapes(t *testing.T) {
	s := wjSchema(t)
	c, i := query.C, query.Int
	cases := []struct {
		where   query.Expr
		special bool
		cross   int
	}{
		{nil, true, 0},
		{query.Cmp(c("l.a"), query.Lt, c("r.a")), true, 1},
		{query.Cmp(c("r.c"), query.Ge, c("l.y")), true, 1},
		{query.And(query.Cmp(c("l.a"), query.Lt, c("r.a")), query.And(query.Cmp(c("l.b"), query.Eq, c("r.b")), query.ColGt("l.a", 3))), true, 2},
		{query.Cmp(query.Sub(c("l.a"), c("r.b")), query.Ge, i(-1000)), true, 1},
		{query.Cmp(i(4), query.Lt, query.Sub(c("r.a"), c("l.b"))), true, 1},
		{query.Cmp(query.Add(c("r.a"), c("l.b")), query.Ne, i(4)), true, 1},
		{query.Cmp(query.Mul(c("l.c"), i(3)), query.Gt, query.Add(c("r.y"), c("r.c"))), true, 1},
		{query.And(query.ColLt("r.a", 3), query.Cmp(i(1), query.Lt, i(2))), true, 0},
		// General: int64 differences could overflow, floats would round,
		// OR and products over both sides do not separate.
		{query.Cmp(query.Sub(c("l.c"), c("r.c")), query.Ge, i(0)), false, 0},
		{query.Cmp(query.Sub(c("l.y"), c("r.y")), query.Ge, i(0)), false, 0},
		{query.Cmp(query.Sub(c("l.a"), c("r.a")), query.Ge, i(1<<61)), false, 0},
		{query.Or(query.Cmp(c("l.a"), query.Lt, c("r.a")), query.ColLt("l.a", 0)), false, 0},
		{query.Cmp(query.Mul(c("l.a"), c("r.a")), query.Gt, i(3)), false, 0},
	}
	for _, tc := range cases {
		name := "nil"
		if tc.where != nil {
			name = tc.where.String()
		}
		wj, err := kernels.NewWindowJoin(&query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Tumbling(10), Where: tc.where})
		require.NoError(t, err, name)
		special, cross := wj.PairLoop()
		assert.Equal(t, [2]any{tc.special, tc.cross}, [2]any{special, cross}, name)
	}
}

// TestWindowJoinLargeWindows: windows of more tuples per side than a
// chunk of the vectorised expressions (the operands evaluated a chunk at
// a time, the one-side filters compacting chunk by chunk), against the
// reference.
func TestWindowJoinLargeWindows(t *testing.T) {
	s := wjSchema(t)
	// Seeds 0 (a fixed predicate whose one-side filters compact chunk by
	// chunk) and 1 (an equality first: its right sides, past the bitmaps'
	// bound, ranked for binary searches) by default; seeds 2-4 (random
	// predicates) in the long run.
	for seed := range testenv.Scale(2, 5) {
		r := rand.New(rand.NewPCG(uint64(seed), 21))
		j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Window{Type: query.Rows, Size: 1100, Slide: 1100}, Where: wjRandWhere(r)}
		switch seed {
		case 0:
			j.Where = query.And(query.Cmp(query.C("l.a"), query.Lt, query.C("r.a")), query.ColGt("r.b", 2), query.ColLt("l.b", 4))
		case 1:
			j.Where = query.And(query.Cmp(query.C("l.b"), query.Eq, query.C("r.b")), query.Cmp(query.C("l.c"), query.Le, query.C("r.c")))
		}
		// Two windows in the long run; one past the bitmaps' bound is
		// enough to check the ranked right sides, and by default.
		n := testenv.Scale(1300, 2200)
		if seed == 1 {
			n = 1300
		}
		left, right := wjData(r, n), wjData(r, n+100)
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			want, err := reference.EvaluateJoin(j, left, right)
			require.NoError(t, err)
			wj, err := kernels.NewWindowJoin(j)
			require.NoError(t, err)
			got, _, err := feed(t, r, wj, left, right)
			require.NoError(t, err)
			assert.Equal(t, len(want.Tuples), len(got), "pairs")
			assert.True(t, string(want.Tuples) == string(got), "pairs differ")
		})
	}
}

// joinWorkload is JOIN_r's join and its two generated inputs, n tuples
// each.
func joinWorkload(t testing.TB, r, n int) (*query.WindowJoin, []byte, []byte) {
	w, err := workloads.Lookup("join")
	require.NoError(t, err)
	p := workloads.DefaultParams()
	p.JoinPredicates = r
	parts, err := w.Parts(p)
	require.NoError(t, err)
	j := parts[0].Join
	var in [2][]byte
	for side := range in {
		gp := p
		gp.Seed += uint64(side)
		gen, err := w.NewGenerator(gp)
		require.NoError(t, err)
		in[side] = make([]byte, n*j.Left.TupleSize)
		gen.Fill(in[side], 0)
	}
	return j, in[0], in[1]
}

// TestJoinWorkloadPairLoop: JOIN_1 and JOIN_r run in the specialised loop
// (one cross term per predicate) and give the reference's pairs.
func TestJoinWorkloadPairLoop(t *testing.T) {
	for _, preds := range []int{1, 2, 5} {
		j, left, right := joinWorkload(t, preds, testenv.Scale(1000, 2000)) // windows of 128 tuples a side
		wj, err := kernels.NewWindowJoin(j)
		require.NoError(t, err)
		special, cross := wj.PairLoop()
		assert.True(t, special, "JOIN_%d", preds)
		assert.Equal(t, preds, cross, "JOIN_%d", preds)
		want, err := reference.EvaluateJoin(j, left, right)
		require.NoError(t, err)
		got, _, err := feed(t, rand.New(rand.NewPCG(uint64(preds), 1)), wj, left, right)
		require.NoError(t, err)
		require.NotEmpty(t, want.Tuples)
		assert.True(t, string(want.Tuples) == string(got), "JOIN_%d: pairs differ", preds)
	}
}

// joinCycle is the join stage's steady state over one JOIN_r window: its
// tuples added, the window closed, its task taken, run and handed back, its
// output taken and recycled.
func joinCycle(wj *kernels.WindowJoin, left, right []byte) {
	wj.Add(0, left)
	wj.Add(1, right)
	wj.JoinClosed(false)
	for tk := wj.Take(); tk != nil; tk = wj.Take() {
		tk.Run()
		wj.Done(tk)
	}
	for out, ok := wj.Next(); ok; out, ok = wj.Next() {
		wj.Recycle(out)
	}
}

// TestWindowJoinSteadyStateAllocs: once warm, a window's filing, closing,
// pair computation and hand-off allocate nothing (pane buffers, tasks and
// output buffers are reused).
func TestWindowJoinSteadyStateAllocs(t *testing.T) {
	for _, preds := range []int{1, 3} {
		const window, windows = 128, 400
		j, left, right := joinWorkload(t, preds, window*windows)
		wj, err := kernels.NewWindowJoin(j)
		require.NoError(t, err)
		ts := j.Left.TupleSize
		k := 0
		cycle := func() {
			o := (k % windows) * window * ts
			k++
			joinCycle(wj, left[o:o+window*ts], right[o:o+window*ts])
		}
		for range 20 {
			cycle()
		}
		assert.Zero(t, testing.AllocsPerRun(200, cycle), "JOIN_%d", preds)
		assert.Positive(t, wj.Stats().Pairs)
	}
}

// BenchmarkJoinTask: one JOIN_r window's pairs (128 x 128), the task's Run
// alone, as a worker runs it; a few tasks in turn, whose outputs stay in
// cache as the engine's recycled buffers do.
func BenchmarkJoinTask(b *testing.B) {
	for _, c := range []struct {
		preds  int
		sparse bool
	}{{1, false}, {2, false}, {1, true}} {
		name := fmt.Sprintf("JOIN_%d", c.preds)
		if c.sparse {
			name += "_sparse"
		}
		b.Run(name, func(b *testing.B) {
			const window, windows = 128, 2
			j, left, right := joinWorkload(b, c.preds, window*windows)
			if c.sparse {
				// One pair in a hundred: the comparisons, not the
				// pairs written, are the work.
				j.Where = query.Cmp(query.Sub(query.C("l.a1"), query.C("r.a1")), query.Lt, query.Int(-860))
			}
			wj, err := kernels.NewWindowJoin(j)
			require.NoError(b, err)
			wj.NoBatch()
			wj.Add(0, left)
			wj.Add(1, right)
			wj.JoinClosed(true)
			var tasks []*kernels.JoinTask
			for tk := wj.Take(); tk != nil; tk = wj.Take() {
				tasks = append(tasks, tk)
			}
			require.Len(b, tasks, windows)
			b.SetBytes(int64(2 * window * j.Left.TupleSize))
			b.ResetTimer()
			cpu0 := threadCPU()
			for i := range b.N {
				tasks[i%windows].Run()
			}
			// The thread's CPU time, not the wall clock's: on a shared
			// machine the figure to compare between commits.
			b.ReportMetric(float64(threadCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// threadCPU is the calling thread's CPU time in nanoseconds (the goroutine
// locked to it).
func threadCPU() int64 {
	runtime.LockOSThread()
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkJoinBookkeeping: the window join's serial part per window, the
// work the engine does under its lock and in its ordered hand-off: a
// task's worth of each side filed (AddOwned), the windows closed
// (JoinClosed), their tasks taken and handed back (Take, Done) and their
// outputs handed on (Next, Recycle). The tasks run outside the measured
// time; book-ns/window is the bookkeeping's own.
func BenchmarkJoinBookkeeping(b *testing.B) {
	const window, windows = 128, 256 // one MiB task of 32-byte tuples a side
	j, left, right := joinWorkload(b, 1, window*windows)
	wj, err := kernels.NewWindowJoin(j)
	require.NoError(b, err)
	var bufs [2][]byte
	var book time.Duration
	var tasks []*kernels.JoinTask
	round := func() {
		bufs[0] = append(bufs[0][:0], left...)
		bufs[1] = append(bufs[1][:0], right...)
		t0 := time.Now()
		wj.AddOwned(0, &bufs[0], nil)
		wj.AddOwned(1, &bufs[1], nil)
		wj.JoinClosed(false)
		tasks = tasks[:0]
		for tk := wj.Take(); tk != nil; tk = wj.Take() {
			tasks = append(tasks, tk)
		}
		book += time.Since(t0)
		for _, tk := range tasks {
			tk.Run()
		}
		t0 = time.Now()
		for _, tk := range tasks {
			wj.Done(tk)
		}
		for out, ok := wj.Next(); ok; out, ok = wj.Next() {
			wj.Recycle(out)
		}
		book += time.Since(t0)
	}
	for range 4 {
		round()
	}
	book = 0
	b.ResetTimer()
	for range b.N {
		round()
	}
	b.ReportMetric(float64(book.Nanoseconds())/float64(b.N*windows), "book-ns/window")
}
