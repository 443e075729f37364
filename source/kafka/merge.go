package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/buffer"
)

// part is one partition's state: its buffer of decoded tuples (a queue in
// buf[head*ts:(head+n)*ts], with each tuple's event time and the offset
// its production completes), and its commit marks.
type part struct {
	id       int32
	assigned bool
	buf      []byte
	times    []int64
	offs     []int64
	recs     []int64 // the offset of each buffered tuple's own record (offs may be a later one's)
	// strEnd is where each buffered tuple's long strings end in strs:
	// producing it lets strs free up to there (strings.go).
	strEnd  []uint64
	head, n int

	// strs holds the partition's long strings (Source.Strings), mapped
	// on the first request; strW is its Written, relEnd the end of the
	// strings of the last tuple produced, freed at the next FillSome.
	strs   *buffer.Ring
	strW   uint64
	relEnd uint64
	// backlog: records polled but not decoded for want of string memory
	// (the partition paused meanwhile), from backlog[bhead]; the first
	// is decoded from byte boff of its value, bgot of its tuples pushed
	// already, bmal whether a line of it was malformed (skipped).
	backlog []*kgo.Record
	bhead   int
	boff    int
	bgot    int
	bmal    bool

	// The record of the last tuple produced, and how many of its tuples
	// were: where a checkpoint resumes (Positions).
	takenRec   int64
	takenLines int
	// Resume: the first skip tuples of the record at skipAt were produced
	// before the checkpoint; they are dropped when read again.
	skipAt int64
	skip   int

	next  int64 // the offset after the last record decoded; -1 unknown
	high  int64
	end   int64 // the end offset seen at open; -1 unknown
	wm    int64 // the largest event time decoded
	ended bool  // StopAtEnd: read up to end

	idle       bool
	emptySince time.Time // when the merge first waited on it (zero: not waiting)
	// lastRecords is when a poll last brought it records (zero: none
	// since it was assigned).
	lastRecords time.Time
	waiting     bool // counted in Source.waiting
	paused      bool

	// Marks: each is a prefix of the partition's records that is done
	// once the stream position reaches pos and complete exceeds max.
	marks   []mark
	mhead   int
	touched bool   // pushed to Source.touched since the last marks
	emitPos uint64 // the stream position after its last tuple produced
	emitOff int64  // the offset that tuple (or a skipped record after it) completes
	runMax  int64  // the largest event time produced so far
	done    int64  // the offset to commit (after the done prefix); -1 none
	// committed is the offset last committed; -1 none.
	committed int64
}

type mark struct {
	pos uint64
	off int64
	max int64
}

// maxMarks bounds a partition's queue of marks when Done is not called: a
// new mark then replaces the newest, which it covers.
const maxMarks = 4096

func (p *part) reset() {
	p.head, p.n = 0, 0
	p.marks, p.mhead = p.marks[:0], 0
	p.touched = false
	// runMax stays: the tuples produced from the partition before it was
	// revoked are still in the engine, and a commit after it comes back
	// must not pass one whose windows are not out.
	p.done = -1
	p.committed = -1
	p.next = -1
	p.ended = false
	p.idle = false
	p.emptySince = time.Time{}
	p.lastRecords = time.Time{}
	p.takenRec, p.takenLines = -1, 0
	p.skipAt, p.skip = -1, 0
	// Records waiting for string memory go with the tuples, back to
	// their client's pools (no tuple of theirs is read from their values
	// any more: those decoded were copied); the string memory is freed by
	// the next FillSome (release): the strings FillSome last returned
	// stay valid until then.
	for _, r := range p.backlog[p.bhead:] {
		r.Recycle()
	}
	clear(p.backlog[p.bhead:])
	p.backlog, p.bhead = p.backlog[:0], 0
	p.boff, p.bgot, p.bmal = 0, 0, false
}

// reserve returns the slot after the last buffered tuple, making room.
func (p *part) reserve(ts int) []byte {
	c := len(p.times)
	if p.head+p.n == c {
		if p.n > 0 && p.n <= c/2 || p.n == 0 && c > 0 {
			copy(p.buf, p.buf[p.head*ts:(p.head+p.n)*ts])
			copy(p.times, p.times[p.head:p.head+p.n])
			copy(p.offs, p.offs[p.head:p.head+p.n])
			copy(p.recs, p.recs[p.head:p.head+p.n])
			copy(p.strEnd, p.strEnd[p.head:p.head+p.n])
			p.head = 0
		} else {
			nc := max(16, 2*c)
			nb := make([]byte, nc*ts)
			copy(nb, p.buf[p.head*ts:(p.head+p.n)*ts])
			nt := make([]int64, nc)
			copy(nt, p.times[p.head:p.head+p.n])
			no := make([]int64, nc)
			copy(no, p.offs[p.head:p.head+p.n])
			nr := make([]int64, nc)
			copy(nr, p.recs[p.head:p.head+p.n])
			ne := make([]uint64, nc)
			copy(ne, p.strEnd[p.head:p.head+p.n])
			p.buf, p.times, p.offs, p.recs, p.strEnd, p.head = nb, nt, no, nr, ne, 0
		}
	}
	i := p.head + p.n
	return p.buf[i*ts : (i+1)*ts]
}

// push counts the reserved slot as a buffered tuple.
func (p *part) push(t, off int64) {
	i := p.head + p.n
	p.times[i] = t
	p.offs[i] = off
	p.recs[i] = off
	p.strEnd[i] = p.strW
	p.n++
}

