package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/doubling"
	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/strview"
)

// The schema of the SQL-values property test: a time, integers, a float,
// two strings and a boolean, all but the time and t able to be NULL; the
// strings' numbers in a dictionary at 72 and 76 where the tuples are
// dictionary-encoded (encodeSQLData), as a source's decoders write them.
const sqlTuple = 80

func sqlSchema(t testing.TB) *query.Schema {
	bit := func(i int) int { return 68*8 + i }
	s, err := query.NewSchema(sqlTuple,
		query.Attribute{Name: "ts", Type: query.Int64, Offset: 0, Logical: query.Time},
		query.Attribute{Name: "n", Type: query.Int64, Offset: 8, Nullable: true, NullBit: bit(0)},
		query.Attribute{Name: "m", Type: query.Int32, Offset: 16, Nullable: true, NullBit: bit(1)},
		query.Attribute{Name: "f", Type: query.Float64, Offset: 24, Nullable: true, NullBit: bit(2)},
		query.Attribute{Name: "s", Type: query.String, Offset: 32, Nullable: true, NullBit: bit(3)},
		query.Attribute{Name: "t", Type: query.String, Offset: 48},
		query.Attribute{Name: "b", Type: query.Int32, Offset: 64, Logical: query.Boolean, Nullable: true, NullBit: bit(4)},
	)
	require.NoError(t, err)
	return s
}

var sqlStrings = []string{"", "a", "paris", "Paris", "PARIS ", " lyon", "a,b,c", "x-y-z", "très long nom de ville", "café", "tokyo-shinjuku-ward",
	"channel_id=123&x=1", "&channel_id=abc", "0123456789abcdef0123456789", "%_%", "ab", "abc", "b"}

// sqlData is n tuples of sqlSchema; long strings point into a.
func sqlData(r *rand.Rand, s *query.Schema, a *strview.Arena, n int, nullRate int) []byte {
	b := make([]byte, n*sqlTuple)
	ts := r.Int64N(1_000_000)
	null := func() bool { return nullRate > 0 && r.IntN(nullRate) == 0 }
	attr := func(name string) query.Attribute { x, _ := s.Lookup(name); return x }
	for i := range n {
		t := b[i*sqlTuple : (i+1)*sqlTuple]
		ts += r.Int64N(400)
		et := ts - r.Int64N(300)
		binary.LittleEndian.PutUint64(t[0:], uint64(et))
		set := func(name string, write func(v []byte)) {
			at := attr(name)
			if at.Nullable && null() {
				at.SetNull(t, true)
				return
			}
			write(t[at.Offset : at.Offset+at.Size])
		}
		set("n", func(v []byte) { binary.LittleEndian.PutUint64(v, uint64(r.Int64N(200)-60)) })
		set("m", func(v []byte) { binary.LittleEndian.PutUint32(v, uint32(r.Int32N(9)-2)) })
		set("f", func(v []byte) { binary.LittleEndian.PutUint64(v, math.Float64bits(float64(r.IntN(4000))/8-100)) })
		set("s", func(v []byte) { strview.Put(v, []byte(sqlStrings[r.IntN(len(sqlStrings))]), a) })
		set("t", func(v []byte) { strview.Put(v, []byte(sqlStrings[r.IntN(6)]), a) })
		set("b", func(v []byte) { binary.LittleEndian.PutUint32(v, uint32(r.IntN(2))) })
	}
	return b
}

// sqlDictColumns are sqlSchema's dictionary-encoded columns.
func sqlDictColumns(d *strview.Dict) *kernels.DictColumns {
	return &kernels.DictColumns{Dict: d, Numbers: map[string]int{"s": 72, "t": 76}}
}

// encodeSQLData dictionary-encodes the strings of sqlData's tuples, as a
// source's decoders do: each view pointing into dc's dictionary, its
// number beside it (0 for NULL).
func encodeSQLData(t testing.TB, s *query.Schema, dc *kernels.DictColumns, data []byte) {
	require.NoError(t, dc.Encode(s, strview.NewDictCache(dc.Dict), data))
}

// sqlGen makes random typed expressions over sqlSchema.
type sqlGen struct{ r *rand.Rand }

func (g sqlGen) pick(es ...func() query.Expr) query.Expr { return es[g.r.IntN(len(es))]() }

