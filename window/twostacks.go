package window

// twoStacks is a FIFO aggregator over pane states: the "two-stacks" sliding
// aggregation. Panes are pushed as they enter the window and popped, oldest
// first, as they leave it; query returns the combination (GroupState.Merge)
// of every pane held. Merge needs no inverse, so this works for every
// AggKind, and a group disappears as soon as the last pane holding it leaves.
//
// The front stack holds the oldest panes, the oldest on top; each entry keeps
// the suffix aggregate of its pane and every pane below it (the newer ones).
// The back stack holds the panes pushed since the last flip, with one running
// aggregate of them all. A query combines the front top's aggregate with the
// back aggregate; a pop from an empty front flips: it rebuilds the front's
// suffix aggregates from the back's panes. Every pane is merged once into the
// back aggregate and once into a suffix aggregate, so push, pop and query
// cost O(1) merges amortized, whatever the number of panes held.
//
// Pane states are borrowed: they must not change while held. Aggregate states
// are pooled, so that steady state allocates nothing.
//
// Float sums are combined in a different association than a left-to-right
// merge of the panes, so they may differ from one in the last bits.
type twoStacks struct {
	layout  *Layout
	front   []tsEntry     // oldest pane on top (last)
	back    []*GroupState // pushed since the last flip, oldest first
	backAgg *GroupState   // merge of back, valid when len(back) >= 2
	scratch *GroupState   // query result when both stacks hold panes
	free    []*GroupState // pooled aggregate states, reset

	// Test hooks: GroupState merges and copies done by the aggregator.
	merges, copies uint64
}

type tsEntry struct {
	pane *GroupState
	agg  *GroupState // pane merged with every pane below it; pane itself at the bottom
}

func newTwoStacks(l *Layout) *twoStacks {
	return &twoStacks{layout: l, backAgg: NewGroupState(l), scratch: NewGroupState(l)}
}

// Len is the number of panes held.
func (t *twoStacks) Len() int { return len(t.front) + len(t.back) }

// push adds p, the newest pane.
func (t *twoStacks) push(p *GroupState) {
	switch len(t.back) {
	case 0: // back[0] serves as the aggregate
	case 1:
		t.copy(t.backAgg, t.back[0])
		t.merge(t.backAgg, p)
	default:
		t.merge(t.backAgg, p)
	}
	t.back = append(t.back, p)
}

// pop removes the oldest pane and returns it.
func (t *twoStacks) pop() *GroupState {
	if n := len(t.front); n > 0 {
		e := t.front[n-1]
		t.front[n-1] = tsEntry{}
		t.front = t.front[:n-1]
		if e.agg != e.pane {
			t.put(e.agg)
		}
		return e.pane
	}
	if len(t.back) == 0 {
		panic("window: pop from an empty aggregator")
	}
	// Flip. The oldest pane leaves at once, so it needs no suffix aggregate.
	oldest := t.back[0]
	for i := len(t.back) - 1; i >= 1; i-- {
		p := t.back[i]
		agg := p
		if n := len(t.front); n > 0 {
			agg = t.get()
			t.copy(agg, t.front[n-1].agg)
			t.merge(agg, p)
		}
		t.front = append(t.front, tsEntry{pane: p, agg: agg})
	}
	clear(t.back)
	t.back = t.back[:0]
	t.backAgg.Reset()
	return oldest
}

// query returns the merge of every pane held (nil when none is). The result
// may be a held pane state or an aggregate: it is valid until the next push,
// pop or reset, and callers must not change its rows (sorting Touched is
// fine).
func (t *twoStacks) query() *GroupState {
	var back *GroupState
	switch len(t.back) {
	case 0:
	case 1:
		back = t.back[0]
	default:
		back = t.backAgg
	}
	n := len(t.front)
	switch {
	case n == 0:
		return back
	case back == nil:
		return t.front[n-1].agg
	}
	t.copy(t.scratch, t.front[n-1].agg)
	t.merge(t.scratch, back)
	return t.scratch
}

// reset drops every pane held.
func (t *twoStacks) reset() {
	for i, e := range t.front {
		if e.agg != e.pane {
			t.put(e.agg)
		}
		t.front[i] = tsEntry{}
	}
	t.front = t.front[:0]
	clear(t.back)
	t.back = t.back[:0]
	t.backAgg.Reset()
	t.scratch.Reset()
}

func (t *twoStacks) get() *GroupState {
	if n := len(t.free); n > 0 {
		st := t.free[n-1]
		t.free = t.free[:n-1]
		return st
	}
	return NewGroupState(t.layout)
}

func (t *twoStacks) put(st *GroupState) {
	st.Reset()
	t.free = append(t.free, st)
}

func (t *twoStacks) merge(dst, src *GroupState) {
	t.merges++
	dst.Merge(src)
}

func (t *twoStacks) copy(dst, src *GroupState) {
	t.copies++
	dst.CopyFrom(src)
}
