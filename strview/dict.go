package strview

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Dict is a dictionary of strings: each distinct string gets a number,
// 1, 2, ... in the order its users first met it (0 is NULL), so that its
// users group by the number, as by any integer key. A query's kernels
// share one for the strings they group by; a source's decoders share one
// for the columns those strings come from, and write each string's number
// in the tuple beside its view (a dictionary-encoded column: the query's
// kernels then read the number rather than hash the string, and use the
// source's Dict as theirs). Each user keeps a DictCache of its own and
// takes the lock only for a string its cache has not met (once per
// distinct string per user), never per tuple. Numbers depend on the
// users' timing: whoever emits rows orders them by the strings, never by
// their numbers, so that the output is the same whatever the timing.
//
// It keeps every string for its life (as the groups' states keep their
// keys): its bytes are in an arena of its own, so that a view of a key
// may point there for as long as the Dict lives.
//
// String takes no lock: the result stages read a key's string per row
// (sorting a window's rows, writing them) on every worker at once, and a
// read lock's shared counter moved between the cores at every call
// (docs/performance.md, Nexmark q8). Numbers are only added, under mu:
// strs is appended to (a new array where it is full) and published as a
// new header; a number is known only after the Intern that gave it, so
// every header a reader can load of it holds it.
type Dict struct {
	mu    sync.Mutex
	ids   map[string]int64
	strs  [][]byte // number-1: the string, in arena; under mu
	read  atomic.Pointer[[][]byte]
	arena Arena
}

// NewDict returns an empty dictionary.
func NewDict() *Dict { return &Dict{ids: map[string]int64{}} }

// Intern returns s's number, giving it one where it has none.
func (d *Dict) Intern(s []byte) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id, ok := d.ids[string(s)]; ok {
		return id
	}
	if len(d.strs) >= math.MaxInt32 {
		// Unreachable in practice: a group key holds a number in 4
		// bytes (query.StringKeyWidth), below 2^31.
		panic("strview: more than 2^31 distinct strings in one dictionary")
	}
	d.add(s)
	d.publish()
	return int64(len(d.strs))
}

// add numbers s, which has no number. It runs under mu.
func (d *Dict) add(s []byte) {
	c := d.arena.Copy(s)
	d.strs = append(d.strs, c)
	d.ids[string(c)] = int64(len(d.strs))
}

// publish makes strs the readers'. It runs under mu.
func (d *Dict) publish() {
	strs := d.strs
	d.read.Store(&strs)
}

// loaded is the strings as last published.
func (d *Dict) loaded() [][]byte {
	if p := d.read.Load(); p != nil {
		return *p
	}
	return nil
}

// String returns the string of number id (id > 0), valid for the
// dictionary's life.
func (d *Dict) String(id int64) []byte {
	return d.loaded()[id-1]
}

// Len is the number of strings.
func (d *Dict) Len() int {
	return len(d.loaded())
}

// Restore makes the dictionary hold strs, numbered from 1 in order (a
// snapshot's: the groups' states it restores refer to these numbers).
// Users that share the dictionary each restore their snapshot of it, taken
// at one moment or another: each is the dictionary as it was then, so the
// strings it already holds must be strs' first ones, and strs' others are
// numbered after them.
func (d *Dict) Restore(strs [][]byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, s := range strs {
		if i < len(d.strs) {
			if !bytes.Equal(d.strs[i], s) {
				return fmt.Errorf("strview: restoring a dictionary: number %d is %q, the snapshot has %q", i+1, d.strs[i], s)
			}
			continue
		}
		if _, ok := d.ids[string(s)]; ok {
			return fmt.Errorf("strview: restoring a dictionary: %q is numbered twice", s)
		}
		d.add(s)
	}
	d.publish()
	return nil
}

// AppendAll appends every string in number order (a snapshot).
func (d *Dict) AppendAll(dst [][]byte) [][]byte {
	return append(dst, d.loaded()...)
}

