//go:build cuda

package gpu

// These tests run the CUDA device and need an NVIDIA GPU and driver: cu's
// init exits the test binary without one. Build the binary elsewhere with
// build/gpu-bundle.sh (or: eval "$(build/cuda-env.sh)"; go test -c -tags
// cuda ./gpu) and run it on the GPU machine. The binary also runs the
// emulator's tests.

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

func openGPU(t *testing.T) Device {
	t.Helper()
	d, err := Open(0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	t.Logf("device %s", d.Name())
	return d
}

func init() {
	compileChecked = func(t *testing.T, d Device, p *kernels.Plan, depth int) *program {
		if _, ok := d.(*cudaDevice); !ok {
			return nil
		}
		return compileCUDA(t, d, p, depth)
	}
}

// compileCUDA compiles p on d with poisoned outputs, and makes every task's
// device output checked against the emulator's for the same task: the same
// pane range, the same words bit for bit (the kernels' atomics are all
// order-independent; hashed groups' entries are compared in the order of
// their first tuples, since the order in which threads claim them is not
// the emulator's), no word left poisoned.
func compileCUDA(t *testing.T, d Device, p *kernels.Plan, depth int) *program {
	t.Helper()
	pr, err := d.Compile(p, depth)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, pr.Close()) })
	cpr := pr.(*program)
	cpr.be.(*cudaBackend).poison = true
	// The emulator's program has a plan of its own: its unpacking must not
	// touch the layout of p (see runCase).
	ep, err := kernels.CompileWith(p.Query, kernels.Options{Vectorised: !p.Fused})
	require.NoError(t, err)
	epr := compileEmu(t, NewEmulator(), ep, 1)
	epr.maxSlots = cpr.maxSlots
	var ewords []uint64
	var eout []byte
	var etask task
	epr.onOutput = func(_ int, tk *task, words []uint64, out []byte) {
		ewords, eout, etask = slices.Clone(words), slices.Clone(out), *tk
	}
	cpr.onOutput = func(s int, tk *task, words []uint64, out []byte) {
		epr.maxPanes, epr.slack, epr.maxSlots = cpr.maxPanes, cpr.slack, cpr.maxSlots
		require.NoError(t, epr.Submit(0, tk.data, tk.first))
		var r window.TaskResult
		r.Reset(ep.Layout)
		_, err := epr.Wait(0, &r)
		require.NoError(t, err)
		require.Equal(t, [4]int64{etask.base, etask.npanes, etask.slots, etask.entries}, [4]int64{tk.base, tk.npanes, tk.slots, tk.entries}, "pane range, table")
		require.Equal(t, len(ewords), len(words), "output words (counters cuda %v emulator %v)", words[:min(len(words), hdrWords)], ewords[:min(len(ewords), hdrWords)])
		if cpr.sh.hashed {
			words = sortedEntries(cpr.sh, tk, words)
			ewords = sortedEntries(cpr.sh, tk, ewords)
			if ewords[hdrOverflow] != 0 {
				// A full table: both claim every slot, but which groups
				// got one, and so which tuples overflowed, depends on
				// the order of the threads.
				require.NotZero(t, words[hdrOverflow], "the emulator's table overflowed, the device's did not")
				head := hdrWords + int(tk.npanes)
				words, ewords = slices.Clone(words[:head]), slices.Clone(ewords[:head])
				words[hdrOverflow], ewords[hdrOverflow] = 1, 1
			}
		}
		for i := range words {
			require.NotEqual(t, poisonWord, words[i], "output word %d was not written (task of %d tuples, %d panes)", i, tk.n, tk.npanes)
			if words[i] != ewords[i] {
				require.Failf(t, "CUDA and emulator outputs differ", "word %d: cuda %#x, emulator %#x (task of %d tuples, panes [%d, +%d)); counters cuda %v emulator %v",
					i, words[i], ewords[i], tk.n, tk.base, tk.npanes, words[:min(len(words), hdrWords)], ewords[:min(len(ewords), hdrWords)])
			}
		}
		require.Equal(t, len(eout), len(out), "selection output bytes")
		require.True(t, slices.Equal(eout, out), "selection outputs differ")
	}
	return cpr
}

// sortedEntries returns words with the hashed groups' entries in the order
// of their first tuples (a copy).
func sortedEntries(sh *shape, tk *task, words []uint64) []uint64 {
	w := slices.Clone(words)
	ew := sh.entryWords()
	head := hdrWords + int(tk.npanes)
	var es [][]uint64
	for e := head; e+ew <= len(w); e += ew {
		es = append(es, slices.Clone(w[e:e+ew]))
	}
	slices.SortFunc(es, func(a, b []uint64) int { return cmp.Compare(a[ew-1], b[ew-1]) })
	for i, e := range es {
		copy(w[head+i*ew:], e)
	}
	return w
}

