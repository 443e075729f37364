package kernels

import (
	"math"
	"sync"

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
type Strings struct {
	mu    sync.RWMutex
	ids   map[string]int64
	strs  [][]byte // number-1: the string, in arena
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
	id := int64(len(d.strs))
	d.ids[string(c)] = id
	return id
}

// String returns the string of number id (id > 0), valid for the
// dictionary's life.
func (d *Strings) String(id int64) []byte {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.strs[id-1]
}

// Len is the number of strings.
func (d *Strings) Len() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.strs)
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
}

// AppendAll appends every string in number order (a snapshot).
func (d *Strings) AppendAll(dst [][]byte) [][]byte {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return append(dst, d.strs...)
}

// internCache is one kernel's: the numbers of the strings it met, in an
// open-addressed table keyed by the strings' hashes (linear probing, at
// most half full), whose slots hold the dictionary's copy of each string:
// a hit costs a hash, a probe or two and one comparison, with no lock.
type internCache struct {
	dict  *Strings
	slots []internSlot // a power of two long; id 0: empty
	n     int
}

type internSlot struct {
	hash uint64
	id   int64
	s    []byte // the dictionary's copy, valid for its life
}

func newInternCache(dict *Strings) *internCache {
	return &internCache{dict: dict, slots: make([]internSlot, 64)}
}

func (c *internCache) id(s []byte) int64 {
	h := strview.HashBytes(s, 0)
	mask := uint64(len(c.slots) - 1)
	i := h & mask
	for ; c.slots[i].id != 0; i = (i + 1) & mask {
		if sl := &c.slots[i]; sl.hash == h && string(sl.s) == string(s) {
			return sl.id
		}
	}
	// Not met before by this kernel: the dictionary's number (under its
	// lock), kept here.
	id := c.dict.intern(s)
	c.slots[i] = internSlot{hash: h, id: id, s: c.dict.String(id)}
	c.n++
	if 2*c.n > len(c.slots) {
		c.grow()
	}
	return id
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
