package engine

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

// joinStage is a window join's stage (query.WindowJoin): the glue around
// its operator, kernels.WindowJoin. Each input is a Stream of its own
// (ring, dispatcher, ordered result stage) whose kernel passes tuples
// through; the stage hands each stream's tuples, in order, to the operator,
// which closes a window once both watermarks have passed its end into a
// task, and pushes the windows' output downstream in window order.
//
// A closed window's pairs are computed by a worker, without the stage's
// lock (in a task of its own or of a batch of consecutive windows:
// kernels.JoinTask), which covers only the operator's bookkeeping (filing
// tuples into panes, closing windows, handing tasks out and back): the
// worker that closed windows runs their tasks once it let go of the lock
// and of the input's merge (runDueJoins), and every
// worker between two of its own tasks runs the tasks that wait (work, and
// the worker loop's helpJoins), so that the windows of one join are joined
// in parallel. The output is handed on in window order by whichever worker
// finds the oldest window joined (drain). A side that runs ahead of the
// other makes its producers wait (joingate.go).
//
// With a GPU (Config.GPU, hybrid or gpu mode) whose device compiles the
// join (GPU.SupportsJoin: its WHERE has a GPU form), the operator sends
// each window's tuples to the join program instead (its PairJoiner), which
// returns the same pairs in the same order; a window whose pairs do not fit
// the device's output buffer becomes a task for the CPU workers, as does
// every window of a join the GPU cannot run. The program is used under the
// stage's lock and closed once both inputs ended (or by the device's
// Close).
type joinStage struct {
	j      *query.WindowJoin
	rows   bool
	gpu    GPUJoinProgram // nil: the CPU joins
	gpuErr error          // why the GPU does not join (nil: it does, or there is no GPU)
	sink   TupleSink
	enc    *TupleEncoder // Spec.Encoded: encoded in order, on the drainer
	encBuf []byte
	down   []*Stream
	sides  [2]*Stream // the inputs' streams
	e      *Engine
	// roots are, per side, the streams without upstream it descends from;
	// lead is each side's state for the producers that feed them
	// (joingate.go); producerWaits counts their waits.
	roots         [2][]*Stream
	lead          [2]sideLead
	producerWaits atomic.Uint64

	maxTake int // maxTaken
	// clock is the join's serial_fraction (clock.go): its left stream's,
	// which both inputs' merges, the pair tasks and the hand-off count on.
	clock *serialClock

	mu sync.Mutex
	// ready is op.Ready() as of the last change under mu that can move
	// it (noteReady): drain's look before it takes drainMu. Beside mu, on
	// the line its holder writes anyway.
	ready atomic.Bool
	op    joinOp
	// runnable is op.Runnable(), set under mu: the workers' unlocked look
	// for tasks (helpJoins).
	runnable atomic.Int64

	drainMu sync.Mutex
	drained []kernels.JoinOutput // drain's batch, under drainMu
	// drainer is the worker that holds drainMu (nil: none). Its push of a
	// window's output may merge this join's own inputs (a deferred merge,
	// worker.drainDeferred) and so come back into add: there it must not
	// wait for windows to be handed on (catchUp), which only it
	// can do.
	drainer atomic.Pointer[worker]

	// filed is, per side, the largest event time filed (op.Watermark),
	// published under mu for the marks of a stream that feeds the side
	// from its result stage (joinFeed, markChain); chain are the join's
	// marks where its output feeds other queries (markChains), written as
	// it hands windows on.
	filed [2]atomic.Int64
	chain *chainMarks

	// moved is the doorbell of the result stages that wait on the join
	// (pause): rung when a side's tuples are filed, a window is joined or
	// one is handed on.
	moved chan struct{}
}

