package sql

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/query"
)

func mustCompile(t *testing.T, text string) *Program {
	t.Helper()
	p, err := Compile(text)
	if e, ok := err.(*Error); ok {
		require.NoError(t, err, e.Caret(text))
	}
	require.NoError(t, err)
	return p
}

func TestSourceLayoutBinary(t *testing.T) {
	p := mustCompile(t, base+"SELECT * FROM s")
	s := p.Source("s")
	require.NotNil(t, s)
	want := []query.Attribute{
		{Name: "ts", Type: query.Int64, Offset: 0, Size: 8},
		{Name: "a", Type: query.Int32, Offset: 8, Size: 4},
		{Name: "b", Type: query.Int64, Offset: 12, Size: 8},
		{Name: "f", Type: query.Float32, Offset: 20, Size: 4},
		{Name: "d", Type: query.Float64, Offset: 24, Size: 8},
		{Name: "u", Type: query.Bytes, Offset: 32, Size: 16},
		{Name: "k", Type: query.Int32, Offset: 48, Size: 4},
	}
	assert.Equal(t, want, s.Schema.Attrs)
	assert.Equal(t, 52, s.Schema.TupleSize)
	assert.Equal(t, "ts", s.EventTime)
	assert.Equal(t, "stdin", s.Connector)
	assert.Equal(t, "binary", s.Format)
	assert.Equal(t, "fail", s.OnError)
	assert.Equal(t, "ENUM('view', 'click', 'purchase')", s.Columns[6].Type)
	assert.Equal(t, []string{"view", "click", "purchase"}, s.Columns[6].Labels)
	assert.Equal(t, map[string]string{"connector": "stdin"}, s.Options)
	// SELECT *: the input tuples, every column in declared order
	q := p.Queries[0]
	assert.Equal(t, "select1", q.Name)
	assert.Equal(t, []string{"ts", "a", "b", "f", "d", "u", "k"}, columnNamesOf(q))
	assert.Equal(t, OutputColumn{Name: "u", Kind: Attribute, Index: 5, Attr: 5, Type: "UUID"}, q.Columns[5])
	assert.Same(t, s.Schema, q.Output)
}

func TestSourceLayoutOtherFormats(t *testing.T) {
	// csv: the event time first, then by size (stable), the NULL bits, the
	// tuple padded to a power of two
	p := mustCompile(t, `CREATE SOURCE c (a INT, u BYTES(3), t BIGINT, d DOUBLE,
		WATERMARK FOR t AS t - INTERVAL '0' SECOND)
		WITH (connector = 'file', path = 'c.csv', format = 'csv', header = 'true', on_error = 'skip', time_unit = 'us');
		SELECT * FROM c`)
	s := p.Source("c")
	// every column but the event time can be NULL: its bit after the columns
	assert.Equal(t, []query.Attribute{
		{Name: "t", Type: query.Int64, Offset: 0, Size: 8},
		{Name: "d", Type: query.Float64, Offset: 8, Size: 8, Nullable: true, NullBit: 23 * 8},
		{Name: "a", Type: query.Int32, Offset: 16, Size: 4, Nullable: true, NullBit: 23*8 + 1},
		{Name: "u", Type: query.Bytes, Offset: 20, Size: 3, Nullable: true, NullBit: 23*8 + 2},
	}, s.Schema.Attrs)
	assert.Equal(t, 32, s.Schema.TupleSize)
	assert.Equal(t, query.Attribute{Name: "a", Type: query.Int32, Offset: 16, Size: 4, Nullable: true, NullBit: 23*8 + 1}, s.Columns[0].Attr)
	assert.True(t, s.Watermark)
	assert.Equal(t, int64(0), s.WatermarkDelay)
	assert.Equal(t, "us", s.TimeUnit)
	assert.True(t, s.Header)
	assert.Equal(t, "skip", s.OnError)
	assert.Equal(t, "c.csv", s.Path)
	// json, no watermark: the column a window names is the event time
	p = mustCompile(t, `CREATE SOURCE j (x INT, when BIGINT, other BIGINT) WITH (connector = 'stdin', format = 'json');
		SELECT COUNT(*) AS n FROM TUMBLE(j, when, INTERVAL '1' SECOND)`)
	assert.Equal(t, "when", p.Source("j").EventTime)
	assert.Equal(t, "when", p.Source("j").Schema.Attrs[0].Name)
	// binary with tuple_size: padding
	p = mustCompile(t, `CREATE SOURCE b (t BIGINT) WITH (connector = 'file', path = 'b', tuple_size = 64)`)
	assert.Equal(t, 64, p.Source("b").Schema.TupleSize)
	assert.Empty(t, p.Queries)
}

