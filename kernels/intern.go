package kernels

import (
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

// internCache is one kernel's: the numbers of the strings it met.
type internCache struct {
	dict *Strings
	ids  map[string]int64
}

func (c *internCache) id(s []byte) int64 {
	if id, ok := c.ids[string(s)]; ok {
		return id
	}
	id := c.dict.intern(s)
	c.ids[string(s)] = id
	return id
}