// joinOp is a join stage's operator: a window join's
// (kernels.WindowJoin), or a regular join's (kernels.RegularJoin, whose
// pairs are made as each input is filed, by the worker that made the
// input, in Cut (cutJoinInput), under locks of its own per partition of
// the keys, not the stage's: it has no windows, no tasks and no device;
// the stage hands its pairs on in the order the inputs queued them, as it
// hands a window join's windows on). Its methods are called per input or
// per output, never per tuple.
type joinOp interface {
	// AddOwnedCut is not among them: called through an interface, its
	// pointer to the caller's buffer would make every caller's buffer
	// variable escape, a stateless query's output included (add calls
	// it on the concrete type).
	Add(side int, tuples []byte) (kernels.Refused, bool)
	Cut(side int, tuples []byte, c *kernels.JoinCut)
	Added(side int) uint64
	Finish(side int) (all bool)
	Lead(side int) (held int, ahead bool)
	Watermark(side int) int64
	JoinClosed(all bool) (failed int64, err error)
	Joined() uint64
	TakeFor(s *kernels.JoinScratch) *kernels.JoinTask
	Done(t *kernels.JoinTask)
	NewScratch() *kernels.JoinScratch
	Runnable() int
	RunnableWindows() int
	Taken() int
	OldestWaits() bool
	Pending() int
	Ready() bool
	Next() (kernels.JoinOutput, bool)
	Recycle(o kernels.JoinOutput)
	Unreleased() (int64, bool)
	Stats() kernels.WindowJoinStats
	UsePairJoiner(pj kernels.PairJoiner)
	AppendSnapshot(dst []byte) ([]byte, error)
	RestoreSnapshot(b []byte) ([]byte, error)
}

func newJoinStage(e *Engine, j *query.WindowJoin, sp Spec) (*joinStage, error) {
	var op joinOp
	var err error
	if j.Regular {
		op, err = kernels.NewRegularJoin(j)
	} else {
		op, err = kernels.NewWindowJoin(j)
	}
	if err != nil {
		return nil, err
	}
	js := &joinStage{j: j, rows: j.Window.Type == query.Rows, e: e, sink: sp.Tuples, enc: sp.Encoded, op: op, maxTake: 4,
		moved: make(chan struct{}, 1)}
	js.noteFiled()
	if e != nil {
		js.maxTake = 4 * max(1, e.cfg.cpuWorkers())
	}
	if e != nil && e.cfg.GPU != nil && !j.Regular {
		if js.gpuErr = e.cfg.GPU.SupportsJoin(j); js.gpuErr == nil {
			if js.gpu, err = e.cfg.GPU.CompileJoin(j); err != nil {
				js.gpu, js.gpuErr = nil, err
				if e.cfg.Warn != nil {
					e.cfg.Warn(fmt.Sprintf("join %q runs on the CPU: GPU %s: %v", j.Name, e.cfg.GPU.Name(), err))
				}
			}
		}
	}
	if js.gpu != nil {
		js.op.UsePairJoiner(js.gpu)
	}
	return js, nil
}

// add files a side's tuples (in stream order), closes the windows that
// both watermarks have closed, runs the tasks that wait and hands the
// joined windows on (from a worker's outermost merge, once it lets go of
// it: runDueJoins). Where owned, the join takes the buffer *tuples as it
// is and leaves a recycled one there (a task's output, which it files
// without a copy), and strs, where not nil, holds the tuples' long strings
// (pinJoinInput), whose memory it takes too, and cut, where not nil, is
// the tuples cut into panes' runs on the worker that made them
// (cutJoinInput); else it copies the tuples and their strings. A tuple
// whose first window would start below math.MinInt64 is refused: an
// InputError.
func (js *joinStage) add(side int, tuples *[]byte, owned bool, strs *strview.Arena, cut *kernels.JoinCut, w *worker) error {
	js.lock(w)
	var r kernels.Refused
	var ok bool
	if owned {
		switch op := js.op.(type) {
		case *kernels.WindowJoin:
			r, ok = op.AddOwnedCut(side, tuples, strs, cut)
		case *kernels.RegularJoin:
			r, ok = op.AddOwnedCut(side, tuples, strs, cut)
		}
	} else {
		r, ok = js.op.Add(side, *tuples)
	}
	if !ok {
		ts := [2]int{js.j.Left.TupleSize, js.j.Right.TupleSize}[side]
		js.mu.Unlock()
		return &InputError{Query: js.j.Name, Input: [2]string{"left", "right"}[side],
			Offset: r.Tuple * uint64(ts), Tuple: r.Tuple, Pos: r.Pos, Rows: js.rows}
	}
	js.filed[side].Store(js.op.Watermark(side))
	js.joinClosed(false)
	js.noteReady()
	js.mu.Unlock()
	js.ring()
	js.wakeHelpers()
	if w != nil && w.merging == 1 && w.pushing == 0 {
		// Filed in the input's merge: its windows are joined once the
		// worker lets go of the merge (worker.runDueJoins), so that
		// another worker merges the input's next task meanwhile.
		w.dueJoin(js)
		return nil
	}
	return js.processAndCatchUp(w)
}

