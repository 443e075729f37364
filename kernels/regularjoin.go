package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
	"github.com/saber-hx/saber-hx/window"
)

// RegularJoin is the operator of a regular join (query.WindowJoin with
// Regular set: Flink's inner join of two append-only streams on one key,
// without a window). It keeps every tuple of both sides, for ever, in a
// hash index per side keyed by the side's key (a chain of the side's rows
// per key), and files each side's tuples in stream order: each tuple is
// kept in its side's index, then looked up in the other side's, and every
// pair with a tuple of the other side already kept is output, the left
// tuple's bytes then the right one's. So each pair (l, r) of equal keys is
// output exactly once, when the later of the two is filed, as Flink's
// join emits it; a NULL key joins nothing and is not kept.
//
// Why not a window join with a window that never closes: that emits
// nothing until the input ends, where Flink's regular join emits each pair
// as it arises. Why not windows of the arrival order, joined by the
// workers: a pair whose tuples lie in two such windows needs the state of
// every window before, which a task taken out of order cannot read while
// the filing goes on. Filing here is a hash insertion and a look-up per
// tuple plus the pairs' copies, under the engine's join lock (a serial
// section of the join: docs/nexmark.md measures it). The copies of the
// tuples kept and their long strings into the join's state are made
// before, off the lock, by the worker that made the input (Cut, then
// AddOwnedCut); the tuples' decoding, filtering and projection before it
// and the pairs' projection after it run on the workers too.
//
// Memory grows with the inputs: every tuple of both sides (after the
// filters upstream of the join) and its long strings, 12 bytes of place
// and chain per tuple and the index, as in Flink without a state TTL.
//
// The pairs of each Add wait in a queue (Next) until the caller hands them
// on, in the order they were filed; Recycle takes their buffer back. A
// RegularJoin has the methods of WindowJoin that the engine's join stage
// calls, those of tasks and windows doing nothing. It is not safe for
// concurrent use, but for Cut, which any goroutine may call while another
// holds it.
//
// The order of the pairs is that of the filing, which interleaves the two
// inputs as they come: the set of pairs is the same in every run, their
// order is not (a window join's is). A checkpoint (AppendSnapshot) is
// taken once every filed input's pairs were handed on: it holds both
// sides' tuples, and a restored join pairs the tuples filed after it with
// them, so that the pairs before and after it are the run's, each once.
type RegularJoin struct {
	j       *query.WindowJoin
	outSize int
	sides   [2]regSide

	adding regBatch // Add's

	queue []regOutput // from head: filed, not yet taken by Next
	head  int
	lent  []int64 // the smallest times of the outputs Next handed out, in order
	free  [][]byte
	// outCap is the largest output buffer's capacity so far: a new
	// buffer's.
	outCap int

	pairs, outputs uint64
}

// regOutput is the pairs of one Add and the smallest event time of the
// tuples that Add filed.
type regOutput struct {
	pairs []byte
	min   int64
}

// regSide is one side's kept tuples and their index.
type regSide struct {
	tupleSize int
	key       query.Attribute
	key32     bool
	strs      []query.Attribute
	// segs are the kept tuples, in the runs their inputs were prepared in
	// (prepare); rows locate each kept tuple in them and chain it to the
	// one kept before it with the same key, in chunks of 1<<shift.
	segs  [][]byte
	rows  [][]regRow
	n     uint32 // tuples kept
	shift uint
	index regIndex
	store regStore // the kept tuples and their long strings
	wm    int64
	done  bool
	// tuples counts the tuples filed, nulls those of them with a NULL key.
	tuples, nulls uint64
}

// regRow is a kept tuple: tuple idx of run seg, and the row (+1) kept
// before it with its key (0: none).
type regRow struct{ seg, idx, next uint32 }

// regBatch is an input prepared for filing (prepare): its tuples with a
// key copied into the side's store, their long strings too, their keys,
// and the input's counts. Its slices are reused from input to input.
type regBatch struct {
	side    int
	in      int // the input's bytes: what it was prepared from
	ok      bool
	kept    []byte // the tuples with a key, in the store
	keys    []int64
	tuples  int
	minT    int64
	maxT    int64
	hasTime bool
}

