package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// WindowJoin is the operator of a window join (query.WindowJoin): it files
// each side's tuples, in stream order, into panes, and once both
// watermarks have passed a window's end joins the window's left and right
// tuples pair by pair, the predicate evaluated vectorised over chunks of
// pairs (Filter), or hands the window to a PairJoiner (the GPU's join
// program), which returns the same pairs in the same order. Each joined
// window's output waits in a queue (Next) in window order; its buffer comes
// back through Recycle.
//
// A WindowJoin is not safe for concurrent use: its caller (the engine's
// join stage) holds a lock around every call and decides which goroutine
// joins and which hands the output on.
type WindowJoin struct {
	j       *query.WindowJoin
	spec    window.Spec
	lowest  int64 // spec.LowestPane(): a tuple of a pane below it is refused
	rows    bool
	outSize int
	filter  *Filter    // nil: every pair
	pj      PairJoiner // nil: the pairs are computed here

	sides    [2]joinSide
	next     int64 // windows before next were joined
	started  bool
	pairs    []byte // a chunk of candidate pairs
	pending  [][]byte
	free     [][]byte
	windows  uint64
	outPairs uint64
	// pjWindows counts the windows whose pairs the PairJoiner computed;
	// pjFallbacks the windows it refused (too many pairs).
	pjWindows, pjFallbacks uint64
}

