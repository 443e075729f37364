package scheduler

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	ok := Config{Policy: HLS, Kinds: 2, Queries: 2, Capacity: 8}
	require.NoError(t, ok.Validate())
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"policy", func(c *Config) { c.Policy = "lifo" }, `unknown scheduling policy "lifo" (valid: fcfs, static, hls)`},
		{"kinds", func(c *Config) { c.Kinds = 0 }, "processor kinds 0: need at least 1"},
		{"names", func(c *Config) { c.KindNames = []string{"cpu"} }, "1 kind names for 2 processor kinds"},
		{"queries", func(c *Config) { c.Queries = -1 }, "queries -1: must be >= 0"},
		{"capacity", func(c *Config) { c.Capacity = 0 }, "capacity 0: need at least 1"},
		{"threshold", func(c *Config) { c.SwitchThreshold = -1 }, "switch threshold -1: must be >= 1 (0: default 10)"},
		{"interval", func(c *Config) { c.MonitorInterval = -time.Second }, "monitor interval -1s: must be > 0 (0: default 1s)"},
		{"workers", func(c *Config) { c.Workers = []int{1} }, "workers per kind [1]: need one count per kind (2 kinds)"},
		{"workers0", func(c *Config) { c.Workers = []int{1, 0} }, "workers of kind gpu: 0, need at least 1"},
		{"static kind", func(c *Config) { c.Policy, c.Static = Static, map[int]int{0: 0, 1: 2} }, "static binding of query 1 to kind 2: no such kind (valid: 0..1, cpu, gpu)"},
		{"static query", func(c *Config) { c.Policy, c.Static = Static, map[int]int{0: 0, 5: 1} }, "static binding of query 5: no such query (valid: 0..1)"},
		{"unbound", func(c *Config) { c.Policy, c.Queries, c.Static = Static, 4, map[int]int{1: 0, 2: 1} }, "static policy: query 0, 3 not bound to a processor kind (bind every query in 0..3 to a kind in 0..1)"},
		{"static unknown queries", func(c *Config) { c.Policy, c.Queries = Static, 0 }, "static policy with 2 processor kinds needs the number of queries"},
	}
	for _, tc := range cases {
		c := ok
		tc.edit(&c)
		err := c.Validate()
		if assert.Error(t, err, tc.name) {
			assert.Contains(t, err.Error(), tc.want, tc.name)
		}
		_, err = NewQueue(c)
		assert.Error(t, err, tc.name)
	}
	// One kind: static needs no bindings; "" is fcfs.
	require.NoError(t, Config{Policy: Static, Kinds: 1, Capacity: 1}.Validate())
	q, err := NewQueue(Config{Kinds: 1, Capacity: 1})
	require.NoError(t, err)
	require.Equal(t, FCFS, q.Stats().Policy)
	_, err = New("lifo", 4)
	require.Error(t, err)
}

// With one kind, every policy (hls included) takes the head.
func TestOneKindIsFCFS(t *testing.T) {
	for _, p := range Policies {
		q, err := New(p, 16)
		require.NoError(t, err)
		var tasks []*Task
		for i := range 10 {
			tk := &Task{ID: uint64(i), Query: i % 3, Data: make([]byte, 10*(i+1))}
			tasks = append(tasks, tk)
			q.Push(tk)
		}
		for i := range tasks {
			pr := Processor{Kind: 0, ID: i % 2}
			tk := q.TryPop(pr)
			require.Same(t, tasks[i], tk, "%s: head order", p)
			q.Done(pr, tk, time.Millisecond)
		}
		require.Nil(t, q.TryPop(Processor{}))
		st := q.Stats()
		require.Equal(t, []string{"cpu"}, st.Kinds)
		require.Equal(t, []uint64{4, 3, 3}, st.Tasks[0], string(p))
		require.Equal(t, []uint64{10 + 40 + 70 + 100, 20 + 50 + 80, 30 + 60 + 90}, st.Bytes[0], string(p))
		require.InDelta(t, 220/0.004, st.Matrix[0][0], 1e-6)
		q.Close()
		require.Nil(t, q.Pop(Processor{}))
	}
}

