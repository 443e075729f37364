package window

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// snapshotVersion is the version of the Assembler's snapshot encoding.
const snapshotVersion = 1

// AppendSnapshot appends the assembler's state to dst: what a restore
// needs to go on exactly where it stands, between two merges. That is
// its open panes (each pane's groups and rows), its watermark, the next
// window to emit and its counters. The sliding aggregator is not saved:
// it holds only panes that are also live, and RestoreSnapshot rebuilds it
// from them on the next emit. The spec and the layout are saved to be
// checked against the restoring assembler's.
//
// Encoding (little-endian): version u8; Size, Slide, Pane, Delay i64;
// hashed u8, words u32, kinds (u8 each); watermark i64, next i64, started
// u8; the seven counters u64; panes u32, and per pane its index i64, its
// groups u32 and per group (hashed: the key's two u64; dense: the ordinal
// u32) then its words i64.
func (a *Assembler) AppendSnapshot(dst []byte) []byte {
	le := binary.LittleEndian
	dst = a.appendSnapshotState(dst, a.layout, &a.Counters)
	dst = le.AppendUint32(dst, uint32(len(a.live)))
	for _, pa := range a.live {
		dst = le.AppendUint64(dst, uint64(pa.pane))
		st := pa.state
		dst = le.AppendUint32(dst, uint32(len(st.Touched)))
		for _, g := range st.Touched {
			if a.layout.Hashed {
				k0, k1 := st.Key(g)
				dst = le.AppendUint64(dst, k0)
				dst = le.AppendUint64(dst, k1)
			} else {
				dst = le.AppendUint32(dst, uint32(g))
			}
			for _, w := range st.Row(g) {
				dst = le.AppendUint64(dst, uint64(w))
			}
		}
	}
	return dst
}

// appendSnapshotState appends the header of layout l, then a's
// watermark, next window and started flag, then the counters c: a
// snapshot up to its panes (Parts writes its own layout and counters with
// its first partition's progress).
func (a *Assembler) appendSnapshotState(dst []byte, l *Layout, c *Counters) []byte {
	le := binary.LittleEndian
	dst = appendSnapshotHeader(dst, a.spec, l)
	dst = le.AppendUint64(dst, uint64(a.wm))
	dst = le.AppendUint64(dst, uint64(a.next))
	dst = append(dst, boolByte(a.started))
	for _, v := range []uint64{c.Tuples, c.Filtered, c.Unmatched, c.Late, c.Counted, c.Windows, c.Rows} {
		dst = le.AppendUint64(dst, v)
	}
	return dst
}

