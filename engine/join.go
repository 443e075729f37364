package engine

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
)

// joinStage is a window join's stage (query.WindowJoin): the glue around
// its operator, kernels.WindowJoin. Each input is a Stream of its own
// (ring, dispatcher, ordered result stage) whose kernel passes tuples
// through; the stage hands each stream's tuples, in order, to the operator,
// which closes a window once both watermarks have passed its end into a
// task, and pushes the windows' output downstream in window order.
//
// A closed window's pairs are computed by a worker, without the stage's
// lock, which covers only the operator's bookkeeping (filing tuples into
// panes, closing windows, handing tasks out and back): the worker that
// closed windows runs their tasks once it let go of the lock, and every
// worker between two of its own tasks runs the tasks that wait (work, and
// the worker loop's helpJoins), so that the windows of one join are joined
// in parallel. The output is handed on in window order by whichever worker
// finds the oldest window joined (drain).
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
	down   []*Stream
	e      *Engine

	mu sync.Mutex
	op *kernels.WindowJoin
	// runnable is op.Runnable(), set under mu: the workers' unlocked look
	// for tasks (helpJoins).
	runnable atomic.Int64

	drainMu sync.Mutex
}

func newJoinStage(e *Engine, j *query.WindowJoin, sp Spec) (*joinStage, error) {
	op, err := kernels.NewWindowJoin(j)
	if err != nil {
		return nil, err
	}
	js := &joinStage{j: j, rows: j.Window.Type == query.Rows, e: e, sink: sp.Tuples, op: op}
	if e != nil && e.cfg.GPU != nil {
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
// joined windows on. A tuple whose first window would start below
// math.MinInt64 is refused: an InputError.
func (js *joinStage) add(side int, tuples []byte, w *worker) error {
	js.mu.Lock()
	if r, ok := js.op.Add(side, tuples); !ok {
		ts := [2]int{js.j.Left.TupleSize, js.j.Right.TupleSize}[side]
		js.mu.Unlock()
		return &InputError{Query: js.j.Name, Input: [2]string{"left", "right"}[side],
			Offset: r.Tuple * uint64(ts), Tuple: r.Tuple, Pos: r.Pos, Rows: js.rows}
	}
	js.joinClosed(false)
	js.mu.Unlock()
	js.work()
	return js.drain(w)
}

// finishSide marks a side's input ended; once both are, every window left
// is closed, and finishSide returns once every one is joined and handed on
// (CloseAll then ends the input of the queries downstream).
func (js *joinStage) finishSide(side int, w *worker) error {
	js.mu.Lock()
	all := js.op.Finish(side)
	js.joinClosed(all)
	var err error
	if all {
		err = js.closeGPU()
	}
	js.mu.Unlock()
	for {
		js.work()
		if derr := js.drain(w); err == nil {
			err = derr
		}
		js.mu.Lock()
		pending := js.op.Pending()
		js.mu.Unlock()
		if !all || pending == 0 || err != nil || js.e.failed() != nil {
			return err
		}
		// Another worker runs a task, or hands windows on: run other
		// tasks meanwhile (that one may wait for a downstream ring).
		w.help()
	}
}

// work runs the tasks that wait, one at a time, until none does; the
// tasks other goroutines took are theirs to finish.
func (js *joinStage) work() {
	var t *kernels.JoinTask
	for {
		js.mu.Lock()
		if t != nil {
			js.op.Done(t)
		}
		t = js.op.Take()
		js.runnable.Store(int64(js.op.Runnable()))
		js.mu.Unlock()
		if t == nil {
			return
		}
		t.Run()
	}
}

// joinClosed has the operator join the windows both watermarks closed
// (all of them when all is set). When the GPU's program fails on a window
// (the operator joins it on the CPU, and every later one), the run fails
// and the program is closed. It runs under mu.
func (js *joinStage) joinClosed(all bool) {
	w, err := js.op.JoinClosed(all)
	js.runnable.Store(int64(js.op.Runnable()))
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
	js.mu.Lock()
	defer js.mu.Unlock()
	st := js.op.Stats()
	return st.PairJoined, st.PairFallbacks
}

// drain hands the joined windows' output on, in order, from one goroutine
// at a time: pushing downstream may run tasks that add to this stage, so it
// must not hold mu. A window still being joined stops it: the worker that
// joins it drains once it is done.
func (js *joinStage) drain(w *worker) error {
	for {
		if !js.drainMu.TryLock() {
			return nil
		}
		var err error
		for err == nil {
			js.mu.Lock()
			out, ok := js.op.Next()
			js.mu.Unlock()
			if !ok {
				break
			}
			err = js.output(out, w)
			js.mu.Lock()
			js.op.Recycle(out)
			js.mu.Unlock()
		}
		js.drainMu.Unlock()
		if err != nil {
			return err
		}
		// A window joined after Next found none, while drainMu was held,
		// was left to us by the goroutine that joined it.
		js.mu.Lock()
		more := js.op.Ready()
		js.mu.Unlock()
		if !more {
			return nil
		}
	}
}

func (js *joinStage) output(tuples []byte, w *worker) error {
	if js.sink != nil {
		if err := js.sink(tuples); err != nil {
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
	js.mu.Lock()
	defer js.mu.Unlock()
	st := js.op.Stats()
	return st.Tuples, st.Late, st.Windows, st.Pairs
}
