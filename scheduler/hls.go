package scheduler

import (
	"sync"
	"time"
)

// hlsQueue is Hybrid Lookahead Scheduling for two processor kinds or more:
// tasks in push order in a ring of slots, under one mutex; a processor scans
// from the head and claims the first task it may take (see pick), leaving a
// hole that the head skips. Waiting processors sleep on their kind's
// sync.Cond.
//
// The monitor has no goroutine: whichever Pop, TryPop or Done first sees
// Now() at or past the next refresh time refreshes the matrix from what Done
// reported since the last refresh.
//
// With fcfs set it is fcfs for kinds that cannot run every query
// (Config.Runnable): a processor claims the oldest task it can run, and
// there is no matrix.
type hlsQueue struct {
	cfg  Config
	c    *counters
	fcfs bool

	mu      sync.Mutex
	conds   []*sync.Cond // per kind
	ring    ring
	queries []*hlsQuery
	closed  bool
	next    time.Duration // next matrix refresh
	delay   []float64     // pick's scratch: per kind, seconds of skipped work
	probes  []int         // per kind: queries whose probe[kind] is set
	scan    uint64        // pick's scan number
	owed    []int         // per kind: queries whose since[kind] >= SwitchThreshold-1
	avail   []int         // per kind: queued tasks of queries the kind can run
	idle    []idlers      // per kind: the processors waiting in Pop (Wake)
}

// hlsQuery is the per-query state of hls, under hlsQueue.mu.
//
// A kind that cannot run the query (runs[k] false) keeps rate 0, is never
// preferred, never probes, and its since stays 0: no task waits for it.
type hlsQuery struct {
	runs      []bool          // per kind: the kind can run the query
	rate      []float64       // per kind: bytes/s at the last refresh; 0: unknown (or not runnable)
	pendBytes []uint64        // per kind: reported since the last refresh
	pendBusy  []time.Duration // per kind
	pref      int             // runnable kind with the highest rate
	explore   bool            // some runnable kind's rate is unknown: any runnable kind takes the tasks
	probe     []bool          // per kind: runnable, rate unknown and no task claimed since the last refresh
	// since[k]: tasks of the query claimed by other kinds since kind k last
	// claimed one (only for kinds that can run it). At SwitchThreshold-1
	// kind k may take the next one.
	since []int
	mark  uint64 // pick's scratch: the scan that last met a task of the query
}

func newHLS(cfg Config, c *counters) *hlsQueue {
	q := &hlsQueue{
		cfg:    cfg,
		c:      c,
		fcfs:   cfg.Policy == FCFS,
		conds:  make([]*sync.Cond, cfg.Kinds),
		ring:   newRing(cfg.Capacity),
		next:   cfg.Now() + cfg.MonitorInterval,
		delay:  make([]float64, cfg.Kinds),
		probes: make([]int, cfg.Kinds),
		owed:   make([]int, cfg.Kinds),
		avail:  make([]int, cfg.Kinds),
		idle:   make([]idlers, cfg.Kinds),
	}
	for k := range q.conds {
		q.conds[k] = sync.NewCond(&q.mu)
	}
	q.query(cfg.Queries - 1)
	return q
}

// query returns the state of query i, growing the table if needed.
func (q *hlsQueue) query(i int) *hlsQuery {
	for len(q.queries) <= i {
		k := q.cfg.Kinds
		qs := &hlsQuery{
			runs: make([]bool, k), rate: make([]float64, k), pendBytes: make([]uint64, k), pendBusy: make([]time.Duration, k),
			explore: true, since: make([]int, k), probe: make([]bool, k), pref: -1,
		}
		for j := range k {
			qs.runs[j] = q.cfg.runs(len(q.queries), j)
			if !qs.runs[j] {
				continue
			}
			if qs.pref < 0 {
				qs.pref = j // explore until every runnable kind has a rate
			}
			if !q.fcfs {
				qs.probe[j] = true
				q.probes[j]++
			}
		}
		q.queries = append(q.queries, qs)
	}
	if i < 0 {
		return nil
	}
	return q.queries[i]
}

func (q *hlsQueue) Push(t *Task) {
	q.cfg.checkQuery(t)
	q.c.block(t.Query)
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		panic("scheduler: Push after Close")
	}
	qs := q.query(t.Query)
	q.ring.push(t)
	for k, ok := range qs.runs {
		if ok {
			q.avail[k]++
		}
	}
	q.mu.Unlock()
	// One waiter of each kind that can run it looks.
	for k, c := range q.conds {
		if qs.runs[k] {
			c.Signal()
		}
	}
}

func (q *hlsQueue) Pop(p Processor) *Task { return q.pop(p, true) }

func (q *hlsQueue) TryPop(p Processor) *Task { return q.pop(p, false) }

