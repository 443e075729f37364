package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// joinStage evaluates a window join (query.WindowJoin). Each input is a
// Stream of its own (ring, dispatcher, ordered result stage) whose kernel
// passes tuples through; the stage files each stream's tuples, in order,
// into panes, and when both watermarks have passed a window's end it joins
// the window's left and right tuples pair by pair, the predicate evaluated
// vectorised over chunks of pairs.
//
// The pairs are computed under the stage's lock, on the worker that merged
// the task which closed the window: a window join's parallelism is the
// passing of tuples through the workers, not the join itself (a known
// limit, see the README).
//
// With a GPU (Config.GPU, hybrid or gpu mode) whose device compiles the
// join (GPU.SupportsJoin: its WHERE has a GPU form), the stage
// sends each window's tuples to the join program instead, which returns
// the same pairs in the same order; a window whose pairs do not fit the
// device's output buffer is joined on the CPU, as is every window of a
// join the GPU cannot run. The program is used under the stage's lock and
// closed once both inputs ended (or by the device's Close).
type joinStage struct {
	j       *query.WindowJoin
	spec    window.Spec
	lowest  int64 // spec.LowestPane(): a tuple of a pane below it is refused
	rows    bool
	outSize int
	filter  *kernels.Filter // nil: every pair
	gpu     GPUJoinProgram  // nil: the CPU joins
	gpuErr  error           // why the GPU does not join (nil: it does, or there is no GPU)
	sink    TupleSink
	down    []*Stream
	e       *Engine

	mu       sync.Mutex
	sides    [2]joinSide
	next     int64 // windows before next were joined
	started  bool
	pairs    []byte // a chunk of candidate pairs
	pending  [][]byte
	free     [][]byte
	windows  uint64
	outPairs uint64
	// gpuWindows counts the windows whose pairs the GPU computed;
	// gpuFallbacks the windows the GPU program refused (too many pairs).
	gpuWindows, gpuFallbacks uint64

	drainMu sync.Mutex
}

type joinSide struct {
	tupleSize int
	wm        int64
	index     int64 // position of the next tuple in a row window
	done      bool
	panes     []joinPane // sorted by pane
	tuples    uint64
	late      uint64
}

type joinPane struct {
	pane int64
	data []byte
}

func newJoinStage(e *Engine, j *query.WindowJoin, sp Spec) (*joinStage, error) {
	if err := j.Validate(); err != nil {
		return nil, err
	}
	spec, err := window.NewSpec(j.Window)
	if err != nil {
		return nil, err
	}
	js := &joinStage{
		j: j, spec: spec, lowest: spec.LowestPane(), rows: j.Window.Type == query.Rows, e: e,
		outSize: j.Left.TupleSize + j.Right.TupleSize, sink: sp.Tuples,
	}
	if j.Where != nil {
		if js.filter, err = kernels.NewFilter(j.Where, j.OutputSchemaUnchecked()); err != nil {
			return nil, fmt.Errorf("join %q: %w", j.Name, err)
		}
	}
	js.pairs = make([]byte, 0, kernels.FilterChunk*js.outSize)
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
	for i, s := range []*query.Schema{j.Left, j.Right} {
		js.sides[i] = joinSide{tupleSize: s.TupleSize, wm: math.MinInt64}
	}
	return js, nil
}

// add files a side's tuples (in stream order) and joins the windows that
// both watermarks have closed. A tuple whose first window would start below
// math.MinInt64 is refused: an InputError.
func (js *joinStage) add(side int, tuples []byte, w *worker) error {
	js.mu.Lock()
	sd := &js.sides[side]
	ts := sd.tupleSize
	for o := 0; o+ts <= len(tuples); o += ts {
		pos := sd.index
		if !js.rows {
			pos = int64(binary.LittleEndian.Uint64(tuples[o:]))
		}
		p := js.spec.PaneOf(pos)
		if p < js.lowest {
			err := &InputError{Query: js.j.Name, Input: [2]string{"left", "right"}[side],
				Offset: uint64(sd.index) * uint64(ts), Tuple: uint64(sd.index), Pos: pos, Rows: js.rows}
			js.mu.Unlock()
			return err
		}
		sd.index++
		sd.tuples++
		prev := sd.wm
		sd.wm = max(sd.wm, pos)
		if prev > js.spec.Open(p) {
			sd.late++
			continue
		}
		pn := sd.pane(p)
		pn.data = append(pn.data, tuples[o:o+ts]...)
	}
	js.joinClosed(false)
	js.mu.Unlock()
	return js.drain(w)
}

