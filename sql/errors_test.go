package sql

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// base declares a stdin source (binary, laid out as declared: ts 0, a 8,
// b 12, f 20, d 24, u 32, k 48; 52 bytes) and a table, on lines 1 and 2;
// the statements under test start on line 3.
const base = "CREATE SOURCE s (ts BIGINT, a INT, b BIGINT, f REAL, d DOUBLE, u UUID, k ENUM('view','click','purchase')) WITH (connector = 'stdin');\n" +
	"CREATE TABLE t (u UUID NOT NULL, v UUID NOT NULL) WITH (connector = 'file', path = 't.csv');\n"

func compileErr(t *testing.T, text string) *Error {
	t.Helper()
	_, err := Compile(text)
	require.Error(t, err)
	e, ok := err.(*Error)
	require.True(t, ok, "%T: %v", err, err)
	return e
}

// TestErrors: every error names its line and column and says what is
// wrong or expected; the statements are on line 3 unless the case starts
// with "!" (then the text stands alone, without base).
func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		text      string
		line, col int
		msg       string
	}{
		// lexical
		{"SELECT 'x FROM s", 3, 8, "string not closed: expected a closing quote (')"},
		{"SELECT a FROM s WHERE a = 1 # 2", 3, 29, `unexpected character '#'`},
		{"SELECT a FROM s /* no end", 3, 17, "comment not closed: expected '*/'"},
		{"SELECT 12ab FROM s", 3, 10, "expected a blank or an operator after the number 12"},
		{"SELECT \"\" FROM s", 3, 8, "empty quoted name"},
		// syntax
		{"!CREATE SOURCE x (a INT FROM", 1, 24, "expected ',' or ')' after the column list, found 'FROM'"},
		{"!", 1, 1, "expected a statement (CREATE SOURCE, CREATE TABLE, CREATE VIEW, CREATE SINK, INSERT INTO or SELECT), found the end of the input"},
		{"!DROP TABLE t", 1, 1, "expected a statement (CREATE SOURCE, CREATE TABLE, CREATE VIEW, CREATE SINK, INSERT INTO or SELECT), found 'DROP'"},
		{"CREATE INDEX i", 3, 8, "expected SOURCE, TABLE, VIEW, SINK or FUNCTION after CREATE, found 'INDEX'"},
		{"SELECT a FROM s WHERE", 3, 22, "expected an expression, found the end of the input"},
		{"SELECT a, FROM s", 3, 11, "expected an expression, found 'FROM'"},
		{"SELECT a FROM s; SELECT", 3, 24, "expected an expression, found the end of the input"},
		{"SELECT a FROM s SELECT a FROM s", 3, 17, "expected ';' or the end of the input after the statement, found 'SELECT'"},
		{"SELECT a FROM s WHERE (a = 1", 3, 29, "expected ')' to close the parenthesis, found the end of the input"},
		{"SELECT a FROM s WHERE a < 1 < 2", 3, 29, "comparisons do not chain"},
		{"SELECT a b c FROM s", 3, 12, "expected ',' or FROM after the select list, found 'c'"},
		{"SELECT DISTINCT a FROM s", 3, 8, "SELECT DISTINCT is not supported yet"},
		{"SELECT COUNT(DISTINCT a) FROM s [ROWS 2]", 3, 23, "COUNT(DISTINCT ...) over a ROWS window is not supported: it needs a time window"},
		{"SELECT SUM(*) FROM s [ROWS 2]", 3, 12, "SUM(*): only COUNT takes *"},
		{"SELECT FOO(a) FROM s", 3, 8, "unknown function FOO (valid: ABS, AVG, CAST, CEIL, CEILING, CHARACTER_LENGTH, CHAR_LENGTH, COALESCE, CONCAT, COUNT,"},
		{"SELECT LOWER(a) FROM s", 3, 8, "LOWER(a): argument 1 is integer, not a string"},
		{"SELECT a FROM s LEFT JOIN t ON s.u = t.u", 3, 17, "LEFT JOIN is not supported: only inner joins"},
		{"SELECT a FROM s ORDER BY a", 3, 17, "ORDER is not supported in a streaming query"},
		{"SELECT a FROM s JOIN t s.u = t.u", 3, 25, "expected ON and the join condition, found '.'"},
		{"SELECT a FROM s [RANGE 10]", 3, 24, "expected INTERVAL 'n' unit, found '10'"},
		{"SELECT a FROM s [RANGE INTERVAL '10' WEEK]", 3, 38, "expected a unit (MILLISECOND, SECOND, MINUTE, HOUR or DAY) after INTERVAL '10', found 'WEEK'"},
		{"SELECT a FROM s [RANGE INTERVAL '-1' SECOND]", 3, 33, "INTERVAL '-1': the length must be a positive integer"},
		{"SELECT a FROM s [ROWS 0]", 3, 23, "the number of rows after ROWS: 0 is not a positive 64-bit integer"},
		{"SELECT a FROM s [ROWS 4", 3, 24, "expected SLIDE or ']' after the window size, found the end of the input"},
		{"SELECT a FROM s [SIZE 4]", 3, 18, "expected RANGE or ROWS after '[', found 'SIZE'"},
		{"SELECT COUNT(*) FROM TUMBLE(s, ts)", 3, 34, "expected ',' and the window size (INTERVAL ...) after the event-time column, found ')'"},
		{"SELECT COUNT(*) FROM HOP(s, ts, INTERVAL '1' SECOND)", 3, 52, "expected ',' and the window size after HOP's slide, found ')'"},
		{"SELECT a FROM s WHERE a = 99999999999999999999", 3, 27, "integer 99999999999999999999 out of the 64-bit range"},
		{"!CREATE SOURCE x (ts BIGINT, a BLOB) WITH (connector = 'stdin')", 1, 31, "expected a type (INT, BIGINT, DOUBLE, DECIMAL(p, s), VARCHAR, TIMESTAMP(3), BOOLEAN, UUID, BYTES(n), ENUM(...), ...), found 'BLOB'"},
		{"!CREATE SOURCE x (ts BIGINT, a BYTES(0)) WITH (connector = 'stdin')", 1, 37, "BYTES(0): the size must be in [1, 65536]"},
		// an option under Flink's old name and its new one: the second was dropped unsaid
		{"!CREATE TABLE x (ts BIGINT) WITH ('connector.type' = 'filesystem', 'connector.path' = 'a.csv', 'path' = 'b.csv', 'format.type' = 'csv'); SELECT ts FROM x", 1, 95, "option path given twice: connector.path is Flink's old name of path"},
		{"!CREATE TABLE x (ts BIGINT) WITH ('connector' = 'filesystem', 'connector.type' = 'filesystem', 'path' = 'a.csv'); SELECT ts FROM x", 1, 62, "option connector given twice: connector.type is Flink's old name of connector"},
		{"!CREATE SOURCE x (ts BIGINT, a ENUM('v', 'v')) WITH (connector = 'stdin')", 1, 41, "ENUM label 'v' given twice"},
		{"!CREATE SOURCE x (ts BIGINT) (connector = 'stdin')", 1, 29, "expected WITH (connector = ...) after the column list of x, found '('"},
		{"!CREATE SOURCE x (ts BIGINT) WITH (connector 'stdin')", 1, 45, "expected '=' after the option connector, found 'stdin'"},
		{"!CREATE SOURCE x (ts BIGINT) WITH (connector = 'stdin', connector = 'file')", 1, 56, "option connector given twice"},
		{"!CREATE SOURCE x (ts BIGINT, ts INT) WITH (connector = 'stdin')", 1, 29, "column ts declared twice in source x"},
		{"!CREATE SOURCE select (ts BIGINT) WITH (connector = 'stdin')", 1, 15, "expected the source's name, found 'select'"},
		{"!CREATE TABLE x (a UUID, WATERMARK FOR a AS a) WITH (connector = 'file', path = 'x')", 1, 25, "a table has no event time: WATERMARK belongs in CREATE SOURCE"},
		{"CREATE SINK o AS SELECT a FROM s", 3, 33, "expected WITH (connector = ...) after the sink's query, found the end of the input"},
		{"CREATE VIEW v SELECT a FROM s", 3, 15, "expected AS SELECT ... after the view's name, found 'SELECT'"},
		// options
		{"!CREATE SOURCE q (ts BIGINT) WITH (path = 'x')", 1, 29, "source q needs the option connector ('file', 'stdin', 'generator', 'kafka', 'nexmark' or 'go')"},
		{"!CREATE SOURCE q (ts BIGINT) WITH (connector = 'file')", 1, 29, "a file source needs the option path (the file to read)"},
		{"!CREATE SOURCE q (ts BIGINT) WITH (connector = 'stdin', colour = 'red')", 1, 56, "unknown option colour for a stdin source (valid: connector, format, tuple_size, time_unit, on_error, header)"},
		{"!CREATE SOURCE q (ts BIGINT) WITH (connector = 'stdin', format = 'xml')", 1, 65, "format = 'xml' is not valid for a stdin source (valid: binary, csv, json)"},
		{"!CREATE SOURCE q (ts BIGINT) WITH (connector = 'stdin', on_error = 'ignore')", 1, 67, "on_error = 'ignore' is not valid for a stdin source (valid: fail, skip)"},
		{"!CREATE SOURCE q (ts BIGINT) WITH (connector = 'stdin', time_unit = 'min')", 1, 68, "time_unit = 'min' is not valid for a stdin source (valid: s, ms, us, ns)"},
		{"!CREATE SOURCE q (ts BIGINT) WITH (connector = 'stdin', tuple_size = 'big')", 1, 69, "tuple_size = 'big': must be an integer in [1, 1048576]"},
		{"!CREATE SOURCE q (ts BIGINT, a INT) WITH (connector = 'stdin', tuple_size = 8)", 1, 76, "tuple_size 8 is smaller than the 12 bytes of the columns of q"},
		{"!CREATE SOURCE q (ts BIGINT) WITH (connector = 'stdin', format = 'csv', tuple_size = 8)", 1, 72, "option tuple_size applies to format = 'binary'"},
		{"!CREATE SOURCE q (ts BIGINT) WITH (connector = 'stdin', header = 'true')", 1, 56, "option header applies to format = 'csv', not 'binary'"},
		{"!CREATE SOURCE q (ts BIGINT) WITH (connector = 'stdin', format = 'csv', header = 'yes')", 1, 81, "header = 'yes' is not valid for a stdin source (valid: true, false)"},
		{"!CREATE SOURCE q (ts BIGINT) WITH (connector = 'socket')", 1, 47, "unknown connector 'socket' for a source (valid: file, stdin, generator, kafka, nexmark, go)"},
		{"!CREATE SOURCE q (ts BIGINT) WITH (connector = 'generator', workload = 'nope')", 1, 71, `unknown workload "nope"`},
		{"!CREATE SOURCE q (ts BIGINT, a INT) WITH (connector = 'generator', workload = 'cm1')", 1, 78, "source q does not have the layout of workload cm1's tuples: 2 attributes, want 12"},
		{"!CREATE SOURCE q (ts BIGINT) WITH (connector = 'generator', workload = 'cm1', seed = '-1')", 1, 85, "seed = '-1': must be an unsigned 64-bit integer"},
		{"!CREATE TABLE x (a UUID) WITH (connector = 'file', path = 'x', format = 'binary')", 1, 72, "format = 'binary' is not valid for a file table (valid: csv, json)"},
		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'file')", 3, 34, "a file sink needs the option path (the file to write)"},
		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'socket')", 3, 52, "unknown connector 'socket' for a sink (valid: file, stdout, kafka, redis, blackhole, print)"},
		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'stdout', path = 'x')", 3, 62, "unknown option path for a stdout sink (valid: connector, format)"},
		// names
		{"SELECT zz FROM s", 3, 8, "unknown column zz (valid: s.ts, s.a, s.b, s.f, s.d, s.u, s.k)"},
		{"SELECT x.a FROM s", 3, 8, "unknown name x in x.a (the query reads s)"},
		{"SELECT a FROM nope", 3, 15, "unknown source or view nope (define it above with CREATE SOURCE or CREATE VIEW)"},
		{"SELECT a FROM t", 3, 15, "t is a table: a query reads a stream (a source or a view) and can JOIN a table"},
		{"CREATE VIEW s AS SELECT a FROM s", 3, 13, "s is already defined (as a source)"},
		{"SELECT a FROM v; CREATE VIEW v AS SELECT a FROM s", 3, 15, "unknown source or view v"},
		{"SELECT * FROM s [ROWS 4] AS x JOIN s [ROWS 4] AS y ON a < 1", 3, 55, "column a is ambiguous: it is in both x and y (qualify it)"},
		// time and windows
		{"SELECT COUNT(*) FROM TUMBLE(s, b, INTERVAL '1' SECOND)", 3, 32, "b is not the event time of source s, which is ts (a stream has one event time)"},
		{"SELECT COUNT(*) FROM HOP(s, ts, INTERVAL '2' SECOND, INTERVAL '1' SECOND)", 3, 33, "the slide INTERVAL '2' SECOND is larger than the size INTERVAL '1' SECOND (valid: 0 < slide <= size)"},
		{"SELECT COUNT(*) FROM s [RANGE INTERVAL '1' SECOND SLIDE INTERVAL '2' SECOND]", 3, 51, "the slide INTERVAL '2' SECOND is larger than the size"},
		{"SELECT a FROM s [ROWS 2 SLIDE 3]", 3, 25, "SLIDE 3 is larger than ROWS 2 (valid: 0 < slide <= size)"},
		{"!CREATE SOURCE q (ts BIGINT) WITH (connector = 'stdin', time_unit = 's');\nSELECT COUNT(*) FROM q [RANGE INTERVAL '1500' MILLISECONDS]", 2, 31, "the window size INTERVAL '1500' MILLISECONDS is not a whole number of the event time's unit (s)"},
		{"SELECT COUNT(*) FROM s [RANGE INTERVAL '9223372036854775807' HOUR]", 3, 31, "the window size INTERVAL '9223372036854775807' HOUR is too long"},
		{"!CREATE SOURCE q (a INT, ts BIGINT) WITH (connector = 'stdin')", 1, 18, "source q has no event time: its first column must be a BIGINT"},
		{"!CREATE SOURCE q (a INT, ts BIGINT, WATERMARK FOR ts AS ts) WITH (connector = 'stdin')", 1, 25, "the event time ts of binary source q (from its WATERMARK) must be its first column: the query model reads the event time as an int64 at offset 0"},
		{"!CREATE SOURCE q (ts INT, WATERMARK FOR ts AS ts) WITH (connector = 'stdin', format = 'csv')", 1, 18, "the event time ts of source q (from its WATERMARK) must be a BIGINT or a TIMESTAMP, not INT"},
		{"!CREATE SOURCE q (ts BIGINT, WATERMARK FOR zz AS zz) WITH (connector = 'stdin')", 1, 43, "no column zz in source q"},
		{"!CREATE SOURCE q (ts BIGINT, WATERMARK FOR ts AS b) WITH (connector = 'stdin')", 1, 49, "the watermark must be ts or ts - INTERVAL '...' unit"},
		{"!CREATE SOURCE q (ts BIGINT, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) WITH (connector = 'stdin');\nSELECT COUNT(*) FROM q [ROWS 10]", 2, 24, "source q has a watermark delay, in time: a ROWS window counts tuples"},
		{"!CREATE SOURCE q (ts BIGINT, WATERMARK FOR ts AS ts, WATERMARK FOR ts AS ts) WITH (connector = 'stdin')", 1, 53, "a second WATERMARK: a source has one event time"},
		{"!CREATE SOURCE q (ts BIGINT) WITH (connector = 'stdin');\nCREATE VIEW v AS SELECT ts, COUNT(*) AS n FROM q [ROWS 10] GROUP BY ts;\nSELECT SUM(n) FROM v [RANGE INTERVAL '1' SECOND]", 3, 22, "v's times are row positions (it is windowed by ROWS): a time window over it needs ROWS too"},
		// types and the query's shape
		{"SELECT SUM(u) FROM s [RANGE INTERVAL '1' SECOND]", 3, 12, "SUM(u): u is UUID, not a number"},
		{"SELECT a + u FROM s", 3, 12, "u is UUID, not a number"},
		{"SELECT a FROM s WHERE k = 'nope'", 3, 27, "'nope' is not a label of the ENUM (valid: view, click, purchase)"},
		{"SELECT a FROM s WHERE a = 'view'", 3, 27, "a string ('view') cannot be compared with a, which is INT (CAST one of them)"},
		{"SELECT a FROM s WHERE a", 3, 23, "WHERE needs a condition (a comparison), not a value"},
		{"SELECT a FROM s WHERE a = 1 AND b", 3, 33, "AND needs a condition (a comparison), not a value"},
		{"SELECT a FROM s WHERE (a = 1) + 1 = 2", 3, 26, "a condition is not a number"},
		{"SELECT a FROM s WHERE COUNT(*) > 1", 3, 23, "aggregates are not allowed in WHERE (use HAVING)"},
		{"SELECT COUNT(*) FROM s", 3, 22, "an aggregation needs a window: TUMBLE(s, ...), HOP(s, ...), s [RANGE ...], s [ROWS ...] or GROUP BY TUMBLE(time_col, ...)"},
		{"SELECT a, COUNT(*) FROM s [ROWS 10]", 3, 8, "a is neither in GROUP BY nor an aggregate"},
		{"SELECT a FROM s [ROWS 10]", 3, 17, "a window in a query without aggregates does nothing"},
		{"SELECT a AS x, b AS x FROM s", 3, 16, "output column x is named twice (give one an alias with AS)"},
		{"SELECT b AS a, a AS a FROM s", 3, 16, "output column a is named twice (give one an alias with AS)"},
		{"SELECT * FROM s [ROWS 2] GROUP BY a", 3, 8, "SELECT * in an aggregation: list the group columns and aggregates"},
		{"SELECT SUM(COUNT(*)) FROM s [ROWS 2]", 3, 12, "an aggregate cannot contain another aggregate"},
		{"SELECT f, COUNT(*) FROM s [ROWS 4] GROUP BY f", 3, 45, "GROUP BY f: a float is not a group key"},
		{"SELECT COUNT(*) FROM s [ROWS 4] GROUP BY a, a", 3, 45, "a is in GROUP BY twice"},
		{"SELECT COUNT(*) FROM s [ROWS 4] GROUP BY COUNT(*)", 3, 42, "aggregates are not allowed in GROUP BY"},
		{"SELECT COUNT(*) FROM s [ROWS 4] GROUP BY a, b, u", 3, 42, "group by: keys of 28 bytes; at most 16 bytes are supported"},
		{"SELECT a, COUNT(*) FROM s [ROWS 4] GROUP BY a HAVING b > 1", 3, 54, "HAVING can use aggregates, their aliases and GROUP BY columns; b is not in GROUP BY"},
		{"SELECT a / 2 AS h, COUNT(*) FROM s [ROWS 4] GROUP BY a / 2 HAVING h > 1", 3, 67, "HAVING can use a GROUP BY column, not the expression (a / 2)"},
		{"SELECT COUNT(*) AS n FROM s [ROWS 4] HAVING n", 3, 45, "HAVING needs a condition (a comparison), not a value"},
		// joins
		{"SELECT v, COUNT(*) FROM TUMBLE(s, ts, INTERVAL '1' SECOND) JOIN t ON s.a = t.u GROUP BY v", 3, 74, "the join keys s.a (INT) and t.u (UUID) do not match: a join with a table matches UUID or BYTES(n) columns of one size, integers, timestamps, or strings"},
		{"SELECT v, a, b, COUNT(*) FROM TUMBLE(s, ts, INTERVAL '1' SECOND) JOIN t ON s.u = t.u GROUP BY v, a, b", 3, 95, "group by: keys of 28 bytes; at most 16 bytes are supported"},
		{"SELECT COUNT(*) FROM s [ROWS 4] JOIN t ON s.u = t.u AND s.a = 1", 3, 53, "a join with table t needs ON stream.column = t.column"},
		{"SELECT COUNT(*) FROM s [ROWS 4] JOIN t ON t.u = t.v", 3, 47, "ON must compare a column of the stream (or an expression of them) with a column of table t"},
		{"SELECT a FROM s JOIN t ON s.a + 1 = t.u", 3, 35, "the join keys (s.a + 1) (BIGINT) and t.u (UUID) do not match"},
		{"SELECT a FROM s JOIN t ON s.a + t.u = t.v", 3, 33, "ON compares a column of table t with an expression that reads the table's u"},
		{"SELECT a FROM s JOIN t FOR SYSTEM_TIME AS OF s.ts ON s.u = t.u", 3, 46, "FOR SYSTEM_TIME AS OF ts: a temporal join of table t is at the stream's processing time"},
		{"SELECT * FROM s [ROWS 4] AS x JOIN s [ROWS 4] FOR SYSTEM_TIME AS OF x.ts AS y ON x.a < y.a", 3, 47, "FOR SYSTEM_TIME AS OF: s is a stream; a temporal join looks up a table"},
		{"SELECT a FROM s FOR SYSTEM_TIME AS OF s.ts", 3, 17, "FOR SYSTEM_TIME AS OF belongs to the table a stream joins"},
		{"SELECT a FROM s JOIN t FOR SYSTEM_TIME s.ts ON s.u = t.u", 3, 40, "expected FOR SYSTEM_TIME AS OF and a time column, found 's'"},
		{"SELECT COUNT(*) FROM s [ROWS 4] JOIN t [ROWS 4] ON s.u = t.u", 3, 40, "table t is static: it takes no window"},
		{"SELECT COUNT(*) FROM s [ROWS 4] JOIN t AS s ON s.u = s.u", 3, 38, "the stream and the table are both called s: give one an alias"},
		{"SELECT SUM(v) FROM TUMBLE(s, ts, INTERVAL '1' SECOND) JOIN t ON s.u = t.u", 3, 12, "SUM(v): v is UUID, not a number"},
		{"SELECT SUM(v) FROM s [ROWS 4] JOIN t ON s.u = t.u", 3, 22, "a ROWS window over a join with table t that groups by its columns (or uses several) is not supported"},
		{"!CREATE SOURCE s (ts BIGINT, u UUID, v INT) WITH (connector = 'stdin');\nCREATE TABLE t (u UUID, v UUID) WITH (connector = 'file', path = 't.csv');\nSELECT t.v, COUNT(*) FROM s [ROWS 4] JOIN t ON s.u = t.u GROUP BY t.v", 3, 43, "table t's column v has the name of a column of s: rename one of them"},
		{"!CREATE SOURCE s (ts BIGINT, u UUID) WITH (connector = 'stdin');\nCREATE TABLE t (u BYTES(8), v UUID) WITH (connector = 'file', path = 't.csv');\nSELECT v, COUNT(*) FROM s [ROWS 4] JOIN t ON s.u = t.u GROUP BY v", 3, 50, "the join keys differ in size: s.u is UUID, t.u is BYTES(8)"},
		{"SELECT * FROM s [ROWS 4] JOIN s [ROWS 4] ON s.a < s.a", 3, 31, "both sides of the join are called s: give them aliases"},
		{"SELECT * FROM s [ROWS 4] AS x JOIN s [ROWS 8] AS y ON x.a < y.a", 3, 38, "the two sides of a join need the same window, for now (row 4/4 and row 8/8)"},
		{"SELECT * FROM s AS x JOIN s [ROWS 4] AS y ON x.a < y.a", 3, 15, "a join of two streams needs a window on each side ([ROWS n], [RANGE ...], TUMBLE or HOP); s has none"},
		{"SELECT COUNT(*) FROM s [ROWS 4] AS x JOIN s [ROWS 4] AS y ON x.a < y.a", 3, 1, "an aggregation over a join of two streams needs a tumbling time window on both sides"},
		{"SELECT * FROM s [ROWS 4] AS x JOIN s [ROWS 4] AS y ON x.u = y.u", 3, 55, "x.u is UUID, not a number"},
		{"SELECT * FROM s [ROWS 4] AS x JOIN s [ROWS 4] AS y ON x.a < y.a WHERE SUM(x.a) > 1", 3, 71, "aggregates are not allowed in WHERE"},
	} {
		text := tc.text
		if strings.HasPrefix(text, "!") {
			text = text[1:]
		} else {
			text = base + text
		}
		t.Run(tc.msg, func(t *testing.T) {
			e := compileErr(t, text)
			assert.Equal(t, tc.line, e.Line, e.Caret(text))
			assert.Equal(t, tc.col, e.Column, e.Caret(text))
			assert.Contains(t, e.Msg, tc.msg)
			checkErrorPosition(t, text, e)
		})
	}
}

