package window

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// Parts is a hashed query's result stage cut by group: n Assemblers, each
// over the groups whose key hashes to it, so that n workers can merge
// fragments, slide windows and filter rows (HAVING) at once, where one
// Assembler is one worker at a time. (LightSaber builds its windows in
// parallel the same way; Flink cuts state by key group.) Groups are cut
// rather than panes or windows because a sliding window's running state
// moves from window to window one pane at a time: window w+1 is w's plus
// a pane minus a pane, a chain that only the groups split.
//
// Each partition sees every fragment's pane, with its own groups of it
// (Split), and the same watermark, so that its panes, windows, lateness
// and sliding aggregator move exactly as one Assembler's would: a group's
// arithmetic, float rounding included, is the one Assembler's, and a
// window's rows are the union of the partitions' rows for it. What is
// left in order is cheap: linking each task's windows from the
// partitions (Assemble: by window, rows by key) and handing them on.
//
// The engine drives the partitions itself: a worker Splits the task it
// ran, each partition merges the tasks in order under a lock of its own
// (MergePart), the worker that merges a task's last partition Assembles
// it, and the result stage hands the windows on and Commits the task. The
// Stage methods do all of it in turn, on one goroutine: MergeTake and
// Flush (also the engine's Flush, at the end of the input), the
// snapshots, the counters.
type Parts struct {
	spec   Spec
	layout *Layout
	asms   []*Assembler
	subs   []*Layout
	// pools lend the partitions' split results their states (Split).
	pools []*StatePool

	// maps are the direct mappings' cuts (slotMap), read by every worker
	// splitting a task: copied on write under mapMu.
	maps  atomic.Pointer[[]*slotMap]
	mapMu sync.Mutex

	partsResult
}

// partsResult is what Parts and SessionParts keep alike: the result
// stage's counters, watermark and Complete of the tasks committed
// (Commit), in task order, and the scratch of the Stage methods, which
// run on one goroutine.
type partsResult struct {
	c        Counters
	wm       int64
	complete int64

	seqSubs []TaskResult
	seqOuts []PartOut
	seqAsm  Assembled
	out     Result
}

// newPartsResult is the state of n partitions before any task, complete
// its Complete.
func newPartsResult(n int, complete int64) partsResult {
	r := partsResult{wm: math.MinInt64, complete: complete, seqSubs: make([]TaskResult, n), seqOuts: make([]PartOut, n)}
	r.SetRows(true)
	return r
}

// SetRows says whether the windows the Stage methods emit are read (by
// default they are). Where nothing reads them, the partitions count their
// rows and copy none, and MergeTake and Flush call emit for no window:
// they only count.
func (p *partsResult) SetRows(rows bool) {
	for k := range p.seqOuts {
		p.seqOuts[k].Rows = rows
	}
}

// Commit counts a task the result stage handed on, in task order: its
// counters, windows and rows, and the watermark and Complete after it.
func (p *partsResult) Commit(a *Assembled) {
	d := &a.Delta
	c := &p.c
	c.Tuples += d.Tuples
	c.Filtered += d.Filtered
	c.Unmatched += d.Unmatched
	c.Late += d.Late
	c.Counted += d.Counted
	c.Windows += a.Windows
	c.Rows += a.RowsOut
	p.wm, p.complete = a.WM, a.Complete
}

// Watermark is the watermark of the tasks committed.
func (p *partsResult) Watermark() int64 { return p.wm }

// Complete is the committed tasks' Complete (Assembler.Complete,
// Sessions.Complete).
func (p *partsResult) Complete() int64 { return p.complete }

// Counts are the committed tasks' counters.
func (p *partsResult) Counts() *Counters { return &p.c }

// emitAssembled assembles the partitions' outputs of the Stage methods
// with assemble, commits them and hands each window to emit.
func (p *partsResult) emitAssembled(assemble func(outs []PartOut, dst *Assembled), emit func(*Result) error) error {
	a := &p.seqAsm
	assemble(p.seqOuts, a)
	p.Commit(a)
	if !a.Rows {
		return nil
	}
	if n := int(a.RowsOut); len(a.rows) < n {
		a.rows = make([]int32, n+n/4)
	}
	for i := range a.Wins {
		a.Result(i, &p.out, a.rows)
		if err := emit(&p.out); err != nil {
			return err
		}
	}
	return nil
}

