package window

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Sessions is the result stage of a query over session windows
// (query.Sessions): per group, a session holds the group's tuples whose
// event times are at most Gap apart, and closes Gap after its last tuple
// once the watermark minus Delay reaches that end. Sessions depend on the
// order the tuples come in and on the watermark before each, so they are
// assembled here, in task order, tuple by tuple, from the records a
// session kernel writes into TaskResult.Out (SessionRecord): each counted
// tuple's event time, the watermark before it within its task, its group
// key and its aggregate words. The watermark is the largest event time of
// every earlier tuple (filtered ones too), as for every window.
//
// A record is late when the watermark before it minus Delay has reached
// its time plus Gap and no open session of its group lies within Gap of
// it (query.Sessions); else it joins the open sessions of its group it
// lies within Gap of (merging them when it bridges two), or starts one. Before
// each record, and at the end of each task, every session whose end the
// watermark minus Delay has reached is emitted: in order of end, then
// start, then key bytes, one Result of one row each (Start the session's
// first tuple, End and Window its last plus Gap).
type Sessions struct {
	Gap, Delay int64
	layout     *Layout
	words      int
	Counters

	wm     int64
	haveWM bool
	open   sessionKeys // by key
	closes closeHeap
	out    *GroupState // the emitted row
	free   []*session
	lists  []*sessionList                         // sessionLists of keys no longer open, for reuse
	keep   func(st *GroupState, group int32) bool // HAVING; nil: every session
	res    Result                                 // the emitted session, reused
	// keyOrder orders sessions of one end and start by their keys (nil:
	// by key bytes): a query's string keys are numbers given in the
	// workers' order, which must not order the output.
	keyOrder func(a, b []byte) int
}

// SetKeyOrder orders sessions that end and start together by cmp of their
// key bytes (nil: by the bytes).
func (s *Sessions) SetKeyOrder(cmp func(a, b []byte) int) { s.keyOrder = cmp }

// session is one open session: its first and last tuple's times and its
// row (word 0 the tuples counted, then the aggregate words).
type session struct {
	key         [16]byte
	start, last int64
	row         []int64
	at          int // index in the heap
}

// sessionList is a key's open sessions, ordered by start: held in open
// by pointer, so that a tuple that extends one looks its key up once.
type sessionList struct{ s []*session }

// end is where a session ends: its last tuple plus the gap, saturated
// (math.MaxInt64 is also the end of a session that ends past it: past
// says which).
func (s *Sessions) end(ss *session) int64 {
	if ss.last > math.MaxInt64-s.Gap {
		return math.MaxInt64
	}
	return ss.last + s.Gap
}

// past is whether session ss ends past math.MaxInt64: no watermark
// reaches its end.
func (s *Sessions) past(ss *session) bool { return ss.last > math.MaxInt64-s.Gap }

// SessionRecordSize is the size of a session kernel's record for layout
// l: time, watermark before, key (16 bytes), then l's aggregate words.
func SessionRecordSize(l *Layout) int { return 32 + 8*len(l.Kinds) }

// NewSessions returns the result stage of sessions of gap, delay and
// layout l (its Kinds: the aggregate words; hashed or one group).
func NewSessions(gap, delay int64, l *Layout) *Sessions {
	s := &Sessions{Gap: gap, Delay: delay, layout: l, words: l.Words(), wm: math.MinInt64}
	s.closes.s = s
	s.out = NewGroupState(l)
	return s
}

// Watermark is the largest event time merged so far (math.MinInt64: none).
func (s *Sessions) Watermark() int64 { return s.wm }

// Complete is the start of the earliest session still open (what every
// later output starts at or after); math.MaxInt64 with none open.
func (s *Sessions) Complete() int64 {
	c := int64(math.MaxInt64)
	for _, ss := range s.closes.h {
		c = min(c, ss.start)
	}
	return c
}

// reached reports whether the watermark minus the delay has reached t,
// an end (math.MaxInt64 included: the callers leave out the ends past
// it, which nothing reaches), exactly, without overflow.
func (s *Sessions) reached(wm, t int64) bool {
	switch {
	case wm == math.MinInt64:
		return false
	case s.Delay > 0 && wm < math.MinInt64+s.Delay:
		return false // wm - Delay is below every int64
	case s.Delay < 0 && wm > math.MaxInt64+s.Delay:
		return true // wm - Delay is past every int64
	}
	return wm-s.Delay >= t
}

// Counts are the counters.
func (s *Sessions) Counts() *Counters { return &s.Counters }

// SetFilter drops the sessions for which keep is false when they close
// (HAVING), as Assembler.SetFilter drops rows.
func (s *Sessions) SetFilter(keep func(st *GroupState, group int32) bool) { s.keep = keep }

