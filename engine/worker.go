package engine

import (
	"slices"
	"time"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/scheduler"
	"github.com/saber-hx/saber-hx/window"
)

// worker is what runs tasks and what a result stage runs on: a CPU worker
// goroutine, the GPU worker (gpu set: its CPU kernels are its fallback),
// or the goroutine of CloseAll while it flushes chained queries. It has
// one CPU kernel per query.
type worker struct {
	e       *Engine
	proc    scheduler.Processor // Kind -1: runs no task (CloseAll's helper in gpu mode)
	delay   time.Duration
	kernels []kernels.Kernel
	gpu     *gpuWorker
	// ingest holds the bytes of the task being run when the worker
	// ingests them itself (Stream.SetFill): one task's worth, reused, so
	// that they stay in the worker's cache. Allocated at the first such
	// task, on the worker's thread: on its NUMA node where it is pinned.
	ingest []byte
	// joins are the engine's window joins, whose waiting tasks (closed
	// windows' pairs) the worker runs between two of its own; scratch is
	// the worker's own working memory for each one's tasks (joinScratch).
	joins   []*joinStage
	scratch map[*joinStage]*kernels.JoinScratch
	// pushing is one more than the index of the stream whose full ring
	// the worker waits for in its innermost push (0: none). While it
	// waits, the tasks it runs merge only if their stream comes at or
	// after that one in the streams' order (an upstream comes first):
	// then every wait is for a later stream than any merge the worker
	// holds, and no cycle of waits can form. An earlier stream's merge
	// could wait for a ring that only a merge held further down the
	// worker's own stack frees.
	pushing int
	// merging counts the merges and flushes the worker holds.
	merging int
	// released are the group states of the tasks the worker's merges
	// merged, given back to their pools once it lets go of the stream's
	// mergeMu (Stream.mergeReady): a stack, each merge's own past where
	// the merge it runs inside left it.
	released []*window.GroupState
	// joinsDue are the joins whose input the worker's outermost merge
	// filed, to process once it lets go of that merge (runDueJoins).
	joinsDue []*joinStage
	// deferred are the streams with a finished task whose merge the
	// worker left for when it holds no merge (drainDeferred).
	deferred []*Stream
	draining bool
	// bellTimer bounds the worker's waits on a doorbell (waitBell).
	bellTimer *time.Timer
	// clk nests the worker's time for the queries' serial_fraction.
	clk workClock
	// assemble are the tasks the worker merged last in every partition,
	// to assemble once it lets go of the partition (Stream.mergePart).
	assemble []*task
}

// newWorker returns CPU worker id, or with id -1 CloseAll's helper: a
// worker of the first CPU kind, or in gpu mode one that runs no task.
func (e *Engine) newWorker(id int) *worker {
	groups := e.cfg.cpuGroups()
	if len(groups) == 0 {
		return &worker{e: e, proc: scheduler.Processor{Kind: -1, ID: id}}
	}
	kind, first := 0, 0
	for k, g := range groups {
		if id >= first && id < first+g.Workers {
			kind = k
		}
		first += g.Workers
	}
	w := &worker{e: e, proc: scheduler.Processor{Kind: kind, ID: id}, kernels: make([]kernels.Kernel, len(e.streams))}
	if cpus := e.cpus; e.cpuNode != nil && len(cpus) > 0 && id >= 0 {
		w.proc.Node = e.cpuNode[cpus[id%len(cpus)]]
	}
	w.delay = groups[kind].delay
	for _, en := range e.entries {
		if en.join != nil {
			w.joins = append(w.joins, en.join)
		}
	}
	for i, s := range e.streams {
		w.kernels[i] = s.plan.NewKernel()
	}
	return w
}

// work is a worker's loop; its kernels are made on the worker's own thread.
func (e *Engine) work(id int) {
	w := e.newWorker(id)
	for t := e.queue.Pop(w.proc); t != nil; t = e.queue.Pop(w.proc) {
		if t != scheduler.Woken { // else woken for a join's windows (wakeForJoins)
			w.runFrame(e.taskOf(t))
		}
		w.helpJoins()
		w.drainDeferred()
		w.flushDue()
	}
}

// deferMerge leaves the merge of s's finished tasks for drainDeferred.
func (w *worker) deferMerge(s *Stream) {
	for _, d := range w.deferred {
		if d == s {
			return
		}
	}
	w.deferred = append(w.deferred, s)
}

