// Package scheduler holds the unit of work (Task) and the queue from which
// processors take tasks.
//
// Three policies share one Queue interface (see docs/scheduling.md):
//
//   - fcfs: every processor takes the head of the queue.
//   - static: each query is bound to a processor kind; a processor only takes
//     tasks of the queries bound to its kind.
//   - hls: SABER's Hybrid Lookahead Scheduling. A throughput matrix (query x
//     processor kind) says which kind is preferred for each query; a
//     processor may claim a task beyond the head (lookahead), and takes a task
//     of a query it is not preferred for only if the preferred kind could not
//     finish the tasks ahead of it sooner.
//
// With one processor kind every policy is fcfs: a channel, one operation per
// task, and Done costs three atomic adds. The lookahead queue (a ring of
// slots under a mutex, a sync.Cond per kind) is only built for hls with two
// kinds or more, and for fcfs with two kinds or more when some kind cannot
// run some query (Config.Runnable). Static with two kinds or more is one
// channel per kind.
//
// Config.Runnable says which kinds can run which query (a GPU has no kernel
// for some queries): under every policy a kind never receives a task of a
// query it cannot run, not even while the queue drains after Close.
package scheduler

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Task is a numbered slice of one stream's ring, cut by bytes and knowing
// nothing of windows, ingestion or results: what the queue orders. It is
// reused: its owner (the engine) keeps a fixed set of tasks, each part of a
// record of its own, and finds a task's record again by Ref.
type Task struct {
	ID         uint64 // per query, dense from 0, in stream order
	Query      int
	Start      uint64 // absolute offset of Data in the stream's ring
	Data       []byte // whole tuples, contiguous even across the ring's wrap
	Dispatched int64  // when the task was queued: Nanotime, monotonic
	Node       int    // NUMA node of Data (Config.Nodes > 1)
	// Ref is the owner's: the queue never reads it (the engine: the index
	// of the task's record among its query's).
	Ref int
}

// Woken is what Pop returns to a processor that Wake woke: not a task (its
// Query is -1), never returned by TryPop.
var Woken = &Task{Query: -1}

// epoch is the origin of Nanotime: the package's initialisation, early in
// the process.
var epoch = time.Now()

// Nanotime returns nanoseconds since epoch on the monotonic clock, for
// Task.Dispatched: a task's latency is the difference of two readings,
// which a step of the wall clock (NTP, settimeofday) must not move, and an
// int64 keeps the Task small where a time.Time would take 24 bytes. It
// costs what time.Now costs (a vDSO call), once per task.
func Nanotime() int64 { return int64(time.Since(epoch)) }

// Processor identifies who asks for a task.
type Processor struct {
	Kind int // processor kind (0: CPU, 1: GPU), in [0, Config.Kinds)
	ID   int // worker number
	Node int // NUMA node of the processor (Config.Nodes > 1)
}

// Queue hands tasks to processors. Every method is safe for concurrent use.
type Queue interface {
	// Push queues a task; it never blocks while at most Config.Capacity
	// tasks are queued (the engine bounds the tasks in flight).
	Push(t *Task)
	// Pop returns the next task p may take, blocking until there is one, or
	// nil once the queue is closed and drained of what p's kind can run.
	// It never returns a task of a query p's kind cannot run
	// (Config.Runnable).
	Pop(p Processor) *Task
	// TryPop returns the next task p may take without waiting, or nil.
	TryPop(p Processor) *Task
	// Wake has up to n processors of kind k that wait in Pop with nothing
	// queued for them return Woken instead of a task, so that they look for
	// work the queue does not hold (the engine's window joins: closed
	// windows whose pairs any worker may compute) and then call Pop again.
	// With no processor waiting it does nothing: a busy one finds such
	// work between two tasks (in the channel queues, a wake sent to a
	// waiter that a task reached first goes to the next Pop). It costs an
	// atomic load when none waits, and is a no-op after Close.
	Wake(k, n int)
	// Done reports that p finished t after busy time of work. It feeds the
	// counters and, under hls, the throughput matrix. t must still hold its
	// Data (its length is the task's bytes): call Done before the task is
	// handed on and recycled.
	Done(p Processor, t *Task, busy time.Duration)
	// Close ends the queue: Pop drains what is queued (each kind what it
	// can run), then returns nil.
	// Push after Close panics.
	Close()
	// Stats returns a snapshot of the counters and the matrix.
	Stats() Stats
}

