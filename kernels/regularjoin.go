package kernels

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"

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
// the filing goes on.
//
// The pairs are a set: filing one tuple before another of the same side
// changes none, so inputs are filed in any order, by the worker that made
// each (Cut), in parallel. Both sides' state is cut by key into
// regParts partitions, each under its own lock: a tuple is kept and looked
// up under its partition's lock, so of two tuples that pair (one key, one
// partition) the later one to take the lock finds the other, and the pair
// is output once. A worker copies its input's tuples and strings into the
// join's state first, without a lock (prepare), then files them partition
// by partition and queues the input's pairs; the engine's join lock only
// hands the queue on in order (AddOwnedCut has nothing left to do).
//
// Memory grows with the inputs: every tuple of both sides (after the
// filters upstream of the join) and its long strings, 12 bytes of place
// and chain per tuple and the index, as in Flink without a state TTL.
//
// The pairs of each input wait in a queue (Next) until the caller hands
// them on, in the order they were queued; Recycle takes their buffer back.
// A RegularJoin has the methods of WindowJoin that the engine's join stage
// calls, those of tasks and windows doing nothing. Cut is safe for
// concurrent use with every method but AppendSnapshot, RestoreSnapshot
// and Free (called where no input is in flight); the others are called
// under the caller's lock.
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
	parts   [regParts]regPart

	adding regBatch // Add's (under the caller's lock)

	// qmu guards the queue of outputs and their buffers, and the counters
	// of pairs: Cut queues from any worker.
	qmu   sync.Mutex
	queue []regOutput // from head: filed, not yet taken by Next
	head  int
	lent  []int64 // the smallest times of the outputs Next handed out, in order
	free  [][]byte
	// outCap is the largest output buffer's capacity so far: a new
	// buffer's.
	outCap         int
	pairs, outputs uint64
}

// regParts is the number of partitions of a regular join's state.
const regParts = 16

// regPart is one partition of both sides' state: the tuples whose key
// hashes to it, under its lock.
type regPart struct {
	mu    sync.Mutex
	sides [2]regPartSide
	_     [64]byte // apart from the next partition's lock
}

// regPartSide is a side's tuples of a partition: the runs they lie in
// (their inputs' prepared tuples), and per tuple its place and the one
// kept before it with its key, in chunks of 1<<shift.
type regPartSide struct {
	segs  [][]byte
	rows  [][]regRow
	n     uint32
	index regIndex
}

// regOutput is the pairs of one input and the smallest event time of the
// tuples it filed.
type regOutput struct {
	pairs []byte
	min   int64
}

// regSide is one side's configuration, store and counters.
type regSide struct {
	tupleSize int
	key       query.Attribute
	key32     bool
	// keyStr says the key is a String: its index key is a hash of its
	// bytes (regStrHash), and a pair is output only where the bytes are
	// equal (sameKey), two strings of one hash sharing a chain.
	keyStr bool
	strs   []query.Attribute
	shift  uint
	store  regStore // the kept tuples and their long strings
	wm     atomic.Int64
	done   bool
	// tuples counts the tuples filed, nulls those of them with a NULL key.
	tuples, nulls atomic.Uint64
}

// regRow is a kept tuple: tuple idx of run seg, and the row (+1) kept
// before it with its key in its partition (0: none).
type regRow struct{ seg, idx, next uint32 }

// regBatch is an input prepared for filing (prepare): its tuples with a
// key copied into the side's store, their long strings too, their keys
// and partitions, and the input's counts. Its slices are reused from
// input to input.
type regBatch struct {
	side    int
	in      int    // the input's bytes: what it was prepared from
	filed   bool   // by Cut: AddOwnedCut has nothing to do
	kept    []byte // the tuples with a key, in the store
	keys    []int64
	parts   [regParts][]uint32 // the kept tuples of each partition
	tuples  int
	minT    int64
	maxT    int64
	hasTime bool
}

// regChunkBytes sets how many rows a chunk of rows locates: about
// regChunkBytes of tuples' worth.
const regChunkBytes = 64 << 10

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
		sd := &rj.sides[i]
		sd.tupleSize, sd.key, sd.key32, sd.keyStr, sd.strs = s.TupleSize, k, k.Type == query.Int32, k.Type == query.String, stringAttrs(s)
		sd.shift = uint(bits.Len(uint(per)) - 1)
		sd.wm.Store(math.MinInt64)
	}
	return rj, nil
}

