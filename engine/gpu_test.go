package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/gpu"
	"github.com/saber-hx/saber-hx/internal/doubling"
	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/scheduler"
	"github.com/saber-hx/saber-hx/window"
)

// randGPUQuery is a random query of a shape the GPU runs
// (gpu.Supported): WHERE a conjunction of int column-versus-constant
// comparisons, no GROUP BY, COUNT/SUM/AVG/MIN/MAX of int columns, range or
// row windows, tumbling or sliding; or a selection with such a WHERE and
// SELECT * or projected columns.
func randGPUQuery(r *rand.Rand, s *query.Schema) *query.Query {
	q := &query.Query{Name: "gpu", Schema: s}
	cols := []string{"ts", "a", "b", "c"}
	if r.IntN(4) > 0 {
		var terms []query.Expr
		for range 1 + r.IntN(3) {
			terms = append(terms, query.Cmp(query.C(cols[1+r.IntN(3)]), query.CmpOp(1+r.IntN(6)), query.Int(r.Int64N(20)-5)))
		}
		q.Where = query.And(terms...)
	}
	if r.IntN(3) == 0 {
		if r.IntN(2) == 0 {
			for _, c := range []string{"a", "c", "x", "y", "b"}[:1+r.IntN(5)] {
				q.Project = append(q.Project, query.Projection{Expr: query.C(c)})
			}
		}
		return q
	}
	q.Window = randWindow(r, 200)
	funcs := []query.AggFunc{query.Count, query.Sum, query.Avg, query.Min, query.Max}
	for i := range 1 + r.IntN(4) {
		f := funcs[r.IntN(len(funcs))]
		ag := query.Aggregate{Func: f, As: fmt.Sprintf("g%d", i)}
		if f != query.Count {
			ag.Arg = query.C(cols[r.IntN(len(cols))])
		}
		q.Aggregates = append(q.Aggregates, ag)
	}
	return q
}

// gpuSupported reports whether package gpu has kernels for q.
func gpuSupported(t testing.TB, q *query.Query) bool {
	p, err := kernels.Compile(q)
	require.NoError(t, err)
	return gpu.Supported(p) == nil
}

// warnings collects Config.Warn's messages (called concurrently by
// pinning workers).
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) warn(m string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, m)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.msgs)
}

// runQueries runs qs at once, each fed datas[i] by a producer goroutine of
// its own, and checks every query's output against the reference
// evaluator. It returns the engine (closed) and the counters.
func runQueries(t *testing.T, cfg Config, qs []*query.Query, datas [][]byte) (*Engine, []Stats) {
	t.Helper()
	return runQueriesWant(t, cfg, qs, datas, make([]*reference.Result, len(qs)))
}

// runQueriesWant is runQueries with the reference evaluator's outputs in
// wants, those not nil; it fills in the others, for a caller that runs the
// same queries over the same inputs again.
func runQueriesWant(t *testing.T, cfg Config, qs []*query.Query, datas [][]byte, wants []*reference.Result) (*Engine, []Stats) {
	t.Helper()
	results := make([]*reference.Result, len(qs))
	var specs []Spec
	for i, q := range qs {
		results[i] = &reference.Result{}
		specs = append(specs, specInto(q, results[i]))
	}
	e, err := Start(cfg, specs)
	require.NoError(t, err)
	errs := make(chan error, len(qs))
	for i := range qs {
		go func() {
			r := rand.New(rand.NewPCG(uint64(i), 1))
			data := datas[i]
			for len(data) > 0 {
				n := min(len(data), 1+r.IntN(2*cfg.TaskSize))
				if err := e.Stream(i).Write(data[:n]); err != nil {
					errs <- err
					return
				}
				data = data[n:]
			}
			errs <- nil
		}()
	}
	for range qs {
		require.NoError(t, <-errs)
	}
	stats, err := e.CloseAll()
	require.NoError(t, err)
	for i, q := range qs {
		if wants[i] == nil {
			var err error
			wants[i], err = reference.Evaluate(q, datas[i])
			require.NoError(t, err)
		}
		want := wants[i]
		st := stats[i]
		results[i].Counts = reference.Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
		assert.Empty(t, reference.Diff(q, want, results[i], 1e-9), "query %d (%s): where=%v window=%+v group=%v aggs=%v project=%v",
			i, q.Name, q.Where, q.Window, q.GroupBy, q.Aggregates, q.Project)
	}
	return e, stats
}