// Stats is a snapshot of a queue.
type Stats struct {
	Policy Policy
	Kinds  []string
	Tasks  [][]uint64  // [kind][query] tasks run (reported by Done)
	Bytes  [][]uint64  // [kind][query] bytes run (reported by Done)
	Matrix [][]float64 // [query][kind] bytes/s, as of the last refresh (0: unknown)
	// Runnable[q][k] false: kind k cannot run query q (a copy of
	// Config.Runnable); nil when every kind runs every query.
	Runnable [][]bool
	// Per-node queues (Config.Nodes > 1): tasks taken from the processor's
	// own node, and stolen from another.
	Local, Stolen uint64
}

// Policy names a scheduling policy.
type Policy string

const (
	FCFS   Policy = "fcfs"
	Static Policy = "static"
	HLS    Policy = "hls"
)

// Policies lists the policies this build implements.
var Policies = []Policy{FCFS, Static, HLS}

// Defaults of Config.
const (
	DefaultSwitchThreshold = 10
	DefaultMonitorInterval = time.Second
)

// Config configures a queue.
type Config struct {
	Policy    Policy   // "" means fcfs
	Kinds     int      // processor kinds, >= 1 (kind 0 = CPU; a GPU is kind 1)
	KindNames []string // for messages and summaries, len Kinds; nil: cpu, gpu, kind2...
	// Queries is the number of queries (Task.Query in [0, Queries)). 0 means
	// not known up front: per-query state grows as tasks of new queries are
	// pushed (not allowed for static with two kinds or more).
	Queries  int
	Capacity int         // tasks queued at most (Push never blocks below that), >= 1
	Static   map[int]int // static: query -> kind; with Kinds > 1 every query must be bound
	// Workers is the number of processors of each kind (len Kinds, each
	// >= 1); nil means one each. Under hls the backlog that the preferred
	// kind must work off before a task is shared among its processors.
	Workers         []int
	SwitchThreshold int                  // hls: >= 1; 0 means DefaultSwitchThreshold
	MonitorInterval time.Duration        // hls: > 0; 0 means DefaultMonitorInterval
	Now             func() time.Duration // monotonic clock; nil: real time since NewQueue
	// Nodes is the number of NUMA nodes (Task.Node and Processor.Node in
	// [0, Nodes)). With more than one, and one processor kind, tasks wait
	// in one queue per node: a processor takes the tasks of its own node
	// first and steals from the others only when its node has none.
	Nodes int
	// Runnable says which kinds can run which query: Runnable[q][k] false
	// means kind k has no kernel for query q and never gets its tasks.
	// nil means every kind runs every query; otherwise len Queries, each
	// len Kinds, and every query runnable by at least one kind.
	Runnable [][]bool
}

// Validate checks c, naming the bad value and the valid range.
func (c Config) Validate() error {
	switch c.Policy {
	case "", FCFS, Static, HLS:
	default:
		return fmt.Errorf("unknown scheduling policy %q (valid: %s)", c.Policy, policyList())
	}
	if c.Kinds < 1 {
		return fmt.Errorf("processor kinds %d: need at least 1", c.Kinds)
	}
	if c.KindNames != nil && len(c.KindNames) != c.Kinds {
		return fmt.Errorf("%d kind names for %d processor kinds: need one per kind", len(c.KindNames), c.Kinds)
	}
	if c.Queries < 0 {
		return fmt.Errorf("queries %d: must be >= 0 (0: not known up front)", c.Queries)
	}
	if c.Capacity < 1 {
		return fmt.Errorf("capacity %d: need at least 1", c.Capacity)
	}
	if c.Nodes < 0 {
		return fmt.Errorf("nodes %d: must be >= 0", c.Nodes)
	}
	if c.SwitchThreshold < 0 {
		return fmt.Errorf("switch threshold %d: must be >= 1 (0: default %d)", c.SwitchThreshold, DefaultSwitchThreshold)
	}
	if c.MonitorInterval < 0 {
		return fmt.Errorf("monitor interval %v: must be > 0 (0: default %v)", c.MonitorInterval, DefaultMonitorInterval)
	}
	if c.Workers != nil {
		if len(c.Workers) != c.Kinds {
			return fmt.Errorf("workers per kind %v: need one count per kind (%d kinds)", c.Workers, c.Kinds)
		}
		for k, n := range c.Workers {
			if n < 1 {
				return fmt.Errorf("workers of kind %s: %d, need at least 1", c.kindName(k), n)
			}
		}
	}
	if err := c.validateRunnable(); err != nil {
		return err
	}
	qs := make([]int, 0, len(c.Static))
	for q := range c.Static {
		qs = append(qs, q)
	}
	sort.Ints(qs)
	for _, q := range qs {
		k := c.Static[q]
		if q < 0 || (c.Queries > 0 && q >= c.Queries) {
			return fmt.Errorf("static binding of query %d: no such query (valid: 0..%d)", q, c.Queries-1)
		}
		if k < 0 || k >= c.Kinds {
			return fmt.Errorf("static binding of query %d to kind %d: no such kind (valid: 0..%d, %s)", q, k, c.Kinds-1, strings.Join(c.kindNames(), ", "))
		}
		if c.Policy == Static && !c.runs(q, k) {
			return fmt.Errorf("static binding of query %d to %s: %s has no kernel for it", q, c.kindName(k), c.kindName(k))
		}
	}
	if c.Policy == Static && c.Kinds > 1 {
		if c.Queries == 0 {
			return fmt.Errorf("static policy with %d processor kinds needs the number of queries", c.Kinds)
		}
		var unbound []string
		for q := range c.Queries {
			if _, ok := c.Static[q]; !ok {
				unbound = append(unbound, fmt.Sprint(q))
			}
		}
		if len(unbound) > 0 {
			return fmt.Errorf("static policy: query %s not bound to a processor kind (bind every query in 0..%d to a kind in 0..%d)", strings.Join(unbound, ", "), c.Queries-1, c.Kinds-1)
		}
	}
	return nil
}