func TestGeneratorSource(t *testing.T) {
	p := mustCompile(t, `CREATE SOURCE g (timestamp BIGINT, a1 INT, a2 INT, a3 INT, a4 INT, a5 INT, a6 INT)
		WITH (connector = 'generator', workload = 'GroupBy', tuples_per_ms = 5, seed = 7)`)
	s := p.Source("g")
	assert.Equal(t, "groupby", s.Workload)
	assert.Equal(t, 5, s.TuplesPerMs)
	assert.Equal(t, uint64(7), s.Seed)
	assert.True(t, s.SeedSet)
	assert.Equal(t, "ms", s.TimeUnit)
	assert.Equal(t, map[string]string{"connector": "generator", "workload": "GroupBy", "tuples_per_ms": "5", "seed": "7"}, s.Options)
}

func TestStatelessQuery(t *testing.T) {
	p := mustCompile(t, base+`SELECT a + 1 AS x, f * 2, -b, k
		FROM s WHERE a = 1 OR NOT (b < 2 AND k = 'click') AND d <> 1.5`)
	q := p.Queries[0]
	mq := q.Spec.Query
	require.NotNil(t, mq)
	assert.True(t, mq.Stateless())
	assert.Equal(t, "(a = 1 OR ((b >= 2 OR k != 1) AND d != 1.5))", mq.Where.String())
	require.Len(t, mq.Project, 4)
	assert.Equal(t, "(a + 1)", mq.Project[0].Expr.String())
	assert.Equal(t, "(f * 2)", mq.Project[1].Expr.String())
	assert.Equal(t, "(-1 * b)", mq.Project[2].Expr.String())
	assert.Equal(t, []string{"x", "expr2", "expr3", "k"}, columnNamesOf(q))
	assert.Equal(t, OutputColumn{Name: "expr2", Kind: Attribute, Index: 2, Attr: 2, Type: "DOUBLE"}, q.Columns[1])
	assert.Equal(t, OutputColumn{Name: "k", Kind: Attribute, Index: 4, Attr: 4, Type: "BIGINT", Labels: []string{"view", "click", "purchase"}}, q.Columns[3])
	assert.Equal(t, "s", q.Input)
	assert.Equal(t, "", q.From)
	assert.Equal(t, engine.Ref{}, q.Spec.Upstream)
	// the output: the event time, then one 8-byte value per projection
	assert.Equal(t, []string{"timestamp", "x", "expr2", "expr3", "k"}, attrNames(q.Output))
}

// TestDuplicateOutputNames: a name without AS that an earlier item took
// gets the least number after it that makes it unique, as Flink
// (Calcite) names it; the values stay each item's.
func TestDuplicateOutputNames(t *testing.T) {
	p := mustCompile(t, base+`SELECT a, a, b AS a0, a FROM s;
SELECT window_start, COUNT(*), COUNT(a), SUM(b), SUM(b) FILTER (WHERE a > 1) FROM TUMBLE(s, ts, INTERVAL '1' SECOND) GROUP BY window_start;`)
	assert.Equal(t, []string{"a", "a1", "a0", "a2"}, columnNamesOf(p.Queries[0]), "a0 is an alias of the list")
	assert.Equal(t, []string{"window_start", "count", "count0", "sum_b", "sum_b0"}, columnNamesOf(p.Queries[1]))
	q := p.Queries[0]
	require.Len(t, q.Spec.Query.Project, 4)
	assert.Equal(t, "a", q.Spec.Query.Project[1].Expr.String())
	assert.Equal(t, "b", q.Spec.Query.Project[2].Expr.String())
}

func attrNames(s *query.Schema) []string {
	n := make([]string, len(s.Attrs))
	for i, a := range s.Attrs {
		n[i] = a.Name
	}
	return n
}