func (g sqlGen) str(d int) query.Expr {
	r := g.r
	leaf := []func() query.Expr{
		func() query.Expr { return query.C("s") },
		func() query.Expr { return query.C("t") },
		func() query.Expr { return query.Str(sqlStrings[r.IntN(len(sqlStrings))]) },
	}
	if d <= 0 {
		return g.pick(leaf...)
	}
	return g.pick(append(leaf,
		func() query.Expr {
			return query.Call{Fn: []string{"upper", "lower", "trim"}[r.IntN(3)], Args: []query.Expr{g.str(d - 1)}}
		},
		func() query.Expr {
			return query.Call{Fn: "substring", Args: []query.Expr{g.str(d - 1), query.Int(r.Int64N(6) - 1), query.Int(r.Int64N(8) - 1)}}
		},
		func() query.Expr { return query.Call{Fn: "concat", Args: []query.Expr{g.str(d - 1), g.num(d - 1)}} },
		func() query.Expr {
			return query.Call{Fn: "concat", Args: []query.Expr{g.cond(d - 1), g.flt(d - 1), query.C("ts")}}
		},
		func() query.Expr {
			return query.Call{Fn: "split_index", Args: []query.Expr{g.str(d - 1), query.Str([]string{",", "-", "", "ab"}[r.IntN(4)]), query.Int(r.Int64N(4) - 1)}}
		},
		func() query.Expr {
			return query.Call{Fn: "regexp_extract", Args: []query.Expr{g.str(d - 1), query.Str("(&|^)channel_id=([^&]*)"), query.Int(r.Int64N(4))}}
		},
		func() query.Expr {
			return query.Call{Fn: "date_format", Args: []query.Expr{query.C("ts"), query.Str([]string{"yyyy-MM-dd", "HH:mm", "yyyy-MM-dd HH:mm:ss.SSS", "EEE d MMM yy, h:mm a", "S SS"}[r.IntN(5)])}}
		},
		func() query.Expr {
			return query.Case{Whens: []query.When{{Cond: g.cond(d - 1), Then: g.str(d - 1)}}, Else: g.maybe(g.str(d - 1))}
		},
		func() query.Expr { return query.Cast{X: g.num(d - 1), To: query.StringValue} },
		func() query.Expr { return query.Call{Fn: "coalesce", Args: []query.Expr{query.C("s"), g.str(d - 1)}} },
	)...)
}

// maybe is e, or nil (a CASE without ELSE) once in three.
func (g sqlGen) maybe(e query.Expr) query.Expr {
	if g.r.IntN(3) == 0 {
		return nil
	}
	return e
}

func (g sqlGen) num(d int) query.Expr {
	r := g.r
	leaf := []func() query.Expr{
		func() query.Expr { return query.C("n") },
		func() query.Expr { return query.C("m") },
		func() query.Expr { return query.Int(r.Int64N(20) - 5) },
	}
	if d <= 0 {
		return g.pick(leaf...)
	}
	return g.pick(append(leaf,
		func() query.Expr {
			return query.Arith{Op: query.ArithOp(1 + r.IntN(4)), L: g.num(d - 1), R: g.num(d - 1)}
		},
		func() query.Expr { return query.Call{Fn: "char_length", Args: []query.Expr{g.str(d - 1)}} },
		func() query.Expr { return query.Call{Fn: "mod", Args: []query.Expr{g.num(d - 1), g.num(d - 1)}} },
		func() query.Expr { return query.Call{Fn: "abs", Args: []query.Expr{g.num(d - 1)}} },
		func() query.Expr {
			return query.Call{Fn: "count_char", Args: []query.Expr{g.str(d - 1), query.Str("a")}}
		},
		func() query.Expr {
			// ts moved by n times 13 days, 5 hours and 61 s: every field varies.
			t := query.Expr(query.C("ts"))
			if r.IntN(2) == 0 {
				t = query.Arith{Op: query.OpAdd, L: t, R: query.Arith{Op: query.OpMul, L: query.C("n"), R: query.Int(13*86_400_000 + 5*3_600_000 + 61_000)}}
			}
			units := []string{"hour", "minute", "second", "millisecond", "year", "quarter", "month", "week", "day", "dayofmonth", "dayofweek", "dayofyear"}
			return query.Call{Fn: units[r.IntN(len(units))], Args: []query.Expr{t}}
		},
		func() query.Expr { return query.Cast{X: query.C("f"), To: query.IntValue} },
		func() query.Expr {
			return query.Case{Whens: []query.When{{Cond: g.cond(d - 1), Then: g.num(d - 1)}}, Else: g.maybe(g.num(d - 1))}
		},
		func() query.Expr { return query.Call{Fn: "coalesce", Args: []query.Expr{query.C("n"), g.num(d - 1)}} },
	)...)
}

func (g sqlGen) flt(d int) query.Expr {
	r := g.r
	if d <= 0 || r.IntN(2) == 0 {
		return g.pick(func() query.Expr { return query.C("f") }, func() query.Expr { return query.Float(float64(r.IntN(40)) / 4) })
	}
	return g.pick(
		func() query.Expr {
			return query.Arith{Op: query.ArithOp(1 + r.IntN(3)), L: g.flt(d - 1), R: g.num(d - 1)}
		},
		func() query.Expr {
			return query.Call{Fn: []string{"floor", "ceil", "abs"}[r.IntN(3)], Args: []query.Expr{g.flt(d - 1)}}
		},
		func() query.Expr {
			return query.Call{Fn: "round", Args: []query.Expr{g.flt(d - 1), query.Int(r.Int64N(3))}}
		},
		func() query.Expr { return query.Cast{X: g.num(d - 1), To: query.FloatValue} },
	)
}

