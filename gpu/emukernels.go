package gpu

import (
	"encoding/binary"
	"math"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// The CUDA kernels of kernels/cuda/kernels.cu, in Go, for the emulator:
// the same grid of blocks of blockDim threads, the same per-block partials
// passed between kernels, the same output words. A block's threads run one
// after another, so the kernels' atomics are plain read-modify-writes
// here, and a block-wide scan is a running value. Keep in step with
// kernels.cu, function by function.

// kparams are a launch's parameters (kernels.cu passes them one by one,
// every one 64-bit).
type kparams struct {
	tuples    []byte
	n         int64
	tupleSize int64
	rows      bool
	first     int64
	preds     []uint64 // predWords
	npreds    int64
	code      []uint64 // the programs
	where     int64    // start of WHERE's program, -1: none
	// Aggregations.
	join      *joinTable // nil: no join (join_off < 0)
	joinOff   int64
	denseJoin bool
	aggs      []uint64 // aggWords
	naggs     int64
	keys      []uint64 // keyWords; none: dense groups
	nkeys     int64
	table     []uint64 // hashed groups: the task's table (tableMask+1 slots, zeroed)
	tableMask uint64
	groups    int64
	rowWords  int64
	pane      int64
	size      int64
	slide     int64
	base      int64
	npanes    int64
	initRow   []uint64
	// Selections.
	proj  []uint64 // projWords
	nproj int64
}

func gridOf(n int64) int64 { return (n + blockDim - 1) / blockDim }

func loadU64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// colValue loads an int32 (sign-extended) or int64 column.
func colValue(t []byte, off uint64, wide bool) int64 {
	if wide {
		return int64(loadU64(t[off:]))
	}
	return int64(int32(binary.LittleEndian.Uint32(t[off:])))
}

// position is kernels.cu's position: tuple i's event time, or its stream
// index for a ROWS window.
func (k *kparams) position(i int64) int64 {
	if k.rows {
		return k.first + i
	}
	return int64(loadU64(k.tuples[i*k.tupleSize:]))
}

// passes is kernels.cu's passes: every predicate holds for tuple t, and
// WHERE's program where there is one.
func (k *kparams) passes(t []byte) bool {
	if !fastPasses(t, k.preds, k.npreds) {
		return false
	}
	return k.where < 0 || evalCode(k.code[k.where:], t) != 0
}

// fastPasses is kernels.cu's fast_passes: the column-versus-constant terms.
func fastPasses(t []byte, preds []uint64, npreds int64) bool {
	for j := int64(0); j < npreds; j++ {
		d, c := preds[2*j], int64(preds[2*j+1])
		v := colValue(t, d&0xffffffff, d>>32&1 != 0)
		var ok bool
		switch query.CmpOp(d >> 40 & 0xff) {
		case query.Eq:
			ok = v == c
		case query.Ne:
			ok = v != c
		case query.Lt:
			ok = v < c
		case query.Le:
			ok = v <= c
		case query.Gt:
			ok = v > c
		default:
			ok = v >= c
		}
		if !ok {
			return false
		}
	}
	return true
}

// floorDiv and sealOf are kernels.cu's floor_div and seal_of
// (window.FloorDiv and window.Spec.Seal).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func sealOf(p, pane, size, slide int64) int64 {
	fw := floorDiv(p*pane-size, slide) + 1
	return fw*slide + size
}

// emuAggInit is agg_init: every word of the output gets its initial value.
func emuAggInit(k *kparams, out []uint64) {
	total := hdrWords + k.npanes*(1+k.groups*k.rowWords)
	for w := int64(0); w < total; w++ {
		switch {
		case w < hdrWords:
			out[w] = 0 // counters; hdrMaxPos: bias(MinInt64)
		case w < hdrWords+k.npanes:
			out[w] = noIndex
		default:
			out[w] = k.initRow[(w-hdrWords-k.npanes)%k.rowWords]
		}
	}
}

// scan_blocks' operations.
const (
	scanSum = 0
	scanMax = 1
)

// emuScanBlocks is scan_blocks: v[:n] replaced by its exclusive scan, the
// sum (op scanSum) or the max (scanMax) of the words before each, 0 for
// the first; thread t of the one block scans the run [t*per, (t+1)*per)
// around a block-wide exclusive scan of the runs' totals.
func emuScanBlocks(v []uint64, n int64, op uint64) {
	combine := func(a, b uint64) uint64 {
		if op == scanMax {
			return max(a, b)
		}
		return a + b
	}
	per := (n + blockDim - 1) / blockDim
	var acc uint64 // the block-wide scan of the runs' totals
	for th := int64(0); th < blockDim; th++ {
		lo := min(n, th*per)
		hi := min(n, lo+per)
		var run uint64
		for j := lo; j < hi; j++ {
			run = combine(run, v[j])
		}
		a := acc
		for j := lo; j < hi; j++ {
			x := v[j]
			v[j] = a
			a = combine(a, x)
		}
		acc = combine(acc, run)
	}
}

