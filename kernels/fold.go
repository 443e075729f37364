package kernels

import (
	"math"

	"github.com/saber-hx/saber-hx/window"
)

// Where its fused pass (fusedfold.go) does not serve a chunk, the aggregate
// kernel folds it in two passes per pane run: a count pass, one loop per
// group mode, finds each tuple's group (starting a new group's row at the
// aggregates' identities) and counts it; then one fold loop per aggregate,
// chosen by its kind when the kernel is made, combines the argument
// register into the rows. Neither loop switches per tuple.

// foldFunc combines the argument e of the tuples run (chunk indexes) into
// word w of their groups' rows (grp, by run index).
type foldFunc func(vals []int64, words, w int, grp, run []int32, e *vexpr)

// identity is the word a new group's row starts with for kind k: combining
// it with the first value gives that value, bit for bit (-0 for float
// sums, so that a sum of one -0 stays -0; NaN for float MIN and MAX, which
// skip a NaN: window.MinF).
func identity(k window.AggKind) int64 {
	switch k {
	case window.AggMin:
		return math.MaxInt64
	case window.AggMax:
		return math.MinInt64
	case window.AggAddF:
		return int64(math.Float64bits(math.Copysign(0, -1)))
	case window.AggMinF, window.AggMaxF:
		return int64(math.Float64bits(math.NaN()))
	}
	return 0
}

// foldFor returns the fold loop of kind k.
func foldFor(k window.AggKind) foldFunc {
	switch k {
	case window.AggAdd:
		return foldAdd
	case window.AggMin:
		return foldMin
	case window.AggMax:
		return foldMax
	case window.AggAddF:
		return foldAddF
	case window.AggMinF:
		return foldMinF
	default:
		return foldMaxF
	}
}

func foldAdd(vals []int64, words, w int, grp, run []int32, e *vexpr) {
	src := e.ints
	grp = grp[:len(run)]
	for r, i := range run {
		vals[int(grp[r])*words+w] += src[i]
	}
}

func foldMin(vals []int64, words, w int, grp, run []int32, e *vexpr) {
	src := e.ints
	grp = grp[:len(run)]
	for r, i := range run {
		o := int(grp[r])*words + w
		vals[o] = min(vals[o], src[i])
	}
}

func foldMax(vals []int64, words, w int, grp, run []int32, e *vexpr) {
	src := e.ints
	grp = grp[:len(run)]
	for r, i := range run {
		o := int(grp[r])*words + w
		vals[o] = max(vals[o], src[i])
	}
}

func foldAddF(vals []int64, words, w int, grp, run []int32, e *vexpr) {
	src := e.flts
	grp = grp[:len(run)]
	for r, i := range run {
		o := int(grp[r])*words + w
		vals[o] = int64(math.Float64bits(math.Float64frombits(uint64(vals[o])) + src[i]))
	}
}

func foldMinF(vals []int64, words, w int, grp, run []int32, e *vexpr) {
	src := e.flts
	grp = grp[:len(run)]
	for r, i := range run {
		o := int(grp[r])*words + w
		vals[o] = int64(math.Float64bits(window.MinF(math.Float64frombits(uint64(vals[o])), src[i])))
	}
}

func foldMaxF(vals []int64, words, w int, grp, run []int32, e *vexpr) {
	src := e.flts
	grp = grp[:len(run)]
	for r, i := range run {
		o := int(grp[r])*words + w
		vals[o] = int64(math.Float64bits(window.MaxF(math.Float64frombits(uint64(vals[o])), src[i])))
	}
}

// The count loops take the tuples of sel (chunk indexes, ascending) from
// the first up to the first outside the current pane: each tuple not late
// is appended to k.run, its group to k.grp and counted in its row. They
// return the rest of sel and the late tuples.

// startRow starts the row at o of a group seen first: its aggregate words
// at their identities.
func (k *aggregateKernel) startRow(vals []int64, o int) {
	// A loop, not copy: the row has a word or two, and copy would call
	// memmove per new group.
	for i, v := range k.ident {
		vals[o+1+i] = v
	}
}