// MergeTake merges a session kernel's task result (its records, in order),
// then hands each session it closed to emit.
func (s *Sessions) MergeTake(r *TaskResult, emit func(*Result) error) error {
	rs := SessionRecordSize(s.layout)
	le := binary.LittleEndian
	s.Tuples += r.Tuples
	s.Filtered += r.Filtered
	s.Unmatched += r.Unmatched
	prev := s.wm
	for o := 0; o+rs <= len(r.Out); o += rs {
		rec := r.Out[o : o+rs]
		t, local := int64(le.Uint64(rec)), int64(le.Uint64(rec[8:]))
		wm := max(prev, local)
		if err := s.closeReached(wm, emit); err != nil {
			return err
		}
		k := [16]byte(rec[16:32])
		if t <= math.MaxInt64-s.Gap && s.reached(wm, t+s.Gap) && !s.joinsOpen(t, k) {
			s.Late++
			continue
		}
		s.Counted++
		s.add(t, k, rec[32:])
	}
	if r.Tuples > 0 {
		s.wm = max(s.wm, r.MaxTS)
	}
	return s.closeReached(s.wm, emit)
}

// near returns the run list[lo:hi] of the sessions (of one key, ordered
// by start) that time t lies within the gap of: empty where none.
func (s *Sessions) near(list []*session, t int64) (lo, hi int) {
	// Differences as uint64: the true ones, whatever the int64s.
	gap := uint64(s.Gap)
	for lo < len(list) && list[lo].last < t && uint64(t)-uint64(list[lo].last) > gap {
		lo++
	}
	hi = lo
	for hi < len(list) && (list[hi].start <= t || uint64(list[hi].start)-uint64(t) <= gap) {
		hi++
	}
	return lo, hi
}

// joinsOpen says whether a tuple of time t and key k lies within the gap
// of an open session of k: one that the watermark has not closed, which
// the tuple extends (or lies in).
func (s *Sessions) joinsOpen(t int64, k [16]byte) bool {
	l := s.open.get(k)
	if l == nil {
		return false
	}
	lo, hi := s.near(l.s, t)
	return hi > lo
}

// add files a tuple of time t, key k and aggregate words w.
func (s *Sessions) add(t int64, k [16]byte, w []byte) {
	l := s.open.get(k)
	if l == nil {
		l = s.newList()
		s.open.put(k, l)
	}
	list := l.s
	lo, hi := s.near(list, t)
	var ss *session
	if hi == lo {
		ss = s.newSession(k, t)
		list = slices.Insert(list, lo, ss)
		s.closes.push(ss)
	} else {
		// The sessions t bridges are taken out of the heap before the
		// first one's bounds change: a removal sifts the heap around
		// it, which needs its place to be its order.
		ss = list[lo]
		start, last := min(ss.start, t), max(ss.last, t)
		for _, o := range list[lo+1 : hi] {
			start, last = min(start, o.start), max(last, o.last)
			s.combine(ss.row, o.row)
			s.closes.remove(o.at)
			s.release(o)
		}
		list = slices.Delete(list, lo+1, hi)
		ss.start, ss.last = start, last
		s.closes.fix(ss.at)
	}
	l.s = list
	ss.row[0]++
	for i, kind := range s.layout.Kinds {
		v := int64(binary.LittleEndian.Uint64(w[8*i:]))
		if ss.row[0] == 1 {
			ss.row[1+i] = v
		} else {
			ss.row[1+i] = kind.Combine(ss.row[1+i], v)
		}
	}
}

// combine folds row o into row r (word 0 added).
func (s *Sessions) combine(r, o []int64) {
	switch {
	case o[0] == 0:
		return
	case r[0] == 0:
		copy(r, o)
		return
	}
	r[0] += o[0]
	for i, kind := range s.layout.Kinds {
		r[1+i] = kind.Combine(r[1+i], o[1+i])
	}
}

func (s *Sessions) newSession(k [16]byte, t int64) *session {
	var ss *session
	if n := len(s.free); n > 0 {
		ss, s.free = s.free[n-1], s.free[:n-1]
		clear(ss.row)
	} else {
		ss = &session{row: make([]int64, s.words)}
	}
	ss.key, ss.start, ss.last = k, t, t
	return ss
}

func (s *Sessions) release(ss *session) { s.free = append(s.free, ss) }

func (s *Sessions) newList() *sessionList {
	if n := len(s.lists); n > 0 {
		l := s.lists[n-1]
		s.lists = s.lists[:n-1]
		return l
	}
	return &sessionList{}
}