func (g sqlGen) cond(d int) query.Expr {
	r := g.r
	op := func() query.CmpOp { return query.CmpOp(1 + r.IntN(6)) }
	leaf := []func() query.Expr{
		func() query.Expr { return query.Compare{Op: op(), L: g.num(d - 1), R: g.num(d - 1)} },
		func() query.Expr { return query.Compare{Op: op(), L: g.str(d - 1), R: g.str(d - 1)} },
		func() query.Expr { return query.Compare{Op: op(), L: query.C("f"), R: g.flt(d - 1)} },
		func() query.Expr {
			return query.Like{X: g.str(d - 1), Pattern: []string{"p%", "%a%", "_a%", "%s", "a_", "%"}[r.IntN(6)], Not: r.IntN(3) == 0}
		},
		func() query.Expr {
			return query.InList{X: query.C("s"), List: []query.Expr{query.Str("paris"), query.Str("a"), query.Str("café")}, Not: r.IntN(2) == 0}
		},
		func() query.Expr {
			list := []query.Expr{query.Int(1), query.Int(3), query.Int(-2)}
			if r.IntN(3) == 0 {
				list = append(list, query.Null{T: query.IntValue})
			}
			return query.InList{X: query.C("m"), List: list, Not: r.IntN(2) == 0}
		},
		func() query.Expr { return query.IsNull{X: g.pick(g.leafCol), Not: r.IntN(2) == 0} },
		func() query.Expr { return query.C("b") },
		func() query.Expr {
			return query.Compare{Op: query.CmpOp(1 + r.IntN(2)), L: query.C("b"), R: query.BoolConst{V: r.IntN(2) == 0}}
		},
	}
	if d <= 0 {
		return g.pick(leaf...)
	}
	return g.pick(append(leaf,
		func() query.Expr { return query.And(g.cond(d-1), g.cond(d-1)) },
		func() query.Expr { return query.Or(g.cond(d-1), g.cond(d-1)) },
		func() query.Expr { return query.NotExpr{X: g.cond(d - 1)} },
		func() query.Expr {
			return query.Case{Whens: []query.When{{Cond: g.cond(d - 1), Then: g.cond(d - 1)}}, Else: g.cond(d - 1)}
		},
	)...)
}

func (g sqlGen) leafCol() query.Expr {
	return query.C([]string{"n", "m", "f", "s", "b"}[g.r.IntN(5)])
}