// regChunkBytes sets how many rows a chunk of rows locates: about
// regChunkBytes of tuples' worth.
const regChunkBytes = 256 << 10

// NewRegularJoin validates j, a regular join.
func NewRegularJoin(j *query.WindowJoin) (*RegularJoin, error) {
	if !j.Regular {
		return nil, fmt.Errorf("join %q: not a regular join", j.Name)
	}
	if err := j.Validate(); err != nil {
		return nil, err
	}
	rj := &RegularJoin{j: j, outSize: j.Left.TupleSize + j.Right.TupleSize}
	for i, s := range []*query.Schema{j.Left, j.Right} {
		k := s.Attrs[[2]int{j.LeftKey, j.RightKey}[i]]
		per := max(1, regChunkBytes/s.TupleSize)
		rj.sides[i] = regSide{tupleSize: s.TupleSize, key: k, key32: k.Type == query.Int32, strs: stringAttrs(s),
			wm: math.MinInt64, shift: uint(bits.Len(uint(per)) - 1)}
	}
	return rj, nil
}

// keyOf reads tuple t's key; ok false where it is NULL.
func (sd *regSide) keyOf(t []byte) (k int64, ok bool) {
	if sd.key.IsNull(t) {
		return 0, false
	}
	if sd.key32 {
		return int64(int32(binary.LittleEndian.Uint32(t[sd.key.Offset:]))), true
	}
	return int64(binary.LittleEndian.Uint64(t[sd.key.Offset:])), true
}

// rowAt is kept row r's place.
func (sd *regSide) rowAt(r uint32) *regRow { return &sd.rows[r>>sd.shift][r&(1<<sd.shift-1)] }

// row is kept row r (0-based).
func (sd *regSide) row(r uint32) []byte {
	m := sd.rowAt(r)
	o := int(m.idx) * sd.tupleSize
	return sd.segs[m.seg][o : o+sd.tupleSize : o+sd.tupleSize]
}

// prepare copies the tuples of side's input with a key, and their long
// strings, into the side's store (one allocation: the store's lock, once)
// and reads their keys into b. It reads only what the join was made with
// and the store: any goroutine may prepare while another files. With
// snap set, the long strings are not read from the views, whose addresses
// are another process's, but from r, in appendStrings' order.
func (rj *RegularJoin) prepare(side int, tuples []byte, b *regBatch, snap *window.SnapshotReader) error {
	sd := &rj.sides[side]
	ts := sd.tupleSize
	b.side, b.in, b.ok = side, len(tuples), true
	b.keys, b.kept, b.tuples = b.keys[:0], nil, 0
	b.minT, b.maxT, b.hasTime = math.MaxInt64, math.MinInt64, false
	kept, strBytes := 0, 0
	for o := 0; o+ts <= len(tuples); o += ts {
		t := tuples[o : o+ts]
		b.tuples++
		at := int64(binary.LittleEndian.Uint64(t))
		b.minT, b.maxT, b.hasTime = min(b.minT, at), max(b.maxT, at), true
		k, ok := sd.keyOf(t)
		if !ok {
			continue
		}
		b.keys = append(b.keys, k)
		kept++
		for _, a := range sd.strs {
			v := t[a.Offset : a.Offset+strview.Size]
			if !a.IsNull(t) && strview.Len(v) > strview.MaxInline {
				strBytes += strview.Len(v)
			}
		}
	}
	if kept == 0 {
		return nil
	}
	block := sd.store.alloc(kept*ts + strBytes)
	b.kept, block = block[:kept*ts:kept*ts], block[kept*ts:]
	d := 0
	for o := 0; o+ts <= len(tuples); o += ts {
		t := tuples[o : o+ts]
		if sd.key.IsNull(t) {
			continue
		}
		c := b.kept[d : d+ts]
		copy(c, t)
		d += ts
		for _, a := range sd.strs {
			v := c[a.Offset : a.Offset+strview.Size]
			if a.IsNull(c) || strview.Len(v) <= strview.MaxInline {
				continue
			}
			n := strview.Len(v)
			src := []byte(nil)
			if snap != nil {
				if l := int(snap.U32()); l != n && snap.Err() == nil {
					return fmt.Errorf("a string of %d bytes for a view of %d", l, n)
				}
				src = snap.Take(n)
				if snap.Err() != nil {
					return snap.Err()
				}
			} else {
				src = strview.Bytes(v)
			}
			copy(block, src)
			strview.PutRef(v, block[:n:n])
			block = block[n:]
		}
	}
	return nil
}

