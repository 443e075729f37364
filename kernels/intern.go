package kernels

import (
	"encoding/binary"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/saber-hx/saber-hx/strview"
)

// Strings is a query's dictionary of the strings it groups by: each
// distinct string gets a number, 1, 2, ... in the order the kernels first
// met it (0 is NULL), and the kernels group by the number, as by any
// integer key. Its kernels share it; each keeps a cache of its own and
// takes the lock only for a string it has not met (once per distinct
// string per worker), never per tuple. Numbers depend on the workers'
// timing: rows are ordered by the strings when a window is emitted, never
// by their numbers, so that the output is the same whatever the workers.
//
// It keeps every string for the query's life (as the groups' states keep
// their keys): its bytes are in an arena of its own, so that an output
// row's view of a key points there.
//
// String takes no lock: the result stages read a key's string per row
// (sorting a window's rows, writing them) on every worker at once, and a
// read lock's shared counter moved between the cores at every call
// (docs/performance.md, Nexmark q8). Numbers are only added, under mu:
// strs is appended to (a new array where it is full) and published as a
// new header; a number is known only after the intern that gave it, so
// every header a reader can load of it holds it.
type Strings struct {
	mu    sync.Mutex
	ids   map[string]int64
	strs  [][]byte // number-1: the string, in arena; under mu
	read  atomic.Pointer[[][]byte]
	arena strview.Arena
}

func newStrings() *Strings { return &Strings{ids: map[string]int64{}} }

// intern returns s's number, giving it one where it has none.
func (d *Strings) intern(s []byte) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id, ok := d.ids[string(s)]; ok {
		return id
	}
	if len(d.strs) >= math.MaxInt32 {
		// Unreachable in practice (query.StringKeyWidth): a key of 4
		// bytes holds numbers below 2^31.
		panic("kernels: more than 2^31 distinct strings in one query's group keys")
	}
	c := d.arena.Copy(s)
	d.strs = append(d.strs, c)
	d.publish()
	id := int64(len(d.strs))
	d.ids[string(c)] = id
	return id
}

// publish makes strs the readers'. It runs under mu.
func (d *Strings) publish() {
	strs := d.strs
	d.read.Store(&strs)
}

// loaded is the strings as last published.
func (d *Strings) loaded() [][]byte {
	if p := d.read.Load(); p != nil {
		return *p
	}
	return nil
}

// String returns the string of number id (id > 0), valid for the
// dictionary's life.
func (d *Strings) String(id int64) []byte {
	return d.loaded()[id-1]
}

// Len is the number of strings.
func (d *Strings) Len() int {
	return len(d.loaded())
}

// Restore makes the dictionary hold strs, numbered from 1 in order (a
// snapshot's: the groups' states it restores refer to these numbers).
// The dictionary must be empty.
func (d *Strings) Restore(strs [][]byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range strs {
		c := d.arena.Copy(s)
		d.strs = append(d.strs, c)
		d.ids[string(c)] = int64(len(d.strs))
	}
	d.publish()
}

// AppendAll appends every string in number order (a snapshot).
func (d *Strings) AppendAll(dst [][]byte) [][]byte {
	return append(dst, d.loaded()...)
}

// internCache is one kernel's: the numbers of the strings it met, in an
// open-addressed table (linear probing, at most half full) with no lock,
// keyed by the strings' views, so that a tuple's key is found from its
// view's two words. A string of at most strview.MaxInline bytes is its
// view (zero-padded): hashed and compared as two words, without reading
// anywhere else. A longer one is hashed over its bytes and compared with
// the dictionary's copy, which its slot references, once its hash and its
// length and first four bytes (the view's first word) matched.
type internCache struct {
	dict  *Strings
	slots []internSlot // a power of two long; id 0: free
	n     int
	// hashes is viewIDs' register of a chunk's hashes.
	hashes []uint64
}

type internSlot struct {
	hash   uint64
	w0, w1 uint64 // the view of the dictionary's copy, valid for its life
	id     int64
}

func newInternCache(dict *Strings) *internCache {
	return &internCache{dict: dict, slots: make([]internSlot, 64), hashes: make([]uint64, chunk)}
}

// Multipliers of the inline strings' hash (wyhash's).
const (
	internK0 = 0xa0761d6478bd642f
	internK1 = 0xe7037ed1a0b428db
)

// viewHash hashes the string of the view whose words are w0, w1; long is
// its bytes where it is longer than strview.MaxInline (nil otherwise).
// Only the cache's own lookups use it: equal strings hash equally whatever
// their views' addresses, which is all a table needs.
func viewHash(w0, w1 uint64, long []byte) uint64 {
	if long == nil {
		hi, lo := bits.Mul64(w0^internK0, w1^internK1)
		return hi ^ lo
	}
	return strview.HashBytes(long, w0)
}

