package gpu

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// shape is what the GPU kernels need to know of a plan, as flat arrays
// that go to device memory as they are. Both devices build it with
// analyse; it holds everything both share.
type shape struct {
	name      string
	tupleSize int
	agg       bool   // an aggregation, else a selection
	preds     []pred // WHERE's column-versus-constant terms (a conjunction, with where)
	// code holds every expression program of the query (expr.go): WHERE's
	// other terms, projections, aggregate arguments, GROUP BY expressions.
	code  []uint64
	where int64 // start in code of WHERE's other terms, chained by opRequire; -1: none

	// Aggregations.
	layout    *window.Layout
	spec      window.Spec
	rows      bool      // ROWS window: positions are stream indexes
	groups    int       // dense groups (0 for hashed ones)
	aggs      []aggWord // word w+1 of a row is aggs[w]
	join      *joinTable
	joinOff   int
	denseJoin bool
	hashed    bool      // hashed groups: keys built from keys
	keys      []keyPart // hashed groups: the parts of the key

	// Selections.
	project []int64 // start in code of each projection; nil: SELECT *
	outSize int     // bytes per output tuple
}

// pred is `int column op constant`.
type pred struct {
	off  int
	wide bool // int64, else int32
	op   query.CmpOp
	c    int64
}

// aggWord is how one aggregate word of a group row folds its argument: an
// int32/int64 column, or an integer program.
type aggWord struct {
	off  int // the column's offset, or the program's start in code
	wide bool
	expr bool
	kind window.AggKind // AggAdd, AggMin or AggMax
}

// keyPart is one GROUP BY expression's bytes in the 16-byte group key, as
// kernels' aggregateKernel.key builds it: an integer (a program's value)
// big-endian with its sign bit flipped in 4 or 8 bytes, or a bytes column
// as it is.
type keyPart struct {
	pos, width int
	bytes      bool // a bytes column at off, else an integer program at off
	off        int
}

// rowWords is the words of a device row: the layout's, then the index of
// the group's first tuple in the pane.
func (sh *shape) rowWords() int { return sh.layout.Words() + 1 }

// entryWords is the words of a hashed group's entry: its pane (offset in
// the task's range), its key's two words, then its row.
func (sh *shape) entryWords() int { return 3 + sh.rowWords() }

func noKernel(q *query.Query, format string, args ...any) error {
	return fmt.Errorf("query %q: %s: %w", q.Name, fmt.Sprintf(format, args...), ErrNoKernel)
}

// analyse returns p's shape, or an error wrapping ErrNoKernel naming the
// first operator without a GPU kernel.
func analyse(p *kernels.Plan) (*shape, error) {
	q := p.Query
	sh := &shape{name: q.Name, tupleSize: p.TupleSize, agg: !q.Stateless(), where: -1}
	if q.UDF != nil {
		return nil, noKernel(q, "UDF %s (user code runs on the CPU only)", q.UDF.Name)
	}
	if why := sqlValues(q); why != "" {
		return nil, noKernel(q, "%s (the GPU kernels know numbers only)", why)
	}
	c := &exprCompiler{s: q.Schema}
	if q.Where != nil {
		var terms, general []query.Expr
		var flatten func(e query.Expr)
		flatten = func(e query.Expr) {
			if a, ok := e.(query.AndExpr); ok {
				for _, t := range a.Terms {
					flatten(t)
				}
				return
			}
			terms = append(terms, e)
		}
		flatten(q.Where)
		for _, t := range terms {
			if pr, ok := predOf(t, q.Schema); ok {
				sh.preds = append(sh.preds, pr)
			} else {
				general = append(general, t)
			}
		}
		if len(general) > 0 {
			start, err := c.conjunction(general)
			if err != nil {
				return nil, noKernel(q, "WHERE term %v", err)
			}
			sh.where = start
		}
	}
	var err error
	if !sh.agg {
		err = sh.analyseSelection(q, c)
	} else {
		err = sh.analyseAggregation(p, c)
	}
	if err != nil {
		return nil, err
	}
	sh.code = c.code
	return sh, nil
}

// predOf accepts `int column op int constant` (either side): the fast path
// of WHERE, without the interpreter.
func predOf(e query.Expr, s *query.Schema) (pred, bool) {
	col, op, k, ok := query.ColumnConst(e)
	if !ok {
		return pred{}, false
	}
	a, err := s.Lookup(col)
	if err != nil || (a.Type != query.Int32 && a.Type != query.Int64) || op < query.Eq || op > query.Ge {
		return pred{}, false
	}
	return pred{off: a.Offset, wide: a.Type == query.Int64, op: op, c: k}, true
}