// TestGPUModesMatchReference: several random queries at once, with and
// without GPU kernels, in gpu mode (the queries the GPU runs) and hybrid
// mode (all of them), under every policy and at pipeline depths 1 and 4,
// on package gpu's emulator: every output equals the reference evaluator's; in
// hybrid mode a query without a GPU kernel never runs on the GPU kind and
// Start warned about it once; every program is closed and no goroutine is
// left behind.
//
// Sequential (no parallel): whether the GPU worker gets a task
// before the CPU one takes them all is up to the machine's load.
func TestGPUModesMatchReference(t *testing.T) {
	seeds := 2
	if testing.Short() {
		seeds = 1
	}
	testModesMatchReference(t, gpu.NewEmulator, seeds)
}

// testModesMatchReference is TestGPUModesMatchReference on the devices
// newDevice returns, one per run, closed after it.
func testModesMatchReference(t *testing.T, newDevice func() gpu.Device, seeds int) {
	base := runtime.NumGoroutine()
	s := randSchema(t)
	var fallbacks uint64
	run := 0
	for seed := range seeds {
		for _, mode := range []string{"gpu", "hybrid"} {
			for _, policy := range scheduler.Policies {
				for _, depth := range []int{1, 4} {
					run++
					t.Run(fmt.Sprintf("seed%d/%s/%s/depth%d", seed, mode, policy, depth), func(t *testing.T) {
						r := rand.New(rand.NewPCG(uint64(seed), uint64(run)))
						var qs []*query.Query
						var datas [][]byte
						var supported []bool
						for len(qs) < 4 {
							q := randGPUQuery(r, s)
							if mode == "hybrid" && len(qs)%2 == 1 {
								q = randQuery(r, s) // mostly without a GPU kernel
							}
							if q.Validate() != nil {
								continue
							}
							q.Name = fmt.Sprintf("q%d", len(qs))
							qs = append(qs, q)
							supported = append(supported, gpuSupported(t, q))
							datas = append(datas, randData(r, 1000+r.IntN(1500)))
						}
						if mode == "gpu" {
							require.NotContains(t, supported, false)
						}
						// attempt runs the queries once and returns the tasks the
						// GPU ran.
						attempt := func() uint64 {
							dev := &checkedDevice{Device: newDevice()}
							defer dev.Close()
							var warns warnings
							cfg := Config{Workers: 1, TaskSize: randTuple * (8 + r.IntN(40)), BufferSize: 1 << 13,
								Policy: policy, MonitorInterval: 20 * time.Millisecond, Warn: warns.warn,
								GPU: dev, GPUOnly: mode == "gpu", GPUDepth: depth}
							if policy == scheduler.Static {
								cfg.Static = map[string]string{}
								for i, q := range qs {
									cfg.Static[q.Name] = "gpu"
									if !supported[i] || (mode == "hybrid" && i == 0) {
										cfg.Static[q.Name] = "cpu"
									}
								}
							}
							e, stats := runQueries(t, cfg, qs, datas)
							sched := e.Scheduling()
							gpuKind := slices.Index(sched.Kinds, "gpu")
							require.GreaterOrEqual(t, gpuKind, 0, "kinds %v", sched.Kinds)
							if mode == "gpu" {
								assert.Equal(t, []string{"gpu"}, sched.Kinds)
								assert.Nil(t, sched.Runnable)
							} else {
								assert.Equal(t, []string{"cpu", "gpu"}, sched.Kinds)
							}
							var gpuTasks uint64
							for i, q := range qs {
								ran := sched.Tasks[gpuKind][i]
								gpuTasks += ran
								var total uint64
								for k := range sched.Kinds {
									total += sched.Tasks[k][i]
								}
								assert.Equal(t, stats[i].Tasks, total, "query %d: every task ran once", i)
								warned := slices.Contains(warns.all(), fmt.Sprintf("query %q runs on the CPU only: %s", q.Name, e.streams[i].gpuReason()))
								if supported[i] {
									assert.False(t, warned, "query %d", i)
									assert.True(t, sched.Runnable == nil || sched.Runnable[i][gpuKind], "query %d", i)
									continue
								}
								assert.Zero(t, ran, "query %d has no GPU kernel: no task of it on the GPU", i)
								require.NotNil(t, sched.Runnable)
								assert.False(t, sched.Runnable[i][gpuKind])
								assert.True(t, warned, "query %d: warned once; warnings %q", i, warns.all())
								assert.Zero(t, stats[i].GPUFallbackTasks)
							}
							for i := range qs {
								fallbacks += stats[i].GPUFallbackTasks
							}
							dev.check(t, depth)
							return gpuTasks
						}
						gpuTasks := attempt()
						if mode == "hybrid" && policy == scheduler.HLS {
							// hls lets the GPU measure each query on its
							// first Pop, but until then the CPU worker
							// takes every task: a run of a few
							// milliseconds can end before a loaded
							// machine schedules the GPU's goroutine.
							// A GPU that hls never serves fails every
							// attempt.
							for try := 1; gpuTasks == 0 && try < 4; try++ {
								t.Logf("attempt %d: the GPU ran no task; again", try)
								gpuTasks = attempt()
							}
						}
						if mode == "gpu" || policy != scheduler.FCFS {
							// fcfs hands a task to whichever worker asks
							// first: on a loaded machine the CPU worker
							// may take them all.
							assert.Positive(t, gpuTasks, "the GPU ran tasks")
						}
					})
				}
			}
		}
	}
	t.Logf("tasks run on the CPU fallback: %d", fallbacks)
	assertNoLeak(t, base)
}

