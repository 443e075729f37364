package sql

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The SQL of Flink's and RisingWave's documentation that saber-hx refuses
// (sql/doc.go lists it), each refusal at its construct and saying what is
// not supported rather than a syntax error; the statements are on line 3,
// after base.

type docRefusal struct {
	text      string
	line, col int
	msg       string
}

func checkRefusals(t *testing.T, cases []docRefusal) {
	t.Helper()
	for _, tc := range cases {
		e := compileErr(t, base+tc.text)
		assert.Equal(t, tc.line, e.Line, tc.text)
		assert.Equal(t, tc.col, e.Column, tc.text)
		assert.Contains(t, e.Msg, tc.msg, tc.text)
	}
}

// TestErrorsRankingOver: Flink's Top-N and deduplication, ROW_NUMBER()
// OVER (...), were read as ROW_NUMBER() aliased OVER, and the '(' blamed.
func TestErrorsRankingOver(t *testing.T) {
	checkRefusals(t, []docRefusal{
		{"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY a ORDER BY ts DESC) AS row_num FROM s) AS x WHERE row_num <= 3", 3, 39, "ROW_NUMBER(...) OVER: window functions (OVER aggregation, Top-N, deduplication) are not supported"},
		{"SELECT a, RANK() OVER (ORDER BY b) FROM s", 3, 18, "RANK(...) OVER: window functions"},
		{"SELECT a, LAG(b, 1) OVER (ORDER BY ts) FROM s", 3, 21, "LAG(...) OVER: window functions"},
	})
}

// TestErrorsGroupingSets: Flink's GROUPING SETS, ROLLUP and CUBE (over
// windows too) were a syntax error at SETS, or an unknown function.
func TestErrorsGroupingSets(t *testing.T) {
	checkRefusals(t, []docRefusal{
		{"SELECT window_start, a, COUNT(*) FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end, GROUPING SETS ((a), ())", 3, 134, "GROUPING SETS is not supported: GROUP BY one set of keys (a query per grouping set)"},
		{"SELECT window_start, a, COUNT(*) FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end, ROLLUP (a)", 3, 134, "ROLLUP is not supported"},
		{"SELECT a, b, COUNT(*) FROM s [ROWS 4] GROUP BY cube(a, b)", 3, 48, "CUBE is not supported"},
	})
}

// TestErrorsIntersectExcept: Flink's INTERSECT and EXCEPT were read as
// FROM's alias, and the SELECT after them blamed.
func TestErrorsIntersectExcept(t *testing.T) {
	checkRefusals(t, []docRefusal{
		{"SELECT a FROM s INTERSECT SELECT a FROM s", 3, 17, "INTERSECT is not supported in a streaming query"},
		{"SELECT a FROM s WHERE a > 1 EXCEPT ALL SELECT a FROM s", 3, 29, "EXCEPT is not supported in a streaming query"},
	})
	// still names, after AS
	_, err := Compile(base + "SELECT a AS except FROM s AS intersect WHERE intersect.a > 1")
	assert.NoError(t, err)
}

// TestErrorsExists: Flink's EXISTS (SELECT ...) was a syntax error at
// the SELECT, where IN (SELECT ...) and scalar subqueries are refused as
// subqueries.
func TestErrorsExists(t *testing.T) {
	checkRefusals(t, []docRefusal{
		{"SELECT a FROM s WHERE EXISTS (SELECT b FROM s AS x WHERE x.a = s.a)", 3, 23, "EXISTS (SELECT ...) is not supported: a subquery in an expression (a subquery may stand in FROM)"},
		{"SELECT a FROM s WHERE NOT EXISTS (SELECT b FROM s)", 3, 27, "EXISTS (SELECT ...) is not supported"},
	})
}

