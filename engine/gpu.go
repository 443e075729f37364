package engine

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/scheduler"
	"github.com/saber-hx/saber-hx/window"
)

// GPU is what the engine consumes of a GPU device (Config.GPU), defined
// here, where it is consumed: the engine imports no GPU package. Package
// Package gpu's devices (gpu.Open, gpu.NewEmulator) are GPUs; the
// command line opens one and passes it in.
type GPU interface {
	// Name names the device in errors and warnings.
	Name() string
	// Supports returns nil if the device has kernels for p's shape, else
	// why not, starting with the query's name and naming the operator
	// (`query "q": SUM(y): no GPU kernel`). It is asked once per query,
	// before Compile.
	Supports(p *kernels.Plan) error
	// Compile returns a program for p with depth slots, for a plan that
	// Supports accepts. Its error is the device's (memory, the driver)
	// and fails Start.
	Compile(p *kernels.Plan, depth int) (GPUProgram, error)
	// SupportsJoin returns nil if the device can compute window join j's
	// pairs (its WHERE has a GPU form), else why not: the join then runs
	// on the CPU, without a warning.
	SupportsJoin(j *query.WindowJoin) error
	// CompileJoin returns j's join program, for a join that SupportsJoin
	// accepts. Its error is a warning (Config.Warn): the join runs on the
	// CPU.
	CompileJoin(j *query.WindowJoin) (GPUJoinProgram, error)
}

// GPUProgram is one query compiled for the GPU, as the GPU worker uses it:
// up to Depth tasks at once, each on its own slot; one goroutine at a time
// uses it.
//
// It is an alias of an interface literal, not a defined type, and so is
// GPUJoinProgram: Go has no covariant method results, and a device's
// Compile must return this very type to satisfy GPU, which a device
// package can then do without importing engine by returning an identical
// literal (gpu.Program is one; package gpu's tests assert that its devices
// are GPUs).
type GPUProgram = interface {
	// Depth is the program's number of slots.
	Depth() int
	// Submit starts task data (whole tuples; first is the stream index of
	// its first tuple) on free slot s without waiting for the device;
	// data stays valid and unchanged until Wait(s) returns.
	Submit(s int, data []byte, first uint64) error
	// Wait blocks until slot s's task is done and fills r (Reset with the
	// plan's layout) exactly as the plan's CPU kernel would. ok false: the
	// program could not hold the task's result; the engine runs the task
	// on a CPU kernel instead. Slot s is free after.
	Wait(s int, r *window.TaskResult) (ok bool, err error)
	// Close waits for every slot and frees the program.
	Close() error
}

// GPUUnpacker is GPUProgram.Wait in two halves, which a program may also
// have (package gpu's programs do: gpu.Unpacker is this very type). Finish
// blocks until slot s's task is done on the device and keeps its output;
// Unpack then fills r as Wait would and frees the slot. Unpack may run on
// another goroutine than the one that calls Submit and Finish on the
// program's other slots, at the same time: the GPU worker hands it, with
// the fallback, to a goroutine of its own, so that unpacking one task
// overlaps waiting for the next (unless SABER_HX_GPU_UNPACK=inline).
type GPUUnpacker = interface {
	Finish(s int) error
	Unpack(s int, r *window.TaskResult) (ok bool, err error)
}

// unpackInline says whether SABER_HX_GPU_UNPACK=inline asks the GPU worker
// to unpack on its own goroutine (Wait), as before the unpacker.
func unpackInline() bool { return os.Getenv("SABER_HX_GPU_UNPACK") == "inline" }

// GPUJoinProgram computes a window join's pairs on the GPU, used by one
// goroutine at a time (see GPUProgram on why it is an alias).
type GPUJoinProgram = interface {
	// Join appends to out the pairs of the window whose left tuples are
	// left and right tuples right, in the CPU's order, and returns it. ok
	// false: the pairs do not fit the device; out is returned unchanged
	// and the engine joins the window on the CPU.
	Join(left, right [][]byte, out []byte) (res []byte, ok bool, err error)
	// Close frees the program.
	Close() error
}

// GPUHostRegistrar is a GPU that can register host memory, so that a task
// inside it is copied to the device from where it is, without a staging
// copy (package gpu's devices can). The engine registers the rings of the
// queries the GPU runs, unless SABER_HX_GPU_REGISTER=0, and unregisters
// them once no task is in flight. b stays mapped until UnregisterHost(b).
type GPUHostRegistrar interface {
	RegisterHost(b []byte) error
	UnregisterHost(b []byte) error
}

// registerDisabled says whether SABER_HX_GPU_REGISTER=0 asks the engine
// not to register its rings (for measuring the staging copy's cost).
func registerDisabled() bool { return os.Getenv("SABER_HX_GPU_REGISTER") == "0" }