// checkErrorPosition: Offset, Line and Column agree and lie within text.
func checkErrorPosition(t *testing.T, text string, e *Error) {
	t.Helper()
	require.GreaterOrEqual(t, e.Offset, 0)
	require.LessOrEqual(t, e.Offset, len(text))
	p := position(text, e.Offset)
	assert.Equal(t, p.line, e.Line, "line of offset %d", e.Offset)
	assert.Equal(t, p.col, e.Column, "column of offset %d", e.Offset)
}

func TestErrorCaret(t *testing.T) {
	text := "CREATE SOURCE s (\n  ts BIGINT,\n\ta INT FROM"
	e := compileErr(t, text)
	assert.Equal(t, "line 3, column 8: expected ',' or ')' after the column list, found 'FROM'", e.Error())
	assert.Equal(t, "line 3, column 8: expected ',' or ')' after the column list, found 'FROM'\n  \ta INT FROM\n  \t      ^", e.Caret(text))
	// a multi-byte character counts as one column
	text = "SELECT é FROM"
	e = compileErr(t, text)
	assert.Equal(t, 1, e.Line)
	assert.Equal(t, 14, e.Column)
	assert.Equal(t, len(text), e.Offset)
	assert.Equal(t, e.Error()+"\n  SELECT é FROM\n               ^", e.Caret(text))
	// out of range: the message alone
	far := &Error{Line: 9, Column: 1, Msg: e.Msg}
	assert.Equal(t, far.Error(), far.Caret(text))
}

