package kernels

// A window join's strings. A side's tuples are kept in panes after the
// task that brought them is merged and its memory freed, so their long
// strings are copied into an arena of the pane (pinStrings). A pane's
// tuples are read by the tasks of its windows and their output (pairs
// whose views point into the arena) until the last of those windows is
// handed on and recycled: a dropped or taken pane's arena waits in a queue
// until every window closed so far is released (Next skipped it, or
// Recycle took its output back), then is reset for a new pane.

import (
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

// stringAttrs are the String attributes of s.
func stringAttrs(s *query.Schema) []query.Attribute {
	var out []query.Attribute
	for _, a := range s.Attrs {
		if a.Type == query.String {
			out = append(out, a)
		}
	}
	return out
}

// heldArena is an arena of dropped panes, free once windows are released,
// or a dropped pane's hold on strings AddPinned's tuples point into.
type heldArena struct {
	after  uint64 // the windows closed when it was dropped
	arena  *strview.Arena
	shared *sharedStrings
}

// sharedStrings is the long strings of the tuples of one AddPinned: the
// engine's worker that ran their task copied them there (the join's input
// stage pins its strings on the workers, not under the join's lock). The
// panes its tuples were filed into share it: it is reset for reuse once
// the last of them is released.
type sharedStrings struct {
	arena strview.Arena
	refs  int // the panes (dropped ones until released) that hold it
}

// AddPinned is Add for tuples whose long strings the caller copied into
// strs, an arena of its own: the join takes strs's memory (strs is left
// an empty arena the join recycled) and keeps it until the windows of the
// panes the tuples were filed into are released, rather than copying each
// string into a pane's arena.
func (wj *WindowJoin) AddPinned(side int, tuples []byte, strs *strview.Arena) (Refused, bool) {
	if strs.Bytes() == 0 || len(wj.sides[side].strs) == 0 {
		return wj.Add(side, tuples) // no long string: nothing to pin or hold
	}
	var ss *sharedStrings
	if n := len(wj.shared); n > 0 {
		ss, wj.shared = wj.shared[n-1], wj.shared[:n-1]
	} else {
		ss = &sharedStrings{}
	}
	ss.arena, *strs = *strs, ss.arena
	wj.adding = ss
	r, ok := wj.Add(side, tuples)
	wj.adding = nil
	if ss.refs == 0 { // every tuple late, or the first refused
		wj.recycleShared(ss)
	}
	return r, ok
}

// holdRefs holds pane pn's shared strings as a dropped pane's arena, and
// keeps its list for a new pane.
func (wj *WindowJoin) holdRefs(sd *joinSide, pn *joinPane) {
	if pn.refs == nil {
		return
	}
	for _, ss := range pn.refs {
		wj.held = append(wj.held, heldArena{after: wj.closed, shared: ss})
	}
	clear(pn.refs)
	sd.spareRefs = append(sd.spareRefs, pn.refs[:0])
	pn.refs = nil
	wj.releaseHeld()
}

func (wj *WindowJoin) recycleShared(ss *sharedStrings) {
	ss.arena.Reset()
	wj.shared = append(wj.shared, ss)
}

// newArena is a pane's arena: a recycled one, or a new one.
func (wj *WindowJoin) newArena() *strview.Arena {
	if n := len(wj.arenas); n > 0 {
		a := wj.arenas[n-1]
		wj.arenas = wj.arenas[:n-1]
		return a
	}
	return strview.NewArena(64 << 10)
}

// pinStrings copies the long strings of the tuples data (just filed into
// pane pn of side sd) into the pane's arena and points their views there.
func (wj *WindowJoin) pinStrings(sd *joinSide, pn *joinPane, data []byte) {
	if pn.arena == nil {
		pn.arena = wj.newArena()
	}
	ts := sd.tupleSize
	for o := 0; o+ts <= len(data); o += ts {
		t := data[o : o+ts]
		for _, a := range sd.strs {
			v := t[a.Offset : a.Offset+strview.Size]
			if a.IsNull(t) || strview.Len(v) <= strview.MaxInline {
				continue
			}
			strview.PutRef(v, pn.arena.Copy(strview.Bytes(v)))
		}
	}
}

// hold queues a retired pane's arena until the windows closed so far are
// released.
func (wj *WindowJoin) hold(a *strview.Arena) {
	if a == nil {
		return
	}
	wj.held = append(wj.held, heldArena{after: wj.closed, arena: a})
	wj.releaseHeld()
}

// released notes one more window handed on (its output recycled, or
// nothing to hand on) and frees the arenas no window needs any more.
func (wj *WindowJoin) released() {
	wj.released_++
	wj.releaseHeld()
}

func (wj *WindowJoin) releaseHeld() {
	k := 0
	for k < len(wj.held) && wj.held[k].after <= wj.released_ {
		if a := wj.held[k].arena; a != nil {
			a.Reset()
			wj.arenas = append(wj.arenas, a)
		}
		if ss := wj.held[k].shared; ss != nil {
			if ss.refs--; ss.refs == 0 {
				wj.recycleShared(ss)
			}
		}
		k++
	}
	if k > 0 {
		n := copy(wj.held, wj.held[k:])
		clear(wj.held[n:])
		wj.held = wj.held[:n]
	}
}