// regPartOf is key k's partition: bits of another hash than the index's.
func regPartOf(k int64) int { return int((uint64(k) * 0xC2B2AE3D27D4EB4F) >> 60) }

// keyOf reads tuple t's key (a String's hash); ok false where it is NULL.
// A String key's view must point at its bytes.
func (sd *regSide) keyOf(t []byte) (k int64, ok bool) {
	if sd.key.IsNull(t) {
		return 0, false
	}
	if sd.keyStr {
		return int64(regStrHash(sd.keyBytes(t))), true
	}
	if sd.key32 {
		return int64(int32(binary.LittleEndian.Uint32(t[sd.key.Offset:]))), true
	}
	return int64(binary.LittleEndian.Uint64(t[sd.key.Offset:])), true
}

// rowAt is kept row r's place.
func (ps *regPartSide) rowAt(r uint32, shift uint) *regRow {
	return &ps.rows[r>>shift][r&(1<<shift-1)]
}

// row is kept row r (0-based) of tuples of ts bytes.
func (ps *regPartSide) row(r uint32, shift uint, ts int) []byte {
	m := ps.rowAt(r, shift)
	o := int(m.idx) * ts
	return ps.segs[m.seg][o : o+ts : o+ts]
}

// prepare copies the tuples of side's input with a key, and their long
// strings, into the side's store (one allocation: the store's lock, once)
// and reads their keys and partitions into b. It reads only what the join
// was made with and the store: any goroutine may prepare while another
// files. With snap set, the long strings are not read from the views,
// whose addresses are another process's, but from snap, in
// AppendSnapshot's order.
func (rj *RegularJoin) prepare(side int, tuples []byte, b *regBatch, snap *window.SnapshotReader) error {
	sd := &rj.sides[side]
	ts := sd.tupleSize
	b.side, b.in, b.filed = side, len(tuples), false
	b.keys, b.kept, b.tuples = b.keys[:0], nil, 0
	for p := range b.parts {
		b.parts[p] = b.parts[p][:0]
	}
	b.minT, b.maxT, b.hasTime = math.MaxInt64, math.MinInt64, false
	kept, strBytes := 0, 0
	for o := 0; o+ts <= len(tuples); o += ts {
		t := tuples[o : o+ts]
		b.tuples++
		at := int64(binary.LittleEndian.Uint64(t))
		b.minT, b.maxT, b.hasTime = min(b.minT, at), max(b.maxT, at), true
		if sd.key.IsNull(t) {
			continue
		}
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
			var src []byte
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
		// The key of the copy: a String's view now points at its bytes,
		// also where the tuple came from a snapshot.
		k, _ := sd.keyOf(c)
		p := regPartOf(k)
		b.parts[p] = append(b.parts[p], uint32(len(b.keys)))
		b.keys = append(b.keys, k)
	}
	return nil
}

// regStrHash is a String key's index key: a hash of its bytes (a
// variable, so that a test can make every string collide).
var regStrHash = func(b []byte) uint64 { return maphash.Bytes(regSeed, b) }

var regSeed = maphash.MakeSeed()

// keyBytes is tuple t's String key's bytes (its view must point at them).
func (sd *regSide) keyBytes(t []byte) []byte {
	return strview.Bytes(t[sd.key.Offset : sd.key.Offset+strview.Size])
}

// sameKey reports whether kept tuples a and b, of sides sa and sb, have
// equal String keys (their index keys, hashes, being equal).
func sameKey(sa, sb *regSide, a, b []byte) bool {
	return bytes.Equal(sa.keyBytes(a), sb.keyBytes(b))
}

// Add files side's tuples (0 left, 1 right) and queues their pairs with
// the other side's tuples kept so far. It refuses nothing: ok is always
// true. The caller's lock serialises Adds (they share a batch).
func (rj *RegularJoin) Add(side int, tuples []byte) (r Refused, ok bool) {
	b := &rj.adding
	if err := rj.prepare(side, tuples, b, nil); err != nil {
		panic(err) // no snapshot: prepare has nothing to refuse
	}
	rj.file(b, true)
	return Refused{}, true
}