// skipped records that the record at off made no tuple: it completes with
// the last buffered tuple, or at once when none is buffered.
func (p *part) skipped(off int64, s *Source) {
	if p.n > 0 {
		p.offs[p.head+p.n-1] = off
		return
	}
	p.emitPos = max(p.emitPos, s.pos)
	p.emitOff = off
	if !p.touched {
		p.touched = true
		s.touched = append(s.touched, p.id)
	}
}

// refresh keeps p's waiting flag and Source.waiting in step with its state.
func (s *Source) refresh(p *part) {
	w := p.assigned && p.n == 0 && !p.ended && !p.idle
	if w == p.waiting {
		return
	}
	p.waiting = w
	if w {
		s.waiting++
	} else {
		s.waiting--
		p.emptySince = time.Time{}
	}
}

// less orders partitions a and b by head event time, then by the offset
// of the head's record, then partition. Equal times so go to the
// partitions in turn: a burst of records of one millisecond (a producer
// that fell behind its rate stamps a whole batch so) was drained one
// partition after the other, the rest paused with full buffers, so that
// each fetch brought one partition's records where it could bring all.
// Any order of equal times is the event-time order; this one is the
// data's own, so that a run resumed from a checkpoint merges as the run
// it resumes would have.
func (s *Source) less(a, b int32) bool {
	pa, pb := s.parts[a], s.parts[b]
	ta, tb := pa.times[pa.head], pb.times[pb.head]
	if ta != tb {
		return ta < tb
	}
	if ra, rb := pa.recs[pa.head], pb.recs[pb.head]; ra != rb {
		return ra < rb
	}
	return a < b
}

func (s *Source) heapPush(id int32) {
	s.heap = append(s.heap, id)
	h := s.heap
	i := len(h) - 1
	for i > 0 {
		up := (i - 1) / 2
		if !s.less(h[i], h[up]) {
			break
		}
		h[i], h[up] = h[up], h[i]
		i = up
	}
}

func (s *Source) siftDown(i int) {
	h := s.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && s.less(h[r], h[l]) {
			m = r
		}
		if !s.less(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// heapRemove takes partition id out of the heap (a revoke: rare).
func (s *Source) heapRemove(id int32) {
	for i, x := range s.heap {
		if x == id {
			last := len(s.heap) - 1
			s.heap[i] = s.heap[last]
			s.heap = s.heap[:last]
			if i < last {
				// Restore the heap around i: up, then down.
				for i > 0 {
					up := (i - 1) / 2
					if !s.less(s.heap[i], s.heap[up]) {
						break
					}
					s.heap[i], s.heap[up] = s.heap[up], s.heap[i]
					i = up
				}
				s.siftDown(i)
			}
			return
		}
	}
}

// merge writes tuples into dst[n:] in stream order while no partition
// holds the merge back, and returns the new n.
func (s *Source) merge(dst []byte, n int) int {
	ts := s.ts
	for n < len(dst) && s.waiting == 0 && len(s.heap) > 0 {
		id := s.heap[0]
		p := s.parts[id]
		h := p.head
		copy(dst[n:n+ts], p.buf[h*ts:(h+1)*ts])
		n += ts
		s.pos += uint64(ts)
		s.stats.Tuples++
		t := p.times[h]
		if t > p.runMax {
			p.runMax = t
		}
		p.emitPos = s.pos
		p.emitOff = p.offs[h]
		p.relEnd = p.strEnd[h]
		if rec := p.recs[h]; rec == p.takenRec {
			p.takenLines++
		} else {
			p.takenRec, p.takenLines = rec, 1
		}
		if !p.touched {
			p.touched = true
			s.touched = append(s.touched, id)
		}
		p.head++
		p.n--
		s.maybeResume(p)
		if p.n > 0 {
			s.siftDown(0)
			continue
		}
		p.head = 0
		last := len(s.heap) - 1
		s.heap[0] = s.heap[last]
		s.heap = s.heap[:last]
		s.siftDown(0)
		s.refresh(p)
	}
	return n
}

// maybeResume resumes fetching paused partition p once its buffer is
// down to half its capacity, its string memory (as the next FillSome
// leaves it) to half its size, and no record waits for that memory.
func (s *Source) maybeResume(p *part) {
	if !p.paused || p.ended || p.n > s.bufCap/2 || p.bhead < len(p.backlog) {
		return
	}
	if p.n > 0 && p.strW-p.relEnd > uint64(s.strSize/2) {
		return
	}
	p.paused = false
	s.resumeReq = append(s.resumeReq, p.id)
}

// pushMarks pushes a mark for each partition that produced (or skipped)
// records since the last call.
func (s *Source) pushMarks() {
	for _, id := range s.touched {
		p := s.parts[id]
		p.touched = false
		if s.cfg.Group == "" || !p.assigned {
			continue
		}
		m := mark{pos: p.emitPos, off: p.emitOff, max: p.runMax}
		if len(p.marks)-p.mhead >= maxMarks {
			p.marks[len(p.marks)-1] = m
			continue
		}
		if p.mhead > 0 && p.mhead >= len(p.marks)/2 {
			// Drop the marks Done has used: a windowed run always leaves
			// the newest windows' marks pending, so waiting for the queue
			// to empty would keep every mark of the run. Half the queue
			// used before each copy keeps the copies amortised O(1).
			n := copy(p.marks, p.marks[p.mhead:])
			p.marks, p.mhead = p.marks[:n], 0
		}
		p.marks = append(p.marks, m)
	}
	s.touched = s.touched[:0]
}
