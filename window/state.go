package window

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
)

// AggKind says how one word of a group's aggregate row combines.
type AggKind uint8

const (
	AggAdd  AggKind = iota + 1 // integer SUM (and AVG's sum)
	AggMin                     // integer MIN
	AggMax                     // integer MAX
	AggAddF                    // float SUM (and AVG's sum): the word holds math.Float64bits
	AggMinF                    // float MIN
	AggMaxF                    // float MAX
)

// Float reports whether the kind's word holds float64 bits.
func (k AggKind) Float() bool { return k >= AggAddF }

// Combine returns the word a combined with b under kind k: the one
// definition, which the kernels call per tuple and the merge per group
// word. The integer kinds, the common case, have a switch of their own
// ahead of the float ones (combineFloat), so that they take one to three
// compares, in order, where one switch of six cases is a binary search.
func (k AggKind) Combine(a, b int64) int64 {
	switch k {
	case AggAdd:
		return a + b
	case AggMin:
		return min(a, b)
	case AggMax:
		return max(a, b)
	}
	return k.combineFloat(a, b)
}

// combineFloat is Combine for the float kinds, whose words hold
// math.Float64bits.
func (k AggKind) combineFloat(a, b int64) int64 {
	x, y := math.Float64frombits(uint64(a)), math.Float64frombits(uint64(b))
	switch k {
	case AggAddF:
		return int64(math.Float64bits(x + y))
	case AggMinF:
		return int64(math.Float64bits(MinF(x, y)))
	default: // AggMaxF
		return int64(math.Float64bits(MaxF(x, y)))
	}
}

// MinF is float MIN's combine: the smaller of a and b, a NaN skipped (NaN
// only where both are: a MIN of NaNs alone), -0 below +0. NaN is its
// identity. It is commutative and associative, as the merges of partial
// rows need: Flink's rule (the first value, replaced by a later one only
// where strictly smaller) is not, a first NaN staying where it meets the
// values that follow in one slice, and not where they are merged from
// another. Go's min, where a NaN wins, is the other order-free choice; a
// MIN that skips NaN agrees with Flink wherever a group's first value is
// not NaN.
func MinF(a, b float64) float64 {
	if b != b {
		return a
	}
	if a != a {
		return b
	}
	return min(a, b)
}

// MaxF is float MAX's combine, as MinF: the larger, a NaN skipped, +0
// above -0.
func MaxF(a, b float64) float64 {
	if b != b {
		return a
	}
	if a != a {
		return b
	}
	return max(a, b)
}

// Layout is the shape of a GroupState. Groups are either dense ordinals
// 0..Groups-1 (Hashed false: known up front, as the values of a static
// table) or keys of up to 16 bytes found by hashing (Hashed true: GROUP BY
// stream columns). Per group there is a row of int64 words: word 0 is always
// the group's tuple count (it tells a group present, and serves COUNT);
// Kinds[i] combines word i+1.
type Layout struct {
	Groups int // dense: the number of ordinals; hashed: the initial capacity
	Hashed bool
	Kinds  []AggKind

	// slots is the largest hashed table grown so far: new states start at
	// that size, so that a query with many groups pays the growth once, not
	// once per pane and task state (a 3600-pane window holds 3600 states).
	slots atomic.Uint64

	// byKey is set once an Assembler merges this layout's fragments: it
	// finds their groups by key, so that kernels may place groups where
	// they like (direct tables: TaskResult.DirectFragment). Without it
	// they keep the probed tables' placement, which other consumers of
	// fragments may compare slot for slot (the GPU emulator's tests).
	byKey atomic.Bool
}

// MergedByKey reports whether an Assembler merges l's fragments (by key):
// kernels may then make direct tables.
func (l *Layout) MergedByKey() bool { return l.byKey.Load() }

// Words is the row width in int64 words.
func (l *Layout) Words() int { return 1 + len(l.Kinds) }