// fallbackData is tuples whose event time advances by 1 ms per tuple, with
// every 50th tuple 5 s in the past: its pane is far outside the range of
// panes a GPU program's output covers for a task (the panes of its first
// and last tuples with a little slack), so its task falls back to the CPU.
func fallbackData(n int) []byte {
	b := make([]byte, n*randTuple)
	for i := range n {
		t := b[i*randTuple:]
		ts := int64(i)
		if i%50 == 49 {
			ts -= 5000
		}
		binary.LittleEndian.PutUint64(t[0:], uint64(ts))
		binary.LittleEndian.PutUint32(t[8:], uint32(i%13))
		binary.LittleEndian.PutUint32(t[12:], uint32(i%7))
		binary.LittleEndian.PutUint64(t[16:], uint64(i%1000-300))
	}
	return b
}

// TestGPUFallback: tasks whose panes the GPU program's output cannot hold
// run on the GPU worker's CPU kernel, are counted in GPUFallbackTasks and
// give the reference's results, at depths 1 and 4, in both modes.
func TestGPUFallback(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	q := &query.Query{Name: "fb", Schema: s, Window: query.Tumbling(10), Where: query.ColGe("a", 1),
		Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("c")}, {Func: query.Max, Arg: query.C("b")}}}
	require.True(t, gpuSupported(t, q))
	const tuples, perTask = 4000, 40 // 100 tasks, 80 of which hold a tuple 5 s in the past
	data := fallbackData(tuples)
	want := make([]*reference.Result, 1) // the reference's, once for the four runs
	for _, mode := range []string{"gpu", "hybrid"} {
		for _, depth := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/depth%d", mode, depth), func(t *testing.T) {
				dev := &checkedDevice{Device: gpu.NewEmulator()}
				defer dev.Close()
				cfg := Config{Workers: 1, TaskSize: randTuple * perTask, BufferSize: 1 << 14, GPU: dev, GPUOnly: mode == "gpu", GPUDepth: depth,
					Policy: scheduler.Static, Static: map[string]string{"fb": "gpu"}}
				e, stats := runQueriesWant(t, cfg, []*query.Query{q}, [][]byte{data}, want)
				st := stats[0]
				assert.Equal(t, uint64(tuples/perTask), st.Tasks)
				// A far-past tuple that passes WHERE is late; its task falls
				// back unless it is the task's last tuple (the range then
				// spans from its pane to the first tuple's).
				var late, fallback uint64
				for i := 49; i < tuples; i += 50 {
					if i%13 == 0 {
						continue // filtered: a = i%13 < 1
					}
					late++
					if i%perTask != perTask-1 {
						fallback++
					}
				}
				assert.Equal(t, late, st.Late)
				assert.Equal(t, fallback, st.GPUFallbackTasks)
				assert.Equal(t, dev.fallbacks(), st.GPUFallbackTasks, "every ok=false counted")
				assert.Positive(t, st.GPUFallbackTasks)
				gpuKind := slices.Index(e.Scheduling().Kinds, "gpu")
				assert.Equal(t, st.Tasks, e.Scheduling().Tasks[gpuKind][0], "bound to the GPU: it ran every task, the fallbacks too")
				dev.check(t, depth)
			})
		}
	}
	assertNoLeak(t, base)
}

