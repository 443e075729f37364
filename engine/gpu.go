package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/offload"
	"github.com/saber-hx/saber-hx/scheduler"
)

// gpuWorker is the GPU processor kind: one goroutine, not pinned (it mostly
// waits for the device), that owns one offload.Program per query the GPU
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
	w     *worker           // its identity toward the queue and the result stages; CPU kernels for the fallback
	progs []offload.Program // per stream; nil where the GPU has no kernel
	slots []gpuSlot         // the tasks in flight, in submission order from head
	head  int
	n     int // tasks in flight
	last  time.Time
	done  chan struct{} // closed when the goroutine has drained and closed its programs
	// registered is the ring memory registered with the device (an
	// offload.HostRegistrar), so that tasks are copied to it from the
	// ring, without a staging copy; unregistered once every slot drained.
	registered [][]byte
}

type gpuSlot struct {
	t         *scheduler.Task
	prog      offload.Program
	submitted time.Time
}

// startGPU starts the GPU worker, whose processor ID follows the CPU
// workers', and waits until it has compiled its programs.
func (e *Engine) startGPU(id int) error {
	g := &gpuWorker{
		e:     e,
		progs: make([]offload.Program, len(e.streams)),
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
	ready <- nil
	q, p := g.e.queue, g.w.proc
	for {
		if g.n < len(g.slots) {
			var t *scheduler.Task
			if g.n == 0 {
				if t = q.Pop(p); t == nil {
					break // closed and drained of what the GPU runs
				}
			} else {
				t = q.TryPop(p)
			}
			if t != nil {
				g.submit(t)
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
			err = fmt.Errorf("GPU %s: query %q: %w", dev.Name(), s.win.Query, err)
			if errors.Is(err, offload.ErrNoKernel) {
				err = asConfigError(err)
			}
			return err
		}
		g.progs[i] = pr
		g.w.kernels[i] = s.plan.NewKernel()
	}
	return nil
}

// registerRings registers the ring of every stream the GPU runs with a
// device that can (offload.HostRegistrar), unless SABER_HX_GPU_REGISTER=0.
// Where the device refuses the whole mirrored mapping it registers the
// first half (tasks that cross the wrap are staged); a ring it refuses
// altogether is only a warning: its tasks are then copied through the
// slots' page-locked staging.
func (g *gpuWorker) registerRings() {
	reg, ok := g.e.cfg.GPU.(offload.HostRegistrar)
	if !ok || offload.RegisterDisabled() {
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
	reg, ok := g.e.cfg.GPU.(offload.HostRegistrar)
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
// worker and waits for a downstream ring (worker.help): submit a queued
// task where a slot is free, else finish the oldest task in flight.
func (g *gpuWorker) help() {
	if g.n < len(g.slots) {
		if t := g.e.queue.TryPop(g.w.proc); t != nil {
			g.submit(t)
			return
		}
	}
	if g.n > 0 {
		g.complete()
		return
	}
	time.Sleep(20 * time.Microsecond)
}

// refill submits queued tasks (TryPop: never waiting) while a slot is
// free.
func (g *gpuWorker) refill() {
	for g.n < len(g.slots) {
		t := g.e.queue.TryPop(g.w.proc)
		if t == nil {
			return
		}
		g.submit(t)
	}
}

// submit starts t on the next free slot. A task that cannot start (the
// engine failed, or Submit failed, which fails the engine) is finished at
// once, unprocessed, as a CPU worker finishes a task after a failure.
func (g *gpuWorker) submit(t *scheduler.Task) {
	e := g.e
	s := e.streams[t.Query]
	t.Result.Reset(s.layout)
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
	if t.Fill != nil {
		t.Fill(t.Data, t.Start)
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
// the program could not hold its result, and hands it on.
func (g *gpuWorker) complete() {
	e := g.e
	i := g.head
	sl := g.slots[i]
	t := sl.t
	s := e.streams[t.Query]
	ok, err := sl.prog.Wait(i, &t.Result)
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
		t.Result.Reset(s.layout)
		g.w.kernels[t.Query].Process(t.Data, t.Start/uint64(s.plan.TupleSize), &t.Result)
		s.gpuFallback.Add(1)
	}
	g.report(t, sl.submitted)
}

// report tells the queue the task is done, with the busy time described
// at gpuWorker, and hands it to its stream's result stage.
func (g *gpuWorker) report(t *scheduler.Task, submitted time.Time) {
	now := time.Now()
	from := submitted
	if g.last.After(from) {
		from = g.last
	}
	g.last = now
	g.e.queue.Done(g.w.proc, t, now.Sub(from))
	g.e.streams[t.Query].finish(t, g.w)
}