func TestExpressionPrecedence(t *testing.T) {
	for text, want := range map[string]string{
		"a + b * 2 - d / 4":          "((a + (b * 2)) - (d / 4))",
		"(a + b) * 2":                "((a + b) * 2)",
		"- -a":                       "(-1 * (-1 * a))",
		"-9223372036854775808 + a":   "(-9223372036854775808 + a)",
		"+a * 1.5e2":                 "(a * 150)",
		"a = 1 AND b = 2 OR d > 3":   "",
		"NOT NOT a <= 1":             "",
		"NOT (a = 1 OR b >= 2)":      "",
		"\"a\" + `b`":                "(a + b)",
		"s.a * 3 -- a comment\n + 2": "((a * 3) + 2)",
	} {
		if want == "" {
			continue
		}
		p := mustCompile(t, base+"SELECT "+text+" AS v FROM s")
		assert.Equal(t, want, p.Queries[0].Spec.Query.Project[0].Expr.String(), text)
	}
	for text, want := range map[string]string{
		"a = 1 AND b = 2 OR d > 3": "((a = 1 AND b = 2) OR d > 3)",
		"NOT NOT a <= 1":           "a <= 1",
		"NOT (a = 1 OR b >= 2)":    "(a != 1 AND b < 2)",
		"NOT (a > 1 AND b != 2)":   "(a <= 1 OR b = 2)",
		"1 < a AND 'purchase' = k": "(1 < a AND 2 = k)",
		"a = 1 /* c */ AND b = 2":  "(a = 1 AND b = 2)",
	} {
		p := mustCompile(t, base+"SELECT * FROM s WHERE "+text)
		assert.Equal(t, want, p.Queries[0].Spec.Query.Where.String(), text)
	}
}

func TestWindows(t *testing.T) {
	for text, want := range map[string]query.Window{
		"TUMBLE(s, ts, INTERVAL '10' SECOND)":                              {Type: query.Range, Size: 10000, Slide: 10000},
		"HOP(s, ts, INTERVAL '1' SECOND, INTERVAL '1' MINUTE)":             {Type: query.Range, Size: 60000, Slide: 1000},
		"s [RANGE INTERVAL '60' SECOND SLIDE INTERVAL '1' SECOND]":         {Type: query.Range, Size: 60000, Slide: 1000},
		"s [RANGE INTERVAL '2' HOURS]":                                     {Type: query.Range, Size: 7200000, Slide: 7200000},
		"s [RANGE INTERVAL 5 MILLISECONDS SLIDE INTERVAL '1' MILLISECOND]": {Type: query.Range, Size: 5, Slide: 1},
		"s [ROWS 1024 SLIDE 64]":                                           {Type: query.Rows, Size: 1024, Slide: 64},
		"s [ROWS 128]":                                                     {Type: query.Rows, Size: 128, Slide: 128},
		"s [rows 128] AS x":                                                {Type: query.Rows, Size: 128, Slide: 128},
	} {
		p := mustCompile(t, base+"SELECT COUNT(*) AS n FROM "+text)
		assert.Equal(t, want, p.Queries[0].Spec.Query.Window, text)
	}
	// intervals in the source's unit
	for unit, want := range map[string]int64{"s": 10, "ms": 10_000, "us": 10_000_000, "ns": 10_000_000_000} {
		p := mustCompile(t, "CREATE SOURCE q (t BIGINT) WITH (connector = 'stdin', time_unit = '"+unit+"');\n"+
			"SELECT COUNT(*) AS n FROM TUMBLE(q, t, INTERVAL '10' SECOND)")
		assert.Equal(t, want, p.Queries[0].Spec.Query.Window.Size, unit)
		assert.Equal(t, unit, p.Source("q").TimeUnit)
	}
}