// drainDeferred merges what deferMerge left, once the worker holds no
// merge and waits for no ring, the last stream in the streams' order
// first. A merge may push into a later stream's ring and wait for it
// there, where only that stream's merges free it and nothing else drains
// (draining): merged first, no later stream's merge is left in the list
// behind it, and none is added while it pushes (a task of the stream it
// pushes into, or of a later one, merges at once: finish). Last in, first
// out instead deadlocked: a merge of stream 0 pushed into the full ring of
// stream 2, whose merges waited deferred behind it
// (TestJoinOfOneProducerIsNotHeldBack hung in 7 of 81 runs on a loaded
// machine).
func (w *worker) drainDeferred() {
	if w.draining || w.merging > 0 || w.pushing > 0 {
		return
	}
	w.draining = true
	for len(w.deferred) > 0 {
		last := 0
		for i, d := range w.deferred {
			if d.id > w.deferred[last].id {
				last = i
			}
		}
		s := w.deferred[last]
		w.deferred = slices.Delete(w.deferred, last, last+1)
		f := w.beginFrame()
		s.mergeReady(w)
		w.endFrame(f, s.clock())
	}
	w.draining = false
}

// dueJoin leaves js's processing for runDueJoins.
func (w *worker) dueJoin(js *joinStage) {
	if !slices.Contains(w.joinsDue, js) {
		w.joinsDue = append(w.joinsDue, js)
	}
}

// runDueJoins joins the windows that the worker's last merge closed and
// hands them on, and keeps it (catchUp) while too many wait, as the merge
// did before it let go of the input: the input's serial stage only files
// its tuples, and the joining, a frame of the join's, runs beside the
// input's next merge on another worker.
func (w *worker) runDueJoins() {
	for len(w.joinsDue) > 0 {
		js := w.joinsDue[len(w.joinsDue)-1]
		w.joinsDue = w.joinsDue[:len(w.joinsDue)-1]
		f := w.beginFrame()
		err := js.processAndCatchUp(w)
		w.endFrame(f, js.clock)
		if err != nil {
			w.e.fail(err)
		}
	}
}

// helpJoins runs the window joins' waiting tasks and hands their output
// on: the worker that closed the windows runs them too, so this only
// spreads the joins over the workers (one atomic load per join when none
// waits). Workers with no task of their own run it too, woken from the
// queue (wakeForJoins).
func (w *worker) helpJoins() {
	for _, js := range w.joins {
		if js.runnable.Load() == 0 {
			continue
		}
		f := w.beginFrame()
		if err := js.process(w); err != nil {
			w.e.fail(err)
		}
		w.endFrame(f, js.clock)
	}
}

// wakeForJoins wakes up to n idle CPU workers, waiting in the queue for a
// task, to run a join's closed windows (helpJoins). Without it a merge that
// closed many windows ran most of them itself: a join's inputs are cheap
// tasks, so the other workers waited in the queue for more input, which
// the join holds back until its windows are joined (catchUp), and a join
// ran as fast at 15 workers as at one.
func (e *Engine) wakeForJoins(n int) {
	for k := range e.cfg.cpuGroups() {
		e.queue.Wake(k, n)
	}
}

// wakeOne wakes an idle worker, a CPU worker where there is one, else
// the GPU's (a GPU-only engine), to look at what is due (flushDue).
func (e *Engine) wakeOne() {
	switch {
	case len(e.cfg.cpuGroups()) > 0:
		e.wakeForJoins(1)
	case e.gpuKind >= 0:
		e.queue.Wake(e.gpuKind, 1)
	}
}

// joinScratch is w's scratch for the tasks of js, made at its first.
func (w *worker) joinScratch(js *joinStage) *kernels.JoinScratch {
	s := w.scratch[js]
	if s == nil {
		if w.scratch == nil {
			w.scratch = map[*joinStage]*kernels.JoinScratch{}
		}
		s = js.op.NewScratch()
		w.scratch[js] = s
	}
	return s
}

// runFrame is run as a frame of t's query (clock.go).
func (w *worker) runFrame(t *task) {
	f := w.beginFrame()
	w.run(t)
	w.endFrame(f, w.e.streams[t.Query].clock())
}

// run processes t and hands it to its stream's result stage.
func (w *worker) run(t *task) {
	s := w.e.streams[t.Query]
	t.result.Reset(s.layout)
	start := time.Now()
	if w.e.failed() == nil {
		data := t.Data
		if t.fill != nil {
			data = w.ingestBuffer(len(data))
			t.fill(data, t.Start)
		} else if t.handed {
			data = w.ingestBuffer(len(data))
			s.hand.fill(data, t)
		}
		w.kernels[t.Query].Process(data, t.Start/uint64(s.plan.TupleSize), &t.result)
		if w.delay > 0 {
			time.Sleep(w.delay)
		}
	}
	w.e.done(w.proc, t, time.Since(start))
	s.finish(t, w)
	w.copyOutputs()
}