// TestCUDAMatchesEmulatorAndCPU: random queries of every supported shape
// on random data, tasks of random sizes pipelined on several slots: the
// CUDA device's outputs equal the emulator's, and its results the CPU
// kernel's (ok exactly where the task's panes fit its output).
func TestCUDAMatchesEmulatorAndCPU(t *testing.T) {
	d := openGPU(t)
	var tasks, fallbacks int
	for seed := range 80 {
		r := rand.New(rand.NewPCG(uint64(seed), 13))
		ts := newTestSchema(t, seed%3 == 2)
		table := testTable(r, 1+r.IntN(40), 1+r.IntN(12))
		q := randQuery(r, ts, table)
		p, pg := compilePlans(t, q, kernels.Options{})
		pr := compileCUDA(t, d, pg, 1+r.IntN(4))
		data := randData(r, ts, table, randGen(r), r.IntN(20000))
		msg := fmt.Sprintf("seed %d, where=%v window=%+v join=%v group=%v aggs=%v project=%v",
			seed, q.Where, q.Window, q.Join != nil, q.GroupBy, q.Aggregates, q.Project)
		nt, nf := runCase(t, r, p, pr, data, 1+r.IntN(6000), msg)
		tasks += nt
		fallbacks += nf
	}
	t.Logf("%d tasks, %d fell back", tasks, fallbacks)
}

// TestCUDAFallsBackExactly: narrow pane ranges, so that many tasks do not
// fit; the outside counter says so exactly when the CPU's panes show it.
func TestCUDAFallsBackExactly(t *testing.T) {
	d := openGPU(t)
	for seed := range 20 {
		r := rand.New(rand.NewPCG(uint64(seed), 17))
		ts := newTestSchema(t, false)
		table := testTable(r, 20, 5)
		var q *query.Query
		for q == nil || q.Stateless() {
			q = randQuery(r, ts, table)
		}
		p, pg := compilePlans(t, q, kernels.Options{})
		pr := compileCUDA(t, d, pg, 2)
		pr.slack = func(int64) int64 { return 1 }
		pr.maxPanes = 3
		pr.maxSlots = 32
		g := randGen(r)
		g.lateEvery, g.lateBy = 10, 100
		runCase(t, r, p, pr, randData(r, ts, table, g, 3000), 800, fmt.Sprintf("seed %d", seed))
	}
}

// TestCUDATaskSizes: sizes around the block size and large tasks (many
// blocks: the watermark prefix across blocks, the compaction's offsets).
func TestCUDATaskSizes(t *testing.T) {
	d := openGPU(t)
	r := rand.New(rand.NewPCG(3, 5))
	for _, packed := range []bool{false, true} {
		ts := newTestSchema(t, packed)
		table := testTable(r, 30, 7)
		agg := &query.Query{
			Name: "sizes", Schema: ts.s, Window: query.Sliding(400, 100),
			Where:   query.And(query.ColGe("a", -2), query.ColNe("b", 3)),
			Join:    &query.StaticJoin{Column: "k", Table: table, As: "v"},
			GroupBy: []query.Expr{query.C("v")},
			Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("c")},
				{Func: query.Min, Arg: query.C("a")}, {Func: query.Max, Arg: query.C("ts")}, {Func: query.Avg, Arg: query.C("b")}},
		}
		sel := &query.Query{Name: "sel", Schema: ts.s, Where: query.ColLt("a", 5)}
		proj := &query.Query{Name: "proj", Schema: ts.s, Where: query.ColNe("b", 2),
			Project: []query.Projection{{Expr: query.C("x")}, {Expr: query.C("a")}, {Expr: query.C("y")}, {Expr: query.C("c")}}}
		exprs := &query.Query{Name: "exprs", Schema: ts.s,
			Where: query.Or(query.Cmp(query.Div(query.C("c"), query.C("b")), query.Gt, query.Int(1)), query.Cmp(query.C("x"), query.Lt, query.C("y"))),
			Project: []query.Projection{{Expr: query.Add(query.Mul(query.C("a"), query.Int(3)), query.Int(2))}, {Expr: query.C("x")},
				{Expr: query.Div(query.C("c"), query.Sub(query.C("b"), query.Int(4)))}}}
		hashed := &query.Query{Name: "hashed", Schema: ts.s, Window: query.Sliding(400, 100),
			Where:   query.Cmp(query.Add(query.C("a"), query.C("b")), query.Ne, query.Int(3)),
			GroupBy: []query.Expr{query.C("b"), query.Div(query.C("ts"), query.Int(50))},
			Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.Mul(query.C("c"), query.C("a"))},
				{Func: query.Min, Arg: query.C("a")}, {Func: query.Max, Arg: query.C("ts")}}}
		for _, q := range []*query.Query{agg, sel, proj, exprs, hashed} {
			p, pg := compilePlans(t, q, kernels.Options{})
			pr := compileCUDA(t, d, pg, 2)
			k := p.NewKernel()
			g := dataGen{t0: -5000, step: 1, jitter: 5, lateEvery: 300, lateBy: 150}
			for _, n := range []int{0, 1, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 65537, 300000} {
				data := randData(r, ts, table, g, n)
				require.NoError(t, pr.Submit(1, data, 77))
				base, npanes := pr.slots[1].t.base, pr.slots[1].t.npanes
				var got window.TaskResult
				got.Reset(pg.Layout)
				ok, err := pr.Wait(1, &got)
				require.NoError(t, err)
				want := &window.TaskResult{}
				want.Reset(p.Layout)
				k.Process(data, 77, want)
				m := fmt.Sprintf("%s packed %v n %d", q.Name, packed, n)
				require.Equal(t, p.Stateless() || inRange(want, base, npanes), ok, m)
				if ok {
					requireSameResult(t, want, &got, m)
				}
			}
		}
	}
}

