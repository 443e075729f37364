package scheduler

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gpuless: three queries on two kinds (cpu, gpu); the gpu has no kernel for
// query 1.
var gpuless = [][]bool{{true, true}, {true, false}, {true, true}}

// runnableCfg is a two-kind config of policy p with query 1 not runnable by
// kind 1; static binds query 1 to the cpu and the others to the gpu.
func runnableCfg(p Policy) Config {
	return Config{Policy: p, Kinds: 2, Queries: 3, Capacity: 16, Runnable: gpuless,
		Static: map[int]int{0: 1, 1: 0, 2: 1}}
}

func TestValidateRunnable(t *testing.T) {
	ok := runnableCfg(HLS)
	require.NoError(t, ok.Validate())
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no queries", func(c *Config) { c.Queries = 0 },
			"runnable kinds with queries 0 (not known up front): runnable kinds need the number of queries"},
		{"rows", func(c *Config) { c.Runnable = gpuless[:2] },
			"runnable kinds: 2 rows for 3 queries: need one row per query"},
		{"cols", func(c *Config) { c.Runnable = [][]bool{{true, true}, {true}, {true, true}} },
			"runnable kinds of query 1: 1 values for 2 processor kinds: need one per kind"},
		{"nobody", func(c *Config) { c.Runnable = [][]bool{{true, true}, {false, false}, {true, true}} },
			"query 1: no processor kind can run it (none of cpu, gpu has a kernel for it)"},
		{"static", func(c *Config) { c.Policy, c.Static = Static, map[int]int{0: 0, 1: 1, 2: 0} },
			"static binding of query 1 to gpu: gpu has no kernel for it"},
		{"static named", func(c *Config) {
			c.Policy, c.Static, c.KindNames = Static, map[int]int{0: 0, 1: 1, 2: 0}, []string{"x86", "h200"}
		}, "static binding of query 1 to h200: h200 has no kernel for it"},
		{"one kind", func(c *Config) { c.Kinds, c.Static, c.Runnable = 1, nil, [][]bool{{true}, {false}, {true}} },
			"query 1: no processor kind can run it (none of cpu has a kernel for it)"},
	}
	for _, tc := range cases {
		c := ok
		tc.edit(&c)
		err := c.Validate()
		if assert.Error(t, err, tc.name) {
			assert.Equal(t, tc.want, err.Error(), tc.name)
		}
		_, err = NewQueue(c)
		assert.Error(t, err, tc.name)
	}
	// Static binds query 1 to the cpu: fine. Other policies ignore Static's
	// choice of kind (and Validate only checks its range).
	s := runnableCfg(Static)
	require.NoError(t, s.Validate())
	for _, p := range []Policy{FCFS, HLS} {
		c := runnableCfg(p)
		c.Static = map[int]int{1: 1}
		require.NoError(t, c.Validate(), p)
	}
	// One kind that runs everything; all true is as nil.
	require.NoError(t, Config{Kinds: 1, Queries: 2, Capacity: 1, Runnable: [][]bool{{true}, {true}}}.Validate())
}

// Stats.Runnable is a copy of Config.Runnable, nil when every kind runs
// every query.
func TestStatsRunnable(t *testing.T) {
	for _, p := range Policies {
		cfg := runnableCfg(p)
		cfg.Runnable = [][]bool{{true, true}, {true, false}, {true, true}}
		q, err := NewQueue(cfg)
		require.NoError(t, err)
		cfg.Runnable[1][1] = true // the queue keeps its own copy
		st := q.Stats()
		assert.Equal(t, gpuless, st.Runnable, p)
		st.Runnable[1][0] = false
		assert.Equal(t, gpuless, q.Stats().Runnable, "%s: Stats returns a copy", p)
		q.Close()

		cfg.Runnable = [][]bool{{true, true}, {true, true}, {true, true}}
		q, err = NewQueue(cfg)
		require.NoError(t, err)
		assert.Nil(t, q.Stats().Runnable, p)
		if p == FCFS {
			assert.IsType(t, &hlsQueue{}, q, "two kinds: fcfs is the ring, whose waiters are per kind (Wake)")
		}
		q.Close()
	}
	q, err := NewQueue(runnableCfg(FCFS))
	require.NoError(t, err)
	assert.IsType(t, &hlsQueue{}, q, "fcfs with a query the gpu cannot run: the ring")
	q.Close()
	// One kind (the per-node queue too): every query runnable by it.
	for _, nodes := range []int{0, 2} {
		q, err = NewQueue(Config{Kinds: 1, Queries: 2, Capacity: 4, Nodes: nodes, Runnable: [][]bool{{true}, {true}}})
		require.NoError(t, err)
		assert.Nil(t, q.Stats().Runnable)
		q.Close()
	}
}