// processAndCatchUp is what a worker does after it filed an input's
// tuples: process, then catchUp.
func (js *joinStage) processAndCatchUp(w *worker) error {
	err := js.process(w)
	if err == nil {
		err = js.catchUp(w)
	}
	return err
}

// feedJoins lets a stateless query whose output goes to one side of a
// window join alone add its tasks' output to the join from its own result
// stage (joinFeed), rather than push it into the side's stream, whose
// tasks only pass it through to a result stage of their own: one ordered
// copy of every tuple and of its long strings fewer, and one ordered stage
// fewer (Nexmark's q5, q7 and q8 put a view's projection there). The
// side's stream is left without input. Before the engine runs.
//
// A partitioned aggregation feeds the side the same way (sg3's per-plug
// averages): the worker that links a task's windows encodes their rows
// and cuts them (finishLinked), and the hand-off gives the join the
// buffer of all of them at once (handOffLinked), where it copied every
// window's rows into the side's ring, in its ordered stage, for the side's
// tasks to copy again. Only rows without strings: the side's stream would
// copy their long strings into its heap, and the partitions' memory they
// point at is reused.
func (e *Engine) feedJoins() {
	for _, u := range e.streams {
		if len(u.downstream) != 1 || u.sinksTuples() || u.joinSide != nil {
			continue
		}
		d := u.downstream[0]
		if d.joinSide == nil || len(d.ups) != 1 {
			continue
		}
		if u.plan.Stateless() || (u.parts != nil && len(d.heapAttrs)+len(d.blankAttrs) == 0) {
			u.joinFeed = d
		}
	}
}

// addFed adds the output of a task of d's joinFeed to the join, from that
// stream's result stage: the join's ordered stage, which it was when d's
// own result stage added it, so counted on the join's clock (a frame of
// the join's in the feeding query's serial section).
func (d *Stream) addFed(out *[]byte, strs *strview.Arena, cut *kernels.JoinCut, w *worker) error {
	if w == nil {
		return d.joinSide.add(d.side, out, true, strs, cut, w)
	}
	f := w.beginFrame()
	sc := w.beginSerial()
	err := d.joinSide.add(d.side, out, true, strs, cut, w)
	w.endSerial(sc, d.clock())
	w.endFrame(f, d.clock())
	return err
}

// catchUp keeps the worker whose merge closed windows while too many wait
// to be taken (the work bound of maxTaken stops process before it has run
// them all: a worker was descheduled in the oldest window), running the
// join's tasks, so that its producer waits for the join rather than
// closing window after window into tasks without bound. Where the
// bound stops it, it joins one task at a time up to twice the bound
// before it waits for the oldest (docs/performance.md, twentieth session).
func (js *joinStage) catchUp(w *worker) error {
	if w == nil || js.drainer.Load() == w {
		return nil
	}
	for js.e.failed() == nil {
		if err := js.process(w); err != nil {
			return err
		}
		js.lock(w)
		backlog := js.op.RunnableWindows() > 4*js.maxTake
		js.mu.Unlock()
		if !backlog {
			return nil
		}
		// Rather than wait for the oldest window, join one past the
		// bound: the backlog has windows to spare.
		if js.work(w, 2*js.maxTaken(), 1) {
			continue
		}
		// The windows ahead are the other workers' to join meanwhile.
		w.waitBell(js.moved)
	}
	return nil
}

// A worker that waits on the join's other workers runs no task meanwhile,
// as help would: where it still holds a result stage (catchUp run inside
// a merge nested in a push), a task of an upstream query may push into
// that stage's own ring, full while the stage is held, and wait for it for
// ever. It looks again when the join moves (moved: a side's tuples
// filed, a window joined or handed on), or after bellWait at the latest
// (worker.waitBell).

// ring tells one result stage that waits (waitBell) that the join moved.
func (js *joinStage) ring() { ringBell(js.moved) }

