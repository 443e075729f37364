package gpu

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/saber-hx/saber-hx/window"
)

// backend is the device side of a program: it runs one task's kernels on a
// slot and hands back their output in the device format (format.go). The
// program around it (this file) is the host code both devices share.
type backend interface {
	// start begins t on slot s and returns without waiting. t.data stays
	// valid until finish(s) returns.
	start(s int, t *task) error
	// finish waits for slot s's task and returns its output: an
	// aggregation's words (aggOutWords(t.npanes, e) of them, where e is
	// the entries its hashed groups claimed, 0 for dense groups), or a
	// selection's counters and its output tuples. The slices are valid
	// until the slot's next start.
	finish(s int) (words []uint64, out []byte, err error)
	// close waits for every slot's task and frees everything.
	close() error
}

// task is one submitted task, as the kernels see it.
type task struct {
	data   []byte
	n      int
	first  uint64
	base   int64 // aggregation: the first pane of the output
	npanes int64 // aggregation: panes in the output
	lastTS int64 // selection: the event time of the last tuple
	// cpu: the task is not launched: none of its panes is one the device
	// computes exactly (near the int64 edges, see exactPanes); Wait says
	// ok false and the CPU kernel runs it.
	cpu bool
	// Hashed groups: the slots of the task's table (a power of two) and
	// the most entries its groups can claim.
	slots, entries int64
}

// Limits of a program's output buffers.
const (
	// maxOutBytes bounds one slot's aggregation output: the pane range of
	// a task is cut to what fits (and the task falls back to the CPU where
	// its panes do not fit).
	maxOutBytes = 32 << 20
	// minSlack is the panes added before and after the range of a task's
	// first and last tuples, for out-of-order tuples (range windows).
	minSlack = 2
	// maxTableSlots bounds a task's table of hashed groups. A task of n
	// tuples gets the power of two at or above 2n (its groups, at most
	// one per counted tuple, never fill it) up to this; a task with more
	// distinct groups than slots falls back to the CPU.
	maxTableSlots = 1 << 22
)

// Every program is an Unpacker (Wait in two halves).
var _ Unpacker = (*program)(nil)

// program is the host side of a Program, shared by both devices.
type program struct {
	sh       *shape
	be       backend
	slots    []slot
	maxPanes int64
	// exact: the panes [exactLo, exactHi] whose arithmetic the device does
	// without wrapping (exactPanes); a task's output covers only those.
	exact            bool
	exactLo, exactHi int64
	maxSlots         int64                  // hashed groups: the largest table (a power of two)
	slack            func(span int64) int64 // panes of slack on each side of a range window's span
	closed           bool
	onClose          func() // tells the device the program is gone
	// onOutput, where set (by tests), sees every task's device output
	// before it is unpacked.
	onOutput func(s int, t *task, words []uint64, out []byte)
}

type slot struct {
	busy bool
	// finished: Finish has waited for the task; its output (words, out,
	// valid until the slot's next start) waits for Unpack.
	finished bool
	words    []uint64
	out      []byte
	t        task
	panes    []order // unpack scratch
	rows     []order
	// Hashed groups' unpack scratch: the panes with a fragment, by
	// offset, and their states.
	present []int64
	states  []*window.GroupState
	tuples  []uint64
}

// order is an index (of a first tuple) and what it orders.
type order struct {
	first uint64
	i     int
}

func newProgram(sh *shape, depth int, be backend) *program {
	pr := &program{sh: sh, be: be, slots: make([]slot, depth), slack: defaultSlack, maxSlots: maxTableSlots}
	if sh.agg {
		// Hashed groups count as one group per pane here (their entries
		// are sized by the task's tuples).
		perPane := 1 + int64(max(sh.groups, 1))*int64(sh.rowWords())
		pr.maxPanes = max(1, (maxOutBytes/8-hdrWords)/perPane)
		pr.exactLo, pr.exactHi, pr.exact = exactPanes(sh.spec)
		if sh.spec.Delay != 0 {
			// The device seals a pane at the end of its first window
			// (kernels.cu's seal_of), judged per tuple against the task's
			// own watermark: a watermark delay cannot be folded into its
			// parameters from the host. No pane is exact, so every task
			// with tuples runs on the CPU (Wait's ok false).
			pr.exact = false
		}
	}
	return pr
}

