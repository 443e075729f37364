package scheduler

import (
	"sync"
	"sync/atomic"
)

// idlers are the processors (of one kind) that wait in a lock-based
// queue's Pop, and the wakes owed to them (Queue.Wake). idle and wakes are
// under the queue's lock; waiting mirrors idle for Wake's look without it.
type idlers struct {
	idle, wakes int
	waiting     atomic.Int32
}

// woken takes a wake owed, if there is one: the caller returns Woken.
func (w *idlers) woken() bool {
	if w.wakes == 0 {
		return false
	}
	w.wakes--
	return true
}

// wait waits on c as an idle processor. c.L is the queue's lock, held.
func (w *idlers) wait(c *sync.Cond) {
	w.idle++
	w.waiting.Add(1)
	c.Wait()
	w.idle--
	w.waiting.Add(-1)
}

// left is called as a processor leaves Pop with a task: a wake is only
// ever owed to a processor that waits.
func (w *idlers) left() { w.wakes = min(w.wakes, w.idle) }

// wake owes up to n wakes to the idle processors, none once closed, and
// signals c as many times. It takes and releases mu, the queue's lock.
func (w *idlers) wake(mu *sync.Mutex, c *sync.Cond, closed *bool, n int) {
	if w.waiting.Load() == 0 {
		return
	}
	mu.Lock()
	add := 0
	if !*closed {
		add = max(0, min(n, w.idle-w.wakes))
		w.wakes += add
	}
	mu.Unlock()
	for range add {
		c.Signal()
	}
}
