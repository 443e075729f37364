package kernels

// The pair loop's first cross term over integers by ranks instead of one
// comparison per pair: the right side's values are sorted once per
// window, and the right tuples that one left tuple pairs with are the
// tuples of a range of ranks (a < v: every rank above the first value
// greater than a), found by two binary searches and read as a bitmap of
// right positions, so that the pairs come out in position order with no
// comparison per pair (docs/workloads.md has what it gave JOIN_1).

import (
	"cmp"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/saber-hx/saber-hx/query"
)

// Bounds of the rank path. Its bitmaps take (right tuples + 1)² bits, and
// sorting the right side pays off only over several left tuples.
const (
	rankMaxRight = 1024
	rankMinLeft  = 8
	// eqMinRight: an equality's right side of at least this many tuples,
	// not ranked for the bitmaps, is ranked for binary searches (equal)
	// rather than compared with each left tuple.
	eqMinRight = 64
)

// rankIndex is one window's right side ranked on a cross term's right
// operand: suffix[k] is the bitmap (one bit per right tuple, in words of
// 64) of the positions of the tuples of rank k and above, so that the positions of ranks [lo, hi) are
// suffix[lo] &^ suffix[hi].
type rankIndex struct {
	ranked []rankedValue
	suffix []uint64 // n+1 bitmaps of (n+63)/64 words
	packed []uint64 // build's sort keys, and the radix sort's second buffer
	spare  []uint64
}

type rankedValue struct {
	v int64
	j int32
}

func cmpRanked(a, b rankedValue) int { return cmp.Compare(a.v, b.v) }

// rankOnly ranks the values g without the bitmaps, by value and then by
// position: equal's index for a join on equality whose right side is too
// large for the bitmaps (Nexmark q8's persons and sellers of a window).
func (x *rankIndex) rankOnly(g []int64) {
	n := len(g)
	r := slices.Grow(x.ranked[:0], n)[:n]
	if !x.sortPacked(g, r) { // sortPacked's keys hold the position below the value
		for j, v := range g {
			r[j] = rankedValue{v: v, j: int32(j)}
		}
		slices.SortFunc(r, func(a, b rankedValue) int {
			if c := cmp.Compare(a.v, b.v); c != 0 {
				return c
			}
			return cmp.Compare(a.j, b.j)
		})
	}
	x.ranked = r
}

// equal writes into sel the positions (ascending) of the values that
// rankOnly ranked that equal v, and returns them.
func (x *rankIndex) equal(v int64, sel []int32) []int32 {
	r := x.ranked
	k, _ := slices.BinarySearchFunc(r, v, func(a rankedValue, v int64) int { return cmp.Compare(a.v, v) })
	sel = sel[:0]
	for ; k < len(r) && r[k].v == v; k++ {
		sel = append(sel, r[k].j)
	}
	return sel
}

// build ranks the values g (one per right tuple).
func (x *rankIndex) build(g []int64) {
	n := len(g)
	r := slices.Grow(x.ranked[:0], n)[:n]
	if !x.sortPacked(g, r) {
		for j, v := range g {
			r[j] = rankedValue{v: v, j: int32(j)}
		}
		slices.SortFunc(r, cmpRanked)
	}
	x.ranked = r
	w := (n + 63) / 64
	s := slices.Grow(x.suffix[:0], (n+1)*w)[:(n+1)*w]
	clear(s[n*w:])
	if w <= 2 {
		x.suffix = suffixPair(s, r, w)
		return
	}
	for k := n - 1; k >= 0; k-- {
		copy(s[k*w:(k+1)*w], s[(k+1)*w:(k+2)*w])
		j := r[k].j
		s[k*w+int(j>>6)] |= 1 << (j & 63)
	}
	x.suffix = s
}

// suffixPair fills the suffix bitmaps s of up to 128 right tuples (w, 1
// or 2, words each; the last bitmap, of no rank, already clear), the
// bitmap kept in two registers from rank to rank, each rank's bit going
// to one of them by a mask rather than a branch.
func suffixPair(s []uint64, r []rankedValue, w int) []uint64 {
	var lo, hi uint64
	for k := len(r) - 1; k >= 0; k-- {
		j := uint(r[k].j)
		bit := uint64(1) << (j & 63)
		upper := -uint64(j >> 6 & 1) // all ones for the second word
		lo |= bit &^ upper
		hi |= bit & upper
		if w == 2 {
			s[2*k], s[2*k+1] = lo, hi
		} else {
			s[k] = lo
		}
	}
	return s
}