// exactPanes returns the panes [lo, hi] (ok false: none) for which the
// device's window arithmetic, which wraps like Go's int64 (kernels.cu's
// seal_of: (floor_div(p*pane - size, slide) + 1)*slide + size), equals the
// CPU kernels' exact one (window.Spec.Open, saturated): those where
// p*pane - size does not go below MinInt64 and the end of the pane's first
// window is an int64. Near either end of int64 the device would wrap where
// the CPU saturates (or refuses the tuple): a task's output covers only
// these panes, so that a tuple outside them is outside the output and its
// task runs on the CPU (Wait's ok false), and the GPU's results equal the
// CPU's for every int64 position.
func exactPanes(spec window.Spec) (lo, hi int64, ok bool) {
	// p*pane >= MinInt64 + size: p >= ceil((MinInt64+size)/pane).
	lo = -window.FloorDiv(-(math.MinInt64 + spec.Size), spec.Pane)
	// The last window whose end is an int64, and the last pane whose first
	// window is at or before it (windows overlap or touch: slide <= size).
	top := window.FloorDiv(math.MaxInt64-spec.Size, spec.Slide)
	hi = (top*spec.Slide+spec.Size)/spec.Pane - 1
	return lo, hi, lo <= hi
}

// defaultSlack is minSlack panes plus an eighth of the span.
func defaultSlack(span int64) int64 { return minSlack + span/8 }

func (pr *program) Depth() int { return len(pr.slots) }

func (pr *program) slot(s int) (*slot, error) {
	if pr.closed {
		return nil, errors.New("gpu: program is closed")
	}
	if s < 0 || s >= len(pr.slots) {
		return nil, fmt.Errorf("gpu: slot %d out of range [0, %d)", s, len(pr.slots))
	}
	return &pr.slots[s], nil
}

func (pr *program) Submit(s int, data []byte, first uint64) error {
	sl, err := pr.slot(s)
	if err != nil {
		return err
	}
	if sl.busy {
		return fmt.Errorf("gpu: query %q: slot %d is busy (Wait for it first)", pr.sh.name, s)
	}
	ts := pr.sh.tupleSize
	if len(data)%ts != 0 {
		return fmt.Errorf("gpu: query %q: task of %d bytes is not whole %d-byte tuples", pr.sh.name, len(data), ts)
	}
	t := task{data: data, n: len(data) / ts, first: first, lastTS: math.MinInt64}
	if pr.sh.agg {
		t.base, t.npanes = pr.paneRange(data, first)
		t.cpu = t.n > 0 && t.npanes == 0
		if pr.sh.hashed {
			t.slots = 16
			for t.slots < 2*int64(t.n) && t.slots < pr.maxSlots {
				t.slots <<= 1
			}
			t.entries = min(int64(t.n), t.slots)
		}
	} else if t.n > 0 {
		t.lastTS = int64(binary.LittleEndian.Uint64(data[(t.n-1)*ts:]))
	}
	sl.t = t
	if t.cpu {
		sl.busy = true
		return nil
	}
	if err := pr.be.start(s, &sl.t); err != nil {
		sl.t = task{}
		return fmt.Errorf("gpu: query %q: slot %d: %w", pr.sh.name, s, err)
	}
	sl.busy = true
	return nil
}

// paneRange chooses the panes [base, base+npanes) that a task's output
// covers. A ROWS window's positions are the stream indexes first..first+n-1:
// exactly their panes. A range window's event times are roughly ordered:
// the panes of the first and the last tuple, widened by slack on each side
// for out-of-order tuples, cut to maxPanes. The range is then cut to the
// panes the device computes exactly (exactPanes), so that it never wraps
// around the ends of int64; it may come out empty (npanes 0), and a task
// with tuples then runs on the CPU.
func (pr *program) paneRange(data []byte, first uint64) (base, npanes int64) {
	ts := pr.sh.tupleSize
	n := len(data) / ts
	if n == 0 {
		return 0, 0
	}
	spec := pr.sh.spec
	var lo, hi, slack int64
	if pr.sh.rows {
		lo, hi = spec.PaneOf(int64(first)), spec.PaneOf(int64(first)+int64(n-1))
	} else {
		lo = spec.PaneOf(int64(binary.LittleEndian.Uint64(data)))
		hi = spec.PaneOf(int64(binary.LittleEndian.Uint64(data[(n-1)*ts:])))
		if hi < lo {
			lo, hi = hi, lo
		}
	}
	// The panes wanted, [a, b], saturated at the ends of int64.
	var a, b int64
	d := uint64(hi) - uint64(lo) // hi >= lo: exact, also where hi-lo overflows int64
	if d >= uint64(pr.maxPanes) {
		a, b = lo, satAdd(lo, pr.maxPanes-1)
	} else {
		span := int64(d) + 1
		if !pr.sh.rows {
			slack = pr.slack(span)
		}
		a = satAdd(lo, -slack)
		b = satAdd(a, min(span+2*slack, pr.maxPanes)-1)
	}
	if !pr.exact {
		return 0, 0
	}
	a, b = max(a, pr.exactLo), min(b, pr.exactHi)
	if a > b {
		return 0, 0
	}
	return a, b - a + 1
}

