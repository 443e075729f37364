package kernels

// SQL's aggregates over NULLs and under FILTER, lowered into the plain
// aggregates the kernels fold: a row of words per group, each word a SUM,
// MIN or MAX of an expression, word 0 the group's tuples. An aggregate that
// can skip tuples (a FILTER, an argument that can be NULL) folds the
// tuples it takes and its identity for the others, and a second word
// counts the tuples it took: the aggregate is NULL where that count is 0,
// and it is AVG's divisor. Every expression the lowering makes is one the
// kernels already compile (CASE goes to the row evaluator), so the folds,
// the fragments and the merge know nothing of NULL.
//
// A task with no NULL in the columns the query reads runs a kernel of the
// same lowered query compiled as if no column could be NULL
// (simplifyNoNulls): its CASEs fold away, and it keeps every fast path.

import (
	"fmt"
	"math"

	"github.com/saber-hx/saber-hx/query"
)

// lowerGroups returns the GROUP BY expressions the kernels key on, and
// their parts, for q's hashed groups: an integer, a time or a bytes column
// as itself; a string as its number in the query's Strings (KeyString,
// NULL 0); a boolean as 0 (NULL), 1 (false) or 2 (true); and a value that
// can be NULL (but a string) as two parts, a flag of 0 for NULL and 1 for
// a value, then the value (COALESCE(x, 0)). Parts are 4 bytes for an int32
// column and the flags, 8 for the rest, a bytes column its size; so that
// the bytes order the groups as query's canonical keys do (NULL first),
// but for strings, whose rows the output sorts (Plan.StringKeys).
func lowerGroups(q *query.Query) ([]query.Expr, []KeyPart, error) {
	nulls := q.Nulls()
	var exprs []query.Expr
	var parts []KeyPart
	pos := 0
	add := func(e query.Expr, kp KeyPart) {
		kp.Pos = pos
		pos += kp.Width
		exprs = append(exprs, e)
		parts = append(parts, kp)
	}
	for i, g := range q.GroupBy {
		t, err := query.TypeOf(g, q.Scope())
		if err != nil {
			return nil, nil, err
		}
		name := ""
		if c, ok := g.(query.Column); ok {
			name = c.Name
		}
		null := query.MayBeNull(g, nulls)
		isNull := query.IsNull{X: g}
		switch {
		case t == query.StringValue:
			add(g, KeyPart{Name: name, Width: query.StringKeyWidth, Int: true, Key: i, Kind: KeyString})
		case t == query.BoolValue:
			e := query.Case{Whens: []query.When{{Cond: isNull, Then: query.Int(0)}, {Cond: g, Then: query.Int(2)}}, Else: query.Int(1)}
			add(e, KeyPart{Name: name, Width: 4, Int: true, Key: i, Kind: KeyBool})
		case t == query.BytesValue:
			if null {
				return nil, nil, fmt.Errorf("group by %s: a bytes column that can be NULL is not a group key yet", g)
			}
			add(g, KeyPart{Name: name, Width: q.KeyWidth(g), Key: i, Kind: KeyBytes})
		case null:
			flag := query.Case{Whens: []query.When{{Cond: isNull, Then: query.Int(0)}}, Else: query.Int(1)}
			add(flag, KeyPart{Width: 4, Int: true, Key: i, Kind: KeyNullFlag})
			add(query.Call{Fn: "coalesce", Args: []query.Expr{g, query.Int(0)}}, KeyPart{Name: name, Width: q.KeyWidth(g) - 1, Int: true, Key: i, Kind: KeyInt})
		default:
			add(g, KeyPart{Name: name, Width: q.KeyWidth(g), Int: true, Key: i, Kind: KeyInt})
		}
	}
	if pos > 16 {
		return nil, nil, fmt.Errorf("group by: keys of %d bytes as the kernels hold them (a value that can be NULL takes 4 bytes more); at most 16", pos)
	}
	return exprs, parts, nil
}

// lowerAggregates returns q with its aggregates lowered (one aggregate
// per word after word 0, COUNT(*) none) and how each of q's aggregates
// reads its words. q is returned as it is where nothing needs lowering.
func lowerAggregates(q *query.Query) (*query.Query, []AggOut) {
	nulls := q.Nulls()
	scope := q.Scope()
	lq := *q
	lq.Aggregates = nil
	lq.Having = nil // HAVING reads the user's aggregates (Plan.Having)
	var outs []AggOut
	word := func(a query.Aggregate) int {
		lq.Aggregates = append(lq.Aggregates, a)
		return len(lq.Aggregates)
	}
	countOf := func(c query.Expr) query.Aggregate {
		return query.Aggregate{Func: query.Sum, Arg: query.Case{Whens: []query.When{{Cond: c, Then: query.Int(1)}}, Else: query.Int(0)}}
	}
	for _, a := range q.Aggregates {
		cond := a.Filter
		if a.Func == query.Count {
			if a.Arg != nil && query.MayBeNull(a.Arg, nulls) {
				cond = and(cond, query.IsNull{X: a.Arg, Not: true})
			}
			if cond == nil {
				outs = append(outs, AggOut{Word: 0})
			} else {
				outs = append(outs, AggOut{Word: word(countOf(cond))})
			}
			continue
		}
		t, _ := query.TypeOf(a.Arg, scope)
		fl := t == query.FloatValue
		out := AggOut{Float: fl || a.Func == query.Avg, Avg: a.Func == query.Avg, floatWord: fl}
		if cond == nil && !query.MayBeNull(a.Arg, nulls) {
			f := a.Func
			if f == query.Avg {
				f = query.Sum
			}
			out.Word = word(query.Aggregate{Func: f, Arg: a.Arg, As: a.As})
			outs = append(outs, out)
			continue
		}
		if query.MayBeNull(a.Arg, nulls) {
			cond = and(cond, query.IsNull{X: a.Arg, Not: true})
		}
		f := a.Func
		if f == query.Avg {
			f = query.Sum
		}
		arg := query.Case{Whens: []query.When{{Cond: cond, Then: a.Arg}}, Else: skipped(f, fl)}
		out.Word = word(query.Aggregate{Func: f, Arg: arg, As: a.As})
		out.Present = word(countOf(cond))
		outs = append(outs, out)
	}
	return &lq, outs
}