// hasArith reports whether e computes anything (beyond loading a column or
// a constant).
func hasArith(e query.Expr) bool {
	_, ok := e.(query.Arith)
	return ok
}

func (sh *shape) analyseSelection(q *query.Query, c *exprCompiler) error {
	if len(q.Project) == 0 {
		sh.outSize = sh.tupleSize
		return nil
	}
	for _, pr := range q.Project {
		float, err := c.isFloat(pr.Expr)
		if err != nil {
			return noKernel(q, "projection %s (%v)", pr.Expr, err)
		}
		if float && hasArith(pr.Expr) {
			// Comparisons of floats are exact on the GPU, but a computed
			// float is output as its bits, and the bits of a NaN result
			// are the CPU's instruction set's (x86 keeps the first NaN
			// operand's payload, or gives its own default NaN), which
			// the GPU's arithmetic does not reproduce.
			return noKernel(q, "projection %s (float arithmetic: a NaN result's bits are the CPU's instruction set's, which the GPU does not reproduce)", pr.Expr)
		}
		start, _, err := c.program(pr.Expr)
		if err != nil {
			return noKernel(q, "projection %s (%v)", pr.Expr, err)
		}
		sh.project = append(sh.project, start)
	}
	sh.outSize = 8 + 8*len(sh.project)
	return nil
}

func (sh *shape) analyseAggregation(p *kernels.Plan, c *exprCompiler) error {
	q := p.Query
	if q.Window.Type == query.Session {
		return noKernel(q, "a session window (the device's panes are fixed: a pane and a slide)")
	}
	sh.layout, sh.spec, sh.rows = p.Layout, p.Spec, q.Window.Type == query.Rows
	if j := q.Join; j != nil {
		if j.Table.KeyWidth != 16 {
			return noKernel(q, "static join on a %d-byte key (only 16-byte keys)", j.Table.KeyWidth)
		}
		a, err := q.Schema.Lookup(j.Column)
		if err != nil {
			return noKernel(q, "static join: %v", err)
		}
		sh.joinOff = a.Offset
		if len(q.GroupBy) == 1 {
			col, ok := q.GroupBy[0].(query.Column)
			sh.denseJoin = ok && col.Name == j.As
		}
		sh.join = buildJoin(j.Table, p.GroupKeys, sh.denseJoin)
	}
	if p.Layout.Hashed {
		sh.hashed = true
		if len(p.KeyParts) != len(q.GroupBy) {
			return noKernel(q, "GROUP BY of %d keys with %d key parts", len(q.GroupBy), len(p.KeyParts))
		}
		for i, g := range q.GroupBy {
			kp := p.KeyParts[i]
			if kp.Pos+kp.Width > 16 || (kp.Int && kp.Width != 4 && kp.Width != 8) {
				return noKernel(q, "GROUP BY %s (a key part of %d bytes at %d)", g, kp.Width, kp.Pos)
			}
			part := keyPart{pos: kp.Pos, width: kp.Width, bytes: !kp.Int}
			if kp.Int {
				start, float, err := c.program(g)
				if err == nil && float {
					err = fmt.Errorf("a float key")
				}
				if err != nil {
					return noKernel(q, "GROUP BY %s (%v)", g, err)
				}
				part.off = int(start)
			} else {
				col, ok := g.(query.Column)
				if !ok {
					return noKernel(q, "GROUP BY %s (bytes keys are columns)", g)
				}
				a, err := q.Schema.Lookup(col.Name)
				if err != nil || a.Size != kp.Width {
					return noKernel(q, "GROUP BY %s (a bytes key that is not a column of %d bytes)", g, kp.Width)
				}
				part.off = a.Offset
			}
			sh.keys = append(sh.keys, part)
		}
	} else {
		sh.groups = p.Layout.Groups
		if len(q.GroupBy) > 0 && !sh.denseJoin {
			return noKernel(q, "GROUP BY with dense groups other than the joined value")
		}
		if len(p.GroupKeys) != sh.groups {
			return noKernel(q, "a layout of %d groups with %d keys", sh.groups, len(p.GroupKeys))
		}
	}
	for i, ag := range q.Aggregates {
		if ag.Func == query.Count {
			continue
		}
		name := fmt.Sprintf("%s(%s)", strings.ToUpper(ag.Func.String()), ag.Arg)
		t, err := query.TypeOf(ag.Arg, q.Scope())
		if err != nil {
			return noKernel(q, "%s (%v)", name, err)
		}
		if t != query.IntValue {
			// The CPU folds float words in tuple order; a float sum
			// depends on that order, which the GPU's atomics do not keep.
			return noKernel(q, "%s over a %s expression (float aggregates: a float sum depends on the order of its additions, which the GPU's atomics do not keep)", name, t)
		}
		w := p.Aggs[i].Word
		if w != len(sh.aggs)+1 {
			return noKernel(q, "%s in row word %d", name, w)
		}
		k := p.Layout.Kinds[w-1]
		if k != window.AggAdd && k != window.AggMin && k != window.AggMax {
			return noKernel(q, "%s combined as kind %d", name, k)
		}
		aw := aggWord{kind: k}
		if col, ok := ag.Arg.(query.Column); ok {
			a, err := q.Schema.Lookup(col.Name)
			if err != nil {
				return noKernel(q, "%s (%v)", name, err)
			}
			aw.off, aw.wide = a.Offset, a.Type == query.Int64
		} else {
			start, _, err := c.program(ag.Arg)
			if err != nil {
				return noKernel(q, "%s (%v)", name, err)
			}
			aw.off, aw.expr = int(start), true
		}
		sh.aggs = append(sh.aggs, aw)
	}
	if len(sh.aggs) != len(p.Layout.Kinds) {
		return noKernel(q, "a layout of %d aggregate words for %d aggregates", len(p.Layout.Kinds), len(sh.aggs))
	}
	return nil
}

