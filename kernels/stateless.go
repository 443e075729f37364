package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
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
	// out is the output schema; general where it is more than an int64
	// or float64 per projection (strings, booleans, bytes, NULLs): then
	// appendGeneral writes the tuples.
	out     *query.Schema
	general bool
	// views: per projection, the offset of the input view it copies (a
	// string column passed through), -1 else.
	views []int
	// direct: per projection, whether it is a column that is not NULL
	// copied to an output column of its type and size; copies: the byte
	// runs of the input tuple that those columns and the timestamp are,
	// adjacent ones merged (Nexmark's bid columns passed through: one
	// move a tuple rather than a register and a write per column).
	direct []bool
	copies []byteRun
	// memo, where set, carries WHERE's values of dear calls to the
	// projection's calls of them (chunkMemo).
	memo *chunkMemo
	// A lookup join: each tuple's key found in the table, and WHERE and
	// the projection run over the matched tuples with their values
	// appended (joined, the query's JoinedSchema).
	join   *joinKey
	key    *vexpr // a computed key (StaticJoin.Key), evaluated per chunk
	values [][]byte
	joined []byte
	inTS   int // the input tuples' size (tupleSize is the joined ones')
}

func newStatelessKernel(p *Plan, q *query.Query, where *vpred) (*statelessKernel, error) {
	k := &statelessKernel{tupleSize: p.TupleSize, where: where, udf: q.UDF, sel: make([]int32, chunk)}
	out, err := p.Query.OutputSchema()
	if err != nil {
		return nil, err
	}
	k.out = out
	in := q.JoinedSchema()
	if j := q.Join; j != nil {
		var jk joinKey
		if j.Key != nil {
			if k.key, err = compileExpr(j.Key, q.Schema); err != nil {
				return nil, fmt.Errorf("join key %s: %w", j.Key, err)
			}
			jk = joinKey{t: p.join, width: j.Table.KeyWidth, at: -1}
		} else {
			a, err := q.Schema.Lookup(j.Column)
			if err != nil {
				return nil, err
			}
			jk = newJoinKey(p.join, a)
		}
		k.join, k.values, k.inTS = &jk, j.Table.Values, q.Schema.TupleSize
		k.tupleSize = in.TupleSize // WHERE and the projection read joined tuples
	}
	var exprs []query.Expr
	for i, pr := range q.Project {
		e, err := compileProjection(pr.Expr, in)
		if err != nil {
			return nil, err
		}
		k.project = append(k.project, e)
		a := out.Attrs[i+1]
		view := -1
		if e.kind == vColStr {
			view = e.off
		}
		k.views = append(k.views, view)
		if a.Nullable || (a.Type != query.Int64 && a.Type != query.Float64) || a.Logical == query.Boolean {
			k.general = true
		}
		exprs = append(exprs, pr.Expr)
	}
	k.memo = linkMemo(where, k.project, exprs)
	k.direct = make([]bool, len(k.project))
	k.copies = []byteRun{{from: 0, to: 0, n: 8}}
	for c, e := range k.project {
		if n := directSize(e, out.Attrs[c+1]); n > 0 {
			k.direct[c] = true
			k.copies = addRun(k.copies, byteRun{from: e.off, to: out.Attrs[c+1].Offset, n: n})
		}
	}
	return k, nil
}

// byteRun is n bytes at from in an input tuple copied to to in the output
// tuple.
type byteRun struct{ from, to, n int }

// addRun appends r to runs, merged with the last run where it continues
// it in both tuples.
func addRun(runs []byteRun, r byteRun) []byteRun {
	if l := &runs[len(runs)-1]; l.from+l.n == r.from && l.to+l.n == r.to {
		l.n += r.n
		return runs
	}
	return append(runs, r)
}

// directSize is the size of the column that e reads where the output
// column a is the same bytes (same type and size, the input not NULL: the
// output's NULL bit stays clear), 0 where the value must be computed.
func directSize(e *vexpr, a query.Attribute) int {
	if e.nulls != nil {
		return 0
	}
	switch {
	case e.kind == vColI64 && a.Type == query.Int64, e.kind == vColF64 && a.Type == query.Float64:
		return 8
	case e.kind == vColStr && a.Type == query.String:
		return strview.Size
	}
	return 0
}

// compileProjection compiles a projected expression: a bytes column is
// read as its bytes (a register of slices of the tuple), anything else as
// compileExpr does.
func compileProjection(e query.Expr, s *query.Schema) (*vexpr, error) {
	if c, ok := e.(query.Column); ok {
		if a, err := s.Lookup(c.Name); err == nil && a.Type == query.Bytes {
			return compileRowExpr(e, s)
		}
	}
	return compileExpr(e, s)
}