// TryPop of a kind with only tasks it cannot run queued returns nil; the
// other kind takes them, oldest first.
func TestRunnableTryPop(t *testing.T) {
	for _, p := range Policies {
		t.Run(string(p), func(t *testing.T) {
			var now time.Duration
			cfg := runnableCfg(p)
			cfg.Now = func() time.Duration { return now }
			cfg.MonitorInterval = time.Millisecond
			q, err := NewQueue(cfg)
			require.NoError(t, err)
			cpu, gpu := Processor{Kind: 0}, Processor{Kind: 1}
			// Before any measurement (hls: every query exploring, once the
			// gpu has probed queries 0 and 2) the gpu skips query 1.
			for i, qu := range []int{0, 2, 1, 0} {
				q.Push(&Task{ID: uint64(i), Query: qu, Data: make([]byte, 100)})
			}
			for _, id := range []uint64{0, 1, 3} {
				tk := q.TryPop(gpu)
				require.NotNil(t, tk)
				assert.Equal(t, id, tk.ID)
			}
			assert.Nil(t, q.TryPop(gpu))
			tk := q.TryPop(cpu)
			require.NotNil(t, tk)
			assert.Equal(t, 1, tk.Query)

			for i := range 5 {
				q.Push(&Task{ID: uint64(i), Query: 1, Data: make([]byte, 100)})
			}
			assert.Nil(t, q.TryPop(gpu))
			for i := range 5 {
				tk := q.TryPop(cpu)
				require.NotNil(t, tk)
				assert.Equal(t, uint64(i), tk.ID)
				now += time.Millisecond // refreshes the matrix under hls
				q.Done(cpu, tk, time.Microsecond)
				assert.Nil(t, q.TryPop(gpu))
			}
			assert.Nil(t, q.TryPop(cpu))
			// A query the gpu can run, behind one it cannot: the gpu takes
			// it (under static, query 0 is the gpu's).
			q.Push(&Task{ID: 5, Query: 1, Data: make([]byte, 100)})
			q.Push(&Task{ID: 0, Query: 0, Data: make([]byte, 100)})
			tk = q.TryPop(gpu)
			require.NotNil(t, tk)
			assert.Equal(t, 0, tk.Query)
			assert.Nil(t, q.TryPop(gpu))
			tk = q.TryPop(cpu)
			require.NotNil(t, tk)
			assert.Equal(t, 1, tk.Query)
			st := q.Stats()
			assert.Zero(t, st.Tasks[1][1])
			assert.Zero(t, st.Matrix[1][1], "a kind that cannot run a query has no rate for it")
			q.Close()
			assert.Nil(t, q.Pop(gpu))
			assert.Nil(t, q.Pop(cpu))
		})
	}
}

// After Close a kind drains only what it can run, then Pop returns nil even
// though tasks it cannot run are still queued; the other kind drains them.
func TestRunnableDrain(t *testing.T) {
	for _, p := range Policies {
		t.Run(string(p), func(t *testing.T) {
			q, err := NewQueue(runnableCfg(p))
			require.NoError(t, err)
			for i := range 9 {
				q.Push(&Task{ID: uint64(i), Query: i % 3})
			}
			q.Close()
			cpu, gpu := Processor{Kind: 0}, Processor{Kind: 1}
			var gpuGot []int
			for tk := q.Pop(gpu); tk != nil; tk = q.Pop(gpu) {
				gpuGot = append(gpuGot, tk.Query)
			}
			assert.NotContains(t, gpuGot, 1)
			n := len(gpuGot)
			for tk := q.Pop(cpu); tk != nil; tk = q.Pop(cpu) {
				n++
			}
			assert.Equal(t, 9, n)
			assert.Nil(t, q.TryPop(gpu))
		})
	}
}