// GroupState holds aggregate rows for dense group ordinals and the list of
// ordinals touched since the last Reset, so that resetting and merging cost
// what was touched, not the number of groups.
//
// Kernels write rows directly (see Row): on the first tuple of a group
// (count word 0 == 0) they append the ordinal to Touched and initialise the
// row; afterwards they combine into it.
//
// A hashed state is an open-addressing table: a group's ordinal is its slot,
// its key two words in Keys, and a slot is taken when its count word is
// non-zero. Keys are compared as two big-endian words, so that ordering
// slots by key orders the groups by their key bytes.
type GroupState struct {
	layout  *Layout
	words   int
	Vals    []int64
	Touched []int32

	Keys []uint64 // hashed: 2 words per slot
	mask uint64   // hashed: slots-1

	// DropEmpty's arrays of the last rebuild, for the next.
	spareVals []int64
	spareKeys []uint64
	sortBuf   []keyRef // SortTouched's

	// direct, where not 0, makes a hashed state a direct table: the
	// kernel computes each key's slot from the key itself (a dense index
	// of small integer key parts) under its mapping number direct, so that
	// it neither hashes nor probes. mask is 0: merges read such a state as
	// a source only, and a Lookup on it (which no kernel does) would grow
	// it into a probed table first.
	direct uint32
	// keysFor is the mapping whose key of every slot Keys holds (0: none),
	// written by the kernel once, not per group (SetKeysFor).
	keysFor uint32
	// dslots is a direct table's number of slots under its mapping.
	dslots int32

	// ids, where set, makes the state id-indexed (the assembler's panes and
	// running state of a hashed invertible layout): a group's ordinal is
	// its id in ids, its key ids's; Keys is unused and Lookup not allowed.
	ids *groupDict
	// zeroed is set on an id-indexed pane whose rows the running sum
	// cleared as it subtracted them: Touched still lists its groups, for
	// releaseIDs, which then has no row left to clear.
	zeroed bool
	// pool is the pool a state that TakeStates took goes back to
	// (GiveBack).
	pool *StatePool
	// view is set on a partition's view of a kernel's table (Parts.Split):
	// it reads the table's rows in place, and its Touched lists the
	// partition's groups only, so that the table's other rows are not its
	// own (no reading in table order, no adopting its size).
	view bool
}

// NewGroupState allocates a zeroed state of layout l.
func NewGroupState(l *Layout) *GroupState {
	g := &GroupState{layout: l, words: l.Words()}
	n := l.Groups
	if l.Hashed {
		n = 16
		for n < 2*l.Groups {
			n <<= 1
		}
		n = max(n, int(l.slots.Load()))
		g.Keys = make([]uint64, 2*n)
		g.mask = uint64(n - 1)
	}
	g.Vals = make([]int64, n*g.words)
	g.Touched = make([]int32, 0, min(n, 1024))
	return g
}

// Lookup returns the slot of key (k0, k1) in a hashed state, inserting it
// (and appending it to Touched) if absent. Inserting may grow the table:
// rows must be re-read through Row after every Lookup.
func (g *GroupState) Lookup(k0, k1 uint64) int32 {
	h := hashKey(k0, k1)
	for {
		s := h & g.mask
		for {
			if g.Vals[int(s)*g.words] == 0 {
				break
			}
			if g.Keys[2*s] == k0 && g.Keys[2*s+1] == k1 {
				return int32(s)
			}
			s = (s + 1) & g.mask
		}
		if uint64(len(g.Touched)+1)*2 <= g.mask+1 {
			// Claim the slot: the caller counts the tuple (word 0 > 0)
			// before the next Lookup.
			g.Keys[2*s], g.Keys[2*s+1] = k0, k1
			g.Touched = append(g.Touched, int32(s))
			return int32(s)
		}
		g.grow()
	}
}

// grow doubles a hashed table; rows keep their order in Touched.
func (g *GroupState) grow() {
	oldVals, oldKeys, oldTouched := g.Vals, g.Keys, g.Touched
	n := 2 * (g.mask + 1)
	g.Vals = make([]int64, int(n)*g.words)
	g.Keys = make([]uint64, 2*n)
	g.mask = n - 1
	g.direct, g.keysFor = 0, 0
	for s := g.layout.slots.Load(); s < n && !g.layout.slots.CompareAndSwap(s, n); s = g.layout.slots.Load() {
	}
	g.Touched = make([]int32, 0, cap(oldTouched)*2)
	for _, s := range oldTouched {
		k0, k1 := oldKeys[2*s], oldKeys[2*s+1]
		d := hashKey(k0, k1) & g.mask
		for g.Vals[int(d)*g.words] != 0 {
			d = (d + 1) & g.mask
		}
		g.Keys[2*d], g.Keys[2*d+1] = k0, k1
		copy(g.Vals[int(d)*g.words:int(d+1)*g.words], oldVals[int(s)*g.words:int(s+1)*g.words])
		g.Touched = append(g.Touched, int32(d))
	}
}