// setFilters gives each of stages a filter of newKeep's (nil: none).
func setFilters[S interface {
	SetFilter(keep func(st *GroupState, group int32) bool)
}](stages []S, newKeep func() func(st *GroupState, group int32) bool) {
	for _, st := range stages {
		var keep func(st *GroupState, group int32) bool
		if newKeep != nil {
			keep = newKeep()
		}
		st.SetFilter(keep)
	}
}

// NewParts returns the n-partition stage of a hashed layout l (n >= 1).
func NewParts(spec Spec, l *Layout, n int) *Parts {
	if !l.Hashed {
		panic("window: Parts of dense groups")
	}
	// The kernels may lay groups out as they like: Split reads keys.
	l.byKey.Store(true)
	p := &Parts{spec: spec, layout: l, partsResult: newPartsResult(n, math.MinInt64)}
	for range n {
		sub := &Layout{Groups: max(1, (l.Groups+n-1)/n), Hashed: true, Kinds: l.Kinds}
		p.subs = append(p.subs, sub)
		p.pools = append(p.pools, NewStatePool(sub))
		p.asms = append(p.asms, NewAssembler(spec, sub))
	}
	return p
}

// N is the number of partitions.
func (p *Parts) N() int { return len(p.asms) }

// Layout is the kernels' layout (the sub-results' are the partitions').
func (p *Parts) Layout() *Layout { return p.layout }

// partOf is the partition of a key: the high half of its hash (the
// dictionaries' and tables' slots take the low bits), scaled to n.
func partOf(k0, k1 uint64, n int) int {
	return int(hashKey(k0, k1) >> 32 * uint64(n) >> 32)
}

// slotMap is a direct mapping's cut: every slot's partition and its slot
// in that partition's direct table of the mapping (the slots of one
// partition keep their order), and each partition's keys. A partition's
// tables of the mapping are direct tables too, under the same mapping
// number, whose keys are all known: its dictionary pins them as the one
// Assembler's would (splitDirect).
type slotMap struct {
	mapping uint32
	slots   int32
	part    []uint8
	local   []int32
	keys    [][]uint64 // per partition, 2 per slot of its table
}

// slotMapOf returns the cut of direct table st's mapping (st's Keys hold
// every slot's key), made at its first table.
func (p *Parts) slotMapOf(st *GroupState) *slotMap {
	if ms := p.maps.Load(); ms != nil {
		for _, m := range *ms {
			if m.mapping == st.direct && m.slots == st.dslots {
				return m
			}
		}
	}
	p.mapMu.Lock()
	defer p.mapMu.Unlock()
	var old []*slotMap
	if ms := p.maps.Load(); ms != nil {
		old = *ms
		for _, m := range old {
			if m.mapping == st.direct && m.slots == st.dslots {
				return m
			}
		}
	}
	n := len(p.asms)
	m := &slotMap{mapping: st.direct, slots: st.dslots, part: make([]uint8, st.dslots), local: make([]int32, st.dslots), keys: make([][]uint64, n)}
	for s := range st.dslots {
		k0, k1 := st.Keys[2*s], st.Keys[2*s+1]
		k := partOf(k0, k1, n)
		m.part[s] = uint8(k)
		m.local[s] = int32(len(m.keys[k]) / 2)
		m.keys[k] = append(m.keys[k], k0, k1)
	}
	ms := append(append([]*slotMap(nil), old...), m)
	p.maps.Store(&ms)
	return m
}

// listMapping marks a view of a direct table (Split): under no kernel's
// mapping (KeysFor 0), its groups' keys read one by one.
const listMapping = math.MaxUint32