func TestStaticBinding(t *testing.T) {
	q, err := NewQueue(Config{Policy: Static, Kinds: 2, Queries: 3, Capacity: 30, Static: map[int]int{0: 0, 1: 1, 2: 0}})
	require.NoError(t, err)
	for i := range 30 {
		q.Push(&Task{ID: uint64(i / 3), Query: i % 3, Data: make([]byte, 8)})
	}
	cpu, gpu := Processor{Kind: 0}, Processor{Kind: 1}
	for range 20 {
		tk := q.TryPop(cpu)
		require.NotNil(t, tk)
		require.NotEqual(t, 1, tk.Query, "query 1 is bound to kind 1")
		q.Done(cpu, tk, time.Microsecond)
	}
	require.Nil(t, q.TryPop(cpu), "kind 0 never takes query 1")
	for i := range 10 {
		tk := q.TryPop(gpu)
		require.Equal(t, 1, tk.Query)
		require.Equal(t, uint64(i), tk.ID)
		q.Done(gpu, tk, time.Microsecond)
	}
	st := q.Stats()
	require.Equal(t, [][]uint64{{10, 0, 10}, {0, 10, 0}}, st.Tasks)
	require.Equal(t, [][]uint64{{80, 0, 80}, {0, 80, 0}}, st.Bytes)
	require.Panics(t, func() { q.TryPop(Processor{Kind: 2}) })
	require.Panics(t, func() { q.Push(&Task{Query: 3}) })
	q.Close()
}

// Under hls, a kind with an unknown rate for a query probes it first; a
// preferred kind takes the next task of its queries; lookahead claims beyond
// the head.
func TestHLSLookahead(t *testing.T) {
	var now time.Duration
	q, err := NewQueue(Config{Policy: HLS, Kinds: 2, Queries: 2, Capacity: 4, SwitchThreshold: 100, MonitorInterval: time.Second,
		Now: func() time.Duration { return now }})
	require.NoError(t, err)
	cpu, gpu := Processor{Kind: 0}, Processor{Kind: 1}
	data := make([]byte, 1000)
	push := func(qu int, n int) {
		for range n {
			q.Push(&Task{Query: qu, Data: data})
		}
	}
	// Measure: A costs 1ms on the CPU, 3ms on the GPU; B the reverse.
	cost := [2][2]time.Duration{{time.Millisecond, 3 * time.Millisecond}, {3 * time.Millisecond, time.Millisecond}}
	push(0, 2)
	push(1, 2)
	// Unknown everywhere: each kind probes each query once.
	for _, p := range []Processor{cpu, gpu, cpu, gpu} {
		tk := q.TryPop(p)
		require.NotNil(t, tk)
		q.Done(p, tk, cost[tk.Query][p.Kind])
	}
	st := q.Stats()
	require.Equal(t, [][]uint64{{1, 1}, {1, 1}}, st.Tasks, "each kind probed each query")
	require.Equal(t, [][]float64{{0, 0}, {0, 0}}, st.Matrix, "no refresh yet")
	now = time.Second
	require.Nil(t, q.TryPop(cpu)) // refreshes
	st = q.Stats()
	require.InDelta(t, 1e6, st.Matrix[0][0], 1)
	require.InDelta(t, 1e6/3, st.Matrix[0][1], 1)

	// Queue: B A A A A. The CPU (preferred for A) skips B; the GPU takes B.
	push(1, 1)
	push(0, 4)
	tk := q.TryPop(cpu)
	require.Equal(t, 0, tk.Query)
	tk = q.TryPop(gpu)
	require.Equal(t, 1, tk.Query)
	// Queue: A A A. The GPU needs 3ms for an A; the CPU needs 1ms for each
	// A ahead: it skips two and takes the third.
	require.Nil(t, q.TryPop(gpu), "nothing to steal yet: 0 and 1ms ahead < 3ms... and 2ms")
	push(0, 1)
	tk = q.TryPop(gpu)
	require.NotNil(t, tk, "3ms of A ahead: the GPU takes the fourth A")
	require.Equal(t, 0, tk.Query)
	for range 3 {
		require.NotNil(t, q.TryPop(cpu))
	}
	require.Nil(t, q.TryPop(cpu))
	q.Close()
	require.Nil(t, q.Pop(gpu))
}