// TestGPUPipelineDepth: with a backlog the GPU worker keeps depth tasks in
// flight, never more, and every program is closed at the end.
func TestGPUPipelineDepth(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	q := &query.Query{Name: "p", Schema: s, Window: query.Sliding(40, 10),
		Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Min, Arg: query.C("c")}}}
	// 400 tasks in the long run, 100 in the default one: a backlog either way.
	data := randData(rand.New(rand.NewPCG(2, 2)), testenv.Scale(5000, 20000))
	want := make([]*reference.Result, 1) // the reference's, once for both depths
	for _, depth := range []int{1, 4} {
		dev := &checkedDevice{Device: gpu.NewEmulator(), delay: 200 * time.Microsecond}
		cfg := Config{TaskSize: randTuple * 50, BufferSize: 1 << 16, GPU: dev, GPUOnly: true, GPUDepth: depth}
		runQueriesWant(t, cfg, []*query.Query{q}, [][]byte{data}, want)
		dev.check(t, depth)
		assert.Equal(t, depth, dev.maxInFlight, "a backlog fills the pipeline")
		require.NoError(t, dev.Close())
	}
	assertNoLeak(t, base)
}

// TestGPUUnpackOverlapsFinish: the GPU worker's unpacker unpacks one
// task while the worker finishes (waits for) the next ones: with a slow
// Unpack, Finishes run during Unpacks, and the outputs are the
// reference's; SABER_HX_GPU_UNPACK=inline Waits instead, with none.
func TestGPUUnpackOverlapsFinish(t *testing.T) {
	base := runtime.NumGoroutine()
	s := randSchema(t)
	q := &query.Query{Name: "u", Schema: s, Window: query.Sliding(40, 10), Where: query.ColGe("a", 1),
		Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("c")}}}
	data := randData(rand.New(rand.NewPCG(3, 3)), 8000)
	want := make([]*reference.Result, 1) // the reference's, once for both
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			if inline {
				t.Setenv("SABER_HX_GPU_UNPACK", "inline")
			}
			dev := &checkedDevice{Device: gpu.NewEmulator(), unpackDelay: 300 * time.Microsecond}
			defer dev.Close()
			cfg := Config{TaskSize: randTuple * 50, BufferSize: 1 << 16, GPU: dev, GPUOnly: true, GPUDepth: 4}
			runQueriesWant(t, cfg, []*query.Query{q}, [][]byte{data}, want)
			dev.check(t, 4)
			dev.mu.Lock()
			defer dev.mu.Unlock()
			if inline {
				assert.Zero(t, dev.finishes)
			} else {
				assert.Positive(t, dev.overlapped, "of %d Finishes, none while an Unpack ran", dev.finishes)
			}
		})
	}
	assertNoLeak(t, base)
}

// TestGPUUnpackInline: SABER_HX_GPU_UNPACK=inline: the GPU worker Waits on
// its own goroutine (no unpacker), with the same outcomes: the fallback,
// error, depth and modes tests again.
func TestGPUUnpackInline(t *testing.T) {
	t.Setenv("SABER_HX_GPU_UNPACK", "inline")
	t.Run("fallback", TestGPUFallback)
	t.Run("errors", TestGPUErrorsFailTheRun)
	t.Run("depth", TestGPUPipelineDepth)
	t.Run("modes", func(t *testing.T) { testModesMatchReference(t, gpu.NewEmulator, 1) })
}