// emuAggBlockMax is agg_block_max: block b's largest position, biased, in
// blockMax[b], and the task's in out[hdrMaxPos].
func emuAggBlockMax(k *kparams, blockMax, out []uint64) {
	for b := int64(0); b < gridOf(k.n); b++ {
		var m uint64
		for t := int64(0); t < blockDim; t++ {
			if i := b*blockDim + t; i < k.n {
				m = max(m, bias(k.position(i)))
			}
		}
		blockMax[b] = m
		out[hdrMaxPos] = max(out[hdrMaxPos], m)
	}
}

// The block's cache of dense rows (kernels.cu's CACHE_SLOTS, CACHE_WORDS).
const (
	cacheSlots = 256
	cacheWords = 2048
)

// cacheSlotsFor is kernels.cu's cache_slots: how many rows the block's
// cache holds (0: hashed groups or rows too wide).
func cacheSlotsFor(nkeys, rowWords int64) int64 {
	if nkeys > 0 {
		return 0
	}
	s := int64(cacheSlots)
	for s > 0 && s*rowWords > cacheWords {
		s >>= 1
	}
	return s
}

// emuAggTuples is agg_tuples: each tuple's watermark before it (the
// largest position of the blocks before, blockMax[b] after
// emuScanBlocks, then of the threads before in its
// block), WHERE, the join, its pane and lateness, then its row: with dense
// groups the block's cached row (the slot of row r is r mod slots,
// claimed by the block's first tuple that needs it; a tuple whose slot
// holds another row folds into its global row), folded into the global
// rows at the end of the block. fold's warp reduction is here the
// tuples' folds one after another: the same words, integer addition, min
// and max being associative and commutative.
func emuAggTuples(k *kparams, blockMax, out []uint64) {
	firsts := out[hdrWords : hdrWords+k.npanes]
	rows := out[hdrWords+k.npanes:]
	nslots := cacheSlotsFor(k.nkeys, k.rowWords)
	var cacheKey [cacheSlots]uint64 // 0: free, else the row's index + 1
	cacheRow := make([]uint64, cacheWords)
	for b := int64(0); b < gridOf(k.n); b++ {
		clear(cacheKey[:nslots])
		for w := int64(0); w < nslots*k.rowWords; w++ {
			cacheRow[w] = k.initRow[w%k.rowWords]
		}
		prefix := blockMax[b] // the blocks before (emuScanBlocks)
		var inBlock uint64    // exclusive max scan of the block's positions
		for th := int64(0); th < blockDim; th++ {
			i := b*blockDim + th
			if i >= k.n {
				break
			}
			pos := k.position(i)
			prev := unbias(max(prefix, inBlock))
			inBlock = max(inBlock, bias(pos))

			t := k.tuples[i*k.tupleSize : (i+1)*k.tupleSize]
			if !k.passes(t) {
				out[hdrFiltered]++
				continue
			}
			var g int64
			if k.join != nil {
				kt := t[k.joinOff:]
				o := k.join.lookup(loadU64(kt), loadU64(kt[8:]))
				if o < 0 {
					out[hdrUnmatched]++
					continue
				}
				if k.denseJoin {
					g = int64(o)
				}
			}
			p := floorDiv(pos, k.pane)
			off := uint64(p - k.base)
			if off >= uint64(k.npanes) {
				out[hdrOutside]++
				continue
			}
			if uint64(i) < firsts[off] {
				firsts[off] = uint64(i)
			}
			if prev >= sealOf(p, k.pane, k.size, k.slide) {
				out[hdrLate]++
				continue
			}
			var row []uint64
			if k.nkeys > 0 {
				k0, k1 := k.keyOf(t)
				if row = k.findEntry(out, rows, uint64(off), k0, k1); row == nil {
					out[hdrOverflow]++
					continue
				}
			} else {
				r := off*uint64(k.groups) + uint64(g)
				row = rows[int64(r)*k.rowWords:][:k.rowWords]
				if nslots > 0 {
					s := int64(r & uint64(nslots-1))
					if cacheKey[s] == 0 {
						cacheKey[s] = r + 1
					}
					if cacheKey[s] == r+1 {
						row = cacheRow[s*k.rowWords:][:k.rowWords]
					}
				}
			}
			k.fold(row, i, t)
		}
		// The cache's rows into their global rows.
		for s := int64(0); s < nslots; s++ {
			if cacheKey[s] == 0 {
				continue
			}
			src := cacheRow[s*k.rowWords:][:k.rowWords]
			dst := rows[int64(cacheKey[s]-1)*k.rowWords:][:k.rowWords]
			dst[0] += src[0]
			for w := int64(0); w < k.naggs; w++ {
				foldWord(&dst[1+w], window.AggKind(k.aggs[w]>>40&0xff), src[1+w])
			}
			dst[k.rowWords-1] = min(dst[k.rowWords-1], src[k.rowWords-1])
		}
	}
}