// Split cuts task result r, which the kernels wrote over p's layout, into
// subs, one per partition, each over the partition's layout: every
// fragment of r with tuples has one in each sub, of the same pane and
// tuples, holding the partition's groups, and each sub has r's counters.
// It reads r and writes subs only: the worker that ran the task splits it,
// any number at once. subs are reused from task to task.
func (p *Parts) Split(r *TaskResult, subs []TaskResult) {
	n := len(p.asms)
	for k := range subs[:n] {
		sub := &subs[k]
		resetSub(sub, p.pools[k])
		sub.Tuples, sub.MaxTS, sub.Filtered, sub.Unmatched, sub.Late = r.Tuples, r.MaxTS, r.Filtered, r.Unmatched, r.Late
		sub.Refused, sub.RefusedAt, sub.RefusedPos = r.Refused, r.RefusedAt, r.RefusedPos
	}
	if r.Refused {
		return
	}
	var dst [maxParts]*GroupState
	for i := range r.Frags {
		f := &r.Frags[i]
		if f.Tuples == 0 {
			continue
		}
		src := f.State
		if src.layout != p.layout {
			panic(fmt.Sprintf("window: split of group states with another layout (%p, %p)", src.layout, p.layout))
		}
		if src.direct != 0 && src.keysFor == src.direct {
			m := p.slotMapOf(src)
			if p.asms[0].dict != nil {
				p.splitDirect(src, f, m, subs[:n])
				continue
			}
			// The partitions look their groups up by key: each reads the
			// table in place, its groups listed in a view.
			for k := range n {
				dst[k] = subs[k].subView(f.Pane, f.Tuples, src)
			}
			for _, s := range src.Touched {
				d := dst[m.part[s]]
				d.Touched = append(d.Touched, s)
			}
			continue
		}
		// Any other table: each partition reads it in place, its groups
		// listed in a view (each group where its key hashes).
		for k := range n {
			dst[k] = subs[k].subView(f.Pane, f.Tuples, src)
		}
		keys := src.Keys
		for _, s := range src.Touched {
			d := dst[partOf(keys[2*s], keys[2*s+1], n)]
			d.Touched = append(d.Touched, s)
		}
	}
}

// splitDirect cuts direct table src of mapping m, fragment f's, into a
// direct table of each partition's own numbering of the mapping's slots
// (slotMap), copying its rows: the partitions' dictionaries pin their
// slots and absorb such tables slot for slot, an empty pane taking the
// table's storage (absorbPinned), as one Assembler takes the kernel's.
// The copy reads the kernel's table once, in order, on the worker that
// wrote it; the partitions reading it in place instead would each read
// most of its lines, from that worker's cache, for a pane to copy rows
// into that the taking spares.
func (p *Parts) splitDirect(src *GroupState, f *Fragment, m *slotMap, subs []TaskResult) {
	var dst [maxParts]*GroupState
	for k := range subs {
		dst[k] = subs[k].subDirect(f.Pane, f.Tuples, m, k)
	}
	words, part, local, sv := src.words, m.part, m.local, src.Vals
	if 4*len(src.Touched) < int(src.dslots) {
		for _, s := range src.Touched {
			d, j := dst[part[s]], local[s]
			copyRow(d.Vals[int(j)*words:int(j+1)*words], sv[int(s)*words:int(s+1)*words])
			d.Touched = append(d.Touched, j)
		}
		return
	}
	// Most of the table is taken: read it in slot order, as one stream.
	if words == 2 {
		for s := range src.dslots {
			o := int(s) * 2
			if sv[o] == 0 {
				continue
			}
			d, j := dst[part[s]], local[s]
			dv := d.Vals[int(j)*2 : int(j)*2+2 : int(j)*2+2]
			dv[0], dv[1] = sv[o], sv[o+1]
			d.Touched = append(d.Touched, j)
		}
		return
	}
	for s := range src.dslots {
		if sv[int(s)*words] == 0 {
			continue
		}
		d, j := dst[part[s]], local[s]
		copyRow(d.Vals[int(j)*words:int(j+1)*words], sv[int(s)*words:int(s+1)*words])
		d.Touched = append(d.Touched, j)
	}
}

// subDirect adds to r a fragment of f's pane and tuples holding partition
// k's direct table of mapping m, empty.
func (r *TaskResult) subDirect(p int64, tuples uint64, m *slotMap, k int) *GroupState {
	slots := len(m.keys[k]) / 2
	st := r.spareDirectState(slots)
	if st.keysFor != m.mapping || st.dslots != int32(slots) {
		if len(st.Keys) < 2*slots {
			st.Keys = make([]uint64, 2*slots)
		}
		copy(st.Keys, m.keys[k])
		st.keysFor = m.mapping
	}
	st.direct, st.mask, st.dslots = m.mapping, 0, int32(slots)
	r.Frags = append(r.Frags, Fragment{Pane: p, Tuples: tuples, State: st})
	return st
}