// TestGPUChainsAndJoins: a chain of two queries with GPU kernels and a
// window join (whose inputs pass through the GPU, and whose pairs the
// result stage has the GPU's join program compute) in gpu mode, and a chain whose
// downstream has no GPU kernel in hybrid mode, with small rings so that
// result stages wait for downstream rings and run the pipeline meanwhile.
func TestGPUChainsAndJoins(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	r := rand.New(rand.NewPCG(21, 22))
	up := &query.Query{Name: "up", Schema: s, Window: query.Sliding(20, 10), Where: query.ColGe("a", 0),
		Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}, {Func: query.Sum, Arg: query.C("c"), As: "sc"}}}
	out, err := up.OutputSchema()
	require.NoError(t, err)
	downs := map[string]*query.Query{
		"gpu": {Name: "down", Schema: out, Window: query.Tumbling(100),
			Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Max, Arg: query.C("sc")}}},
		"hybrid": {Name: "down", Schema: out, Window: query.Tumbling(100), GroupBy: []query.Expr{query.C("n")},
			Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.Mul(query.C("sc"), query.Float(0.5))}}},
	}
	j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Sliding(30, 10), Where: query.Cmp(query.C("l.b"), query.Eq, query.C("r.b"))}
	for _, mode := range []string{"gpu", "hybrid"} {
		t.Run(mode, func(t *testing.T) {
			down := downs[mode]
			assert.Equal(t, mode == "gpu", gpuSupported(t, down))
			data, left, right := randData(r, 4000), randData(r, 600), randData(r, 600)
			dev := &checkedDevice{Device: gpu.NewEmulator()}
			defer dev.Close()
			var warns warnings
			cfg := Config{Workers: 1, TaskSize: randTuple * 16, BufferSize: 4096, GPU: dev, GPUOnly: mode == "gpu", GPUDepth: 3, Warn: warns.warn}
			var upTuples, pairs []byte
			got := &reference.Result{}
			e, err := Start(cfg, []Spec{
				{Query: up, Tuples: func(b []byte) error { upTuples = doubling.Append(upTuples, b...); return nil }},
				{Query: down, Upstream: Output(0), Windows: rowsInto(down, got)},
				{Join: j, Tuples: func(b []byte) error { pairs = doubling.Append(pairs, b...); return nil }},
			})
			require.NoError(t, err)
			errs := make(chan error, 3)
			go func() { errs <- e.Stream(0).Write(data) }()
			go func() { errs <- e.Stream(2).Write(left) }()
			go func() { errs <- e.Stream(2).Right().Write(right) }()
			for range 3 {
				require.NoError(t, <-errs)
			}
			stats, err := e.CloseAll()
			require.NoError(t, err)

			wantUp, err := reference.Evaluate(up, data)
			require.NoError(t, err)
			wantDown, err := reference.Evaluate(down, upTuples)
			require.NoError(t, err)
			assert.Equal(t, wantUp.Counts, reference.Counts{Tuples: stats[0].Tuples, Filtered: stats[0].Filtered, Late: stats[0].Late, Counted: stats[0].Counted})
			got.Counts = reference.Counts{Tuples: stats[1].Tuples, Filtered: stats[1].Filtered, Unmatched: stats[1].Unmatched, Late: stats[1].Late, Counted: stats[1].Counted}
			assert.Empty(t, reference.Diff(down, wantDown, got, 1e-9))
			assert.Positive(t, stats[1].Windows)
			wantJ, err := reference.EvaluateJoin(j, left, right)
			require.NoError(t, err)
			assert.True(t, string(wantJ.Tuples) == string(pairs), "join pairs differ: %d bytes, want %d", len(pairs), len(wantJ.Tuples))
			assert.Equal(t, wantJ.Counts, reference.Counts{Tuples: stats[2].Tuples, Late: stats[2].Late, Counted: stats[2].Counted})

			sched := e.Scheduling()
			gpuKind := slices.Index(sched.Kinds, "gpu")
			assert.Equal(t, []string{"up", "down", "j.left", "j.right"}, e.StreamNames())
			for q := range e.StreamNames() {
				if mode == "hybrid" && q == 1 {
					assert.Zero(t, sched.Tasks[gpuKind][q], "down has no GPU kernel")
					assert.Equal(t, []string{fmt.Sprintf("query %q runs on the CPU only: %s", "down", e.streams[1].gpuReason())}, warns.all())
					continue
				}
				if mode == "gpu" {
					assert.Positive(t, sched.Tasks[gpuKind][q], "query %d", q)
				}
			}
			dev.check(t, 3)
		})
	}
	assertNoLeak(t, base)
}

// TestGPUConfigErrors: gpu mode refuses a query without a GPU kernel,
// naming it and the operator and pointing at hybrid mode; static binding
// of such a query to the GPU is refused naming it; bad GPU settings.
func TestGPUConfigErrors(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	good := &query.Query{Name: "good", Schema: s, Window: query.Tumbling(10), Aggregates: []query.Aggregate{{Func: query.Count}}}
	bad := &query.Query{Name: "bad", Schema: s, Window: query.Tumbling(10),
		Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("y")}}}
	require.False(t, gpuSupported(t, bad))
	dev := &checkedDevice{Device: gpu.NewEmulator()}
	defer dev.Close()
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"gpu mode", Config{GPU: dev, GPUOnly: true}, []string{`gpu mode: query "bad" cannot run on the GPU`, "SUM(y)", "no GPU kernel", "--mode hybrid"}},
		{"static", Config{GPU: dev, Policy: scheduler.Static, Static: map[string]string{"good": "gpu", "bad": "gpu"}},
			[]string{"static binding bad=gpu", `query "bad" has no GPU kernel`, "SUM(y)"}},
		{"gpu mode without a device", Config{GPUOnly: true}, []string{"without a GPU device"}},
		{"depth", Config{GPU: dev, GPUDepth: -1}, []string{"GPU pipeline depth -1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Workers, cfg.TaskSize, cfg.BufferSize = 1, randTuple, 1<<12
			_, err := Start(cfg, []Spec{{Query: good}, {Query: bad}})
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrConfig)
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w)
			}
		})
	}
	dev.check(t, 4)
	assertNoLeak(t, base)
}

