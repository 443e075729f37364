package kernels

import (
	"unsafe"

	"github.com/saber-hx/saber-hx/query"
)

// chunkMemo lets a stateless query's projection reuse a dear value that
// its WHERE computed for the same tuple of the same chunk, rather than
// compute it again. Nexmark q21 extracts a URL's channel_id with a regular
// expression in WHERE (`REGEXP_EXTRACT(url, ...) IS NOT NULL OR ...`) and
// again in its SELECT's CASE; with the memo the expression runs once per
// tuple.
//
// WHERE's registers of such expressions stamp the tuples they evaluate
// with the chunk's number; the projection's calls of the same expression
// (memoized) read the register where the tuple is stamped, and compute
// the value where it is not (WHERE's OR skipped the term for it, say).
// The registers' values stay valid until the next chunk: the strings are
// views of the tuples or of WHERE's scratch, which is reset only when the
// next chunk's WHERE runs.
type chunkMemo struct {
	chunk uint64         // the current chunk's number, from 1: a stamp of another is stale
	base  unsafe.Pointer // the chunk's first tuple
	ts    int
	regs  []*vexpr // WHERE's registers of the memoized expressions
	hits  uint64   // values read from a register (tests)
}

// startChunk makes the memo's registers hold nothing until WHERE
// evaluates them over chunk cd of tuples of ts bytes.
func (m *chunkMemo) startChunk(cd []byte, ts int) {
	m.chunk++
	m.base, m.ts = unsafe.Pointer(unsafe.SliceData(cd)), ts
}

// lookup returns the value that WHERE's register of expression key holds
// for tuple t, row row of the chunk, and false where none does. The row
// is checked against t's address, so that a row from another loop than
// the chunk's projection can only miss.
func (m *chunkMemo) lookup(key string, t []byte, row int) (rval, bool) {
	if row < 0 || row >= chunk || unsafe.Pointer(unsafe.SliceData(t)) != unsafe.Add(m.base, row*m.ts) {
		return rval{}, false
	}
	for _, r := range m.regs {
		if r.memoKey != key || r.stamps[row] != m.chunk {
			continue
		}
		m.hits++
		v := rval{null: r.nulls != nil && r.nulls[row]}
		switch {
		case r.str:
			v.s = r.strs[row]
		case r.float:
			v.f = r.flts[row]
		default:
			v.i = r.ints[row]
		}
		return v, true
	}
	return rval{}, false
}

// memoizedCall wraps the row function of a dear call (rowCost at least
// memoCost) so that, in a projection linked to a chunkMemo, it reads
// WHERE's value of the same call where there is one.
func memoizedCall(e query.Call, fn rowFn) rowFn {
	if rowCost(e) < memoCost {
		return fn
	}
	key := e.String()
	return func(t []byte, sc *rowScratch) rval {
		if m := sc.memo; m != nil {
			if v, ok := m.lookup(key, t, sc.row); ok {
				return v
			}
		}
		return fn(t, sc)
	}
}

// memoCost is the least rowCost of a call worth memoizing: a regular
// expression's (a split or a concatenation costs about the lookup).
const memoCost = 64

// linkMemo returns a memo for the registers of where's dear calls that a
// projection calls too, linking both sides; nil where there are none.
func linkMemo(where *vpred, project []*vexpr, exprs []query.Expr) *chunkMemo {
	if where == nil || len(project) == 0 {
		return nil
	}
	calls := map[string]bool{}
	for _, e := range exprs {
		query.Walk(e, func(x query.Expr) bool {
			if c, ok := x.(query.Call); ok && rowCost(c) >= memoCost {
				calls[c.String()] = true
			}
			return true
		})
	}
	m := &chunkMemo{}
	where.registers(func(v *vexpr) {
		if (v.kind == vRow || v.kind == vRegex) && v.memoKey != "" && calls[v.memoKey] && v.stamps == nil {
			v.stamps, v.memo = make([]uint64, chunk), m
			m.regs = append(m.regs, v)
		}
	})
	if len(m.regs) == 0 {
		return nil
	}
	for _, p := range project {
		p.walk(func(v *vexpr) {
			if v.kind == vRow {
				v.scratch.memo = m
			}
		})
	}
	return m
}

// registers calls f with every register of p's terms.
func (p *vpred) registers(f func(*vexpr)) {
	if p == nil {
		return
	}
	p.l.walk(f)
	p.r.walk(f)
	for _, t := range p.terms {
		t.registers(f)
	}
}

// walk calls f with v and the registers it reads.
func (v *vexpr) walk(f func(*vexpr)) {
	if v == nil {
		return
	}
	f(v)
	v.l.walk(f)
	v.r.walk(f)
}