// resetSub prepares sub, a partition's split of a task, for the next:
// its views let go of the tables they read (which are the kernels', not
// to be reset here), its own tables are reset; its states come from the
// partition's pool.
func resetSub(sub *TaskResult, pool *StatePool) {
	for i := range sub.Frags {
		if st := sub.Frags[i].State; st.view {
			sub.spareViews = append(sub.spareViews, dropView(st))
			sub.Frags[i].State = nil
		}
	}
	j := 0
	for _, f := range sub.Frags {
		if f.State != nil {
			sub.Frags[j] = f
			j++
		}
	}
	clear(sub.Frags[j:])
	sub.Frags = sub.Frags[:j]
	if sub.pool != pool {
		sub.SetPool(pool)
	} else {
		sub.Reset(pool.layout)
	}
}

// dropView lets view st go of the table it reads, for its next use.
func dropView(st *GroupState) *GroupState {
	st.Vals, st.Keys, st.Touched, st.mask = nil, nil, st.Touched[:0], 0
	return st
}

// subView adds a fragment of pane p and tuples to r that reads table src
// in place: a view, whose Touched the caller fills with the slots of src
// that are the partition's.
func (r *TaskResult) subView(p int64, tuples uint64, src *GroupState) *GroupState {
	var st *GroupState
	if n := len(r.spareViews); n > 0 {
		st, r.spareViews = r.spareViews[n-1], r.spareViews[:n-1]
	} else {
		st = &GroupState{layout: r.layout, words: r.layout.Words(), view: true}
	}
	st.Vals, st.Keys, st.mask, st.direct, st.keysFor, st.dslots = src.Vals, src.Keys, src.mask, src.direct, 0, src.dslots
	if st.direct != 0 {
		// A view reads a direct table's groups by their keys, one by one.
		st.direct = listMapping
	}
	r.Frags = append(r.Frags, Fragment{Pane: p, Tuples: tuples, State: st})
	return st
}

// maxParts bounds the partitions (Split's tables on the stack, a byte
// per group for its partition).
const maxParts = 64

// MaxParts is the most partitions NewParts takes.
const MaxParts = maxParts

// PartOut is what one partition emitted while merging one task (or
// flushing): its windows in window order, each with its rows in key order
// where Rows is set (a consumer reads them), else their number only. Each
// PartOut is reused from task to task; its windows are the partition's,
// the Result handed to the emit function is not kept.
type PartOut struct {
	// Rows: keep each window's rows (keys and words), not only their
	// number.
	Rows bool
	Wins []PartWindow
	Keys []uint64 // 2 per row, where Rows
	Vals []int64  // words per row, where Rows
	rows int32    // the rows recorded

	// Set by MergePart of partition 0: the task's counters (Counted and
	// Late include what the assembler counts), and the watermark and
	// Complete after it.
	Delta    Counters
	WM       int64
	Complete int64

	emit func(*Result) error // record, bound once
}

// PartWindow is a window a partition emitted: its rows are the PartOut's
// From up to To.
type PartWindow struct {
	W, Start, End int64
	From, To      int32
}

// Reset empties o: no window.
func (o *PartOut) Reset() { o.reset() }

func (o *PartOut) reset() {
	o.Wins, o.Keys, o.Vals, o.rows = o.Wins[:0], o.Keys[:0], o.Vals[:0], 0
	if o.emit == nil {
		o.emit = o.record
	}
}

// record is the emit function of a partition's assembler: the window's
// rows copied out of its state, which the next merge changes.
func (o *PartOut) record(r *Result) error {
	from := o.rows
	if o.Rows {
		st := r.State
		o.Keys = slices.Grow(o.Keys, 2*len(r.Rows))
		o.Vals = slices.Grow(o.Vals, len(r.Rows)*st.layout.Words())
		for _, g := range r.Rows {
			k0, k1 := st.Key(g)
			o.Keys = append(o.Keys, k0, k1)
			o.Vals = append(o.Vals, st.Row(g)...)
		}
	}
	o.rows += int32(len(r.Rows))
	o.Wins = append(o.Wins, PartWindow{W: r.Window, Start: r.Start, End: r.End, From: from, To: o.rows})
	return nil
}