// file keeps b's tuples, prepared, partition by partition, each under its
// partition's lock: each tuple is kept in its side's index, then, where
// pairs is set, looked up in the other side's, its pairs output; the
// input's pairs are queued at the end.
func (rj *RegularJoin) file(b *regBatch, pairs bool) {
	side := b.side
	sd, od := &rj.sides[side], &rj.sides[1-side]
	ts, ots := sd.tupleSize, od.tupleSize
	sd.tuples.Add(uint64(b.tuples))
	sd.nulls.Add(uint64(b.tuples - len(b.keys)))
	if b.hasTime {
		for w := sd.wm.Load(); b.maxT > w && !sd.wm.CompareAndSwap(w, b.maxT); w = sd.wm.Load() {
		}
	}
	b.filed = true
	if len(b.keys) == 0 {
		return
	}
	var out []byte
	if pairs {
		out = rj.takeBuffer()
	}
	per := 1 << sd.shift
	for p := range b.parts {
		idx := b.parts[p]
		if len(idx) == 0 {
			continue
		}
		part := &rj.parts[p]
		part.mu.Lock()
		ps, os := &part.sides[side], &part.sides[1-side]
		if ps.n > math.MaxUint32-uint32(len(idx))-1 || len(ps.segs) == math.MaxUint32 {
			part.mu.Unlock()
			panic(fmt.Sprintf("kernels: regular join %q: %d tuples kept in a partition of a side", rj.j.Name, ps.n))
		}
		seg := uint32(len(ps.segs))
		ps.segs = append(ps.segs, b.kept)
		for _, i := range idx {
			k := b.keys[i]
			r := ps.n
			c := int(r >> sd.shift)
			if c == len(ps.rows) {
				ps.rows = append(ps.rows, make([]regRow, 0, per))
			}
			ps.rows[c] = append(ps.rows[c], regRow{seg: seg, idx: i, next: ps.index.put(k, r+1)})
			ps.n++
			if !pairs {
				continue
			}
			kept := b.kept[int(i)*ts : int(i+1)*ts : int(i+1)*ts]
			for m := os.index.get(k); m != 0; m = os.rowAt(m-1, od.shift).next {
				other := os.row(m-1, od.shift, ots)
				if sd.keyStr && !sameKey(sd, od, kept, other) {
					continue
				}
				if side == 0 {
					out = append(out, kept...)
					out = append(out, other...)
				} else {
					out = append(out, other...)
					out = append(out, kept...)
				}
			}
		}
		part.mu.Unlock()
	}
	if pairs {
		rj.queueOutput(out, b.minT)
	}
}

// takeBuffer returns an output buffer: a free one, or one the size of the
// largest so far (nil before any).
func (rj *RegularJoin) takeBuffer() []byte {
	rj.qmu.Lock()
	defer rj.qmu.Unlock()
	if n := len(rj.free); n > 0 {
		out := rj.free[n-1][:0]
		rj.free = rj.free[:n-1]
		return out
	}
	if rj.outCap > 0 {
		return make([]byte, 0, rj.outCap)
	}
	return nil
}

// queueOutput queues an input's pairs (or gives an empty buffer back).
func (rj *RegularJoin) queueOutput(out []byte, minT int64) {
	rj.qmu.Lock()
	defer rj.qmu.Unlock()
	if len(out) == 0 {
		if out != nil {
			rj.free = append(rj.free, out)
		}
		return
	}
	rj.outCap = max(rj.outCap, cap(out))
	rj.pairs += uint64(len(out) / rj.outSize)
	rj.outputs++
	rj.queue = append(rj.queue, regOutput{pairs: out, min: minT})
}

// AddOwnedCut is Add of tuples that c filed already (Cut), which it
// leaves as they are; where c did not file these (nil, or another
// input's), it is Add. The join copied what it keeps, so *tuples and strs
// stay the caller's (strs is reset: the join needs none of its strings).
func (rj *RegularJoin) AddOwnedCut(side int, tuples *[]byte, strs *strview.Arena, c *JoinCut) (Refused, bool) {
	if c != nil && c.reg.filed && c.reg.side == side && c.reg.in == len(*tuples) {
		c.reg.filed = false // once
	} else {
		rj.Add(side, *tuples)
	}
	*tuples = (*tuples)[:0]
	if strs != nil {
		strs.Reset()
	}
	return Refused{}, true
}

