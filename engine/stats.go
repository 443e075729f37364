package engine

import (
	"runtime"
	"time"

	"github.com/saber-hx/saber-hx/window"
)

// Stats are a stream's counters. Tuples = Filtered + Unmatched + Late +
// Counted for every merged task. Rows are the rows output: a window
// query's, a join's pairs, a stateless query's tuples out (its Counted:
// a lookup join matches a tuple once at most).
type Stats struct {
	Query                                      string
	Tasks, Bytes                               uint64
	Tuples, Filtered, Unmatched, Late, Counted uint64
	Windows, Rows                              uint64
	Watermark                                  int64
	Pinned                                     []int // CPU of each worker, -1 where not pinned
	// Task latency, dispatched to merged (its windows emitted), since the
	// start or the last ResetLatency: quantiles exact to a factor of two.
	LatencyP50, LatencyP99 time.Duration
	// GPUFallbackTasks are the tasks the GPU kind took but ran on its CPU
	// kernel, because the GPU program could not hold their result (a
	// tuple's pane outside the range its output covers, which near the
	// ends of int64 is cut to the panes the device computes exactly:
	// GPUProgram.Wait said ok false).
	GPUFallbackTasks uint64
	// SerialTime is the workers' time spent on the query where no other
	// worker can progress on it (its ordered result stage, a join's
	// ordered hand-off), WorkerTime all the workers' time spent on it;
	// SerialFraction is their ratio, the Amdahl bound of the query's
	// speed-up with more cores. A worker's waits for others to move on
	// (a push into a full downstream ring, a join's result stage waiting
	// for the windows ahead to be joined) are neither: idle, not work.
	// Both count from the start, and a difference of two snapshots is
	// the time between them.
	SerialTime, WorkerTime time.Duration
}

// Since is what the query counted from the snapshot from to s: each
// counter's difference, none below zero (a snapshot read as a restore
// published its counters: Stream.RestoredStats).
func (s Stats) Since(from Stats) Stats {
	sub := func(a, b uint64) uint64 { return a - min(a, b) }
	m := s
	m.Tasks, m.Bytes = sub(s.Tasks, from.Tasks), sub(s.Bytes, from.Bytes)
	m.Tuples, m.Filtered, m.Unmatched = sub(s.Tuples, from.Tuples), sub(s.Filtered, from.Filtered), sub(s.Unmatched, from.Unmatched)
	m.Late, m.Counted = sub(s.Late, from.Late), sub(s.Counted, from.Counted)
	m.Windows, m.Rows = sub(s.Windows, from.Windows), sub(s.Rows, from.Rows)
	m.GPUFallbackTasks = sub(s.GPUFallbackTasks, from.GPUFallbackTasks)
	m.SerialTime, m.WorkerTime = s.SerialTime-min(s.SerialTime, from.SerialTime), s.WorkerTime-min(s.WorkerTime, from.WorkerTime)
	return m
}

// RestoredStats are the counters a restore carried over from the
// snapshot (Restore: tuples, windows and rows go on from it), zero where
// the engine was not restored: Stats().Since(RestoredStats()) is what
// this engine counted itself. Read it after Stats: Restore sets it before
// it publishes the counters.
func (s *Stream) RestoredStats() Stats {
	if r := s.restored.Load(); r != nil {
		return *r
	}
	return Stats{}
}

// publish copies the assembler's counters where Stats can read them.
//
// It runs under mergeMu (one writer) and brackets the stores with seq, odd
// while they change, so that Stats reads one consistent snapshot (the
// counters add up) without taking the lock a Sink may be running under.
// t, if set, is the task just merged; r, if set, a stateless task's
// counters to add.
func (s *Stream) publish(t *task, r *window.TaskResult) {
	s.seq.Add(1)
	defer s.seq.Add(1)
	if t != nil {
		s.tasks.Add(1)
		s.bytes.Add(uint64(len(t.Data)))
	}
	if r != nil {
		s.tuples.Add(r.Tuples)
		s.filtered.Add(r.Filtered)
		s.unmatched.Add(r.Unmatched) // a lookup join's
		out := r.Tuples - r.Filtered - r.Unmatched
		s.counted.Add(out)
		s.rows.Add(out) // a stateless task's: no assembler stores rows below
		s.watermark.Store(max(s.watermark.Load(), r.MaxTS))
	}
	if s.asm == nil {
		return
	}
	// The watermark before Complete: a chain's Progress reads Complete
	// and then the watermark (outThrough), and a new Complete read beside
	// the old watermark counted out the tuples of a window not emitted
	// (TestProgressThroughAChain, seldom, under the race detector's load).
	s.watermark.Store(s.asm.Watermark())
	s.complete.Store(s.asm.Complete())
	c := s.asm.Counts()
	s.tuples.Store(c.Tuples)
	s.filtered.Store(c.Filtered)
	s.unmatched.Store(c.Unmatched)
	s.late.Store(c.Late)
	s.counted.Store(c.Counted)
	s.windows.Store(c.Windows)
	s.rows.Store(c.Rows)
}

// Stats returns a snapshot of the counters; safe from any goroutine. For a
// window join's left stream they are the join's: both inputs' tuples, the
// late ones, the windows joined and the pairs output (Rows).
func (s *Stream) Stats() Stats {
	if s.right != nil {
		l, r := s.stats(), s.right.stats()
		tuples, late, windows, pairs := s.joinSide.stats()
		return Stats{
			Query: s.joinSide.j.Name, Tasks: l.Tasks + r.Tasks, Bytes: l.Bytes + r.Bytes,
			Tuples: tuples, Late: late, Counted: tuples - late, Windows: windows, Rows: pairs,
			Watermark: min(l.Watermark, r.Watermark), Pinned: l.Pinned,
			GPUFallbackTasks: l.GPUFallbackTasks + r.GPUFallbackTasks,
			SerialTime:       l.SerialTime, WorkerTime: l.WorkerTime, // the join's: both inputs'
		}
	}
	return s.stats()
}

// ResetLatency starts a new measured interval of the task latencies (the
// end of a warm-up).
func (s *Stream) ResetLatency() { s.lat.reset() }

func (s *Stream) stats() Stats {
	st := Stats{
		LatencyP50: s.lat.quantile(0.5), LatencyP99: s.lat.quantile(0.99),
		Query:  s.win.Query,
		Pinned: []int{}, // gpu mode: no CPU worker
	}
	if s.e.workers != nil {
		st.Pinned = s.e.workers.Pinned()
	}
	for {
		v := s.seq.Load()
		if v%2 == 1 { // publish is between its stores
			runtime.Gosched()
			continue
		}
		st.Tasks, st.Bytes = s.tasks.Load(), s.bytes.Load()
		st.Tuples, st.Filtered, st.Unmatched = s.tuples.Load(), s.filtered.Load(), s.unmatched.Load()
		st.Late, st.Counted = s.late.Load(), s.counted.Load()
		st.Windows, st.Rows = s.windows.Load(), s.rows.Load()
		st.Watermark = s.watermark.Load()
		st.GPUFallbackTasks = s.gpuFallback.Load()
		st.SerialTime, st.WorkerTime = s.clock().times()
		if s.seq.Load() == v {
			return st
		}
	}
}
