package window

import "fmt"

// Pinned ids: where the kernel makes direct tables (a dense index of small
// integer key parts: TaskResult.DirectFragment), the first such table the
// assembler sees numbers the dictionary, if the dictionary is still empty
// and the table mostly full: slot s of its mapping becomes id s, for good.
// A fragment of that mapping is then absorbed slot for slot: its rows lie
// where the pane's do, no id is looked up or counted, and an empty pane may
// simply take the fragment's storage (absorbPinned). Tables of another
// mapping and probed tables go on through the dictionary as before; they
// find a pinned key at its pinned id. A dictionary that numbered groups
// before any table could pin (first tables too sparse, or a restored
// snapshot) is renumbered once the mapping's keys are mostly live
// (Assembler.repin).

// pinnedRef is the refs of a pinned id: never dropped to 0, since its pane
// holds are not counted.
const pinnedRef = 1 << 30

// tryPin pins src's mapping where the dictionary is empty and src, a
// direct table whose Keys hold every slot's key, holds at least half of
// its slots: the pinned ids' rows are in every id-indexed state and in
// the key order, held or not, so a sparse mapping would cost more than it
// saves.
func (d *groupDict) tryPin(src *GroupState) {
	n := int(src.dslots)
	if d.n != 0 || n == 0 || 2*len(src.Touched) < n || len(src.Keys) < 2*n {
		return
	}
	d.pinMapping(src)
}

// pinMapping pins src's mapping in the empty dictionary: slot s of it is
// id s, for good.
func (d *groupDict) pinMapping(src *GroupState) {
	n := int(src.dslots)
	slots := len(d.table)
	for slots < 2*n+2 {
		slots *= 2
	}
	if slots > len(d.table) {
		d.resize(slots)
	}
	keys := src.Keys[:2*n]
	for s := range int32(n) {
		d.keys[2*s], d.keys[2*s+1] = keys[2*s], keys[2*s+1]
		d.refs[s] = pinnedRef
		d.place(s)
		d.fresh = append(d.fresh, s)
	}
	d.n, d.npin, d.pin = int32(n), int32(n), src.direct
}

// repin pins the mapping of the first direct table of r's fragments in a
// dictionary that numbers groups already, so that it was not pinned when
// its groups came: the first tables were too sparse (tasks smaller than a
// pane hold a part of its groups each), or the assembler was restored
// from a snapshot, which numbers the groups in the snapshot's order. Once
// at least half of the mapping's keys are live groups (where they are
// not, checked again after 16 merges, then 32, up to 4096), the assembler
// goes through its own snapshot: cleared, the mapping pinned, and
// restored, every live group renumbered (the mapping's keys to their
// slots). It costs a snapshot of the open panes, once; it runs between
// two merges, as a restore does.
func (a *Assembler) repin(r *TaskResult) {
	d := a.dict
	var src *GroupState
	for i := range r.Frags {
		if st := r.Frags[i].State; st.direct != 0 && st.KeysFor() == st.direct {
			src = st
			break
		}
	}
	if src == nil {
		return
	}
	n := int(src.dslots)
	live := int(d.n) - len(d.reuse) - len(d.gone)
	if n == 0 || len(src.Keys) < 2*n || 2*live < n {
		return
	}
	if d.repinWait > 0 {
		d.repinWait--
		return
	}
	held := 0
	for s := range n {
		if id, _ := d.find(src.Keys[2*s], src.Keys[2*s+1]); id >= 0 {
			held++
		}
	}
	if 2*held < n {
		// Many live groups lie outside the mapping (another mapping's,
		// or probed): look again later, less often each time.
		d.repinBackoff = min(max(2*d.repinBackoff, 16), 4096)
		d.repinWait = d.repinBackoff
		return
	}
	// The running sum is carried over as it is, not rebuilt from the
	// panes as a restore does: its float sums stay bit for bit those of
	// the additions and subtractions so far.
	var sum sumCarry
	if a.sum != nil {
		sum = a.sum.save()
	}
	if _, err := a.restore(a.AppendSnapshot(nil), src); err != nil {
		panic(fmt.Sprintf("window: repin: the assembler's own snapshot: %v", err))
	}
	if a.sum != nil {
		a.sum.carry(sum, a.live)
	}
	a.repins++
}

// absorbPinned is absorb for a direct table src of the pinned mapping: its
// slot s is id s. With take set, an empty g takes src's storage (src gets
// g's, zeroed, of at least the slots the kernel needs), so that the
// fragment's rows are not copied at all.
func (g *GroupState) absorbPinned(src *GroupState, take bool) {
	words, n := g.words, int(g.ids.npin)
	if take && len(g.Touched) == 0 && !g.zeroed && len(g.Vals) >= n*words && len(src.Vals) >= n*words {
		g.Vals, src.Vals = src.Vals, g.Vals
		if cap(g.Touched) >= len(src.Touched) {
			g.Touched, src.Touched = src.Touched, g.Touched
		} else {
			// A new pane: it takes the task's list too, and the task gets
			// one as large (the kernel would grow a smaller one again).
			g.Touched, src.Touched = src.Touched, g.ids.lists.take(0, cap(src.Touched))
		}
		return
	}
	if len(g.Vals) < n*words {
		g.fitIDs()
	}
	// An invertible layout: every word a sum.
	if m := len(g.Touched) + len(src.Touched); m > cap(g.Touched) {
		g.Touched = g.growTouched(m)
	}
	slots := src.Touched
	if 4*len(slots) >= n {
		// Most of the table is taken: read it in slot order, as one stream.
		d := g.ids
		d.slots = occupied(d.slots, src.Vals, n, words)
		slots = d.slots
	}
	sv, dv := src.Vals, g.Vals
	if words == 2 {
		float := g.layout.Kinds[0] == AggAddF
		for _, s := range slots {
			o := int(s) * 2
			sr, dr := sv[o:o+2:o+2], dv[o:o+2:o+2]
			switch {
			case dr[0] == 0:
				g.Touched = append(g.Touched, s)
				dr[0], dr[1] = sr[0], sr[1]
			case float:
				dr[0] += sr[0]
				dr[1] = AggAddF.combineFloat(dr[1], sr[1])
			default:
				dr[0] += sr[0]
				dr[1] += sr[1]
			}
		}
		return
	}
	kinds := g.layout.Kinds
	for _, s := range slots {
		o := int(s) * words
		sr, dr := sv[o:o+words:o+words], dv[o:o+words:o+words]
		if dr[0] == 0 {
			g.Touched = append(g.Touched, s)
			copyRow(dr, sr)
			continue
		}
		dr[0] += sr[0]
		for i, k := range kinds {
			if k == AggAdd {
				dr[i+1] += sr[i+1]
			} else {
				dr[i+1] = AggAddF.combineFloat(dr[i+1], sr[i+1])
			}
		}
	}
}

// growTouched returns g's Touched with room for m groups: a new pane
// accumulator takes its size from its first fragments at once rather than
// by doubling.
func (g *GroupState) growTouched(m int) []int32 {
	n := g.ids.lists.take(len(g.Touched), m+m/4)
	copy(n, g.Touched)
	return n
}
