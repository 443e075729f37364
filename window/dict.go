package window

import (
	"cmp"
	"math"
	"slices"
)

// groupDict numbers the groups of one assembler's hashed layout: a key gets
// a dense id when a pane first holds it and keeps it while any live pane
// holds it. The assembler's pane accumulators and its running state are
// then arrays indexed by id (id-indexed GroupStates), so that adding a pane
// to the window and taking it out again are plain additions and
// subtractions at the ids the pane touched: no hashing, no probing and no
// key copies per pane, and no table to rebuild when a group leaves. Only a
// fragment's groups are looked up, once each, when the fragment is merged
// into its pane.
//
// Each id counts the live panes that hold it (refs); an id no pane holds is
// removed from the table and reused, so that the dictionary holds what the
// live panes hold, however the keys drift. The ids of the live groups are
// kept in key order (order), updated when ids come and go, so that a window
// lists its groups in key order by one pass over order.
type groupDict struct {
	keys  []uint64 // key of id i: keys[2i], keys[2i+1]
	refs  []int32  // live panes holding id i
	table []int32  // open addressing: id+1 per slot, 0 empty
	mask  uint64
	n     int32 // ids handed out: 0..n-1

	order []int32 // ids with refs > 0 in key order, as of the last sortOrder
	spare []int32 // sortOrder's other buffer
	fresh []int32 // ids handed out since the last sortOrder
	gone  []int32 // ids released since the last sortOrder: reusable after it
	reuse []int32 // ids free to hand out

	// memo is the id+1 last found for each slot of a fragment's table:
	// fragments' tables mostly share a size and place a key in the same
	// slot, so the id of a fragment's slot is found without hashing where
	// the memo's id still holds the slot's key.
	memo []int32
	// dmemo is the id+1 of each slot of the direct tables of mapping
	// dmapping (whose every slot holds one key for good: GroupState.KeysFor),
	// trusted without reading the key; dslot is the dmemo slot+1 of each
	// id, so that releasing the id clears its entry.
	dmemo    []int32
	dslot    []int32
	dmapping uint32
	// slots is absorb's scratch: a fragment's slots in table order.
	slots []int32

	// pin, where not 0, is the direct mapping whose slots are ids for
	// good: ids 0..npin-1 are its slots 0..npin-1 (pinDirect), so that its
	// tables are absorbed slot for slot, with no id to find or count.
	pin  uint32
	npin int32
	// repinWait is the merges Assembler.repin lets go by before it looks
	// again at a mapping too sparse to pin; repinBackoff the last wait.
	repinWait, repinBackoff int

	// vals and lists hold the id-indexed states' rows and lists of groups
	// (Vals, Touched): the panes', the running sum's.
	vals  slab[int64]
	lists slab[int32]
}

func newGroupDict() *groupDict {
	d := &groupDict{}
	d.resize(64)
	return d
}

// capIDs is how many ids the arrays hold: ids stay below it until the
// table grows, which doubles it (a state sized to it needs no check per id
// until then).
func (d *groupDict) capIDs() int { return len(d.refs) }

// resize makes the table slots slots (a power of two) and the id arrays
// half of it, keeping every id.
func (d *groupDict) resize(slots int) {
	ids := slots / 2
	keys := make([]uint64, 2*ids)
	copy(keys, d.keys)
	refs := make([]int32, ids)
	copy(refs, d.refs)
	dslot := make([]int32, ids)
	copy(dslot, d.dslot)
	d.keys, d.refs, d.dslot = keys, refs, dslot
	d.table = make([]int32, slots)
	d.mask = uint64(slots - 1)
	for id := range d.n {
		if d.refs[id] > 0 {
			d.place(id)
		}
	}
}

// place inserts id, whose key is not in the table, at the end of its probe
// chain.
func (d *groupDict) place(id int32) {
	s := hashKey(d.keys[2*id], d.keys[2*id+1]) & d.mask
	for d.table[s] != 0 {
		s = (s + 1) & d.mask
	}
	d.table[s] = id + 1
}

// id returns the id of key (k0, k1), handing out one (with no refs) if the
// key has none. Handing one out may grow the arrays (capIDs).
func (d *groupDict) id(k0, k1 uint64) int32 {
	found, s := d.find(k0, k1)
	if found >= 0 {
		return found
	}
	var id int32
	if n := len(d.reuse); n > 0 {
		id, d.reuse = d.reuse[n-1], d.reuse[:n-1]
	} else {
		if int(d.n) == d.capIDs() {
			d.resize(2 * len(d.table))
			s = hashKey(k0, k1) & d.mask
			for d.table[s] != 0 {
				s = (s + 1) & d.mask
			}
		}
		id = d.n
		d.n++
	}
	d.keys[2*id], d.keys[2*id+1] = k0, k1
	d.table[s] = id + 1
	d.fresh = append(d.fresh, id)
	return id
}