// TestErrorsWith: Flink's WITH name AS (SELECT ...) SELECT ... was a
// syntax error ("expected a statement, found 'WITH'").
func TestErrorsWith(t *testing.T) {
	const msg = "WITH (a common table expression) is not supported: declare it as a view, CREATE VIEW name AS SELECT ..., before the query"
	checkRefusals(t, []docRefusal{
		{"WITH big AS (SELECT a, b + 1 AS c FROM s) SELECT a, c FROM big", 3, 1, msg},
		{"CREATE VIEW v AS WITH big AS (SELECT a FROM s) SELECT a FROM big", 3, 18, msg},
		{"SELECT a FROM (WITH big AS (SELECT a FROM s) SELECT a FROM big) AS x", 3, 16, msg},
	})
}

// TestErrorsSimilarTo: Flink's SIMILAR TO and RisingWave's ILIKE were
// read as an alias, and the token after them blamed.
func TestErrorsSimilarTo(t *testing.T) {
	checkRefusals(t, []docRefusal{
		{"SELECT k SIMILAR TO 'v(iew|isit)' AS m FROM s", 3, 10, "SIMILAR TO is not supported: LIKE is ('%' any characters, '_' one)"},
		{"SELECT a FROM s WHERE CAST(k AS VARCHAR) NOT SIMILAR TO 'c%'", 3, 46, "SIMILAR TO is not supported"},
		{"SELECT a FROM s WHERE CAST(k AS VARCHAR) ILIKE 'C%'", 3, 42, "ILIKE is not supported: LOWER(s) LIKE 'pattern' in lower case"},
		{"SELECT a FROM s WHERE CAST(k AS VARCHAR) NOT ILIKE 'C%'", 3, 46, "ILIKE is not supported"},
	})
	// still names
	_, err := Compile(base + "SELECT a similar, b ilike FROM s")
	assert.NoError(t, err)
}

// TestErrorsWindowTVFAlone: SELECT * FROM TABLE(TUMBLE(...)), which gives
// each row its window's bounds in Flink and RisingWave, was refused as a
// window that "does nothing".
func TestErrorsWindowTVFAlone(t *testing.T) {
	const msg = "a window table function without an aggregation (each row with its window_start and window_end) is not supported: aggregate over it (GROUP BY window_start, window_end, ...) or remove the window"
	checkRefusals(t, []docRefusal{
		{"SELECT * FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(ts), INTERVAL '10' MINUTES))", 3, 21, msg},
		{"SELECT a, window_start FROM HOP(s, ts, INTERVAL '1' SECOND, INTERVAL '2' SECOND)", 3, 29, msg},
		{"SELECT a FROM SESSION(s, ts, INTERVAL '1' SECOND)", 3, 15, msg},
		{"SELECT a FROM s [ROWS 10]", 3, 17, "a window in a query without aggregates does nothing"},
	})
}

// TestErrorsGroupByConstant: sql/doc.go refuses GROUP BY a constant, but
// an integer or string constant was taken as a key; RisingWave's GROUP BY
// 1, 2 (positions in the select list) then grouped by nothing, and the
// select list's columns were blamed as not in GROUP BY.
func TestErrorsGroupByConstant(t *testing.T) {
	checkRefusals(t, []docRefusal{
		{"SELECT window_start, a, COUNT(*) FROM TUMBLE(s, ts, INTERVAL '1' SECOND) GROUP BY 1, 2", 3, 83, "GROUP BY 1: a constant is not a group key (nor a position in the select list: name the column)"},
		{"SELECT a, COUNT(*) FROM s [ROWS 4] GROUP BY a, 'x'", 3, 48, "GROUP BY 'x': a constant is not a group key"},
		{"SELECT a, COUNT(*) FROM s [ROWS 4] GROUP BY a, NULL", 3, 48, "GROUP BY NULL: a constant is not a group key"},
	})
}