func TestAggregation(t *testing.T) {
	// bucket is the expression a / 10: HAVING takes GROUP BY columns only
	_, err := Compile(base + "SELECT a / 10 AS bucket, COUNT(*) FROM s [ROWS 2] GROUP BY a / 10 HAVING bucket < 3")
	require.Error(t, err)
	p := mustCompile(t, base+`SELECT window_end AS e, a / 10 AS bucket, window_start, SUM(f * 2) AS total,
			AVG(b), MIN(d), MAX(b) AS top, COUNT(u), a
		FROM s [RANGE INTERVAL '1' SECOND SLIDE INTERVAL '500' MILLISECONDS]
		WHERE k <> 'view'
		GROUP BY window_start, a / 10, a
		HAVING total > 1 AND COUNT(*) >= 2 AND a < 7 AND MAX(b) > 0`)
	q := p.Queries[0]
	mq := q.Spec.Query
	assert.Equal(t, "k != 0", mq.Where.String())
	assert.Equal(t, []query.Expr{query.Div(query.C("a"), query.Int(10)), query.C("a")}, mq.GroupBy)
	assert.Equal(t, []query.Aggregate{
		{Func: query.Sum, Arg: query.Mul(query.C("f"), query.Int(2)), As: "total"},
		{Func: query.Avg, Arg: query.C("b"), As: "avg_b"},
		{Func: query.Min, Arg: query.C("d"), As: "min_d"},
		{Func: query.Max, Arg: query.C("b"), As: "top"},
		{Func: query.Count, As: "count"}, // COUNT(u) is COUNT(*): there are no NULLs
	}, mq.Aggregates)
	assert.Equal(t, "(total > 1 AND count >= 2 AND a < 7 AND top > 0)", mq.Having.String())
	assert.Equal(t, []OutputColumn{
		{Name: "e", Kind: WindowEnd, Attr: -1, Type: "BIGINT"},
		{Name: "bucket", Kind: GroupKey, Index: 0, Attr: 1, Type: "BIGINT"},
		{Name: "window_start", Kind: WindowStart, Attr: 0, Type: "BIGINT"},
		{Name: "total", Kind: Aggregate, Index: 0, Attr: 3, Type: "DOUBLE"},
		{Name: "avg_b", Kind: Aggregate, Index: 1, Attr: 4, Type: "DOUBLE"},
		{Name: "min_d", Kind: Aggregate, Index: 2, Attr: 5, Type: "DOUBLE"},
		{Name: "top", Kind: Aggregate, Index: 3, Attr: 6, Type: "BIGINT"},
		{Name: "count", Kind: Aggregate, Index: 4, Attr: 7, Type: "BIGINT"},
		{Name: "a", Kind: GroupKey, Index: 1, Attr: 2, Type: "BIGINT"},
	}, q.Columns)
	assert.Equal(t, 8+8*2+8*5, q.Output.TupleSize)
	// an aggregate only HAVING uses is computed, not output
	p = mustCompile(t, base+"SELECT a, SUM(b) AS total FROM s [ROWS 4] GROUP BY a HAVING MIN(d) > 0 AND a > 1")
	assert.Equal(t, []query.Aggregate{{Func: query.Sum, Arg: query.C("b"), As: "total"}, {Func: query.Min, Arg: query.C("d"), As: "$having1"}}, p.Queries[0].Spec.Query.Aggregates)
	assert.Equal(t, "($having1 > 0 AND a > 1)", p.Queries[0].Spec.Query.Having.String())
	assert.Equal(t, []string{"a", "total"}, columnNamesOf(p.Queries[0]))
	// ENUM group keys keep their labels; UUID keys their bytes
	p = mustCompile(t, base+"SELECT k, a, COUNT(*) AS n FROM s [ROWS 8] GROUP BY k, a")
	assert.Equal(t, OutputColumn{Name: "k", Kind: GroupKey, Index: 0, Attr: 1, Type: "BIGINT", Labels: []string{"view", "click", "purchase"}}, p.Queries[0].Columns[0])
	p = mustCompile(t, base+"SELECT u, COUNT(*) AS n FROM s [ROWS 8] GROUP BY u")
	assert.Equal(t, OutputColumn{Name: "u", Kind: GroupKey, Index: 0, Attr: 1, Type: "UUID"}, p.Queries[0].Columns[0])
}