// PairJoiner computes a window's pairs elsewhere (the GPU's join program).
type PairJoiner interface {
	// Join appends to out the pairs of the window whose left tuples are
	// left and right tuples right, in WindowJoin's order (left tuples
	// outer, right inner, pairs that fail WHERE left out), and returns
	// it. ok false: the pairs do not fit; out is returned unchanged and
	// the WindowJoin joins the window itself.
	Join(left, right [][]byte, out []byte) (res []byte, ok bool, err error)
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

// NewWindowJoin validates j and compiles its WHERE.
func NewWindowJoin(j *query.WindowJoin) (*WindowJoin, error) {
	if err := j.Validate(); err != nil {
		return nil, err
	}
	spec, err := window.NewSpec(j.Window)
	if err != nil {
		return nil, err
	}
	wj := &WindowJoin{
		j: j, spec: spec, lowest: spec.LowestPane(), rows: j.Window.Type == query.Rows,
		outSize: j.Left.TupleSize + j.Right.TupleSize,
	}
	if j.Where != nil {
		if wj.filter, err = NewFilter(j.Where, j.OutputSchemaUnchecked()); err != nil {
			return nil, fmt.Errorf("join %q: %w", j.Name, err)
		}
	}
	wj.pairs = make([]byte, 0, FilterChunk*wj.outSize)
	for i, s := range []*query.Schema{j.Left, j.Right} {
		wj.sides[i] = joinSide{tupleSize: s.TupleSize, wm: math.MinInt64}
	}
	return wj, nil
}

// UsePairJoiner makes pj compute the pairs of every window joined from now
// on (nil: the WindowJoin computes them).
func (wj *WindowJoin) UsePairJoiner(pj PairJoiner) { wj.pj = pj }

// Refused is a tuple Add refused: its first window would start below
// math.MinInt64.
type Refused struct {
	Tuple uint64 // its index in its side's stream
	Pos   int64  // its position (event time, or its index in a row window)
}

// Add files side's tuples (0 left, 1 right), which follow the ones added
// before in stream order. It stops at a tuple whose first window would
// start below math.MinInt64 and returns it with ok false; the tuples before
// it are filed. Tuples behind the side's watermark by more than a window's
// reach are counted late and dropped. Add joins nothing: JoinClosed does.
func (wj *WindowJoin) Add(side int, tuples []byte) (r Refused, ok bool) {
	sd := &wj.sides[side]
	ts := sd.tupleSize
	for o := 0; o+ts <= len(tuples); o += ts {
		pos := sd.index
		if !wj.rows {
			pos = int64(binary.LittleEndian.Uint64(tuples[o:]))
		}
		p := wj.spec.PaneOf(pos)
		if p < wj.lowest {
			return Refused{Tuple: uint64(sd.index), Pos: pos}, false
		}
		sd.index++
		sd.tuples++
		prev := sd.wm
		sd.wm = max(sd.wm, pos)
		if prev > wj.spec.Open(p) {
			sd.late++
			continue
		}
		pn := sd.pane(p)
		pn.data = append(pn.data, tuples[o:o+ts]...)
	}
	return Refused{}, true
}

// Finish marks side's input ended and reports whether both are.
func (wj *WindowJoin) Finish(side int) (all bool) {
	wj.sides[side].done = true
	return wj.sides[0].done && wj.sides[1].done
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

// JoinClosed joins every window whose end both watermarks passed (all of
// them when all is set), in window order, queueing each window's output.
// When the PairJoiner fails on a window, the window is joined here, the
// PairJoiner is dropped (this WindowJoin joins every later window itself),
// and JoinClosed returns the window and the error once it has joined the
// rest: the caller fails its run and closes the PairJoiner.
func (wj *WindowJoin) JoinClosed(all bool) (failed int64, err error) {
	s := wj.spec
	limit := int64(math.MaxInt64)
	for i := range wj.sides {
		if !wj.sides[i].done {
			limit = min(limit, wj.sides[i].wm)
		}
	}
	if limit == math.MinInt64 {
		return 0, nil // closes nothing
	}
	for {
		first, any := int64(math.MaxInt64), false
		for i := range wj.sides {
			if ps := wj.sides[i].panes; len(ps) > 0 {
				first, any = min(first, s.FirstWindow(ps[0].pane)), true
			}
		}
		if !any {
			return failed, err
		}
		w := first
		if wj.started && wj.next > w {
			w = wj.next
		}
		if !all && !s.Closed(w, limit) {
			return failed, err
		}
		if werr := wj.joinWindow(w); werr != nil && err == nil {
			failed, err = w, werr
		}
		// Every window up to w is done; w+1 saturates (w == MaxInt64
		// holds the last pane, removed below).
		wj.next, wj.started = w+1, true
		if w == math.MaxInt64 {
			wj.next = w
		}
		for i := range wj.sides {
			sd := &wj.sides[i]
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
// (or the same pairs computed by the PairJoiner). It returns the
// PairJoiner's error, having dropped it and joined the window here.
func (wj *WindowJoin) joinWindow(w int64) error {
	lo, last := wj.spec.PaneSpan(w)
	l := wj.sides[0].windowTuples(lo, last, wj.rows)
	r := wj.sides[1].windowTuples(lo, last, wj.rows)
	if len(l) == 0 || len(r) == 0 {
		return nil
	}
	var out []byte
	if n := len(wj.free); n > 0 {
		out, wj.free = wj.free[n-1][:0], wj.free[:n-1]
	}
	var pjErr error
	if wj.pj != nil {
		res, ok, err := wj.pj.Join(l, r, out)
		switch {
		case err != nil:
			// The caller fails the run; the window is joined here
			// meanwhile.
			pjErr, wj.pj = err, nil
		case ok:
			wj.pjWindows++
			wj.keep(res)
			return nil
		default:
			wj.pjFallbacks++
		}
	}
	lts, rts := wj.sides[0].tupleSize, wj.sides[1].tupleSize
	pairs := wj.pairs[:0]
	flush := func() {
		if len(pairs) == 0 {
			return
		}
		if wj.filter == nil {
			out = append(out, pairs...)
		} else {
			for _, i := range wj.filter.Keep(pairs, wj.outSize) {
				out = append(out, pairs[int(i)*wj.outSize:int(i+1)*wj.outSize]...)
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
	wj.pairs = pairs
	wj.keep(out)
	return pjErr
}

// keep counts a window's output and queues it (or recycles an empty
// buffer).
func (wj *WindowJoin) keep(out []byte) {
	if len(out) > 0 {
		wj.windows++
		wj.outPairs += uint64(len(out) / wj.outSize)
		wj.pending = append(wj.pending, out)
	} else if out != nil {
		wj.free = append(wj.free, out)
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

// Pending is how many joined windows' outputs wait in the queue.
func (wj *WindowJoin) Pending() int { return len(wj.pending) }

// Next takes the oldest joined window's output (its pairs, each the left
// tuple's bytes then the right one's) off the queue; ok false when none
// waits. Hand the buffer back with Recycle once it is used.
func (wj *WindowJoin) Next() (out []byte, ok bool) {
	if len(wj.pending) == 0 {
		return nil, false
	}
	out = wj.pending[0]
	wj.pending = wj.pending[1:]
	return out, true
}

// Recycle takes back a buffer Next returned, for a later window's output.
func (wj *WindowJoin) Recycle(out []byte) { wj.free = append(wj.free, out) }

// WindowJoinStats are a WindowJoin's counters, both inputs together.
type WindowJoinStats struct {
	Tuples  uint64 // tuples added
	Late    uint64 // of them, dropped as late
	Windows uint64 // windows with at least one pair
	Pairs   uint64 // output pairs
	// PairJoined counts the windows whose pairs the PairJoiner computed,
	// PairFallbacks the ones it refused (too many pairs), joined here.
	PairJoined, PairFallbacks uint64
}

// Stats returns the counters.
func (wj *WindowJoin) Stats() WindowJoinStats {
	st := WindowJoinStats{Windows: wj.windows, Pairs: wj.outPairs, PairJoined: wj.pjWindows, PairFallbacks: wj.pjFallbacks}
	for _, sd := range wj.sides {
		st.Tuples += sd.tuples
		st.Late += sd.late
	}
	return st
}
