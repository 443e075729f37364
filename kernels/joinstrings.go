package kernels

// A window join's inputs. A side's tuples are kept in panes after the
// task that brought them is merged and its memory freed, so the join
// keeps each input's tuples and their long strings (sharedInput): copied
// (Add, pinStrings), or the caller's memory taken (AddOwned). A pane's
// tuples are read by the tasks of its windows and their output (pairs
// whose views point into the inputs' arenas) until the last of those
// windows is handed on and recycled: a dropped or taken pane's inputs
// wait in a queue until every window closed so far is released (Next
// skipped it, or Recycle took its output back), then are reset for reuse
// once no pane holds them.

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

// sharedInput is the tuples of one Add or AddOwned and their long
// strings: the panes its tuples were filed into refer to runs of tuples
// and share it, and it is reset for reuse once the last of them is
// released. AddOwned's tuples and strings are the caller's buffer and
// arena, taken as they are (the join's input stage pins its strings on the
// workers, not under the join's lock).
type sharedInput struct {
	tuples []byte
	arena  strview.Arena
	refs   int // the panes (dropped ones until released) that hold it
	side   int // whose free inputs it goes back to (WindowJoin.shared)
}

// heldInput is a dropped pane's hold on an input, free once the windows
// closed when it was dropped are released.
type heldInput struct {
	after uint64
	in    *sharedInput
}

// AddOwned is Add for tuples in a buffer the join may keep, whose long
// strings the caller copied into strs, an arena of its own: the join
// takes *tuples and strs's memory as they are (*tuples is left an empty
// buffer the join recycled, or nil; strs an empty arena) and keeps them
// until the windows of the panes the tuples were filed into are released,
// so that filing copies nothing. strs may be nil (no long strings).
func (wj *WindowJoin) AddOwned(side int, tuples *[]byte, strs *strview.Arena) (Refused, bool) {
	return wj.AddOwnedCut(side, tuples, strs, nil)
}

// AddOwnedCut is AddOwned of tuples that c cut (Cut, off the lock): they
// are filed run by run. A nil or empty c files them as AddOwned does.
func (wj *WindowJoin) AddOwnedCut(side int, tuples *[]byte, strs *strview.Arena, c *JoinCut) (Refused, bool) {
	in := wj.newInput(side)
	in.tuples, *tuples = *tuples, in.tuples
	if strs != nil && strs.Bytes() > 0 {
		in.arena, *strs = *strs, in.arena
	}
	return wj.addInput(side, in, c)
}

// addInput files in's tuples, by the runs of c where it cut them (Cut);
// an input none of whose tuples were filed (every one late, or the first
// refused) is free again at once.
func (wj *WindowJoin) addInput(side int, in *sharedInput, c *JoinCut) (r Refused, ok bool) {
	wj.adding = in
	if c != nil && (len(c.runs) > 0 || c.refused) {
		r, ok = wj.fileCut(side, c)
	} else {
		r, ok = wj.fileInput(side)
	}
	wj.adding = nil
	if in.refs == 0 {
		wj.recycleInput(in)
	}
	return r, ok
}

// newInput is a free input of side, empty (its buffer kept), or a new
// one.
func (wj *WindowJoin) newInput(side int) *sharedInput {
	free := &wj.shared[side]
	if n := len(*free); n > 0 {
		in := (*free)[n-1]
		(*free)[n-1] = nil
		*free = (*free)[:n-1]
		return in
	}
	return &sharedInput{side: side}
}

func (wj *WindowJoin) recycleInput(in *sharedInput) {
	in.arena.Reset()
	in.tuples = in.tuples[:0]
	wj.shared[in.side] = append(wj.shared[in.side], in)
}

// holdRefs holds pane pn's inputs as a dropped pane's, and keeps its list
// for a new pane.
func (wj *WindowJoin) holdRefs(sd *joinSide, pn *joinPane) {
	if pn.refs == nil {
		return
	}
	for _, in := range pn.refs {
		wj.held = append(wj.held, heldInput{after: wj.closed, in: in})
	}
	clear(pn.refs)
	sd.spareRefs = append(sd.spareRefs, pn.refs[:0])
	pn.refs = nil
	wj.releaseHeld()
}

// pinStrings copies the long strings of in's tuples (side sd's) into its
// arena and points their views there.
func (wj *WindowJoin) pinStrings(sd *joinSide, in *sharedInput) {
	if len(sd.strs) == 0 {
		return
	}
	ts := sd.tupleSize
	data := in.tuples
	for o := 0; o+ts <= len(data); o += ts {
		t := data[o : o+ts]
		for _, a := range sd.strs {
			v := t[a.Offset : a.Offset+strview.Size]
			if a.IsNull(t) || strview.Len(v) <= strview.MaxInline {
				continue
			}
			strview.PutRef(v, in.arena.Copy(strview.Bytes(v)))
		}
	}
}

// released notes n more windows handed on (their output recycled, or
// nothing to hand on) and frees the inputs no window needs any more. While
// an output Next lent is out (the engine's drain hands a few on at once),
// the windows are released only once it is back: releaseHeld counts
// windows released in order, and a window without pairs after a lent one
// would free the inputs, long strings included, whose pairs the lent
// output still holds.
func (wj *WindowJoin) released(n int) {
	if wj.lent > 0 {
		wj.unreleased += n
		return
	}
	wj.released_ += uint64(n + wj.unreleased)
	wj.unreleased = 0
	wj.releaseHeld()
}

// releaseHeld frees the held inputs whose windows are all released. They
// leave from heldHead, which moves on; the slice is moved down only once
// half of it is behind heldHead (a copy per window was as long as the
// holds).
func (wj *WindowJoin) releaseHeld() {
	k := wj.heldHead
	for k < len(wj.held) && wj.held[k].after <= wj.released_ {
		in := wj.held[k].in
		if in.refs--; in.refs == 0 {
			wj.recycleInput(in)
		}
		wj.held[k] = heldInput{}
		k++
	}
	switch {
	case k == len(wj.held):
		wj.held, k = wj.held[:0], 0
	case k >= 64 && 2*k >= len(wj.held):
		n := copy(wj.held, wj.held[k:])
		clear(wj.held[n:])
		wj.held, k = wj.held[:n], 0
	}
	wj.heldHead = k
}