// A blocked Pop of a kind that can run nothing queued stays blocked while
// tasks it cannot run arrive, and wakes when one it can run does.
func TestRunnableWakesBlockedPop(t *testing.T) {
	for _, p := range Policies {
		t.Run(string(p), func(t *testing.T) {
			before := runtime.NumGoroutine()
			cfg := runnableCfg(p)
			cfg.Now = func() time.Duration { return 0 } // no refresh: hls explores
			q, err := NewQueue(cfg)
			require.NoError(t, err)
			got := make(chan *Task, 3)
			var wg sync.WaitGroup
			for i := range 3 {
				wg.Go(func() { got <- q.Pop(Processor{Kind: 1, ID: i}) })
			}
			q.Push(&Task{ID: 0, Query: 1})
			time.Sleep(20 * time.Millisecond)
			select {
			case tk := <-got:
				require.Failf(t, "gpu got a task", "%+v", tk)
			default:
			}
			tk := q.TryPop(Processor{Kind: 0})
			require.NotNil(t, tk)
			assert.Equal(t, 1, tk.Query)
			q.Push(&Task{ID: 1, Query: 0})
			select {
			case tk := <-got:
				require.NotNil(t, tk)
				assert.Equal(t, 0, tk.Query)
			case <-time.After(5 * time.Second):
				require.Fail(t, "the gpu's Pop did not wake for a task it can run")
			}
			closeReleasesPops(t, q, &wg, got, before)
		})
	}
}

// Many processors per kind pop concurrently while tasks of random queries
// are pushed; the last burst is still queued at Close and drains. Every
// task runs exactly once, never on a kind that cannot run it.
func TestRunnableConcurrent(t *testing.T) {
	const queries, total, inflight = 3, 12000, 48
	for _, p := range Policies {
		t.Run(string(p), func(t *testing.T) {
			before := runtime.NumGoroutine()
			cfg := runnableCfg(p)
			cfg.Capacity, cfg.Workers = inflight, []int{4, 3}
			cfg.SwitchThreshold, cfg.MonitorInterval = 3, 200*time.Microsecond
			q, err := NewQueue(cfg)
			require.NoError(t, err)
			runs := make([][]atomic.Int32, queries)
			for i := range runs {
				runs[i] = make([]atomic.Int32, total)
			}
			var wrong, ran atomic.Int64
			var perKind [2]atomic.Int64
			sem := make(chan struct{}, inflight)
			var wg sync.WaitGroup
			for k, n := range cfg.Workers {
				for i := range n {
					pr := Processor{Kind: k, ID: i}
					wg.Go(func() {
						for tk := q.Pop(pr); tk != nil; tk = q.Pop(pr) {
							if !gpuless[tk.Query][k] {
								wrong.Add(1)
							}
							runs[tk.Query][tk.ID].Add(1)
							if i%2 == 0 {
								runtime.Gosched()
							}
							// The gpu is fast on query 0, the cpu on 2.
							busy := time.Duration(1+(tk.Query+k)%2) * time.Microsecond
							q.Done(pr, tk, busy)
							perKind[k].Add(1)
							ran.Add(1)
							<-sem
						}
					})
				}
			}
			rng := uint64(7)
			next := make([]int, queries)
			data := make([]byte, 64)
			for range total {
				rng = rng*6364136223846793005 + 1442695040888963407
				qu := int(rng>>33) % queries
				sem <- struct{}{}
				q.Push(&Task{ID: uint64(next[qu]), Query: qu, Data: data})
				next[qu]++
			}
			q.Close() // up to inflight tasks still queued: they drain
			wg.Wait()
			assert.Zero(t, wrong.Load(), "tasks run by a kind that cannot run them")
			require.EqualValues(t, total, ran.Load())
			for qu := range runs {
				for id := range next[qu] {
					require.EqualValues(t, 1, runs[qu][id].Load(), "query %d task %d", qu, id)
				}
			}
			st := q.Stats()
			assert.Zero(t, st.Tasks[1][1])
			assert.Equal(t, gpuless, st.Runnable)
			if p == Static {
				// Only static promises each kind its tasks: under fcfs and
				// hls the cpu's four may take every one on a loaded machine.
				assert.Positive(t, perKind[1].Load(), "the gpu ran its bound queries")
			}
			t.Logf("%s: tasks [kind][query] %v", p, st.Tasks)
			requireGoroutines(t, before)
		})
	}
}