// skipped is what a skipped tuple folds into an aggregate: nothing.
func skipped(f query.AggFunc, float bool) query.Expr {
	switch {
	case (f == query.Min || f == query.Max) && float:
		return query.Float(math.NaN()) // skipped (window.MinF)
	case f == query.Min:
		return query.Int(math.MaxInt64)
	case f == query.Max:
		return query.Int(math.MinInt64)
	case float:
		return query.Float(0)
	}
	return query.Int(0)
}

// and is a AND b, either of which may be nil (none).
func and(a, b query.Expr) query.Expr {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return query.And(a, b)
}

// readsNullable reports whether q reads a column that can be NULL.
func readsNullable(q *query.Query) bool {
	for _, a := range q.Schema.Attrs {
		if a.Nullable {
			return true // a cheap bound: the schema has one (the kernel checks only the bits it reads)
		}
	}
	return false
}

// nonNullSchema is s with no attribute NULL.
func nonNullSchema(s *query.Schema) *query.Schema {
	c := *s
	c.Attrs = append([]query.Attribute(nil), s.Attrs...)
	for i := range c.Attrs {
		c.Attrs[i].Nullable = false
	}
	return &c
}

// noNulls is q over nonNullSchema, its expressions simplified for it
// (a lookup join's table columns can still be NULL).
func noNulls(q *query.Query) *query.Query {
	n := *q
	n.Schema = nonNullSchema(q.Schema)
	never := query.SchemaNulls(n.JoinedSchema())
	simp := func(e query.Expr) query.Expr {
		if e == nil {
			return nil
		}
		return simplifyNoNulls(e, never)
	}
	n.Where = simp(q.Where)
	n.GroupBy = make([]query.Expr, len(q.GroupBy))
	for i, g := range q.GroupBy {
		n.GroupBy[i] = simp(g)
	}
	n.Aggregates = make([]query.Aggregate, len(q.Aggregates))
	for i, a := range q.Aggregates {
		a.Arg, a.Filter = simp(a.Arg), simp(a.Filter)
		n.Aggregates[i] = a
	}
	n.Project = make([]query.Projection, len(q.Project))
	for i, p := range q.Project {
		p.Expr = simp(p.Expr)
		n.Project[i] = p
	}
	return &n
}

// simplifyNoNulls folds what a schema without NULLs decides: IS NULL of a
// value that cannot be NULL, AND with constant terms, CASE branches whose
// condition is constant.
func simplifyNoNulls(e query.Expr, nulls query.NullScope) query.Expr {
	rec := func(x query.Expr) query.Expr {
		if x == nil {
			return nil
		}
		return simplifyNoNulls(x, nulls)
	}
	switch e := e.(type) {
	case query.IsNull:
		if !query.MayBeNull(e.X, nulls) {
			return query.BoolConst{V: e.Not}
		}
		return query.IsNull{X: rec(e.X), Not: e.Not}
	case query.AndExpr:
		var terms []query.Expr
		for _, t := range e.Terms {
			t = rec(t)
			if b, ok := t.(query.BoolConst); ok {
				if !b.V {
					return b
				}
				continue
			}
			terms = append(terms, t)
		}
		switch len(terms) {
		case 0:
			return query.BoolConst{V: true}
		case 1:
			return terms[0]
		}
		return query.AndExpr{Terms: terms}
	case query.Case:
		var whens []query.When
		for _, w := range e.Whens {
			c := rec(w.Cond)
			if b, ok := c.(query.BoolConst); ok {
				if !b.V {
					continue
				}
				if len(whens) == 0 {
					return rec(w.Then)
				}
				return query.Case{Whens: whens, Else: rec(w.Then)}
			}
			whens = append(whens, query.When{Cond: c, Then: rec(w.Then)})
		}
		if len(whens) == 0 {
			if e.Else == nil {
				return query.Null{}
			}
			return rec(e.Else)
		}
		return query.Case{Whens: whens, Else: rec(e.Else)}
	case query.Arith:
		return query.Arith{Op: e.Op, L: rec(e.L), R: rec(e.R)}
	case query.Compare:
		return query.Compare{Op: e.Op, L: rec(e.L), R: rec(e.R)}
	case query.OrExpr:
		terms := make([]query.Expr, len(e.Terms))
		for i, t := range e.Terms {
			terms[i] = rec(t)
		}
		return query.OrExpr{Terms: terms}
	case query.Call:
		if e.Fn == "coalesce" && len(e.Args) > 0 && !query.MayBeNull(e.Args[0], nulls) {
			return rec(e.Args[0])
		}
		args := make([]query.Expr, len(e.Args))
		for i, a := range e.Args {
			args[i] = rec(a)
		}
		return query.Call{Fn: e.Fn, Args: args}
	}
	return e
}