// find returns the id of key (k0, k1), or -1 and the empty slot of the
// table where the key would go.
func (d *groupDict) find(k0, k1 uint64) (id int32, slot uint64) {
	s := hashKey(k0, k1) & d.mask
	for {
		e := d.table[s]
		if e == 0 {
			return -1, s
		}
		if d.keys[2*(e-1)] == k0 && d.keys[2*(e-1)+1] == k1 {
			return e - 1, s
		}
		s = (s + 1) & d.mask
	}
}

// hold counts one more live pane holding id.
func (d *groupDict) hold(id int32) { d.refs[id]++ }

// drop counts one live pane fewer holding id; the last one releases it:
// its key leaves the table, and the id is reused after the next sortOrder.
func (d *groupDict) drop(id int32) {
	if d.refs[id]--; d.refs[id] > 0 {
		return
	}
	if d.refs[id] < 0 {
		panic("window: group id dropped more often than held")
	}
	d.gone = append(d.gone, id)
	if ds := d.dslot[id]; ds != 0 {
		d.dmemo[ds-1], d.dslot[id] = 0, 0
	}
	s := hashKey(d.keys[2*id], d.keys[2*id+1]) & d.mask
	for d.table[s] != id+1 {
		s = (s + 1) & d.mask
	}
	// Backward-shift deletion: move later entries of the chain into the
	// hole wherever their home does not lie cyclically in (hole, slot].
	for j := s; ; {
		d.table[s] = 0
		for {
			j = (j + 1) & d.mask
			e := d.table[j]
			if e == 0 {
				return
			}
			h := hashKey(d.keys[2*(e-1)], d.keys[2*(e-1)+1]) & d.mask
			if (j-h)&d.mask >= (j-s)&d.mask {
				d.table[s] = e
				s = j
				break
			}
		}
	}
}

// sortOrder brings order up to date with the ids handed out and released
// since the last call; it costs a pass over order where anything changed,
// plus sorting the new ids.
func (d *groupDict) sortOrder() {
	if len(d.fresh) == 0 && len(d.gone) == 0 {
		return
	}
	if len(d.gone) > 0 {
		kept := d.order[:0]
		for _, id := range d.order {
			if d.refs[id] > 0 {
				kept = append(kept, id)
			}
		}
		d.order = kept
	}
	fresh := d.fresh[:0]
	for _, id := range d.fresh {
		if d.refs[id] > 0 {
			fresh = append(fresh, id)
		}
	}
	d.fresh = d.fresh[:0]
	// Released ids become reusable only now: until here one could still be
	// listed in order or fresh under its old key.
	d.reuse = append(d.reuse, d.gone...)
	d.gone = d.gone[:0]
	if len(fresh) == 0 {
		return
	}
	slices.SortFunc(fresh, d.compare)
	out := d.spare[:0]
	i, j := 0, 0
	for i < len(d.order) && j < len(fresh) {
		if d.compare(d.order[i], fresh[j]) < 0 {
			out = append(out, d.order[i])
			i++
		} else {
			out = append(out, fresh[j])
			j++
		}
	}
	out = append(out, d.order[i:]...)
	out = append(out, fresh[j:]...)
	d.spare, d.order = d.order, out
}

func (d *groupDict) compare(a, b int32) int {
	if c := cmp.Compare(d.keys[2*a], d.keys[2*b]); c != 0 {
		return c
	}
	return cmp.Compare(d.keys[2*a+1], d.keys[2*b+1])
}

// reset forgets every id (no pane holds any).
func (d *groupDict) reset() {
	clear(d.table)
	clear(d.refs[:d.n])
	clear(d.dslot[:d.n])
	clear(d.dmemo)
	d.n, d.pin, d.npin = 0, 0, 0
	d.repinWait, d.repinBackoff = 0, 0
	d.order, d.fresh, d.gone, d.reuse = d.order[:0], d.fresh[:0], d.gone[:0], d.reuse[:0]
}

// newIDState returns an empty id-indexed state of layout l over d.
func newIDState(l *Layout, d *groupDict) *GroupState {
	g := &GroupState{layout: l, words: l.Words(), ids: d}
	n := d.capIDs()
	if d.npin > 0 {
		// A pinned mapping's panes mostly hold its ids alone: room for
		// them, grown (fitIDs) where a pane holds others.
		n = int(d.npin)
	}
	g.Vals = d.vals.take(n*g.words, n*g.words)
	return g
}

// fitIDs grows an id-indexed state to the dictionary's capacity.
func (g *GroupState) fitIDs() {
	if n := g.ids.capIDs() * g.words; len(g.Vals) < n {
		vals := g.ids.vals.take(n, n)
		copy(vals, g.Vals)
		g.Vals = vals
	}
}