// Cut files side's input on the worker that made it, without the
// caller's lock: prepare, then file, its pairs queued for Next. The
// AddOwnedCut of the same input, under the caller's lock, then has
// nothing to do. Any goroutine may cut while others cut or hold the join.
func (rj *RegularJoin) Cut(side int, tuples []byte, c *JoinCut) {
	c.runs, c.n, c.max, c.refused = c.runs[:0], 0, math.MinInt64, false
	if err := rj.prepare(side, tuples, &c.reg, nil); err != nil {
		c.reg.filed = false
		return
	}
	rj.file(&c.reg, true)
}

// Added is how many tuples side's input brought so far.
func (rj *RegularJoin) Added(side int) uint64 { return rj.sides[side].tuples.Load() }

// Kept is how many tuples side keeps (those without a NULL key).
func (rj *RegularJoin) Kept(side int) uint64 {
	n := uint64(0)
	for p := range rj.parts {
		part := &rj.parts[p]
		part.mu.Lock()
		n += uint64(part.sides[side].n)
		part.mu.Unlock()
	}
	return n
}

// Joined is how many inputs output pairs.
func (rj *RegularJoin) Joined() uint64 {
	rj.qmu.Lock()
	defer rj.qmu.Unlock()
	return rj.outputs
}

// Finish marks side's input ended and reports whether both are.
func (rj *RegularJoin) Finish(side int) (all bool) {
	rj.sides[side].done = true
	return rj.sides[0].done && rj.sides[1].done
}

// Lead reports the bytes side keeps; a regular join's side is never
// ahead: the other side's tuples join it whenever they come.
func (rj *RegularJoin) Lead(side int) (held int, ahead bool) {
	return int(rj.sides[side].tuples.Load()-rj.sides[side].nulls.Load()) * rj.sides[side].tupleSize, false
}

// Watermark is side's largest event time filed so far, math.MinInt64
// before any.
func (rj *RegularJoin) Watermark(side int) int64 { return rj.sides[side].wm.Load() }

// Pending is how many inputs' pairs wait for Next.
func (rj *RegularJoin) Pending() int {
	rj.qmu.Lock()
	defer rj.qmu.Unlock()
	return len(rj.queue) - rj.head
}

// Ready reports whether Next has pairs.
func (rj *RegularJoin) Ready() bool {
	rj.qmu.Lock()
	defer rj.qmu.Unlock()
	return rj.head < len(rj.queue)
}

