package sql

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/strview"
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

// valuesGen makes random expressions over valuesBase's source e, each in
// the model (Go) and as SQL: strings, times, booleans, NULLs, CASE,
// casts, IN, LIKE, BETWEEN, IS NULL and the functions.
type valuesGen struct{ r *rand.Rand }

type gx struct {
	e   query.Expr
	sql string
}

func (g valuesGen) pick(fs ...func() gx) gx { return fs[g.r.IntN(len(fs))]() }

func (g valuesGen) num(d int) gx {
	r := g.r
	leaf := []func() gx{
		func() gx { return gx{query.C("n"), "n"} },
		func() gx { return gx{query.C("m"), "m"} },
		func() gx { v := r.Int64N(20) - 5; return gx{query.Int(v), fmt.Sprint(v)} },
	}
	if d <= 0 {
		return g.pick(leaf...)
	}
	return g.pick(append(leaf,
		func() gx {
			a, b := g.num(d-1), g.num(d-1)
			ops := []struct {
				op  query.ArithOp
				sql string
			}{{query.OpAdd, "+"}, {query.OpSub, "-"}, {query.OpMul, "*"}, {query.OpDiv, "/"}}
			o := ops[r.IntN(len(ops))]
			return gx{query.Arith{Op: o.op, L: a.e, R: b.e}, "(" + a.sql + " " + o.sql + " " + b.sql + ")"}
		},
		func() gx {
			a, b := g.num(d-1), g.num(d-1)
			if r.IntN(2) == 0 {
				return gx{query.Call{Fn: "mod", Args: []query.Expr{a.e, b.e}}, "MOD(" + a.sql + ", " + b.sql + ")"}
			}
			return gx{query.Call{Fn: "mod", Args: []query.Expr{a.e, b.e}}, "(" + a.sql + " % " + b.sql + ")"}
		},
		func() gx {
			a := g.num(d - 1)
			return gx{query.Call{Fn: "abs", Args: []query.Expr{a.e}}, "ABS(" + a.sql + ")"}
		},
		func() gx {
			s := g.str(d - 1)
			name := []string{"CHAR_LENGTH", "CHARACTER_LENGTH"}[r.IntN(2)]
			return gx{query.Call{Fn: "char_length", Args: []query.Expr{s.e}}, name + "(" + s.sql + ")"}
		},
		func() gx {
			u := []string{"hour", "minute", "second", "year", "month", "day"}[r.IntN(6)]
			if r.IntN(2) == 0 {
				return gx{query.Call{Fn: u, Args: []query.Expr{query.C("ts")}}, strings.ToUpper(u) + "(ts)"}
			}
			return gx{query.Call{Fn: u, Args: []query.Expr{query.C("ts")}}, "EXTRACT(" + strings.ToUpper(u) + " FROM ts)"}
		},
		func() gx {
			f := g.flt(d - 1)
			return gx{query.Cast{X: f.e, To: query.IntValue}, "CAST(" + f.sql + " AS BIGINT)"}
		},
		func() gx {
			c, a := g.cond(d-1), g.num(d-1)
			if r.IntN(3) == 0 {
				return gx{query.Case{Whens: []query.When{{Cond: c.e, Then: a.e}}}, "CASE WHEN " + c.sql + " THEN " + a.sql + " END"}
			}
			b := g.num(d - 1)
			return gx{query.Case{Whens: []query.When{{Cond: c.e, Then: a.e}}, Else: b.e}, "CASE WHEN " + c.sql + " THEN " + a.sql + " ELSE " + b.sql + " END"}
		},
		func() gx {
			a := g.num(d - 1)
			return gx{query.Call{Fn: "coalesce", Args: []query.Expr{query.C("n"), a.e}}, "COALESCE(n, " + a.sql + ")"}
		},
		func() gx {
			s := g.str(d - 1)
			return gx{query.Call{Fn: "count_char", Args: []query.Expr{s.e, query.Str("a")}}, "COUNT_CHAR(" + s.sql + ", 'a')"}
		},
	)...)
}