func TestStaticJoin(t *testing.T) {
	p := mustCompile(t, base+`SELECT c.v AS campaign, COUNT(*) AS n
		FROM TUMBLE(s, ts, INTERVAL '1' SECOND) AS e JOIN t AS c ON c.u = e.u
		GROUP BY c.v`)
	mq := p.Queries[0].Spec.Query
	require.NotNil(t, mq.Join)
	assert.Equal(t, "u", mq.Join.Column)
	assert.Equal(t, "v", mq.Join.As)
	assert.Equal(t, []query.Expr{query.C("v")}, mq.GroupBy)
	assert.Equal(t, OutputColumn{Name: "campaign", Kind: GroupKey, Index: 0, Attr: 1, Type: "UUID"}, p.Queries[0].Columns[0])
	tab := p.Table("t")
	assert.Equal(t, 32, tab.RowSize())
	row := func(k, v byte) []byte {
		r := make([]byte, 32)
		r[0], r[16] = k, v
		return r
	}
	require.NoError(t, tab.SetRows([][]byte{row(1, 10), row(2, 20)}))
	require.Len(t, mq.Join.Table.Keys, 2)
	assert.Equal(t, row(2, 20)[:16], mq.Join.Table.Keys[1])
	assert.Equal(t, row(2, 20)[16:], mq.Join.Table.Values[1])
	assert.NoError(t, mq.Validate())
	assert.ErrorContains(t, tab.SetRows([][]byte{row(1, 10), row(1, 20)}), "rows 0 and 1 have the same u")
	assert.ErrorContains(t, tab.SetRows([][]byte{{1}}), "row 0 has 1 bytes, want 32")
	// the table as a filter (semi-join): no value column used
	p = mustCompile(t, base+"SELECT a, COUNT(*) AS n FROM s [ROWS 4] JOIN t ON s.u = t.u GROUP BY a")
	assert.Equal(t, "$value", p.Queries[0].Spec.Query.Join.As)
}

func TestLoadCSV(t *testing.T) {
	p := mustCompile(t, `CREATE TABLE x (id UUID, n INT, big BIGINT, r REAL, d DOUBLE, e ENUM('a','b'), raw BYTES(2))
		WITH (connector = 'file', path = 'x.csv', header = 'true');
		CREATE SOURCE q (ts BIGINT, u UUID) WITH (connector = 'stdin');
		SELECT raw, COUNT(*) AS n FROM q [ROWS 2] JOIN x ON q.u = x.id GROUP BY raw`)
	tab := p.Table("x")
	assert.Equal(t, []Kind{KindUUID, KindInt, KindBigint, KindReal, KindDouble, KindEnum, KindBytes},
		[]Kind{tab.Columns[0].Kind, tab.Columns[1].Kind, tab.Columns[2].Kind, tab.Columns[3].Kind, tab.Columns[4].Kind, tab.Columns[5].Kind, tab.Columns[6].Kind})
	require.NoError(t, tab.LoadCSV(stringsReader("id,n,big,r,d,e,raw\n00000000-0000-0000-0000-0000000000FF,-1,5,1.5,2.5,b,h\n\n"+
		"00000000-0000-0000-0000-000000000001,7,-5,0,0,a,hi\n")))
	assert.Equal(t, 2, tab.Rows())
	st := p.Queries[0].Spec.Query.Join.Table
	assert.Equal(t, [][]byte{append(make([]byte, 15), 0xff), append(make([]byte, 15), 1)}, st.Keys)
	assert.Equal(t, [][]byte{{'h', 0}, {'h', 'i'}}, st.Values)
	rows, err := tab.readCSV(stringsReader("id,n,big,r,d,e,raw\n00000000-0000-0000-0000-0000000000FF,-1,5,1.5,2.5,b,h\n"))
	require.NoError(t, err)
	require.Len(t, rows, 1)
	row := rows[0]
	require.Len(t, row, tab.RowSize())
	assert.Equal(t, []byte{0xff, 0xff, 0xff, 0xff}, row[16:20], "n: INT -1")
	assert.ErrorContains(t, tab.LoadCSV(stringsReader("id,n,big,r,d,e,raw\n00000000-0000-0000-0000-000000000000,1,2,3,4,a,abc\n")), `table x: line 2, column 48 (field "raw"): too long for bytes(2) "abc"`)
	assert.ErrorContains(t, tab.LoadCSV(stringsReader("id,n,big,r,d,e,raw\n00000000-0000-0000-0000-000000000000,x,2,3,4,a,ab\n")), `table x: line 2, column 38 (field "n"): bad int32 "x"`)
	assert.ErrorContains(t, tab.LoadCSV(stringsReader("id,n\n")), `line 1: header "id,n", want "id,n,big,r,d,e,raw"`)
	assert.ErrorContains(t, tab.LoadCSV(stringsReader("id,n,big,r,d,e,raw\nx,1,2,3,4,a,0000\n")), `table x: line 2, column 1 (field "id"): bad UUID "x"`)
	assert.ErrorContains(t, tab.LoadCSV(stringsReader("id,n,big,r,d,e,raw\n00000000-0000-0000-0000-000000000000,1,2,3,4,c,0000\n")), `line 2, column 46 (field "e"): unknown label "c" (labels: a, b)`)
	assert.ErrorContains(t, tab.LoadCSV(stringsReader("id,n,big,r,d,e,raw\n00000000-0000-0000-0000-000000000000,2\n")), "line 2, column 39 (field \"big\"): missing field: the record has 2 fields, 7 needed")
}