func (q *hlsQueue) pop(p Processor, wait bool) *Task {
	q.cfg.checkKind(p)
	q.mu.Lock()
	for {
		if !q.fcfs {
			q.refresh()
		}
		if t := q.pick(p.Kind); t != nil {
			// A wake is for a processor that waits, and p leaves with a task.
			q.idle[p.Kind].left()
			// The claim moved the switch counters and the head: let one
			// waiter of each kind that can run a queued task look again
			// (each claim passes it on).
			for k, n := range q.avail {
				if n > 0 {
					q.conds[k].Signal()
				}
			}
			q.mu.Unlock()
			return t
		}
		if !wait || q.closed {
			// Closed: nothing queued that p can run, and nothing more
			// will be pushed.
			q.mu.Unlock()
			return nil
		}
		if q.idle[p.Kind].woken() {
			q.mu.Unlock()
			return Woken
		}
		q.idle[p.Kind].wait(q.conds[p.Kind])
	}
}

func (q *hlsQueue) Wake(k, n int) {
	q.cfg.checkKind(Processor{Kind: k})
	q.idle[k].wake(&q.mu, q.conds[k], &q.closed, n)
}

// pick claims the task kind k may take, or returns nil. Under q.mu.
func (q *hlsQueue) pick(k int) *Task {
	r := &q.ring
	if q.avail[k] == 0 {
		return nil // nothing queued that k can run
	}
	if q.fcfs || q.closed {
		// fcfs, or draining: the oldest task k can run.
		return q.first(k)
	}
	clear(q.delay)
	if q.probes[k] > 0 {
		// k has no measurement for some query: it takes the first task of
		// such a query, ahead of anything else, once per refresh.
		for i := range r.span {
			if t := r.at(i); t != nil && q.queries[t.Query].probe[k] {
				return q.claim(i, k, q.queries[t.Query])
			}
		}
	}
	force := q.cfg.SwitchThreshold - 1
	owedK := q.owed[k] > 0
	mine, steal := -1, -1
	q.scan++
	for i := range r.span {
		t := r.at(i)
		if t == nil {
			continue
		}
		qs := q.queries[t.Query]
		if !qs.runs[k] {
			// k cannot run t. The kind preferred for it must work it off
			// before the tasks queued behind it.
			if !qs.explore && mine < 0 && steal < 0 {
				q.addBacklog(qs, float64(len(t.Data)))
			}
			continue
		}
		if qs.since[k] >= force {
			return q.claim(i, k, qs) // k is owed a run of this query: first
		}
		first := qs.mark != q.scan
		qs.mark = q.scan
		if first && !qs.explore && owedOther(qs, k, force) {
			continue // the query's first queued task waits for the kind owed a run
		}
		if qs.explore || qs.pref == k {
			if !owedK {
				return q.claim(i, k, qs)
			}
			if mine < 0 {
				mine = i // unless a run k is owed is queued further on
			}
			continue
		}
		if mine >= 0 || steal >= 0 {
			continue
		}
		// k is not preferred: it may take t only if the preferred kind
		// needs at least as long for the tasks skipped so far as k needs
		// for t; and only if no task k is preferred for is queued.
		bytes := float64(len(t.Data))
		if q.delay[qs.pref] >= bytes/qs.rate[k] {
			steal = i
			continue
		}
		q.addBacklog(qs, bytes)
	}
	if mine < 0 {
		mine = steal
	}
	if mine >= 0 {
		return q.claim(mine, k, q.queries[r.at(mine).Query])
	}
	return nil
}

// addBacklog adds to the backlog of the query's preferred kind (q.delay)
// the time that kind needs for bytes of the query's tasks: its rate shared
// by its workers. Under q.mu.
func (q *hlsQueue) addBacklog(qs *hlsQuery, bytes float64) {
	pk := qs.pref
	q.delay[pk] += bytes / qs.rate[pk] / float64(q.cfg.Workers[pk])
}

// first claims the oldest queued task kind k can run, or returns nil; it
// moves no switch counter. Under q.mu.
func (q *hlsQueue) first(k int) *Task {
	r := &q.ring
	for i := range r.span {
		if t := r.at(i); t != nil && q.queries[t.Query].runs[k] {
			return q.take(i)
		}
	}
	return nil
}

// take removes the i-th slot's task from the ring. Under q.mu.
func (q *hlsQueue) take(i int) *Task {
	t := q.ring.take(i)
	for k, ok := range q.queries[t.Query].runs {
		if ok {
			q.avail[k]--
		}
	}
	return t
}

// owedOther reports whether a kind other than k is owed a run of the
// query: other kinds claimed force of its tasks since that kind last did.
// Only kinds that can run the query are ever owed one.
func owedOther(qs *hlsQuery, k, force int) bool {
	for j, n := range qs.since {
		if j != k && n >= force && qs.runs[j] {
			return true
		}
	}
	return false
}