// TestErrorsIssue25: the refusals that remain of issue #25's SQL (sql/doc.go
// lists them), and its new errors, each at its construct; the statements
// are on line 5, after valuesBase.
func TestErrorsIssue25(t *testing.T) {
	for _, tc := range []struct {
		text      string
		line, col int
		msg       string
	}{
		{"SELECT DISTINCT k FROM e", 5, 8, "SELECT DISTINCT is not supported yet"},
		{"CREATE FUNCTION my_udf AS 'com.example.MyUdf' LANGUAGE JAVA", 5, 17, "CREATE FUNCTION my_udf: no function of that name: the built-in ones, and those a Go program registers (query.RegisterFunc), are"},
		{"SELECT SUM(DISTINCT n) FROM TUMBLE(e, ts, INTERVAL '1' SECOND)", 5, 8, "SUM(DISTINCT ...) is not supported: only COUNT(DISTINCT x) is"},
		{"SELECT COUNT(DISTINCT n), COUNT(DISTINCT m) FROM TUMBLE(e, ts, INTERVAL '1' SECOND)", 5, 27, "COUNT(DISTINCT n) and COUNT(DISTINCT m) in one query are not supported: one query counts the distinct values of one expression (count the others in another query)"},
		{"SELECT COUNT(DISTINCT n) FILTER (WHERE b) FROM TUMBLE(e, ts, INTERVAL '1' SECOND)", 5, 40, "COUNT(DISTINCT ...) FILTER (WHERE ...) is not supported: filter in WHERE, or count the distinct values in a view"},
		{"SELECT COUNT(DISTINCT n) FROM SESSION(e, ts, INTERVAL '1' SECOND)", 5, 23, "COUNT(DISTINCT ...) over SESSION windows is not supported: it needs TUMBLE, HOP or [RANGE ...] (count the distinct values per session in a view of sessions over (key, value) groups)"},
		{"SELECT k, COUNT(DISTINCT k) FROM TUMBLE(e, ts, INTERVAL '1' SECOND) GROUP BY k", 5, 26, "COUNT(DISTINCT k) of a GROUP BY key is 1 in every group: write COUNT(k) > 0 instead"},
		{"SELECT COUNT(*) FROM TABLE(CUMULATE(TABLE e, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '1' MINUTE))", 5, 28, "CUMULATE windows are not supported: use HOP (a sliding window) or TUMBLE"},
		{"SELECT COUNT(*) FROM TABLE(TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '1' SECOND))", 5, 79, "TUMBLE's offset argument is not supported: windows start at multiples of their slide from the epoch"},
		{"SELECT COUNT(*) OVER (PARTITION BY k) FROM e", 5, 17, "OVER: window functions (aggregates over a window of rows per row) are not supported; aggregate over TUMBLE, HOP or [RANGE ...] with GROUP BY"},
		{"SELECT n FROM e WHERE n IN (SELECT n FROM e)", 5, 29, "IN (SELECT ...) is not supported: a subquery in an expression (list the values)"},
		{"SELECT n FROM e WHERE n > (SELECT 1)", 5, 28, "a subquery in an expression is not supported (a subquery may stand in FROM)"},
		{"SELECT * FROM e AS a JOIN e AS b ON a.n < b.n", 5, 41, "this term compares the two sides of a regular join otherwise than as one column of each being equal: not supported"},
		{"SELECT * FROM e AS a JOIN e [RANGE INTERVAL '1' SECOND] AS b ON a.n = b.n", 5, 15, "a join of two streams needs a window on each side ([ROWS n], [RANGE ...], TUMBLE or HOP); e has none"},
		{"SELECT k, COUNT(*) FROM TABLE(SESSION(TABLE e, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end, k", 5, 121, "SESSION without PARTITION BY is one session over the whole stream, which GROUP BY k would cut into sessions per key: partition the sessions, SESSION(TABLE src PARTITION BY key, ...) with GROUP BY window_start, window_end and the key (Flink's rule), or group them, GROUP BY SESSION(time, gap), k"},
		{"SELECT COUNT(*) FROM TABLE(SESSION(TABLE e PARTITION BY k, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end", 5, 57, "SESSION(... PARTITION BY k, ...) needs k in GROUP BY too: the sessions are per PARTITION BY key, so GROUP BY holds window_start, window_end and exactly the PARTITION BY columns (Flink's rule)"},
		{"SELECT COUNT(*) FROM TABLE(SESSION(TABLE e PARTITION BY (k, m), DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end, k, n", 5, 141, "GROUP BY n over SESSION(... PARTITION BY k, m, ...): the sessions are per PARTITION BY key, so GROUP BY holds window_start, window_end and exactly the PARTITION BY columns (Flink's rule)"},
		{"SELECT COUNT(*) FROM SESSION(e PARTITION BY nope, ts, INTERVAL '1' SECOND) GROUP BY window_start, window_end", 5, 45, "unknown column nope (valid: e.ts, e.k, e.n, e.m, e.x, e.b, e.s, e.c, e.u)"},
		{"SELECT k, COUNT(*) FROM SESSION(e PARTITION BY k, k, ts, INTERVAL '1' SECOND) GROUP BY k", 5, 51, "k is in PARTITION BY twice"},
		{"SELECT k, COUNT(*) FROM SESSION(e PARTITION BY k, e.k, ts, INTERVAL '1' SECOND) GROUP BY k", 5, 51, "k is in PARTITION BY twice"},
		{"SELECT u.country, COUNT(*) FROM SESSION(e PARTITION BY u.country, ts, INTERVAL '1' SECOND) JOIN users AS u ON e.k = u.name GROUP BY window_start, window_end, u.country", 5, 56, "PARTITION BY u.country: the sessions are partitioned by the windowed stream's columns, and u.country is the joined table's"},
		{"SELECT COUNT(*) FROM TABLE(SESSION(TABLE e PARTITION BY f.k, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end, k", 5, 57, "unknown name f in f.k (the query reads e)"},
		{"SELECT * FROM SESSION(e, ts, INTERVAL '1' SECOND) AS a JOIN SESSION(e, ts, INTERVAL '1' SECOND) AS b ON a.n = b.n", 5, 15, "a join of two streams over SESSION windows is not supported: join over TUMBLE, HOP, [RANGE ...] or [ROWS ...]"},
		{"SELECT COUNT(*) FROM HOP(e, ts, INTERVAL '1' SECOND, INTERVAL '2' SECOND) AS a JOIN HOP(e, ts, INTERVAL '1' SECOND, INTERVAL '2' SECOND) AS b ON a.n = b.n", 5, 1, "an aggregation over a join of two streams needs a tumbling time window on both sides (TUMBLE or [RANGE size]): a sliding or ROWS window outputs a pair once per window that holds it"},
		{"SELECT CAST(n AS UUID) FROM e", 5, 18, "CAST to UUID is not supported (valid: the numeric types, VARCHAR, TIMESTAMP, BOOLEAN)"},
		{"SELECT EXTRACT(EPOCH FROM ts) FROM e", 5, 16, "EXTRACT(EPOCH FROM ...) is not supported (valid units: YEAR, QUARTER, MONTH, WEEK, DAY, DOW, DOY, HOUR, MINUTE, SECOND, MILLISECOND)"},
		{"SELECT TRIM(BOTH 'x' FROM s) FROM e", 5, 18, "TRIM removes spaces only: TRIM('x' FROM s) is not supported"},
		{"SELECT NOW() FROM e", 5, 8, "NOW is not supported: a query's results depend on its input alone (declare a column AS PROCTIME() in the source for the time of ingestion)"},
		{"SELECT CURRENT_TIMESTAMP FROM e", 5, 8, "CURRENT_TIMESTAMP is not supported: a query's results depend on its input alone (declare a column AS PROCTIME() in the source for the time of ingestion)"},
		{"SELECT PROCTIME() FROM e", 5, 8, "PROCTIME is not supported: a query's results depend on its input alone (declare a column AS PROCTIME() in the source for the time of ingestion, or add one in a view of the source as it is: CREATE VIEW v AS SELECT *, PROCTIME() AS p FROM source)"},
		{"SELECT COUNT(*) FROM TUMBLE(e, ts, INTERVAL '1' SECOND) GROUP BY TUMBLE(ts, INTERVAL '1' SECOND)", 5, 66, "a window in GROUP BY and another in FROM: a query has one"},
		{"SELECT COUNT(*) FROM e GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), HOP(ts, INTERVAL '1' SECOND, INTERVAL '2' SECOND)", 5, 66, "a second window in GROUP BY: a query has one"},
		{"SELECT TUMBLE_START(ts, INTERVAL '2' SECOND), COUNT(*) FROM e GROUP BY TUMBLE(ts, INTERVAL '1' SECOND)", 5, 8, "TUMBLE_START(...) must name the query's window: GROUP BY TUMBLE(...) with the same arguments"},
		{"SELECT TUMBLE_PROCTIME(ts, INTERVAL '1' SECOND), COUNT(*) FROM e GROUP BY TUMBLE(ts, INTERVAL '1' SECOND)", 5, 8, "TUMBLE_PROCTIME is not supported: a window's processing time is not kept"},
		{"SELECT TUMBLE_START(ts, INTERVAL '1' SECOND) FROM e", 5, 8, "TUMBLE_START(...) needs GROUP BY TUMBLE(...) over the same arguments"},
		{"SELECT TUMBLE(ts, INTERVAL '1' SECOND) FROM e", 5, 8, "TUMBLE(...) is a window: it stands in GROUP BY (GROUP BY TUMBLE(time_col, ...)) or in FROM"},
		{"SELECT x, COUNT(*) FROM TUMBLE(e, ts, INTERVAL '1' SECOND) GROUP BY x", 5, 69, "GROUP BY x: a float is not a group key (group keys are integers, timestamps, booleans, strings, UUID or BYTES columns)"},
		{"SELECT NULL FROM e", 5, 8, "NULL has no type here: write CAST(NULL AS type)"},
		{"SELECT n FROM e WHERE s LIKE k", 5, 30, "expected the pattern of LIKE (a string constant, '...'), found 'k'"},
		{"SELECT n FROM e WHERE n LIKE 'a%'", 5, 25, "LIKE applies to strings; n is BIGINT"},
		{"SELECT n FROM e WHERE s LIKE 'a' ESCAPE 'xy'", 5, 41, "expected one character ('\\') after ESCAPE, found 'xy'"},
		{"SELECT n FROM e WHERE ts > TIMESTAMP '2024-13-01 00:00:00'", 5, 38, "'2024-13-01 00:00:00' is not a timestamp (2024-03-01 10:00:01[.250])"},
		{"SELECT CASE WHEN n > 1 THEN 'a' ELSE 2 END FROM e", 5, 8, "CASE: its branches are of types that do not mix (THEN and ELSE must be numbers, strings, timestamps or conditions alike)"},
		{"SELECT n FROM e WHERE c = 'purple'", 5, 27, "'purple' is not a label of the ENUM (valid: red, green, blue)"},
		{"SELECT n || u FROM e", 5, 10, "CONCAT(n, u): argument 2 is bytes"},
		{"SELECT DATE_FORMAT(ts, 'yyyy-MM-dd VV') FROM e", 5, 24, "DATE_FORMAT's format 'yyyy-MM-dd VV': DATE_FORMAT pattern \"yyyy-MM-dd VV\": pattern letter 'V' is a time zone, which a TIMESTAMP does not have"},
		{"SELECT REGEXP_EXTRACT(s, '(') FROM e", 5, 26, "REGEXP_EXTRACT's pattern '(': error parsing regexp: missing closing ): `(`"},
		{"SELECT n FROM e WHERE b < TRUE", 5, 25, "booleans compare with = and <> only"},
		{"SELECT SUM(ts) FROM TUMBLE(e, ts, INTERVAL '1' SECOND)", 5, 12, "SUM(ts): ts is a timestamp: it takes MIN and MAX"},
		{"SELECT MAX(s) FROM TUMBLE(e, ts, INTERVAL '1' SECOND)", 5, 12, "MAX(s): s is VARCHAR(40), not a number"},
		{"SELECT COUNT(*) FILTER (WHERE n) FROM TUMBLE(e, ts, INTERVAL '1' SECOND)", 5, 31, "FILTER (WHERE ...) needs a condition (a comparison), not a value"},
		{"SELECT n FROM e ORDER BY n", 5, 17, "ORDER is not supported in a streaming query"},
		{"SELECT n FROM e LIMIT 10", 5, 17, "LIMIT is not supported in a streaming query"},
		{"SELECT n FROM e UNION SELECT n FROM e", 5, 17, "UNION is not supported in a streaming query"},
		{"SELECT * FROM e FULL OUTER JOIN users AS u ON e.k = u.name", 5, 17, "FULL JOIN is not supported: only inner joins (JOIN ... ON ...)"},
		{"SELECT * FROM (SELECT n FROM e)", 5, 15, "a subquery in FROM needs a name: (SELECT ...) AS name"},
		{"SELECT COUNT(*) FROM e [ROWS 10] JOIN users AS u ON e.k = u.name GROUP BY u.country", 5, 24, "a ROWS window over a join with table users that groups by its columns (or uses several) is not supported: the rows would be counted after the join (use a time window)"},
		{"SELECT IF(n, 1, 2) FROM e", 5, 11, "IF needs a condition (a comparison), not a value"},
		{"SELECT MOD(x, 2) FROM e", 5, 8, "MOD(x, 2): argument 1 is float, not an integer"},
		{"SELECT window_start, COUNT(*) FROM e", 5, 36, "an aggregation needs a window: TUMBLE(e, ...), HOP(e, ...), e [RANGE ...], e [ROWS ...] or GROUP BY TUMBLE(time_col, ...)"},
		{"SELECT n FROM e [ROWS 4]", 5, 17, "source e has a watermark delay, in time: a ROWS window counts tuples, so it cannot honour it (drop the delay, or use a time window)"},
		{"CREATE TABLE d (a DATE) WITH (connector = 'file', path = 'd.csv')", 5, 19, "DATE is not supported yet: declare TIMESTAMP(3) (a date alone reads as its midnight, UTC)"},
		{"CREATE TABLE d (a ROW<x INT>) WITH (connector = 'file', path = 'd.csv')", 5, 19, "ROW types are not supported: declare each field as a column of its own"},
		{"CREATE TABLE d (a CHAR(3)) WITH (connector = 'file', path = 'd.csv')", 5, 19, "CHAR(n) pads its strings with spaces, which saber-hx does not: declare VARCHAR"},
		{"CREATE SOURCE d (ts BIGINT, a INT METADATA FROM 'x') WITH (connector = 'stdin')", 5, 35, "METADATA columns are not supported: declare the value as a column of the records"},
		{"CREATE SOURCE d (ts TIMESTAMP(12)) WITH (connector = 'stdin')", 5, 21, "TIMESTAMP(12): the precision is 0 to 9"},
		{"CREATE VIEW v AS SELECT TUMBLE_ROWTIME(ts, INTERVAL '1' SECOND) AS rt, COUNT(*) AS n FROM e GROUP BY TUMBLE(ts, INTERVAL '1' SECOND); SELECT COUNT(*) FROM TUMBLE(v, rt, INTERVAL '10' SECOND)", 5, 166, "rt is not the event time of view v, which is window_start (a stream has one event time)"},
		{"SELECT u, COUNT(*) FROM TUMBLE(e, ts, INTERVAL '1' SECOND) GROUP BY u, k", 5, 69, "query \"select1\": group by: keys of 24 bytes; at most 16 bytes are supported (a key that can be NULL, but a string, takes 4 bytes more)"},
	} {
		text := valuesBase + tc.text
		t.Run(tc.msg, func(t *testing.T) {
			e := compileErr(t, text)
			assert.Equal(t, tc.line, e.Line, e.Caret(text))
			assert.Equal(t, tc.col, e.Column, e.Caret(text))
			assert.Contains(t, e.Msg, tc.msg)
			checkErrorPosition(t, text, e)
		})
	}
}