// TestGPUErrorsFailTheRun: an error of the device's Wait fails the run
// with the query and the task named; the engine still drains every slot
// and closes its programs.
func TestGPUErrorsFailTheRun(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	q := &query.Query{Name: "e", Schema: s, Window: query.Tumbling(10), Aggregates: []query.Aggregate{{Func: query.Count}}}
	for _, mode := range []string{"gpu", "hybrid"} {
		dev := &checkedDevice{Device: gpu.NewEmulator(), failWait: 5}
		cfg := Config{Workers: 1, TaskSize: randTuple * 10, BufferSize: 1 << 12, GPU: dev, GPUOnly: mode == "gpu",
			Policy: scheduler.Static, Static: map[string]string{"e": "gpu"}}
		e, err := Start(cfg, []Spec{{Query: q, Windows: func(*Window) error { return nil }}})
		require.NoError(t, err)
		werr := e.Write(randData(rand.New(rand.NewPCG(1, 1)), 5000))
		_, err = e.Close()
		require.Error(t, err, mode)
		assert.ErrorContains(t, err, `GPU emulator: query "e": task 4: injected failure`)
		if werr != nil {
			assert.ErrorContains(t, werr, "injected failure", "the producer sees the failure")
		}
		dev.check(t, DefaultGPUDepth)
		require.NoError(t, dev.Close())
	}
	assertNoLeak(t, base)
}

// checkedDevice wraps a Device and checks how the engine uses it: slots
// used one task at a time, at most the depth in flight over all programs,
// every task waited for and every program closed by the end. failWait > 0
// makes that Wait (counted from 1) return an error; delay slows each Wait.
type checkedDevice struct {
	gpu.Device
	failWait int
	delay    time.Duration
	// unpackDelay slows each Unpack; overlapped counts the Finishes that
	// ran while an Unpack did.
	unpackDelay time.Duration
	unpacking   int
	overlapped  int

	mu                    sync.Mutex
	programs, closed      int
	inFlight, maxInFlight int
	waits, notOK          int // Waits or Unpacks; those with ok false
	finishes              int
	errs                  []string
}

func (d *checkedDevice) Compile(p *kernels.Plan, depth int) (gpu.Program, error) {
	pr, err := d.Device.Compile(p, depth)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.programs++
	return &checkedProgram{Program: pr, d: d, busy: make([]bool, depth), finished: make([]bool, depth)}, nil
}

func (d *checkedDevice) fallbacks() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return uint64(d.notOK)
}

// check asserts that the engine drained and closed everything, with at
// most depth tasks in flight, and Finished and Unpacked unless
// SABER_HX_GPU_UNPACK=inline.
func (d *checkedDevice) check(t *testing.T, depth int) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	assert.Empty(t, d.errs)
	if unpackInline() {
		assert.Zero(t, d.finishes, "inline: Wait only")
	} else if d.waits > 0 {
		assert.Positive(t, d.finishes, "split: Finish and Unpack")
	}
	assert.Zero(t, d.inFlight, "every submitted task waited for")
	assert.Equal(t, d.programs, d.closed, "every program closed")
	assert.LessOrEqual(t, d.maxInFlight, depth)
}

// checkedProgram is also a GPUUnpacker (its program is gpu's): the
// GPU worker Finishes and Unpacks, unless SABER_HX_GPU_UNPACK=inline, and
// then Waits.
type checkedProgram struct {
	gpu.Program
	d        *checkedDevice
	busy     []bool
	finished []bool // Finished, not yet Unpacked
	closed   bool
	unpacks  int // Unpacks running now (at most one: the worker's one unpacker)
}