// gpuWorker is the GPU processor kind: one goroutine, not pinned (it mostly
// waits for the device), that owns one GPUProgram per query the GPU
// can run and keeps up to Config.GPUDepth tasks in flight.
//
// The tasks in flight form a FIFO ring of depth slots: slot i of the ring
// is slot i of every program, so that at most one task uses a program's
// slot at a time. While a slot is free the worker takes a task (Pop, which
// blocks, when nothing is in flight; TryPop otherwise) and submits it;
// otherwise it waits for the oldest task, and refills the slot that frees
// before that task's fallback and result stage run, so that the device
// keeps working meanwhile. A task whose result the program
// cannot hold (Wait's ok false: a pane outside the output's range) runs on
// the worker's CPU kernel for the query, counted in
// Stats.GPUFallbackTasks. A finished task is reported to the queue and
// handed to its stream's result stage exactly as a CPU worker hands it
// (Stream.finish, with the worker as the merging worker), so the result
// stage cannot tell who ran it.
//
// With programs that are GPUUnpackers (package gpu's), complete is split: the
// worker Finishes the oldest task not yet finished (waiting for the
// device) and hands the slot to its unpacker, a goroutine that Unpacks the
// output into the task's result and runs the fallback; the slot stays
// taken until the unpacker hands it back, in order (one unpacker, FIFO),
// and the worker then refills it and hands the task to its result stage.
// Meanwhile the worker submits and finishes the other slots, so that the
// unpacking and the fallback are off its path.
//
// Busy time (what hls's throughput matrix divides bytes by): the time from
// the later of the task's submission and the previous completion to the
// task's completion. With the pipeline full, that is the interval between
// two completions (the device's throughput, not one task's latency, which
// overlaps others); after an idle pipeline, the time since submission. The
// busy times add up to the time during which at least one task was in
// flight, the fallback's CPU time included, so the GPU is one processor of
// that rate (scheduler Workers 1).
type gpuWorker struct {
	e     *Engine
	w     *worker      // its identity toward the queue and the result stages; CPU kernels for the fallback
	progs []GPUProgram // per stream; nil where the GPU has no kernel
	slots []gpuSlot    // the tasks in flight, in submission order from head
	head  int
	n     int // tasks in flight
	last  time.Time
	done  chan struct{} // closed when the goroutine has drained and closed its programs
	// registered is the ring memory registered with the device (a
	// GPUHostRegistrar), so that tasks are copied to it from the
	// ring, without a staging copy; unregistered once every slot drained.
	registered [][]byte
	// The unpacker (split: every program is a GPUUnpacker): the slots
	// from head on that were finished and handed to it, and its channels
	// (slots in, slots out, in order; room for every slot).
	split     bool
	unpacking int
	toUnpack  chan unpackJob
	unpacked  chan unpackJob
}

// unpackJob is a finished slot handed to the unpacker, and back: err is
// Finish's, then Unpack's.
type unpackJob struct {
	i   int
	sl  gpuSlot
	err error
}

type gpuSlot struct {
	t         *task
	prog      GPUProgram
	submitted time.Time
}

// startGPU starts the GPU worker, whose processor ID follows the CPU
// workers', and waits until it has compiled its programs.
func (e *Engine) startGPU(id int) error {
	g := &gpuWorker{
		e:     e,
		progs: make([]GPUProgram, len(e.streams)),
		slots: make([]gpuSlot, e.cfg.gpuDepth()),
		done:  make(chan struct{}),
	}
	g.w = &worker{e: e, proc: scheduler.Processor{Kind: e.gpuKind, ID: id}, kernels: make([]kernels.Kernel, len(e.streams)), gpu: g}
	ready := make(chan error, 1)
	go g.loop(ready)
	if err := <-ready; err != nil {
		<-g.done
		return err
	}
	e.gpu = g
	return nil
}

// loop is the GPU worker's goroutine: its programs are compiled here.
func (g *gpuWorker) loop(ready chan<- error) {
	defer close(g.done)
	if err := g.compile(); err != nil {
		g.closePrograms()
		ready <- err
		return
	}
	g.registerRings()
	defer g.unregisterRings()
	g.split = !unpackInline()
	for _, pr := range g.progs {
		if _, ok := pr.(GPUUnpacker); pr != nil && !ok {
			g.split = false
		}
	}
	if g.split {
		g.toUnpack, g.unpacked = make(chan unpackJob, len(g.slots)), make(chan unpackJob, len(g.slots))
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			g.unpacker()
		}()
		defer func() {
			close(g.toUnpack) // after the loop: nothing is in flight
			<-ended
		}()
	}
	ready <- nil
	q, p := g.e.queue, g.w.proc
	for {
		// A GPU-only engine has no CPU worker to flush a chain's partial
		// tasks (wakeOne wakes this one).
		g.w.flushDue()
		if g.n < len(g.slots) {
			var t *scheduler.Task
			if g.n == 0 {
				if t = q.Pop(p); t == nil {
					break // closed and drained of what the GPU runs
				}
				if t == scheduler.Woken {
					continue
				}
			} else {
				t = q.TryPop(p)
			}
			if t != nil {
				g.submit(g.e.taskOf(t))
				continue
			}
		}
		g.complete()
	}
	if err := g.closePrograms(); err != nil {
		g.e.fail(err)
	}
}