// MergePart merges sub, partition k's split of the next task (Split), into
// partition k, recording the windows it closes in out. Callers go in task
// order per partition; different partitions may merge at once.
func (p *Parts) MergePart(k int, sub *TaskResult, out *PartOut) error {
	a := p.asms[k]
	out.reset()
	before := a.Counters
	err := a.merge(sub, out.emit, true)
	if k == 0 {
		c := a.Counters
		out.Delta = Counters{Tuples: c.Tuples - before.Tuples, Filtered: c.Filtered - before.Filtered,
			Unmatched: c.Unmatched - before.Unmatched, Late: c.Late - before.Late, Counted: c.Counted - before.Counted}
		out.WM, out.Complete = a.wm, a.Complete()
	}
	return err
}

// FlushLimit is the end of the flush's next step of at most n windows
// (n >= 1): FlushPart of every partition up to it, then Assemble, emit
// the windows before it; ok false once no window is left to flush. The
// flush goes in steps, so that the rows of every window still open (of
// a window of thousands of panes, thousands of windows) are not all
// held at once.
func (p *Parts) FlushLimit(n int64) (limit int64, ok bool) {
	a := p.asms[0] // every partition's panes are the same
	if len(a.live) == 0 {
		return 0, false
	}
	w := a.nextWindow()
	if w > math.MaxInt64-n {
		return math.MaxInt64, true
	}
	return w + n, true
}

// FlushPart emits the windows before limit that partition k holds open
// (math.MaxInt64: all of them) into out, as the end of the input closes
// them.
func (p *Parts) FlushPart(k int, limit int64, out *PartOut) error {
	a := p.asms[k]
	out.reset()
	err := a.emit(true, limit, out.emit)
	if k == 0 {
		out.Delta = Counters{}
		out.WM, out.Complete = a.wm, a.Complete()
	}
	return err
}

// Assembled is a task's windows linked from its partitions' (Assemble):
// each window once, in window order, its rows in key order where they
// were kept. Its storage is reused from task to task.
type Assembled struct {
	Wins       []PartWindow // From, To: the window's rows in Keys and Vals
	Keys       []uint64     // where the partitions kept rows
	Vals       []int64
	Rows       bool    // Keys and Vals hold the rows
	Windows    uint64  // windows with a row
	RowsOut    uint64  // their rows
	rows       []int32 // Result's rows, for the Stage methods
	Delta      Counters
	WM         int64
	Complete   int64
	layout     *Layout
	state      GroupState // the rows as a state whose slot i is row i
	heads      []int
	rowHeads   []int32
	rowEnds    []int32
	rowSources []int
	// keyOrder and keyBytes order SessionParts' string keys (nil: by key
	// bytes): a comparison of this Assembled's own, with its scratch.
	keyOrder func(a, b []byte) int
	keyBytes [32]byte
}

// AssembleRange is Assemble of the windows lo <= W <= hi of outs only,
// with tmp (one per partition) as scratch: a flush's windows, assembled
// by several goroutines at once, each a range of them.
func (p *Parts) AssembleRange(outs []PartOut, lo, hi int64, tmp []PartOut, dst *Assembled) {
	p.Assemble(cutRange(outs, lo, hi, tmp), dst)
}

// cutRange sets tmp to outs cut to their windows lo <= W <= hi (each
// out's windows in order of W) and returns it.
func cutRange(outs []PartOut, lo, hi int64, tmp []PartOut) []PartOut {
	for k := range outs {
		o := &outs[k]
		i := sort.Search(len(o.Wins), func(i int) bool { return o.Wins[i].W >= lo })
		j := i + sort.Search(len(o.Wins)-i, func(j int) bool { return o.Wins[i+j].W > hi })
		tmp[k] = PartOut{Rows: o.Rows, Wins: o.Wins[i:j], Keys: o.Keys, Vals: o.Vals, Delta: o.Delta, WM: o.WM, Complete: o.Complete}
	}
	return tmp[:len(outs)]
}