// DictCache is one user's cache of a Dict: the numbers of the strings it
// met, in an open-addressed table (linear probing, at most half full) with
// no lock, keyed by the strings' views, so that a tuple's key is found
// from its view's two words. A string of at most MaxInline bytes is its
// view (zero-padded): hashed and compared as two words, without reading
// anywhere else. A longer one is hashed over its bytes and compared with
// the dictionary's copy, which its slot references, once its hash and its
// length and first four bytes (the view's first word) matched.
//
// A DictCache is not safe for concurrent use: each worker's kernel has
// its own, and so has each goroutine that decodes (its decoders take it
// in turn: source.Options.DictCaches).
type DictCache struct {
	dict  *Dict
	slots []dictSlot // a power of two long; id 0: free
	n     int
	// hashes is IDs' register of a chunk's hashes.
	hashes []uint64
}

type dictSlot struct {
	hash   uint64
	w0, w1 uint64 // the view of the dictionary's copy, valid for its life
	id     int64
}

// NewDictCache returns an empty cache of dict.
func NewDictCache(dict *Dict) *DictCache {
	return &DictCache{dict: dict, slots: make([]dictSlot, 64)}
}

// Multipliers of the inline strings' hash (wyhash's).
const (
	internK0 = 0xa0761d6478bd642f
	internK1 = 0xe7037ed1a0b428db
)

// viewHash hashes the string of the view whose words are w0, w1; long is
// its bytes where it is longer than MaxInline (nil otherwise).
// Only the cache's own lookups use it: equal strings hash equally whatever
// their views' addresses, which is all a table needs.
func viewHash(w0, w1 uint64, long []byte) uint64 {
	if long == nil {
		hi, lo := bits.Mul64(w0^internK0, w1^internK1)
		return hi ^ lo
	}
	return HashBytes(long, w0)
}

// IDs sets dst[i] to the number of the string of the view at
// data[i*ts+off:] for each i of sel (ascending; 0 where nulls[i]), in two
// passes: the hashes first, then the probes, which then depend on nothing
// but their own slot and overlap one another's loads. viewHash and
// lookup's probe are written out here: called per tuple, they made a
// string key 13-15% slower (kernels' BenchmarkGroupByKey).
func (c *DictCache) IDs(dst []int64, data []byte, ts, off int, sel []int32, nulls []bool) {
	if n := len(sel); n > 0 && int(sel[n-1]) >= len(c.hashes) {
		c.hashes = make([]uint64, max(int(sel[n-1])+1, 2*len(c.hashes)))
	}
	hashes := c.hashes
	for _, i := range sel {
		if nulls != nil && nulls[i] {
			continue // a NULL's view may be anything: not read
		}
		o := int(i)*ts + off
		v := data[o : o+Size]
		w0, w1 := binary.LittleEndian.Uint64(v[0:8]), binary.LittleEndian.Uint64(v[8:16])
		if uint32(w0) <= MaxInline {
			hi, lo := bits.Mul64(w0^internK0, w1^internK1)
			hashes[i] = hi ^ lo
		} else {
			hashes[i] = HashBytes(Referenced(uint32(w0), w1), w0)
		}
	}
	mask := uint64(len(c.slots) - 1)
	for _, i := range sel {
		if nulls != nil && nulls[i] {
			dst[i] = 0
			continue
		}
		o := int(i)*ts + off
		v := data[o : o+Size]
		w0, w1 := binary.LittleEndian.Uint64(v[0:8]), binary.LittleEndian.Uint64(v[8:16])
		h := hashes[i]
		j := h & mask
		for ; c.slots[j].id != 0; j = (j + 1) & mask {
			sl := &c.slots[j]
			if sl.hash != h || sl.w0 != w0 {
				continue
			}
			if sl.w1 == w1 || (uint32(w0) > MaxInline && equalTail(Referenced(uint32(w0), w1), Referenced(uint32(w0), sl.w1))) {
				break
			}
		}
		if c.slots[j].id != 0 {
			dst[i] = c.slots[j].id
			continue
		}
		var long []byte
		if uint32(w0) > MaxInline {
			long = Referenced(uint32(w0), w1)
		}
		dst[i], _ = c.add(j, h, w0, w1, long)
		mask = uint64(len(c.slots) - 1)
	}
}