// TestErrorsValuesOffsetFetch: Flink's VALUES (in FROM, as a statement,
// after INSERT INTO), OFFSET n [ROWS] and FETCH FIRST|NEXT n ROWS ONLY
// were syntax errors at the wrong token (VALUES as "expected SELECT",
// OFFSET and FETCH read as FROM's alias and the token after them
// blamed); each is refused at its construct, as LIMIT is, wherever a
// query ends (after FROM, WHERE, GROUP BY, in a subquery or a view).
func TestErrorsValuesOffsetFetch(t *testing.T) {
	const values = "VALUES is not supported: a query reads a source, a table or a view (declare a table of the rows, connector = 'file')"
	checkRefusals(t, []docRefusal{
		{"SELECT * FROM (VALUES (1, 2), (3, 4)) AS v(a, b)", 3, 16, values},
		{"SELECT a FROM s JOIN (VALUES (1)) AS v(x) ON s.a = v.x", 3, 23, values},
		{"VALUES (1, 2)", 3, 1, values},
		{"INSERT INTO t VALUES (1, 2)", 3, 15, values},
		{"CREATE VIEW v AS VALUES (1)", 3, 18, values},
		{"SELECT a FROM s FETCH FIRST 3 ROWS ONLY", 3, 17, "FETCH FIRST is not supported in a streaming query"},
		{"SELECT a FROM s WHERE a > 1 FETCH NEXT 3 ROW ONLY", 3, 29, "FETCH NEXT is not supported in a streaming query"},
		{"SELECT a FROM s OFFSET 5", 3, 17, "OFFSET is not supported in a streaming query"},
		{"SELECT a FROM s [ROWS 4] OFFSET 5 ROWS FETCH FIRST 2 ROWS ONLY", 3, 26, "OFFSET is not supported in a streaming query"},
		{"SELECT a, COUNT(*) FROM s [ROWS 4] GROUP BY a OFFSET 3", 3, 47, "OFFSET is not supported in a streaming query"},
		{"SELECT a FROM (SELECT a FROM s OFFSET 3) AS x", 3, 32, "OFFSET is not supported in a streaming query"},
		{"CREATE VIEW v AS SELECT a FROM s FETCH FIRST 1 ROW ONLY", 3, 34, "FETCH FIRST is not supported in a streaming query"},
		// LIMIT as before: refused at LIMIT wherever it stands
		{"SELECT a FROM s LIMIT 3 OFFSET 2", 3, 17, "LIMIT is not supported in a streaming query"},
		{"SELECT a FROM (SELECT a FROM s LIMIT 3) AS x", 3, 32, "LIMIT is not supported in a streaming query"},
		{"INSERT INTO t SELECT u, u FROM s LIMIT 1", 3, 34, "LIMIT is not supported in a streaming query"},
	})
	// still names, after AS or quoted
	for _, q := range []string{"SELECT a AS fetch FROM s AS offset", "SELECT a AS \"values\" FROM s AS \"fetch\""} {
		_, err := Compile(base + q)
		assert.NoError(t, err, q)
	}
}

// TestErrorsDoubleColonCast: RisingWave's x::INT was "unexpected
// character ':'".
func TestErrorsDoubleColonCast(t *testing.T) {
	checkRefusals(t, []docRefusal{
		{"SELECT a::BIGINT AS b FROM s", 3, 9, "x::type is not supported: write CAST(x AS type)"},
		{"SELECT a FROM s WHERE a = 1 : 2", 3, 29, "unexpected character ':'"},
	})
}

// TestErrorsNamedTVFArguments: Flink's TUMBLE(DATA => TABLE src, ...)
// was a syntax error at DATA.
func TestErrorsNamedTVFArguments(t *testing.T) {
	checkRefusals(t, []docRefusal{
		{"SELECT COUNT(*) FROM TABLE(TUMBLE(DATA => TABLE s, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL '10' MINUTES))", 3, 35, "named arguments (DATA => ...) are not supported: pass them in order, TUMBLE(TABLE src, DESCRIPTOR(time_col), ...)"},
		{"SELECT COUNT(*) FROM TABLE(HOP(data => TABLE s, timecol => DESCRIPTOR(ts), slide => INTERVAL '1' MINUTE, size => INTERVAL '10' MINUTES))", 3, 32, "named arguments (DATA => ...) are not supported: pass them in order, HOP("},
	})
}