// sortPacked sorts g into r where the values span less than 2^32 (int32
// columns, and most expressions of them): each value's offset from the
// least and its position packed into one uint64, sorted as integers, with
// no comparison function to call. False where they span more.
func (x *rankIndex) sortPacked(g []int64, r []rankedValue) bool {
	if len(g) == 0 {
		return true
	}
	lo, hi := g[0], g[0]
	for _, v := range g {
		lo, hi = min(lo, v), max(hi, v)
	}
	span := uint64(hi) - uint64(lo)
	if span >= 1<<32 {
		return false
	}
	k := slices.Grow(x.packed[:0], len(g))[:len(g)]
	for j, v := range g {
		k[j] = uint64(v-lo)<<32 | uint64(j)
	}
	if span < 1<<radixMaxBits {
		spare := slices.Grow(x.spare[:0], len(k))[:len(k)]
		if sorted := radixSortHigh(k, spare, bits.Len64(span)); &sorted[0] != &k[0] {
			k, spare = sorted, k
		}
		x.spare = spare
	} else {
		slices.Sort(k)
	}
	for i, p := range k {
		r[i] = rankedValue{v: int64(p>>32) + lo, j: int32(uint32(p))}
	}
	x.packed = k
	return true
}

// radixMaxBits bounds the value spans radixSortHigh sorts: two passes of
// at most radixBits. Wider ones go to pdqsort.
const (
	radixBits    = 8
	radixMaxBits = 2 * radixBits
)