// TestSessionPartitionQualifiedBesideAJoin: PARTITION BY src.k names the
// windowed stream's k beside a joined table's k, which a bare k would
// leave ambiguous, whatever FROM's alias.
func TestSessionPartitionQualifiedBesideAJoin(t *testing.T) {
	ddl := `CREATE SOURCE e (ts BIGINT, k VARCHAR, n INT) WITH (connector = 'stdin', format = 'csv');
CREATE TABLE users (name VARCHAR, k VARCHAR) WITH (connector = 'file', path = '/dev/null', format = 'csv');
`
	for _, q := range []string{
		`SELECT window_start, window_end, e.k, COUNT(*) AS c FROM SESSION(e PARTITION BY e.k, ts, INTERVAL '1' SECOND) JOIN users AS u ON e.k = u.name GROUP BY window_start, window_end, e.k`,
		`SELECT window_start, window_end, e.k, COUNT(*) AS c FROM TABLE(SESSION(TABLE e PARTITION BY e.k, DESCRIPTOR(ts), INTERVAL '1' SECOND)) JOIN users AS u ON e.k = u.name GROUP BY window_start, window_end, e.k`,
		`SELECT window_start, window_end, w.k, COUNT(*) AS c FROM TABLE(SESSION(TABLE e PARTITION BY e.k, DESCRIPTOR(ts), INTERVAL '1' SECOND)) AS w JOIN users AS u ON w.k = u.name GROUP BY window_start, window_end, w.k`,
	} {
		_, err := Compile(ddl + q)
		assert.NoError(t, err, q)
	}
	_, err := Compile(ddl + `SELECT window_start, window_end, e.k, COUNT(*) AS c FROM SESSION(e PARTITION BY k, ts, INTERVAL '1' SECOND) JOIN users AS u ON e.k = u.name GROUP BY window_start, window_end, e.k`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "column k is ambiguous")
}