// ID is the number of string s.
func (c *DictCache) ID(s []byte) int64 {
	id, _, _ := c.lookup(s)
	return id
}

// Put writes the view of s into dst (Size bytes) and returns s's number:
// a long s's view points to the dictionary's copy, so that the view is
// valid for the dictionary's life, whatever memory s was in (a decoder's
// line, about to be reused).
func (c *DictCache) Put(dst, s []byte) int64 {
	id, w0, w1 := c.lookup(s)
	binary.LittleEndian.PutUint64(dst[0:8], w0)
	binary.LittleEndian.PutUint64(dst[8:16], w1)
	return id
}

// lookup is the number of string s and the words of its view in the
// dictionary (inline, or pointing to the dictionary's copy).
func (c *DictCache) lookup(s []byte) (id int64, w0, w1 uint64) {
	// A long string's view holds its address, which the probe only
	// compares with the slots' own (the dictionary's copies') as a
	// shortcut and never reads.
	var v [Size]byte
	PutRef(v[:], s)
	w0, w1 = binary.LittleEndian.Uint64(v[0:8]), binary.LittleEndian.Uint64(v[8:16])
	var long []byte
	if len(s) > MaxInline {
		long = s
	}
	h := viewHash(w0, w1, long)
	mask := uint64(len(c.slots) - 1)
	i := h & mask
	for ; c.slots[i].id != 0; i = (i + 1) & mask {
		sl := &c.slots[i]
		if sl.hash != h || sl.w0 != w0 {
			continue
		}
		if sl.w1 == w1 || (long != nil && equalTail(long, Referenced(uint32(w0), sl.w1))) {
			return sl.id, w0, sl.w1
		}
	}
	id, w1 = c.add(i, h, w0, w1, long)
	return id, w0, w1
}

// add numbers a string this cache had not met (the dictionary's number,
// under its lock) and keeps it in free slot i. It returns the number and
// the second word of the string's view in the dictionary.
func (c *DictCache) add(i, h, w0, w1 uint64, long []byte) (int64, uint64) {
	var id int64
	if long == nil {
		var v [Size]byte
		binary.LittleEndian.PutUint64(v[0:8], w0)
		binary.LittleEndian.PutUint64(v[8:16], w1)
		id = c.dict.Intern(Bytes(v[:]))
	} else {
		id = c.dict.Intern(long)
		w1 = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(c.dict.String(id)))))
	}
	c.slots[i] = dictSlot{hash: h, w0: w0, w1: w1, id: id}
	c.n++
	if 2*c.n > len(c.slots) {
		c.grow()
	}
	return id, w1
}

// equalTail reports whether a and b, of one length over MaxInline
// and equal in their first 4 bytes, are equal: word by word, the last word
// overlapping.
func equalTail(a, b []byte) bool {
	n := len(a)
	if len(b) != n {
		return false
	}
	for p := 4; p < n-8; p += 8 {
		if binary.LittleEndian.Uint64(a[p:]) != binary.LittleEndian.Uint64(b[p:]) {
			return false
		}
	}
	return binary.LittleEndian.Uint64(a[n-8:]) == binary.LittleEndian.Uint64(b[n-8:])
}

// grow doubles the table.
func (c *DictCache) grow() {
	old := c.slots
	c.slots = make([]dictSlot, 2*len(old))
	mask := uint64(len(c.slots) - 1)
	for _, sl := range old {
		if sl.id == 0 {
			continue
		}
		i := sl.hash & mask
		for c.slots[i].id != 0 {
			i = (i + 1) & mask
		}
		c.slots[i] = sl
	}
}