// hls: a query only the cpu can run never owes the gpu a run, so none of
// its tasks waits for the gpu; and the gpu's lookahead counts the tasks it
// cannot run ahead of a task as work of the kind preferred for them.
func TestHLSRunnable(t *testing.T) {
	var now time.Duration
	cfg := runnableCfg(HLS)
	cfg.SwitchThreshold, cfg.MonitorInterval = 3, time.Second
	cfg.Now = func() time.Duration { return now }
	q, err := NewQueue(cfg)
	require.NoError(t, err)
	cpu, gpu := Processor{Kind: 0}, Processor{Kind: 1}
	data := make([]byte, 1000)
	// Measure (each kind probes): query 0 costs 1ms on the cpu, 2.5ms on
	// the gpu; query 1 (cpu only) 1ms; query 2 stays unmeasured (exploring).
	q.Push(&Task{Query: 0, Data: data})
	q.Push(&Task{Query: 0, Data: data})
	q.Push(&Task{Query: 1, Data: data})
	for _, pr := range []Processor{gpu, cpu, cpu} {
		tk := q.TryPop(pr)
		require.NotNil(t, tk)
		q.Done(pr, tk, time.Duration(2+3*pr.Kind)*time.Millisecond/2)
	}
	require.Nil(t, q.TryPop(gpu))
	now = time.Second
	require.Nil(t, q.TryPop(cpu)) // refreshes
	st := q.Stats()
	assert.InDelta(t, 1e6, st.Matrix[0][0], 1)
	assert.InDelta(t, 4e5, st.Matrix[0][1], 1)
	assert.InDelta(t, 1e6, st.Matrix[1][0], 1)
	assert.Zero(t, st.Matrix[1][1])

	// With threshold 3 the gpu would be owed a run of query 1 after two
	// cpu claims, and the query's first queued task would wait for it; it
	// is not, so the cpu takes every task, in order.
	for i := range 20 {
		q.Push(&Task{ID: uint64(i), Query: 1, Data: data})
	}
	for i := range 20 {
		assert.Nil(t, q.TryPop(gpu))
		tk := q.TryPop(cpu)
		require.NotNil(t, tk, "task %d", i)
		assert.Equal(t, uint64(i), tk.ID)
	}
	// Queue: 1 1 1 0, query 0 preferred by the cpu. The gpu needs 2.5ms for
	// the query 0 task; the cpu has 3ms of query 1 ahead of it: the gpu
	// takes it.
	for range 3 {
		q.Push(&Task{Query: 1, Data: data})
	}
	q.Push(&Task{ID: 7, Query: 0, Data: data})
	tk := q.TryPop(gpu)
	require.NotNil(t, tk)
	assert.Equal(t, uint64(7), tk.ID)
	for range 3 {
		require.NotNil(t, q.TryPop(cpu))
	}
	// Queue: 1 1 0: 2ms ahead, too little.
	q.Push(&Task{Query: 1, Data: data})
	q.Push(&Task{Query: 1, Data: data})
	q.Push(&Task{ID: 8, Query: 0, Data: data})
	assert.Nil(t, q.TryPop(gpu))
	for range 3 {
		require.NotNil(t, q.TryPop(cpu))
	}
	q.Close()
}
