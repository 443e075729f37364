package scheduler

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wakeConfigs are a queue of every implementation: the channel (one kind,
// fcfs and static with two), the lookahead ring (hls) and the NUMA queue.
func wakeConfigs() map[string]Config {
	return map[string]Config{
		"one-kind":   {Kinds: 1, Queries: 2, Capacity: 4, Workers: []int{3}},
		"fcfs":       {Policy: FCFS, Kinds: 2, Queries: 2, Capacity: 4, Workers: []int{3, 1}},
		"static":     {Policy: Static, Kinds: 2, Queries: 2, Capacity: 4, Workers: []int{3, 1}, Static: map[int]int{0: 0, 1: 1}},
		"hls":        {Policy: HLS, Kinds: 2, Queries: 2, Capacity: 4, Workers: []int{3, 1}},
		"numa-nodes": {Kinds: 1, Queries: 2, Capacity: 4, Workers: []int{3}, Nodes: 2},
	}
}

// waiting is how many processors of kind k wait in q's Pop.
func waiting(q Queue, k int) int {
	switch q := q.(type) {
	case *chanQueue:
		return int(q.idle[q.chanOf(k)].Load())
	case *hlsQueue:
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.idle[k].idle
	case *numaQueue:
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.idle.idle
	}
	panic("unknown queue")
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "timed out waiting for %s", what)
		time.Sleep(100 * time.Microsecond)
	}
}

func recv(t *testing.T, got chan *Task) *Task {
	t.Helper()
	select {
	case tk := <-got:
		return tk
	case <-time.After(2 * time.Second):
		t.Fatal("no processor returned from Pop")
		return nil
	}
}

// Wake(k, n) has n of the processors of kind k that wait return Woken, and
// no more; the others still get tasks, and Close releases them.
func TestWakeReleasesIdleProcessors(t *testing.T) {
	for name, cfg := range wakeConfigs() {
		t.Run(name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			q, err := NewQueue(cfg)
			require.NoError(t, err)
			got := make(chan *Task, 3)
			var wg sync.WaitGroup
			for i := range 3 {
				wg.Go(func() { got <- q.Pop(Processor{Kind: 0, ID: i}) })
			}
			waitFor(t, "3 processors waiting", func() bool { return waiting(q, 0) == 3 })
			if cfg.Kinds > 1 {
				q.Wake(1, 3) // kind 1 has no waiter: kind 0's stay
			}
			q.Wake(0, 2)
			assert.Same(t, Woken, recv(t, got))
			assert.Same(t, Woken, recv(t, got))
			time.Sleep(5 * time.Millisecond)
			assert.Empty(t, got, "a third processor woke")
			task := &Task{ID: 7}
			q.Push(task)
			assert.Same(t, task, recv(t, got), "the processor left waiting takes the task")
			q.Wake(0, 1) // none waits: not kept
			wg.Go(func() { got <- q.Pop(Processor{Kind: 0, ID: 3}) })
			waitFor(t, "a processor waiting", func() bool { return waiting(q, 0) == 1 })
			time.Sleep(5 * time.Millisecond)
			assert.Empty(t, got, "a wake was kept for a processor that came later")
			closeReleasesPops(t, q, &wg, got, before)
			q.Wake(0, 3) // after Close: nothing, no panic
		})
	}
}

// A wake sent to no waiter is not kept for a later Pop; TryPop never
// returns Woken.
func TestWakeWithoutWaiters(t *testing.T) {
	for name, cfg := range wakeConfigs() {
		t.Run(name, func(t *testing.T) {
			q, err := NewQueue(cfg)
			require.NoError(t, err)
			q.Wake(0, 5)
			task := &Task{ID: 1}
			q.Push(task)
			assert.Same(t, task, q.TryPop(Processor{Kind: 0}))
			assert.Nil(t, q.TryPop(Processor{Kind: 0}))
			q.Close()
			assert.Nil(t, q.Pop(Processor{Kind: 0}))
		})
	}
}

// In the channel queues, a wake waits in the channel until a processor
// reads it: Push still never blocks with Capacity tasks queued behind as
// many wakes as the channel has readers, and TryPop skips them.
func TestWakeLeavesTheChannelRoom(t *testing.T) {
	q, err := NewQueue(Config{Kinds: 1, Queries: 1, Capacity: 4, Workers: []int{3}})
	require.NoError(t, err)
	cq := q.(*chanQueue)
	cq.idle[0].Store(5) // as if five waited (the channel has three readers)
	q.Wake(0, 5)
	assert.EqualValues(t, 3, cq.woken[0].Load(), "wakes beyond the channel's readers")
	done := make(chan struct{})
	go func() {
		for i := range 4 {
			q.Push(&Task{ID: uint64(i)})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Push blocked below Capacity")
	}
	cq.idle[0].Store(0)
	for i := range 4 {
		tk := q.TryPop(Processor{})
		require.NotNil(t, tk)
		assert.EqualValues(t, i, tk.ID)
	}
	assert.Nil(t, q.TryPop(Processor{}))
	assert.Zero(t, cq.woken[0].Load())
	q.Close()
}