// Add files side's tuples (0 left, 1 right), which follow the ones added
// before in stream order, and queues their pairs with the other side's
// tuples kept so far. It refuses nothing: ok is always true.
func (rj *RegularJoin) Add(side int, tuples []byte) (r Refused, ok bool) {
	b := &rj.adding
	if err := rj.prepare(side, tuples, b, nil); err != nil {
		panic(err) // no snapshot: prepare has nothing to refuse
	}
	rj.file(b, true)
	return Refused{}, true
}

// file keeps b's tuples, prepared, in their side's index and, where
// pairs is set, queues their pairs with the other side's tuples kept so
// far: each tuple is kept, then looked up in the other side's index.
func (rj *RegularJoin) file(b *regBatch, pairs bool) {
	side := b.side
	sd, o := &rj.sides[side], &rj.sides[1-side]
	ts := sd.tupleSize
	sd.tuples += uint64(b.tuples)
	sd.nulls += uint64(b.tuples - len(b.keys))
	if b.hasTime {
		sd.wm = max(sd.wm, b.maxT)
	}
	b.ok = false
	if len(b.keys) == 0 {
		return
	}
	if sd.n > math.MaxUint32-uint32(len(b.keys))-1 || len(sd.segs) == math.MaxUint32 {
		panic(fmt.Sprintf("kernels: regular join %q: %d tuples kept on a side", rj.j.Name, sd.n))
	}
	seg := uint32(len(sd.segs))
	sd.segs = append(sd.segs, b.kept)
	var out []byte
	if pairs {
		if n := len(rj.free); n > 0 {
			out, rj.free = rj.free[n-1][:0], rj.free[:n-1]
		} else if rj.outCap > 0 {
			// Another output waits: a buffer the size of the largest so
			// far, not one grown pair by pair.
			out = make([]byte, 0, rj.outCap)
		}
	}
	per := 1 << sd.shift
	for i, k := range b.keys {
		r := sd.n
		c := int(r >> sd.shift)
		if c == len(sd.rows) {
			sd.rows = append(sd.rows, make([]regRow, 0, per))
		}
		sd.rows[c] = append(sd.rows[c], regRow{seg: seg, idx: uint32(i), next: sd.index.put(k, r+1)})
		sd.n++
		if !pairs {
			continue
		}
		kept := b.kept[i*ts : (i+1)*ts : (i+1)*ts]
		for m := o.index.get(k); m != 0; m = o.rowAt(m - 1).next {
			other := o.row(m - 1)
			if side == 0 {
				out = append(out, kept...)
				out = append(out, other...)
			} else {
				out = append(out, other...)
				out = append(out, kept...)
			}
		}
	}
	if len(out) == 0 {
		if out != nil {
			rj.free = append(rj.free, out)
		}
		return
	}
	rj.outCap = max(rj.outCap, cap(out))
	rj.pairs += uint64(len(out) / rj.outSize)
	rj.outputs++
	rj.queue = append(rj.queue, regOutput{pairs: out, min: b.minT})
}

// AddOwnedCut is Add of tuples that c prepared off the join's lock
// (Cut), which it files as they are; where c did not prepare these (nil,
// or another input's), it is Add. The join copied what it keeps, so
// *tuples and strs stay the caller's (strs is reset: the join needs none
// of its strings).
func (rj *RegularJoin) AddOwnedCut(side int, tuples *[]byte, strs *strview.Arena, c *JoinCut) (Refused, bool) {
	if c != nil && c.reg.ok && c.reg.side == side && c.reg.in == len(*tuples) {
		rj.file(&c.reg, true)
	} else {
		rj.Add(side, *tuples)
	}
	*tuples = (*tuples)[:0]
	if strs != nil {
		strs.Reset()
	}
	return Refused{}, true
}