// TestCUDAYSB: YSB's query and data, pipelined four deep; logs the rate
// (tasks of 256 KiB, with the host copy into pinned staging and the
// unpacking, not a benchmark).
func TestCUDAYSB(t *testing.T) {
	d := openGPU(t)
	q, data := ysbShape(t, rand.New(rand.NewPCG(7, 7)), 64<<20)
	p, pg := compilePlans(t, q, kernels.Options{})
	pr := compileCUDA(t, d, pg, 4)
	r := rand.New(rand.NewPCG(1, 1))
	nt, nf := runCase(t, r, p, pr, data, (256<<10)/ysbTupleSize, "ysb")
	assert.Zero(t, nf, "of %d tasks", nt)

	// The rate, without the checks.
	pr.onOutput = nil
	const task = 256 << 10
	var res [4]window.TaskResult
	start := time.Now()
	busy := [4]bool{}
	for i, off := 0, 0; off+task <= len(data); i, off = i+1, off+task {
		s := i % 4
		if busy[s] {
			res[s].Reset(p.Layout)
			ok, err := pr.Wait(s, &res[s])
			require.NoError(t, err)
			require.True(t, ok)
		}
		require.NoError(t, pr.Submit(s, data[off:off+task], uint64(off/ysbTupleSize)))
		busy[s] = true
	}
	for s := range busy {
		if busy[s] {
			res[s].Reset(p.Layout)
			_, err := pr.Wait(s, &res[s])
			require.NoError(t, err)
		}
	}
	el := time.Since(start)
	t.Logf("YSB on %s: %d MiB in %v: %.0f M tuples/s, %.2f GB/s (depth 4, 256 KiB tasks, one goroutine)",
		d.Name(), len(data)>>20, el, float64(len(data)/ysbTupleSize)/el.Seconds()/1e6, float64(len(data))/el.Seconds()/1e9)
}

// TestCUDACloseWithTasksInFlight: Close drains the slots; nothing is left
// behind; the device refuses work after its Close.
func TestCUDACloseWithTasksInFlight(t *testing.T) {
	testCloseWithTasksInFlight(t, func() Device {
		d, err := Open(0)
		require.NoError(t, err)
		return d
	}, 200000)
	_, err := Open(1 << 20)
	assert.ErrorContains(t, err, "CUDA device(s)")
}

// TestCUDARefusesUnsupported: Compile on the device refuses what Supported
// refuses.
func TestCUDARefusesUnsupported(t *testing.T) {
	d := openGPU(t)
	ts := newTestSchema(t, false)
	p, err := kernels.Compile(&query.Query{Name: "q", Schema: ts.s, Window: query.Tumbling(5),
		GroupBy: []query.Expr{query.C("a")}, Aggregates: []query.Aggregate{{Func: query.Sum, Arg: query.C("y")}}})
	require.NoError(t, err)
	_, err = d.Compile(p, 2)
	require.ErrorIs(t, err, ErrNoKernel)
}

// TestCUDAHashedGroups: TestEmulatorHashedGroups's cases on the device.
func TestCUDAHashedGroups(t *testing.T) {
	d := openGPU(t)
	hashedGroupCases(t, func(t *testing.T, p *kernels.Plan, depth int) *program { return compileCUDA(t, d, p, depth) })
}

// TestCUDAExpressionEdgeCases: TestEmulatorExpressionEdgeCases's queries
// on the device.
func TestCUDAExpressionEdgeCases(t *testing.T) {
	d := openGPU(t)
	expressionEdgeCases(t, func(t *testing.T, p *kernels.Plan, depth int) *program { return compileCUDA(t, d, p, depth) })
}

// TestCUDASelectionTwoPass: TestCUDAMatchesEmulatorAndCPU with selections
// compacted by sel_compact (WHERE evaluated again, SABER_HX_GPU_SEL=twopass)
// on the device and the emulator.
func TestCUDASelectionTwoPass(t *testing.T) {
	t.Setenv("SABER_HX_GPU_SEL", "twopass")
	TestCUDAMatchesEmulatorAndCPU(t)
}