func (p *checkedProgram) Finish(s int) error {
	d := p.d
	if d.delay > 0 {
		time.Sleep(d.delay)
	}
	err := p.Program.(gpu.Unpacker).Finish(s)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.finishes++
	if d.unpacking > 0 {
		d.overlapped++
	}
	if !p.busy[s] || p.finished[s] {
		d.errs = append(d.errs, fmt.Sprintf("Finish on slot %d: busy %v, finished %v", s, p.busy[s], p.finished[s]))
	}
	if err != nil {
		p.busy[s] = false
		d.inFlight--
		return err
	}
	p.finished[s] = true
	return nil
}

func (p *checkedProgram) Unpack(s int, r *window.TaskResult) (bool, error) {
	d := p.d
	d.mu.Lock()
	p.unpacks++
	d.unpacking++
	if p.unpacks > 1 {
		d.errs = append(d.errs, "two Unpacks at once")
	}
	d.mu.Unlock()
	if d.unpackDelay > 0 {
		time.Sleep(d.unpackDelay)
	}
	ok, err := p.Program.(gpu.Unpacker).Unpack(s, r)
	d.mu.Lock()
	defer d.mu.Unlock()
	p.unpacks--
	d.unpacking--
	if !p.finished[s] {
		d.errs = append(d.errs, fmt.Sprintf("Unpack on slot %d, not finished", s))
	}
	p.busy[s], p.finished[s] = false, false
	d.inFlight--
	d.waits++
	if d.waits == d.failWait {
		return false, errors.New("injected failure")
	}
	if !ok {
		d.notOK++
	}
	return ok, err
}

func (p *checkedProgram) Submit(s int, data []byte, first uint64) error {
	d := p.d
	d.mu.Lock()
	if p.busy[s] {
		d.errs = append(d.errs, fmt.Sprintf("Submit on busy slot %d", s))
	}
	if p.finished[s] {
		d.errs = append(d.errs, fmt.Sprintf("Submit on slot %d, finished and not unpacked", s))
	}
	p.busy[s] = true
	d.inFlight++
	d.maxInFlight = max(d.maxInFlight, d.inFlight)
	d.mu.Unlock()
	return p.Program.Submit(s, data, first)
}

func (p *checkedProgram) Wait(s int, r *window.TaskResult) (bool, error) {
	d := p.d
	if d.delay > 0 {
		time.Sleep(d.delay)
	}
	ok, err := p.Program.Wait(s, r)
	d.mu.Lock()
	defer d.mu.Unlock()
	if !p.busy[s] {
		d.errs = append(d.errs, fmt.Sprintf("Wait on idle slot %d", s))
	}
	if !unpackInline() {
		d.errs = append(d.errs, "Wait on a GPUUnpacker: the worker should Finish and Unpack")
	}
	p.busy[s] = false
	d.inFlight--
	d.waits++
	if d.waits == d.failWait {
		return false, errors.New("injected failure")
	}
	if !ok {
		d.notOK++
	}
	return ok, err
}

func (p *checkedProgram) Close() error {
	d := p.d
	d.mu.Lock()
	if !p.closed {
		d.closed++
		p.closed = true
	}
	if strings.Contains(fmt.Sprint(p.busy), "true") {
		d.errs = append(d.errs, "Close with a task in flight")
	}
	d.mu.Unlock()
	return p.Program.Close()
}

// TestGPURegistersRings: with a device that registers host memory (the
// emulator keeps the ranges), the GPU worker registers the ring of every
// query it runs, so that every task is copied to the device from the ring
// (no staging copy), and unregisters them once its slots drained;
// SABER_HX_GPU_REGISTER=0 leaves every task to the staging copy. Outputs
// match the reference either way.
func TestGPURegistersRings(t *testing.T) {
	s := randSchema(t)
	agg := &query.Query{Name: "agg", Schema: s, Window: query.Sliding(40, 10),
		Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Max, Arg: query.C("c")}}}
	sel := &query.Query{Name: "sel", Schema: s, Where: query.ColGe("a", 0)}
	r := rand.New(rand.NewPCG(5, 6))
	datas := [][]byte{randData(r, 9000), randData(r, 7000)}
	for _, off := range []bool{false, true} {
		if off {
			t.Setenv("SABER_HX_GPU_REGISTER", "0")
		}
		dev := gpu.NewEmulator()
		cfg := Config{TaskSize: randTuple * 64, BufferSize: 1 << 16, GPU: dev, GPUOnly: true, GPUDepth: 3}
		_, stats := runQueries(t, cfg, []*query.Query{agg, sel}, datas)
		tm, ok := gpu.TimingsOf(dev)
		require.True(t, ok)
		var tasks uint64
		for _, st := range stats {
			tasks += st.Tasks
		}
		require.Positive(t, tasks)
		assert.Equal(t, tasks, tm.Tasks, "every task timed")
		assert.Zero(t, tm.Registered, "unregistered at the end")
		if off {
			assert.Zero(t, tm.DirectTasks)
			assert.Equal(t, tasks, tm.StagedTasks)
		} else {
			assert.Equal(t, tasks, tm.DirectTasks, "every task copied from its registered ring")
			assert.Zero(t, tm.StagedTasks)
		}
		assert.Equal(t, tasks, tm.OneTrip+tm.TwoTrips)
		assert.Equal(t, "emulated", tm.Sync)
		assert.Zero(t, tm.CopyIn.P50, "no GPU times on the emulator")
		require.NoError(t, dev.Close())
	}
}