// compile makes a program and a fallback kernel per query the GPU runs.
func (g *gpuWorker) compile() error {
	dev := g.e.cfg.GPU
	for i, s := range g.e.streams {
		if s.gpuErr != nil {
			continue
		}
		pr, err := dev.Compile(s.plan, len(g.slots))
		if err != nil {
			return fmt.Errorf("GPU %s: query %q: %w", dev.Name(), s.win.Query, err)
		}
		g.progs[i] = pr
		g.w.kernels[i] = s.plan.NewKernel()
	}
	return nil
}

// registerRings registers the ring of every stream the GPU runs with a
// device that can (GPUHostRegistrar), unless SABER_HX_GPU_REGISTER=0.
// Where the device refuses the whole mirrored mapping it registers the
// first half (tasks that cross the wrap are staged); a ring it refuses
// altogether is only a warning: its tasks are then copied through the
// slots' page-locked staging.
func (g *gpuWorker) registerRings() {
	reg, ok := g.e.cfg.GPU.(GPUHostRegistrar)
	if !ok || registerDisabled() {
		return
	}
	for _, s := range g.e.streams {
		if s.gpuErr != nil {
			continue
		}
		b := s.ring.Mapping()
		err := reg.RegisterHost(b)
		if err != nil {
			// The driver may refuse the mirror (the same pages twice):
			// then the first half, which holds every task that does not
			// cross the wrap.
			if err2 := reg.RegisterHost(b[:s.ring.Size()]); err2 == nil {
				b = b[:s.ring.Size()]
				err = nil
			}
		}
		if err != nil {
			if g.e.cfg.Warn != nil {
				g.e.cfg.Warn(fmt.Sprintf("GPU %s: query %q: its ring is copied through staging: %v", g.e.cfg.GPU.Name(), s.win.Query, err))
			}
			continue
		}
		g.registered = append(g.registered, b)
	}
}

// unregisterRings undoes registerRings, once no task is in flight (and
// before the engine unmaps the rings: it waits for done first).
func (g *gpuWorker) unregisterRings() {
	reg, ok := g.e.cfg.GPU.(GPUHostRegistrar)
	if !ok {
		return
	}
	for _, b := range g.registered {
		if err := reg.UnregisterHost(b); err != nil {
			g.e.fail(fmt.Errorf("GPU %s: %w", g.e.cfg.GPU.Name(), err))
		}
	}
	g.registered = nil
}

func (g *gpuWorker) closePrograms() error {
	var errs []error
	for i, pr := range g.progs {
		if pr == nil {
			continue
		}
		if err := pr.Close(); err != nil {
			errs = append(errs, fmt.Errorf("GPU %s: query %q: close: %w", g.e.cfg.GPU.Name(), g.e.streams[i].win.Query, err))
		}
		g.progs[i] = nil
	}
	return errors.Join(errs...)
}

// help is one step of the pipeline, for a result stage that runs on the GPU
// worker and waits for a downstream ring (worker.tryHelp): submit a queued
// task where a slot is free, else finish the oldest task in flight. It
// reports whether it did either: where it did neither, the worker waits on
// the ring's doorbell as a CPU worker does (it slept here, waking only
// after its sleep however soon the ring had room).
func (g *gpuWorker) help() bool {
	if g.n < len(g.slots) {
		if t := g.e.queue.TryPop(g.w.proc); t != nil {
			g.submit(g.e.taskOf(t))
			return true
		}
	}
	if g.n > 0 {
		g.complete()
		return true
	}
	return false
}

// refill submits queued tasks (TryPop: never waiting) while a slot is
// free.
func (g *gpuWorker) refill() {
	for g.n < len(g.slots) {
		t := g.e.queue.TryPop(g.w.proc)
		if t == nil {
			return
		}
		g.submit(g.e.taskOf(t))
	}
}