// closeReached emits, in order, every open session whose end the
// watermark wm minus the delay has reached.
func (s *Sessions) closeReached(wm int64, emit func(*Result) error) error {
	for len(s.closes.h) > 0 {
		ss := s.closes.h[0]
		end := s.end(ss)
		if !s.reached(wm, end) {
			return nil
		}
		if end == math.MaxInt64 {
			return s.closeAtMax(emit)
		}
		if err := s.close(ss, emit); err != nil {
			return err
		}
	}
	return nil
}

// closeAtMax emits, in order, the open sessions that end at
// math.MaxInt64 exactly, once the watermark minus the delay has reached
// it: those left open all end there or past it (their ends saturated,
// the heap orders them by start and key), and those past it stay open.
func (s *Sessions) closeAtMax(emit func(*Result) error) error {
	var at []*session
	for _, ss := range s.closes.h {
		if !s.past(ss) {
			at = append(at, ss)
		}
	}
	slices.SortFunc(at, func(a, b *session) int {
		switch {
		case s.closes.less(a, b):
			return -1
		case s.closes.less(b, a):
			return 1
		}
		return 0
	})
	for _, ss := range at {
		if err := s.close(ss, emit); err != nil {
			return err
		}
	}
	return nil
}

// close emits session ss and forgets it.
func (s *Sessions) close(ss *session, emit func(*Result) error) error {
	s.closes.remove(ss.at)
	l := s.open.get(ss.key)
	i := slices.Index(l.s, ss)
	l.s = slices.Delete(l.s, i, i+1)
	if len(l.s) == 0 {
		s.open.remove(ss.key)
		s.lists = append(s.lists, l)
	}
	st := s.out
	st.Reset()
	var g int32
	if s.layout.Hashed {
		g = st.Lookup(binary.BigEndian.Uint64(ss.key[0:8]), binary.BigEndian.Uint64(ss.key[8:16]))
	} else {
		st.Touched = append(st.Touched, 0)
	}
	copy(st.Row(g), ss.row)
	start, end := ss.start, s.end(ss)
	s.release(ss)
	if s.keep != nil && !s.keep(st, g) {
		return nil
	}
	s.Windows++
	s.Rows++
	s.res = Result{Window: end, Start: start, End: end, State: st, Rows: append(s.res.Rows[:0], g)}
	return emit(&s.res)
}

// Flush emits every open session (the input ended), in order.
func (s *Sessions) Flush(emit func(*Result) error) error {
	for len(s.closes.h) > 0 {
		if err := s.close(s.closes.h[0], emit); err != nil {
			return err
		}
	}
	return nil
}

// insert files ss, a session of a snapshot, among the open ones.
func (s *Sessions) insert(ss *session) {
	l := s.open.get(ss.key)
	if l == nil {
		l = s.newList()
		s.open.put(ss.key, l)
	}
	i, _ := slices.BinarySearchFunc(l.s, ss.start, func(a *session, t int64) int { return cmp.Compare(a.start, t) })
	l.s = slices.Insert(l.s, i, ss)
	s.closes.push(ss)
}

// closeHeap orders open sessions by end, start, then key bytes: the order
// they close and are emitted in.
type closeHeap struct {
	s *Sessions
	h []*session
}

// less orders a before b: by end, start, then key.
func (c *closeHeap) less(a, b *session) bool {
	if ea, eb := c.s.end(a), c.s.end(b); ea != eb {
		return ea < eb
	}
	if a.start != b.start {
		return a.start < b.start
	}
	if c.s.keyOrder != nil {
		return c.s.keyOrder(a.key[:], b.key[:]) < 0
	}
	return string(a.key[:]) < string(b.key[:])
}

// set puts ss at index i.
func (c *closeHeap) set(i int, ss *session) {
	c.h[i] = ss
	ss.at = i
}

func (c *closeHeap) push(ss *session) {
	c.h = append(c.h, ss)
	c.up(len(c.h) - 1)
}

// remove takes out the session at index i.
func (c *closeHeap) remove(i int) {
	n := len(c.h) - 1
	last := c.h[n]
	c.h[n] = nil
	c.h = c.h[:n]
	if i == n {
		return
	}
	c.set(i, last)
	c.fix(i)
}

// fix restores the order after the session at index i changed.
func (c *closeHeap) fix(i int) {
	if !c.down(i) {
		c.up(i)
	}
}

func (c *closeHeap) up(i int) {
	ss := c.h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !c.less(ss, c.h[p]) {
			break
		}
		c.set(i, c.h[p])
		i = p
	}
	c.set(i, ss)
}

