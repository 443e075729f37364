package kernels

import (
	"encoding/binary"
	"fmt"
	"math"

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

// compileKeyParts compiles q's GROUP BY into the key parts of plan p's
// layout: an integer expression (a string's number in the query's
// dictionary), or a bytes column read as it is.
func compileKeyParts(p *Plan, q *query.Query) ([]keyPart, error) {
	var keys []keyPart
	for i, g := range q.GroupBy {
		kp := keyPart{width: p.KeyParts[i].Width, pos: p.KeyParts[i].Pos}
		if p.KeyParts[i].Int {
			e, err := compileExpr(g, q.Schema)
			if err != nil {
				return nil, err
			}
			if p.KeyParts[i].Kind == KeyString {
				if at, ok := p.numberAt(g); ok {
					e = &vexpr{kind: vColI32, off: at}
					e.alloc()
				} else {
					e = internExpr(e, p.strings)
				}
			}
			kp.expr = e
		} else {
			a, _ := q.Schema.Lookup(g.(query.Column).Name)
			kp.off = a.Offset
		}
		keys = append(keys, kp)
	}
	return keys, nil
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
	groupSmall groupMode = iota // one integer key: a direct-mapped cache of slots ahead of Lookup
	groupWords                  // integer keys only: the key's two words computed per chunk
	groupBytes                  // with a bytes key: the general key encoding
)

// smallCache is the direct-mapped cache's size: integer keys within
// smallCache/2 of the first key of a pane find their slot without hashing.
const smallCache = 4096

// aggregateKernel runs WHERE, a static join, GROUP BY and aggregates per
// pane for the hashed group layouts (GROUP BY stream columns; the dense
// ones are denseKernel's). Per chunk: positions and the watermark before
// each tuple (one pass over every tuple), WHERE narrows the selection, the
// join probes the selected tuples and drops the unmatched. A chunk wholly
// in one pane, none of it late, whose keys lie in the direct mapping, is
// then counted and folded by the fused pass chosen at plan time
// (fusedfold.go). Any other chunk has its arguments (and key words)
// evaluated; then, per run of tuples in one pane, the group mode's count
// loop finds and counts each tuple's group and each aggregate's fold loop
// combines its argument into the pane fragment.
type aggregateKernel struct {
	tupleSize int
	spec      window.Spec
	rows      bool
	layout    *window.Layout
	where     *vpred

	join      *joinTable
	joinOff   int
	joinWidth int
	jk        joinKey // the probe where joinWidth is not 16 or the key can be NULL
	jkSlow    bool

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
	dm     directMap
	dix    []int32
	shared *sharedDirect // the plan's (never nil): the mapping every kernel of the query converges on

	// groupSmall: slot+1 of key cacheBase+i in the current pane's state
	// (0: unknown), and the entries set, to clear them when the pane or
	// its table changes.
	cache     []int32
	cacheUsed []int32
	cacheBase int64

	// fused, where not nil, counts and folds a chunk of a direct table in
	// one pass (fusedFoldOf); all is 0, 1, ... chunk-1, read-only: the
	// selection of a chunk that WHERE and the join left whole.
	fused fusedFold
	keyed keyedFold // one key, an integer column: its slot read in the same loop
	cols  *slotCols // int32 column parts: the slots in one pass (slotColsOf)
	all   []int32
}

func newAggregateKernel(p *Plan, q *query.Query, where *vpred) (*aggregateKernel, error) {
	if !p.Layout.Hashed {
		return nil, fmt.Errorf("the aggregate kernel serves hashed group layouts, not %d dense groups (denseKernel)", p.Layout.Groups)
	}
	k := &aggregateKernel{
		tupleSize: p.TupleSize, spec: p.Spec, rows: q.Window.Type == query.Rows,
		layout: p.Layout, where: where, join: p.join, shared: p.direct,
		pos: make([]int64, chunk), wmb: make([]int64, chunk),
		sel: make([]int32, chunk), ord: make([]int32, chunk),
		run: make([]int32, 0, chunk), grp: make([]int32, chunk),
	}
	if j := q.Join; j != nil {
		a, _ := q.Schema.Lookup(j.Column)
		k.joinOff, k.joinWidth = a.Offset, a.Size
		k.jk, k.jkSlow = newJoinKey(p.join, a), a.Type == query.String || a.Nullable
	}
	keys, err := compileKeyParts(p, q)
	if err != nil {
		return nil, err
	}
	k.keys = keys
	for i, ag := range q.Aggregates {
		if ag.Func == query.Count {
			continue
		}
		e, err := compileExpr(ag.Arg, q.Schema)
		if err != nil {
			return nil, err
		}
		w := i + 1 // q is the lowered query: aggregate i is word i+1
		k.args = append(k.args, aggArg{expr: e, word: w, kind: p.Layout.Kinds[w-1]})
	}
	if len(k.keys) == 1 && k.keys[0].expr != nil {
		k.mode = groupSmall
		k.cache = make([]int32, smallCache)
		k.cacheUsed = make([]int32, 0, smallCache)
	} else {
		k.mode = groupWords
		for _, kp := range k.keys {
			if kp.expr == nil {
				k.mode = groupBytes
			}
		}
		k.khi, k.klo = make([]uint64, chunk), make([]uint64, chunk)
	}
	if k.mode != groupBytes {
		k.dix = make([]int32, chunk)
		k.dm.lo, k.dm.n, k.dm.grew = make([]int64, len(k.keys)), make([]int64, len(k.keys)), make([]int8, len(k.keys))
	}
	k.ident = make([]int64, len(p.Layout.Kinds))
	for i, kind := range p.Layout.Kinds {
		k.ident[i] = identity(kind)
	}
	for j := range k.args {
		k.args[j].fold = foldFor(k.args[j].kind)
	}
	k.fused = fusedFoldOf(k.args, p.Layout.Words())
	if e := k.keys[0].expr; len(k.keys) == 1 && e != nil && (e.kind == vColI32 || e.kind == vColI64) {
		k.keyed = keyedFoldOf(e.kind == vColI64, k.args, p.Layout.Words())
	}
	if k.mode != groupBytes {
		k.cols = slotColsOf(k.keys)
	}
	k.all = make([]int32, chunk)
	for i := range k.all {
		k.all[i] = int32(i)
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
	byKey := k.layout.MergedByKey()

	if k.dm.mapping != 0 && !k.dm.off {
		k.adoptShared()
	}
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
		var lowest int64 // the chunk's lowest position
		if k.rows {
			lowest = int64(first) + int64(c0)
			wm = rowPositions(pos, wmb, lowest, wm)
		} else {
			wm, lowest = timePositions(cd, ts, pos, wmb, wm)
		}

		var sel []int32
		if k.where == nil {
			sel = k.all[:cn]
		} else {
			var f uint64
			sel, f = selectRows(k.where, k.sel, cd, ts)
			filtered += f
		}
		if k.join != nil {
			if k.where == nil {
				sel = append(k.sel[:0], sel...)
			}
			kept := sel[:0]
			for _, i := range sel {
				var g int32
				if k.jkSlow {
					g = k.jk.find(cd[int(i)*ts : int(i+1)*ts])
				} else {
					o := int(i)*ts + k.joinOff
					var hi, lo uint64
					if k.joinWidth == 16 {
						hi, lo = binary.LittleEndian.Uint64(cd[o:o+8]), binary.LittleEndian.Uint64(cd[o+8:o+16])
					} else {
						hi, lo = keyWords(cd[o : o+k.joinWidth])
					}
					g = k.join.lookup(hi, lo)
				}
				if g >= 0 {
					k.ord[i] = g
					kept = append(kept, i)
				}
			}
			unmatched += uint64(len(sel) - len(kept))
			sel = kept
		}
		if len(sel) == 0 {
			continue
		}

		// The fused pass: a chunk wholly in one pane, none of it late, into
		// a direct table of the current mapping, every key inside it.
		if (k.fused != nil || k.keyed != nil) && byKey && k.dm.mapping != 0 && !k.dm.off {
			if p := pos[sel[0]]; !pc.in(p) {
				pc.mapping, pc.slots = k.dm.mapping, k.dm.slots
				if !pc.move(r, spec, p) {
					r.Refuse(c0+int(sel[0]), p)
					break chunks
				}
				k.clearCache()
			}
			if st := pc.cur; lowest >= pc.start && wm <= min(pc.last, pc.open) && st.Direct() == k.dm.mapping {
				if st.KeysFor() != k.dm.mapping {
					k.fillKeys(st)
				}
				if k.keyed != nil {
					// Up to the first key outside the mapping; the rest
					// below, which widens it.
					j := k.keyed(st, sel, cd, ts, k.dm.lo[0], uint64(k.dm.n[0]), k.keys[0].expr.off, k.ident, k.args)
					pc.tuples += uint64(j)
					if sel = sel[j:]; len(sel) == 0 {
						continue
					}
				} else if k.fillDirectInPlace(cd, ts, sel) {
					k.fused(st, k.dix, sel, cd, ts, k.ident, k.args)
					pc.tuples += uint64(len(sel))
					continue
				}
			}
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
		direct := k.mode != groupBytes && byKey && k.directSlots(sel)
		keyed := false
		if k.mode != groupSmall && !direct {
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
			if m := pc.cur.Direct(); m != 0 && (!direct || m != k.dm.mapping) {
				// A direct table of an earlier mapping, or a chunk outside
				// the mapping: probed from here on.
				pc.cur.Undirect()
				k.clearCache()
			}
			switch {
			case pc.cur.Direct() != 0:
				if pc.cur.KeysFor() != k.dm.mapping {
					k.fillKeys(pc.cur)
				}
				rest, runLate = k.countDirect(&pc, sel, pos, wmb)
			case k.mode == groupSmall:
				rest, runLate = k.countSmall(&pc, cd, sel, pos, wmb)
			default:
				if !keyed {
					k.keyWords(cd, ts, sel)
					keyed = true
				}
				rest, runLate = k.countHashed(&pc, cd, sel, pos, wmb)
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