// sidesShareProducer says whether both sides descend from streams that one
// producer writes (SameProducer): then a side ahead does not make its
// producer wait (waitLead). The other side's input comes only as fast as
// that producer writes: Nexmark q7 joins the bids with a view of their
// TUMBLE windows' MAX, whose rows come a window and the watermark delay
// after the bids they summarise, so the bids' side is always ahead.
// Producers are marked once they start (SameProducer), so they are read
// here, not when the roots are found (gateJoins).
func (js *joinStage) sidesShareProducer() bool {
	for _, l := range js.roots[0] {
		p := l.producer.Load()
		if p != 0 && slices.ContainsFunc(js.roots[1], func(r *Stream) bool { return r.producer.Load() == p }) {
			return true
		}
	}
	return false
}

// SameProducer marks streams that one producer writes (a source that
// several queries read, each from a stream of its own): a window join
// whose two sides descend from them does not make the producer wait for
// one side to catch up with the other (joinStage.waitLead), which could
// only move when the producer does. The streams take their input from
// producers, not from upstream queries.
func SameProducer(streams ...*Stream) {
	if len(streams) < 2 {
		return
	}
	e := streams[0].e
	g := e.producerGroups.Add(1)
	for _, s := range streams {
		s.producer.Store(g)
	}
}

// finishSide marks a side's input ended; once both are, every window left
// is closed, and finishSide returns once every one is joined and handed on
// (CloseAll then ends the input of the queries downstream).
func (js *joinStage) finishSide(side int, w *worker) error {
	js.lock(w)
	all := js.op.Finish(side)
	js.joinClosed(all)
	js.noteReady()
	var err error
	if all {
		err = js.closeGPU()
	}
	js.mu.Unlock()
	js.ring()
	js.wakeHelpers()
	for {
		if perr := js.process(w); err == nil {
			err = perr
		}
		js.lock(w)
		pending := js.op.Pending()
		js.mu.Unlock()
		if !all || err != nil || js.e.failed() != nil {
			return err
		}
		if pending == 0 && js.drainIdle() {
			return nil
		}
		// Another worker runs a task, or hands windows on: run other
		// tasks meanwhile (that one may wait for a downstream ring).
		w.help()
	}
}

// drainIdle says whether no goroutine is handing windows on. A window
// leaves the pending ones (Next) before its output is pushed downstream,
// so a pending count of 0 does not yet mean that every window was handed
// on: the caller of finishSide then ends the downstream inputs, which must
// come after the last push (TestJoinFeedsDownstream raced there).
func (js *joinStage) drainIdle() bool {
	if !js.drainMu.TryLock() {
		return false
	}
	js.drainMu.Unlock()
	return true
}

// process runs the tasks that wait and hands the joined windows on, until
// no task waits or the windows ahead of the oldest one not yet joined
// reach the bound of work: the worker that joins that one goes on.
func (js *joinStage) process(w *worker) error {
	for {
		js.work(w, js.maxTaken(), math.MaxInt)
		if err := js.drain(w); err != nil {
			return err
		}
		js.lock(w)
		more := js.op.Runnable() > 0 && js.mayTake(js.maxTaken())
		js.mu.Unlock()
		if !more {
			return nil
		}
	}
}

// taken is how many closed windows were taken and not handed on: joining,
// or joined and waiting for an older one. It runs under mu.
func (js *joinStage) taken() int { return js.op.Taken() }

// mayTake says whether a task may be taken with limit windows taken at
// most; the oldest window is taken whatever the count, the others waiting
// for it (a device joined those after one it refused). It runs under mu.
func (js *joinStage) mayTake(limit int) bool { return js.taken() < limit || js.op.OldestWaits() }

// maxTaken bounds taken: each such window holds its output (a JOIN_1
// window's is half a MiB), and a worker descheduled in the oldest window
// would otherwise let the others join hundreds behind it. A task taken
// whole may pass it by the rest of its batch.
func (js *joinStage) maxTaken() int { return js.maxTake }

// work runs the tasks that wait, one at a time, until none does, taken
// reaches limit (maxTaken, or catchUp's more) or it ran most; the tasks
// other goroutines took are theirs to finish. It reports whether it ran
// one.
func (js *joinStage) work(w *worker, limit, most int) (ran bool) {
	var t *kernels.JoinTask
	var sc *kernels.JoinScratch // w's, for its cache (nil: Run's own)
	if w != nil {
		sc = w.joinScratch(js)
	}
	for n := 0; ; n++ {
		js.lock(w)
		if t != nil {
			js.op.Done(t)
			js.noteReady()
			js.ring()
			t = nil
		}
		if js.mayTake(limit) && n < most {
			t = js.op.TakeFor(sc)
		}
		js.runnable.Store(int64(js.op.Runnable()))
		js.mu.Unlock()
		if t == nil {
			return n > 0
		}
		js.run(t, w, sc)
	}
}