// countSmall serves a single integer key from the direct-mapped cache,
// hashing (Lookup) only on a miss. A Lookup that grows the table moves
// every slot: the run's slots so far are looked up again and the cache
// cleared.
func (k *aggregateKernel) countSmall(pc *paneCursor, cd []byte, sel []int32, pos, wmb []int64) ([]int32, uint64) {
	start, last, open := pc.start, pc.last, pc.open
	st, words := pc.cur, k.layout.Words()
	keys, cache, grp := k.keys[0].expr.ints, k.cache, k.grp
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
		v := keys[i]
		idx := uint64(v - k.cacheBase)
		var g int32
		if idx < smallCache && cache[idx] != 0 {
			g = cache[idx] - 1
		} else {
			if len(k.cacheUsed) == 0 {
				k.cacheBase, idx = v-smallCache/2, smallCache/2
			}
			slots := len(st.Keys)
			g = st.Lookup(k.key(cd, i))
			if len(st.Keys) != slots {
				k.relookup(st, cd, run, grp)
				k.clearCache()
			}
			if idx < smallCache {
				cache[idx] = g + 1
				k.cacheUsed = append(k.cacheUsed, int32(idx))
			}
		}
		vals := st.Vals
		o := int(g) * words
		if vals[o] == 0 {
			k.startRow(vals, o)
		}
		vals[o]++
		grp[len(run)] = g
		run = append(run, i)
	}
	k.run = run
	return sel[j:], late
}

// countHashed looks each tuple's key words (keyWords) up in the pane's
// table.
func (k *aggregateKernel) countHashed(pc *paneCursor, cd []byte, sel []int32, pos, wmb []int64) ([]int32, uint64) {
	start, last, open := pc.start, pc.last, pc.open
	st, words := pc.cur, k.layout.Words()
	khi, klo, grp := k.khi, k.klo, k.grp
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
		slots := len(st.Keys)
		g := st.Lookup(khi[i], klo[i])
		if len(st.Keys) != slots {
			k.relookup(st, cd, run, grp)
		}
		vals := st.Vals
		o := int(g) * words
		if vals[o] == 0 {
			k.startRow(vals, o)
		}
		vals[o]++
		grp[len(run)] = g
		run = append(run, i)
	}
	k.run = run
	return sel[j:], late
}

// relookup finds the slots of the run's tuples again after st's table grew
// (their groups are all in it: no Lookup inserts).
func (k *aggregateKernel) relookup(st *window.GroupState, cd []byte, run, grp []int32) {
	for r, i := range run {
		if k.mode == groupSmall {
			grp[r] = st.Lookup(k.key(cd, i))
		} else {
			grp[r] = st.Lookup(k.khi[i], k.klo[i])
		}
	}
}

// clearCache forgets the cached slots (the pane or its table changed).
func (k *aggregateKernel) clearCache() {
	for _, idx := range k.cacheUsed {
		k.cache[idx] = 0
	}
	k.cacheUsed = k.cacheUsed[:0]
}

// keyWords computes the hashed key words of the tuples sel of the chunk:
// integer parts by shifts into place (the encoding of key), bytes parts by
// key itself.
func (k *aggregateKernel) keyWords(cd []byte, ts int, sel []int32) {
	khi, klo := k.khi, k.klo
	if k.mode == groupBytes {
		for _, i := range sel {
			khi[i], klo[i] = k.key(cd, i)
		}
		return
	}
	for _, i := range sel {
		khi[i], klo[i] = 0, 0
	}
	for j := range k.keys {
		kp := &k.keys[j]
		src := kp.expr.ints
		// The part's lowest bit in the 128-bit big-endian key.
		s := uint(16-kp.pos-kp.width) * 8
		flip, mask := uint64(1)<<63, ^uint64(0)
		if kp.width == 4 {
			flip, mask = 1<<31, 1<<32-1
		}
		switch {
		case s >= 64:
			for _, i := range sel {
				khi[i] |= ((uint64(src[i]) & mask) ^ flip) << (s - 64)
			}
		case s+uint(kp.width)*8 <= 64:
			for _, i := range sel {
				klo[i] |= ((uint64(src[i]) & mask) ^ flip) << s
			}
		default:
			for _, i := range sel {
				x := (uint64(src[i]) & mask) ^ flip
				klo[i] |= x << s
				khi[i] |= x >> (64 - s)
			}
		}
	}
}