// Assemble links outs, the partitions' windows of one task (every
// partition's, in partition order), into dst: each window once, in window
// order, with the rows of every partition that emitted it merged in key
// order where the partitions kept them. It reads outs and writes dst
// only: any worker may assemble a task once its partitions are merged.
func (p *Parts) Assemble(outs []PartOut, dst *Assembled) {
	n := len(outs)
	dst.Wins, dst.Keys, dst.Vals = dst.Wins[:0], dst.Keys[:0], dst.Vals[:0]
	dst.Windows, dst.RowsOut, dst.Rows = 0, 0, outs[0].Rows
	dst.Delta, dst.WM, dst.Complete = outs[0].Delta, outs[0].WM, outs[0].Complete
	dst.layout = p.layout
	words := p.layout.Words()
	if cap(dst.heads) < n {
		dst.heads, dst.rowHeads, dst.rowEnds, dst.rowSources = make([]int, n), make([]int32, n), make([]int32, n), make([]int, n)
	}
	heads, rh, re, srcs := dst.heads[:n], dst.rowHeads[:n], dst.rowEnds[:n], dst.rowSources[:0]
	clear(heads)
	if dst.Rows {
		// Room for every partition's rows at once, not doubled towards
		// them: an end of input's flush assembles every window still open.
		rows := 0
		for k := range outs {
			rows += int(outs[k].rows)
		}
		dst.Keys = slices.Grow(dst.Keys, 2*rows)
		dst.Vals = slices.Grow(dst.Vals, rows*words)
	}
	for {
		w, any := int64(math.MaxInt64), false
		for k := range outs {
			if h := heads[k]; h < len(outs[k].Wins) && (!any || outs[k].Wins[h].W < w) {
				w, any = outs[k].Wins[h].W, true
			}
		}
		if !any {
			break
		}
		pw := PartWindow{W: w, From: int32(dst.RowsOut)}
		srcs = srcs[:0]
		rows := 0
		for k := range outs {
			h := heads[k]
			if h >= len(outs[k].Wins) || outs[k].Wins[h].W != w {
				continue
			}
			ow := &outs[k].Wins[h]
			pw.Start, pw.End = ow.Start, ow.End
			rows += int(ow.To - ow.From)
			rh[k], re[k] = ow.From, ow.To
			srcs = append(srcs, k)
			heads[k]++
		}
		if dst.Rows {
			// Merge the partitions' rows, each list in key order, by key:
			// the partitions are few, a scan of their heads per row.
			for {
				best := -1
				var b0, b1 uint64
				for _, k := range srcs {
					if rh[k] == re[k] {
						continue
					}
					ks := outs[k].Keys[2*rh[k]:]
					if best < 0 || ks[0] < b0 || ks[0] == b0 && ks[1] < b1 {
						best, b0, b1 = k, ks[0], ks[1]
					}
				}
				if best < 0 {
					break
				}
				i := int(rh[best])
				dst.Keys = append(dst.Keys, b0, b1)
				dst.Vals = append(dst.Vals, outs[best].Vals[i*words:(i+1)*words]...)
				rh[best]++
			}
		}
		dst.RowsOut += uint64(rows)
		pw.To = int32(dst.RowsOut)
		dst.Wins = append(dst.Wins, pw)
		dst.Windows++
	}
	dst.rowSources = srcs
}

// Result sets r to window i of a (assembled with Rows), valid until a is
// assembled again. Its State holds the rows only, slot j being row j;
// its Rows are rows[From:To] of the window, which Result sets to From,
// From+1, ... (the caller may reorder them): rows must hold every row of
// a.
func (a *Assembled) Result(i int, r *Result, rows []int32) {
	pw := &a.Wins[i]
	rs := rows[pw.From:pw.To]
	for j := range rs {
		rs[j] = pw.From + int32(j)
	}
	*r = Result{Window: pw.W, Start: pw.Start, End: pw.End, State: a.State(), Rows: rs}
}

// State is the state of every window of a (assembled with Rows): slot j
// is row j. It is the State of Result's windows.
func (a *Assembled) State() *GroupState {
	a.state = GroupState{layout: a.layout, words: a.layout.Words(), Vals: a.Vals, Keys: a.Keys}
	return &a.state
}

// MergeTake splits r, merges it into every partition, assembles and
// commits it, and emits its windows: the engine's steps, in turn. r's
// fragments are left as they were (their rows are copied by Split).
func (p *Parts) MergeTake(r *TaskResult, emit func(*Result) error) error {
	if r.Refused {
		return fmt.Errorf("window: merge of a task whose tuple %d (position %d) was refused", r.RefusedAt, r.RefusedPos)
	}
	p.Split(r, p.seqSubs)
	for k := range p.asms {
		if err := p.MergePart(k, &p.seqSubs[k], &p.seqOuts[k]); err != nil {
			return err
		}
	}
	return p.emitAssembled(p.Assemble, emit)
}

