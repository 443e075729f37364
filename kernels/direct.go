package kernels

import (
	"encoding/binary"
	"math"
	"sync"
	"sync/atomic"

	"github.com/saber-hx/saber-hx/window"
)

// directMap maps integer GROUP BY keys to the slots of direct tables (made
// only for a layout an Assembler merges, by key: Layout.MergedByKey): where
// every key part has taken few values, a key's slot is the dense index of
// its parts' offsets from their lowest values, so that the count loop
// neither hashes nor probes (countDirect). The ranges are learnt from the
// tuples: a chunk with a value outside them widens them (doubling a range
// that grows, so that keys that drift remap a few times, not per chunk)
// under a new mapping number; keys too spread for directMaxSlots leave the
// kernel to probed tables for good.
type directMap struct {
	lo, n   []int64 // per key part: its lowest value and its number of values
	grew    []int8  // directSlots' scratch: per part, -1 grown down, 1 up
	slots   int     // the product of n
	mapping uint32  // 0 before the first chunk
	off     bool
}

// directMaxSlots bounds a direct table: a probed one of this many slots
// would hold half as many groups.
const directMaxSlots = 1 << 15

// directSlots computes the direct slot of each tuple of sel (k.dix),
// widening the mapping where a tuple lies outside it; it reports false
// where the kernel probes instead.
func (k *aggregateKernel) directSlots(sel []int32) bool {
	dm := &k.dm
	if dm.off || len(sel) == 0 {
		return false
	}
	if dm.mapping != 0 && k.fillDirect(sel) {
		return true
	}
	lo, n, grew := dm.lo, dm.n, dm.grew
	slots := uint64(1)
	for j := range k.keys {
		src, w4 := k.keys[j].expr.ints, k.keys[j].width == 4
		mn, mx := int64(math.MaxInt64), int64(math.MinInt64)
		for _, i := range sel {
			v := src[i]
			if w4 {
				v = int64(int32(v))
			}
			mn, mx = min(mn, v), max(mx, v)
		}
		grew[j] = 0
		if dm.mapping != 0 {
			hi := lo[j] + n[j] - 1
			switch {
			case mn < lo[j]:
				grew[j] = -1
			case mx > hi:
				grew[j] = 1
			}
			mn, mx = min(mn, lo[j]), max(mx, hi)
		}
		span := uint64(mx) - uint64(mn) + 1
		if span == 0 || span > directMaxSlots || slots*span > directMaxSlots {
			dm.off = true
			return false
		}
		slots *= span
		lo[j], n[j] = mn, int64(span)
	}
	// Room for a range that grew: doubled toward where it grew, while the
	// table stays within bounds.
	for j, g := range grew {
		if g == 0 || slots*2 > directMaxSlots {
			continue
		}
		if g < 0 {
			if lo[j]-n[j] > lo[j] {
				continue // at the bottom of int64
			}
			lo[j] -= n[j]
		}
		slots *= 2
		n[j] *= 2
	}
	sh := k.shared
	sh.mu.Lock()
	slots = sh.union(lo, n, slots)
	dm.slots = int(slots)
	dm.mapping = k.internMapping()
	sh.publish(lo, n, slots, dm.mapping)
	sh.mu.Unlock()
	return k.fillDirect(sel)
}

// sharedDirect is the widest direct mapping the kernels of one query
// learnt. A kernel that widens its mapping widens it to the union of the
// two where that stays within directMaxSlots, and a kernel whose mapping
// the shared one covers adopts it at its next task, so that the kernels of
// all the workers come to one mapping: tables move between workers with
// their tasks, and a table of another mapping than the kernel's has its
// keys rewritten (fillKeys), while the assembler merges the fragments of
// another mapping than the one it pinned through its dictionary rather
// than slot for slot (window's pinned ids). Each kernel learning its own
// ranges from the tuples it saw, two workers ended on two mappings.
type sharedDirect struct {
	mapping atomic.Uint32 // the shared mapping's number (0: none yet), read per task
	mu      sync.Mutex
	lo, n   []int64
	slots   uint64
}

// union widens the ranges lo, n (of slots slots) to take in the shared
// ones as well, where the product stays within directMaxSlots, and returns
// their slots. It runs under mu.
func (sh *sharedDirect) union(lo, n []int64, slots uint64) uint64 {
	if sh.lo == nil {
		return slots
	}
	u := uint64(1)
	for j := range lo {
		ulo := min(lo[j], sh.lo[j])
		uhi := max(lo[j]+n[j]-1, sh.lo[j]+sh.n[j]-1)
		span := uint64(uhi) - uint64(ulo) + 1
		if span == 0 || span > directMaxSlots || u*span > directMaxSlots {
			return slots // the union is too wide: the kernel's own
		}
		u *= span
	}
	for j := range lo {
		hi := max(lo[j]+n[j]-1, sh.lo[j]+sh.n[j]-1)
		lo[j] = min(lo[j], sh.lo[j])
		n[j] = hi - lo[j] + 1
	}
	return u
}

// publish makes lo, n (mapping m) the shared mapping where they cover it.
// It runs under mu.
func (sh *sharedDirect) publish(lo, n []int64, slots uint64, m uint32) {
	if sh.lo != nil && !covers(lo, n, sh.lo, sh.n) {
		return
	}
	sh.lo, sh.n = append(sh.lo[:0], lo...), append(sh.n[:0], n...)
	sh.slots = slots
	sh.mapping.Store(m)
}