// The switch threshold: the slow kind is owed one task in SwitchThreshold,
// and the first queued task of the query waits for it.
func TestHLSSwitchThreshold(t *testing.T) {
	var now time.Duration
	q, err := NewQueue(Config{Policy: HLS, Kinds: 2, Queries: 1, Capacity: 64, SwitchThreshold: 4, MonitorInterval: time.Second,
		Now: func() time.Duration { return now }})
	require.NoError(t, err)
	cpu, gpu := Processor{Kind: 0}, Processor{Kind: 1}
	data := make([]byte, 1000)
	for range 2 {
		q.Push(&Task{Data: data})
	}
	q.Done(cpu, q.TryPop(cpu), time.Millisecond)
	q.Done(gpu, q.TryPop(gpu), 10*time.Millisecond)
	now = time.Second
	var kinds []int
	for i := range 12 {
		q.Push(&Task{ID: uint64(i), Data: data})
	}
	for {
		// The CPU asks first each round; the GPU only when the CPU found
		// nothing.
		tk := q.TryPop(cpu)
		if tk != nil {
			kinds = append(kinds, 0)
			continue
		}
		if tk = q.TryPop(gpu); tk == nil {
			break
		}
		kinds = append(kinds, 1)
	}
	// Since the GPU's probe, the CPU claims 3, then the first queued task
	// waits for the GPU while the CPU takes the rest; the GPU then gets it.
	require.Equal(t, []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, kinds)
	q.Close()
}

// (d) Every task runs exactly once under every policy, several processors
// per kind, real goroutines; Close releases every blocked Pop.
func TestConcurrentExactlyOnce(t *testing.T) {
	const queries, perQuery, inflight = 3, 3000, 48
	for _, p := range Policies {
		t.Run(string(p), func(t *testing.T) {
			before := runtime.NumGoroutine()
			cfg := Config{Policy: p, Kinds: 2, Queries: queries, Capacity: inflight, Workers: []int{3, 2},
				Static: map[int]int{0: 0, 1: 1, 2: 0}, SwitchThreshold: 3, MonitorInterval: 200 * time.Microsecond}
			q, err := NewQueue(cfg)
			require.NoError(t, err)
			runs := make([][]atomic.Int32, queries)
			for i := range runs {
				runs[i] = make([]atomic.Int32, perQuery)
			}
			sem := make(chan struct{}, inflight)
			var wg sync.WaitGroup
			var ran atomic.Int64
			for k, n := range cfg.Workers {
				for i := range n {
					pr := Processor{Kind: k, ID: i}
					wg.Go(func() {
						for tk := q.Pop(pr); tk != nil; tk = q.Pop(pr) {
							runs[tk.Query][tk.ID].Add(1)
							if i%2 == 0 {
								runtime.Gosched()
							}
							// Kind 1 is "fast" for query 1.
							busy := time.Duration(1+(tk.Query+k)%2) * time.Microsecond
							q.Done(pr, tk, busy)
							ran.Add(1)
							<-sem
						}
					})
				}
			}
			data := make([]byte, 64)
			for i := range perQuery {
				for qu := range queries {
					sem <- struct{}{}
					q.Push(&Task{ID: uint64(i), Query: qu, Data: data})
				}
			}
			for len(sem) > 0 {
				runtime.Gosched()
			}
			q.Close()
			wg.Wait()
			require.EqualValues(t, queries*perQuery, ran.Load())
			for qu := range runs {
				for id := range runs[qu] {
					require.EqualValues(t, 1, runs[qu][id].Load(), "query %d task %d", qu, id)
				}
			}
			st := q.Stats()
			var tasks, bytes uint64
			for k := range st.Tasks {
				for qu := range st.Tasks[k] {
					tasks += st.Tasks[k][qu]
					bytes += st.Bytes[k][qu]
				}
			}
			require.EqualValues(t, queries*perQuery, tasks)
			require.EqualValues(t, queries*perQuery*len(data), bytes)
			if p == Static {
				require.Zero(t, st.Tasks[0][1])
				require.Zero(t, st.Tasks[1][0]+st.Tasks[1][2])
			}
			t.Logf("%s: tasks [kind][query] %v", p, st.Tasks)
			requireGoroutines(t, before)
		})
	}
}