// FlushStep is how many windows a step of Flush emits.
const FlushStep = 64

// Flush emits every window still open: the end of the input closes them
// all.
func (p *Parts) Flush(emit func(*Result) error) error {
	for {
		limit, ok := p.FlushLimit(FlushStep)
		if !ok {
			return nil
		}
		for k := range p.asms {
			if err := p.FlushPart(k, limit, &p.seqOuts[k]); err != nil {
				return err
			}
		}
		if err := p.emitAssembled(p.Assemble, emit); err != nil {
			return err
		}
	}
}

// SetFilter is not for Parts: its partitions filter at once, each with a
// filter of its own (SetFilters).
func (p *Parts) SetFilter(keep func(st *GroupState, group int32) bool) {
	if keep != nil {
		panic("window: Parts.SetFilter: use SetFilters (one filter per partition)")
	}
	p.SetFilters(nil)
}

// SetFilters gives each partition a filter of newKeep's (HAVING, see
// Assembler.SetFilter): a filter may keep scratch of its own, and the
// partitions filter at once. nil keeps every row.
func (p *Parts) SetFilters(newKeep func() func(st *GroupState, group int32) bool) {
	setFilters(p.asms, newKeep)
}

// AppendSnapshot appends the stage's state as one Assembler of p's layout
// writes it (Assembler.AppendSnapshot), so that a snapshot restores into
// any number of partitions: each pane's groups are every partition's.
// Call it between tasks, once every task merged into every partition was
// committed.
func (p *Parts) AppendSnapshot(dst []byte) []byte {
	a0 := p.asms[0]
	le := binary.LittleEndian
	dst = a0.appendSnapshotState(dst, p.layout, &p.c)
	dst = le.AppendUint32(dst, uint32(len(a0.live)))
	for i, pa := range a0.live {
		dst = le.AppendUint64(dst, uint64(pa.pane))
		groups := 0
		for _, a := range p.asms {
			groups += len(a.live[i].state.Touched)
		}
		dst = le.AppendUint32(dst, uint32(groups))
		for _, a := range p.asms {
			st := a.live[i].state
			for _, g := range st.Touched {
				k0, k1 := st.Key(g)
				dst = le.AppendUint64(dst, k0)
				dst = le.AppendUint64(dst, k1)
				for _, w := range st.Row(g) {
					dst = le.AppendUint64(dst, uint64(w))
				}
			}
		}
	}
	return dst
}

// RestoreSnapshot replaces the stage's state by a snapshot of
// AppendSnapshot (or of one Assembler of the same spec and layout),
// returning the bytes after it: each group goes to its partition. On
// error the stage is left empty.
func (p *Parts) RestoreSnapshot(b []byte) (rest []byte, err error) {
	n := len(p.asms)
	// Read the snapshot through an Assembler of p's layout's spec: its
	// checks are the one Assembler's, and its panes are then cut.
	whole := NewAssembler(p.asms[0].spec, &Layout{Groups: p.layout.Groups, Hashed: true, Kinds: p.layout.Kinds})
	rest, err = whole.RestoreSnapshot(b)
	p.c = Counters{}
	p.wm, p.complete = math.MinInt64, math.MinInt64
	for _, a := range p.asms {
		a.clear()
	}
	if err != nil {
		return nil, err
	}
	for _, a := range p.asms {
		a.wm, a.next, a.started = whole.wm, whole.next, whole.started
	}
	for _, pa := range whole.live {
		var sts [maxParts]*GroupState
		for k, a := range p.asms[:n] {
			sts[k] = a.pane(pa.pane)
		}
		src := pa.state
		for _, g := range src.Touched {
			k0, k1 := src.Key(g)
			k := partOf(k0, k1, n)
			a, st := p.asms[k], sts[k]
			var slot int32
			if a.dict != nil {
				slot = a.dict.id(k0, k1)
				st.fitIDs()
				a.dict.hold(slot)
				st.Touched = append(st.Touched, slot)
			} else {
				slot = st.Lookup(k0, k1)
			}
			copyRow(st.Row(slot), src.Row(g))
		}
	}
	p.c = whole.Counters
	p.wm, p.complete = whole.wm, whole.Complete()
	return rest, nil
}