// Direct returns the mapping number of a direct table (see
// TaskResult.DirectFragment), 0 for any other state.
func (g *GroupState) Direct() uint32 { return g.direct }

// KeysFor returns the mapping under which a direct table's Keys hold the
// key of every slot (0: of the groups it holds only); SetKeysFor records
// that the kernel wrote them all. Keys outlive Reset, so that a table
// reused under the same mapping needs no key written again.
func (g *GroupState) KeysFor() uint32 { return g.keysFor }

// SetKeysFor: see KeysFor.
func (g *GroupState) SetKeysFor(mapping uint32) { g.keysFor = mapping }

// Undirect makes a direct table a probed hashed table holding the same
// groups (allocating it), so that Lookup serves it; other states are left
// as they are.
func (g *GroupState) Undirect() {
	if g.direct == 0 {
		return
	}
	n := 16
	for n < 4*len(g.Touched) || n < 2*g.layout.Groups {
		n <<= 1
	}
	n = max(n, int(g.layout.slots.Load()))
	g.mask = uint64(n/2 - 1) // grow doubles it
	g.grow()
}

// Key returns the key of slot s of a hashed state.
func (g *GroupState) Key(s int32) (k0, k1 uint64) {
	keys := g.keys()
	return keys[2*s], keys[2*s+1]
}

// keys is the key array: the dictionary's for an id-indexed state.
func (g *GroupState) keys() []uint64 {
	if g.ids != nil {
		return g.ids.keys
	}
	return g.Keys
}

// KeyBytes is the key of slot s of a hashed state as bytes: its two words
// big-endian, so that the key parts the kernels packed lie at their
// positions (kernels.KeyPart.Pos) and byte order is key order. The one
// decoding of a hashed key, for the engine's output and HAVING.
func (g *GroupState) KeyBytes(s int32) (kb [16]byte) {
	k0, k1 := g.Key(s)
	binary.BigEndian.PutUint64(kb[0:], k0)
	binary.BigEndian.PutUint64(kb[8:], k1)
	return kb
}

func hashKey(k0, k1 uint64) uint64 {
	k := k1 ^ (k0 * 0x9E3779B97F4A7C15)
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	return k
}

// Layout returns the state's layout.
func (g *GroupState) Layout() *Layout { return g.layout }

// Row returns the words of group ordinal gr.
func (g *GroupState) Row(gr int32) []int64 {
	o := int(gr) * g.words
	return g.Vals[o : o+g.words : o+g.words]
}

// Reset zeroes the touched rows: one by one where they are few, else the
// whole array at once, which streams through memory where the rows one by
// one would each miss the cache.
func (g *GroupState) Reset() {
	if len(g.Touched) >= len(g.Vals)/(8*g.words) {
		clear(g.Vals)
	} else {
		for _, gr := range g.Touched {
			clearRow(g.Row(gr))
		}
	}
	g.Touched = g.Touched[:0]
}

// copyRow and clearRow copy and zero a row of a few words in place: copy
// and clear would call the runtime's memmove and memclr per row.
func copyRow(d, s []int64) {
	s = s[:len(d)]
	for i := 0; i < len(d); i++ {
		d[i] = s[i]
	}
}

func clearRow(d []int64) {
	for i := 0; i < len(d); i++ {
		d[i] = 0
	}
}

// Empty reports whether no group was touched.
func (g *GroupState) Empty() bool { return len(g.Touched) == 0 }

// SortTouched orders Touched by group key: by ordinal for dense groups
// (ordinals follow the key order), by key words for hashed ones. A state
// whose groups are already in order (a running window whose groups stay,
// sorted when the previous window was emitted) costs one pass.
func (g *GroupState) SortTouched() {
	if !g.layout.Hashed {
		if !slices.IsSorted(g.Touched) {
			slices.Sort(g.Touched)
		}
		return
	}
	if slices.IsSortedFunc(g.Touched, g.compareKeys) {
		return
	}
	if len(g.Touched) < radixMinGroups {
		slices.SortFunc(g.Touched, g.compareKeys)
		return
	}
	g.sortBuf = sortByKeys(g.Touched, g.keys(), g.sortBuf)
}

// radixMinGroups is the fewest groups sortByKeys orders: below it the
// comparison sort's few passes cost less than the radix sort's counts.
const radixMinGroups = 64

// keyRef is a group's key words and ordinal, sortByKeys's unit: the
// comparison sort read both words through the ordinal at each comparison.
type keyRef struct {
	k0, k1 uint64
	g      int32
}