// submit starts t on the next free slot. A task that cannot start (the
// engine failed, or Submit failed, which fails the engine) is finished at
// once, unprocessed, as a CPU worker finishes a task after a failure.
func (g *gpuWorker) submit(t *task) {
	e := g.e
	s := e.streams[t.Query]
	t.result.Reset(s.layout)
	now := time.Now()
	if e.failed() != nil {
		g.report(t, now)
		return
	}
	pr := g.progs[t.Query]
	if pr == nil {
		e.fail(fmt.Errorf("engine: the GPU took a task of query %q, which it has no kernel for", s.win.Query))
		g.report(t, now)
		return
	}
	i := (g.head + g.n) % len(g.slots)
	if t.fill != nil {
		t.fill(t.Data, t.Start)
	} else if t.handed {
		s.hand.fill(t.Data, t)
	}
	if err := pr.Submit(i, t.Data, t.Start/uint64(s.plan.TupleSize)); err != nil {
		e.fail(fmt.Errorf("GPU %s: query %q: task %d: %w", e.cfg.GPU.Name(), s.win.Query, t.ID, err))
		g.report(t, now)
		return
	}
	g.slots[i] = gpuSlot{t: t, prog: pr, submitted: now}
	g.n++
}

// complete waits for the oldest task in flight, runs it on the CPU where
// the program could not hold its result, and hands it on. Split (see
// gpuWorker), it makes one step of that instead: it hands on a task the
// unpacker is done with, else finishes the oldest task not yet finished
// and hands it to the unpacker, else waits for the unpacker.
func (g *gpuWorker) complete() {
	if g.split {
		if g.collect(false) {
			return
		}
		if g.unpacking < g.n {
			i := (g.head + g.unpacking) % len(g.slots)
			sl := g.slots[i]
			err := sl.prog.(GPUUnpacker).Finish(i)
			g.unpacking++
			g.toUnpack <- unpackJob{i: i, sl: sl, err: err}
			return
		}
		g.collect(true)
		return
	}
	e := g.e
	i := g.head
	sl := g.slots[i]
	t := sl.t
	s := e.streams[t.Query]
	ok, err := sl.prog.Wait(i, &t.result)
	// The slot is free before the result stage runs: it may run this
	// worker's help (a downstream ring is full), which submits.
	g.slots[i] = gpuSlot{}
	g.head = (g.head + 1) % len(g.slots)
	g.n--
	// Keep the device busy while this task's fallback and result stage run
	// on this goroutine: the freed slot takes a queued task first.
	g.refill()
	switch {
	case err != nil:
		e.fail(fmt.Errorf("GPU %s: query %q: task %d: %w", e.cfg.GPU.Name(), s.win.Query, t.ID, err))
	case !ok && e.failed() == nil:
		t.result.Reset(s.layout)
		g.w.kernels[t.Query].Process(t.Data, t.Start/uint64(s.plan.TupleSize), &t.result)
		s.gpuFallback.Add(1)
	}
	g.report(t, sl.submitted)
}

// unpacker is the goroutine that unpacks the finished slots' outputs into
// their tasks' results and runs the fallback of those the programs could
// not hold, in the order the worker finished them; it ends when toUnpack
// is closed. It owns the fallback kernels (w.kernels) while it runs.
func (g *gpuWorker) unpacker() {
	e := g.e
	for j := range g.toUnpack {
		if j.err == nil {
			t := j.sl.t
			s := e.streams[t.Query]
			var ok bool
			ok, j.err = j.sl.prog.(GPUUnpacker).Unpack(j.i, &t.result)
			if j.err == nil && !ok && e.failed() == nil {
				t.result.Reset(s.layout)
				g.w.kernels[t.Query].Process(t.Data, t.Start/uint64(s.plan.TupleSize), &t.result)
				s.gpuFallback.Add(1)
			}
		}
		g.unpacked <- j
	}
}

// collect takes a slot back from the unpacker (waiting for it where
// block), frees and refills it, and hands its task on; false where none
// was ready.
func (g *gpuWorker) collect(block bool) bool {
	var j unpackJob
	if block {
		j = <-g.unpacked
	} else {
		select {
		case j = <-g.unpacked:
		default:
			return false
		}
	}
	e := g.e
	if j.i != g.head {
		panic(fmt.Sprintf("engine: the GPU unpacker handed back slot %d, the oldest is %d", j.i, g.head))
	}
	t := j.sl.t
	g.slots[j.i] = gpuSlot{}
	g.head = (g.head + 1) % len(g.slots)
	g.n--
	g.unpacking--
	g.refill()
	if j.err != nil {
		e.fail(fmt.Errorf("GPU %s: query %q: task %d: %w", e.cfg.GPU.Name(), e.streams[t.Query].win.Query, t.ID, j.err))
	}
	g.report(t, j.sl.submitted)
	return true
}

// report tells the queue the task is done, with the busy time described
// at gpuWorker, and hands it to its stream's result stage.
func (g *gpuWorker) report(t *task, submitted time.Time) {
	now := time.Now()
	from := submitted
	if g.last.After(from) {
		from = g.last
	}
	g.last = now
	g.e.done(g.w.proc, t, now.Sub(from))
	g.e.streams[t.Query].finish(t, g.w)
	g.w.copyOutputs()
}