// TestLoadCSVThroughSource: LoadCSV decodes through package source's CSV
// decoder (quoting, a byte order mark, CRLF), keeps its own header check
// (the columns in declared order) and refuses duplicate keys.
func TestLoadCSVThroughSource(t *testing.T) {
	p := mustCompile(t, `CREATE TABLE x (id UUID, e ENUM('a','b,c'), raw BYTES(4))
		WITH (connector = 'file', path = 'x.csv', header = 'true');
		CREATE SOURCE q (ts BIGINT, u UUID) WITH (connector = 'stdin');
		SELECT raw, COUNT(*) AS n FROM q [ROWS 2] JOIN x ON q.u = x.id GROUP BY raw`)
	tab := p.Table("x")
	const id1, id2 = "00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002"
	require.NoError(t, tab.LoadCSV(stringsReader("\xef\xbb\xbf id , e,raw\r\n"+id1+`,"b,c","a""b"`+"\r\n"+id2+",a,x\n")))
	assert.Equal(t, 2, tab.Rows())
	st := p.Queries[0].Spec.Query.Join.Table
	assert.Equal(t, [][]byte{{'a', '"', 'b', 0}, {'x', 0, 0, 0}}, st.Values)

	require.NoError(t, tab.LoadCSV(stringsReader("")), "no lines: no rows")
	assert.Equal(t, 0, tab.Rows())
	assert.ErrorContains(t, tab.LoadCSV(stringsReader("e,id,raw\n")), `table x: line 1: header "e,id,raw", want "id,e,raw"`)
	// The source decoder's header rules: empty lines before it, quoted names.
	assert.NoError(t, tab.LoadCSV(stringsReader("\n\r\n\"id\",\"e\", raw\n"+id1+",a,x\n")))
	assert.ErrorContains(t, tab.LoadCSV(stringsReader("\n\"id\",\"x\",raw\n")), `table x: line 2: header "\"id\",\"x\",raw", want "id,e,raw"`)
	assert.ErrorContains(t, tab.LoadCSV(stringsReader("id,e,raw\n"+id1+",a,x\n"+id1+",a,y\n")), "table x: rows 0 and 1 have the same id")
	assert.ErrorContains(t, tab.LoadCSV(stringsReader("id,e,raw\n"+id1+`,"a,x`+"\n")), `table x: line 2, column 38 (field "e"): unterminated quoted field`)
}