// satAdd is a+b (|b| < 2^62), saturated at the ends of int64.
func satAdd(a, b int64) int64 {
	switch c := a + b; {
	case b > 0 && c < a:
		return math.MaxInt64
	case b < 0 && c > a:
		return math.MinInt64
	default:
		return c
	}
}

// Wait is Finish then Unpack.
func (pr *program) Wait(s int, r *window.TaskResult) (bool, error) {
	if err := pr.Finish(s); err != nil {
		return false, err
	}
	return pr.Unpack(s, r)
}

// Finish blocks until slot s's task is done on the device and keeps its
// output in the slot for Unpack(s); the slot stays busy until then. An
// error frees the slot.
func (pr *program) Finish(s int) error {
	sl, err := pr.slot(s)
	if err != nil {
		return err
	}
	if !sl.busy || sl.finished {
		return fmt.Errorf("gpu: query %q: Finish on slot %d, which has no task in flight", pr.sh.name, s)
	}
	if sl.t.cpu {
		sl.finished = true
		return nil
	}
	words, out, err := pr.be.finish(s)
	if err != nil {
		sl.busy, sl.t = false, task{}
		return fmt.Errorf("gpu: query %q: slot %d: %w", pr.sh.name, s, err)
	}
	sl.finished, sl.words, sl.out = true, words, out
	return nil
}

// Unpack fills r from slot s's output, which Finish(s) kept, and frees
// the slot; ok as Wait's. It is host code on the slot's own buffers: it
// may run on another goroutine than the one that calls Submit, Finish and
// Unpack on the program's other slots, at the same time (the calls on
// slot s itself one after another, and none concurrent with Close).
func (pr *program) Unpack(s int, r *window.TaskResult) (bool, error) {
	sl, err := pr.slot(s)
	if err != nil {
		return false, err
	}
	if !sl.busy || !sl.finished {
		return false, fmt.Errorf("gpu: query %q: Unpack on slot %d, which has no finished task", pr.sh.name, s)
	}
	t, words, out := sl.t, sl.words, sl.out
	defer func() { sl.busy, sl.finished, sl.words, sl.out, sl.t = false, false, nil, nil, task{} }()
	if t.cpu {
		return false, nil
	}
	if pr.onOutput != nil {
		pr.onOutput(s, &t, words, out)
	}
	switch {
	case !pr.sh.agg:
		return pr.unpackSelection(&t, words, out, r), nil
	case pr.sh.hashed:
		return sl.unpackHashed(pr.sh, &t, words, r), nil
	}
	return sl.unpackAggregation(pr.sh, &t, words, r), nil
}

func (pr *program) Close() error {
	if pr.closed {
		return nil
	}
	pr.closed = true
	for i := range pr.slots {
		pr.slots[i] = slot{}
	}
	err := pr.be.close()
	if pr.onClose != nil {
		pr.onClose()
	}
	return err
}

// unpackSelection appends a selection's output tuples to r.Out and counts
// the task as kernels.statelessKernel does.
func (pr *program) unpackSelection(t *task, ctr []uint64, out []byte, r *window.TaskResult) bool {
	kept := ctr[selCount]
	if kept > uint64(t.n) || uint64(len(out)) != kept*uint64(pr.sh.outSize) {
		return false // cannot happen; refuse rather than emit garbage
	}
	r.Out = append(r.Out, out...)
	r.Tuples += uint64(t.n)
	r.Filtered += uint64(t.n) - kept
	if t.n > 0 {
		r.MaxTS = max(r.MaxTS, t.lastTS)
	}
	return true
}

