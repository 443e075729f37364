package sql

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// randomQuery builds a random windowed query over base's source s in Go,
// and prints the same query as SQL: its window (TUMBLE, HOP, RANGE or
// ROWS), a WHERE of comparisons under AND, OR and NOT, GROUP BY columns or
// an integer expression, aggregates, and sometimes HAVING.
func randomQuery(r *rand.Rand, s *query.Schema) (*query.Query, string) {
	q := &query.Query{Name: "select1", Schema: s}
	var from string
	size := int64(50 * (1 + r.IntN(40)))
	slide := size
	if r.IntN(2) == 0 {
		slide = size / int64(1+r.IntN(5))
	}
	switch r.IntN(4) {
	case 0:
		q.Window, from = query.Tumbling(size), fmt.Sprintf("TUMBLE(s, ts, INTERVAL '%d' MILLISECOND)", size)
	case 1:
		q.Window, from = query.Sliding(size, slide), fmt.Sprintf("HOP(s, ts, INTERVAL '%d' MILLISECONDS, INTERVAL '%d' MILLISECONDS)", slide, size)
	case 2:
		q.Window, from = query.Sliding(size, slide), fmt.Sprintf("s [RANGE INTERVAL '%d' MILLISECOND SLIDE INTERVAL '%d' MILLISECOND]", size, slide)
	default:
		rows, step := int64(1+r.IntN(64)), int64(0)
		step = 1 + r.Int64N(rows)
		q.Window, from = query.Window{Type: query.Rows, Size: rows, Slide: step}, fmt.Sprintf("s [ROWS %d SLIDE %d]", rows, step)
	}
	var where string
	if r.IntN(3) > 0 {
		q.Where, where = randomPred(r, 2)
		where = " WHERE " + where
	}
	var sel, group []string
	if r.IntN(2) == 0 {
		sel = append(sel, "window_start")
	}
	switch r.IntN(4) {
	case 1:
		q.GroupBy, group = []query.Expr{query.C("a")}, []string{"a"}
	case 2:
		q.GroupBy, group = []query.Expr{query.C("a"), query.C("k")}, []string{"a", "k"}
	case 3:
		q.GroupBy, group = []query.Expr{query.Sub(query.C("b"), query.Int(1))}, []string{"b - 1"}
	}
	sel = append(sel, group...)
	aggs := []struct {
		agg query.Aggregate
		sql string
	}{
		{query.Aggregate{Func: query.Count, As: "n"}, "COUNT(*) AS n"},
		{query.Aggregate{Func: query.Sum, Arg: query.C("a"), As: "sa"}, "SUM(a) AS sa"},
		{query.Aggregate{Func: query.Sum, Arg: query.C("d"), As: "sd"}, "SUM(d) AS sd"},
		{query.Aggregate{Func: query.Avg, Arg: query.C("f"), As: "af"}, "AVG(f) AS af"},
		{query.Aggregate{Func: query.Min, Arg: query.C("b"), As: "mb"}, "MIN(b) AS mb"},
		{query.Aggregate{Func: query.Max, Arg: query.Mul(query.C("a"), query.Int(2)), As: "m2"}, "MAX(a * 2) AS m2"},
	}
	r.Shuffle(len(aggs), func(i, j int) { aggs[i], aggs[j] = aggs[j], aggs[i] })
	n := 1 + r.IntN(3)
	hasCount := false
	for _, a := range aggs[:n] {
		q.Aggregates = append(q.Aggregates, a.agg)
		sel = append(sel, a.sql)
		hasCount = hasCount || a.agg.Func == query.Count
	}
	var having string
	if hasCount && r.IntN(2) == 0 {
		k := int64(r.IntN(4))
		q.Having, having = query.Cmp(query.C("n"), query.Gt, query.Int(k)), fmt.Sprintf(" HAVING n > %d", k)
	}
	text := "SELECT " + strings.Join(sel, ", ") + " FROM " + from + where
	if len(group) > 0 {
		text += " GROUP BY " + strings.Join(group, ", ")
	}
	return q, text + having + ";"
}

// randomPred is a random predicate over s's numeric and ENUM columns, in
// Go and as SQL. NOT is printed over integer comparisons only, where it is
// the mirrored operator (over floats NaN makes them differ).
func randomPred(r *rand.Rand, depth int) (query.Expr, string) {
	if depth == 0 || r.IntN(3) == 0 {
		ops := []struct {
			op  query.CmpOp
			sql string
			not query.CmpOp
		}{{query.Eq, "=", query.Ne}, {query.Ne, "<>", query.Eq}, {query.Lt, "<", query.Ge}, {query.Le, "<=", query.Gt}, {query.Gt, ">", query.Le}, {query.Ge, ">=", query.Lt}}
		o := ops[r.IntN(len(ops))]
		switch r.IntN(4) {
		case 0:
			v := int64(r.IntN(10))
			if r.IntN(3) == 0 {
				return query.Cmp(query.C("a"), o.not, query.Int(v)), fmt.Sprintf("NOT (a %s %d)", o.sql, v)
			}
			return query.Cmp(query.C("a"), o.op, query.Int(v)), fmt.Sprintf("a %s %d", o.sql, v)
		case 1:
			v := int64(r.IntN(1000) - 500)
			return query.Cmp(query.C("b"), o.op, query.Int(v)), fmt.Sprintf("b %s %d", o.sql, v)
		case 2:
			v := float64(r.IntN(100)) / 4
			return query.Cmp(query.C("d"), o.op, query.Float(v)), fmt.Sprintf("d %s %g", o.sql, v)
		default:
			labels := []string{"view", "click", "purchase"}
			k := r.IntN(3)
			if r.IntN(2) == 0 {
				return query.Cmp(query.C("k"), query.Eq, query.Int(int64(k))), fmt.Sprintf("k = '%s'", labels[k])
			}
			return query.Cmp(query.C("k"), query.Ne, query.Int(int64(k))), fmt.Sprintf("k <> '%s'", labels[k])
		}
	}
	l, ls := randomPred(r, depth-1)
	rt, rs := randomPred(r, depth-1)
	if r.IntN(2) == 0 {
		return query.And(l, rt), "(" + ls + " AND " + rs + ")"
	}
	return query.Or(l, rt), "(" + ls + " OR " + rs + ")"
}

// TestRandomQueriesPrintedAsSQL: random queries built in Go, printed as
// SQL, compiled and run through the engine, give the reference evaluator's
// output for the Go-built query: rows, windows and every counter.
func TestRandomQueriesPrintedAsSQL(t *testing.T) {
	s := mustCompile(t, base+"SELECT * FROM s;").Source("s").Schema
	data := baseTuples(4000, 11)
	r := rand.New(rand.NewPCG(42, 7))
	for i := range testenv.Scale(20, 80) { // 80 queries in the long run
		q, text := randomQuery(r, s)
		require.NoError(t, q.Validate(), "%d: the Go query: %s", i, text)
		want, err := reference.Evaluate(q, data)
		require.NoError(t, err)
		p := mustCompile(t, base+text)
		require.Len(t, p.Queries, 1, text)
		outs := runEngineTasks(t, p.Specs(), []feed{{left: data}}, 52*(1+r.IntN(100))) // tasks of 1 to 100 tuples
		o := outs[0]
		got := &reference.Result{Rows: o.Rows, Counts: reference.Counts{Tuples: o.Counts[0], Filtered: o.Counts[1], Unmatched: o.Counts[2], Late: o.Counts[3], Counted: o.Counts[4]}}
		assert.Empty(t, reference.Diff(q, want, got, 1e-6), "%d: %s", i, text)
	}
}