// Cut prepares side's input for AddOwnedCut: the copies of its tuples
// and strings into the join's state, which is most of filing them, made
// by the worker that made the input rather than under the join's lock
// (prepare). Any goroutine may cut while another holds the join.
func (rj *RegularJoin) Cut(side int, tuples []byte, c *JoinCut) {
	c.runs, c.n, c.max, c.refused = c.runs[:0], 0, math.MinInt64, false
	if err := rj.prepare(side, tuples, &c.reg, nil); err != nil {
		c.reg.ok = false
	}
}

// Added is how many tuples side's input brought so far.
func (rj *RegularJoin) Added(side int) uint64 { return rj.sides[side].tuples }

// Kept is how many tuples side keeps (those without a NULL key).
func (rj *RegularJoin) Kept(side int) uint64 { return uint64(rj.sides[side].n) }

// Joined is how many Adds output pairs.
func (rj *RegularJoin) Joined() uint64 { return rj.outputs }

// Finish marks side's input ended and reports whether both are.
func (rj *RegularJoin) Finish(side int) (all bool) {
	rj.sides[side].done = true
	return rj.sides[0].done && rj.sides[1].done
}

// Lead reports the bytes side keeps; a regular join's side is never
// ahead: the other side's tuples join it whenever they come.
func (rj *RegularJoin) Lead(side int) (held int, ahead bool) {
	sd := &rj.sides[side]
	return int(sd.n) * sd.tupleSize, false
}

// Watermark is side's largest event time filed so far, math.MinInt64
// before any.
func (rj *RegularJoin) Watermark(side int) int64 { return rj.sides[side].wm }

// Pending is how many Adds' pairs wait for Next.
func (rj *RegularJoin) Pending() int { return len(rj.queue) - rj.head }

// Ready reports whether Next has pairs.
func (rj *RegularJoin) Ready() bool { return rj.head < len(rj.queue) }

// Next takes the oldest Add's pairs off the queue; hand them back with
// Recycle once they are used.
func (rj *RegularJoin) Next() (o JoinOutput, ok bool) {
	if !rj.Ready() {
		return JoinOutput{}, false
	}
	q := rj.queue[rj.head]
	rj.queue[rj.head] = regOutput{}
	rj.head++
	if rj.head == len(rj.queue) {
		rj.queue, rj.head = rj.queue[:0], 0
	}
	rj.lent = append(rj.lent, q.min)
	return JoinOutput{Pairs: q.pairs}, true
}

// Recycle takes back the pairs Next handed out first of those not yet
// recycled.
func (rj *RegularJoin) Recycle(o JoinOutput) {
	if len(rj.lent) > 0 {
		rj.lent = rj.lent[:copy(rj.lent, rj.lent[1:])]
	}
	if o.Pairs != nil {
		rj.free = append(rj.free, o.Pairs[:0])
	}
}

// Unreleased is the smallest event time of the tuples whose pairs are not
// all handed on yet (queued, or handed out and not recycled); ok false
// where every filed tuple's pairs were: a tuple filed is out once its
// pairs are.
func (rj *RegularJoin) Unreleased() (t int64, ok bool) {
	t = math.MaxInt64
	for _, m := range rj.lent {
		t, ok = min(t, m), true
	}
	for _, q := range rj.queue[rj.head:] {
		t, ok = min(t, q.min), true
	}
	return t, ok
}

// Stats returns the counters: a regular join has no windows (Windows 0).
func (rj *RegularJoin) Stats() WindowJoinStats {
	return WindowJoinStats{Tuples: rj.sides[0].tuples + rj.sides[1].tuples, Pairs: rj.pairs}
}

// The methods of a window join's closing, tasks and devices, which a
// regular join has none of.

// JoinClosed does nothing: a regular join's pairs are made as it files.
func (rj *RegularJoin) JoinClosed(all bool) (failed int64, err error) { return 0, nil }

// TakeFor returns nil: a regular join has no tasks.
func (rj *RegularJoin) TakeFor(s *JoinScratch) *JoinTask { return nil }

// Done is never called: a regular join has no tasks.
func (rj *RegularJoin) Done(t *JoinTask) {}

// Runnable is 0: no tasks.
func (rj *RegularJoin) Runnable() int { return 0 }

// RunnableWindows is 0: no tasks.
func (rj *RegularJoin) RunnableWindows() int { return 0 }

// Taken is 0: no tasks.
func (rj *RegularJoin) Taken() int { return 0 }

