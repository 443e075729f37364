package window

// runningSum is the sliding aggregator of invertible layouts (every word a
// sum: COUNT, SUM, AVG): one running state of the window, to which a pane
// is added as it enters and from which it is subtracted as it leaves, so
// that a slide by one pane costs two pane merges, whatever the number of
// panes held, and no aggregate is copied. The running state keeps its
// groups across windows, so its Touched stays in key order from one
// emitted window to the next while the groups stay the same, and sorting
// it costs one pass.
//
// Float sums drift by the rounding of each subtraction; the state is rebuilt
// from the held panes once every rebuildEvery window lengths of pops, which
// bounds the drift to what that many subtractions leave.
//
// For a hashed layout the panes and the running state are id-indexed
// (groupDict): adding and subtracting a pane touch the rows at its ids, a
// group left without tuples is cleared where it is (no table to rebuild),
// and a query lists the groups in the dictionary's key order.
//
// Pane states are borrowed, as with twoStacks: they must not change while
// held.
type runningSum struct {
	dict  *groupDict    // hashed layouts: the states are id-indexed over it
	held  []*GroupState // oldest first, from head
	head  int
	sum   *GroupState
	dirty bool // a group was emptied: DropEmpty before the next merge or query
	pops  int  // since the last rebuild
	// listed says an id-indexed sum's Touched lists its groups in key
	// order: no group came or went, and no id, since the last query.
	listed bool
	// clearPopped has pop clear an id-indexed pane's rows as it subtracts
	// them: the Assembler releases every pane it pops.
	clearPopped bool

	// Test hooks: pane merges and subtractions, and rebuilds.
	merges, subtracts, rebuilds uint64
}

// rebuildEvery is how many window lengths of pops go between rebuilds.
const rebuildEvery = 8

// newRunningSum returns an empty running sum of layout l; d, for a hashed
// layout, numbers the groups of the id-indexed panes it will hold.
func newRunningSum(l *Layout, d *groupDict) *runningSum {
	if d != nil {
		return &runningSum{dict: d, sum: newIDState(l, d)}
	}
	return &runningSum{sum: NewGroupState(l)}
}

// Len is the number of panes held.
func (r *runningSum) Len() int { return len(r.held) - r.head }

func (r *runningSum) clean() {
	if r.dirty {
		r.sum.DropEmpty()
		r.dirty = false
	}
}

// push adds p, the newest pane.
func (r *runningSum) push(p *GroupState) {
	r.merges++
	if r.dict != nil {
		if r.sum.addIDs(p) {
			r.listed = false
		}
	} else {
		r.clean()
		r.sum.Merge(p)
	}
	r.held = append(r.held, p)
}

// pop removes the oldest pane and returns it.
func (r *runningSum) pop() *GroupState {
	if r.Len() == 0 {
		panic("window: pop from an empty aggregator")
	}
	p := r.held[r.head]
	r.held[r.head] = nil
	r.head++
	if r.head == len(r.held) {
		r.held, r.head = r.held[:0], 0
	} else if r.head >= 64 && 2*r.head >= len(r.held) {
		n := copy(r.held, r.held[r.head:])
		clear(r.held[n:])
		r.held, r.head = r.held[:n], 0
	}
	r.pops++
	if r.pops >= rebuildEvery*max(r.Len(), 1) {
		r.rebuild()
		return p
	}
	r.subtracts++
	if r.dict != nil {
		if r.sum.subtractIDs(p, r.clearPopped) {
			r.listed = false
		}
	} else if r.sum.Subtract(p) {
		r.dirty = true
	}
	return p
}

// rebuild makes the running state the merge of the held panes afresh.
func (r *runningSum) rebuild() {
	r.rebuilds++
	r.clear()
	for _, p := range r.held[r.head:] {
		r.merges++
		if r.dict != nil {
			r.sum.addIDs(p)
		} else {
			r.sum.Merge(p)
		}
	}
}

// clear empties the running state.
func (r *runningSum) clear() {
	if r.dict != nil {
		// Its Touched lists the groups of the last query only.
		clear(r.sum.Vals)
		r.sum.Touched = r.sum.Touched[:0]
	} else {
		r.sum.Reset()
	}
	r.dirty, r.pops, r.listed = false, 0, false
}

// query returns the merge of every pane held (nil when none is), valid
// until the next push, pop or reset; callers must not change its rows
// (sorting Touched is fine, and is kept).
func (r *runningSum) query() *GroupState {
	if r.Len() == 0 {
		return nil
	}
	if r.dict != nil {
		if !r.listed || r.dict.changed() {
			r.sum.listIDs()
			r.listed = true
		}
		return r.sum
	}
	r.clean()
	return r.sum
}

// reset drops every pane held.
func (r *runningSum) reset() {
	clear(r.held)
	r.held, r.head = r.held[:0], 0
	r.clear()
}

// sumCarry is an id-indexed running sum across a renumbering of its
// dictionary (Assembler.repin): the panes it held and its rebuild clock,
// and its rows by key (per group its key's two words, then its row).
type sumCarry struct {
	held, pops int
	rows       []int64
}

// save returns what carry needs to put r back once its dictionary is
// renumbered.
func (r *runningSum) save() sumCarry {
	c := sumCarry{held: r.Len(), pops: r.pops}
	if c.held == 0 {
		return c
	}
	d, w, vals := r.dict, r.sum.words, r.sum.Vals
	for id := 0; id < int(d.n) && (id+1)*w <= len(vals); id++ {
		if row := vals[id*w : (id+1)*w]; row[0] != 0 {
			c.rows = append(c.rows, int64(d.keys[2*id]), int64(d.keys[2*id+1]))
			c.rows = append(c.rows, row...)
		}
	}
	return c
}

// carry puts back the running sum save saved, over the renumbered
// dictionary: it holds live's first c.held panes again, and its rows are
// at their keys' new ids.
func (r *runningSum) carry(c sumCarry, live []paneAcc) {
	r.reset()
	for _, pa := range live[:c.held] {
		r.held = append(r.held, pa.state)
	}
	r.sum.fitIDs()
	w := r.sum.words
	for o := 0; o < len(c.rows); o += 2 + w {
		id, _ := r.dict.find(uint64(c.rows[o]), uint64(c.rows[o+1]))
		if id < 0 {
			panic("window: a running sum's group that no pane holds")
		}
		copy(r.sum.Vals[int(id)*w:], c.rows[o+2:o+2+w])
	}
	r.pops = c.pops
}
