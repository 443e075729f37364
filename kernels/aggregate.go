package kernels

import (
	"encoding/binary"
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

// aggArg is one aggregate's argument and how it combines.
type aggArg struct {
	expr *vexpr
	word int
	kind window.AggKind
}

// aggregateKernel runs WHERE, a static join, GROUP BY and aggregates per
// pane. Per chunk: positions and the watermark before each tuple (one pass
// over every tuple), WHERE narrows the selection, the join probes the
// selected tuples and drops the unmatched, the arguments are evaluated, and
// one loop over the selection folds tuples into pane fragments.
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

	pos, wmb []int64 // per chunk: window position, watermark before the tuple
	sel      []int32
	ord      []int32
}

func newAggregateKernel(p *Plan, where *vpred) (*aggregateKernel, error) {
	q := p.Query
	k := &aggregateKernel{
		tupleSize: p.TupleSize, spec: p.Spec, rows: q.Window.Type == query.Rows,
		layout: p.Layout, where: where, join: p.join,
		pos: make([]int64, chunk), wmb: make([]int64, chunk),
		sel: make([]int32, chunk), ord: make([]int32, chunk),
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
	hashed := k.layout.Hashed

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

		for _, i := range sel {
			p := pos[i]
			if !pc.in(p) {
				if !pc.move(r, spec, p) {
					r.Refuse(c0+int(i), p)
					break chunks
				}
			}
			if wmb[i] > pc.open {
				late++
				continue
			}
			pc.tuples++
			var g int32
			switch {
			case hashed:
				g = pc.cur.Lookup(k.key(cd, i))
			case k.denseJoin:
				g = k.ord[i]
			}
			row := pc.cur.Vals[int(g)*words : int(g)*words+words]
			fresh := row[0] == 0
			if fresh && !hashed { // Lookup lists new hashed groups itself
				pc.cur.Touched = append(pc.cur.Touched, g)
			}
			row[0]++
			for j := range k.args {
				a := &k.args[j]
				var v int64
				if a.kind.Float() {
					v = int64(math.Float64bits(a.expr.flts[i]))
				} else {
					v = a.expr.ints[i]
				}
				fold(row, a.word, a.kind, v, fresh)
			}
		}
	}
	pc.flush(r)
	r.Count(uint64(n), wm, filtered, unmatched, late)
}

// fold puts v into word w of a group row: the first value of a group (fresh)
// initialises the word, later ones combine with it.
func fold(row []int64, w int, k window.AggKind, v int64, fresh bool) {
	if fresh {
		row[w] = v
	} else {
		row[w] = k.Combine(row[w], v)
	}
}
