package engine

import (
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/saber-hx/saber-hx/buffer"
	"github.com/saber-hx/saber-hx/strview"
)

// A stateless query's result stage hands its output on in task order,
// which makes it a serial stage; where it copied each task's output into
// the ring of the query downstream, that copy was nearly all of the
// stage (Nexmark q12's view, docs/performance.md). Where a stateless
// query feeds one query alone, its result stage lends the downstream
// stream the task's output buffer instead: it records where the buffer's
// bytes lie in the downstream stream (an entry), reserves and commits
// their positions in the ring without writing them, and the worker that
// runs the downstream task copies them into its own buffer (as a source's
// ingestion by the workers, Stream.SetFill), in parallel, where the
// kernel then reads them from its cache. The ordered stage keeps the
// order and the back-pressure, and does O(1) per task.
//
// Outputs too small to be worth a buffer of their own (a filter that
// passed few tuples), and outputs with a long string that the push would
// copy into the downstream's heap or empty (Stream.lendable: its view
// points at memory the upstream frees with its task), are copied into the
// ring as before, their bytes described by an in-ring entry (buf nil)
// that runs up to the next entry's position; so every byte of the
// downstream stream lies in one entry, and the entries are contiguous, in
// position order.
//
// Entries live in a fixed ring of slots. The upstream's result stage
// appends them (it is the downstream stream's producer: dispatch cuts a
// task's span of entries in the same goroutine); the workers read the
// entries of the task they run, which are written before the task is
// queued and released only after it is merged; the downstream's merge
// releases them in order, a lent buffer going back to the pool the
// upstream's tasks take their next output buffer from.

// handOff is a downstream stream's lent input (Stream.hand).
type handOff struct {
	ring  *buffer.Ring // the stream's: where the in-ring entries' bytes lie
	slots []handEntry
	mask  uint64
	// minLend is the smallest output lent rather than copied: with it,
	// the slots' number bounds the entries alive (newHandOff).
	minLend int
	// lent counts the outputs lent (producer only; the tests read it).
	lent int
	// head is the sequence number of the next entry (appended by the
	// producer, read by the merge's release); tail that of the oldest
	// not released (advanced by the merge, read by the producer).
	head, tail atomic.Uint64
	// next is the first entry of the task being filled (producer only).
	next uint64

	mu   sync.Mutex
	pool [][]byte // lent buffers given back, for the upstream's tasks
}

// handEntry is where a run of the downstream stream's bytes lies: from
// stream position pos, in buf (lent), or in the ring (buf nil) up to the
// next entry's position.
type handEntry struct {
	pos uint64
	buf []byte
}

// newHandOff makes the lending state of a stream whose ring is ring (of
// ringSize bytes), lending outputs of minLend bytes or more (0: a 256th of the ring,
// at least 16 KiB: the copy of a smaller one costs less than its task,
// and the slots' number stays small). The entries alive are the oldest,
// which may begin below the freed position, and entries inside the
// ring's positions from there: a merge releases entries before the ring
// frees their positions, so the producer never reserves past a ring's
// size ahead of them. Each lent one holds minLend positions or more, and
// in-ring ones alternate with lent ones: at most 2*ringSize/minLend+5.
func newHandOff(ring *buffer.Ring, minLend int) *handOff {
	ringSize := ring.Size()
	if minLend <= 0 {
		minLend = max(16<<10, ringSize/256)
	}
	n := uint64(1) << bits.Len64(uint64(2*ringSize/minLend+8))
	return &handOff{ring: ring, slots: make([]handEntry, n), mask: n - 1, minLend: minLend}
}

// lends says whether output p is lent rather than copied: large enough
// for an entry of its own, and filling at least half its buffer (a lent
// buffer holds its capacity while in the ring).
func (h *handOff) lends(p []byte) bool { return len(p) >= h.minLend && 2*len(p) >= cap(p) }

// add appends an entry; the slots cannot be full (newHandOff).
func (h *handOff) add(pos uint64, buf []byte) {
	head := h.head.Load()
	if head-h.tail.Load() >= uint64(len(h.slots)) {
		panic(fmt.Sprintf("engine: hand-off: %d entries alive, the bound is %d", head-h.tail.Load(), len(h.slots)))
	}
	h.slots[head&h.mask] = handEntry{pos: pos, buf: buf}
	h.head.Store(head + 1)
}

// copied records that bytes from position pos on are copied into the
// ring: a new entry unless the last one is in the ring already.
func (h *handOff) copied(pos uint64) {
	if head := h.head.Load(); head == h.tail.Load() || h.slots[(head-1)&h.mask].buf != nil {
		h.add(pos, nil)
	}
}