// OldestWaits is false: no tasks.
func (rj *RegularJoin) OldestWaits() bool { return false }

// NewScratch returns nil: no tasks.
func (rj *RegularJoin) NewScratch() *JoinScratch { return nil }

// UsePairJoiner does nothing: a device does not run a regular join.
func (rj *RegularJoin) UsePairJoiner(pj PairJoiner) {}

// regIndex maps keys to a side's newest row (+1) of that key: open
// addressing, linear probing, at most half full.
type regIndex struct {
	keys  []int64
	rows  []uint32 // 0: empty
	n     int
	shift uint // 64 - log2(len(keys))
}

func regHash(k int64, shift uint) int { return int((uint64(k) * 0x9E3779B97F4A7C15) >> shift) }

// get returns key k's newest row (+1), 0 where none.
func (x *regIndex) get(k int64) uint32 {
	if x.n == 0 {
		return 0
	}
	mask := len(x.keys) - 1
	for i := regHash(k, x.shift); ; i = (i + 1) & mask {
		r := x.rows[i]
		if r == 0 {
			return 0
		}
		if x.keys[i] == k {
			return r
		}
	}
}

// put makes row the newest of key k and returns the one before (0: none).
func (x *regIndex) put(k int64, row uint32) (prev uint32) {
	if 2*(x.n+1) > len(x.keys) {
		x.grow()
	}
	mask := len(x.keys) - 1
	for i := regHash(k, x.shift); ; i = (i + 1) & mask {
		r := x.rows[i]
		if r == 0 {
			x.keys[i], x.rows[i] = k, row
			x.n++
			return 0
		}
		if x.keys[i] == k {
			x.rows[i] = row
			return r
		}
	}
}

// grow doubles the index (1024 slots at first).
func (x *regIndex) grow() {
	size := max(1024, 2*len(x.keys))
	keys, rows := x.keys, x.rows
	x.keys, x.rows, x.n = make([]int64, size), make([]uint32, size), 0
	x.shift = uint(64 - bits.Len(uint(size-1)))
	mask := size - 1
	for i, r := range rows {
		if r == 0 {
			continue
		}
		j := regHash(keys[i], x.shift)
		for x.rows[j] != 0 {
			j = (j + 1) & mask
		}
		x.keys[j], x.rows[j] = keys[i], r
		x.n++
	}
}

// regularSnapshotVersion is the version of RegularJoin's snapshot.
const regularSnapshotVersion = 1

// AppendSnapshot appends the join's state to dst, once every Add's pairs
// were taken off the queue and recycled (the engine's snapshot drains the
// join first): per side its tuple size, watermark, counters and kept
// tuples with their long strings; the index is rebuilt on restore.
//
// Encoding (little-endian): version u8; pairs, outputs u64; per side its
// tuple size u32, watermark i64, tuples, nulls u64, kept u64, the kept
// tuples' bytes, then for each kept tuple in order each String
// attribute's long string (not NULL, longer than a view holds): its
// length u32 and bytes.
func (rj *RegularJoin) AppendSnapshot(dst []byte) ([]byte, error) {
	if n := rj.Pending() + len(rj.lent); n > 0 {
		return dst, fmt.Errorf("join %q: snapshot with %d outputs not handed on", rj.j.Name, n)
	}
	le := binary.LittleEndian
	dst = append(dst, regularSnapshotVersion)
	dst = le.AppendUint64(dst, rj.pairs)
	dst = le.AppendUint64(dst, rj.outputs)
	for i := range rj.sides {
		sd := &rj.sides[i]
		dst = le.AppendUint32(dst, uint32(sd.tupleSize))
		dst = le.AppendUint64(dst, uint64(sd.wm))
		dst = le.AppendUint64(dst, sd.tuples)
		dst = le.AppendUint64(dst, sd.nulls)
		dst = le.AppendUint64(dst, uint64(sd.n))
		for _, seg := range sd.segs { // the rows, in order
			dst = append(dst, seg...)
		}
		for r := uint32(0); r < sd.n && len(sd.strs) > 0; r++ {
			t := sd.row(r)
			for _, a := range sd.strs {
				v := t[a.Offset : a.Offset+strview.Size]
				if a.IsNull(t) || strview.Len(v) <= strview.MaxInline {
					continue
				}
				dst = le.AppendUint32(dst, uint32(strview.Len(v)))
				dst = append(dst, strview.Bytes(v)...)
			}
		}
	}
	return dst, nil
}