// unpackAggregation turns an aggregation's output into r's fragments, as
// the CPU kernels build them: one fragment per pane that a tuple passing
// WHERE and the join fell into, in the order of their first such tuples
// (kernels' paneCursor adds a fragment when a tuple enters a pane the task
// has not seen, late or not); in each, the rows of the groups that counted
// a tuple, listed in Touched in the order of their first counted tuples.
// It returns false where a tuple's pane was outside the output.
func (sl *slot) unpackAggregation(sh *shape, t *task, out []uint64, r *window.TaskResult) bool {
	hdr := out[:hdrWords]
	if hdr[hdrOutside] != 0 {
		return false
	}
	np := int(t.npanes)
	firsts := out[hdrWords : hdrWords+np]
	rows := out[hdrWords+np:]
	sl.panes = sl.panes[:0]
	for j, f := range firsts {
		if f != noIndex {
			sl.panes = append(sl.panes, order{f, j})
		}
	}
	slices.SortFunc(sl.panes, byFirst)
	G, R := sh.groups, sh.rowWords()
	for _, po := range sl.panes {
		pane := t.base + int64(po.i)
		st := r.Fragment(pane)
		prow := rows[po.i*G*R : (po.i+1)*G*R]
		sl.rows = sl.rows[:0]
		for g := 0; g < G; g++ {
			if prow[g*R] != 0 {
				sl.rows = append(sl.rows, order{prow[g*R+R-1], g})
			}
		}
		slices.SortFunc(sl.rows, byFirst)
		var tuples uint64
		for _, ro := range sl.rows {
			src := prow[ro.i*R : ro.i*R+R]
			dst := st.Row(int32(ro.i))
			dst[0] = int64(src[0])
			for w, a := range sh.aggs {
				v := src[1+w]
				if a.kind != window.AggAdd {
					v ^= signBit
				}
				dst[1+w] = int64(v)
			}
			st.Touched = append(st.Touched, int32(ro.i))
			tuples += src[0]
		}
		if tuples > 0 {
			r.AddTuples(pane, tuples)
		}
	}
	r.Count(uint64(t.n), unbias(hdr[hdrMaxPos]), hdr[hdrFiltered], hdr[hdrUnmatched], hdr[hdrLate])
	return true
}

// unpackHashed turns the output of an aggregation with hashed groups into
// r's fragments. The CPU kernel creates a pane's state (r.Fragment) at the
// pane's first tuple and inserts a group into it (GroupState.Lookup) at
// the group's first counted tuple; both can allocate or grow tables, and a
// new table's size depends on the largest grown so far (Layout's shared
// high-water mark). Replaying the same calls in the same order, panes and
// groups merged by first tuple (a pane before a group of the same tuple),
// gives the same states: the same Touched order and slot positions. It
// returns false where a tuple's pane was outside the output, or a group
// found no slot in the task's table.
func (sl *slot) unpackHashed(sh *shape, t *task, out []uint64, r *window.TaskResult) bool {
	hdr := out[:hdrWords]
	if hdr[hdrOutside] != 0 || hdr[hdrOverflow] != 0 {
		return false
	}
	np := int(t.npanes)
	ew := sh.entryWords()
	ne := hdr[hdrEntries]
	if ne > uint64(t.entries) || uint64(len(out)) != uint64(hdrWords+np)+ne*uint64(ew) {
		return false // cannot happen; refuse rather than emit garbage
	}
	firsts := out[hdrWords : hdrWords+np]
	entries := out[hdrWords+np:]
	sl.panes, sl.present = sl.panes[:0], sl.present[:0]
	for j, f := range firsts {
		if f != noIndex {
			sl.panes = append(sl.panes, order{f, len(sl.present)})
			sl.present = append(sl.present, int64(j))
		}
	}
	slices.SortFunc(sl.panes, byFirst)
	sl.rows = sl.rows[:0]
	R := sh.rowWords()
	for e := 0; e < int(ne); e++ {
		sl.rows = append(sl.rows, order{entries[e*ew+ew-1], e})
	}
	slices.SortFunc(sl.rows, byFirst)
	sl.states = append(sl.states[:0], make([]*window.GroupState, len(sl.present))...)
	sl.tuples = append(sl.tuples[:0], make([]uint64, len(sl.present))...)
	pi, gi := 0, 0
	for pi < len(sl.panes) || gi < len(sl.rows) {
		if pi < len(sl.panes) && (gi == len(sl.rows) || sl.panes[pi].first <= sl.rows[gi].first) {
			po := sl.panes[pi]
			sl.states[po.i] = r.Fragment(t.base + sl.present[po.i])
			pi++
			continue
		}
		en := entries[sl.rows[gi].i*ew : (sl.rows[gi].i+1)*ew]
		gi++
		p, found := slices.BinarySearch(sl.present, int64(en[0]))
		if !found || sl.states[p] == nil || en[3] == 0 {
			return false // cannot happen: a group's pane has a first tuple before it
		}
		st := sl.states[p]
		row := st.Row(st.Lookup(en[1], en[2]))
		src := en[3 : 3+R]
		row[0] = int64(src[0]) // before the next Lookup: a count of 0 is an empty slot
		for w, a := range sh.aggs {
			v := src[1+w]
			if a.kind != window.AggAdd {
				v ^= signBit
			}
			row[1+w] = int64(v)
		}
		sl.tuples[p] += src[0]
	}
	for i, n := range sl.tuples {
		if n > 0 {
			r.AddTuples(t.base+sl.present[i], n)
		}
	}
	r.Count(uint64(t.n), unbias(hdr[hdrMaxPos]), hdr[hdrFiltered], hdr[hdrUnmatched], hdr[hdrLate])
	return true
}

func byFirst(a, b order) int { return cmp.Compare(a.first, b.first) }