// Next takes the oldest queued pairs off the queue; hand them back with
// Recycle once they are used.
func (rj *RegularJoin) Next() (o JoinOutput, ok bool) {
	rj.qmu.Lock()
	defer rj.qmu.Unlock()
	if rj.head == len(rj.queue) {
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
	rj.qmu.Lock()
	defer rj.qmu.Unlock()
	if len(rj.lent) > 0 {
		rj.lent = rj.lent[:copy(rj.lent, rj.lent[1:])]
	}
	if o.Pairs != nil {
		rj.free = append(rj.free, o.Pairs[:0])
	}
}

// Unreleased is the smallest event time of the tuples whose pairs are not
// all handed on yet (queued, or handed out and not recycled); ok false
// where every filed tuple's pairs were.
func (rj *RegularJoin) Unreleased() (t int64, ok bool) {
	rj.qmu.Lock()
	defer rj.qmu.Unlock()
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
	rj.qmu.Lock()
	defer rj.qmu.Unlock()
	return WindowJoinStats{Tuples: rj.sides[0].tuples.Load() + rj.sides[1].tuples.Load(), Pairs: rj.pairs}
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

// AppendSnapshot appends the join's state to dst, once every input's
// pairs were taken off the queue and recycled and no input is being filed
// (the engine's snapshot drains the join first): per side its tuple size,
// watermark, counters and kept tuples with their long strings; the index
// is rebuilt on restore.
//
// Encoding (little-endian): version u8; pairs, outputs u64; per side its
// tuple size u32, watermark i64, tuples, nulls u64, kept u64, the kept
// tuples' bytes (partition by partition, each in the order filed), then
// for each kept tuple in that order each String attribute's long string
// (not NULL, longer than a view holds): its length u32 and bytes.
func (rj *RegularJoin) AppendSnapshot(dst []byte) ([]byte, error) {
	rj.qmu.Lock()
	n, pairs, outputs := len(rj.queue)-rj.head+len(rj.lent), rj.pairs, rj.outputs
	rj.qmu.Unlock()
	if n > 0 {
		return dst, fmt.Errorf("join %q: snapshot with %d outputs not handed on", rj.j.Name, n)
	}
	for p := range rj.parts {
		rj.parts[p].mu.Lock()
		defer rj.parts[p].mu.Unlock()
	}
	le := binary.LittleEndian
	dst = append(dst, regularSnapshotVersion)
	dst = le.AppendUint64(dst, pairs)
	dst = le.AppendUint64(dst, outputs)
	for i := range rj.sides {
		sd := &rj.sides[i]
		dst = le.AppendUint32(dst, uint32(sd.tupleSize))
		dst = le.AppendUint64(dst, uint64(sd.wm.Load()))
		dst = le.AppendUint64(dst, sd.tuples.Load())
		dst = le.AppendUint64(dst, sd.nulls.Load())
		kept := uint64(0)
		for p := range rj.parts {
			kept += uint64(rj.parts[p].sides[i].n)
		}
		dst = le.AppendUint64(dst, kept)
		for p := range rj.parts {
			ps := &rj.parts[p].sides[i]
			for r := uint32(0); r < ps.n; r++ {
				dst = append(dst, ps.row(r, sd.shift, sd.tupleSize)...)
			}
		}
		for p := range rj.parts {
			ps := &rj.parts[p].sides[i]
			for r := uint32(0); r < ps.n && len(sd.strs) > 0; r++ {
				t := ps.row(r, sd.shift, sd.tupleSize)
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
	}
	return dst, nil
}

// RestoreSnapshot replaces the join's state by a snapshot of
// AppendSnapshot, taken of a join of the same tuple sizes (checked), and
// returns the bytes after it. Call it before the first Add or Cut. On
// error the join is left empty.
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
	pairs, outputs := r.U64(), r.U64()
	for i := range rj.sides {
		sd := &rj.sides[i]
		if ts := int(r.U32()); r.Err() == nil && ts != sd.tupleSize {
			return nil, fmt.Errorf("side %d: snapshot of %d-byte tuples, not %d", i, ts, sd.tupleSize)
		}
		wm := int64(r.U64())
		tuples, nulls := r.U64(), r.U64()
		n := r.U64()
		if r.Err() != nil {
			return nil, r.Err()
		}
		switch {
		case n > uint64(len(r.Rest()))/uint64(sd.tupleSize):
			return nil, fmt.Errorf("side %d: %d tuples kept: truncated", i, n)
		case n+nulls != tuples:
			return nil, fmt.Errorf("side %d: %d tuples, %d with a NULL key and %d kept do not add up", i, tuples, nulls, n)
		}
		data := r.Take(int(n) * sd.tupleSize)
		if r.Err() != nil {
			return nil, r.Err()
		}
		strBytes := uint64(0)
		for o := 0; o < len(data); o += sd.tupleSize {
			t := data[o : o+sd.tupleSize]
			if sd.key.IsNull(t) {
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
		b := &rj.adding
		if err := rj.prepare(i, data, b, r); err != nil {
			return nil, fmt.Errorf("side %d: %w", i, err)
		}
		rj.file(b, false)
		sd.tuples.Store(tuples)
		sd.nulls.Store(nulls)
		sd.wm.Store(wm)
	}
	rj.pairs, rj.outputs = pairs, outputs
	return r.Rest(), nil
}

// clear empties the join, as NewRegularJoin returns it.
func (rj *RegularJoin) clear() {
	rj.Free()
	for i := range rj.sides {
		sd := &rj.sides[i]
		sd.tuples.Store(0)
		sd.nulls.Store(0)
		sd.wm.Store(math.MinInt64)
		sd.done = false
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
		rj.sides[i].store.free()
	}
	for p := range rj.parts {
		part := &rj.parts[p]
		part.mu.Lock()
		part.sides = [2]regPartSide{}
		part.mu.Unlock()
	}
}
