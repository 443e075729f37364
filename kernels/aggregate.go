package kernels

import (
	"encoding/binary"
	"math"
	"sync"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// keyPart computes one part of a hashed group key.
type keyPart struct {
	expr  *vexpr // integer expression; nil for a bytes column
	off   int    // bytes column offset
	width int
	pos   int
}

// aggArg is one aggregate's argument and how it combines.
type aggArg struct {
	expr *vexpr
	word int
	kind window.AggKind
	fold foldFunc // chosen by kind and group mode when the kernel is made
}

// groupMode is how the aggregate kernel finds a tuple's group, chosen when
// the kernel is made: each mode has a count loop of its own (fold.go), so
// that the loop over tuples does not switch on it.
type groupMode uint8

const (
	groupOne   groupMode = iota // one group: no GROUP BY (or a join that does not group)
	groupJoin                   // dense: the static join's value ordinal
	groupSmall                  // hashed, one integer key: a direct-mapped cache of slots ahead of Lookup
	groupWords                  // hashed, integer keys only: the key's two words computed per chunk
	groupBytes                  // hashed, with a bytes key: the general key encoding
)

// smallCache is the direct-mapped cache's size: integer keys within
// smallCache/2 of the first key of a pane find their slot without hashing.
const smallCache = 4096

// aggregateKernel runs WHERE, a static join, GROUP BY and aggregates per
// pane. Per chunk: positions and the watermark before each tuple (one pass
// over every tuple), WHERE narrows the selection, the join probes the
// selected tuples and drops the unmatched, the arguments (and hashed key
// words) are evaluated; then, per run of tuples in one pane, the group
// mode's count loop finds and counts each tuple's group and each
// aggregate's fold loop combines its argument into the pane fragment.
type aggregateKernel struct {
	tupleSize int
	spec      window.Spec
	rows      bool
	layout    *window.Layout
	where     *vpred

	join      *joinTable
	joinOff   int
	joinWidth int
	denseJoin bool // group = the join's ordinal

	keys []keyPart // hashed groups
	args []aggArg
	mode groupMode
	// ident is the identity of each aggregate word (words 1..): a group's
	// row starts as it, so that the fold loops combine without asking
	// whether the group is new.
	ident []int64

	pos, wmb []int64 // per chunk: window position, watermark before the tuple
	sel      []int32
	ord      []int32
	khi, klo []uint64 // groupWords, groupBytes: per chunk, the key words
	run      []int32  // the tuples of the chunk in the current pane's run
	grp      []int32  // their group slots, by run index

	// groupWords: the direct tables' mapping, and per chunk each tuple's
	// slot in them (dix).
	dm  directMap
	dix []int32

	// groupSmall: slot+1 of key cacheBase+i in the current pane's state
	// (0: unknown), and the entries set, to clear them when the pane or
	// its table changes.
	cache     []int32
	cacheUsed []int32
	cacheBase int64
}

func newAggregateKernel(p *Plan, where *vpred) (*aggregateKernel, error) {
	q := p.Query
	k := &aggregateKernel{
		tupleSize: p.TupleSize, spec: p.Spec, rows: q.Window.Type == query.Rows,
		layout: p.Layout, where: where, join: p.join,
		pos: make([]int64, chunk), wmb: make([]int64, chunk),
		sel: make([]int32, chunk), ord: make([]int32, chunk),
		run: make([]int32, 0, chunk), grp: make([]int32, chunk),
	}
	if j := q.Join; j != nil {
		a, _ := q.Schema.Lookup(j.Column)
		k.joinOff, k.joinWidth = a.Offset, a.Size
		k.denseJoin = groupsByJoin(q)
	}
	if p.Layout.Hashed {
		for i, g := range q.GroupBy {
			kp := keyPart{width: p.KeyParts[i].Width, pos: p.KeyParts[i].Pos}
			if p.KeyParts[i].Int {
				e, err := compileExpr(g, q.Schema)
				if err != nil {
					return nil, err
				}
				kp.expr = e
			} else {
				a, _ := q.Schema.Lookup(g.(query.Column).Name)
				kp.off = a.Offset
			}
			k.keys = append(k.keys, kp)
		}
	}
	for i, ag := range q.Aggregates {
		if ag.Func == query.Count {
			continue
		}
		e, err := compileExpr(ag.Arg, q.Schema)
		if err != nil {
			return nil, err
		}
		w := p.Aggs[i].Word
		k.args = append(k.args, aggArg{expr: e, word: w, kind: p.Layout.Kinds[w-1]})
	}
	switch {
	case p.Layout.Hashed && len(k.keys) == 1 && k.keys[0].expr != nil:
		k.mode = groupSmall
		k.cache = make([]int32, smallCache)
		k.cacheUsed = make([]int32, 0, smallCache)
	case p.Layout.Hashed:
		k.mode = groupWords
		for _, kp := range k.keys {
			if kp.expr == nil {
				k.mode = groupBytes
			}
		}
		k.khi, k.klo = make([]uint64, chunk), make([]uint64, chunk)
		if k.mode == groupWords {
			k.dix = make([]int32, chunk)
			k.dm.lo, k.dm.n, k.dm.grew = make([]int64, len(k.keys)), make([]int64, len(k.keys)), make([]int8, len(k.keys))
		}
	case k.denseJoin:
		k.mode = groupJoin
	default:
		k.mode = groupOne
	}
	k.ident = make([]int64, len(p.Layout.Kinds))
	for i, kind := range p.Layout.Kinds {
		k.ident[i] = identity(kind)
	}
	for j := range k.args {
		k.args[j].fold = foldFor(k.args[j].kind, k.mode == groupOne)
	}
	return k, nil
}

// key builds the hashed group key of tuple i of the chunk.
func (k *aggregateKernel) key(data []byte, i int32) (uint64, uint64) {
	var kb [16]byte
	for j := range k.keys {
		kp := &k.keys[j]
		switch {
		case kp.expr == nil:
			o := int(i)*k.tupleSize + kp.off
			copy(kb[kp.pos:kp.pos+kp.width], data[o:o+kp.width])
		case kp.width == 4:
			binary.BigEndian.PutUint32(kb[kp.pos:], uint32(int32(kp.expr.ints[i]))^(1<<31))
		default:
			binary.BigEndian.PutUint64(kb[kp.pos:], uint64(kp.expr.ints[i])^(1<<63))
		}
	}
	return binary.BigEndian.Uint64(kb[0:8]), binary.BigEndian.Uint64(kb[8:16])
}

func (k *aggregateKernel) Process(data []byte, first uint64, r *window.TaskResult) {
	ts := k.tupleSize
	n := len(data) / ts
	words := k.layout.Words()
	spec := k.spec

	var (
		wm                  = int64(math.MinInt64) // watermark before the current tuple
		filtered, unmatched uint64
		late                uint64
		pc                  = newPaneCursor(spec)
	)
chunks:
	for c0 := 0; c0 < n; c0 += chunk {
		cn := min(chunk, n-c0)
		cd := data[c0*ts : (c0+cn)*ts]

		// Window positions, and the watermark each tuple sees: every tuple
		// advances it, whatever WHERE and the join say.
		pos, wmb := k.pos[:cn], k.wmb[:cn]
		if k.rows {
			base := int64(first) + int64(c0)
			for i := range pos {
				pos[i] = base + int64(i)
				wmb[i] = wm
				wm = max(wm, pos[i])
			}
		} else {
			for i := range pos {
				o := i * ts
				p := int64(binary.LittleEndian.Uint64(cd[o : o+8]))
				pos[i] = p
				wmb[i] = wm
				wm = max(wm, p)
			}
		}

		sel, f := selectRows(k.where, k.sel, cd, ts)
		filtered += f
		if k.join != nil {
			kept := sel[:0]
			for _, i := range sel {
				o := int(i)*ts + k.joinOff
				var hi, lo uint64
				if k.joinWidth == 16 {
					hi, lo = binary.LittleEndian.Uint64(cd[o:o+8]), binary.LittleEndian.Uint64(cd[o+8:o+16])
				} else {
					hi, lo = keyWords(cd[o : o+k.joinWidth])
				}
				if g := k.join.lookup(hi, lo); g >= 0 {
					k.ord[i] = g
					kept = append(kept, i)
				}
			}
			unmatched += uint64(len(sel) - len(kept))
			sel = kept
		}
		for j := range k.keys {
			if e := k.keys[j].expr; e != nil {
				e.eval(cd, ts, sel)
			}
		}
		for j := range k.args {
			k.args[j].expr.eval(cd, ts, sel)
		}

		// Direct tables hold their keys already (fillKeys): the key words
		// are computed only where a run is probed.
		direct := k.mode == groupWords && k.layout.MergedByKey() && k.directSlots(sel)
		keyed := false
		if k.mode >= groupWords && !direct {
			k.keyWords(cd, ts, sel)
			keyed = true
		}
		pc.mapping, pc.slots = 0, 0
		if direct {
			pc.mapping, pc.slots = k.dm.mapping, k.dm.slots
		}
		for len(sel) > 0 {
			if p := pos[sel[0]]; !pc.in(p) {
				if !pc.move(r, spec, p) {
					r.Refuse(c0+int(sel[0]), p)
					break chunks
				}
				k.clearCache()
			}
			var rest []int32
			var runLate uint64
			switch k.mode {
			case groupOne:
				rest, runLate = k.countOne(&pc, sel, pos, wmb)
			case groupJoin:
				rest, runLate = k.countJoin(&pc, sel, pos, wmb)
			case groupSmall:
				rest, runLate = k.countSmall(&pc, cd, sel, pos, wmb)
			default:
				if m := pc.cur.Direct(); m != 0 && (!direct || m != k.dm.mapping) {
					// A direct table of an earlier mapping, or a chunk
					// outside the mapping: probed from here on.
					pc.cur.Undirect()
				}
				if pc.cur.Direct() != 0 {
					if pc.cur.KeysFor() != k.dm.mapping {
						k.fillKeys(pc.cur)
					}
					rest, runLate = k.countDirect(&pc, sel, pos, wmb)
				} else {
					if !keyed {
						k.keyWords(cd, ts, sel)
						keyed = true
					}
					rest, runLate = k.countHashed(&pc, cd, sel, pos, wmb)
				}
			}
			late += runLate
			run := k.run
			pc.tuples += uint64(len(run))
			vals, grp := pc.cur.Vals, k.grp[:len(run)]
			for j := range k.args {
				a := &k.args[j]
				a.fold(vals, words, a.word, grp, run, a.expr)
			}
			sel = rest
		}
	}
	k.clearCache()
	pc.flush(r)
	r.Count(uint64(n), wm, filtered, unmatched, late)
}

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
	dm.slots = int(slots)
	dm.mapping = k.internMapping()
	return k.fillDirect(sel)
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
