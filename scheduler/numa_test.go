package scheduler

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func numaQ(t *testing.T, nodes int) Queue {
	q, err := NewQueue(Config{Kinds: 1, Queries: 1, Capacity: 64, Nodes: nodes})
	require.NoError(t, err)
	return q
}

// TestNUMAQueuePrefersLocalTasks: a processor takes its own node's tasks in
// order, and steals another node's only when its own has none.
func TestNUMAQueuePrefersLocalTasks(t *testing.T) {
	q := numaQ(t, 2)
	tasks := make([]*Task, 6)
	for i := range tasks {
		tasks[i] = &Task{ID: uint64(i), Node: i % 2}
		q.Push(tasks[i])
	}
	p0, p1 := Processor{Node: 0}, Processor{ID: 1, Node: 1}
	assert.Same(t, tasks[0], q.TryPop(p0))
	assert.Same(t, tasks[1], q.TryPop(p1))
	assert.Same(t, tasks[2], q.TryPop(p0))
	assert.Same(t, tasks[4], q.TryPop(p0))
	assert.Same(t, tasks[3], q.TryPop(p0), "node 0 drained: steal node 1's head")
	assert.Same(t, tasks[5], q.TryPop(p1))
	assert.Nil(t, q.TryPop(p1))
	st := q.Stats()
	assert.Equal(t, uint64(5), st.Local)
	assert.Equal(t, uint64(1), st.Stolen)
	q.Close()
	assert.Nil(t, q.Pop(p0))
}

// TestNUMAQueueEveryTaskOnce: concurrent processors on two nodes take every
// task exactly once; Close wakes every blocked Pop; no allocation per task
// once warm.
func TestNUMAQueueEveryTaskOnce(t *testing.T) {
	q := numaQ(t, 2)
	const n = 5000
	seen := make([]int, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := Processor{ID: w, Node: w % 2}
			for tk := q.Pop(p); tk != nil; tk = q.Pop(p) {
				mu.Lock()
				seen[tk.ID]++
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		q.Push(&Task{ID: uint64(i), Node: i % 3 % 2})
	}
	q.Close()
	wg.Wait()
	for i, c := range seen {
		require.Equal(t, 1, c, "task %d", i)
	}
	st := q.Stats()
	assert.Equal(t, uint64(n), st.Local+st.Stolen)

	q2 := numaQ(t, 2)
	tk := &Task{Node: 1}
	allocs := testing.AllocsPerRun(100, func() {
		q2.Push(tk)
		q2.TryPop(Processor{Node: 0})
	})
	assert.Zero(t, allocs)
}

// TestNUMAQueueSteadyBacklog: a node's queue that never drains (one or two
// tasks always queued) keeps its ring at the queue's capacity over 1 M
// pushes and pops, allocating nothing; tasks come out in push order.
func TestNUMAQueueSteadyBacklog(t *testing.T) {
	qq, err := NewQueue(Config{Kinds: 1, Nodes: 2, Capacity: 4})
	require.NoError(t, err)
	q := qq.(*numaQueue)
	tasks := make([]*Task, 3)
	for i := range tasks {
		tasks[i] = &Task{ID: uint64(i)}
	}
	q.Push(tasks[0])
	next := uint64(0)
	cycle := func(i int) {
		q.Push(tasks[(i+1)%3])
		if tk := q.TryPop(Processor{Node: 0}); tk == nil || tk.ID != next {
			t.Fatalf("cycle %d: got %v, want task %d", i, tk, next)
		}
		next = (next + 1) % 3
	}
	for i := range 1_000_000 {
		cycle(i)
	}
	assert.Equal(t, 4, cap(q.queues[0].s), "node 0's ring")
	assert.Equal(t, 1, q.queues[0].live)
	i := 1_000_000
	assert.Zero(t, testing.AllocsPerRun(1000, func() { cycle(i); i++ }))
	assert.Equal(t, 4, cap(q.queues[1].s), "node 1's ring, never used")
}

// TestNUMAQueueBeyondCapacity: more tasks than the capacity queued on one
// node grow its ring (by doubling, the order kept across the wrap), and a
// steady backlog after that keeps the grown size.
func TestNUMAQueueBeyondCapacity(t *testing.T) {
	qq, err := NewQueue(Config{Kinds: 1, Nodes: 2, Capacity: 3})
	require.NoError(t, err)
	q := qq.(*numaQueue)
	p := Processor{Node: 1}
	var id uint64
	push := func(k int) {
		for range k {
			q.Push(&Task{ID: id, Node: 1})
			id++
		}
	}
	var want uint64
	pop := func(k int) {
		for range k {
			tk := q.TryPop(p)
			require.NotNil(t, tk)
			require.Equal(t, want, tk.ID)
			want++
		}
	}
	push(3)
	pop(2) // head at slot 2 of 4: the next pushes wrap
	push(7)
	assert.Equal(t, 8, cap(q.queues[1].s), "8 queued: doubled once")
	push(1)
	assert.Equal(t, 16, cap(q.queues[1].s))
	for range 10_000 {
		push(2)
		pop(2)
	}
	pop(9)
	assert.Nil(t, q.TryPop(p))
	assert.Equal(t, 16, cap(q.queues[1].s))
	assert.Equal(t, 4, cap(q.queues[0].s))
}