// any is an expression of a random type.
func (g sqlGen) any(d int) query.Expr {
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

// sqlTable is a static table of string keys (strs true: some of
// sqlStrings) or int64 keys (-60..139, some of them), its values a string
// "city" and a nullable int64 "pop": long strings in a.
func sqlTable(t testing.TB, r *rand.Rand, a *strview.Arena, strs bool) (*query.StaticTable, *query.Schema) {
	vs, err := query.NewRowSchema(25,
		query.Attribute{Name: "city", Type: query.String, Offset: 0},
		query.Attribute{Name: "pop", Type: query.Int64, Offset: 16, Nullable: true, NullBit: 24 * 8})
	require.NoError(t, err)
	tab := &query.StaticTable{ValueWidth: 25}
	add := func(key []byte) {
		v := make([]byte, 25)
		strview.Put(v[0:16], []byte(sqlStrings[r.IntN(len(sqlStrings))]+" city"), a)
		if r.IntN(4) == 0 {
			v[24] = 1
		} else {
			binary.LittleEndian.PutUint64(v[16:], uint64(r.Int64N(1e6)))
		}
		tab.Keys, tab.Values = append(tab.Keys, key), append(tab.Values, v)
	}
	if strs {
		for _, k := range sqlStrings {
			if r.IntN(3) > 0 {
				add([]byte(k))
			}
		}
	} else {
		tab.KeyWidth = 8
		for k := int64(-60); k < 140; k++ {
			if r.IntN(3) > 0 {
				add(binary.LittleEndian.AppendUint64(nil, uint64(k)))
			}
		}
	}
	return tab, vs
}

func sqlQuery(r *rand.Rand, s *query.Schema) *query.Query {
	return sqlQueryJoined(nil, r, s, nil)
}

// sqlQueryJoined is sqlQuery, with a lookup join on the table (when a is
// not nil) once in four.
func sqlQueryJoined(t testing.TB, r *rand.Rand, s *query.Schema, a *strview.Arena) *query.Query {
	g := sqlGen{r}
	q := &query.Query{Name: "q", Schema: s}
	if a != nil && r.IntN(6) == 0 {
		// An aggregation grouped by the joined value (a bytes code).
		strs := r.IntN(2) == 0
		tab, _ := sqlTable(t, r, a, strs)
		codes := &query.StaticTable{KeyWidth: tab.KeyWidth, ValueWidth: 8, Keys: tab.Keys}
		for range tab.Keys {
			codes.Values = append(codes.Values, binary.LittleEndian.AppendUint64(nil, uint64(r.IntN(5))))
		}
		q.Join = &query.StaticJoin{Column: map[bool]string{true: "s", false: "n"}[strs], Table: codes, As: "code"}
		q.Window = query.Tumbling(5000)
		q.GroupBy = []query.Expr{query.C("code")}
		q.Aggregates = []query.Aggregate{{Func: query.Count, As: "n"}, {Func: query.Sum, Arg: query.C("m"), As: "sm"}}
		return q
	}
	if a != nil && r.IntN(4) == 0 {
		strs := r.IntN(2) == 0
		tab, vs := sqlTable(t, r, a, strs)
		q.Join = &query.StaticJoin{Column: map[bool]string{true: "s", false: "n"}[strs], Table: tab, Values: vs}
		if r.IntN(2) == 0 {
			// The key computed by the lookup kernel (StaticJoin.Key): in
			// place (affine), by the row evaluator, a string's.
			keys := []query.Expr{query.Arith{Op: query.OpAdd, L: query.C("n"), R: query.Int(r.Int64N(40) - 20)},
				query.Call{Fn: "mod", Args: []query.Expr{query.C("n"), query.Int(50)}}}
			if strs {
				keys = []query.Expr{query.Call{Fn: "lower", Args: []query.Expr{query.C("s")}}}
			}
			q.Join.Column, q.Join.Key = "", keys[r.IntN(len(keys))]
		}
		if r.IntN(2) == 0 {
			q.Where = query.Or(query.IsNull{X: query.C("pop")}, query.Compare{Op: query.Gt, L: query.C("pop"), R: query.Int(r.Int64N(1e6))})
		}
		q.Project = []query.Projection{{Expr: query.C("city"), As: "p0"}, {Expr: query.C("pop"), As: "p1"}, {Expr: g.any(1), As: "p2"},
			{Expr: query.Call{Fn: "concat", Args: []query.Expr{query.C("t"), query.C("city")}}, As: "p3"}}
		if r.IntN(4) == 0 {
			q.Project = nil // SELECT *: the tuple and its value
		}
		return q
	}
	if r.IntN(3) > 0 {
		q.Where = g.cond(2)
	}
	if r.IntN(2) == 0 {
		for i := range 1 + r.IntN(4) {
			q.Project = append(q.Project, query.Projection{Expr: g.any(2), As: fmt.Sprintf("p%d", i)})
		}
		return q
	}
	size := []int64{1000, 5000, 20000}[r.IntN(3)]
	q.Window = query.Sliding(size, size/[]int64{1, 2, 5}[r.IntN(3)])
	if r.IntN(4) == 0 {
		q.Window = query.Sessions([]int64{100, 400, 2000}[r.IntN(3)])
	}
	if r.IntN(4) == 0 {
		q.Window.Delay = r.Int64N(1000)
	}
	keys := []func() query.Expr{
		func() query.Expr { return query.C("s") }, func() query.Expr { return query.C("t") },
		func() query.Expr { return query.C("n") }, func() query.Expr { return query.C("m") },
		func() query.Expr { return query.C("b") },
		func() query.Expr { return query.Call{Fn: "upper", Args: []query.Expr{query.C("t")}} },
		func() query.Expr { return query.Call{Fn: "mod", Args: []query.Expr{query.C("n"), query.Int(3)}} },
	}
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for _, k := range keys[:r.IntN(3)] {
		q.GroupBy = append(q.GroupBy, k())
	}
	for i := range 1 + r.IntN(4) {
		a := query.Aggregate{As: fmt.Sprintf("a%d", i)}
		switch r.IntN(7) {
		case 0:
			a.Func = query.Count
		case 1:
			a.Func, a.Arg = query.Count, g.leafCol()
		case 2:
			a.Func, a.Arg = query.Sum, g.num(1)
		case 3:
			a.Func, a.Arg = query.Sum, query.C("f")
		case 4:
			a.Func, a.Arg = query.Avg, g.pick(func() query.Expr { return query.C("n") }, func() query.Expr { return query.C("f") })
		case 5:
			a.Func, a.Arg = query.Min, g.pick(func() query.Expr { return query.C("m") }, func() query.Expr { return query.C("ts") })
		default:
			a.Func, a.Arg = query.Max, g.pick(func() query.Expr { return query.C("f") }, func() query.Expr { return query.C("n") })
		}
		if r.IntN(3) == 0 {
			a.Filter = g.cond(1)
		}
		q.Aggregates = append(q.Aggregates, a)
	}
	if r.IntN(4) == 0 {
		q.Having = query.IsNull{X: query.C(q.Aggregates[0].As), Not: true}
	}
	return q
}

// runSQLValues runs q over data in an engine and returns what it output,
// as the reference evaluator's Result holds it.
func runSQLValues(t *testing.T, q *query.Query, data []byte, cfg Config, dc *kernels.DictColumns) *reference.Result {
	got := &reference.Result{}
	var decodeErr error
	var out *query.Schema
	if q.Stateless() {
		var err error
		out, err = q.OutputSchema()
		require.NoError(t, err)
	}
	// The strings of the output tuples point into the engine's memory,
	// valid during the call: decoded there.
	sp := Spec{Query: q, Tuples: func(b []byte) error {
		vs, err := reference.DecodeTuples(out, b)
		decodeErr = errors.Join(decodeErr, err)
		got.Values = append(got.Values, vs...)
		got.Tuples = doubling.Append(got.Tuples, b...)
		return nil
	}}
	if !q.Stateless() {
		sp.Tuples, sp.Windows = nil, sqlRowsInto(q, got)
	}
	sp.DictColumns = dc
	e, err := Start(cfg, []Spec{sp})
	require.NoError(t, err)
	require.NoError(t, <-e.Produce(func() error { return e.Stream(0).Write(data) }))
	stats, err := e.CloseAll()
	require.NoError(t, err)
	st := stats[0]
	got.Counts = reference.Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
	require.NoError(t, decodeErr)
	return got
}

// sqlRowsInto is a Sink appending every row to res in the reference's
// form, with its canonical key and its aggregates' types and NULLs.
func sqlRowsInto(q *query.Query, res *reference.Result) Sink {
	return func(w *Window) error {
		for i := range w.Rows() {
			row := reference.Row{Start: w.Start, End: w.End, Key: string(w.CanonicalKey(i))}
			for a, ag := range q.Aggregates {
				t := q.AggType(ag)
				var v reference.Value
				switch {
				case t == query.FloatValue:
					v = reference.Float(w.AggFloat(i, a))
				case t == query.TimeValue:
					v = reference.Time(w.Agg(i, a))
				default:
					v = reference.Int(w.Agg(i, a))
				}
				if w.AggNull(i, a) {
					v = reference.Null(v.Kind)
				}
				row.Values = append(row.Values, v)
			}
			res.Rows = append(res.Rows, row)
		}
		return nil
	}
}

// matchReference runs q over data with 1 to 3 workers and a task size
// drawn from r, and fails unless its output is the reference's. On one
// run in two the data's strings are dictionary-encoded first.
func matchReference(t *testing.T, r *rand.Rand, seed int, q *query.Query, data []byte) {
	t.Helper()
	want, err := reference.Evaluate(q, data)
	require.NoError(t, err, "seed %d: %v", seed, q)
	cfg := Config{Workers: 1 + r.IntN(3), TaskSize: sqlTuple * (1 + r.IntN(64)), BufferSize: 1 << 16}
	var dc *kernels.DictColumns
	if r.IntN(2) == 0 {
		dc = sqlDictColumns(strview.NewDict())
		encodeSQLData(t, q.Schema, dc, data)
	}
	got := runSQLValues(t, q, data, cfg, dc)
	if d := reference.Diff(q, want, got, 1e-9); d != "" {
		t.Fatalf("seed %d, %d workers, task %d B, encoded %v: %s\nquery: where %v project %v group %v aggs %+v having %v window %+v",
			seed, cfg.Workers, cfg.TaskSize, dc != nil, d, q.Where, q.Project, q.GroupBy, q.Aggregates, q.Having, q.Window)
	}
}

// TestSQLValuesMatchReference: random queries over strings, times,
// booleans and NULLs (CASE, casts, string and time functions, LIKE, IN,
// IS NULL, aggregates over NULLs and under FILTER, string and nullable
// keys, HAVING over them) give the reference evaluator's output, with 1 to
// 3 workers and any task size.
func TestSQLValuesMatchReference(t *testing.T) {
	parallel(t)
	s := sqlSchema(t)
	seeds := testenv.Scale(30, 300)
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 25))
		var a strview.Arena
		data := sqlData(r, s, &a, 200+r.IntN(1500), []int{0, 2, 5}[r.IntN(3)])
		q := sqlQueryJoined(t, r, s, &a)
		for q.Validate() != nil { // keys too wide for the engine
			q = sqlQueryJoined(t, r, s, &a)
		}
		matchReference(t, r, seed, q, data)
		a.Free()
	}
}