// TestErrorsNexmarkForms: the forms of Nexmark's queries that saber-hx
// does not run are refused at the construct, saying what it is (q4's
// comma join; PARTITIONED BY on a table that is read), where the parser
// blamed the token after them. (q23's second JOIN runs: compile_chain.go.)
func TestErrorsNexmarkForms(t *testing.T) {
	const src = "CREATE SOURCE s (ts BIGINT, k INT) WITH (connector = 'stdin', format = 'csv');\n"
	for _, tc := range []struct {
		text string
		col  int
		msg  string
	}{
		{src + "SELECT a.k FROM s AS a, s AS b WHERE a.k = b.k", 23, "FROM a, b (a join written as a list, its condition in WHERE) is not supported"},
		{"CREATE TABLE o (k INT) PARTITIONED BY (k) WITH (connector = 'filesystem', path = 'o')", 24, "table o: PARTITIONED BY is for a filesystem sink table that INSERT INTO writes"},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			e := compileErr(t, tc.text)
			assert.Contains(t, e.Msg, tc.msg)
			assert.Equal(t, tc.col, e.Column, e.Caret(tc.text))
		})
	}
}

// TestFileURIPaths: a file connector's path may be a file: URI as Flink's
// filesystem connector takes it (file:///p, file://localhost/p, Java's
// file:/p); a file of another host is refused at the value.
func TestFileURIPaths(t *testing.T) {
	for uri, want := range map[string]string{"file:///tmp/a.csv": "/tmp/a.csv", "file://localhost/tmp/a.csv": "/tmp/a.csv", "file:/tmp/a.csv": "/tmp/a.csv", "/tmp/a.csv": "/tmp/a.csv", "a.csv": "a.csv"} {
		p, err := Compile("CREATE TABLE t (ts BIGINT, k INT) WITH (connector = 'filesystem', path = '" + uri + "', format = 'csv');\nSELECT k FROM t;")
		require.NoError(t, err, uri)
		assert.Equal(t, want, p.Sources[0].Path, uri)
	}
	text := "CREATE SOURCE s (ts BIGINT) WITH (connector = 'file', path = 'file://nas/a.csv', format = 'csv')"
	e := compileErr(t, text)
	assert.Contains(t, e.Msg, "path = 'file://nas/a.csv': a file of another host")
	assert.Equal(t, 62, e.Column, e.Caret(text))
}