// take returns a buffer for an upstream task's next output, of capacity
// at least c: a given-back one, or a new one.
func (h *handOff) take(c int) []byte {
	h.mu.Lock()
	for len(h.pool) > 0 {
		b := h.pool[len(h.pool)-1]
		h.pool = h.pool[:len(h.pool)-1]
		if cap(b) >= c {
			h.mu.Unlock()
			return b[:0]
		}
	}
	h.mu.Unlock()
	return make([]byte, 0, c)
}

// cut returns the span of entries of the task [start, end) the producer
// dispatches, and whether any of its bytes are lent (else they are all in
// the ring: the task is read there). The last entry reaches end, and goes
// on into the next task unless it is lent and ends there.
func (h *handOff) cut(start, end uint64) (first, last uint64, lent bool) {
	first, last = h.next, h.head.Load()
	for i := first; i < last; i++ {
		e := &h.slots[i&h.mask]
		if e.buf != nil && e.pos+uint64(len(e.buf)) > start {
			lent = true
		}
	}
	h.next = last
	if e := &h.slots[(last-1)&h.mask]; last > first && (e.buf == nil || e.pos+uint64(len(e.buf)) > end) {
		h.next = last - 1
	}
	return first, last, lent
}

// fill writes the bytes of task t, at stream position t.Start, into dst:
// from the lent buffers and the ring.
func (h *handOff) fill(dst []byte, t *task) {
	start, end := t.Start, t.Start+uint64(len(dst))
	for i := t.handFirst; i < t.handLast; i++ {
		e := &h.slots[i&h.mask]
		stop := end
		switch {
		case e.buf != nil:
			stop = min(end, e.pos+uint64(len(e.buf)))
		case i+1 < t.handLast:
			stop = h.slots[(i+1)&h.mask].pos
		}
		lo := max(e.pos, start)
		if lo >= stop {
			continue
		}
		to := dst[lo-start : stop-start]
		var from []byte
		if e.buf != nil {
			from = e.buf[lo-e.pos : stop-e.pos]
		} else {
			from = h.ring.Slice(lo, int(stop-lo))
		}
		if &to[0] != &from[0] { // the GPU fills the task's place in the ring
			copy(to, from)
		}
	}
}

// release lets go of the entries that end below freed, where the stream
// is freed up to now; the last entry stays (its end is the next one's
// start). An entry ending exactly at freed may still be the first of a
// task not merged (whose fill reads its position): it stays too.
func (h *handOff) release(freed uint64) {
	head, tail := h.head.Load(), h.tail.Load()
	for ; tail+1 < head && h.slots[(tail+1)&h.mask].pos < freed; tail++ {
		e := &h.slots[tail&h.mask]
		if e.buf != nil {
			h.mu.Lock()
			h.pool = append(h.pool, e.buf[:0])
			h.mu.Unlock()
			e.buf = nil
		}
	}
	h.tail.Store(tail)
}

// lendOutputs gives a hand-off to every stream fed by a stateless query
// alone. Before the engine runs.
func (e *Engine) lendOutputs() {
	for _, u := range e.streams {
		if len(u.downstream) != 1 || !u.plan.Stateless() || u.joinSide != nil || u.joinFeed != nil {
			continue
		}
		if d := u.downstream[0]; d.joinSide == nil && len(d.ups) == 1 {
			d.hand = newHandOff(d.ring, e.cfg.lendMin)
		}
	}
}

// lendable says whether stateless output tuples may be lent to s, which
// has a hand-off: where s's input has strings, none of the tuples holds a
// long one that s's push would copy into its heap or empty (copyStrings),
// as such a view points at memory the upstream frees with its task (a
// processing-time view grouped by a short string lends: Nexmark's
// channels). The upstream's worker asks, before the ordered stage.
func (s *Stream) lendable(tuples []byte) bool {
	if s.heap == nil || s.inputStable || len(s.heapAttrs)+len(s.blankAttrs) == 0 {
		return true
	}
	ts := s.plan.TupleSize
	for o := 0; o+ts <= len(tuples); o += ts {
		t := tuples[o : o+ts]
		for k := range s.heapAttrs {
			if longView(t, &s.heapAttrs[k]) != nil {
				return false
			}
		}
		for k := range s.blankAttrs {
			if v := t[s.blankAttrs[k].Offset : s.blankAttrs[k].Offset+strview.Size]; strview.Len(v) > strview.MaxInline {
				return false
			}
		}
	}
	return true
}