// TestSessionOrderAfterAnEarlierStart: sessions that end together close
// in the order of their starts, also where a tuple out of order moved a
// session's start earlier without moving its end (k=2's 1 after its 5),
// which changes its place among them.
func TestSessionOrderAfterAnEarlierStart(t *testing.T) {
	parallel(t)
	s, err := query.NewSchema(16, query.Attribute{Name: "ts", Type: query.Int64, Offset: 0, Logical: query.Time},
		query.Attribute{Name: "k", Type: query.Int64, Offset: 8})
	require.NoError(t, err)
	var data []byte
	for _, tk := range [][2]int64{{5, 2}, {5, 1}, {1, 2}, {100, 3}} {
		data = binary.LittleEndian.AppendUint64(data, uint64(tk[0]))
		data = binary.LittleEndian.AppendUint64(data, uint64(tk[1]))
	}
	q := &query.Query{Name: "s", Schema: s, Window: query.Sessions(10), GroupBy: []query.Expr{query.C("k")},
		Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
	var got [][3]int64
	e, err := Start(Config{Workers: 1, TaskSize: 64, BufferSize: 1 << 12}, []Spec{{Query: q, Windows: func(w *Window) error {
		for i := range w.Rows() {
			got = append(got, [3]int64{w.Start, w.End, w.GroupInt(i, 0)})
		}
		return nil
	}}})
	require.NoError(t, err)
	require.NoError(t, <-e.Produce(func() error { return e.Stream(0).Write(data) }))
	_, err = e.CloseAll()
	require.NoError(t, err)
	assert.Equal(t, [][3]int64{{1, 15, 2}, {5, 15, 1}, {100, 110, 3}}, got)
}

// TestSessionBridgeKeepsTheOrder: a tuple out of order that bridges two
// sessions of its key (p's 127979 between its 126985 and 128099) merges
// them while other keys' sessions wait in the heap of closes; they still
// close in the order of their ends. The merge changed the first
// session's end before taking the second out of the heap, whose removal
// then sifted another session (a's) past e's to the top: a closed first.
func TestSessionBridgeKeepsTheOrder(t *testing.T) {
	parallel(t)
	s, err := query.NewSchema(16, query.Attribute{Name: "ts", Type: query.Int64, Offset: 0, Logical: query.Time},
		query.Attribute{Name: "k", Type: query.Int64, Offset: 8})
	require.NoError(t, err)
	const p, e, l, a, z = 1, 2, 3, 4, 5
	var data []byte
	for _, tk := range [][2]int64{{126985, p}, {127118, e}, {128099, p}, {127264, l}, {127558, a}, {127979, p}, {200000, z}} {
		data = binary.LittleEndian.AppendUint64(data, uint64(tk[0]))
		data = binary.LittleEndian.AppendUint64(data, uint64(tk[1]))
	}
	w := query.Sessions(1000)
	w.Delay = 200
	q := &query.Query{Name: "s", Schema: s, Window: w, GroupBy: []query.Expr{query.C("k")},
		Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
	want := [][4]int64{{127118, 128118, e, 1}, {127264, 128264, l, 1}, {127558, 128558, a, 1}, {126985, 129099, p, 3}, {200000, 201000, z, 1}}
	for _, task := range []int{16, 112} {
		var got [][4]int64
		en, err := Start(Config{Workers: 1, TaskSize: task, BufferSize: 1 << 12}, []Spec{{Query: q, Windows: func(w *Window) error {
			for i := range w.Rows() {
				got = append(got, [4]int64{w.Start, w.End, w.GroupInt(i, 0), w.Agg(i, 0)})
			}
			return nil
		}}})
		require.NoError(t, err)
		require.NoError(t, <-en.Produce(func() error { return en.Stream(0).Write(data) }))
		_, err = en.CloseAll()
		require.NoError(t, err)
		assert.Equal(t, want, got, "task %d B", task)
	}
	ref, err := reference.Evaluate(q, data)
	require.NoError(t, err)
	require.Len(t, ref.Rows, len(want))
	for i, r := range ref.Rows {
		assert.Equal(t, [2]int64{want[i][0], want[i][1]}, [2]int64{r.Start, r.End}, "the reference's row %d", i)
	}
}

// TestSessionWindowsMatchReference: random aggregations over session
// windows (gaps shorter and longer than the data's disorder, watermark
// delays, string, numeric and computed keys, several aggregates, HAVING)
// over tuples out of order give the reference's sessions, in its order,
// with its late tuples, whatever the workers and the task size.
func TestSessionWindowsMatchReference(t *testing.T) {
	parallel(t)
	s := sqlSchema(t)
	for seed := range testenv.Scale(40, 400) {
		r := rand.New(rand.NewPCG(uint64(seed), 77))
		var a strview.Arena
		data := sqlData(r, s, &a, 200+r.IntN(1500), []int{0, 3}[r.IntN(2)])
		q := sqlQuery(r, s)
		for q.Stateless() || q.Validate() != nil {
			q = sqlQuery(r, s)
		}
		q.Window = query.Sessions([]int64{50, 300, 1000, 3000}[r.IntN(4)])
		q.Window.Delay = []int64{0, 0, 200, 1500}[r.IntN(4)]
		require.NoError(t, q.Validate(), "seed %d", seed)
		matchReference(t, r, seed, q, data)
		a.Free()
	}
}

// TestSQLWindowJoinMatchesReference: window joins of tuples with strings
// and NULLs (the panes keep their long strings after the input's memory
// is freed) and predicates over them give the reference's pairs.
func TestSQLWindowJoinMatchesReference(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := sqlSchema(t)
	for seed := range testenv.Scale(20, 100) {
		r := rand.New(rand.NewPCG(uint64(seed), 26))
		var a strview.Arena
		left := sqlData(r, s, &a, 100+r.IntN(400), []int{0, 3}[r.IntN(2)])
		right := sqlData(r, s, &a, 100+r.IntN(400), []int{0, 3}[r.IntN(2)])
		size := []int64{2000, 10000}[r.IntN(2)]
		j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Sliding(size, size/[]int64{1, 2}[r.IntN(2)])}
		switch r.IntN(4) {
		case 0:
			j.Where = query.Compare{Op: query.Eq, L: query.C("l.t"), R: query.C("r.t")}
		case 1:
			j.Where = query.And(query.Compare{Op: query.Eq, L: query.C("l.s"), R: query.C("r.s")}, query.Compare{Op: query.Lt, L: query.C("l.n"), R: query.C("r.n")})
		case 2:
			j.Where = query.Like{X: query.Call{Fn: "concat", Args: []query.Expr{query.C("l.t"), query.C("r.s")}}, Pattern: "%a%"}
		default:
			j.Where = query.Or(query.IsNull{X: query.C("r.f")}, query.Compare{Op: query.Gt, L: query.C("l.f"), R: query.C("r.f")})
		}
		require.NoError(t, j.Validate())
		cfg := Config{Workers: 1 + r.IntN(3), TaskSize: sqlTuple * (1 + r.IntN(30)), BufferSize: 1 << 16}
		want, err := reference.EvaluateJoin(j, left, right)
		require.NoError(t, err)
		out, err := j.OutputSchema()
		require.NoError(t, err)
		got := &reference.Result{}
		var decodeErr error
		e, err := Start(cfg, []Spec{{Join: j, Tuples: valuesInto(out, got, &decodeErr)}})
		require.NoError(t, err)
		done := e.Produce(func() error { return e.Stream(0).Write(left) })
		require.NoError(t, <-e.Produce(func() error { return e.Stream(0).Right().Write(right) }))
		require.NoError(t, <-done)
		stats, err := e.CloseAll()
		require.NoError(t, err)
		require.NoError(t, decodeErr)
		st := stats[0]
		got.Counts = reference.Counts{Tuples: st.Tuples, Late: st.Late, Counted: st.Counted}
		q := &query.Query{Name: "pairs", Schema: out} // Diff reads the output schema of a stateless SELECT *
		if d := reference.Diff(q, want, got, 0); d != "" {
			t.Fatalf("seed %d, %d workers, task %d B, window %+v, where %v: %s", seed, cfg.Workers, cfg.TaskSize, j.Window, j.Where, d)
		}
		a.Free()
	}
	assertNoLeak(t, base)
}

// valuesInto is a sink that decodes tuples of schema s into res's values
// (their strings point into the engine's memory, valid during the call),
// joining its errors into *errs.
func valuesInto(s *query.Schema, res *reference.Result, errs *error) TupleSink {
	return func(b []byte) error {
		vs, err := reference.DecodeTuples(s, b)
		*errs = errors.Join(*errs, err)
		res.Values = append(res.Values, vs...)
		return nil
	}
}

// TestSessionWindowsByHand: sessions as Flink's: two tuples exactly the gap
// apart share a session, its end is the last tuple plus the gap, a tuple
// between two open sessions of its key merges them, each key's sessions
// are its own, a session closes when the watermark minus the delay reaches
// its end, and a tuple whose own session would have closed is late unless
// it joins an open session of its key (Flink merges first, then judges).
func TestSessionWindowsByHand(t *testing.T) {
	parallel(t)
	s, err := query.NewSchema(16, query.Attribute{Name: "ts", Type: query.Int64, Offset: 0, Logical: query.Time},
		query.Attribute{Name: "k", Type: query.Int64, Offset: 8})
	require.NoError(t, err)
	var data []byte
	for _, tk := range [][2]int64{{0, 1}, {5, 1}, {10, 1}, {2, 2}, {30, 1}, {20, 1}, {24, 1}, {26, 1}, {40, 2}, {15, 1}, {3, 1}, {100, 3}} {
		data = binary.LittleEndian.AppendUint64(data, uint64(tk[0]))
		data = binary.LittleEndian.AppendUint64(data, uint64(tk[1]))
	}
	w := query.Sessions(5)
	w.Delay = 20
	q := &query.Query{Name: "s", Schema: s, Window: w, GroupBy: []query.Expr{query.C("k")},
		Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}, {Func: query.Max, Arg: query.C("ts"), As: "last"}}}
	type row struct{ start, end, k, n, last int64 }
	want := []row{
		// 30 takes the watermark to 30: k=2's [2, 7) closes (7 <= 30-20).
		{2, 7, 2, 1, 2},
		// 40 takes it to 40: k=1's [0, 15) closes; 20 and 24 made
		// [20, 29), and 26 bridged it to 30's [30, 35).
		{0, 15, 1, 3, 10},
		// 15 came after 40: 15+5 <= 40-20, but it lies within the gap
		// of k=1's open [20, 35), which it joins. 3 came after 40 too,
		// within the gap of no open session: late. 100 closes the rest
		// in the order of their ends, and the end of the input the last.
		{15, 35, 1, 5, 30}, {40, 45, 2, 1, 40}, {100, 105, 3, 1, 100},
	}
	for workers := 1; workers <= 3; workers++ {
		for _, task := range []int{16, 32, 160} {
			var got []row
			e, err := Start(Config{Workers: workers, TaskSize: task, BufferSize: 1 << 12}, []Spec{{Query: q, Windows: func(w *Window) error {
				for i := range w.Rows() {
					got = append(got, row{w.Start, w.End, w.GroupInt(i, 0), w.Agg(i, 0), w.Agg(i, 1)})
				}
				return nil
			}}})
			require.NoError(t, err)
			require.NoError(t, <-e.Produce(func() error { return e.Stream(0).Write(data) }))
			stats, err := e.CloseAll()
			require.NoError(t, err)
			assert.Equal(t, want, got, "%d workers, task %d", workers, task)
			assert.Equal(t, uint64(1), stats[0].Late, "3 comes after 40: its session would have closed")
		}
	}
	ref, err := reference.Evaluate(q, data)
	require.NoError(t, err)
	require.Len(t, ref.Rows, len(want))
	for i, w := range want {
		assert.Equal(t, [2]int64{w.start, w.end}, [2]int64{ref.Rows[i].Start, ref.Rows[i].End}, "the reference's row %d", i)
	}
}

