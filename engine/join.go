package engine

import (
	"fmt"
	"sync"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
)

// joinStage is a window join's stage (query.WindowJoin): the glue around
// its operator, kernels.WindowJoin. Each input is a Stream of its own
// (ring, dispatcher, ordered result stage) whose kernel passes tuples
// through; the stage hands each stream's tuples, in order, to the operator,
// which joins a window once both watermarks have passed its end, and pushes
// the windows' output downstream in order.
//
// The pairs are computed under the stage's lock, on the worker that merged
// the task which closed the window: a window join's parallelism is the
// passing of tuples through the workers, not the join itself (a known
// limit, see the README).
//
// With a GPU (Config.GPU, hybrid or gpu mode) whose device compiles the
// join (GPU.SupportsJoin: its WHERE has a GPU form), the operator sends
// each window's tuples to the join program instead (its PairJoiner), which
// returns the same pairs in the same order; a window whose pairs do not fit
// the device's output buffer is joined on the CPU, as is every window of a
// join the GPU cannot run. The program is used under the stage's lock and
// closed once both inputs ended (or by the device's Close).
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

// add files a side's tuples (in stream order) and joins the windows that
// both watermarks have closed. A tuple whose first window would start below
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
	return js.drain(w)
}

// finishSide marks a side's input ended; once both are, every window left
// is joined.
func (js *joinStage) finishSide(side int, w *worker) error {
	js.mu.Lock()
	all := js.op.Finish(side)
	js.joinClosed(all)
	var err error
	if all {
		err = js.closeGPU()
	}
	js.mu.Unlock()
	if derr := js.drain(w); err == nil {
		err = derr
	}
	return err
}

// joinClosed has the operator join the windows both watermarks closed
// (all of them when all is set). When the GPU's program fails on a window
// (the operator joins it on the CPU, and every later one), the run fails
// and the program is closed. It runs under mu.
func (js *joinStage) joinClosed(all bool) {
	w, err := js.op.JoinClosed(all)
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

// drain hands pending output on, in order, from one goroutine at a time:
// pushing downstream may run tasks that add to this stage, so it must not
// hold mu.
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
		js.mu.Lock()
		more := js.op.Pending() > 0
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