// absorb merges hashed src (a fragment) into id-indexed pane accumulator
// g: each of src's groups found (or numbered) once in the dictionary, its
// row copied where g lacks the group, combined where it has it. A group new
// to g counts g among the panes holding its id.
// With take set, absorb may take src's storage for g's in exchange for g's
// (empty) one, leaving src empty (absorbPinned).
func (g *GroupState) absorb(src *GroupState, take bool) {
	d, words, kinds := g.ids, g.words, g.layout.Kinds
	if m := src.KeysFor(); m != 0 && src.direct == m {
		if d.pin == 0 {
			d.tryPin(src)
		}
		if m == d.pin && src.dslots == d.npin {
			g.absorbPinned(src, take)
			return
		}
	}
	if n := len(g.Touched) + len(src.Touched); n > cap(g.Touched) {
		// A new pane accumulator takes its size from its first fragment at
		// once rather than by doubling.
		g.Touched = slices.Grow(g.Touched, n+n/4-len(g.Touched))
	}
	if n := len(src.Keys) / 2; len(d.memo) < n {
		d.memo = make([]int32, n)
	}
	memo := d.memo
	slots := src.Touched
	if n := len(src.Vals) / words; 4*len(slots) >= n && !src.view {
		// Most of the table is taken: its slots in table order read it as
		// one stream, where the Touched order (first seen) would miss the
		// cache at every group.
		d.slots = occupied(d.slots, src.Vals, n, words)
		slots = d.slots
	}
	var dmemo []int32
	if m := src.KeysFor(); m != 0 {
		if m != d.dmapping {
			for _, id := range d.dmemo {
				if id != 0 {
					d.dslot[id-1] = 0
				}
			}
			clear(d.dmemo)
			d.dmapping = m
		}
		if n := len(src.Keys) / 2; len(d.dmemo) < n {
			dm := make([]int32, n)
			copy(dm, d.dmemo)
			d.dmemo = dm
		}
		dmemo = d.dmemo
	}
	for _, s := range slots {
		var id int32
		if dmemo != nil {
			if id = dmemo[s] - 1; id < 0 {
				id = d.id(src.Keys[2*s], src.Keys[2*s+1])
				dmemo[s], d.dslot[id] = id+1, s+1
			}
		} else {
			k0, k1 := src.Keys[2*s], src.Keys[2*s+1]
			if id = memo[s] - 1; id < 0 || d.keys[2*id] != k0 || d.keys[2*id+1] != k1 || d.refs[id] == 0 {
				id = d.id(k0, k1)
				memo[s] = id + 1
			}
		}
		o := int(id) * words
		if o >= len(g.Vals) {
			g.fitIDs()
		}
		sr := src.Vals[int(s)*words : int(s+1)*words : int(s+1)*words]
		dr := g.Vals[o : o+words : o+words]
		if dr[0] == 0 {
			if id >= d.npin {
				d.hold(id)
			}
			g.Touched = append(g.Touched, id)
			copyRow(dr, sr)
			continue
		}
		dr[0] += sr[0]
		for i, k := range kinds {
			dr[i+1] = k.Combine(dr[i+1], sr[i+1])
		}
	}
}

// releaseIDs resets id-indexed pane accumulator g, which leaves the live
// panes: its groups' ids count one pane fewer.
func (g *GroupState) releaseIDs() {
	d := g.ids
	for _, id := range g.Touched {
		if id >= d.npin {
			d.drop(id)
		}
	}
	if g.zeroed {
		g.Touched, g.zeroed = g.Touched[:0], false
		return
	}
	g.Reset()
}

// addIDs adds id-indexed pane src into id-indexed running state g (a sum:
// the layout is Invertible), copying the rows of groups g lacks. It
// reports whether g gained a group.
func (g *GroupState) addIDs(src *GroupState) (gained bool) {
	words, kinds := g.words, g.layout.Kinds
	if len(g.Vals) < g.ids.capIDs()*words {
		g.fitIDs()
	}
	sv, dv := src.Vals, g.Vals
	dense, n := src.denseIDs()
	if words == 2 {
		float := kinds[0] == AggAddF
		if dense {
			for o := 0; o < 2*n; o += 2 {
				if s := sv[o : o+2 : o+2]; s[0] != 0 {
					gained = addRow2(dv[o:o+2:o+2], s, float) || gained
				}
			}
			return gained
		}
		for _, id := range src.Touched {
			o := int(id) * 2
			gained = addRow2(dv[o:o+2:o+2], sv[o:o+2:o+2], float) || gained
		}
		return gained
	}
	for _, id := range src.Touched {
		o := int(id) * words
		s, d := sv[o:o+words:o+words], dv[o:o+words:o+words]
		if d[0] == 0 {
			copyRow(d, s)
			gained = true
			continue
		}
		d[0] += s[0]
		for i, k := range kinds {
			d[i+1] = k.Combine(d[i+1], s[i+1])
		}
	}
	return gained
}