// down sifts the session at index i down; it reports whether it moved.
func (c *closeHeap) down(i int) bool {
	ss, n, start := c.h[i], len(c.h), i
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && c.less(c.h[r], c.h[l]) {
			m = r
		}
		if !c.less(c.h[m], ss) {
			break
		}
		c.set(i, c.h[m])
		i = m
	}
	c.set(i, ss)
	return i > start
}

// sessionSnapshotVersion is the version of AppendSnapshot's encoding.
const sessionSnapshotVersion = 1

// AppendSnapshot appends the open sessions and the watermark: version u8,
// gap, delay i64, watermark i64, has u8, the counters (7 u64), the
// sessions u32, each its key (16 bytes), start and last i64 and its row's
// words (i64 each).
func (s *Sessions) AppendSnapshot(dst []byte) []byte {
	return appendSessionsSnapshot(dst, s.Gap, s.Delay, s.wm, s.haveWM, &s.Counters, s.closes.h)
}

// appendSessionsSnapshot is AppendSnapshot's encoding of the sessions
// open (which it leaves as they are), with the stage's gap, delay,
// watermark and counters.
func appendSessionsSnapshot(dst []byte, gap, delay, wm int64, haveWM bool, c *Counters, open []*session) []byte {
	le := binary.LittleEndian
	dst = append(dst, sessionSnapshotVersion)
	for _, v := range []int64{gap, delay, wm} {
		dst = le.AppendUint64(dst, uint64(v))
	}
	dst = append(dst, boolByte(haveWM))
	for _, v := range []uint64{c.Tuples, c.Filtered, c.Unmatched, c.Late, c.Counted, c.Windows, c.Rows} {
		dst = le.AppendUint64(dst, v)
	}
	all := slices.Clone(open)
	slices.SortFunc(all, func(a, b *session) int {
		if d := cmp.Compare(a.start, b.start); d != 0 {
			return d
		}
		return cmp.Compare(string(a.key[:]), string(b.key[:]))
	})
	dst = le.AppendUint32(dst, uint32(len(all)))
	for _, ss := range all {
		dst = append(dst, ss.key[:]...)
		dst = le.AppendUint64(dst, uint64(ss.start))
		dst = le.AppendUint64(dst, uint64(ss.last))
		for _, w := range ss.row {
			dst = le.AppendUint64(dst, uint64(w))
		}
	}
	return dst
}

// RestoreSnapshot replaces the state by AppendSnapshot's, of sessions of
// the same gap, delay and layout, and returns the bytes after it. On an
// error the state is left empty, as NewSessions returns it.
func (s *Sessions) RestoreSnapshot(b []byte) (rest []byte, err error) {
	s.open, s.closes.h, s.Counters, s.wm, s.haveWM = sessionKeys{}, nil, Counters{}, math.MinInt64, false
	defer func() {
		if err != nil {
			s.open, s.closes.h, s.Counters, s.wm, s.haveWM = sessionKeys{}, nil, Counters{}, math.MinInt64, false
		}
	}()
	r := NewSnapshotReader(b)
	if v := r.U8(); r.Err() == nil && v != sessionSnapshotVersion {
		return nil, fmt.Errorf("sessions: snapshot version %d, want %d", v, sessionSnapshotVersion)
	}
	gap, delay, wm := int64(r.U64()), int64(r.U64()), int64(r.U64())
	has := r.Bool()
	var c Counters
	for _, v := range []*uint64{&c.Tuples, &c.Filtered, &c.Unmatched, &c.Late, &c.Counted, &c.Windows, &c.Rows} {
		*v = r.U64()
	}
	n := r.U32()
	if r.Err() != nil {
		return nil, fmt.Errorf("sessions: %w", r.Err())
	}
	if gap != s.Gap || delay != s.Delay {
		return nil, fmt.Errorf("sessions: snapshot of gap %d and delay %d, not %d and %d", gap, delay, s.Gap, s.Delay)
	}
	per := 32 + 8*s.words
	if uint64(n)*uint64(per) > uint64(len(r.Rest())) {
		return nil, errors.New("sessions: snapshot truncated")
	}
	for range n {
		ss := &session{row: make([]int64, s.words)}
		copy(ss.key[:], r.Take(16))
		ss.start, ss.last = int64(r.U64()), int64(r.U64())
		for i := range ss.row {
			ss.row[i] = int64(r.U64())
		}
		if ss.last < ss.start || ss.row[0] <= 0 {
			return nil, fmt.Errorf("sessions: a session [%d, %d] of %d tuples", ss.start, ss.last, ss.row[0])
		}
		s.insert(ss)
	}
	if r.Err() != nil {
		return nil, fmt.Errorf("sessions: %w", r.Err())
	}
	s.wm, s.haveWM, s.Counters = wm, has, c
	return r.Rest(), nil
}
