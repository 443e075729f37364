package sql

import (
	"maps"
	"slices"
	"strings"
)

// A multi-way join (Nexmark's q23):
//
//	FROM bid B JOIN person P ON P.id = B.bidder JOIN auction A ON A.seller = B.bidder
//
// is the join of each input with the join of those before it, as Flink
// plans it: the parser makes FROM (B JOIN P) JOIN A, the first join a
// subquery marked chain (parser.moreJoins), and chainJoin, before the
// outer query is compiled, gives each chain subquery its select list and
// points the columns of the chained inputs at it. The joins are then
// compiled one by one, as a user's views of them would be: each a regular
// join, or a window join where its sides are windowed, refused as such
// where its shape is not supported.
//
// A chained input's column keeps its name in the subqueries where no
// other chained input has a column of that name, and is called qual.name
// where one has (as a view of a join names its columns): B.extra and
// P.extra, but bidder. An unqualified name that two chained inputs have
// is ambiguous, as in any join.

// chainJoin fills the select lists of the chain subqueries under sel's
// FROM and rewrites sel's references to their inputs' columns.
func (c *compiler) chainJoin(sel *selectStmt) error {
	// levels[0] joins the first two inputs, levels[m] the join of
	// levels[m-1] with input m+1.
	var levels []*selectStmt
	for in := sel.from.sub; in != nil && in.chain; in = in.from.sub {
		levels = append(levels, in)
	}
	slices.Reverse(levels)
	inputs := []*fromItem{&levels[0].from}
	for _, l := range levels {
		inputs = append(inputs, l.join)
	}
	quals := make([]string, len(inputs))
	cols := make([][]string, len(inputs))
	count := map[string]int{}
	for i, f := range inputs {
		quals[i] = qualOf(f)
		if j := slices.Index(quals[:i], quals[i]); j >= 0 {
			return errAt(f.name.pos, "%s is joined twice: give the inputs of the join aliases", quals[i])
		}
		var err error
		if cols[i], err = c.chainColumns(f); err != nil {
			return err
		}
		for _, n := range cols[i] {
			count[n]++
		}
	}
	if q := qualOf(sel.join); slices.Contains(quals, q) {
		return errAt(sel.join.name.pos, "%s is joined twice: give the inputs of the join aliases", q)
	}
	name := func(i int, col string) string {
		if count[col] > 1 {
			return quals[i] + "." + col
		}
		return col
	}
	// col is a reference to input i's column cn from a query whose FROM
	// is from: the input itself, or a level that joined it.
	col := func(from *fromItem, i int, cn string, at pos) *node {
		if from.sub == nil || !from.sub.chain {
			return &node{kind: eCol, qual: quals[i], name: cn, pos: at}
		}
		return &node{kind: eCol, qual: qualOf(from), name: name(i, cn), pos: at}
	}
	read, err := c.chainReads(sel, levels, quals, cols, count)
	if err != nil {
		return err
	}
	for m, l := range levels {
		// Its select list: the columns read above it, so that the join
		// after it needs no projection of its own (a part that would copy
		// every row and its strings in its ordered stage).
		l.items = nil
		for i := 0; i <= m+1; i++ {
			from := &l.from
			if i == m+1 {
				from = l.join
			}
			for _, cn := range cols[i] {
				if read[chainCol{i, cn}] > m {
					l.items = append(l.items, selectItem{expr: col(from, i, cn, l.pos), alias: &ident{name: name(i, cn), pos: l.pos}, pos: l.pos})
				}
			}
		}
		if m > 0 {
			// Its ON reads the inputs before through the level before.
			to := func(i int, n *node) {
				if i <= m {
					*n = *col(&l.from, i, n.name, n.pos)
				}
			}
			if err := c.chainRefs(l.on, quals[:m+2], cols, count, to); err != nil {
				return err
			}
		}
	}
	// The outer query reads every chained input through the last level.
	outer := func(i int, n *node) { *n = *col(&sel.from, i, n.name, n.pos) }
	// SELECT * names a column qual.name where another input of the whole
	// join has one of its name, the last's among them where it is known.
	starCount := maps.Clone(count)
	var lastCols []string
	if rel, ok := c.rels[sel.join.name.name]; ok && sel.join.sub == nil {
		for _, rc := range rel.cols {
			lastCols = append(lastCols, rc.name)
			starCount[rc.name]++
		}
	}
	var items []selectItem
	for _, it := range sel.items {
		switch {
		case it.star && (it.qual == "" || slices.Contains(quals, it.qual)):
			for i, cs := range cols {
				if it.qual != "" && it.qual != quals[i] {
					continue
				}
				for _, cn := range cs {
					alias := cn
					if it.qual == "" && starCount[cn] > 1 {
						alias = quals[i] + "." + cn
					}
					items = append(items, selectItem{expr: col(&sel.from, i, cn, it.pos), alias: &ident{name: alias, pos: it.pos}, pos: it.pos})
				}
			}
			switch {
			case it.qual != "":
			case lastCols == nil:
				items = append(items, selectItem{star: true, qual: qualOf(sel.join), pos: it.pos})
			default:
				lq := qualOf(sel.join)
				for _, cn := range lastCols {
					alias := cn
					if starCount[cn] > 1 {
						alias = lq + "." + cn
					}
					items = append(items, selectItem{expr: &node{kind: eCol, qual: lq, name: cn, pos: it.pos}, alias: &ident{name: alias, pos: it.pos}, pos: it.pos})
				}
			}
			continue
		case !it.star && it.alias == nil && it.expr.kind == eCol && slices.Contains(quals, it.expr.qual):
			// The output column keeps the column's name.
			it.alias = &ident{name: it.expr.name, pos: it.expr.pos}
		}
		if err := c.chainRefs(it.expr, quals, cols, count, outer); err != nil {
			return err
		}
		items = append(items, it)
	}
	sel.items = items
	exprs := []*node{sel.on, sel.where, sel.having, sel.join.asOf}
	exprs = append(exprs, sel.groupBy...)
	for _, e := range exprs {
		if err := c.chainRefs(e, quals, cols, count, outer); err != nil {
			return err
		}
	}
	return nil
}

