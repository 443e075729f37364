package offload

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
	preds     []pred // WHERE: a conjunction

	// Aggregations.
	layout    *window.Layout
	spec      window.Spec
	rows      bool // ROWS window: positions are stream indexes
	groups    int
	aggs      []aggWord // word w+1 of a row is aggs[w]
	join      *joinTable
	joinOff   int
	denseJoin bool

	// Selections.
	project []projCol // nil: SELECT *
	outSize int       // bytes per output tuple
}

// pred is `int column op constant`.
type pred struct {
	off  int
	wide bool // int64, else int32
	op   query.CmpOp
	c    int64
}

// aggWord is how one aggregate word of a group row folds its column.
type aggWord struct {
	off  int
	wide bool
	kind window.AggKind // AggAdd, AggMin or AggMax
}

// projCol is one projected column: copied as an int64 or float64.
type projCol struct {
	off int
	typ query.Type
}

// rowWords is the words of a device row: the layout's, then the index of
// the group's first tuple in the pane.
func (sh *shape) rowWords() int { return sh.layout.Words() + 1 }

func noKernel(q *query.Query, format string, args ...any) error {
	return fmt.Errorf("query %q: %s: %w", q.Name, fmt.Sprintf(format, args...), ErrNoKernel)
}

// analyse returns p's shape, or an error wrapping ErrNoKernel naming the
// first operator without a GPU kernel.
func analyse(p *kernels.Plan) (*shape, error) {
	q := p.Query
	sh := &shape{name: q.Name, tupleSize: p.TupleSize, agg: !q.Stateless()}
	if q.UDF != nil {
		return nil, noKernel(q, "UDF")
	}
	if q.Where != nil {
		var terms []query.Expr
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
			pr, err := predOf(t, q.Schema)
			if err != "" {
				return nil, noKernel(q, "WHERE term %s (%s)", t, err)
			}
			sh.preds = append(sh.preds, pr)
		}
	}
	if !sh.agg {
		return sh, sh.analyseSelection(q)
	}
	return sh, sh.analyseAggregation(p)
}

// predOf accepts `int column op int constant` (either side); else it says
// why not.
func predOf(e query.Expr, s *query.Schema) (pred, string) {
	switch e.(type) {
	case query.OrExpr:
		return pred{}, "an OR of predicates"
	case query.Compare:
	default:
		return pred{}, "not a comparison"
	}
	c := e.(query.Compare)
	col, lok := c.L.(query.Column)
	k, rok := c.R.(query.IntConst)
	op := c.Op
	if !lok || !rok {
		col, lok = c.R.(query.Column)
		k, rok = c.L.(query.IntConst)
		if !lok || !rok {
			return pred{}, "only a column compared with an integer constant"
		}
		op = mirror(op)
	}
	a, err := s.Lookup(col.Name)
	if err != nil {
		return pred{}, err.Error()
	}
	if a.Type != query.Int32 && a.Type != query.Int64 {
		return pred{}, fmt.Sprintf("column %s is %s, only int32 and int64 compare", col.Name, a.Type)
	}
	return pred{off: a.Offset, wide: a.Type == query.Int64, op: op, c: k.V}, ""
}

// mirror turns `k op col` into `col op' k`.
func mirror(op query.CmpOp) query.CmpOp {
	switch op {
	case query.Lt:
		return query.Gt
	case query.Le:
		return query.Ge
	case query.Gt:
		return query.Lt
	case query.Ge:
		return query.Le
	}
	return op
}

func (sh *shape) analyseSelection(q *query.Query) error {
	if len(q.Project) == 0 {
		sh.outSize = sh.tupleSize
		return nil
	}
	for _, pr := range q.Project {
		c, ok := pr.Expr.(query.Column)
		if !ok {
			return noKernel(q, "projection %s (only columns are projected on the GPU, not expressions)", pr.Expr)
		}
		a, err := q.Schema.Lookup(c.Name)
		if err != nil {
			return noKernel(q, "projection %s (%v)", c.Name, err)
		}
		switch a.Type {
		case query.Int32, query.Int64, query.Float32, query.Float64:
		default:
			return noKernel(q, "projection %s of type %s", c.Name, a.Type)
		}
		sh.project = append(sh.project, projCol{off: a.Offset, typ: a.Type})
	}
	sh.outSize = 8 + 8*len(sh.project)
	return nil
}

func (sh *shape) analyseAggregation(p *kernels.Plan) error {
	q := p.Query
	sh.layout, sh.spec, sh.rows = p.Layout, p.Spec, q.Window.Type == query.Rows
	if p.Layout.Hashed || len(p.KeyParts) > 0 {
		keys := make([]string, len(q.GroupBy))
		for i, g := range q.GroupBy {
			keys[i] = g.String()
		}
		return noKernel(q, "GROUP BY %s (hashed groups; only the joined value groups on the GPU)", strings.Join(keys, ", "))
	}
	sh.groups = p.Layout.Groups
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
		if len(q.GroupBy) > 0 && !sh.denseJoin {
			return noKernel(q, "GROUP BY with a static join, other than by the joined value alone")
		}
		sh.join = buildJoin(j.Table, p.GroupKeys, sh.denseJoin)
	} else if len(q.GroupBy) > 0 {
		return noKernel(q, "GROUP BY without a static join")
	}
	if len(p.GroupKeys) != sh.groups {
		return noKernel(q, "a layout of %d groups with %d keys", sh.groups, len(p.GroupKeys))
	}
	for i, ag := range q.Aggregates {
		if ag.Func == query.Count {
			continue
		}
		c, ok := ag.Arg.(query.Column)
		if !ok {
			return noKernel(q, "%s(%s) (aggregates of columns only, not expressions)", strings.ToUpper(ag.Func.String()), ag.Arg)
		}
		a, err := q.Schema.Lookup(c.Name)
		if err != nil {
			return noKernel(q, "%s(%s) (%v)", strings.ToUpper(ag.Func.String()), c.Name, err)
		}
		if a.Type != query.Int32 && a.Type != query.Int64 {
			return noKernel(q, "%s(%s) over a %s column (only int32 and int64)", strings.ToUpper(ag.Func.String()), c.Name, a.Type)
		}
		w := p.Aggs[i].Word
		if w != len(sh.aggs)+1 {
			return noKernel(q, "%s(%s) in row word %d", strings.ToUpper(ag.Func.String()), c.Name, w)
		}
		k := p.Layout.Kinds[w-1]
		if k != window.AggAdd && k != window.AggMin && k != window.AggMax {
			return noKernel(q, "%s(%s) combined as kind %d", strings.ToUpper(ag.Func.String()), c.Name, k)
		}
		sh.aggs = append(sh.aggs, aggWord{off: a.Offset, wide: a.Type == query.Int64, kind: k})
	}
	if len(sh.aggs) != len(p.Layout.Kinds) {
		return noKernel(q, "a layout of %d aggregate words for %d aggregates", len(p.Layout.Kinds), len(sh.aggs))
	}
	return nil
}

// joinTable is kernels/join.go's open-addressing table (the same hash,
// probe and layout, rebuilt here because kernels keeps its own
// unexported): parallel arrays of mask+1 slots, a key's two little-endian
// words in hi and lo, its group ordinal in ord (-1: an empty slot).
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
