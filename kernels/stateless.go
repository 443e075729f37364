package kernels

import (
	"encoding/binary"
	"math"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// statelessKernel runs WHERE and a projection or a UDF: its output is
// tuples, in input order, appended to the task result's Out.
type statelessKernel struct {
	tupleSize int
	where     *vpred
	project   []*vexpr
	udf       *query.UDF
	gather    []byte // a UDF's input when WHERE dropped tuples
	sel       []int32
}

func newStatelessKernel(p *Plan, where *vpred) (*statelessKernel, error) {
	k := &statelessKernel{tupleSize: p.TupleSize, where: where, udf: p.Query.UDF, sel: make([]int32, chunk)}
	for _, pr := range p.Query.Project {
		e, err := compileExpr(pr.Expr, p.Query.Schema)
		if err != nil {
			return nil, err
		}
		k.project = append(k.project, e)
	}
	return k, nil
}

func (k *statelessKernel) Process(data []byte, _ uint64, r *window.TaskResult) {
	ts := k.tupleSize
	n := len(data) / ts
	var filtered uint64
	if k.udf != nil {
		k.processUDF(data, r)
		return
	}
	for c0 := 0; c0 < n; c0 += chunk {
		cn := min(chunk, n-c0)
		cd := data[c0*ts : (c0+cn)*ts]
		sel, f := selectRows(k.where, k.sel, cd, ts)
		filtered += f
		if len(k.project) == 0 {
			for _, i := range sel {
				r.Out = append(r.Out, cd[int(i)*ts:int(i+1)*ts]...)
			}
			continue
		}
		for _, e := range k.project {
			e.eval(cd, ts, sel)
		}
		for _, i := range sel {
			r.Out = append(r.Out, cd[int(i)*ts:int(i)*ts+8]...) // event time
			for _, e := range k.project {
				if e.float {
					r.Out = binary.LittleEndian.AppendUint64(r.Out, math.Float64bits(e.flts[i]))
				} else {
					r.Out = binary.LittleEndian.AppendUint64(r.Out, uint64(e.ints[i]))
				}
			}
		}
	}
	r.Tuples += uint64(n)
	r.Filtered += filtered
	if n > 0 {
		r.MaxTS = max(r.MaxTS, int64(binary.LittleEndian.Uint64(data[(n-1)*ts:])))
	}
}

// processUDF hands the task's tuples that pass WHERE to the UDF in one call.
func (k *statelessKernel) processUDF(data []byte, r *window.TaskResult) {
	ts := k.tupleSize
	n := len(data) / ts
	in := data
	if k.where != nil {
		k.gather = k.gather[:0]
		for c0 := 0; c0 < n; c0 += chunk {
			cn := min(chunk, n-c0)
			cd := data[c0*ts : (c0+cn)*ts]
			sel, f := selectRows(k.where, k.sel, cd, ts)
			r.Filtered += f
			for _, i := range sel {
				k.gather = append(k.gather, cd[int(i)*ts:int(i+1)*ts]...)
			}
		}
		in = k.gather
	}
	r.Out = k.udf.Fn(in, ts, r.Out)
	r.Tuples += uint64(n)
	if n > 0 {
		r.MaxTS = max(r.MaxTS, int64(binary.LittleEndian.Uint64(data[(n-1)*ts:])))
	}
}
