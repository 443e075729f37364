package scheduler

import (
	"sync"
	"sync/atomic"
	"time"
)

// numaQueue keeps one FIFO of tasks per NUMA node, under one lock: a
// processor takes the head of its own node's queue, and only when that is
// empty steals the head of the next non-empty node (in node order from its
// own), so that a worker reads bytes in its own node's memory whenever
// there are any. A lock and a condition variable per task, not per tuple.
//
// It serves one processor kind only (NewQueue builds it for Kinds 1), and
// with one kind Validate leaves no query that the kind cannot run: it has
// no Config.Runnable to honour.
type numaQueue struct {
	cfg Config
	c   *counters

	mu     sync.Mutex
	cond   *sync.Cond
	queues []ring // per node, FIFO: pushed at the back, taken at the front (hls's ring)
	closed bool
	idle   idlers // the processors waiting in Pop (Wake)

	local, stolen atomic.Uint64
}

func newNUMAQueue(cfg Config, c *counters) *numaQueue {
	q := &numaQueue{cfg: cfg, c: c, queues: make([]ring, cfg.Nodes)}
	for n := range q.queues {
		q.queues[n] = newRing(cfg.Capacity)
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *numaQueue) node(n int) int {
	if n < 0 || n >= len(q.queues) {
		return 0
	}
	return n
}

func (q *numaQueue) Push(t *Task) {
	q.cfg.checkQuery(t)
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		panic("scheduler: Push after Close")
	}
	n := q.node(t.Node)
	q.queues[n].push(t)
	q.mu.Unlock()
	q.cond.Signal() // any waiting processor may take it: its own or stolen
}

func (q *numaQueue) Pop(p Processor) *Task { return q.pop(p, true) }

func (q *numaQueue) TryPop(p Processor) *Task { return q.pop(p, false) }

func (q *numaQueue) pop(p Processor, wait bool) *Task {
	own := q.node(p.Node)
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		for i := range q.queues {
			n := (own + i) % len(q.queues)
			if q.queues[n].live == 0 {
				continue
			}
			t := q.queues[n].take(0)
			q.idle.left()
			if i == 0 {
				q.local.Add(1)
			} else {
				q.stolen.Add(1)
			}
			return t
		}
		if q.closed || !wait {
			return nil
		}
		if q.idle.woken() {
			return Woken
		}
		q.idle.wait(q.cond)
	}
}

func (q *numaQueue) Wake(k, n int) {
	q.cfg.checkKind(Processor{Kind: k})
	q.idle.wake(&q.mu, q.cond, &q.closed, n)
}

func (q *numaQueue) Done(p Processor, t *Task, busy time.Duration) {
	q.c.add(p.Kind, t.Query, len(t.Data), busy)
}

func (q *numaQueue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

func (q *numaQueue) Stats() Stats {
	s := q.cfg.newStats()
	q.c.stats(&s, q.cfg.Queries, true)
	s.Local, s.Stolen = q.local.Load(), q.stolen.Load()
	return s
}