// radixSortHigh sorts keys by their high 32 bits, of which only the low
// width can be set, stably (least significant digit first, one counting
// pass per digit), using spare (as long as keys) as the other buffer; it
// returns the sorted slice, keys or spare. For a window's few hundred
// values it beats a comparison sort: no branch on the data. The digits
// split width evenly (a span of 1000 is two passes of 5 bits, not 8 and
// 2): the counters, cleared and summed each pass, cost as much as the
// keys where there are few.
func radixSortHigh(keys, spare []uint64, width int) []uint64 {
	passes := max(1, (width+radixBits-1)/radixBits)
	digit := max(1, (width+passes-1)/passes)
	mask := uint64(1)<<digit - 1
	src, dst := keys, spare[:len(keys)]
	var counters [1 << radixBits]int
	count := counters[:mask+1]
	for shift := 32; shift < 32+width; shift += digit {
		clear(count)
		for _, k := range src {
			count[(k>>shift)&mask]++
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, k := range src {
			d := (k >> shift) & mask
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	return src
}

// lowerBound is the first rank whose value is at least a; upperBound the
// first whose value is greater than a. (A branch-free search, stepping by
// a mask of the comparison, measured slower: each step then waits for the
// previous load, where the branch predictor speculates.)
func (x *rankIndex) lowerBound(a int64) int {
	lo, hi := 0, len(x.ranked)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if x.ranked[m].v < a {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (x *rankIndex) upperBound(a int64) int {
	lo, hi := 0, len(x.ranked)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if x.ranked[m].v <= a {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// ranks is the range of ranks [lo, hi) whose values v satisfy a op v, and
// whether the positions wanted are the others (Ne).
func (x *rankIndex) ranks(op query.CmpOp, a int64) (lo, hi int, invert bool) {
	n := len(x.ranked)
	switch op {
	case query.Lt:
		return x.upperBound(a), n, false
	case query.Le:
		return x.lowerBound(a), n, false
	case query.Gt:
		return 0, x.lowerBound(a), false
	case query.Ge:
		return 0, x.upperBound(a), false
	case query.Eq:
		return x.lowerBound(a), x.upperBound(a), false
	default: // Ne
		return x.lowerBound(a), x.upperBound(a), true
	}
}

// bitmaps returns the bitmaps whose difference (hi from lo) is the range
// [lo, hi), and invert: a bitmap of every position to take the range from
// (nil where the range itself is wanted).
func (x *rankIndex) bitmaps(lo, hi int, invert bool) (from, minus, all []uint64) {
	w := (len(x.ranked) + 63) / 64
	from, minus = x.suffix[lo*w:(lo+1)*w], x.suffix[hi*w:(hi+1)*w]
	if invert {
		all = x.suffix[:w]
	}
	return from, minus, all
}

// rankWord is word wi of the bitmaps' positions: from &^ minus, or all
// &^ (from &^ minus) where all is set.
func rankWord(from, minus, all []uint64, wi int) uint64 {
	m := from[wi] &^ minus[wi]
	if all != nil {
		m = all[wi] &^ m
	}
	return m
}

// selectRanks writes into sel the positions of from &^ minus (or of all
// &^ (from &^ minus)), in order, and returns them.
func selectRanks(from, minus, all []uint64, sel []int32) []int32 {
	n := 0
	for wi := range from {
		m := rankWord(from, minus, all, wi)
		for ; m != 0; m &= m - 1 {
			sel[n] = int32(wi<<6 + bits.TrailingZeros64(m))
			n++
		}
	}
	return sel[:n]
}

// maskEmitter appends the pairs of lt with the right tuples (rts bytes
// each) whose positions selectRanks would select, in order.
type maskEmitter func(out, lt, right []byte, rts int, from, minus, all []uint64) []byte

// maskEmitterFor is the emitter of emitterFor's sizes, reading bitmaps.
func maskEmitterFor(lts, rts int) maskEmitter {
	if e := fastMaskEmitter(lts, rts); e != nil {
		return e
	}
	if lts == rts {
		switch lts {
		case 8:
			return emitMaskFixed[[8]byte]
		case 16:
			return emitMaskFixed[[16]byte]
		case 24:
			return emitMaskFixed[[24]byte]
		case 32:
			return emitMaskFixed[[32]byte]
		case 40:
			return emitMaskFixed[[40]byte]
		case 48:
			return emitMaskFixed[[48]byte]
		case 56:
			return emitMaskFixed[[56]byte]
		case 64:
			return emitMaskFixed[[64]byte]
		}
	}
	return emitMaskPairs
}

// bitmapCount is the number of positions the bitmaps select.
func bitmapCount(from, minus, all []uint64) int {
	n := 0
	for wi := range from {
		m := rankWord(from, minus, all, wi)
		n += bits.OnesCount64(m)
	}
	return n
}

// emitMaskFixed is emitFixed reading the right positions from bitmaps.
func emitMaskFixed[T tupleArray](out, lt, right []byte, rts int, from, minus, all []uint64) []byte {
	var z T
	ts := int(unsafe.Sizeof(z))
	cnt := bitmapCount(from, minus, all)
	if cnt == 0 {
		return out
	}
	o := len(out)
	out = slices.Grow(out, cnt*2*ts)[:o+cnt*2*ts]
	l := *(*T)(unsafe.Pointer(unsafe.SliceData(lt[:ts])))
	r := unsafe.Pointer(unsafe.SliceData(right))
	d := unsafe.Pointer(unsafe.SliceData(out[o:]))
	nr := len(right) / ts
	k := 0 // pairs written; k < cnt, the positions the bitmaps select
	for wi := range from {
		m := rankWord(from, minus, all, wi)
		for ; m != 0; m &= m - 1 {
			j := wi<<6 + bits.TrailingZeros64(m)
			if j >= nr {
				panic("kernels: pair index out of range")
			}
			// The pointer is made for each pair, never one past the
			// last (checkptr, under -race, refuses pointers out of
			// their allocation).
			p := (*[2]T)(unsafe.Add(d, k*2*ts))
			p[0] = l
			p[1] = *(*T)(unsafe.Add(r, j*ts))
			k++
		}
	}
	return out
}

// emitMaskPairs is emitMaskFixed for any tuple sizes.
func emitMaskPairs(out, lt, right []byte, rts int, from, minus, all []uint64) []byte {
	lts := len(lt)
	ps := lts + rts
	cnt := bitmapCount(from, minus, all)
	o := len(out)
	out = slices.Grow(out, cnt*ps)[:o+cnt*ps]
	for wi := range from {
		m := rankWord(from, minus, all, wi)
		for ; m != 0; m &= m - 1 {
			j := wi<<6 + bits.TrailingZeros64(m)
			d := out[o : o+ps : o+ps]
			copy(d, lt)
			copy(d[lts:], right[j*rts:(j+1)*rts])
			o += ps
		}
	}
	return out
}