// run runs pair task t on w, on w's scratch sc: a frame of the join's
// (clock.go), parallel work, also where it runs inside an input's merge.
func (js *joinStage) run(t *kernels.JoinTask, w *worker, sc *kernels.JoinScratch) {
	if w == nil {
		t.Run()
		return
	}
	f := w.beginFrame()
	t.RunWith(sc)
	w.endFrame(f, js.clock)
}

// wakeHelpers wakes idle workers for the windows that wait beyond the one
// the caller joins next (engine.wakeForJoins).
func (js *joinStage) wakeHelpers() {
	if n := int(js.runnable.Load()) - 1; n > 0 && js.e != nil {
		js.e.wakeForJoins(n)
	}
}

// joinClosed has the operator join the windows both watermarks closed
// (all of them when all is set). When the GPU's program fails on a window
// (the operator joins it on the CPU, and every later one), the run fails
// and the program is closed. It runs under mu.
func (js *joinStage) joinClosed(all bool) {
	w, err := js.op.JoinClosed(all)
	js.runnable.Store(int64(js.op.Runnable()))
	js.updateLeads()
	if err == nil {
		return
	}
	js.e.fail(fmt.Errorf("join %q: GPU %s: window %d: %w", js.j.Name, js.e.cfg.GPU.Name(), w, err))
	js.gpuErr = err
	if cerr := js.closeGPU(); cerr != nil {
		js.e.fail(cerr)
	}
}

// closeGPU closes the GPU join program, if any. It runs under mu.
func (js *joinStage) closeGPU() error {
	if js.gpu == nil {
		return nil
	}
	js.op.UsePairJoiner(nil)
	err := js.gpu.Close()
	js.gpu = nil
	if err != nil {
		return fmt.Errorf("join %q: GPU %s: %w", js.j.Name, js.e.cfg.GPU.Name(), err)
	}
	return nil
}

// gpuJoined is how many windows the GPU joined, and how many it left to
// the CPU for their size.
func (js *joinStage) gpuJoined() (windows, fallbacks uint64) {
	js.lock(nil)
	defer js.mu.Unlock()
	st := js.op.Stats()
	return st.PairJoined, st.PairFallbacks
}

// noteReady records op.Ready() for drain's look; under mu, wherever
// windows are joined (Done, a PairJoiner's in joinClosed) or taken off the
// queue (Next).
func (js *joinStage) noteReady() { js.ready.Store(js.op.Ready()) }

// drain hands the joined windows' output on, in order, from one goroutine
// at a time: pushing downstream may run tasks that add to this stage, so it
// must not hold mu. A window still being joined stops it: the worker that
// joins it drains once it is done.
func (js *joinStage) drain(w *worker) error {
	for {
		if !js.ready.Load() {
			return nil // the oldest window is not joined: nothing to hand on
		}
		if !js.drainMu.TryLock() {
			return nil
		}
		js.drainer.Store(w)
		sc := w.beginSerial()
		var err error
		outs := js.drained[:0]
		for {
			// One hold of mu takes back the last batch, handed on, and
			// takes the next.
			js.lock(w)
			for i, o := range outs {
				js.op.Recycle(o)
				outs[i] = kernels.JoinOutput{}
			}
			recycled := len(outs) > 0
			if js.chain != nil {
				js.markChain()
			}
			outs = outs[:0]
			for err == nil && len(outs) < drainBatch {
				o, ok := js.op.Next()
				if !ok {
					break
				}
				outs = append(outs, o)
			}
			js.noteReady()
			js.mu.Unlock()
			if recycled {
				js.ring()
			}
			if len(outs) == 0 {
				break
			}
			for _, o := range outs {
				if err = js.output(o.Pairs, w); err != nil {
					break
				}
			}
		}
		for _, d := range js.down {
			d.flushPartial()
		}
		js.drained = outs
		w.endSerial(sc, js.clock)
		js.drainer.Store(nil)
		js.drainMu.Unlock()
		if err != nil {
			return err
		}
		// A window joined after Next found none, while drainMu was held,
		// was left to us by the goroutine that joined it.
		js.lock(w)
		more := js.op.Ready()
		js.mu.Unlock()
		if !more {
			return nil
		}
	}
}