// addRow2 adds row s into row d of two words (a count and a sum),
// reporting whether d was empty.
func addRow2(d, s []int64, float bool) bool {
	switch {
	case d[0] == 0:
		d[0], d[1] = s[0], s[1]
		return true
	case float:
		d[0] += s[0]
		d[1] = int64(math.Float64bits(math.Float64frombits(uint64(d[1])) + math.Float64frombits(uint64(s[1]))))
	default:
		d[0] += s[0]
		d[1] += s[1]
	}
	return false
}

// denseIDs reports whether an id-indexed pane holds most ids, and n, the
// ids its rows cover: the running sum then reads its rows in id order, one
// stream through both states, skipping the empty ones, rather than at its
// groups in the order they came (at random).
func (g *GroupState) denseIDs() (dense bool, n int) {
	n = min(len(g.Vals)/g.words, int(g.ids.n))
	return 8*len(g.Touched) >= n, n
}

// subtractIDs takes id-indexed pane src, added before, out of id-indexed
// running state g, and reports whether a group of g was left without
// tuples. Such a group is cleared at once: its float sums may keep a
// residue of rounding, which the next pane to add the group must not
// inherit. With clr set, src's rows are cleared as they are read (src is
// released next: releaseIDs then has none to clear).
func (g *GroupState) subtractIDs(src *GroupState, clr bool) (emptied bool) {
	words, kinds := g.words, g.layout.Kinds
	sv, dv := src.Vals, g.Vals
	src.zeroed = clr
	if words == 2 {
		float := kinds[0] == AggAddF
		if dense, n := src.denseIDs(); dense {
			for o := 0; o < 2*n; o += 2 {
				if s := sv[o : o+2 : o+2]; s[0] != 0 {
					emptied = subRow2(dv[o:o+2:o+2], s, float) || emptied
					if clr {
						s[0], s[1] = 0, 0
					}
				}
			}
			return emptied
		}
		for _, id := range src.Touched {
			o := int(id) * 2
			s := sv[o : o+2 : o+2]
			emptied = subRow2(dv[o:o+2:o+2], s, float) || emptied
			if clr {
				s[0], s[1] = 0, 0
			}
		}
		return emptied
	}
	for _, id := range src.Touched {
		o := int(id) * words
		s, d := sv[o:o+words:o+words], dv[o:o+words:o+words]
		if d[0] == s[0] {
			clearRow(d)
			emptied = true
		} else {
			d[0] -= s[0]
			for i, k := range kinds {
				if k == AggAdd {
					d[i+1] -= s[i+1]
				} else {
					d[i+1] = int64(math.Float64bits(math.Float64frombits(uint64(d[i+1])) - math.Float64frombits(uint64(s[i+1]))))
				}
			}
		}
		if clr {
			clearRow(s)
		}
	}
	return emptied
}

// subRow2 takes row s out of row d of two words, reporting whether d was
// left empty.
func subRow2(d, s []int64, float bool) bool {
	switch {
	case d[0] == s[0]:
		d[0], d[1] = 0, 0
		return true
	case float:
		d[0] -= s[0]
		d[1] = int64(math.Float64bits(math.Float64frombits(uint64(d[1])) - math.Float64frombits(uint64(s[1]))))
	default:
		d[0] -= s[0]
		d[1] -= s[1]
	}
	return false
}

// changed reports whether ids were handed out or released since the last
// sortOrder.
func (d *groupDict) changed() bool { return len(d.fresh) > 0 || len(d.gone) > 0 }

// listIDs makes g's Touched the ids of its groups in key order: the
// dictionary's order, brought up to date, filtered by g's counts.
func (g *GroupState) listIDs() {
	d := g.ids
	d.sortOrder()
	g.fitIDs()
	words, vals := g.words, g.Vals
	t := g.Touched[:0]
	for _, id := range d.order {
		if vals[int(id)*words] != 0 {
			t = append(t, id)
		}
	}
	g.Touched = t
}

// occupied returns the slots below n of table vals (rows of words words)
// whose count word is not 0, in slot order, in dst's storage. Its loop
// does not branch on the count: a table a quarter to half full, its slots
// taken in the order the tuples came, would mispredict every other slot.
func occupied(dst []int32, vals []int64, n, words int) []int32 {
	if cap(dst) < n {
		dst = make([]int32, n)
	}
	dst = dst[:n]
	vals = vals[:n*words]
	k := 0
	for s := range n {
		c := uint64(vals[s*words])
		dst[k] = int32(s)
		k += int((c | -c) >> 63) // 1 where c is not 0
	}
	return dst[:k]
}