func (k *statelessKernel) Process(data []byte, _ uint64, r *window.TaskResult) {
	if k.join != nil {
		k.processJoin(data, r)
		return
	}
	ts := k.tupleSize
	n := len(data) / ts
	if k.udf != nil {
		k.processUDF(data, r)
		return
	}
	if k.where == nil && len(k.project) == 0 {
		// Tuples passed through (a window join's inputs): one move, no
		// selection vector.
		r.Out = append(r.Out, data[:n*ts]...)
	} else {
		r.Filtered += k.processChunks(data[:n*ts], r)
	}
	r.Tuples += uint64(n)
	if n > 0 {
		r.MaxTS = max(r.MaxTS, int64(binary.LittleEndian.Uint64(data[(n-1)*ts:])))
	}
}

// processChunks appends the output tuples of data's tuples that pass
// WHERE, a chunk at a time, and returns how many did not pass.
func (k *statelessKernel) processChunks(data []byte, r *window.TaskResult) (filtered uint64) {
	ts := k.tupleSize
	n := len(data) / ts
	for c0 := 0; c0 < n; c0 += chunk {
		cn := min(chunk, n-c0)
		cd := data[c0*ts : (c0+cn)*ts]
		if k.memo != nil {
			k.memo.startChunk(cd, ts)
		}
		sel, f := selectRows(k.where, k.sel, cd, ts)
		filtered += f
		switch {
		case len(sel) == 0:
		case len(k.project) > 0:
			for c, e := range k.project {
				if !k.general || !k.direct[c] { // appendGeneral copies those
					e.eval(cd, ts, sel)
				}
			}
			if k.general {
				r.Out = k.appendGeneral(r.Out, cd, sel, &r.Strings)
			} else {
				r.Out = k.appendProjected(r.Out, cd, sel)
			}
		case len(sel) == cn:
			r.Out = append(r.Out, cd...) // every tuple passed
		default:
			r.Out = appendTuples(r.Out, cd, ts, sel)
		}
	}
	return filtered
}

// grow extends out by n bytes, returning it and the new bytes.
func grow(out []byte, n int) ([]byte, []byte) {
	l := len(out)
	out = slices.Grow(out, n)[:l+n]
	return out, out[l:]
}

// appendTuples appends the tuples sel (ascending) of the chunk cd to out:
// tuples of a multiple of 8 bytes up to 64 as words, others by runs of
// consecutive tuples, one copy each.
func appendTuples(out, cd []byte, ts int, sel []int32) []byte {
	out, dst := grow(out, len(sel)*ts)
	if ts%8 == 0 && ts <= 64 {
		_ = cd[int(sel[len(sel)-1])*ts+ts-1] // sel is ascending
		src := unsafe.Pointer(unsafe.SliceData(cd))
		d := unsafe.Pointer(unsafe.SliceData(dst))
		words := ts / 8
		for j, i := range sel {
			t, o := unsafe.Add(src, int(i)*ts), unsafe.Add(d, j*ts)
			for w := range words {
				*(*uint64)(unsafe.Add(o, w*8)) = *(*uint64)(unsafe.Add(t, w*8))
			}
		}
		return out
	}
	o := 0
	for j := 0; j < len(sel); {
		a := int(sel[j])
		e := j + 1
		for e < len(sel) && int(sel[e]) == a+(e-j) {
			e++
		}
		o += copy(dst[o:], cd[a*ts:(a+e-j)*ts])
		j = e
	}
	return out
}

// appendProjected appends the output tuples of sel: the event time, then
// each projection's value, a column at a time.
func (k *statelessKernel) appendProjected(out, cd []byte, sel []int32) []byte {
	ts := k.tupleSize
	ots := 8 * (1 + len(k.project))
	out, dst := grow(out, len(sel)*ots)
	_ = cd[int(sel[len(sel)-1])*ts+7] // sel is ascending
	src := unsafe.Pointer(unsafe.SliceData(cd))
	d := unsafe.Pointer(unsafe.SliceData(dst))
	full := len(sel) == len(cd)/ts
	for j, i := range sel {
		store64(d, j*ots, load64(src, int(i)*ts))
	}
	for c, e := range k.project {
		col := unsafe.Add(d, 8*(1+c))
		var vals []int64
		if e.float {
			vals = unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(e.flts))), len(e.flts))
		} else {
			vals = e.ints
		}
		if full {
			for j, v := range vals[:len(sel)] {
				store64(col, j*ots, uint64(v))
			}
			continue
		}
		for j, i := range sel {
			store64(col, j*ots, uint64(vals[i]))
		}
	}
	return out
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
	out := k.udf.Fn(in, ts, r.Out)
	if overlaps(out, in) {
		// Fn returned (part of) its input, which the ring or this worker
		// reuses, where the engine may keep r.Out past the task (a
		// hand-off to the query downstream): a copy of it instead.
		out = append(r.Out[:0], out...)
	}
	r.Out = out
	r.Tuples += uint64(n)
	if n > 0 {
		r.MaxTS = max(r.MaxTS, int64(binary.LittleEndian.Uint64(data[(n-1)*ts:])))
	}
}

