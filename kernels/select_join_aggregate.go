package kernels

import (
	"encoding/binary"
	"math"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

type predicate struct {
	off  int
	wide bool // int64, else int32
	op   query.CmpOp
	val  int64
}

type aggOp struct {
	off  int
	wide bool
	kind window.AggKind
	word int
}

// selectJoinAggregate runs WHERE (a conjunction of integer comparisons), an
// optional static join on a 16-byte key, and COUNT/SUM/MIN/MAX per group per
// pane.
type selectJoinAggregate struct {
	tupleSize   int
	spec        window.Spec
	rows        bool // row windows: a tuple's window position is its stream index, not its event time
	layout      *window.Layout
	preds       []predicate
	join        *joinTable16
	joinOff     int
	groupByJoin bool
	groupCols   []GroupCol // hashed GROUP BY
	aggs        []aggOp
}

func load(t []byte, off int, wide bool) int64 {
	if wide {
		return int64(binary.LittleEndian.Uint64(t[off:]))
	}
	return int64(int32(binary.LittleEndian.Uint32(t[off:])))
}

func (p *predicate) eval(t []byte) bool {
	v := load(t, p.off, p.wide)
	switch p.op {
	case query.Eq:
		return v == p.val
	case query.Ne:
		return v != p.val
	case query.Lt:
		return v < p.val
	case query.Le:
		return v <= p.val
	case query.Gt:
		return v > p.val
	default: // query.Ge
		return v >= p.val
	}
}

func (k *selectJoinAggregate) Process(data []byte, first uint64, r *window.TaskResult) {
	ts := k.tupleSize
	n := len(data) / ts
	words := k.layout.Words()
	spec := k.spec

	var (
		wm                  = int64(math.MinInt64) // watermark before the current tuple
		filtered, unmatched uint64
		late, curTuples     uint64
		cur                 *window.GroupState
		curPane             int64
		curStart, curEnd    = int64(1), int64(0) // empty: the first tuple switches pane
		curSeal             int64
	)
tuples:
	for i := 0; i < n; i++ {
		t := data[i*ts : i*ts+ts : i*ts+ts]
		// et is the tuple's window position: its event time, or for row
		// windows its index in the stream (which never goes back, so no
		// tuple is ever late in a row window).
		et := int64(binary.LittleEndian.Uint64(t[0:8]))
		if k.rows {
			et = int64(first) + int64(i)
		}
		prev := wm
		wm = max(wm, et)
		for j := range k.preds {
			if !k.preds[j].eval(t) {
				filtered++
				continue tuples
			}
		}
		var g int32
		if k.join != nil {
			kt := t[k.joinOff : k.joinOff+16]
			o := k.join.lookup(binary.LittleEndian.Uint64(kt[0:8]), binary.LittleEndian.Uint64(kt[8:16]))
			if o < 0 {
				unmatched++
				continue
			}
			if k.groupByJoin {
				g = o
			}
		}
		if et < curStart || et >= curEnd {
			if cur != nil && curTuples > 0 {
				r.AddTuples(curPane, curTuples)
			}
			curPane = spec.PaneOf(et)
			curStart = curPane * spec.Pane
			curEnd = curStart + spec.Pane
			curSeal = spec.Seal(curPane)
			cur = r.Fragment(curPane)
			curTuples = 0
		}
		if prev >= curSeal {
			late++
			continue
		}
		curTuples++
		if k.groupCols != nil {
			g = cur.Lookup(encodeKey(k.groupCols, t))
		}
		row := cur.Vals[int(g)*words : int(g)*words+words]
		fresh := row[0] == 0
		if fresh && k.groupCols == nil { // Lookup lists new hashed groups itself
			cur.Touched = append(cur.Touched, g)
		}
		row[0]++
		for j := range k.aggs {
			a := &k.aggs[j]
			v := load(t, a.off, a.wide)
			w := &row[a.word]
			switch {
			case fresh:
				*w = v
			case a.kind == window.AggAdd:
				*w += v
			case a.kind == window.AggMin:
				*w = min(*w, v)
			default:
				*w = max(*w, v)
			}
		}
	}
	if cur != nil && curTuples > 0 {
		r.AddTuples(curPane, curTuples)
	}
	r.Tuples += uint64(n)
	r.MaxTS = max(r.MaxTS, wm)
	r.Filtered += filtered
	r.Unmatched += unmatched
	r.Late += late
}