// copyOutputs runs the copies that the outputs' ordered stages placed
// (TupleEncoder.Copy), after a task of the worker's (the GPU's too), out
// of any ordered stage: not within a merge or a push, whose stream's
// serial section it would lengthen.
func (w *worker) copyOutputs() {
	if len(w.e.copies) == 0 || w.merging > 0 || w.pushing > 0 || w.draining {
		return
	}
	for _, c := range w.e.copies {
		c()
	}
}

// ingestBuffer returns the worker's buffer for n bytes of a task it
// ingests. The ingestion copy could write the task's place in the ring
// instead, but the ring's lines then come from L3 to be written (a 4 MiB
// ring reuses a place only every 16 tasks) and go back dirty: with the
// bundle read, three lines of L3 traffic per line ingested, against one
// into a buffer that stays in L2 (the gain on YSB with two workers:
// docs/performance.md). The ring's bytes of such a task are never written;
// its place in the ring still bounds how far the producer runs ahead.
//
// One buffer serves every task the worker runs, also when run re-enters
// through help (a chained query's push into a full ring, from finish): that
// happens only after Process, when the buffer's bytes are no longer read
// (fragments and output tuples are copies).
func (w *worker) ingestBuffer(n int) []byte {
	if cap(w.ingest) < n {
		w.ingest = make([]byte, max(n, w.e.cfg.TaskSize))
	}
	return w.ingest[:n]
}

// help runs one queued task, if there is one: what a worker does instead of
// waiting for a downstream ring, so that chained queries cannot deadlock
// even on one worker. The GPU worker takes one step of its pipeline
// instead (gpuWorker.help).
func (w *worker) help() {
	if !w.tryHelp() {
		time.Sleep(helpWait)
	}
}

// A worker that waits for other workers (a join's result stage for the
// windows ahead to be joined, a push for a task of the full stream it
// pushes into to be merged) waits on a doorbell that they ring once they
// moved on: a channel of one, rung without blocking (ringBell), so that a
// second waiter looks again after bellWait.
//
// A plain sleep of bellWait lasted many times longer than asked (the Go
// runtime's idle wait has a resolution of a millisecond), long past the
// moment the other worker moved. Yielding the CPU in a loop instead cost
// a thread switch per yield, the workers being locked to their threads,
// and ran either faster or much slower from run to run
// (docs/scheduling.md).
const bellWait = 20 * time.Microsecond

// ringBell rings doorbell bell without blocking.
func ringBell(bell chan struct{}) {
	select {
	case bell <- struct{}{}:
	default:
	}
}

// waitBell waits until bell rings or bellWait passes, on w's timer. The
// other workers progress meanwhile, which the wait is for: it is idle
// time (clock.go), not serial time of the section that waits. A bell
// that rang already is taken without arming the timer: armed, a timer
// that ran out while the worker was descheduled could win the select and
// leave the ring for the next wait.
func (w *worker) waitBell(bell chan struct{}) {
	select {
	case <-bell:
		return
	default:
	}
	t0 := nanotime()
	if w.bellTimer == nil {
		w.bellTimer = time.NewTimer(bellWait)
	} else {
		w.bellTimer.Reset(bellWait)
	}
	select {
	case <-bell:
		w.bellTimer.Stop()
	case <-w.bellTimer.C:
	}
	w.idle(nanotime() - t0)
}

// helpWait is help's wait when no task is queued: short, since the worker
// waits for a ring that another worker frees within a task's time.
const helpWait = 20 * time.Microsecond

// tryHelp is help without the wait: whether it ran a task (or a GPU step).
func (w *worker) tryHelp() bool {
	if w.gpu != nil {
		return w.gpu.help()
	}
	if w.proc.Kind >= 0 {
		if t := w.e.queue.TryPop(w.proc); t != nil {
			w.runFrame(w.e.taskOf(t))
			return true
		}
	}
	return false
}

// helpUntil helps until done reports true or the run fails. It waits as
// help does while tasks come, and longer (up to a millisecond) while none
// does: CloseAll's wait for the last tasks of a stream, which the workers
// run, would otherwise wake the runtime's poller 50,000 times a second.
func (w *worker) helpUntil(done func() bool) {
	wait := helpWait
	for !done() && w.e.failed() == nil {
		if w.tryHelp() {
			wait = helpWait
			continue
		}
		time.Sleep(wait)
		wait = min(2*wait, time.Millisecond)
	}
}
