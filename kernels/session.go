package kernels

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// sessionKernel is the kernel of a query over session windows: sessions
// depend on the order of the tuples and the watermark before each, so the
// kernel only evaluates what each tuple brings, in parallel, and
// window.Sessions (window.SessionParts, cut by key, at several workers)
// assembles them in task order. Per chunk, WHERE narrows the selection,
// the keys and the aggregates' arguments are evaluated as the aggregate
// kernel evaluates them, and each counted tuple becomes a record
// (window.SessionRecordSize): its time, the largest time of the task's
// tuples before it (filtered ones too), its key bytes and its aggregate
// words.
type sessionKernel struct {
	tupleSize int
	where     *vpred
	keys      []keyPart
	args      []*vexpr
	floats    []bool // the argument's word holds float64 bits
	sel, all  []int32
	wmb       []int64
	recSize   int
}

func newSessionKernel(p *Plan, q *query.Query, where *vpred) (*sessionKernel, error) {
	if q.Join != nil {
		return nil, fmt.Errorf("a static join in a query over session windows is not supported yet")
	}
	if q.Window.Type != query.Session {
		return nil, fmt.Errorf("the session kernel serves session windows, not %s", q.Window.Type)
	}
	k := &sessionKernel{tupleSize: p.TupleSize, where: where, sel: make([]int32, chunk), all: make([]int32, chunk),
		wmb: make([]int64, chunk), recSize: window.SessionRecordSize(p.Layout)}
	for i := range k.all {
		k.all[i] = int32(i)
	}
	keys, err := compileKeyParts(p, q)
	if err != nil {
		return nil, err
	}
	k.keys = keys
	for _, ag := range q.Aggregates {
		e, err := compileExpr(ag.Arg, q.Schema)
		if err != nil {
			return nil, err
		}
		k.args = append(k.args, e)
		k.floats = append(k.floats, e.float)
	}
	return k, nil
}

func (k *sessionKernel) Process(data []byte, _ uint64, r *window.TaskResult) {
	ts := k.tupleSize
	n := len(data) / ts
	wm := int64(math.MinInt64)
	var filtered uint64
	for c0 := 0; c0 < n; c0 += chunk {
		cn := min(chunk, n-c0)
		cd := data[c0*ts : (c0+cn)*ts]
		for i := range cn {
			k.wmb[i] = wm
			wm = max(wm, int64(binary.LittleEndian.Uint64(cd[i*ts:])))
		}
		sel := k.all[:cn]
		if k.where != nil {
			var f uint64
			sel, f = selectRows(k.where, k.sel, cd, ts)
			filtered += f
		}
		if len(sel) == 0 {
			continue
		}
		for j := range k.keys {
			if e := k.keys[j].expr; e != nil {
				e.eval(cd, ts, sel)
			}
		}
		for _, e := range k.args {
			e.eval(cd, ts, sel)
		}
		var rec []byte
		for _, i := range sel {
			r.Out, rec = grow(r.Out, k.recSize)
			copy(rec[0:8], cd[int(i)*ts:int(i)*ts+8])
			binary.LittleEndian.PutUint64(rec[8:], uint64(k.wmb[i]))
			kb := rec[16:32]
			clear(kb)
			for j := range k.keys {
				kp := &k.keys[j]
				switch {
				case kp.expr == nil:
					o := int(i)*ts + kp.off
					copy(kb[kp.pos:kp.pos+kp.width], cd[o:o+kp.width])
				case kp.width == 4:
					binary.BigEndian.PutUint32(kb[kp.pos:], uint32(int32(kp.expr.ints[i]))^(1<<31))
				default:
					binary.BigEndian.PutUint64(kb[kp.pos:], uint64(kp.expr.ints[i])^(1<<63))
				}
			}
			for a, e := range k.args {
				v := uint64(0)
				if k.floats[a] {
					v = math.Float64bits(e.flts[i])
				} else {
					v = uint64(e.ints[i])
				}
				binary.LittleEndian.PutUint64(rec[32+8*a:], v)
			}
		}
	}
	r.Tuples += uint64(n)
	r.Filtered += filtered
	if n > 0 {
		r.MaxTS = max(r.MaxTS, wm)
	}
}