// TestNullableColumnRanges: a WHERE of integer column-constant
// comparisons on a column that can be NULL (the dense kernel's and the
// fused kernel's fast ranges read the value slot, which a NULL leaves
// zero) drops the NULLs, with and without groups, at every task size.
func TestNullableColumnRanges(t *testing.T) {
	parallel(t)
	s, err := query.NewSchema(24, query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "n", Type: query.Int64, Offset: 8, Nullable: true, NullBit: 160},
		query.Attribute{Name: "m", Type: query.Int32, Offset: 16, Nullable: true, NullBit: 161})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(1, 2))
	var data []byte
	for i := range 2000 {
		tu := make([]byte, 24)
		binary.LittleEndian.PutUint64(tu, uint64(i*10))
		binary.LittleEndian.PutUint64(tu[8:], uint64(r.Int64N(100)-50))
		binary.LittleEndian.PutUint32(tu[16:], uint32(r.Int32N(10)))
		if r.IntN(2) == 0 {
			tu[20] |= 1 // n NULL, its slot zero
			binary.LittleEndian.PutUint64(tu[8:], 0)
		}
		if r.IntN(3) == 0 {
			tu[20] |= 2
			binary.LittleEndian.PutUint32(tu[16:], 0)
		}
		data = append(data, tu...)
	}
	for _, where := range []query.Expr{
		query.Cmp(query.C("n"), query.Ge, query.Int(0)),
		query.And(query.Cmp(query.C("n"), query.Le, query.Int(10)), query.Cmp(query.C("m"), query.Lt, query.Int(5))),
	} {
		for _, group := range [][]query.Expr{nil, {query.C("m")}} {
			q := &query.Query{Name: "q", Schema: s, Window: query.Tumbling(1000), Where: where, GroupBy: group,
				Aggregates: []query.Aggregate{{Func: query.Count, As: "c"}, {Func: query.Sum, Arg: query.C("n"), As: "s"}}}
			require.NoError(t, q.Validate())
			want, err := reference.Evaluate(q, data)
			require.NoError(t, err)
			for _, task := range []int{24, 240, 24 << 10} {
				got := runSQLValues(t, q, data, Config{Workers: 2, TaskSize: task, BufferSize: 1 << 16}, nil)
				assert.Empty(t, reference.Diff(q, want, got, 1e-9), "where %v, group %v, task %d", where, group, task)
			}
		}
	}
}