func TestViewsAndSinks(t *testing.T) {
	p := mustCompile(t, base+`CREATE VIEW hot AS SELECT a * 2 AS a2, k, d FROM s WHERE k = 'click';
		CREATE VIEW per_k AS SELECT window_start AS ws, k, SUM(a2) AS total
			FROM TUMBLE(hot, ts, INTERVAL '1' SECOND) GROUP BY k;
		CREATE SINK out AS SELECT ws, total FROM per_k WHERE total > 10
			WITH (connector = 'file', path = 'out.json', format = 'json');
		SELECT COUNT(*) AS windows FROM TUMBLE(per_k, ws, INTERVAL '10' SECOND);`)
	require.Len(t, p.Queries, 4)
	hot, perK, out, last := p.Queries[0], p.Queries[1], p.Queries[2], p.Queries[3]
	assert.True(t, hot.View)
	assert.Nil(t, hot.Sink)
	assert.Equal(t, "s", hot.Input)
	assert.Equal(t, "hot", perK.From)
	assert.Equal(t, engine.Output(0), perK.Spec.Upstream)
	assert.Equal(t, "", perK.Input)
	// the view's columns are its select list; its tuples' layout is the model's
	assert.Equal(t, "a2", perK.Spec.Query.Aggregates[0].Arg.String())
	assert.Equal(t, []string{"ts", "a2", "k", "d"}, attrNames(perK.Spec.Query.Schema))
	assert.NoError(t, query.SameLayout(perK.Spec.Query.Schema, hot.Output))
	assert.Equal(t, "per_k", out.From)
	assert.Equal(t, engine.Output(1), out.Spec.Upstream)
	assert.Equal(t, "total > 10", out.Spec.Query.Where.String())
	assert.Equal(t, &Sink{Name: "out", Connector: "file", Path: "out.json", Format: "json",
		Options: map[string]string{"connector": "file", "path": "out.json", "format": "json"}}, out.Sink)
	assert.Equal(t, "per_k", last.From)
	assert.Equal(t, "select1", last.Name)
	assert.Equal(t, query.Tumbling(10000), last.Spec.Query.Window)
	assert.Equal(t, "stdout", last.Sink.Connector)
	specs := p.Specs()
	require.Len(t, specs, 4)
	assert.Equal(t, engine.Output(0), specs[1].Upstream)
	assert.Same(t, perK, p.Query("per_k"))
	assert.Equal(t, 6, out.Line)
}