// chainColumns is the names of the columns of a chained input: a source or
// a view (a subquery or a table has no place in a chain: it is refused).
func (c *compiler) chainColumns(f *fromItem) ([]string, error) {
	if f.sub != nil {
		return nil, errAt(f.name.pos, "a subquery in a join of more than two inputs: make it a view (CREATE VIEW), and join the view")
	}
	if _, ok := c.tables[f.name.name]; ok {
		return nil, errAt(f.name.pos, "%s is a table: in a join of more than two inputs a table is joined last (JOIN %s FOR SYSTEM_TIME AS OF ...)", f.name.name, f.name.name)
	}
	rel, err := c.fromRel(f, "")
	if err != nil {
		return nil, err
	}
	names := make([]string, len(rel.cols))
	for i, rc := range rel.cols {
		names[i] = rc.name
	}
	return names, nil
}

// chainRefs calls to for every column of e that names a chained input,
// quals[i] (its column checked), and refuses an unqualified column that
// two chained inputs have.
func (c *compiler) chainRefs(e *node, quals []string, cols [][]string, count map[string]int, to func(i int, n *node)) error {
	var err error
	walkAll(e, func(n *node) {
		if n.kind != eCol || err != nil {
			return
		}
		if n.qual == "" {
			if count[n.name] > 1 {
				var in []string
				for i, cs := range cols {
					if slices.Contains(cs, n.name) {
						in = append(in, quals[i])
					}
				}
				err = errAt(n.pos, "column %s is ambiguous: it is in %s (qualify it)", n.name, strings.Join(in, " and "))
			}
			return
		}
		i := slices.Index(quals, n.qual)
		if i < 0 {
			return
		}
		if !slices.Contains(cols[i], n.name) {
			err = errAt(n.pos, "unknown column %s.%s (valid: %s)", n.qual, n.name, strings.Join(cols[i], ", "))
			return
		}
		to(i, n)
	})
	return err
}

// chainCol is chained input i's column name.
type chainCol struct {
	i    int
	name string
}

// chainReads is, per column of a chained input that is read above the
// level that joined it, the highest level that reads it: a level's ON
// reads the inputs before it through the level below, and the outer query
// (len(levels)) reads every one through the last level. A column missing
// from the result is read by no join after its own.
func (c *compiler) chainReads(sel *selectStmt, levels []*selectStmt, quals []string, cols [][]string, count map[string]int) (map[chainCol]int, error) {
	read := map[chainCol]int{}
	mark := func(level int) func(i int, n *node) {
		return func(i int, n *node) {
			k := chainCol{i, n.name}
			read[k] = max(read[k], level)
		}
	}
	// Unqualified columns are found in the input that has them.
	unqualified := func(level, upTo int, e *node) {
		walkAll(e, func(n *node) {
			if n.kind != eCol || n.qual != "" || count[n.name] != 1 {
				return
			}
			for i := range min(upTo, len(cols)) {
				if slices.Contains(cols[i], n.name) {
					mark(level)(i, n)
				}
			}
		})
	}
	for m := 1; m < len(levels); m++ {
		if err := c.chainRefs(levels[m].on, quals[:m+1], cols, count, mark(m)); err != nil {
			return nil, err
		}
		unqualified(m, m+1, levels[m].on)
	}
	last := len(levels)
	exprs := []*node{sel.on, sel.where, sel.having, sel.join.asOf}
	exprs = append(exprs, sel.groupBy...)
	for _, it := range sel.items {
		if it.star {
			for i, cs := range cols {
				if it.qual == "" || it.qual == quals[i] {
					for _, cn := range cs {
						read[chainCol{i, cn}] = last
					}
				}
			}
			continue
		}
		exprs = append(exprs, it.expr)
	}
	for _, e := range exprs {
		if err := c.chainRefs(e, quals, cols, count, mark(last)); err != nil {
			return nil, err
		}
		unqualified(last, len(cols), e)
	}
	return read, nil
}

// walkAll is walkNodes into aggregates' FILTER too.
func walkAll(n *node, f func(*node)) {
	if n == nil {
		return
	}
	f(n)
	walkAll(n.l, f)
	walkAll(n.r, f)
	walkAll(n.filter, f)
	for _, a := range n.args {
		walkAll(a, f)
	}
}