// validateRunnable checks the shape of c.Runnable and that every query has
// a kind that can run it.
func (c Config) validateRunnable() error {
	if c.Runnable == nil {
		return nil
	}
	if c.Queries == 0 {
		return fmt.Errorf("runnable kinds with queries 0 (not known up front): runnable kinds need the number of queries")
	}
	if len(c.Runnable) != c.Queries {
		return fmt.Errorf("runnable kinds: %d rows for %d queries: need one row per query", len(c.Runnable), c.Queries)
	}
	for q, ks := range c.Runnable {
		if len(ks) != c.Kinds {
			return fmt.Errorf("runnable kinds of query %d: %d values for %d processor kinds: need one per kind", q, len(ks), c.Kinds)
		}
		if !slices.Contains(ks, true) {
			return fmt.Errorf("query %d: no processor kind can run it (none of %s has a kernel for it)", q, strings.Join(c.kindNames(), ", "))
		}
	}
	return nil
}

// runs reports whether kind k can run query q. c.Runnable must be valid.
func (c *Config) runs(q, k int) bool {
	return c.Runnable == nil || q >= len(c.Runnable) || c.Runnable[q][k]
}

// restricted reports whether some kind cannot run some query.
func (c *Config) restricted() bool {
	for _, ks := range c.Runnable {
		if slices.Contains(ks, false) {
			return true
		}
	}
	return false
}

// newStats returns a snapshot of c's policy, kind names and runnable kinds,
// for a queue's Stats to fill in the counters.
func (c *Config) newStats() Stats {
	return Stats{Policy: c.Policy, Kinds: slices.Clone(c.KindNames), Runnable: c.runnable()}
}

// runnable returns a copy of c.Runnable, or nil when every kind runs every
// query.
func (c *Config) runnable() [][]bool {
	if !c.restricted() {
		return nil
	}
	r := make([][]bool, len(c.Runnable))
	for q, ks := range c.Runnable {
		r[q] = slices.Clone(ks)
	}
	return r
}