func TestCloseReleasesBlockedPops(t *testing.T) {
	for _, p := range Policies {
		t.Run(string(p), func(t *testing.T) {
			before := runtime.NumGoroutine()
			q, err := NewQueue(Config{Policy: p, Kinds: 2, Queries: 2, Capacity: 4, Static: map[int]int{0: 0, 1: 1}})
			require.NoError(t, err)
			var wg sync.WaitGroup
			got := make(chan *Task, 8)
			var started sync.WaitGroup
			for i := range 8 {
				started.Add(1)
				wg.Go(func() {
					started.Done()
					got <- q.Pop(Processor{Kind: i % 2, ID: i})
				})
			}
			started.Wait()
			closeReleasesPops(t, q, &wg, got, before)
		})
	}
}

// A kind that never asks (no GPU processors) keeps its rates unknown: the
// queries stay in exploration and the other kind runs everything.
func TestHLSAbsentKind(t *testing.T) {
	var now time.Duration
	q, err := NewQueue(Config{Policy: HLS, Kinds: 2, Queries: 2, Capacity: 8, SwitchThreshold: 2, MonitorInterval: time.Millisecond,
		Now: func() time.Duration { return now }})
	require.NoError(t, err)
	cpu := Processor{Kind: 0}
	for i := range 100 {
		q.Push(&Task{ID: uint64(i / 2), Query: i % 2, Data: make([]byte, 8)})
		tk := q.TryPop(cpu)
		require.NotNil(t, tk, "task %d", i)
		now += time.Millisecond
		q.Done(cpu, tk, time.Millisecond)
	}
	q.Close()
}

// Close drains: what is queued is still handed out, then nil.
func TestCloseDrains(t *testing.T) {
	for _, p := range Policies {
		q, err := NewQueue(Config{Policy: p, Kinds: 2, Queries: 1, Capacity: 4, Static: map[int]int{0: 1}})
		require.NoError(t, err)
		for range 3 {
			q.Push(&Task{})
		}
		q.Close()
		n := 0
		for _, pr := range []Processor{{Kind: 0}, {Kind: 1}} {
			for q.Pop(pr) != nil {
				n++
			}
		}
		require.Equal(t, 3, n, string(p))
	}
}

// closeReleasesPops closes q and requires that every Pop still blocked
// (the goroutines of wg, sending to got) returns nil and that no goroutine
// is left behind.
func closeReleasesPops(t *testing.T, q Queue, wg *sync.WaitGroup, got chan *Task, before int) {
	t.Helper()
	q.Close()
	wg.Wait()
	close(got)
	for tk := range got {
		require.Nil(t, tk)
	}
	requireGoroutines(t, before)
}

func requireGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before, "goroutines left behind")
}

// The ring against a slice, with claims anywhere.
func TestRing(t *testing.T) {
	r := newRing(4)
	var ref []*Task
	rng := uint64(1)
	rand := func(n int) int {
		rng = rng*6364136223846793005 + 1442695040888963407
		return int((rng >> 33) % uint64(n))
	}
	id := uint64(0)
	for step := range 20000 {
		if len(ref) == 0 || rand(3) > 0 && len(ref) < 40 {
			tk := &Task{ID: id}
			id++
			r.push(tk)
			ref = append(ref, tk)
		} else {
			j := rand(len(ref))
			if rand(2) == 0 {
				j = 0
			}
			// Find the j-th live slot.
			i, seen := 0, -1
			for ; i < r.span; i++ {
				if r.at(i) != nil {
					seen++
					if seen == j {
						break
					}
				}
			}
			require.Same(t, ref[j], r.take(i), fmt.Sprint("step ", step))
			ref = append(ref[:j], ref[j+1:]...)
		}
		require.Equal(t, len(ref), r.live)
		if r.live > 0 {
			require.Same(t, ref[0], r.at(0), "the head is never a hole")
			require.Same(t, ref[len(ref)-1], r.at(r.span-1), "the tail is never a hole")
		}
	}
}

// TestNanotime: Task.Dispatched's clock starts near zero, never goes back
// and measures what time.Since measures.
func TestNanotime(t *testing.T) {
	start := time.Now()
	a := Nanotime()
	if a < 0 {
		t.Fatalf("Nanotime() = %d, want >= 0", a)
	}
	time.Sleep(2 * time.Millisecond)
	b := Nanotime()
	elapsed := time.Since(start) // brackets both readings
	if d := time.Duration(b - a); d < 2*time.Millisecond || d > elapsed {
		t.Errorf("Nanotime advanced %v over a sleep of 2ms, within %v by time.Since", d, elapsed)
	}
}