// finishSide marks a side's input ended; once both are, every window left
// is joined.
func (js *joinStage) finishSide(side int, w *worker) error {
	js.mu.Lock()
	js.sides[side].done = true
	all := js.sides[0].done && js.sides[1].done
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

// closeGPU closes the GPU join program, if any. It runs under mu.
func (js *joinStage) closeGPU() error {
	if js.gpu == nil {
		return nil
	}
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
	return js.gpuWindows, js.gpuFallbacks
}

func (sd *joinSide) pane(p int64) *joinPane {
	i, found := slices.BinarySearchFunc(sd.panes, p, func(a joinPane, p int64) int {
		switch {
		case a.pane < p:
			return -1
		case a.pane > p:
			return 1
		}
		return 0
	})
	if !found {
		sd.panes = slices.Insert(sd.panes, i, joinPane{pane: p})
	}
	return &sd.panes[i]
}

// joinClosed joins every window whose end both watermarks passed (all of
// them when all is set). It runs under mu; the output waits in pending.
func (js *joinStage) joinClosed(all bool) {
	s := js.spec
	limit := int64(math.MaxInt64)
	for i := range js.sides {
		if !js.sides[i].done {
			limit = min(limit, js.sides[i].wm)
		}
	}
	if limit == math.MinInt64 {
		return // closes nothing
	}
	for {
		first, any := int64(math.MaxInt64), false
		for i := range js.sides {
			if ps := js.sides[i].panes; len(ps) > 0 {
				first, any = min(first, s.FirstWindow(ps[0].pane)), true
			}
		}
		if !any {
			return
		}
		w := first
		if js.started && js.next > w {
			w = js.next
		}
		if !all && !s.Closed(w, limit) {
			return
		}
		js.joinWindow(w)
		// Every window up to w is done; w+1 saturates (w == MaxInt64
		// holds the last pane, removed below).
		js.next, js.started = w+1, true
		if w == math.MaxInt64 {
			js.next = w
		}
		for i := range js.sides {
			sd := &js.sides[i]
			k := 0
			for k < len(sd.panes) && s.LastWindow(sd.panes[k].pane) <= w {
				k++
			}
			sd.panes = append(sd.panes[:0], sd.panes[k:]...)
		}
	}
}

// joinWindow joins window w's tuples: left tuples ordered by position
// (stable), then right ones, nested loops, pairs filtered a chunk at a time
// (or the same pairs computed by the GPU join program).
func (js *joinStage) joinWindow(w int64) {
	lo, last := js.spec.PaneSpan(w)
	l := js.sides[0].windowTuples(lo, last, js.rows)
	r := js.sides[1].windowTuples(lo, last, js.rows)
	if len(l) == 0 || len(r) == 0 {
		return
	}
	var out []byte
	if n := len(js.free); n > 0 {
		out, js.free = js.free[n-1][:0], js.free[:n-1]
	}
	if js.gpu != nil {
		res, ok, err := js.gpu.Join(l, r, out)
		switch {
		case err != nil:
			// The run fails; the CPU joins the window meanwhile.
			js.e.fail(fmt.Errorf("join %q: GPU %s: window %d: %w", js.j.Name, js.e.cfg.GPU.Name(), w, err))
			js.gpuErr = err
			if cerr := js.closeGPU(); cerr != nil {
				js.e.fail(cerr)
			}
		case ok:
			js.gpuWindows++
			js.keep(res)
			return
		default:
			js.gpuFallbacks++
		}
	}
	lts, rts := js.sides[0].tupleSize, js.sides[1].tupleSize
	pairs := js.pairs[:0]
	flush := func() {
		if len(pairs) == 0 {
			return
		}
		if js.filter == nil {
			out = append(out, pairs...)
		} else {
			for _, i := range js.filter.Keep(pairs, js.outSize) {
				out = append(out, pairs[int(i)*js.outSize:int(i+1)*js.outSize]...)
			}
		}
		pairs = pairs[:0]
	}
	for _, lt := range l {
		for _, rt := range r {
			pairs = append(pairs, lt[:lts]...)
			pairs = append(pairs, rt[:rts]...)
			if len(pairs) == cap(pairs) {
				flush()
			}
		}
	}
	flush()
	js.pairs = pairs
	js.keep(out)
}

// keep counts a window's output and queues it (or recycles an empty
// buffer).
func (js *joinStage) keep(out []byte) {
	if len(out) > 0 {
		js.windows++
		js.outPairs += uint64(len(out) / js.outSize)
		js.pending = append(js.pending, out)
	} else if out != nil {
		js.free = append(js.free, out)
	}
}

// windowTuples returns the side's tuples in panes [lo, last], stably sorted
// by position.
func (sd *joinSide) windowTuples(lo, last int64, rows bool) [][]byte {
	var ts [][]byte
	for _, pn := range sd.panes {
		if pn.pane < lo || pn.pane > last {
			continue
		}
		for o := 0; o < len(pn.data); o += sd.tupleSize {
			ts = append(ts, pn.data[o:o+sd.tupleSize])
		}
	}
	if !rows {
		slices.SortStableFunc(ts, func(a, b []byte) int {
			x, y := int64(binary.LittleEndian.Uint64(a)), int64(binary.LittleEndian.Uint64(b))
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		})
	}
	return ts
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
			if len(js.pending) == 0 {
				js.mu.Unlock()
				break
			}
			out := js.pending[0]
			js.pending = js.pending[1:]
			js.mu.Unlock()
			err = js.output(out, w)
			js.mu.Lock()
			js.free = append(js.free, out)
			js.mu.Unlock()
		}
		js.drainMu.Unlock()
		if err != nil {
			return err
		}
		js.mu.Lock()
		more := len(js.pending) > 0
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
	for _, sd := range js.sides {
		tuples += sd.tuples
		late += sd.late
	}
	return tuples, late, js.windows, js.outPairs
}
