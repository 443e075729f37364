package engine

import (
	"math"
	"sync"

	"github.com/saber-hx/saber-hx/query"
)

// A chained query's input is fully out only once the queries downstream
// have emitted what it fed them: its Progress reads marks, one per merge,
// of where it stood and of where it had filled each downstream stream,
// and takes the newest mark whose positions every downstream has put out
// in turn: merged through (recursively: out of its own downstream), and
// its windows emitted past the event times it had merged by then. Marks
// past maxChainMarks are thinned (the later of each pair kept), which
// only makes what they say later, never wrong.

const maxChainMarks = 128

// chainMark is where a stream stood after a merge.
type chainMark struct {
	bytes    uint64   // Progress.Merged
	pos      uint64   // ring position merged through
	complete int64    // the stream's own Complete
	wm       int64    // its watermark: the largest event time merged
	down     []uint64 // per downstream stream: its ring position filled
}

// chainMarks are a chained stream's marks, oldest first: written by its
// merge, read by Progress. A window join whose output feeds other queries
// has marks too, written as it hands windows on (joinStage.markChain).
type chainMarks struct {
	mu    sync.Mutex
	marks []chainMark
}

// markChains gives the streams of a chain their marks, and the window
// joins whose output feeds other queries theirs.
func (e *Engine) markChains() {
	for _, s := range e.streams {
		if len(s.ups) > 0 || len(s.downstream) > 0 {
			s.chain = newChainMarks(len(s.downstream))
		}
	}
	for _, en := range e.entries {
		if js := en.join; js != nil && len(js.down) > 0 {
			js.chain = newChainMarks(len(js.down))
		}
	}
}

// newChainMarks makes the marks of a stream or join with downs
// downstream streams, their positions made once.
func newChainMarks(downs int) *chainMarks {
	c := &chainMarks{marks: make([]chainMark, 0, maxChainMarks)}
	down := make([]uint64, maxChainMarks*downs)
	for i := range maxChainMarks {
		c.marks = append(c.marks, chainMark{down: down[i*downs : (i+1)*downs]})
	}
	c.marks = c.marks[:0]
	return c
}

// next makes room for a mark and returns it, under c.mu.
func (c *chainMarks) next() *chainMark {
	n := len(c.marks)
	if n == maxChainMarks {
		// Keep the later of each pair: half as fine.
		for i := range n / 2 {
			c.marks[i], c.marks[2*i+1] = c.marks[2*i+1], c.marks[i]
		}
		n /= 2
	}
	c.marks = c.marks[:n+1]
	return &c.marks[n]
}

// markChain records where s stands after merging t. Under mergeMu, which
// the downstream streams' positions are written under too (feeder). Of a
// window join's side that s feeds from its result stage (joinFeed), which
// has no positions of its own, the mark keeps the largest event time s
// filed into the join.
func (s *Stream) markChain(t *task) {
	c := s.chain
	c.mu.Lock()
	m := c.next()
	m.bytes, m.pos = s.bytes.Load(), t.Start+uint64(len(t.Data))
	m.complete, m.wm = math.MinInt64, s.watermark.Load()
	if len(s.downstream) > 0 {
		// Read by out() only, which only streams with downstream have: a
		// window join's side would take the join's lock here.
		m.complete = s.ownComplete()
	}
	for i, d := range s.downstream {
		if d == s.joinFeed {
			m.down[i] = uint64(d.joinSide.filed[d.side].Load())
		} else {
			m.down[i] = d.taskStart + uint64(d.filled)
		}
	}
	c.mu.Unlock()
}

// ownComplete is Progress's Complete for s's own windows: everything
// merged is out of a stateless query, below its Complete of a range
// window's aggregation or of a window join's input (joinStage.complete),
// and nothing this stream can tell of a row window.
func (s *Stream) ownComplete() int64 {
	switch {
	case s.joinSide != nil:
		return s.joinSide.complete()
	case s.asm == nil:
		return math.MaxInt64
	case s.plan.Query.Window.Type == query.Range:
		return s.complete.Load()
	}
	return math.MinInt64
}

// chainOut is how far s's input is out of the chain below it: bytes and
// ring position merged through, and the event time below which its
// windows are out.
type chainOut struct {
	bytes    uint64
	pos      uint64
	complete int64
}

// out is where s's input is out of every query below it.
func (s *Stream) out() chainOut {
	if len(s.downstream) == 0 || s.chain == nil {
		return chainOut{s.bytes.Load(), s.ring.Freed(), s.ownComplete()}
	}
	m, ok := s.chain.newestOut(s.downstream, s.joinFeed, len(s.ups) == 0)
	if !ok {
		return chainOut{complete: math.MinInt64}
	}
	return chainOut{m.bytes, m.pos, m.complete}
}

// newestOut is the newest of c's marks whose positions in downs are out
// (outThrough; of feed, a window join's side fed from a result stage, the
// join's windows out past the event time the mark kept), or ok false. With
// spend, the marks before it are dropped: no upstream looks them up.
func (c *chainMarks) newestOut(downs []*Stream, feed *Stream, spend bool) (m chainMark, ok bool) {
	outs := make([]chainOut, len(downs))
	for i, d := range downs {
		outs[i] = d.out()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	best := -1
	for i := range c.marks {
		m := &c.marks[i]
		ok := true
		for k, d := range downs {
			if d == feed {
				ok = outs[k].complete > int64(m.down[k])
			} else {
				ok = d.outThrough(m.down[k], outs[k])
			}
			if !ok {
				break
			}
		}
		if !ok {
			break
		}
		best = i
	}
	if best < 0 {
		return chainMark{}, false
	}
	m = c.marks[best]
	if spend && best > 0 {
		n := len(c.marks) - best
		for i := range n {
			c.marks[i], c.marks[best+i] = c.marks[best+i], c.marks[i]
		}
		c.marks = c.marks[:n]
	}
	return m, true
}

// outThrough says whether d's input below ring position p is out, o being
// d.out(): merged through p, and its windows out past the event times
// merged by then, which the first mark at or past p says. A merge frees
// the ring, then publishes the watermark and marks: merged through p but
// not marked yet, the watermark may not cover what it merged, and p is
// not out yet (0: nothing was ever pushed, which is out).
func (d *Stream) outThrough(p uint64, o chainOut) bool {
	if o.pos < p {
		return false
	}
	if o.complete == math.MaxInt64 || p == 0 {
		return true
	}
	c := d.chain
	if c == nil {
		return o.complete > d.watermark.Load()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.marks {
		if c.marks[i].pos >= p {
			return o.complete > c.marks[i].wm
		}
	}
	return false
}