func (q *hlsQueue) claim(i, k int, qs *hlsQuery) *Task {
	force := q.cfg.SwitchThreshold - 1
	for j := range qs.since {
		if j == k {
			if qs.since[j] >= force {
				q.owed[j]--
			}
			qs.since[j] = 0
			continue
		}
		if !qs.runs[j] {
			continue // j never takes the query's tasks: it is owed none
		}
		qs.since[j]++
		if qs.since[j] == force {
			q.owed[j]++
		}
	}
	if qs.probe[k] {
		qs.probe[k] = false
		q.probes[k]--
	}
	return q.take(i)
}

func (q *hlsQueue) Done(p Processor, t *Task, busy time.Duration) {
	q.cfg.checkKind(p)
	q.c.add(p.Kind, t.Query, len(t.Data), busy)
	if q.fcfs {
		return // no matrix: Stats averages the counters
	}
	q.mu.Lock()
	qs := q.query(t.Query)
	qs.pendBytes[p.Kind] += uint64(len(t.Data))
	qs.pendBusy[p.Kind] += busy
	q.refresh()
	q.mu.Unlock()
}

// refresh recomputes the matrix once Now passes the refresh time: for each
// (query, kind) that reported work since the last refresh, the rate is the
// bytes over the busy time reported; the others keep their rate. A kind
// that cannot run the query keeps rate 0 and is left out of pref and of
// explore. Under q.mu.
func (q *hlsQueue) refresh() {
	now := q.cfg.Now()
	if now < q.next {
		return
	}
	q.next = now + q.cfg.MonitorInterval
	for _, qs := range q.queries {
		for k := range qs.rate {
			if qs.runs[k] && qs.pendBusy[k] > 0 && qs.pendBytes[k] > 0 {
				qs.rate[k] = float64(qs.pendBytes[k]) / qs.pendBusy[k].Seconds()
			}
			qs.pendBytes[k], qs.pendBusy[k] = 0, 0
		}
		qs.explore, qs.pref = false, -1
		for k, r := range qs.rate {
			if !qs.runs[k] {
				continue
			}
			if qs.pref < 0 {
				qs.pref = k
			}
			if r == 0 {
				qs.explore = true
				if !qs.probe[k] {
					qs.probe[k] = true
					q.probes[k]++
				}
			}
			if r > qs.rate[qs.pref] {
				qs.pref = k
			}
		}
	}
	for _, c := range q.conds {
		c.Broadcast()
	}
}

func (q *hlsQueue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	for _, c := range q.conds {
		c.Broadcast()
	}
}

func (q *hlsQueue) Stats() Stats {
	s := q.cfg.newStats()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fcfs {
		// As fcfs over a channel: the average throughput since the start.
		q.c.stats(&s, len(q.queries), true)
		return s
	}
	q.c.stats(&s, len(q.queries), false)
	s.Matrix = make([][]float64, len(s.Tasks[0]))
	for i := range s.Matrix {
		s.Matrix[i] = make([]float64, q.cfg.Kinds)
		if i < len(q.queries) {
			copy(s.Matrix[i], q.queries[i].rate)
		}
	}
	return s
}

// ring holds tasks in push order: slots head..head+span-1 (mod len), where a
// claimed slot beyond the head is a hole (nil). The head and the tail are
// never holes.
type ring struct {
	s                []*Task
	head, span, live int
}

func newRing(capacity int) ring {
	n := 1
	for n < capacity {
		n <<= 1
	}
	return ring{s: make([]*Task, n)}
}

func (r *ring) at(i int) *Task { return r.s[(r.head+i)&(len(r.s)-1)] }

func (r *ring) push(t *Task) {
	if r.span == len(r.s) {
		r.compact()
	}
	r.s[(r.head+r.span)&(len(r.s)-1)] = t
	r.span++
	r.live++
}

// compact closes the holes in place, or doubles the ring when it is full.
func (r *ring) compact() {
	if r.live == len(r.s) {
		s := make([]*Task, 2*len(r.s))
		for i := range r.span {
			s[i] = r.at(i)
		}
		r.s, r.head = s, 0
		return
	}
	m := len(r.s) - 1
	j := 0
	for i := range r.span {
		if t := r.at(i); t != nil {
			r.s[(r.head+j)&m] = t // j <= i: never overwrites an unread slot
			j++
		}
	}
	for i := j; i < r.span; i++ {
		r.s[(r.head+i)&m] = nil
	}
	r.span = j
}

func (r *ring) take(i int) *Task {
	m := len(r.s) - 1
	idx := (r.head + i) & m
	t := r.s[idx]
	r.s[idx] = nil
	r.live--
	for r.span > 0 && r.s[r.head] == nil {
		r.head = (r.head + 1) & m
		r.span--
	}
	for r.span > 0 && r.at(r.span-1) == nil {
		r.span--
	}
	return t
}