// RestoreSnapshot replaces the join's state by a snapshot of
// AppendSnapshot, taken of a join of the same tuple sizes (checked), and
// returns the bytes after it. Call it before the first Add. On error the
// join is left empty.
func (rj *RegularJoin) RestoreSnapshot(b []byte) (rest []byte, err error) {
	defer func() {
		if err != nil {
			rj.clear()
			err = fmt.Errorf("join %q: restore: %w", rj.j.Name, err)
		}
	}()
	rj.clear()
	r := window.NewSnapshotReader(b)
	if v := r.U8(); r.Err() == nil && v != regularSnapshotVersion {
		return nil, fmt.Errorf("snapshot version %d, want %d (of a regular join)", v, regularSnapshotVersion)
	}
	rj.pairs, rj.outputs = r.U64(), r.U64()
	for i := range rj.sides {
		sd := &rj.sides[i]
		if ts := int(r.U32()); r.Err() == nil && ts != sd.tupleSize {
			return nil, fmt.Errorf("side %d: snapshot of %d-byte tuples, not %d", i, ts, sd.tupleSize)
		}
		sd.wm = int64(r.U64())
		sd.tuples, sd.nulls = r.U64(), r.U64()
		n := r.U64()
		if r.Err() != nil {
			return nil, r.Err()
		}
		switch {
		case n > uint64(len(r.Rest()))/uint64(sd.tupleSize):
			return nil, fmt.Errorf("side %d: %d tuples kept: truncated", i, n)
		case n+sd.nulls != sd.tuples:
			return nil, fmt.Errorf("side %d: %d tuples, %d with a NULL key and %d kept do not add up", i, sd.tuples, sd.nulls, n)
		}
		data := r.Take(int(n) * sd.tupleSize)
		if r.Err() != nil {
			return nil, r.Err()
		}
		strBytes := uint64(0)
		for o := 0; o < len(data); o += sd.tupleSize {
			t := data[o : o+sd.tupleSize]
			if _, ok := sd.keyOf(t); !ok {
				return nil, fmt.Errorf("side %d: a kept tuple with a NULL key", i)
			}
			for _, a := range sd.strs {
				if v := t[a.Offset : a.Offset+strview.Size]; !a.IsNull(t) && strview.Len(v) > strview.MaxInline {
					strBytes += 4 + uint64(strview.Len(v))
				}
			}
		}
		if strBytes > uint64(len(r.Rest())) {
			return nil, fmt.Errorf("side %d: %d bytes of strings for %d bytes left: truncated", i, strBytes, len(r.Rest()))
		}
		// The views' addresses are the snapshotting process's: their
		// strings follow, in order.
		tuples, nulls, wm := sd.tuples, sd.nulls, sd.wm
		sd.tuples, sd.nulls = 0, 0
		b := &rj.adding
		if err := rj.prepare(i, data, b, r); err != nil {
			return nil, fmt.Errorf("side %d: %w", i, err)
		}
		rj.file(b, false)
		sd.tuples, sd.nulls, sd.wm = tuples, nulls, wm
	}
	return r.Rest(), nil
}

// clear empties the join, as NewRegularJoin returns it.
func (rj *RegularJoin) clear() {
	for i := range rj.sides {
		sd := &rj.sides[i]
		sd.store.free()
		*sd = regSide{tupleSize: sd.tupleSize, key: sd.key, key32: sd.key32, strs: sd.strs, wm: math.MinInt64, shift: sd.shift}
	}
	rj.queue, rj.head, rj.lent = rj.queue[:0], 0, rj.lent[:0]
	rj.pairs, rj.outputs = 0, 0
}

// Free returns the memory of the kept tuples and their long strings to
// the operating system, once the join's input ended: it keeps nothing
// afterwards (its counters stay), and every pair it output is invalid
// (their strings pointed into it).
func (rj *RegularJoin) Free() {
	for i := range rj.sides {
		sd := &rj.sides[i]
		sd.store.free()
		sd.segs, sd.rows, sd.n, sd.index = nil, nil, 0, regIndex{}
	}
}
