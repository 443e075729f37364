package kernels

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/saber-hx/saber-hx/strview"
	"github.com/saber-hx/saber-hx/window"
)

// joinSnapshotVersion is the version of WindowJoin's snapshot encoding.
// Version 1 (before strings) is still restored.
const joinSnapshotVersion = 2

// AppendSnapshot appends the join's state to dst: what a restore needs to
// go on exactly where it stands, between two calls, once every closed
// window's output was taken off the queue (Pending is 0; the engine's
// snapshot drains the join first): both sides' open panes with their
// tuples, watermarks, row positions and counters, and the next window to
// close. The window, its pane and the tuple sizes are saved to be checked
// against the restoring join's. The free buffers and the sizing hint are
// not state: a restored join grows its own.
//
// Encoding (little-endian): version u8; Size, Slide, Pane i64; next i64,
// started u8; windows, joined, pairs, PairJoiner windows and fallbacks
// u64; per side its tuple size u32, watermark i64, index i64, done u8,
// tuples, late, dropped u64, panes u32 and per pane its index i64, its
// bytes u32 and the bytes, then (version 2) the long strings its tuples'
// views point to: for each tuple in order, each String attribute's that
// is not NULL and longer than a view holds, its length u32 and bytes.
func (wj *WindowJoin) AppendSnapshot(dst []byte) ([]byte, error) {
	if n := wj.Pending(); n > 0 {
		return dst, fmt.Errorf("join %q: snapshot with %d closed windows not handed on", wj.j.Name, n)
	}
	le := binary.LittleEndian
	dst = append(dst, joinSnapshotVersion)
	for _, v := range []int64{wj.spec.Size, wj.spec.Slide, wj.spec.Pane, wj.next} {
		dst = le.AppendUint64(dst, uint64(v))
	}
	dst = append(dst, boolByte(wj.started))
	for _, v := range []uint64{wj.windows, wj.joined, wj.outPairs, wj.pjWindows, wj.pjFallbacks} {
		dst = le.AppendUint64(dst, v)
	}
	for i := range wj.sides {
		sd := &wj.sides[i]
		dst = le.AppendUint32(dst, uint32(sd.tupleSize))
		dst = le.AppendUint64(dst, uint64(sd.wm))
		dst = le.AppendUint64(dst, uint64(sd.index))
		dst = append(dst, boolByte(sd.done))
		for _, v := range []uint64{sd.tuples, sd.late, sd.dropped} {
			dst = le.AppendUint64(dst, v)
		}
		dst = le.AppendUint32(dst, uint32(len(sd.panes)))
		for _, pn := range sd.panes {
			dst = le.AppendUint64(dst, uint64(pn.pane))
			dst = le.AppendUint32(dst, uint32(pn.n))
			for _, c := range pn.chunks {
				dst = append(dst, c...)
			}
			for _, c := range pn.chunks {
				dst = sd.appendStrings(dst, c)
			}
		}
	}
	return dst, nil
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// RestoreSnapshot replaces the join's state by a snapshot of
// AppendSnapshot, taken of a join of the same window and tuple sizes
// (checked), and returns the bytes after it. Call it before the first Add.
// On error the join is left empty, as NewWindowJoin returns it.
func (wj *WindowJoin) RestoreSnapshot(b []byte) (rest []byte, err error) {
	defer func() {
		if err != nil {
			wj.clear()
			err = fmt.Errorf("join %q: restore: %w", wj.j.Name, err)
		}
	}()
	wj.clear()
	r := window.NewSnapshotReader(b)
	version := byte(0)
	if v := r.Take(1); v != nil {
		if version = v[0]; version != 1 && version != joinSnapshotVersion {
			return nil, fmt.Errorf("snapshot version %d, want %d", v[0], joinSnapshotVersion)
		}
	}
	size, slide, pane := int64(r.U64()), int64(r.U64()), int64(r.U64())
	wj.next = int64(r.U64())
	wj.started = r.Bool()
	for _, v := range []*uint64{&wj.windows, &wj.joined, &wj.outPairs, &wj.pjWindows, &wj.pjFallbacks} {
		*v = r.U64()
	}
	if r.Err() != nil {
		return nil, r.Err()
	}
	if size != wj.spec.Size || slide != wj.spec.Slide || pane != wj.spec.Pane {
		return nil, fmt.Errorf("snapshot of window size %d slide %d, not this join's size %d slide %d", size, slide, wj.spec.Size, wj.spec.Slide)
	}
	for i := range wj.sides {
		sd := &wj.sides[i]
		if ts := int(r.U32()); r.Err() == nil && ts != sd.tupleSize {
			return nil, fmt.Errorf("side %d: snapshot of %d-byte tuples, not %d", i, ts, sd.tupleSize)
		}
		sd.wm, sd.index = int64(r.U64()), int64(r.U64())
		sd.done = r.Bool()
		sd.tuples, sd.late, sd.dropped = r.U64(), r.U64(), r.U64()
		n := r.U32()
		if r.Err() != nil {
			return nil, r.Err()
		}
		if sd.done {
			return nil, fmt.Errorf("side %d: snapshot of an ended input", i)
		}
		if uint64(n)*12 > uint64(len(r.Rest())) {
			return nil, fmt.Errorf("side %d: %d panes: truncated", i, n)
		}
		held := uint64(0)
		last := int64(math.MinInt64)
		for k := uint32(0); k < n; k++ {
			p := int64(r.U64())
			l := int(r.U32())
			data := r.Take(l)
			if r.Err() != nil {
				return nil, r.Err()
			}
			switch {
			case p < wj.lowest:
				return nil, fmt.Errorf("side %d: pane %d below the lowest %d", i, p, wj.lowest)
			case k > 0 && p <= last:
				return nil, fmt.Errorf("side %d: pane %d after pane %d: panes out of order", i, p, last)
			case l == 0 || l%sd.tupleSize != 0:
				return nil, fmt.Errorf("side %d: pane %d of %d bytes, not whole %d-byte tuples", i, p, l, sd.tupleSize)
			case wj.started && wj.spec.LastWindow(p) < wj.next:
				return nil, fmt.Errorf("side %d: pane %d of windows closed before window %d", i, p, wj.next)
			}
			last = p
			held += uint64(l / sd.tupleSize)
			in := wj.newInput(i)
			in.tuples = append(in.tuples, data...)
			in.refs = 1
			sd.insert(len(sd.panes), joinPane{pane: p, chunks: [][]byte{in.tuples}, n: l, refs: []*sharedInput{in}})
			if len(sd.strs) > 0 {
				if version < 2 {
					return nil, fmt.Errorf("side %d: a snapshot of version %d, before strings, of tuples with strings", i, version)
				}
				if err := sd.restoreStrings(r, in.tuples, &in.arena); err != nil {
					return nil, fmt.Errorf("side %d: pane %d: %w", i, p, err)
				}
			}
		}
		if sd.late > sd.tuples || sd.dropped > sd.tuples-sd.late || held != sd.tuples-sd.late-sd.dropped {
			return nil, fmt.Errorf("side %d: %d tuples, %d late, %d dropped and %d in panes do not add up", i, sd.tuples, sd.late, sd.dropped, held)
		}
	}
	return r.Rest(), nil
}

// clear empties the join, as NewWindowJoin returns it (its PairJoiner
// kept); only before the first Add, with no task out.
func (wj *WindowJoin) clear() {
	for i := range wj.sides {
		sd := &wj.sides[i]
		wj.drop(sd, len(sd.panes))
		*sd = joinSide{tupleSize: sd.tupleSize, strs: sd.strs, wm: math.MinInt64, base: sd.base[:0], panes: sd.base[:0],
			spareChunks: sd.spareChunks, spareRefs: sd.spareRefs}
	}
	wj.next, wj.started = 0, false
	wj.windows, wj.joined, wj.outPairs, wj.pjWindows, wj.pjFallbacks = 0, 0, 0, 0, 0
	wj.candsJoined, wj.bytesJoined, wj.tasks = 0, 0, 0
}

// appendStrings appends the long strings of the tuples data, in order.
func (sd *joinSide) appendStrings(dst, data []byte) []byte {
	ts := sd.tupleSize
	for o := 0; o+ts <= len(data) && len(sd.strs) > 0; o += ts {
		t := data[o : o+ts]
		for _, a := range sd.strs {
			v := t[a.Offset : a.Offset+strview.Size]
			if a.IsNull(t) || strview.Len(v) <= strview.MaxInline {
				continue
			}
			dst = binary.LittleEndian.AppendUint32(dst, uint32(strview.Len(v)))
			dst = append(dst, strview.Bytes(v)...)
		}
	}
	return dst
}

// restoreStrings reads appendStrings' strings of the tuples data into a
// and points their views there.
func (sd *joinSide) restoreStrings(r *window.SnapshotReader, data []byte, a *strview.Arena) error {
	ts := sd.tupleSize
	for o := 0; o+ts <= len(data); o += ts {
		t := data[o : o+ts]
		for _, at := range sd.strs {
			v := t[at.Offset : at.Offset+strview.Size]
			if at.IsNull(t) || strview.Len(v) <= strview.MaxInline {
				continue
			}
			n := int(r.U32())
			b := r.Take(n)
			if r.Err() != nil {
				return r.Err()
			}
			if n != strview.Len(v) {
				return fmt.Errorf("a string of %d bytes for a view of %d", n, strview.Len(v))
			}
			strview.PutRef(v, a.Copy(b))
		}
	}
	return nil
}