// joinTable is the static join's open-addressing table in the layout and
// with the hash kernels.cu's agg_tuples probes (kernels/join.go's table
// once had the same; it has since moved to another hash and layout, which
// the GPU's results do not depend on): parallel arrays of mask+1 slots, a
// key's two little-endian words in hi and lo, its group ordinal in ord
// (-1: an empty slot).
type joinTable struct {
	mask   uint64
	hi, lo []uint64
	ord    []int32
}

// buildJoin builds the table of t's keys. With dense groups the ordinal of
// a key is its value's index in groupKeys (the distinct values in byte
// order, as the plan's layout numbers them); otherwise it is 0 for every
// key: only matching matters.
func buildJoin(t *query.StaticTable, groupKeys [][]byte, dense bool) *joinTable {
	n := uint64(16)
	for n < 2*uint64(len(t.Keys)) {
		n <<= 1
	}
	jt := &joinTable{mask: n - 1, hi: make([]uint64, n), lo: make([]uint64, n), ord: make([]int32, n)}
	for i := range jt.ord {
		jt.ord[i] = -1
	}
	for i, k := range t.Keys {
		var o int32
		if dense {
			g, _ := slices.BinarySearchFunc(groupKeys, t.Values[i], bytes.Compare)
			o = int32(g)
		}
		hi, lo := binary.LittleEndian.Uint64(k[0:8]), binary.LittleEndian.Uint64(k[8:16])
		s := hash128(hi, lo) & jt.mask
		for jt.ord[s] >= 0 {
			s = (s + 1) & jt.mask
		}
		jt.hi[s], jt.lo[s], jt.ord[s] = hi, lo, o
	}
	return jt
}

// lookup returns the ordinal of key (hi, lo), or -1.
func (t *joinTable) lookup(hi, lo uint64) int32 {
	s := hash128(hi, lo) & t.mask
	for {
		o := t.ord[s]
		if o < 0 || (t.hi[s] == hi && t.lo[s] == lo) {
			return o
		}
		s = (s + 1) & t.mask
	}
}

// mix is the murmur3 64-bit finaliser.
func mix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	return k ^ (k >> 33)
}

func hash128(hi, lo uint64) uint64 { return mix(lo ^ mix(hi)) }

// sqlValues says what of SQL's values q reads or makes that the GPU
// kernels have no form for ("" where nothing): strings, NULLs, booleans,
// FILTER, COUNT of a column, a lookup join, a join on a string.
func sqlValues(q *query.Query) string {
	for _, a := range q.Schema.Attrs {
		switch {
		case a.Type == query.String:
			return "a string column (" + a.Name + ")"
		case a.Nullable:
			return "a column that can be NULL (" + a.Name + ")"
		}
	}
	for _, ag := range q.Aggregates {
		if ag.Filter != nil {
			return "an aggregate's FILTER"
		}
		if ag.Func == query.Count && ag.Arg != nil {
			return "COUNT of a column"
		}
	}
	if j := q.Join; j != nil && (j.Values != nil || j.Table.KeyWidth == 0) {
		return "a lookup join, or a join on a string"
	}
	if out, err := q.OutputSchema(); err == nil {
		for _, a := range out.Attrs {
			if a.Type == query.String || a.Nullable || a.Logical == query.Boolean {
				return "an output of strings, booleans or NULLs"
			}
		}
	}
	return ""
}