// foldWord is kernels.cu's fold_word: u (an add's two's complement, a
// min's or max's biased value) folded into *p.
func foldWord(p *uint64, kind window.AggKind, u uint64) {
	switch kind {
	case window.AggAdd:
		*p += u
	case window.AggMin:
		*p = min(*p, u)
	default:
		*p = max(*p, u)
	}
}

// aggValue is kernels.cu's agg_value: aggregate descriptor d's value for
// tuple t.
func (k *kparams) aggValue(d uint64, t []byte) int64 {
	if d>>48&1 != 0 {
		return int64(evalCode(k.code[d&0xffffffff:], t))
	}
	return colValue(t, d&0xffffffff, d>>32&1 != 0)
}

// fold is kernels.cu's fold for one counted tuple i: count 1, every
// aggregate word, the first index, into row.
func (k *kparams) fold(row []uint64, i int64, t []byte) {
	row[0]++
	for w := int64(0); w < k.naggs; w++ {
		d := k.aggs[w]
		v := k.aggValue(d, t)
		kind := window.AggKind(d >> 40 & 0xff)
		if kind == window.AggAdd {
			foldWord(&row[1+w], kind, uint64(v))
		} else {
			foldWord(&row[1+w], kind, bias(v))
		}
	}
	row[k.rowWords-1] = min(row[k.rowWords-1], uint64(i))
}

// emuSelCount is sel_count: blockCount[b] = the tuples of block b that
// pass, and for every warp with a tuple the ballot of those that pass
// (flags[i/32] bit l: tuple i+l).
func emuSelCount(k *kparams, blockCount []uint64, flags []uint32) {
	for b := int64(0); b < gridOf(k.n); b++ {
		var c uint64
		var ballot uint32
		for th := int64(0); th < blockDim; th++ {
			i := b*blockDim + th
			pass := i < k.n && k.passes(k.tuples[i*k.tupleSize:(i+1)*k.tupleSize])
			if pass {
				c++
				ballot |= 1 << (i & 31)
			}
			if i&31 == 31 { // the warp's last thread (blockDim is a multiple of 32)
				if first := i &^ 31; first < k.n {
					flags[first>>5] = ballot
				}
				ballot = 0
			}
		}
		blockCount[b] = c
	}
}

// emuSelCompact is sel_compact_flags, or with flags nil sel_compact (which
// evaluates WHERE again): each block's passing tuples (or their event time
// and projected columns) at their place in out, after those of the blocks
// before (blockCount[b] after emuScanBlocks); the last block writes the
// total to ctr[selCount].
func emuSelCompact(k *kparams, blockCount []uint64, flags []uint32, out []byte, ctr []uint64) {
	outSize := k.tupleSize
	if k.nproj > 0 {
		outSize = 8 + 8*k.nproj
	}
	grid := gridOf(k.n)
	for b := int64(0); b < grid; b++ {
		base := blockCount[b] // the blocks before (emuScanBlocks)
		var kept int64        // exclusive count scan
		for th := int64(0); th < blockDim; th++ {
			i := b*blockDim + th
			if i >= k.n {
				break
			}
			t := k.tuples[i*k.tupleSize : (i+1)*k.tupleSize]
			if flags != nil && flags[i>>5]>>(i&31)&1 == 0 || flags == nil && !k.passes(t) {
				continue
			}
			dst := out[(int64(base)+kept)*outSize:][:outSize]
			kept++
			if k.nproj == 0 {
				copy(dst, t)
				continue
			}
			copy(dst[:8], t[:8])
			for c := int64(0); c < k.nproj; c++ {
				binary.LittleEndian.PutUint64(dst[8+8*c:], evalCode(k.code[k.proj[c]:], t))
			}
		}
		if b == grid-1 {
			ctr[selCount] = base + uint64(kept)
		}
	}
}

// f32Bits is kernels.cu's f32_to_f64: a float32 widened to float64 bits
// exactly (a NaN quieted with its payload kept, as x86's cvtss2sd and Go
// do).
func f32Bits(b uint32) uint64 {
	return math.Float64bits(float64(math.Float32frombits(b)))
}