// TestRowsWindowOverDelayedView: a ROWS window over a source with a
// WATERMARK delay is refused (it counts tuples as they come, and cannot
// wait a delay in time); over a view that passes the source's tuples on
// (filtered, projected, a lookup join's), which time windows wait the
// delay for, it was accepted. It is refused there too, at the window,
// naming the view and its source's delay; a view of an aggregation,
// whose rows come in window order, takes one.
func TestRowsWindowOverDelayedView(t *testing.T) {
	const src = "CREATE SOURCE d (ts TIMESTAMP(3), a INT, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) WITH (connector = 'stdin', format = 'json');\n"
	const msg = "has a watermark delay, in time: a ROWS window counts tuples, so it cannot honour it (drop the delay, or use a time window)"
	for _, tc := range []struct {
		text      string
		line, col int
		msg       string
	}{
		{"SELECT COUNT(*) FROM d [ROWS 4]", 2, 24, "source d " + msg},
		{"CREATE VIEW v AS SELECT * FROM d WHERE a > 1;\nSELECT COUNT(*) FROM v [ROWS 4]", 3, 24, "view v (its source's WATERMARK) " + msg},
		{"CREATE VIEW v AS SELECT ts, a + 1 AS b FROM d;\nSELECT SUM(b) FROM v [ROWS 4 SLIDE 2]", 3, 22, "view v (its source's WATERMARK) " + msg},
		{"CREATE VIEW v AS SELECT * FROM d;\nCREATE VIEW w AS SELECT ts, a FROM v WHERE a < 9;\nSELECT a, COUNT(*) FROM w [ROWS 4] GROUP BY a", 4, 27, "view w (its source's WATERMARK) " + msg},
	} {
		e := compileErr(t, src+tc.text)
		assert.Equal(t, tc.line, e.Line, tc.text)
		assert.Equal(t, tc.col, e.Column, tc.text)
		assert.Contains(t, e.Msg, tc.msg, tc.text)
	}
	_, err := Compile(src + "CREATE VIEW v AS SELECT window_start, COUNT(*) AS n FROM TUMBLE(d, ts, INTERVAL '1' SECOND) GROUP BY window_start;\nSELECT SUM(n) FROM v [ROWS 4]")
	assert.NoError(t, err)
	_, err = Compile("CREATE SOURCE n (ts TIMESTAMP(3), a INT, WATERMARK FOR ts AS ts) WITH (connector = 'stdin', format = 'json');\nCREATE VIEW v AS SELECT * FROM n WHERE a > 1;\nSELECT COUNT(*) FROM v [ROWS 4]")
	assert.NoError(t, err, "no delay")
}