func policyList() string {
	s := make([]string, len(Policies))
	for i, p := range Policies {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

func (c Config) kindName(k int) string {
	if c.KindNames != nil && k < len(c.KindNames) {
		return c.KindNames[k]
	}
	switch k {
	case 0:
		return "cpu"
	case 1:
		return "gpu"
	}
	return fmt.Sprintf("kind%d", k)
}

func (c Config) kindNames() []string {
	n := make([]string, c.Kinds)
	for k := range n {
		n[k] = c.kindName(k)
	}
	return n
}

// NewQueue returns a queue for cfg.
func NewQueue(cfg Config) (Queue, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Policy == "" {
		cfg.Policy = FCFS
	}
	cfg.KindNames = cfg.kindNames()
	if cfg.SwitchThreshold == 0 {
		cfg.SwitchThreshold = DefaultSwitchThreshold
	}
	if cfg.MonitorInterval == 0 {
		cfg.MonitorInterval = DefaultMonitorInterval
	}
	if cfg.Workers == nil {
		cfg.Workers = make([]int, cfg.Kinds)
		for k := range cfg.Workers {
			cfg.Workers[k] = 1
		}
	}
	if cfg.Now == nil {
		start := time.Now()
		cfg.Now = func() time.Duration { return time.Since(start) }
	}
	// Our own copy, nil when every kind runs every query (always so with
	// one kind, since every query needs a kind that runs it).
	cfg.Runnable = cfg.runnable()
	c := newCounters(cfg.Kinds, cfg.Queries)
	switch {
	case cfg.Nodes > 1 && cfg.Kinds == 1:
		return newNUMAQueue(cfg, c), nil
	case cfg.Kinds == 1:
		return newChanQueue(cfg, c, nil), nil
	case cfg.Policy == FCFS:
		// Each processor takes the oldest task it can run: the lookahead
		// ring, without the matrix. Not one channel for every kind: its
		// waiters are counted together, so that Wake(k, n) woke
		// processors of another kind.
		return newHLS(cfg, c), nil
	case cfg.Policy == Static:
		bind := make([]int, cfg.Queries)
		for qu, k := range cfg.Static {
			bind[qu] = k
		}
		return newChanQueue(cfg, c, bind), nil
	}
	return newHLS(cfg, c), nil
}

// New returns a queue of policy p for one processor kind, any number of
// queries and at most capacity queued tasks: with one kind every policy
// takes the head. It is what an engine with only CPU workers needs.
func New(p Policy, capacity int) (Queue, error) {
	return NewQueue(Config{Policy: p, Kinds: 1, Capacity: capacity})
}

// counters are the per (kind, query) counters, updated with atomic adds.
// Per-query blocks grow copy-on-write (blocks are shared, so no add is
// lost) when a task of a new query is pushed.
type counters struct {
	kinds  int
	mu     sync.Mutex
	blocks atomic.Pointer[[]*queryCounters]
}

type queryCounters struct {
	tasks, bytes, busy []atomic.Uint64 // per kind; busy in nanoseconds
}

func newCounters(kinds, queries int) *counters {
	c := &counters{kinds: kinds}
	b := []*queryCounters{}
	c.blocks.Store(&b)
	if queries > 0 {
		c.grow(queries - 1)
	}
	return c
}

// block returns query q's counters, growing the table if needed.
func (c *counters) block(q int) *queryCounters {
	if b := *c.blocks.Load(); q < len(b) {
		return b[q]
	}
	return c.grow(q)
}

func (c *counters) grow(q int) *queryCounters {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.blocks.Load()
	if q < len(old) {
		return old[q]
	}
	b := make([]*queryCounters, q+1)
	copy(b, old)
	for i := len(old); i <= q; i++ {
		b[i] = &queryCounters{
			tasks: make([]atomic.Uint64, c.kinds),
			bytes: make([]atomic.Uint64, c.kinds),
			busy:  make([]atomic.Uint64, c.kinds),
		}
	}
	c.blocks.Store(&b)
	return b[q]
}

func (c *counters) add(k, q int, bytes int, busy time.Duration) {
	b := c.block(q)
	b.tasks[k].Add(1)
	b.bytes[k].Add(uint64(bytes))
	if busy > 0 {
		b.busy[k].Add(uint64(busy))
	}
}

// stats fills the counters of s and, for policies without a monitor, a
// matrix of the average throughput since the start.
func (c *counters) stats(s *Stats, queries int, matrix bool) {
	b := *c.blocks.Load()
	queries = max(queries, len(b))
	s.Tasks = make([][]uint64, c.kinds)
	s.Bytes = make([][]uint64, c.kinds)
	for k := range c.kinds {
		s.Tasks[k] = make([]uint64, queries)
		s.Bytes[k] = make([]uint64, queries)
	}
	if matrix {
		s.Matrix = make([][]float64, queries)
	}
	for q := range queries {
		if matrix {
			s.Matrix[q] = make([]float64, c.kinds)
		}
		if q >= len(b) {
			continue
		}
		for k := range c.kinds {
			s.Tasks[k][q] = b[q].tasks[k].Load()
			s.Bytes[k][q] = b[q].bytes[k].Load()
			if busy := b[q].busy[k].Load(); matrix && busy > 0 {
				s.Matrix[q][k] = float64(s.Bytes[k][q]) / time.Duration(busy).Seconds()
			}
		}
	}
}

func (cfg *Config) checkQuery(t *Task) {
	if t.Query < 0 || (cfg.Queries > 0 && t.Query >= cfg.Queries) {
		panic(fmt.Sprintf("scheduler: task of query %d: valid queries are 0..%d", t.Query, cfg.Queries-1))
	}
}

func (cfg *Config) checkKind(p Processor) {
	if p.Kind < 0 || p.Kind >= cfg.Kinds {
		panic(fmt.Sprintf("scheduler: processor kind %d: valid kinds are 0..%d (%s)", p.Kind, cfg.Kinds-1, strings.Join(cfg.KindNames, ", ")))
	}
}

// chanQueue is fcfs (one channel that every kind reads; only when every
// kind runs every query) and static with two kinds or more (one channel per
// kind; a task goes to its query's kind, which Validate made sure can run
// it).
//
// Wake sends Woken through a channel: each channel has room for one Woken
// per processor that reads it besides Capacity tasks, so that a Woken never
// makes Push block; woken counts those in flight and idle the processors
// blocked in Pop.
type chanQueue struct {
	cfg   Config
	c     *counters
	chans []chan *Task
	bind  []int // static: query -> kind; nil: everything in chans[0]
	idle  []atomic.Int32
	woken []atomic.Int32
	room  []int32 // per channel: the processors that read it

	mu     sync.Mutex // Wake against Close: no send on a closed channel
	closed bool
}

func newChanQueue(cfg Config, c *counters, bind []int) *chanQueue {
	n := 1
	if bind != nil {
		n = cfg.Kinds
	}
	q := &chanQueue{cfg: cfg, c: c, chans: make([]chan *Task, n), bind: bind,
		idle: make([]atomic.Int32, n), woken: make([]atomic.Int32, n), room: make([]int32, n)}
	for k, w := range cfg.Workers {
		q.room[q.chanOf(k)] += int32(w)
	}
	for i := range q.chans {
		q.chans[i] = make(chan *Task, cfg.Capacity+int(q.room[i]))
	}
	return q
}

// chanOf is the index of the channel kind k reads.
func (q *chanQueue) chanOf(k int) int {
	if q.bind == nil {
		return 0
	}
	return k
}

func (q *chanQueue) Push(t *Task) {
	q.cfg.checkQuery(t)
	q.c.block(t.Query)
	ch := q.chans[0]
	if q.bind != nil {
		ch = q.chans[q.bind[t.Query]]
	}
	ch <- t
}

func (q *chanQueue) Pop(p Processor) *Task {
	q.cfg.checkKind(p)
	i := q.chanOf(p.Kind)
	var t *Task
	select {
	case t = <-q.chans[i]:
	default:
		q.idle[i].Add(1)
		t = <-q.chans[i]
		q.idle[i].Add(-1)
	}
	if t == Woken {
		q.woken[i].Add(-1)
	}
	return t
}

func (q *chanQueue) TryPop(p Processor) *Task {
	q.cfg.checkKind(p)
	i := q.chanOf(p.Kind)
	for {
		select {
		case t := <-q.chans[i]:
			if t != Woken {
				return t
			}
			q.woken[i].Add(-1) // meant for an idle processor: p is not
		default:
			return nil
		}
	}
}

func (q *chanQueue) Wake(k, n int) {
	q.cfg.checkKind(Processor{Kind: k})
	i := q.chanOf(k)
	if q.idle[i].Load() <= q.woken[i].Load() {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for ; n > 0 && !q.closed; n-- {
		w := q.woken[i].Load()
		if w >= q.idle[i].Load() || w >= q.room[i] {
			return
		}
		q.woken[i].Add(1)
		select {
		case q.chans[i] <- Woken:
		default: // full of tasks: nobody waits
			q.woken[i].Add(-1)
			return
		}
	}
}

func (q *chanQueue) Done(p Processor, t *Task, busy time.Duration) {
	q.cfg.checkKind(p)
	q.c.add(p.Kind, t.Query, len(t.Data), busy)
}

func (q *chanQueue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.closed = true
	for _, ch := range q.chans {
		close(ch)
	}
}

// Stats of fcfs and static: their matrix is the average throughput since
// the start (bytes over busy time), since they have no monitor.
func (q *chanQueue) Stats() Stats {
	s := q.cfg.newStats()
	q.c.stats(&s, q.cfg.Queries, true)
	return s
}