// complete is Progress's Complete for the join's inputs: every window
// holding an event time below it was handed on (kernels.WindowJoin's
// Unreleased) and, where the join feeds other queries, is out of them too
// (its newest mark they put out); math.MinInt64 for row windows, whose
// positions are not event times.
func (js *joinStage) complete() int64 {
	switch {
	case js.rows:
		return math.MinInt64
	case js.chain != nil:
		m, ok := js.chain.newestOut(js.down, nil, true)
		if !ok {
			return math.MinInt64
		}
		return m.complete
	}
	js.lock(nil)
	w, ok := js.op.Unreleased()
	js.mu.Unlock()
	return js.startOf(w, ok)
}

// noteFiled publishes both sides' largest event times filed (filed):
// under mu, or before the engine runs.
func (js *joinStage) noteFiled() {
	js.filed[0].Store(js.op.Watermark(0))
	js.filed[1].Store(js.op.Watermark(1))
}

// startOf is the start of window w (ok false: math.MinInt64), saturated.
// A regular join's is math.MinInt64 whatever w: no tuple of its inputs is
// ever out, since each pairs with tuples still to come, which a run
// restarted without a checkpoint pairs with it only if it reads it again
// (its records are committed when the run ends, as a row window's).
func (js *joinStage) startOf(w int64, ok bool) int64 {
	if js.j.Regular {
		return math.MinInt64
	}
	slide := js.j.Window.Slide
	switch {
	case !ok || w < math.MinInt64/slide:
		return math.MinInt64
	case w > math.MaxInt64/slide:
		return math.MaxInt64
	}
	return w * slide
}

// markChain marks what the join handed on: the start of its oldest window
// not yet handed on, and where it had filled each downstream stream. Under
// mu and drainMu (the downstream streams' feeder), between handing one
// batch of windows on and taking the next; a mark like the last is not
// repeated.
func (js *joinStage) markChain() {
	w, ok := js.op.Unreleased()
	complete := js.startOf(w, ok)
	c := js.chain
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.marks); n > 0 {
		last := &c.marks[n-1]
		same := last.complete == complete
		for i, d := range js.down {
			same = same && last.down[i] == d.taskStart+uint64(d.filled)
		}
		if same {
			return
		}
	}
	m := c.next()
	m.complete = complete
	for i, d := range js.down {
		m.down[i] = d.taskStart + uint64(d.filled)
	}
}

// drainBatch is how many joined tasks' outputs (a window's, or a batch's)
// drain takes off the queue under one hold of mu: they are handed on
// without it, and recycled under one more. A few, not all that wait: each
// holds an output buffer until they are recycled.
const drainBatch = 8

func (js *joinStage) output(tuples []byte, w *worker) error {
	if js.sink != nil {
		if err := js.sink(tuples); err != nil {
			return fmt.Errorf("join %q output: %w", js.j.Name, err)
		}
	}
	if js.enc != nil && len(tuples) > 0 {
		js.encBuf = js.enc.Encode(js.encBuf[:0], tuples)
		if err := js.enc.give(&js.encBuf); err != nil {
			return fmt.Errorf("join %q output: %w", js.j.Name, err)
		}
	}
	for _, d := range js.down {
		if err := d.push(tuples, w); err != nil {
			return err
		}
	}
	return nil
}

// stats are the join's counters, both inputs together.
func (js *joinStage) stats() (tuples, late, windows, pairs uint64) {
	js.lock(nil)
	defer js.mu.Unlock()
	st := js.op.Stats()
	return st.Tuples, st.Late, st.Windows, st.Pairs
}

// lock takes mu for w (nil: no worker), trying for a few microseconds
// before it sleeps: its holders keep it for about as long, and a worker
// that sleeps on it waits for its thread to be woken, which on a virtual
// machine took 160 µs on average (docs/performance.md, twentieth
// session). sync.Mutex spins only while its P has nothing else to run,
// which a woken producer often denies it. The sleep is w's idle time
// (clock.go): meanwhile the holder works under mu, serial time on its own
// clock, and once it lets go the others progress until w wakes.
func (js *joinStage) lock(w *worker) {
	for range 200 {
		if js.mu.TryLock() {
			return
		}
		for range 30 {
			js.runnable.Load() // a read of a shared line: a pause, no write
		}
	}
	t0 := nanotime()
	js.mu.Lock()
	w.idle(nanotime() - t0)
}