func (g valuesGen) flt(d int) gx {
	r := g.r
	if d <= 0 || r.IntN(2) == 0 {
		return g.pick(func() gx { return gx{query.C("x"), "x"} },
			func() gx { v := float64(r.IntN(40)) / 4; return gx{query.Float(v), strconv.FormatFloat(v, 'f', 2, 64)} })
	}
	return g.pick(
		func() gx {
			a, b := g.flt(d-1), g.num(d-1)
			ops := []struct {
				op  query.ArithOp
				sql string
			}{{query.OpAdd, "+"}, {query.OpSub, "-"}, {query.OpMul, "*"}}
			o := ops[r.IntN(len(ops))]
			return gx{query.Arith{Op: o.op, L: a.e, R: b.e}, "(" + a.sql + " " + o.sql + " " + b.sql + ")"}
		},
		func() gx {
			a := g.flt(d - 1)
			fn := []string{"floor", "ceil", "abs"}[r.IntN(3)]
			return gx{query.Call{Fn: fn, Args: []query.Expr{a.e}}, strings.ToUpper(fn) + "(" + a.sql + ")"}
		},
		func() gx {
			a, k := g.flt(d-1), r.Int64N(3)
			return gx{query.Call{Fn: "round", Args: []query.Expr{a.e, query.Int(k)}}, fmt.Sprintf("ROUND(%s, %d)", a.sql, k)}
		},
		func() gx {
			a := g.num(d - 1)
			return gx{query.Cast{X: a.e, To: query.FloatValue}, "CAST(" + a.sql + " AS DOUBLE)"}
		},
	)
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func (g valuesGen) str(d int) gx {
	r := g.r
	leaf := []func() gx{
		func() gx { return gx{query.C("k"), "k"} },
		func() gx { return gx{query.C("s"), "s"} },
		func() gx { v := valueStrings[r.IntN(len(valueStrings))]; return gx{query.Str(v), sqlString(v)} },
	}
	if d <= 0 {
		return g.pick(leaf...)
	}
	return g.pick(append(leaf,
		func() gx {
			a := g.str(d - 1)
			fn := []string{"upper", "lower", "trim", "ltrim", "rtrim"}[r.IntN(5)]
			sql := strings.ToUpper(fn) + "(" + a.sql + ")"
			if r.IntN(2) == 0 {
				sql = map[string]string{"upper": sql, "lower": sql, "trim": "TRIM(BOTH FROM " + a.sql + ")",
					"ltrim": "TRIM(LEADING FROM " + a.sql + ")", "rtrim": "TRIM(TRAILING FROM " + a.sql + ")"}[fn]
			}
			return gx{query.Call{Fn: fn, Args: []query.Expr{a.e}}, sql}
		},
		func() gx {
			a, i, n := g.str(d-1), r.Int64N(6)-1, r.Int64N(8)-1
			if r.IntN(2) == 0 {
				return gx{query.Call{Fn: "substring", Args: []query.Expr{a.e, query.Int(i), query.Int(n)}}, fmt.Sprintf("SUBSTRING(%s FROM %d FOR %d)", a.sql, i, n)}
			}
			return gx{query.Call{Fn: "substring", Args: []query.Expr{a.e, query.Int(i)}}, fmt.Sprintf("SUBSTRING(%s, %d)", a.sql, i)}
		},
		func() gx {
			a, b := g.str(d-1), g.num(d-1)
			if r.IntN(2) == 0 {
				return gx{query.Call{Fn: "concat", Args: []query.Expr{a.e, b.e}}, "(" + a.sql + " || " + b.sql + ")"}
			}
			c := g.cond(d - 1)
			return gx{query.Call{Fn: "concat", Args: []query.Expr{a.e, b.e, c.e}}, "CONCAT(" + a.sql + ", " + b.sql + ", " + c.sql + ")"}
		},
		func() gx {
			a := g.str(d - 1)
			sep := []string{",", "-", "", "ab"}[r.IntN(4)]
			i := r.Int64N(4) - 1
			return gx{query.Call{Fn: "split_index", Args: []query.Expr{a.e, query.Str(sep), query.Int(i)}}, fmt.Sprintf("SPLIT_INDEX(%s, %s, %d)", a.sql, sqlString(sep), i)}
		},
		func() gx {
			a, k := g.str(d-1), r.Int64N(3)
			return gx{query.Call{Fn: "regexp_extract", Args: []query.Expr{a.e, query.Str("(&|^)channel_id=([^&]*)"), query.Int(k)}},
				fmt.Sprintf("REGEXP_EXTRACT(%s, '(&|^)channel_id=([^&]*)', %d)", a.sql, k)}
		},
		func() gx {
			f := []string{"yyyy-MM-dd", "HH:mm", "yyyy-MM-dd HH:mm:ss.SSS"}[r.IntN(3)]
			return gx{query.Call{Fn: "date_format", Args: []query.Expr{query.C("ts"), query.Str(f)}}, "DATE_FORMAT(ts, " + sqlString(f) + ")"}
		},
		func() gx {
			c, a := g.cond(d-1), g.str(d-1)
			return gx{query.Case{Whens: []query.When{{Cond: c.e, Then: a.e}}}, "CASE WHEN " + c.sql + " THEN " + a.sql + " END"}
		},
		func() gx {
			a := g.num(d - 1)
			return gx{query.Cast{X: a.e, To: query.StringValue}, "CAST(" + a.sql + " AS VARCHAR)"}
		},
		func() gx {
			a := g.str(d - 1)
			return gx{query.Call{Fn: "coalesce", Args: []query.Expr{query.C("s"), a.e}}, "COALESCE(s, " + a.sql + ")"}
		},
	)...)
}

func (g valuesGen) cond(d int) gx {
	r := g.r
	ops := []struct {
		op  query.CmpOp
		sql string
	}{{query.Eq, "="}, {query.Ne, "<>"}, {query.Lt, "<"}, {query.Le, "<="}, {query.Gt, ">"}, {query.Ge, ">="}}
	cmp := func(a, b gx) gx {
		o := ops[r.IntN(len(ops))]
		return gx{query.Compare{Op: o.op, L: a.e, R: b.e}, "(" + a.sql + " " + o.sql + " " + b.sql + ")"}
	}
	leaf := []func() gx{
		func() gx { return cmp(g.num(d-1), g.num(d-1)) },
		func() gx { return cmp(g.str(d-1), g.str(d-1)) },
		func() gx { return cmp(gx{query.C("x"), "x"}, g.flt(d-1)) },
		func() gx {
			ms := int64(1_700_000_000_000 + r.IntN(100_000))
			lit := time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000")
			return cmp(gx{query.C("ts"), "ts"}, gx{query.Cast{X: query.Int(ms), To: query.TimeValue}, "TIMESTAMP '" + lit + "'"})
		},
		func() gx {
			p := []string{"p%", "%a%", "_a%", "%s", "a_", "%"}[r.IntN(6)]
			a := g.str(d - 1)
			not := r.IntN(3) == 0
			sql := a.sql + " LIKE " + sqlString(p)
			if not {
				sql = a.sql + " NOT LIKE " + sqlString(p)
			}
			return gx{query.Like{X: a.e, Pattern: p, Not: not}, "(" + sql + ")"}
		},
		func() gx {
			not := r.IntN(2) == 0
			kw := map[bool]string{true: " NOT IN ", false: " IN "}[not]
			return gx{query.InList{X: query.C("k"), List: []query.Expr{query.Str("paris"), query.Str("a"), query.Str("café")}, Not: not}, "(k" + kw + "('paris', 'a', 'café'))"}
		},
		func() gx {
			list, sql := []query.Expr{query.Int(1), query.Int(3), query.Int(-2)}, "1, 3, -2"
			if r.IntN(3) == 0 {
				list, sql = append(list, query.Null{}), sql+", NULL"
			}
			not := r.IntN(2) == 0
			kw := map[bool]string{true: " NOT IN ", false: " IN "}[not]
			return gx{query.InList{X: query.C("m"), List: list, Not: not}, "(m" + kw + "(" + sql + "))"}
		},
		func() gx {
			lo, hi := r.Int64N(10)-3, r.Int64N(20)
			if r.IntN(2) == 0 {
				return gx{query.And(query.Cmp(query.C("n"), query.Ge, query.Int(lo)), query.Cmp(query.C("n"), query.Le, query.Int(hi))), fmt.Sprintf("(n BETWEEN %d AND %d)", lo, hi)}
			}
			return gx{query.Or(query.Cmp(query.C("n"), query.Lt, query.Int(lo)), query.Cmp(query.C("n"), query.Gt, query.Int(hi))), fmt.Sprintf("(n NOT BETWEEN %d AND %d)", lo, hi)}
		},
		func() gx {
			col := []string{"n", "m", "x", "s", "b", "k"}[r.IntN(6)]
			not := r.IntN(2) == 0
			return gx{query.IsNull{X: query.C(col), Not: not}, "(" + col + map[bool]string{true: " IS NOT NULL)", false: " IS NULL)"}[not]}
		},
		func() gx { return gx{query.C("b"), "b"} },
		func() gx {
			v := r.IntN(2) == 0
			return gx{query.Compare{Op: query.Eq, L: query.C("b"), R: query.BoolConst{V: v}}, fmt.Sprintf("(b = %s)", strings.ToUpper(fmt.Sprint(v)))}
		},
		func() gx {
			i := r.IntN(3)
			return gx{query.Compare{Op: query.Eq, L: query.C("c"), R: query.Int(int64(i))}, "(c = '" + []string{"red", "green", "blue"}[i] + "')"}
		},
	}
	if d <= 0 {
		return g.pick(leaf...)
	}
	return g.pick(append(leaf,
		func() gx {
			a, b := g.cond(d-1), g.cond(d-1)
			return gx{query.And(a.e, b.e), "(" + a.sql + " AND " + b.sql + ")"}
		},
		func() gx {
			a, b := g.cond(d-1), g.cond(d-1)
			return gx{query.Or(a.e, b.e), "(" + a.sql + " OR " + b.sql + ")"}
		},
		func() gx { a := g.cond(d - 1); return gx{query.NotExpr{X: a.e}, "NOT " + a.sql} },
		func() gx {
			a, b, c := g.cond(d-1), g.cond(d-1), g.cond(d-1)
			return gx{query.Case{Whens: []query.When{{Cond: a.e, Then: b.e}}, Else: c.e}, "CASE WHEN " + a.sql + " THEN " + b.sql + " ELSE " + c.sql + " END"}
		},
	)...)
}

// any is an expression of a random type.
func (g valuesGen) any(d int) gx {
	switch g.r.IntN(6) {
	case 0, 1:
		return g.num(d)
	case 2:
		return g.flt(d)
	case 3, 4:
		return g.str(d)
	}
	return g.cond(d)
}

// randomValuesQuery is a random query over valuesBase's e, in Go and as
// SQL: a projection after WHERE, or an aggregation (string, boolean,
// nullable and expression keys; aggregates over NULLs, under FILTER;
// HAVING) in a TUMBLE or HOP window.
func randomValuesQuery(r *rand.Rand, s *query.Schema, nulls bool) (*query.Query, string) {
	g := valuesGen{r}
	q := &query.Query{Name: "select1", Schema: s}
	where := ""
	stateless := r.IntN(2) == 0
	if r.IntN(3) > 0 {
		w := g.cond(2)
		q.Where, where = w.e, " WHERE "+w.sql
	}
	if stateless {
		var items []string
		for i := range 1 + r.IntN(4) {
			p := g.any(2)
			as := fmt.Sprintf("p%d", i)
			q.Project = append(q.Project, query.Projection{Expr: p.e, As: as})
			items = append(items, p.sql+" AS "+as)
		}
		return q, "SELECT " + strings.Join(items, ", ") + " FROM e" + where + ";"
	}
	size := []int64{1000, 5000, 20000}[r.IntN(3)]
	slide := size / []int64{1, 2, 5}[r.IntN(3)]
	// valuesBase's WATERMARK of 1 s: a window delay of 999 ms (windowDelay)
	q.Window = query.Window{Type: query.Range, Size: size, Slide: slide, Delay: 999}
	from := fmt.Sprintf("TUMBLE(e, ts, INTERVAL '%d' MILLISECOND)", size)
	if slide != size {
		from = fmt.Sprintf("TABLE(HOP(TABLE e, DESCRIPTOR(ts), INTERVAL '%d' MILLISECOND, INTERVAL '%d' MILLISECOND))", slide, size)
	}
	keys := []gx{{query.C("k"), "k"}, {query.C("m"), "m"}, {query.C("b"), "b"}, {query.C("c"), "c"},
		{query.Call{Fn: "upper", Args: []query.Expr{query.C("k")}}, "UPPER(k)"},
		{query.Call{Fn: "mod", Args: []query.Expr{query.C("n"), query.Int(3)}}, "MOD(n, 3)"}}
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	var items, group []string
	if r.IntN(2) == 0 {
		items = append(items, "window_start")
	}
	for i, k := range keys[:r.IntN(3)] {
		q.GroupBy = append(q.GroupBy, k.e)
		group = append(group, k.sql)
		items = append(items, fmt.Sprintf("%s AS g%d", k.sql, i))
	}
	seen := map[string]bool{}
	for len(q.Aggregates) < 1+r.IntN(4) {
		a := query.Aggregate{As: fmt.Sprintf("a%d", len(q.Aggregates))}
		var sql string
		switch r.IntN(7) {
		case 0:
			a.Func, sql = query.Count, "COUNT(*)"
		case 1:
			col := []string{"n", "x", "s", "b"}[r.IntN(4)]
			a.Func, a.Arg, sql = query.Count, query.C(col), "COUNT("+col+")"
		case 2:
			x := g.num(1)
			a.Func, a.Arg, sql = query.Sum, x.e, "SUM("+x.sql+")"
		case 3:
			a.Func, a.Arg, sql = query.Sum, query.C("x"), "SUM(x)"
		case 4:
			col := []string{"n", "x"}[r.IntN(2)]
			a.Func, a.Arg, sql = query.Avg, query.C(col), "AVG("+col+")"
		case 5:
			col := []string{"m", "ts"}[r.IntN(2)]
			a.Func, a.Arg, sql = query.Min, query.C(col), "MIN("+col+")"
		default:
			col := []string{"x", "n"}[r.IntN(2)]
			a.Func, a.Arg, sql = query.Max, query.C(col), "MAX("+col+")"
		}
		if r.IntN(3) == 0 {
			f := g.cond(1)
			a.Filter, sql = f.e, sql+" FILTER (WHERE "+f.sql+")"
		}
		if seen[sql] {
			continue
		}
		seen[sql] = true
		q.Aggregates = append(q.Aggregates, a)
		items = append(items, sql+" AS "+a.As)
	}
	text := "SELECT " + strings.Join(items, ", ") + " FROM " + from + where
	if len(group) > 0 || slide != size {
		text += " GROUP BY " + strings.Join(append([]string{"window_start", "window_end"}, group...), ", ")
	}
	if r.IntN(4) == 0 {
		q.Having = query.IsNull{X: query.C(q.Aggregates[0].As), Not: true}
		text += " HAVING " + q.Aggregates[0].As + " IS NOT NULL"
	}
	return q, text + ";"
}

// TestRandomValuesQueriesPrintedAsSQL: random queries over strings,
// times, booleans and NULLs, built in Go and printed as SQL, compiled and
// run through the engine, give the reference evaluator's output for the
// Go-built query.
func TestRandomValuesQueriesPrintedAsSQL(t *testing.T) {
	s := mustCompile(t, valuesBase).Source("e").Schema
	r := rand.New(rand.NewPCG(25, 7))
	for i := range testenv.Scale(40, 200) {
		var a strview.Arena
		nullRate := []int{0, 2, 5}[r.IntN(3)]
		data := valuesData(r, s, &a, 300+r.IntN(1500), nullRate)
		q, text := randomValuesQuery(r, s, nullRate > 0)
		if q.Validate() != nil { // keys too wide for the engine
			a.Free()
			continue
		}
		want, err := reference.Evaluate(q, data)
		require.NoError(t, err, "%d: %s", i, text)
		p, err := Compile(valuesBase + text)
		if e, ok := err.(*Error); ok {
			t.Fatalf("%d: %s", i, e.Caret(valuesBase+text))
		}
		require.Len(t, p.Queries, 1, text)
		outs := runProgram(t, p, map[string][]byte{"e": data}, &a, 1+r.IntN(64))
		o := outs[0]
		got := &reference.Result{Rows: o.rows, Counts: o.counts}
		if q.Stateless() {
			got.Tuples = o.tuples
			got.Values, err = reference.DecodeTuples(p.Queries[0].Output, o.tuples)
			require.NoError(t, err)
		}
		if d := reference.Diff(q, want, got, 1e-9); d != "" {
			t.Fatalf("%d: %s\n%s", i, d, text)
		}
		a.Free()
	}
}