// refusingDevice is the emulator with a registrar that refuses ranges of
// more than max bytes.
type refusingDevice struct {
	gpu.Device
	max int
}

func (d *refusingDevice) RegisterHost(b []byte) error {
	if len(b) > d.max {
		return errors.New("refused")
	}
	return d.Device.(gpu.HostRegistrar).RegisterHost(b)
}

func (d *refusingDevice) UnregisterHost(b []byte) error {
	return d.Device.(gpu.HostRegistrar).UnregisterHost(b)
}

// TestGPURegistersHalfRings: a device that refuses a ring's mirrored
// mapping gets its first half (tasks that cross the wrap are staged); one
// that refuses everything is a warning, and every task is staged.
func TestGPURegistersHalfRings(t *testing.T) {
	parallel(t)
	s := randSchema(t)
	agg := &query.Query{Name: "agg", Schema: s, Window: query.Sliding(40, 10),
		Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Max, Arg: query.C("c")}}}
	data := randData(rand.New(rand.NewPCG(7, 8)), 20000)
	const ring = 1 << 16
	for _, limit := range []int{ring, 0} {
		emu := gpu.NewEmulator()
		dev := &refusingDevice{Device: emu, max: limit}
		var w warnings
		cfg := Config{TaskSize: randTuple * 60, BufferSize: ring, GPU: dev, GPUOnly: true, GPUDepth: 2, Warn: w.warn}
		_, stats := runQueries(t, cfg, []*query.Query{agg}, [][]byte{data})
		tm, ok := gpu.TimingsOf(emu)
		require.True(t, ok)
		assert.Equal(t, stats[0].Tasks, tm.DirectTasks+tm.StagedTasks)
		assert.Zero(t, tm.Registered, "unregistered at the end")
		if limit > 0 {
			assert.Positive(t, tm.DirectTasks, "tasks inside the first half are copied from the ring")
			assert.Positive(t, tm.StagedTasks, "tasks across the wrap are staged")
			assert.Empty(t, w.all())
		} else {
			assert.Zero(t, tm.DirectTasks)
			require.Len(t, w.all(), 1)
			assert.Contains(t, w.all()[0], `query "agg": its ring is copied through staging: refused`)
		}
		require.NoError(t, emu.Close())
	}
}

// TestGPUSessions: a session window has no GPU kernel: in hybrid mode its
// query runs on the CPU workers (and matches the reference), in gpu mode
// it is refused; its compile for the device once divided by the session
// spec's zero pane, a panic on the GPU worker that killed the process.
func TestGPUSessions(t *testing.T) {
	parallel(t)
	s := randSchema(t)
	q := &query.Query{Name: "sess", Schema: s, Window: query.Sessions(5),
		Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("a")}}}
	require.NoError(t, q.Validate())
	data := randData(rand.New(rand.NewPCG(3, 3)), 5000)
	dev := gpu.NewEmulator()
	runQueries(t, Config{Workers: 1, TaskSize: randTuple * 37, BufferSize: 1 << 14, GPU: dev}, []*query.Query{q}, [][]byte{data})
	require.NoError(t, dev.Close())
	dev = gpu.NewEmulator()
	_, err := Start(Config{Workers: 1, TaskSize: randTuple * 37, BufferSize: 1 << 14, GPU: dev, GPUOnly: true},
		[]Spec{{Query: q, Windows: func(*Window) error { return nil }}})
	assert.ErrorIs(t, err, ErrConfig)
	assert.ErrorContains(t, err, "a session window")
	require.NoError(t, dev.Close())
}