// sortByKeys orders touched (distinct ordinals) by their key words in
// keys (two per ordinal, compared as unsigned, the first first), with a
// least-significant-digit radix sort of the bytes that differ, in buf (its
// storage, returned for the next call). Ordinals with equal keys keep
// their order (stable), though a state's groups have distinct keys.
func sortByKeys(touched []int32, keys []uint64, buf []keyRef) []keyRef {
	n := len(touched)
	buf = slices.Grow(buf[:0], 2*n)[:2*n]
	src, dst := buf[:n], buf[n:]
	var or0, and0, or1, and1 uint64 = 0, ^uint64(0), 0, ^uint64(0)
	for i, g := range touched {
		k0, k1 := keys[2*g], keys[2*g+1]
		src[i] = keyRef{k0, k1, g}
		or0, and0, or1, and1 = or0|k0, and0&k0, or1|k1, and1&k1
	}
	// A byte that no two keys differ in orders nothing: skipped.
	for _, w := range [2]struct {
		first bool
		vary  uint64
	}{{false, or1 ^ and1}, {true, or0 ^ and0}} {
		for shift := uint(0); shift < 64; shift += 8 {
			if (w.vary>>shift)&0xff == 0 {
				continue
			}
			radixPass(src, dst, w.first, shift)
			src, dst = dst, src
		}
	}
	for i := range src {
		touched[i] = src[i].g
	}
	return buf
}

// radixPass moves src into dst ordered by byte shift/8 of each one's
// first key word (first) or second, stably.
func radixPass(src, dst []keyRef, first bool, shift uint) {
	var count [256]int
	if first {
		for i := range src {
			count[byte(src[i].k0>>shift)]++
		}
	} else {
		for i := range src {
			count[byte(src[i].k1>>shift)]++
		}
	}
	sum := 0
	for b, c := range count {
		count[b] = sum
		sum += c
	}
	dst = dst[:len(src)]
	for i := range src {
		k := src[i].k1
		if first {
			k = src[i].k0
		}
		b := byte(k >> shift)
		dst[count[b]] = src[i]
		count[b]++
	}
}

func (g *GroupState) compareKeys(a, b int32) int {
	keys := g.keys()
	if c := cmp.Compare(keys[2*a], keys[2*b]); c != 0 {
		return c
	}
	return cmp.Compare(keys[2*a+1], keys[2*b+1])
}

// Invertible reports whether every aggregate word of l is a sum (COUNT,
// SUM, AVG): a pane's rows can then be taken out of a window's as they were
// put in (Subtract).
func (l *Layout) Invertible() bool {
	for _, k := range l.Kinds {
		if k != AggAdd && k != AggAddF {
			return false
		}
	}
	return true
}

// Subtract takes src's rows out of g, which holds them (merged in before);
// the layout must be Invertible. It reports whether a group of g was left
// without tuples: such groups stay in g, marked, until DropEmpty, which
// must come before the next Lookup, Merge or read (Subtract may come
// before it).
// Integer sums come back exactly; float sums within rounding of the
// subtraction.
func (g *GroupState) Subtract(src *GroupState) (emptied bool) {
	if src.layout != g.layout {
		panic(fmt.Sprintf("window: subtract of group states with different layouts (%p, %p)", src.layout, g.layout))
	}
	kinds := g.layout.Kinds
	for _, gr := range src.Touched {
		s := src.Row(gr)
		dr := gr
		if g.layout.Hashed {
			if dr = g.sameSlot(src, gr); dr < 0 {
				dr = g.find(src.Key(gr))
			}
			if dr < 0 {
				panic("window: subtract of a group the state does not hold")
			}
		}
		d := g.Row(dr)
		if d[0] -= s[0]; d[0] == 0 {
			// Marked, not zeroed: a zero count would end the probe
			// chains through the slot before DropEmpty rebuilds them.
			d[0], emptied = emptiedRow, true
		}
		for i, k := range kinds {
			if k == AggAdd {
				d[i+1] -= s[i+1]
			} else {
				d[i+1] = int64(math.Float64bits(math.Float64frombits(uint64(d[i+1])) - math.Float64frombits(uint64(s[i+1]))))
			}
		}
	}
	return emptied
}

// emptiedRow marks the count word of a group that Subtract left without
// tuples, until DropEmpty.
const emptiedRow = math.MinInt64

