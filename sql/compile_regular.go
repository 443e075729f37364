package sql

import (
	"slices"

	"github.com/saber-hx/saber-hx/query"
)

// A regular join (Flink's inner join of two append-only streams, without
// a window; Nexmark's q3 and q20):
//
//	FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
//	WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID')
//
// Its meaning is Flink's: every pair of a left and a right row for which
// ON and WHERE hold, output once, when the later of the two arrives (the
// output is append-only); both sides' rows are kept for ever, as Flink
// keeps them without a state TTL, so its memory grows with its inputs.
//
// ON and WHERE are the AND of terms: one equality of a column of each side
// (the key: an integer column, INT or BIGINT, of one type on both sides,
// or a string column, VARCHAR, on both: strings equal byte for byte),
// and terms of one side each, which filter that side before the join
// keeps its rows. It runs as a part per side that needs one (a filter by
// that side's terms, and a projection of the columns the query reads, so
// that the join keeps no column nobody reads), the regular join of the
// two (query.WindowJoin with Regular: kernels.RegularJoin), and the
// select list over its pairs. Other terms that read both sides, a second
// equality, and an aggregation over the join are refused, saying so.

// regularShape is the regular join supported, in words, for errors.
const regularShape = "a regular join of two streams is supported on one equality of an integer or string column of each side (ON a.k = b.k), its other terms in ON and WHERE each of one side"

// regularJoin compiles FROM left JOIN right ON ... (WHERE ...), neither
// side windowed, as a regular join.
func (c *compiler) regularJoin(name string, sel *selectStmt, left, right *relation, view bool) (*Query, *relation, error) {
	lq, rq := qualOf(&sel.from), qualOf(sel.join)
	if lq == rq {
		return nil, nil, errAt(sel.join.name.pos, "both sides of the join are called %s: give them aliases", lq)
	}
	if left.unitNs == 0 || right.unitNs == 0 {
		at, which := sel.from.name.pos, fromName(&sel.from)
		if left.unitNs != 0 {
			at, which = sel.join.name.pos, fromName(sel.join)
		}
		return nil, nil, errAt(at, "%s's times are row positions: a regular join joins streams of event times (%s)", which, regularShape)
	}
	sc := &scope{cols: append(streamScope(left, lq, sideLeft, ""), streamScope(right, rq, sideRight, "")...)}
	var terms [2][]*node // per side
	var key *node
	var keyCols [2]scol
	var split func(n *node) error
	split = func(n *node) error {
		if n == nil {
			return nil
		}
		if n.kind == eBinary && n.op == "and" {
			if err := split(n.l); err != nil {
				return err
			}
			return split(n.r)
		}
		sides := 0
		var err error
		walkNodes(n, func(x *node) {
			if x.kind != eCol || err != nil {
				return
			}
			s, rerr := sc.resolve(x)
			if rerr != nil {
				err = rerr
				return
			}
			sides |= 1 << s.side
		})
		if err != nil {
			return err
		}
		switch sides {
		case 0, 1:
			terms[0] = append(terms[0], n)
			return nil
		case 2:
			terms[1] = append(terms[1], n)
			return nil
		}
		if n.kind != eBinary || n.op != "=" || n.l.kind != eCol || n.r.kind != eCol {
			return errAt(n.pos, "this term compares the two sides of a regular join otherwise than as one column of each being equal: not supported (%s; %s)", regularShape, intervalShape)
		}
		if key != nil {
			return errAt(n.pos, "a second equality of the two sides of a regular join: not supported (%s)", regularShape)
		}
		a, _ := sc.resolve(n.l)
		b, _ := sc.resolve(n.r)
		if a.side == sideRight {
			a, b = b, a
		}
		key, keyCols = n, [2]scol{a, b}
		return nil
	}
	if err := split(sel.on); err != nil {
		return nil, nil, err
	}
	if err := split(sel.where); err != nil {
		return nil, nil, err
	}
	if key == nil {
		return nil, nil, errAt(sel.onPos, "a join of two streams without a window is a regular join, which needs an equality of a column of each side in ON: none found (%s)", regularShape)
	}
	aggregating := len(sel.groupBy) > 0 || sel.having != nil || slices.ContainsFunc(sel.items, func(it selectItem) bool { return hasCall(it.expr) })
	if aggregating {
		return nil, nil, errAt(sel.pos, "an aggregation over a regular join of two streams is not supported (Flink's updates its results as pairs arrive): aggregate over windows of each side, or over a window join")
	}
	// Each side, filtered by its terms and narrowed to the columns read.
	var keyIdx [2]int
	rels := [2]*relation{left, right}
	froms := [2]*fromItem{&sel.from, sel.join}
	for sd := range rels {
		rel, err := c.regularSide(name, sel, sc, rels[sd], froms[sd], side(sd), terms[sd], keyCols[sd])
		if err != nil {
			return nil, nil, err
		}
		k := slices.IndexFunc(rel.cols, func(col relCol) bool { return col.name == keyCols[sd].col.name })
		a, err := rel.schema.Lookup(rel.cols[k].attr)
		if err != nil {
			return nil, nil, errAt(key.pos, "%v", err)
		}
		keyIdx[sd] = slices.IndexFunc(rel.schema.Attrs, func(x query.Attribute) bool { return x.Name == a.Name })
		if a.Type != query.Int64 && a.Type != query.Int32 && a.Type != query.String || a.Logical != query.Plain {
			return nil, nil, errAt(key.pos, "%s.%s is %s: a regular join's key is an integer (INT or BIGINT) or string (VARCHAR) column of each side", [2]string{lq, rq}[sd], keyCols[sd].col.name, typeText(a, keyCols[sd].col.typ))
		}
		rels[sd] = rel
	}
	left, right = rels[0], rels[1]
	la, ra := left.schema.Attrs[keyIdx[0]], right.schema.Attrs[keyIdx[1]]
	if la.Type != ra.Type {
		return nil, nil, errAt(key.pos, "%s.%s is %s and %s.%s %s: a regular join's keys are of one type (CAST one)", lq, keyCols[0].col.name, typeText(la, keyCols[0].col.typ), rq, keyCols[1].col.name, typeText(ra, keyCols[1].col.typ))
	}
	q := &Query{Name: name}
	c.reading(q, left)
	if right.view != nil {
		q.FromRight, q.Spec.UpstreamRight = right.name, c.output(right.view)
	} else {
		q.InputRight = right.inputName()
	}
	jsc := &scope{cols: append(streamScope(left, lq, sideLeft, query.LeftPrefix), streamScope(right, rq, sideRight, query.RightPrefix)...)}
	j := &query.WindowJoin{Name: name, Left: left.schema, Right: right.schema, Regular: true, LeftKey: keyIdx[0], RightKey: keyIdx[1]}
	out, pairs, err := c.joinPairs(name, sel, q, j, jsc, left.unitNs, false)
	if err != nil {
		return nil, nil, err
	}
	out.pairs = true
	if len(sel.items) == 1 && sel.items[0].star && sel.items[0].qual == "" {
		return q, out, nil
	}
	// The select list over the pairs: the join is a part.
	c.addPart(q, name, sel.pos.line)
	out.name = q.Name
	pin := &input{rel: out, sc: pairs, schema: out.schema}
	return c.stateless(name, withWhere(sel, nil, nil), pin, false, windowSpec{}, view)
}

