package engine

import (
	"sync/atomic"
	"time"

	"github.com/saber-hx/saber-hx/scheduler"
)

// serial_fraction: the share of a query's worker time that its workers
// spend where no other worker can progress on that query (its ordered
// result stage under mergeMu, a join's ordered hand-off under drainMu),
// against all the worker time spent on the query. By Amdahl it bounds the
// speed-up any number of cores can give the query.
//
// It is measured per task and per serial section, never per tuple: two
// readings of the monotonic clock around a task's run and around each
// serial section. A worker's time nests: a merge may push into a chained
// query whose full ring makes the worker run another query's task (help),
// and a join's merge runs the join's pair tasks. Such nested stretches
// are frames: each counts for its own query, and is taken out of the time
// of whatever encloses it (workClock.inner), so that every nanosecond of a
// worker counts once, for one query. A worker's waits for other workers
// to move on (worker.waitBell, its sleep on a join's lock) count for none:
// idle time is neither serial nor work, so that back-pressure and lock
// waits, whose holder's time is serial on its own clock, do not read as
// serial stages of their own.

// serialClock is a query's two sums, in nanoseconds: serial (inside its
// serial sections) and work (all its worker time, serial included). A
// window join's two input streams share the left stream's.
type serialClock struct {
	serial, work atomic.Int64
}

// workClock is a worker's nesting state for the serialClocks.
type workClock struct {
	inner  int64 // nanoseconds of the frames ended inside the current stretch
	frames int   // frames open
	serial int   // serial sections open in the innermost frame
}

// frame is an open frame's start (beginFrame).
type frame struct {
	t0, inner int64
	serial    int
}

// section is an open serial section's start (beginSerial); outer is set
// when it counts (it is not nested in another section of the same frame).
type section struct {
	t0, inner int64
	outer     bool
	// away is time inside the section that other goroutines worked in
	// parallel while it waited for them (parallelWork): not serial.
	away int64
}

func nanotime() int64 { return scheduler.Nanotime() }

// beginFrame starts a stretch of w's time that belongs to one query; the
// serial sections open around it are not its.
func (w *worker) beginFrame() frame {
	f := frame{t0: nanotime(), inner: w.clk.inner, serial: w.clk.serial}
	w.clk.frames++
	w.clk.serial = 0
	return f
}

// endFrame ends frame f, counting its own time (less the frames nested in
// it) as c's work.
func (w *worker) endFrame(f frame, c *serialClock) {
	total := nanotime() - f.t0
	own := total - (w.clk.inner - f.inner)
	w.clk.inner = f.inner + total
	w.clk.frames--
	w.clk.serial = f.serial
	c.work.Add(own)
}

// beginSerial opens a serial section; w may be nil (the result stage run
// from CloseAll after the workers stopped).
func (w *worker) beginSerial() section {
	if w == nil {
		return section{t0: nanotime(), outer: true}
	}
	w.clk.serial++
	return section{t0: nanotime(), inner: w.clk.inner, outer: w.clk.serial == 1}
}

// endSerial closes section sc, counting its own time (less the frames
// nested in it) as c's serial time; outside every frame it is worker time
// of c's too, which no frame counts.
func (w *worker) endSerial(sc section, c *serialClock) {
	if w == nil {
		d := nanotime() - sc.t0 - sc.away
		c.serial.Add(d)
		c.work.Add(d)
		return
	}
	w.clk.serial--
	if !sc.outer {
		return
	}
	own := nanotime() - sc.t0 - sc.away - (w.clk.inner - sc.inner)
	c.serial.Add(own)
	if w.clk.frames == 0 {
		c.work.Add(own)
	}
}

// parallelWork counts, inside section sc of w (nil: none), a stretch of
// wall time in which goroutines of the section's own worked in parallel
// for c's query: work of theirs, not serial time of the section's.
func (w *worker) parallelWork(sc *section, wall, work int64, c *serialClock) {
	sc.away += wall
	if w != nil {
		// Neither is it the enclosing frame's.
		w.clk.inner += wall
		sc.inner += wall
	}
	c.work.Add(work)
}

// idle counts d nanoseconds of w's time in which it waited, inside
// whatever section or frame encloses it, for other workers to move on
// (worker.waitBell, joinStage.lock): no query's time, neither serial nor
// work, and taken out of what encloses it as a frame's time is.
func (w *worker) idle(d int64) {
	if w != nil {
		w.clk.inner += d
	}
}

// clock is the serialClock the stream's time counts on: a join input's
// is the join's (the left stream's).
func (s *Stream) clock() *serialClock {
	if s.joinSide != nil {
		return s.joinSide.clock
	}
	return &s.lat.clock
}

// times reads c.
func (c *serialClock) times() (serial, work time.Duration) {
	// Read while tasks run, serial may hold a section whose frame has not
	// yet added its work: SerialFraction clamps.
	serial = time.Duration(c.serial.Load())
	work = time.Duration(c.work.Load())
	return serial, work
}

// SerialFraction is SerialTime over WorkerTime, in [0, 1] (0 before any
// worker time).
func (st Stats) SerialFraction() float64 {
	if st.WorkerTime <= 0 {
		return 0
	}
	return min(1, max(0, float64(st.SerialTime)/float64(st.WorkerTime)))
}