// appendSnapshotHeader appends the version, spec and layout of a snapshot.
func appendSnapshotHeader(dst []byte, spec Spec, l *Layout) []byte {
	le := binary.LittleEndian
	dst = append(dst, snapshotVersion)
	for _, v := range []int64{spec.Size, spec.Slide, spec.Pane, spec.Delay} {
		dst = le.AppendUint64(dst, uint64(v))
	}
	dst = append(dst, boolByte(l.Hashed))
	dst = le.AppendUint32(dst, uint32(l.Words()))
	for _, k := range l.Kinds {
		dst = append(dst, byte(k))
	}
	return dst
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// SnapshotReader reads a snapshot's little-endian fields, remembering the
// first short read or bad flag (Err); after it every read returns zero.
// The engine's and the window join's snapshots read with it too.
type SnapshotReader struct {
	b   []byte
	err error
}

// NewSnapshotReader reads b.
func NewSnapshotReader(b []byte) *SnapshotReader { return &SnapshotReader{b: b} }

// Err is the first error met, nil while every read was whole.
func (r *SnapshotReader) Err() error { return r.err }

// Rest is what is left to read.
func (r *SnapshotReader) Rest() []byte { return r.b }

func (r *SnapshotReader) Take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.err = errors.New("truncated")
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *SnapshotReader) U8() byte {
	if v := r.Take(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *SnapshotReader) Bool() bool {
	switch v := r.U8(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		if r.err == nil {
			r.err = fmt.Errorf("flag byte %d, want 0 or 1", v)
		}
		return false
	}
}

func (r *SnapshotReader) U32() uint32 {
	if v := r.Take(4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (r *SnapshotReader) U64() uint64 {
	if v := r.Take(8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

// RestoreSnapshot replaces the assembler's state by a snapshot of
// AppendSnapshot, taken of an assembler of the same spec and layout
// (checked), and returns the bytes after it. The assembler's filter
// (SetFilter) is its own, not the snapshot's. On error the assembler is
// left empty, as NewAssembler returns it.
func (a *Assembler) RestoreSnapshot(b []byte) (rest []byte, err error) {
	return a.restore(b, nil)
}

// restore is RestoreSnapshot; with pin set it pins pin's mapping in the
// cleared dictionary before it numbers the snapshot's groups (repin).
func (a *Assembler) restore(b []byte, pin *GroupState) (rest []byte, err error) {
	defer func() {
		if err != nil {
			a.clear()
			err = fmt.Errorf("window: restore: %w", err)
		}
	}()
	r := NewSnapshotReader(b)
	if v := r.U8(); r.err == nil && v != snapshotVersion {
		return nil, fmt.Errorf("snapshot version %d, want %d", v, snapshotVersion)
	}
	var sp Spec
	sp.Size, sp.Slide, sp.Pane, sp.Delay = int64(r.U64()), int64(r.U64()), int64(r.U64()), int64(r.U64())
	hashed := r.Bool()
	words := int(r.U32())
	kinds := r.Take(max(words-1, 0))
	if r.err != nil {
		return nil, r.err
	}
	if sp != a.spec {
		return nil, fmt.Errorf("snapshot of window %+v, not this query's %+v", sp, a.spec)
	}
	if hashed != a.layout.Hashed || words != a.layout.Words() {
		return nil, fmt.Errorf("snapshot of groups hashed=%v of %d words, not this query's hashed=%v of %d", hashed, words, a.layout.Hashed, a.layout.Words())
	}
	for i, k := range a.layout.Kinds {
		if AggKind(kinds[i]) != k {
			return nil, fmt.Errorf("snapshot aggregate %d of kind %d, not this query's %d", i, kinds[i], k)
		}
	}
	a.clear()
	if pin != nil {
		a.dict.pinMapping(pin)
	}
	a.wm = int64(r.U64())
	a.next = int64(r.U64())
	a.started = r.Bool()
	c := &a.Counters
	for _, v := range []*uint64{&c.Tuples, &c.Filtered, &c.Unmatched, &c.Late, &c.Counted, &c.Windows, &c.Rows} {
		*v = r.U64()
	}
	n := r.U32()
	last := int64(math.MinInt64)
	for i := uint32(0); i < n && r.err == nil; i++ {
		p := int64(r.U64())
		groups := r.U32()
		if r.err != nil {
			break
		}
		if i > 0 && p <= last {
			return nil, fmt.Errorf("pane %d after pane %d: panes out of order", p, last)
		}
		last = p
		rowBytes := 8 * words
		if hashed {
			rowBytes += 16
		} else {
			rowBytes += 4
		}
		if uint64(groups)*uint64(rowBytes) > uint64(len(r.b)) {
			return nil, fmt.Errorf("pane %d: %d groups: truncated", p, groups)
		}
		st := a.pane(p)
		for g := uint32(0); g < groups; g++ {
			var slot int32
			switch {
			case a.dict != nil:
				k0, k1 := r.U64(), r.U64()
				slot = a.dict.id(k0, k1)
				st.fitIDs()
				if st.Row(slot)[0] != 0 {
					return nil, fmt.Errorf("pane %d: group listed twice", p)
				}
				if slot >= a.dict.npin {
					a.dict.hold(slot) // a pinned id's holds are not counted
				}
				st.Touched = append(st.Touched, slot)
			case hashed:
				k0, k1 := r.U64(), r.U64()
				slot = st.Lookup(k0, k1)
				if st.Row(slot)[0] != 0 {
					return nil, fmt.Errorf("pane %d: group listed twice", p)
				}
			default:
				o := r.U32()
				if o >= uint32(a.layout.Groups) {
					return nil, fmt.Errorf("pane %d: group %d of %d", p, o, a.layout.Groups)
				}
				slot = int32(o)
				if st.Row(slot)[0] != 0 {
					return nil, fmt.Errorf("pane %d: group %d listed twice", p, o)
				}
				st.Touched = append(st.Touched, slot)
			}
			row := st.Row(slot)
			for w := range row {
				row[w] = int64(r.U64())
			}
			if row[0] <= 0 {
				return nil, fmt.Errorf("pane %d: a group of count %d", p, row[0])
			}
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return r.b, nil
}

// clear empties the assembler, keeping its filter, spec and layout.
func (a *Assembler) clear() {
	if a.win != nil {
		a.win.reset()
	}
	for _, pa := range a.live {
		a.release(pa.state)
	}
	a.live = a.live[:0]
	if a.dict != nil {
		a.dict.reset()
	}
	a.wm, a.next, a.started = math.MinInt64, 0, false
	a.Counters = Counters{}
}