// covers reports whether the ranges lo, n take in every value of the
// ranges olo, on.
func covers(lo, n, olo, on []int64) bool {
	for j := range lo {
		if olo[j] < lo[j] || olo[j]+on[j]-1 > lo[j]+n[j]-1 {
			return false
		}
	}
	return true
}

// adoptShared takes the shared mapping where another kernel widened it
// since, and it covers the kernel's own: called once per task, one atomic
// load when nothing changed.
func (k *aggregateKernel) adoptShared() {
	sh := k.shared
	if sh.mapping.Load() == k.dm.mapping {
		return
	}
	dm := &k.dm
	sh.mu.Lock()
	defer sh.mu.Unlock()
	m := sh.mapping.Load()
	if m == 0 || m == dm.mapping || !covers(sh.lo, sh.n, dm.lo, dm.n) {
		return
	}
	copy(dm.lo, sh.lo)
	copy(dm.n, sh.n)
	dm.slots, dm.mapping = int(sh.slots), m
}

// directNumbers numbers the direct mappings: one number for one mapping
// (its key parts' places and ranges), whichever kernel learnt it, so that
// a direct table whose keys were written under a mapping serves every
// kernel of it (tables move between workers with their tasks). Taken at
// each widening only.
var directNumbers struct {
	sync.Mutex
	m map[string]uint32
}

func (k *aggregateKernel) internMapping() uint32 {
	dm := &k.dm
	desc := make([]byte, 0, 24*len(k.keys))
	for j, kp := range k.keys {
		desc = binary.LittleEndian.AppendUint32(desc, uint32(kp.pos))
		desc = binary.LittleEndian.AppendUint32(desc, uint32(kp.width))
		desc = binary.LittleEndian.AppendUint64(desc, uint64(dm.lo[j]))
		desc = binary.LittleEndian.AppendUint64(desc, uint64(dm.n[j]))
	}
	directNumbers.Lock()
	defer directNumbers.Unlock()
	if directNumbers.m == nil {
		directNumbers.m = map[string]uint32{}
	}
	m, ok := directNumbers.m[string(desc)]
	if !ok {
		m = uint32(len(directNumbers.m) + 1)
		directNumbers.m[string(desc)] = m
	}
	return m
}

// fillKeys writes the key of every slot of direct table st under the
// current mapping, encoded as keyWords encodes a tuple's.
func (k *aggregateKernel) fillKeys(st *window.GroupState) {
	dm := &k.dm
	keys := st.Keys[:2*dm.slots]
	for g := range dm.slots {
		var hi, lo uint64
		rem := int64(g)
		for j := range k.keys {
			kp := &k.keys[j]
			v := dm.lo[j] + rem%dm.n[j]
			rem /= dm.n[j]
			s := uint(16-kp.pos-kp.width) * 8
			flip, mask := uint64(1)<<63, ^uint64(0)
			if kp.width == 4 {
				flip, mask = 1<<31, 1<<32-1
			}
			x := (uint64(v) & mask) ^ flip
			switch {
			case s >= 64:
				hi |= x << (s - 64)
			case s+uint(kp.width)*8 <= 64:
				lo |= x << s
			default:
				lo |= x << s
				hi |= x >> (64 - s)
			}
		}
		keys[2*g], keys[2*g+1] = hi, lo
	}
	st.SetKeysFor(dm.mapping)
}

// fillDirect computes k.dix for sel under the current mapping, reporting
// whether every tuple lies inside it.
func (k *aggregateKernel) fillDirect(sel []int32) bool {
	dm, dix := &k.dm, k.dix
	for _, i := range sel {
		dix[i] = 0
	}
	ok := true
	stride := int32(1)
	for j := range k.keys {
		src, lo, n := k.keys[j].expr.ints, dm.lo[j], uint64(dm.n[j])
		if k.keys[j].width == 4 {
			for _, i := range sel {
				d := uint64(int64(int32(src[i])) - lo)
				if d >= n {
					ok = false
				}
				dix[i] += int32(d) * stride
			}
		} else {
			for _, i := range sel {
				d := uint64(src[i] - lo)
				if d >= n {
					ok = false
				}
				dix[i] += int32(d) * stride
			}
		}
		stride *= int32(dm.n[j])
	}
	return ok
}

// countDirect counts each tuple in the slot the direct mapping gave it
// (k.dix): a direct table, no hashing, no probing; the table holds every
// slot's key already (fillKeys).
func (k *aggregateKernel) countDirect(pc *paneCursor, sel []int32, pos, wmb []int64) ([]int32, uint64) {
	start, last, open := pc.start, pc.last, pc.open
	st, words := pc.cur, k.layout.Words()
	vals, dix, grp := st.Vals, k.dix, k.grp
	run := k.run[:0]
	var late uint64
	j := 0
	for ; j < len(sel); j++ {
		i := sel[j]
		if p := pos[i]; p < start || p > last {
			break
		}
		if wmb[i] > open {
			late++
			continue
		}
		g := dix[i]
		o := int(g) * words
		if vals[o] == 0 {
			k.startRow(vals, o)
			st.Touched = append(st.Touched, g)
		}
		vals[o]++
		grp[len(run)] = g
		run = append(run, i)
	}
	k.run = run
	return sel[j:], late
}