// evalCode is kernels.cu's eval: program code (expr.go) over tuple t.
func evalCode(code []uint64, t []byte) uint64 {
	var st [maxStack]uint64
	sp := 0
	for pc := 0; ; {
		ins := code[pc]
		pc++
		op := ins & 0xff
		switch op {
		case opEnd:
			return st[sp-1]
		case opLdI32:
			st[sp] = uint64(int64(int32(binary.LittleEndian.Uint32(t[ins>>32:]))))
			sp++
			continue
		case opLdI64, opLdF64:
			st[sp] = loadU64(t[ins>>32:])
			sp++
			continue
		case opLdF32:
			st[sp] = f32Bits(binary.LittleEndian.Uint32(t[ins>>32:]))
			sp++
			continue
		case opConst:
			st[sp] = code[pc]
			pc++
			sp++
			continue
		case opI2F:
			st[sp-1] = math.Float64bits(float64(int64(st[sp-1])))
			continue
		case opRequire:
			sp--
			if st[sp] == 0 {
				return 0
			}
			continue
		}
		var b uint64
		if ins&opK != 0 {
			b = code[pc]
			pc++
		} else {
			sp--
			b = st[sp]
		}
		a := st[sp-1]
		var r uint64
		switch op {
		case opIAdd:
			r = a + b
		case opISub:
			r = a - b
		case opIMul:
			r = a * b
		case opIDiv:
			r = uint64(intDiv(int64(a), int64(b)))
		case opFAdd:
			r = math.Float64bits(math.Float64frombits(a) + math.Float64frombits(b))
		case opFSub:
			r = math.Float64bits(math.Float64frombits(a) - math.Float64frombits(b))
		case opFMul:
			r = math.Float64bits(math.Float64frombits(a) * math.Float64frombits(b))
		case opFDiv:
			r = math.Float64bits(math.Float64frombits(a) / math.Float64frombits(b))
		case opICmp:
			r = b2u(query.Holds(query.CmpOp(ins>>16&0xff), int64(a), int64(b)))
		case opFCmp:
			r = b2u(query.Holds(query.CmpOp(ins>>16&0xff), math.Float64frombits(a), math.Float64frombits(b)))
		case opAnd:
			r = b2u(a != 0 && b != 0)
		default: // opOr
			r = b2u(a != 0 || b != 0)
		}
		st[sp-1] = r
	}
}

// intDiv is kernels.cu's idiv: Go's int64 division (MinInt64 / -1 is
// MinInt64), with x/0 = 0 as the CPU kernels' arith.
func intDiv(a, b int64) int64 {
	switch b {
	case 0:
		return 0
	case -1:
		return -a
	}
	return a / b
}

// keyOf is kernels.cu's key_of: tuple t's 16-byte group key as two
// big-endian words, as kernels' aggregateKernel.key builds it.
func (k *kparams) keyOf(t []byte) (k0, k1 uint64) {
	var kb [16]byte
	for j := int64(0); j < k.nkeys; j++ {
		d := k.keys[j]
		pos, width, off := d&0xff, d>>8&0xff, d>>32
		if d>>16&1 != 0 {
			copy(kb[pos:pos+width], t[off:off+width])
			continue
		}
		v := evalCode(k.code[off:], t)
		if width == 4 {
			binary.BigEndian.PutUint32(kb[pos:], uint32(v)^(1<<31))
		} else {
			binary.BigEndian.PutUint64(kb[pos:], v^signBit)
		}
	}
	return binary.BigEndian.Uint64(kb[0:8]), binary.BigEndian.Uint64(kb[8:16])
}

// findEntry is kernels.cu's find_entry: the row of the entry of the group
// (pane offset off, key k0 k1) in the task's table, claiming a slot and an
// entry (initialised with initRow) for a new group; nil when every slot
// holds another group (overflow).
func (k *kparams) findEntry(out, entries []uint64, off, k0, k1 uint64) []uint64 {
	ew := 3 + k.rowWords
	s := tableHash(off, k0, k1) & k.tableMask
	for probes := uint64(0); probes <= k.tableMask; probes, s = probes+1, (s+1)&k.tableMask {
		tag := k.table[s]
		if tag == 0 {
			e := out[hdrEntries]
			out[hdrEntries]++
			en := entries[int64(e)*ew:][:ew]
			en[0], en[1], en[2] = off, k0, k1
			copy(en[3:], k.initRow)
			k.table[s] = slotEntry + e
			return en[3:]
		}
		en := entries[int64(tag-slotEntry)*ew:][:ew]
		if en[0] == off && en[1] == k0 && en[2] == k1 {
			return en[3:]
		}
	}
	return nil
}