// regularSide is side sd (rel, named by from) of a regular join as the
// join reads it: rel itself where the query reads all its columns and
// has no term of its own, else a part that filters rel by terms and
// projects the columns read (key among them).
func (c *compiler) regularSide(name string, sel *selectStmt, sc *scope, rel *relation, from *fromItem, sd side, terms []*node, key scol) (*relation, error) {
	qual := qualOf(from)
	// The columns the select list reads: ON's and WHERE's are read by
	// the part's filter and the key, not kept.
	items := *sel
	items.on, items.where = nil, nil
	reads := sideColumnsRead(&items, sc, sd, qual)
	var cols []relCol
	for _, col := range rel.cols {
		if reads == nil || reads(col.name) || col.name == key.col.name || col.name == rel.timeName {
			cols = append(cols, col)
		}
	}
	if len(terms) == 0 && len(cols) == len(rel.cols) {
		return rel, nil
	}
	ps := &selectStmt{pos: sel.pos, from: *from}
	ps.from.win = windowSpec{}
	at := sel.pos
	if len(terms) > 0 {
		at = terms[0].pos
	}
	for _, col := range cols {
		ps.items = append(ps.items, selectItem{expr: &node{kind: eCol, qual: qual, name: col.name, pos: at}, pos: at})
	}
	for _, t := range terms {
		if ps.where == nil {
			ps.where = t
		} else {
			ps.where = &node{kind: eBinary, op: "and", l: ps.where, r: t, pos: t.pos}
		}
	}
	in := &input{rel: rel, sc: &scope{cols: streamScope(rel, qual, sideLeft, "")}, schema: rel.schema}
	q, out, err := c.stateless(name, ps, in, false, windowSpec{}, true)
	if err != nil {
		return nil, err
	}
	q = c.addPart(q, name, sel.pos.line)
	out.name, out.view = q.Name, q
	return out, nil
}