// overlaps reports whether a's bytes lie in b's memory, up to its capacity.
func overlaps(a, b []byte) bool {
	if len(a) == 0 || cap(b) == 0 {
		return false
	}
	pa, pb := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa < pb+uintptr(cap(b)) && pb < pa+uintptr(len(a))
}

// appendGeneral appends the output tuples of sel by the output schema, a
// projection at a time: numbers as their type, a string column passed
// through as its view (the view's memory lives until the task is merged,
// as the output does), a computed string copied into strs, NULL by its
// bit.
func (k *statelessKernel) appendGeneral(out, cd []byte, sel []int32, strs *strview.Arena) []byte {
	ts, ots := k.tupleSize, k.out.TupleSize
	out, dst := grow(out, len(sel)*ots)
	clear(dst)
	for _, r := range k.copies {
		for j, i := range sel {
			o := int(i)*ts + r.from
			copy(dst[j*ots+r.to:j*ots+r.to+r.n], cd[o:o+r.n])
		}
	}
	for c, e := range k.project {
		if k.direct[c] {
			continue
		}
		a := k.out.Attrs[c+1]
		off, end := a.Offset, a.Offset+a.Size
		// One loop per kind of column, so that a tuple's write is not a
		// switch; a NULL's slot is cleared after.
		switch {
		case k.views[c] >= 0:
			for j, i := range sel {
				o := int(i)*ts + k.views[c]
				copy(dst[j*ots+off:j*ots+end], cd[o:o+strview.Size])
			}
		case a.Type == query.String:
			for j, i := range sel {
				if e.nulls == nil || !e.nulls[i] { // a NULL's bytes are not read
					strview.Put(dst[j*ots+off:j*ots+end], e.strs[i], strs)
				}
			}
		case a.Type == query.Bytes:
			for j, i := range sel {
				copy(dst[j*ots+off:j*ots+end], e.strs[i])
			}
		case a.Type == query.Float64:
			for j, i := range sel {
				binary.LittleEndian.PutUint64(dst[j*ots+off:j*ots+end], math.Float64bits(e.flts[i]))
			}
		case a.Type == query.Int32:
			for j, i := range sel {
				binary.LittleEndian.PutUint32(dst[j*ots+off:j*ots+end], uint32(e.ints[i]))
			}
		default:
			for j, i := range sel {
				binary.LittleEndian.PutUint64(dst[j*ots+off:j*ots+end], uint64(e.ints[i]))
			}
		}
		if e.nulls == nil {
			continue
		}
		for j, i := range sel {
			if e.nulls[i] {
				t := dst[j*ots : (j+1)*ots]
				clear(t[off:end])
				a.SetNull(t, true)
			}
		}
	}
	return out
}

// processJoin runs a lookup join: per chunk, each tuple's key is found in
// the table (a NULL key or a missing one is unmatched), the matched
// tuples are written with their values after them, and WHERE and the
// projection run over those (WHERE may read the table's columns).
func (k *statelessKernel) processJoin(data []byte, r *window.TaskResult) {
	ts := k.inTS
	n := len(data) / ts
	for c0 := 0; c0 < n; c0 += chunk {
		cn := min(chunk, n-c0)
		cd := data[c0*ts : (c0+cn)*ts]
		if k.key != nil {
			sel, _ := selectRows(nil, k.sel, cd, ts)
			k.key.eval(cd, ts, sel)
		}
		joined := k.joined[:0]
		for i := range cn {
			t := cd[i*ts : (i+1)*ts]
			var g int32
			if k.key != nil {
				g = k.join.findComputed(k.key, i)
			} else {
				g = k.join.find(t)
			}
			if g < 0 {
				r.Unmatched++
				continue
			}
			joined = append(joined, t...)
			joined = append(joined, k.values[g]...)
		}
		k.joined = joined
		if len(joined) > 0 {
			r.Filtered += k.processChunks(joined, r)
		}
	}
	r.Tuples += uint64(n)
	if n > 0 {
		r.MaxTS = max(r.MaxTS, int64(binary.LittleEndian.Uint64(data[(n-1)*ts:])))
	}
}