func TestWindowJoin(t *testing.T) {
	p := mustCompile(t, base+`CREATE SOURCE r (ts BIGINT, a INT, x DOUBLE) WITH (connector = 'stdin');
		CREATE VIEW j AS SELECT * FROM s [ROWS 128] JOIN r [ROWS 128] ON s.a < r.a AND s.d = r.x WHERE r.x > 0 OR s.k = 'view';
		SELECT x + d AS y FROM j WHERE "s.a" > 1 AND r.a < 5`)
	j := p.Queries[0]
	require.NotNil(t, j.Spec.Join)
	assert.Equal(t, "s", j.Input)
	assert.Equal(t, "r", j.InputRight)
	assert.Equal(t, query.Window{Type: query.Rows, Size: 128, Slide: 128}, j.Spec.Join.Window)
	assert.Equal(t, "(l.a < r.a AND l.d = r.x AND (r.x > 0 OR l.k = 0))", j.Spec.Join.Where.String())
	assert.Equal(t, []string{"s.ts", "s.a", "b", "f", "d", "u", "k", "r.ts", "r.a", "x"}, columnNamesOf(j))
	assert.Equal(t, 52+20, j.Output.TupleSize)
	down := p.Queries[1]
	assert.Equal(t, "j", down.From)
	assert.Equal(t, engine.Output(0), down.Spec.Upstream)
	assert.Equal(t, "(x + d)", down.Spec.Query.Project[0].Expr.String())
	assert.Equal(t, "(s.a > 1 AND r.a < 5)", down.Spec.Query.Where.String())
	// a join of two views
	p = mustCompile(t, base+`CREATE VIEW c1 AS SELECT window_start, a, COUNT(*) AS n FROM s [RANGE INTERVAL '1' SECOND] GROUP BY a;
		CREATE VIEW c2 AS SELECT window_start, SUM(b) AS total FROM s [RANGE INTERVAL '1' SECOND];
		SELECT * FROM c1 [RANGE INTERVAL '1' SECOND] JOIN c2 [RANGE INTERVAL '1' SECOND] ON c1.n * 10 > c2.total`)
	jq := p.Queries[2]
	assert.Equal(t, "c1", jq.From)
	assert.Equal(t, "c2", jq.FromRight)
	assert.Equal(t, engine.Output(0), jq.Spec.Upstream)
	assert.Equal(t, engine.Output(1), jq.Spec.UpstreamRight)
	assert.Equal(t, "", jq.Input)
	assert.Equal(t, "(l.n * 10) > r.total", jq.Spec.Join.Where.String())
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

// TestQuotedNamesLikeInternalOnes: a select name such as "$1" does not
// collide with the names the compiler gives the hidden attributes.
func TestQuotedNamesLikeInternalOnes(t *testing.T) {
	p := mustCompile(t, base+`CREATE VIEW v AS SELECT a AS "$0", SUM(b) AS "$1" FROM s [ROWS 4] GROUP BY a, b HAVING MIN(d) > 0;
		SELECT "$1" FROM v;
		CREATE VIEW j AS SELECT * FROM v [ROWS 2] AS x JOIN v [ROWS 2] AS y ON x."$1" < y."$1";
		SELECT "x.$1" FROM j`)
	require.Len(t, p.Queries, 4)
	assert.Equal(t, "$1", p.Queries[1].Spec.Query.Project[0].Expr.String())
}

// TestOutputNamesNeverClash: output names that are also input columns, the
// event time's "timestamp" or keyN keep their meaning: HAVING x is the
// group column a (an alias), and HAVING a the group column a too, not the
// aggregate aliased a (a column comes before an alias, as in Flink).
func TestOutputNamesNeverClash(t *testing.T) {
	p := mustCompile(t, base+`SELECT SUM(b) AS a, a AS x, COUNT(*) AS timestamp, MIN(b) AS key1
		FROM s [ROWS 4] GROUP BY a, b / 2 HAVING x > 1 AND a > 0`)
	mq := p.Queries[0].Spec.Query
	assert.Equal(t, []string{"$agg1", "$agg2", "$agg3"}, []string{mq.Aggregates[0].As, mq.Aggregates[1].As, mq.Aggregates[2].As})
	assert.Equal(t, "(a > 1 AND a > 0)", mq.Having.String())
	assert.Equal(t, []string{"a", "x", "timestamp", "key1"}, columnNamesOf(p.Queries[0]))
	p = mustCompile(t, base+"SELECT a AS timestamp, b AS timestamp2 FROM s")
	assert.Equal(t, "$p1", p.Queries[0].Spec.Query.Project[0].As)
	assert.Equal(t, []string{"timestamp", "timestamp2"}, columnNamesOf(p.Queries[0]))
}

// TestSyntaxVariants: the spellings the dialect accepts besides the
// canonical ones.
func TestSyntaxVariants(t *testing.T) {
	p := mustCompile(t, `;; create stream "My Source" (
			ts bigint, n integer, x float, y double precision, id uuid
		) with ('connector' = 'stdin', FORMAT = BINARY, tuple_size = 40);
		Create Table tab (id UUID, w BYTES(4)) With (connector = 'file', path = 'tab.csv', header = true);;
		select tab.w, count(*) cnt
		from "My Source" [range interval 2 seconds slide interval '500' milliseconds] src
		inner join tab on src.id = tab.id
		group by tab.w;`)
	s := p.Source("My Source")
	require.NotNil(t, s)
	assert.Equal(t, []query.Type{query.Int64, query.Int32, query.Float32, query.Float64, query.Bytes},
		[]query.Type{s.Schema.Attrs[0].Type, s.Schema.Attrs[1].Type, s.Schema.Attrs[2].Type, s.Schema.Attrs[3].Type, s.Schema.Attrs[4].Type})
	assert.Equal(t, "binary", s.Format)
	assert.Equal(t, map[string]string{"connector": "stdin", "format": "BINARY", "tuple_size": "40"}, s.Options)
	assert.True(t, p.Table("tab").Header)
	q := p.Queries[0]
	assert.Equal(t, query.Sliding(2000, 500), q.Spec.Query.Window)
	assert.Equal(t, "w", q.Spec.Query.Join.As)
	assert.Equal(t, []string{"w", "cnt"}, columnNamesOf(q))
	assert.Equal(t, "BYTES(4)", q.Columns[0].Type)
	// dotted option names (a connector's properties) parse, and are checked
	e := compileErr(t, "CREATE SOURCE k (ts BIGINT) WITH (connector = 'stdin', properties.bootstrap.servers = 'h:9092')")
	assert.Equal(t, "unknown option properties.bootstrap.servers for a stdin source (valid: connector, format, tuple_size, time_unit, on_error, header)", e.Msg)
}