// TestLegacyOptionErrorsNameWrittenOption: a WITH list of Flink's
// descriptors of before 1.11 ('connector.type', 'connector.path',
// 'format.type', 'connector.topic', 'connector.properties.*') is read
// under the new names, but an error about one of its options named the
// new name (path, format, properties.sasl.mechanism), which the text does
// not hold; it names the option as written, at it.
func TestLegacyOptionErrorsNameWrittenOption(t *testing.T) {
	const kafka = "CREATE TABLE x (ts BIGINT) WITH ('connector.type' = 'kafka', 'connector.topic' = 't', 'connector.properties.bootstrap.servers' = 'b:9092'"
	for _, tc := range []struct {
		text string
		col  int
		msg  string
	}{
		{"CREATE TABLE x (ts BIGINT) WITH ('connector.type' = 'filesystem', 'connector.path' = 'file://nas/a.csv', 'format.type' = 'csv'); SELECT ts FROM x", 86, "connector.path = 'file://nas/a.csv': a file of another host"},
		{"CREATE TABLE x (ts BIGINT) WITH ('connector.type' = 'filesystem', 'connector.path' = 'a.csv', 'format.type' = 'xml'); SELECT ts FROM x", 111, "format.type = 'xml' is not valid for a file source (valid: binary, csv, json)"},
		{"CREATE TABLE x (ts BIGINT) WITH ('connector.type' = 'filesystem', 'connector.path' = '', 'format.type' = 'csv'); SELECT ts FROM x", 86, "option connector.path is empty"},
		{"CREATE TABLE x (ts BIGINT) WITH ('connector.type' = '', 'connector.path' = 'a.csv'); SELECT ts FROM x", 53, "option connector.type is empty"},
		{"CREATE TABLE x (ts BIGINT) WITH ('connector.type' = 'filesystem', 'connector.path' = 'a.csv', 'format.type' = 'json', 'header' = 'true'); SELECT ts FROM x", 119, "option header applies to format.type = 'csv', not 'json'"},
		{"CREATE TABLE x (ts BIGINT) WITH ('connector.type' = 'filesystem', 'connector.path' = 'a.csv', 'format.type' = 'csv', 'connector.topic' = 't'); SELECT ts FROM x", 118, "unknown option connector.topic for a file source"},
		{"CREATE TABLE x (ts BIGINT) WITH ('connector.type' = 'stdin', 'connector.path' = 'a.csv'); SELECT ts FROM x", 62, "unknown option connector.path for a stdin source"},
		{"CREATE TABLE x (ts BIGINT) WITH ('connector.type' = 'kafka', 'connector.topic' = '', 'connector.properties.bootstrap.servers' = 'b:9092'); SELECT ts FROM x", 82, "option connector.topic is empty"},
		{"CREATE TABLE x (ts BIGINT) WITH ('connector.type' = 'kafka', 'connector.topic' = 'a b', 'connector.properties.bootstrap.servers' = 'b:9092'); SELECT ts FROM x", 84, "connector.topic = 'a b': character ' ' is not allowed"},
		{"CREATE TABLE x (ts BIGINT) WITH ('connector.type' = 'kafka', 'connector.topic' = 't', 'connector.properties.bootstrap.servers' = 'b'); SELECT ts FROM x", 131, "connector.properties.bootstrap.servers = 'b': broker 'b' is not host:port"},
		{kafka + ", 'connector.properties.sasl.mechanism' = 'PLAIN'); SELECT ts FROM x", 140, "option connector.properties.sasl.mechanism applies to properties.security.protocol 'SASL_PLAINTEXT' or 'SASL_SSL', not 'PLAINTEXT'"},
		{kafka + ", 'connector.properties.security.protocol' = 'SASL_SSL', 'connector.properties.sasl.mechanism' = 'PLAIN'); SELECT ts FROM x", 183, "connector.properties.security.protocol = 'SASL_SSL' needs properties.sasl.username"},
		{kafka + ", 'connector.properties.security.protocol' = 'BOGUS'); SELECT ts FROM x", 183, "connector.properties.security.protocol = 'BOGUS' is not valid"},
		{kafka + ", 'connector.properties.group.id' = ''); SELECT ts FROM x", 174, "option connector.properties.group.id is empty"},
		{kafka + ", 'connector.properties.auto.offset.reset' = 'earliest'); SELECT ts FROM x", 140, "option connector.properties.auto.offset.reset applies to scan.startup.mode = 'group-offsets'"},
		{kafka + ", 'connector.properties.foo' = 'x'); SELECT ts FROM x", 140, "unknown option connector.properties.foo for a kafka source"},
		{"CREATE SOURCE s (ts BIGINT) WITH (connector = 'stdin'); CREATE TABLE o (ts BIGINT) WITH ('connector.type' = 'filesystem', 'connector.path' = 'file://nas/o.csv', 'format.type' = 'csv'); INSERT INTO o SELECT ts FROM s", 142, "connector.path = 'file://nas/o.csv': a file of another host"},
		{"CREATE SOURCE s (ts BIGINT) WITH (connector = 'stdin'); CREATE TABLE o (ts BIGINT) WITH ('connector.type' = 'print', 'connector.path' = 'o.csv'); INSERT INTO o SELECT ts FROM s", 118, "unknown option connector.path for a print sink"},
		{"CREATE SOURCE s (ts BIGINT) WITH (connector = 'stdin'); CREATE TABLE o (ts BIGINT) WITH ('connector.type' = 'kafka', 'connector.topic' = 't', 'format.type' = 'xml', 'connector.properties.bootstrap.servers' = 'b:1'); INSERT INTO o SELECT ts FROM s", 159, "format.type = 'xml' is not valid for a kafka sink"},
	} {
		e := compileErr(t, tc.text)
		assert.Contains(t, e.Msg, tc.msg, tc.text)
		assert.Equal(t, tc.col, e.Column, e.Caret(tc.text))
	}
	// the new names are still named so
	e := compileErr(t, "CREATE TABLE x (ts BIGINT) WITH ('connector' = 'filesystem', 'path' = 'a.csv', 'format' = 'xml'); SELECT ts FROM x")
	assert.Contains(t, e.Msg, "format = 'xml' is not valid for a file source")
}
