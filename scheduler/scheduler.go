// Package scheduler holds the unit of work (Task) and the queue from which
// processors take tasks.
//
// Today there is one policy, FCFS: every processor takes the head of the
// queue. The Hybrid Lookahead Scheduler (several processor kinds, a
// throughput matrix, lookahead claims beyond the head) is not implemented
// yet; it will implement the same Queue interface, which is why Pop names
// the processor that asks.
package scheduler

import (
	"fmt"
	"sync"

	"github.com/saber-hx/saber-hx/window"
)

// Task is a numbered slice of one stream's ring, cut by bytes and knowing
// nothing of windows. It is reused: the engine owns a fixed set of tasks.
type Task struct {
	ID         uint64 // per query, dense from 0, in stream order
	Query      int
	Start      uint64 // absolute offset of Data in the stream's ring
	Data       []byte // whole tuples, contiguous even across the ring's wrap
	Dispatched int64  // monotonic nanoseconds when the task was queued

	Result window.TaskResult
}

// Processor identifies who asks for a task.
type Processor struct {
	Kind int // processor kind (0: CPU)
	ID   int // worker number
}

// Queue hands tasks to processors.
type Queue interface {
	// Push queues a task; it never blocks longer than it takes to hand the
	// task over, since the engine bounds the tasks in flight.
	Push(t *Task)
	// Pop returns the next task for p, blocking until there is one, or nil
	// once the queue is closed and drained.
	Pop(p Processor) *Task
	// TryPop returns the next task for p without waiting, or nil.
	TryPop(p Processor) *Task
	// Close ends the queue: Pop drains what is queued, then returns nil.
	Close()
}

// Policy names a scheduling policy.
type Policy string

const FCFS Policy = "fcfs"

// Policies lists the policies this build implements.
var Policies = []Policy{FCFS}

// New returns a queue of the policy for at most capacity tasks in flight.
func New(p Policy, capacity int) (Queue, error) {
	switch p {
	case FCFS:
		return &fcfs{ch: make(chan *Task, capacity)}, nil
	}
	return nil, fmt.Errorf("unknown scheduling policy %q (valid: %v)", p, Policies)
}

// fcfs is a first-come first-served queue: a channel, one operation per task.
type fcfs struct {
	ch   chan *Task
	once sync.Once
}

func (q *fcfs) Push(t *Task) { q.ch <- t }

func (q *fcfs) Pop(Processor) *Task { return <-q.ch }

func (q *fcfs) TryPop(Processor) *Task {
	select {
	case t := <-q.ch:
		return t
	default:
		return nil
	}
}

func (q *fcfs) Close() { q.once.Do(func() { close(q.ch) }) }