// viewIDs sets dst[i] to the number of the string of the view at
// data[i*ts+off:] for each i of sel (0 where nulls[i]), in two passes: the
// hashes first, then the probes, which then depend on nothing but their
// own slot and overlap one another's loads. viewHash and find's probe are
// written out here: called per tuple, they made a string key 13-15%
// slower (BenchmarkGroupByKey).
func (c *internCache) viewIDs(dst []int64, data []byte, ts, off int, sel []int32, nulls []bool) {
	hashes := c.hashes
	for _, i := range sel {
		if nulls != nil && nulls[i] {
			continue // a NULL's view may be anything: not read
		}
		o := int(i)*ts + off
		v := data[o : o+strview.Size]
		w0, w1 := binary.LittleEndian.Uint64(v[0:8]), binary.LittleEndian.Uint64(v[8:16])
		if uint32(w0) <= strview.MaxInline {
			hi, lo := bits.Mul64(w0^internK0, w1^internK1)
			hashes[i] = hi ^ lo
		} else {
			hashes[i] = strview.HashBytes(strview.Referenced(uint32(w0), w1), w0)
		}
	}
	mask := uint64(len(c.slots) - 1)
	for _, i := range sel {
		if nulls != nil && nulls[i] {
			dst[i] = 0
			continue
		}
		o := int(i)*ts + off
		v := data[o : o+strview.Size]
		w0, w1 := binary.LittleEndian.Uint64(v[0:8]), binary.LittleEndian.Uint64(v[8:16])
		h := hashes[i]
		j := h & mask
		for ; c.slots[j].id != 0; j = (j + 1) & mask {
			sl := &c.slots[j]
			if sl.hash != h || sl.w0 != w0 {
				continue
			}
			if sl.w1 == w1 || (uint32(w0) > strview.MaxInline && equalTail(strview.Referenced(uint32(w0), w1), strview.Referenced(uint32(w0), sl.w1))) {
				break
			}
		}
		if c.slots[j].id != 0 {
			dst[i] = c.slots[j].id
			continue
		}
		var long []byte
		if uint32(w0) > strview.MaxInline {
			long = strview.Referenced(uint32(w0), w1)
		}
		dst[i] = c.add(j, h, w0, w1, long)
		mask = uint64(len(c.slots) - 1)
	}
}

// id is the number of string s.
func (c *internCache) id(s []byte) int64 {
	// A long string's view holds its address, which find only compares
	// with the slots' own (the dictionary's copies') as a shortcut and
	// never reads.
	var v [strview.Size]byte
	strview.PutRef(v[:], s)
	var long []byte
	if len(s) > strview.MaxInline {
		long = s
	}
	return c.find(binary.LittleEndian.Uint64(v[0:8]), binary.LittleEndian.Uint64(v[8:16]), long)
}

// find is the number of the string of view words w0, w1 (long: its bytes
// where it is long).
func (c *internCache) find(w0, w1 uint64, long []byte) int64 {
	h := viewHash(w0, w1, long)
	mask := uint64(len(c.slots) - 1)
	i := h & mask
	for ; c.slots[i].id != 0; i = (i + 1) & mask {
		sl := &c.slots[i]
		if sl.hash != h || sl.w0 != w0 {
			continue
		}
		if sl.w1 == w1 || (long != nil && equalTail(long, strview.Referenced(uint32(w0), sl.w1))) {
			return sl.id
		}
	}
	return c.add(i, h, w0, w1, long)
}

// add numbers a string this kernel had not met (the dictionary's number,
// under its lock) and keeps it in free slot i.
func (c *internCache) add(i, h, w0, w1 uint64, long []byte) int64 {
	var id int64
	if long == nil {
		var v [strview.Size]byte
		binary.LittleEndian.PutUint64(v[0:8], w0)
		binary.LittleEndian.PutUint64(v[8:16], w1)
		id = c.dict.intern(strview.Bytes(v[:]))
	} else {
		id = c.dict.intern(long)
		w1 = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(c.dict.String(id)))))
	}
	c.slots[i] = internSlot{hash: h, w0: w0, w1: w1, id: id}
	c.n++
	if 2*c.n > len(c.slots) {
		c.grow()
	}
	return id
}

// equalTail reports whether a and b, of one length over strview.MaxInline
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
func (c *internCache) grow() {
	old := c.slots
	c.slots = make([]internSlot, 2*len(old))
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