// sameSlot returns slot s of hashed g where it holds the key of src's slot
// s, else -1: tables of one size mostly place a key in the same slot, its
// home, so that merging them finds most groups without hashing.
func (g *GroupState) sameSlot(src *GroupState, s int32) int32 {
	if g.mask != src.mask || g.Vals[int(s)*g.words] == 0 || g.Keys[2*s] != src.Keys[2*s] || g.Keys[2*s+1] != src.Keys[2*s+1] {
		return -1
	}
	return s
}

// find returns the slot of key (k0, k1) in a hashed state, -1 if absent.
func (g *GroupState) find(k0, k1 uint64) int32 {
	for s := hashKey(k0, k1) & g.mask; g.Vals[int(s)*g.words] != 0; s = (s + 1) & g.mask {
		if g.Keys[2*s] == k0 && g.Keys[2*s+1] == k1 {
			return int32(s)
		}
	}
	return -1
}

// DropEmpty removes the groups left without tuples by Subtract, keeping
// the others in their Touched order. A hashed table is rebuilt (an emptied
// slot would cut the probe chains through it) into spare arrays of the same
// size, which the next rebuild reuses.
func (g *GroupState) DropEmpty() {
	kept := g.Touched[:0]
	for _, s := range g.Touched {
		if row := g.Row(s); row[0] != emptiedRow {
			kept = append(kept, s)
		} else {
			clear(row)
		}
	}
	g.Touched = kept
	if !g.layout.Hashed {
		return
	}
	if len(g.spareVals) != len(g.Vals) {
		g.spareVals, g.spareKeys = make([]int64, len(g.Vals)), make([]uint64, len(g.Keys))
	} else {
		clear(g.spareVals)
	}
	vals, keys := g.spareVals, g.spareKeys
	for i, s := range g.Touched {
		k0, k1 := g.Keys[2*s], g.Keys[2*s+1]
		d := hashKey(k0, k1) & g.mask
		for vals[int(d)*g.words] != 0 {
			d = (d + 1) & g.mask
		}
		keys[2*d], keys[2*d+1] = k0, k1
		copy(vals[int(d)*g.words:int(d+1)*g.words], g.Vals[int(s)*g.words:int(s+1)*g.words])
		g.Touched[i] = int32(d)
	}
	g.spareVals, g.spareKeys, g.Vals, g.Keys = g.Vals, g.Keys, vals, keys
}

// Merge combines every touched row of src into g. Both must share a layout.
func (g *GroupState) Merge(src *GroupState) {
	if src.layout != g.layout {
		panic(fmt.Sprintf("window: merge of group states with different layouts (%p, %p)", src.layout, g.layout))
	}
	if g.mergeWhole(src) {
		return
	}
	kinds := g.layout.Kinds
	for _, gr := range src.Touched {
		s := src.Row(gr)
		dr := gr
		if g.layout.Hashed {
			dr = g.sameSlot(src, gr)
			if dr < 0 {
				dr = g.Lookup(src.Key(gr))
			}
			if g.Row(dr)[0] == 0 { // Lookup listed it in Touched already
				copyRow(g.Row(dr), s)
				continue
			}
		}
		d := g.Row(dr)
		if d[0] == 0 {
			g.Touched = append(g.Touched, gr)
			copyRow(d, s)
			continue
		}
		d[0] += s[0]
		for i, k := range kinds {
			d[i+1] = k.Combine(d[i+1], s[i+1])
		}
	}
}

// mergeWhole is Merge of dense states where g has every group already
// and src most of them: the rows taken in the arrays' order, where the
// merge by src's groups reads them in the order the groups came, a cache
// miss each in a state that another core wrote last (a query's panes
// pass from worker to worker with the ordered stage), one behind the
// other. A row that src has not touched is zero, and skipped.
func (g *GroupState) mergeWhole(src *GroupState) bool {
	l := g.layout
	if l.Hashed || len(g.Touched) != l.Groups || 4*len(src.Touched) < l.Groups {
		return false
	}
	w := g.words
	n := l.Groups * w
	if len(g.Vals) < n || len(src.Vals) < n {
		return false
	}
	d, s := g.Vals[:n], src.Vals[:n]
	kinds := l.Kinds
	for r := 0; r+w <= n; r += w {
		sr := s[r : r+w : r+w]
		if sr[0] == 0 {
			continue
		}
		dr := d[r : r+w : r+w]
		dr[0] += sr[0]
		for i, k := range kinds {
			dr[i+1] = k.Combine(dr[i+1], sr[i+1])
		}
	}
	return true
}
