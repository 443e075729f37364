package sql

import (
	"fmt"
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
// P.extra, but bidder. A level's select list holds only the columns read
// above it. Each ON sees the inputs joined so far; an unqualified column
// that two inputs it sees have is ambiguous, as in any join.

// chain is a multi-way join's chained inputs: those of its chain
// subqueries, levels[0] joining inputs 0 and 1, levels[m] the join of
// levels[m-1] with input m+1; the outer query joins the last level with
// its own JOIN input, last.
type chain struct {
	levels []*selectStmt
	quals  []string
	cols   [][]string
	count  map[string]int // per column name, the chained inputs that have it
	// lastQual and lastCols are the outer query's own JOIN input's
	// qualifier and columns (lastCols nil where unknown: a subquery).
	lastQual string
	lastCols []string
}

// name is input i's column col's name in the chain's subqueries.
func (ch *chain) name(i int, col string) string {
	if ch.count[col] > 1 {
		return ch.quals[i] + "." + col
	}
	return col
}

// chainJoin fills the select lists of the chain subqueries under sel's
// FROM and rewrites sel's references to their inputs' columns.
func (c *compiler) chainJoin(sel *selectStmt) error {
	ch := &chain{count: map[string]int{}, lastQual: qualOf(sel.join)}
	for in := sel.from.sub; in != nil && in.chain; in = in.from.sub {
		ch.levels = append(ch.levels, in)
	}
	slices.Reverse(ch.levels)
	inputs := []*fromItem{&ch.levels[0].from}
	for _, l := range ch.levels {
		inputs = append(inputs, l.join)
	}
	for _, f := range inputs {
		q := qualOf(f)
		if slices.Contains(ch.quals, q) {
			return errAt(f.name.pos, "%s is joined twice: give the inputs of the join aliases", q)
		}
		cols, err := c.chainColumns(f)
		if err != nil {
			return err
		}
		ch.quals, ch.cols = append(ch.quals, q), append(ch.cols, cols)
		for _, n := range cols {
			ch.count[n]++
		}
	}
	if slices.Contains(ch.quals, ch.lastQual) {
		return errAt(sel.join.name.pos, "%s is joined twice: give the inputs of the join aliases", ch.lastQual)
	}
	switch {
	case sel.join.sub != nil:
	case c.tables[sel.join.name.name] != nil:
		for _, col := range c.tables[sel.join.name.name].Columns {
			ch.lastCols = append(ch.lastCols, col.Name)
		}
	default:
		if rel, ok := c.rels[sel.join.name.name]; ok {
			for _, rc := range rel.cols {
				ch.lastCols = append(ch.lastCols, rc.name)
			}
		}
	}
	items := ch.expandStars(sel)
	ch.nameItems(items)
	// One walk checks each reference to a chained input, notes the
	// highest level that reads the column (a level's ON reads the inputs
	// before it through the level below; the outer query, level
	// len(levels), reads every one through the last level) and points
	// it where it is read from.
	read := map[chainCol]int{}
	reader := func(level int, rewrite func(i int, n *node)) func(i int, n *node) {
		return func(i int, n *node) {
			k := chainCol{i, n.name}
			read[k] = max(read[k], level)
			rewrite(i, n)
		}
	}
	for m := 1; m < len(ch.levels); m++ {
		// Its ON sees inputs 0..m+1, those before m+1 through the level
		// below.
		l := ch.levels[m]
		through := func(i int, n *node) {
			if i <= m {
				*n = *ch.col(&l.from, i, n.name, n.pos)
			}
		}
		if err := ch.refs(l.on, m+2, false, reader(m, through)); err != nil {
			return err
		}
	}
	// The outer query sees every chained input through the last level.
	// An unqualified column keeps its name there where it is the
	// subquery's name, so that one the last input has too is found
	// ambiguous by the scope even where the last input's columns are
	// not known here.
	outer := reader(len(ch.levels), func(i int, n *node) {
		if n.qual != "" || ch.name(i, n.name) != n.name {
			*n = *ch.col(&sel.from, i, n.name, n.pos)
		}
	})
	exprs := ch.outerExprs(sel)
	for _, it := range items {
		if !it.star {
			exprs = append(exprs, it.expr)
		}
	}
	for _, e := range exprs {
		if err := ch.refs(e, len(ch.quals), true, outer); err != nil {
			return err
		}
	}
	sel.items = items
	// Each level's select list: the columns read above it, so that the
	// join after it needs no projection of its own (a part that would
	// copy every row and its strings in its ordered stage).
	for m, l := range ch.levels {
		l.items = nil
		for i := 0; i <= m+1; i++ {
			from := &l.from
			if i == m+1 {
				from = l.join
			}
			for _, cn := range ch.cols[i] {
				if read[chainCol{i, cn}] > m {
					l.items = append(l.items, selectItem{expr: ch.col(from, i, cn, l.pos), alias: &ident{name: ch.name(i, cn), pos: l.pos}, pos: l.pos})
				}
			}
		}
	}
	return nil
}

// col is a reference to input i's column cn from a query whose FROM is
// from: the input itself, or a level that joined it.
func (ch *chain) col(from *fromItem, i int, cn string, at pos) *node {
	if from.sub == nil || !from.sub.chain {
		return &node{kind: eCol, qual: ch.quals[i], name: cn, pos: at}
	}
	return &node{kind: eCol, qual: qualOf(from), name: ch.name(i, cn), pos: at}
}

// outerExprs are the outer query's expressions but its select list.
func (ch *chain) outerExprs(sel *selectStmt) []*node {
	return append([]*node{sel.on, sel.where, sel.having, sel.join.asOf}, sel.groupBy...)
}

// expandStars expands sel's * and qual.* of chained inputs, named as in
// a join of all the inputs: qual.name where another input has the name
// (the last input's columns too, where they are known).
func (ch *chain) expandStars(sel *selectStmt) []selectItem {
	starCount := maps.Clone(ch.count)
	for _, n := range ch.lastCols {
		starCount[n]++
	}
	var items []selectItem
	for _, it := range sel.items {
		if !it.star || (it.qual != "" && !slices.Contains(ch.quals, it.qual)) {
			items = append(items, it)
			continue
		}
		for i, cs := range ch.cols {
			if it.qual != "" && it.qual != ch.quals[i] {
				continue
			}
			for _, cn := range cs {
				alias := cn
				if it.qual == "" && starCount[cn] > 1 {
					alias = ch.quals[i] + "." + cn
				}
				// As written: the outer query's columns are rewritten after.
				items = append(items, selectItem{expr: &node{kind: eCol, qual: ch.quals[i], name: cn, pos: it.pos}, alias: &ident{name: alias, pos: it.pos}, pos: it.pos})
			}
		}
		switch {
		case it.qual != "":
		case ch.lastCols == nil:
			items = append(items, selectItem{star: true, qual: ch.lastQual, pos: it.pos})
		default:
			for _, cn := range ch.lastCols {
				alias := cn
				if starCount[cn] > 1 {
					alias = ch.lastQual + "." + cn
				}
				items = append(items, selectItem{expr: &node{kind: eCol, qual: ch.lastQual, name: cn, pos: it.pos}, alias: &ident{name: alias, pos: it.pos}, pos: it.pos})
			}
		}
	}
	return items
}

// nameItems names the output columns that are plain columns of the inputs
// as the select list of a join of all of them names them: the column's
// name, the same column of another input's after it x0, x1, ... (Flink's,
// Calcite's rule: the select list's own, which a column read through a
// level would otherwise not meet, its qualifier being the level's).
func (ch *chain) nameItems(items []selectItem) {
	names := map[string]bool{}
	quals := map[string]string{}
	for i := range items {
		it := &items[i]
		switch {
		case it.star:
			continue
		case it.alias != nil:
			names[it.alias.name] = true
			continue
		case it.expr.kind != eCol:
			continue
		}
		name, qual := it.expr.name, it.expr.qual
		if names[name] && qual != "" && quals[name] != "" && quals[name] != qual {
			base := name
			for k := 0; names[name]; k++ {
				name = fmt.Sprintf("%s%d", base, k)
			}
		}
		if name != it.expr.name || slices.Contains(ch.quals, qual) {
			it.alias = &ident{name: name, pos: it.expr.pos}
		}
		names[name], quals[name] = true, qual
	}
}

// chainColumns is the names of the columns of a chained input: a source or
// a view (a subquery or a table has no place in a chain: it is refused).
func (c *compiler) chainColumns(f *fromItem) ([]string, error) {
	if f.sub != nil {
		return nil, errAt(f.name.pos, "a subquery in a join of more than two inputs: make it a view (CREATE VIEW), and join the view")
	}
	if _, ok := c.tables[f.name.name]; ok {
		return nil, errAt(f.name.pos, "%s is a table: in a join of more than two inputs a table is joined last", f.name.name)
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

// refs calls to for every column of e that is a column of a chained
// input among the first visible ones (withLast: also seeing the last
// input), qualified or not, after checking it: an unknown column of a
// chained input, or an unqualified one that two inputs seen have, is
// refused, naming the inputs as written.
func (ch *chain) refs(e *node, visible int, withLast bool, to func(i int, n *node)) error {
	var err error
	walkAll(e, func(n *node) {
		if n.kind != eCol || err != nil {
			return
		}
		if n.qual != "" {
			i := slices.Index(ch.quals[:visible], n.qual)
			if i < 0 {
				return
			}
			if !slices.Contains(ch.cols[i], n.name) {
				err = errAt(n.pos, "unknown column %s.%s (valid: %s)", n.qual, n.name, strings.Join(ch.cols[i], ", "))
				return
			}
			to(i, n)
			return
		}
		var in []int
		for i := range visible {
			if slices.Contains(ch.cols[i], n.name) {
				in = append(in, i)
			}
		}
		var where []string
		for _, i := range in {
			where = append(where, ch.quals[i])
		}
		if withLast && slices.Contains(ch.lastCols, n.name) {
			where = append(where, ch.lastQual)
		}
		switch {
		case len(where) > 1:
			err = errAt(n.pos, "column %s is ambiguous: it is in %s (qualify it)", n.name, strings.Join(where, " and "))
		case len(in) == 1:
			to(in[0], n)
		case len(where) == 0 && (!withLast || ch.lastCols != nil):
			var valid []string
			for i := range visible {
				for _, cn := range ch.cols[i] {
					valid = append(valid, ch.quals[i]+"."+cn)
				}
			}
			if withLast {
				for _, cn := range ch.lastCols {
					valid = append(valid, ch.lastQual+"."+cn)
				}
			}
			err = errAt(n.pos, "unknown column %s (valid: %s)", n.name, strings.Join(valid, ", "))
		}
	})
	return err
}

// chainCol is chained input i's column name.
type chainCol struct {
	i    int
	name string
}

// walkAll is walkNodes into aggregates' FILTER too.
func walkAll(n *node, f func(*node)) {
	walkNodes(n, func(x *node) {
		f(x)
		if x.filter != nil {
			walkAll(x.filter, f)
		}
	})
}
