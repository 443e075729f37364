package sql

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

// The DDL Flink and RisingWave users write: types, NOT NULL, PROCTIME(),
// TIMESTAMP event times, CREATE TABLE as a source or a sink, Flink's
// option names.

func TestTypes(t *testing.T) {
	p := mustCompile(t, `CREATE TABLE src (
		ts TIMESTAMP(3), a SMALLINT, b TINYINT, c INTEGER, d DECIMAL(10, 2), e NUMERIC, f FLOAT, g DOUBLE PRECISION,
		h VARCHAR, i VARCHAR(20), j STRING, k BOOLEAN, l TIMESTAMP_LTZ(3), m TIMESTAMP(6), n TIMESTAMP(0) WITHOUT TIME ZONE,
		o TIMESTAMP WITH LOCAL TIME ZONE, q TEXT NOT NULL, r BIGINT NULL, p_time AS PROCTIME(),
		WATERMARK FOR ts AS ts - INTERVAL '4' SECOND
	) WITH ('connector' = 'filesystem', 'path' = 'src.json', 'format' = 'json', 'time_unit' = 's')`)
	s := p.Source("src")
	require.NotNil(t, s)
	assert.Equal(t, "file", s.Connector, "Flink's filesystem is a file")
	want := map[string]struct {
		kind Kind
		typ  string
		qt   query.Type
		lg   query.Logical
		null bool
	}{
		"ts":     {KindTimestamp, "TIMESTAMP(3)", query.Int64, query.Time, false},
		"a":      {KindInt, "SMALLINT", query.Int32, query.Plain, true},
		"b":      {KindInt, "TINYINT", query.Int32, query.Plain, true},
		"c":      {KindInt, "INT", query.Int32, query.Plain, true},
		"d":      {KindDouble, "DECIMAL(10, 2)", query.Float64, query.Plain, true},
		"e":      {KindDouble, "DECIMAL", query.Float64, query.Plain, true},
		"f":      {KindReal, "REAL", query.Float32, query.Plain, true},
		"g":      {KindDouble, "DOUBLE", query.Float64, query.Plain, true},
		"h":      {KindString, "VARCHAR", query.String, query.Plain, true},
		"i":      {KindString, "VARCHAR(20)", query.String, query.Plain, true},
		"j":      {KindString, "VARCHAR", query.String, query.Plain, true},
		"k":      {KindBool, "BOOLEAN", query.Int32, query.Boolean, true},
		"l":      {KindTimestamp, "TIMESTAMP_LTZ(3)", query.Int64, query.Time, true},
		"m":      {KindTimestamp, "TIMESTAMP(6)", query.Int64, query.Time, true},
		"n":      {KindTimestamp, "TIMESTAMP(0)", query.Int64, query.Time, true},
		"o":      {KindTimestamp, "TIMESTAMP_LTZ(3)", query.Int64, query.Time, true},
		"q":      {KindString, "VARCHAR", query.String, query.Plain, false},
		"r":      {KindBigint, "BIGINT", query.Int64, query.Plain, true},
		"p_time": {KindTimestamp, "TIMESTAMP_LTZ(3)", query.Int64, query.Time, false},
	}
	require.Len(t, s.Columns, len(want))
	for _, c := range s.Columns {
		w := want[c.Name]
		assert.Equal(t, w.kind, c.Kind, c.Name)
		assert.Equal(t, w.typ, c.Type, c.Name)
		assert.Equal(t, w.qt, c.Attr.Type, c.Name)
		assert.Equal(t, w.lg, c.Attr.Logical, c.Name)
		assert.Equal(t, w.null, c.Attr.Nullable, c.Name)
	}
	// the event time is the TIMESTAMP, in ms whatever time_unit says
	// (epoch numbers in TIMESTAMP columns are in it); its delay in ms
	assert.Equal(t, "ts", s.EventTime)
	assert.Equal(t, int64(4000), s.WatermarkDelay)
	assert.Equal(t, "s", s.TimeUnit)
	assert.Equal(t, "p_time", s.ProcTime)
	assert.Equal(t, query.Time, s.Schema.Attrs[0].Logical)
	l, err := s.Layout(nil)
	require.NoError(t, err)
	assert.Equal(t, -1, l.Lookup("p_time"), "the processing time is no record's")
	assert.Equal(t, len(s.Columns)-1, len(l.Columns))
	assert.Equal(t, "s", l.TimeUnit.String())
	assert.Equal(t, 0, s.Schema.TupleSize&(s.Schema.TupleSize-1), "a power of two")
	// windows over it in ms
	p = mustCompile(t, strings.Replace(`CREATE SOURCE src (ts TIMESTAMP(3), v INT, WATERMARK FOR ts AS ts - INTERVAL '4' SECOND) WITH (connector = 'stdin', format = 'csv', time_unit = 's');
		SELECT window_start, COUNT(*) AS n FROM TUMBLE(src, ts, INTERVAL '10' SECOND) GROUP BY window_start`, "\t", "", -1))
	// (the delay less 1 ms: Flink fires a window at its last millisecond)
	assert.Equal(t, query.Window{Type: query.Range, Size: 10_000, Slide: 10_000, Delay: 3999}, p.Queries[0].Spec.Query.Window)
	assert.Equal(t, "TIMESTAMP(3)", p.Queries[0].Columns[0].Type)
	// binary and generator sources have no NULL bits
	p = mustCompile(t, `CREATE SOURCE b (ts BIGINT, v INT, w VARCHAR, x BOOLEAN) WITH (connector = 'stdin')`)
	for _, a := range p.Source("b").Schema.Attrs {
		assert.False(t, a.Nullable, a.Name)
	}
	assert.Equal(t, 32, p.Source("b").Schema.TupleSize)
}

func TestProcTime(t *testing.T) {
	// a window over the processing time, where no WATERMARK names another
	p := mustCompile(t, `CREATE SOURCE s (v INT, name VARCHAR, pt AS PROCTIME()) WITH (connector = 'stdin', format = 'json');
		SELECT window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(pt), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end`)
	s := p.Source("s")
	assert.Equal(t, "pt", s.ProcTime)
	assert.Equal(t, "pt", s.EventTime)
	assert.Equal(t, query.Attribute{Name: "pt", Type: query.Int64, Size: 8, Logical: query.Time}, s.Schema.Attrs[0])
	assert.Equal(t, query.Tumbling(60_000), p.Queries[0].Spec.Query.Window)
	for _, tc := range []struct {
		text      string
		line, col int
		msg       string
	}{
		{"CREATE SOURCE s (v INT, pt AS PROCTIME()) WITH (connector = 'stdin')", 1, 31, "pt AS PROCTIME(): a binary source's records are its tuples"},
		{"CREATE SOURCE s (v INT, pt AS NOW()) WITH (connector = 'stdin', format = 'csv')", 1, 31, "a computed column (pt AS ...) can only be PROCTIME() for now"},
		{"CREATE SOURCE s (ts BIGINT, pt AS PROCTIME(), WATERMARK FOR pt AS pt) WITH (connector = 'stdin', format = 'csv')", 1, 61, "pt is a processing time (PROCTIME()): a WATERMARK is for an event time"},
		{"CREATE SOURCE s (ts BIGINT, pt AS PROCTIME(), WATERMARK FOR ts AS ts) WITH (connector = 'stdin', format = 'csv');\nSELECT COUNT(*) FROM TUMBLE(s, pt, INTERVAL '1' SECOND)", 2, 32, "pt is the processing time of source s, whose event time is ts (its WATERMARK): a stream has one time"},
		{"CREATE SOURCE s (ts BIGINT, a AS PROCTIME(), b AS PROCTIME()) WITH (connector = 'stdin', format = 'csv')", 1, 46, "a second PROCTIME() column"},
	} {
		e := compileErr(t, tc.text)
		assert.Equal(t, tc.line, e.Line, e.Caret(tc.text))
		assert.Equal(t, tc.col, e.Column, e.Caret(tc.text))
		assert.Contains(t, e.Msg, tc.msg)
		checkErrorPosition(t, tc.text, e)
	}
}

func TestFlinkKafkaOptions(t *testing.T) {
	p := mustCompile(t, `CREATE TABLE bid (auction BIGINT, price BIGINT, dateTime TIMESTAMP(3), WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND)
		WITH ('connector' = 'kafka', 'topic' = 'nexmark', 'properties.bootstrap.servers' = 'k1:9092,k2:9092',
		      'properties.group.id' = 'nx', 'scan.startup.mode' = 'latest-offset', 'format' = 'json',
		      'properties.isolation.level' = 'read_uncommitted');
		CREATE TABLE out (auction BIGINT, price BIGINT) WITH ('connector' = 'kafka', 'topic' = 'out', 'properties.bootstrap.servers' = 'k1:9092', 'format' = 'csv');
		INSERT INTO out SELECT auction, price FROM bid`)
	s := p.Source("bid")
	assert.Equal(t, []string{"k1:9092", "k2:9092"}, s.Brokers)
	assert.Equal(t, "nx", s.Group)
	assert.Equal(t, "latest", s.Start)
	assert.Equal(t, "read_uncommitted", s.IsolationLevel)
	q := p.Query("out")
	require.NotNil(t, q)
	assert.Equal(t, "kafka", q.Sink.Connector)
	assert.Equal(t, []string{"k1:9092"}, q.Sink.Brokers)
	assert.Equal(t, "csv", q.Sink.Format)
	e := compileErr(t, "CREATE SOURCE k (ts BIGINT) WITH (connector = 'kafka', topic = 't', brokers = 'a:1', 'properties.bootstrap.servers' = 'b:2')")
	assert.Equal(t, 86, e.Column)
	assert.Contains(t, e.Msg, "options brokers and properties.bootstrap.servers say the same: give one")
	e = compileErr(t, "CREATE SOURCE k (ts BIGINT) WITH (connector = 'kafka', topic = 't', brokers = 'a:1', isolation_level = 'read_committed', 'properties.isolation.level' = 'read_committed')")
	assert.Contains(t, e.Msg, "options isolation_level and properties.isolation.level say the same: give one")
	e = compileErr(t, "CREATE SOURCE k (ts BIGINT) WITH (connector = 'kafka', topic = 't', brokers = 'a:1', 'scan.startup.mode' = 'timestamp')")
	assert.Contains(t, e.Msg, "scan.startup.mode = 'timestamp' is not valid for a kafka source (valid: earliest-offset, latest-offset, group-offsets)")
}

// TestSinkTables: CREATE TABLE ... WITH a sink's connector, then INSERT
// INTO it: the columns by position (or as listed), cast to the table's
// types, the sink the table's.
func TestSinkTables(t *testing.T) {
	p := mustCompile(t, valuesBase+`CREATE TABLE nexmark_q0 (auction BIGINT, price DOUBLE, dateTime TIMESTAMP(3), extra VARCHAR)
			WITH ('connector' = 'blackhole');
		CREATE TABLE shown (total BIGINT, k VARCHAR) WITH ('connector' = 'print', 'format' = 'json');
		CREATE TABLE files (k VARCHAR, n BIGINT) WITH ('connector' = 'filesystem', 'path' = 'out.csv', 'format' = 'csv');
		INSERT INTO nexmark_q0 SELECT n, m, ts, s FROM e;
		INSERT INTO shown SELECT SUM(n), k FROM TUMBLE(e, ts, INTERVAL '1' SECOND) GROUP BY k;
		INSERT INTO files (n, k) SELECT n, k FROM e WHERE n > 1`)
	q0 := p.Query("nexmark_q0")
	require.NotNil(t, q0)
	assert.Equal(t, &Sink{Name: "nexmark_q0", Connector: "blackhole", Options: map[string]string{"connector": "blackhole"}}, q0.Sink)
	assert.Equal(t, []string{"auction", "price", "dateTime", "extra"}, columnNamesOf(q0))
	assert.Equal(t, "CAST(m AS DOUBLE)", q0.Spec.Query.Project[1].Expr.String(), "INT to the table's DOUBLE: a cast over the SELECT's output")
	assert.Equal(t, "nexmark_q0$1", q0.From)
	assert.Equal(t, "nexmark_q0", p.Query("nexmark_q0$1").Part)
	shown := p.Query("shown")
	assert.Equal(t, &Sink{Name: "shown", Connector: "print", Format: "json", Options: map[string]string{"connector": "print", "format": "json"}}, shown.Sink)
	assert.Equal(t, []string{"total", "k"}, columnNamesOf(shown))
	assert.Equal(t, Aggregate, shown.Columns[0].Kind, "the types agree: no cast, the aggregation itself")
	files := p.Query("files")
	assert.Equal(t, "file", files.Sink.Connector)
	assert.Equal(t, "out.csv", files.Sink.Path)
	assert.Equal(t, []string{"n", "k"}, columnNamesOf(files))
	for _, tc := range []struct {
		text      string
		line, col int
		msg       string
	}{
		{"CREATE TABLE o (a BIGINT) WITH (connector = 'blackhole');\nINSERT INTO o SELECT u FROM e", 6, 22, "column a of table o is BIGINT; the SELECT's u is UUID, which does not convert"},
		{"CREATE TABLE o (a TIMESTAMP(3)) WITH (connector = 'blackhole');\nINSERT INTO o SELECT b FROM e", 6, 22, "column a of table o is TIMESTAMP(3); the SELECT's b is BOOLEAN, which does not convert"},
		{"CREATE TABLE o (a BIGINT, b BIGINT) WITH (connector = 'blackhole');\nINSERT INTO o SELECT n FROM e", 6, 15, "INSERT INTO o: the SELECT has 1 columns, the table 2"},
		{"CREATE TABLE o (a BIGINT) WITH (connector = 'blackhole');\nINSERT INTO o SELECT n FROM e;\nINSERT INTO o SELECT m FROM e", 7, 13, "table o is written by the INSERT INTO at line 6 already"},
		{"INSERT INTO nowhere SELECT n FROM e", 5, 13, "unknown table nowhere"},
		{"INSERT INTO e SELECT ts, k, n, m, x, b, s, c, u FROM e", 5, 13, "e is a source: INSERT INTO writes a sink table"},
		{"INSERT INTO users SELECT n FROM e", 5, 19, "INSERT INTO users: the SELECT has 1 columns, the table 5"},
		{"CREATE TABLE o (a BIGINT) WITH (connector = 'blackhole');\nSELECT * FROM o", 6, 15, "o is a sink table: INSERT INTO writes it, nothing reads it"},
		{"CREATE TABLE o (a BIGINT) WITH (connector = 'blackhole');\nINSERT INTO o (b) SELECT n FROM e", 6, 16, "table o has no column b"},
		{"CREATE TABLE o (a BIGINT) WITH (connector = 'blackhole', path = 'x')", 5, 58, "unknown option path for a blackhole sink (valid: connector)"},
		{"CREATE TABLE o (a BIGINT, WATERMARK FOR a AS a) WITH (connector = 'print')", 5, 27, "table o is a sink (INSERT INTO writes it): it has no event time"},
		{"CREATE TABLE o (a BIGINT) WITH (connector = 'socket')", 5, 45, "unknown connector 'socket' for a table"},
	} {
		text := valuesBase + tc.text
		e := compileErr(t, text)
		assert.Equal(t, tc.line, e.Line, e.Caret(text))
		assert.Equal(t, tc.col, e.Column, e.Caret(text))
		assert.Contains(t, e.Msg, tc.msg)
		checkErrorPosition(t, text, e)
	}
}

// TestTableValues: a table loads VARCHAR (long strings in memory it
// keeps, outside the Go heap), TIMESTAMP, BOOLEAN and NULL cells; a
// lookup join lays the columns it uses out as the join's values, keys of
// strings (their bytes) and integers (the stream column's width).
func TestTableValues(t *testing.T) {
	p := mustCompile(t, valuesBase+`SELECT e.k, u.country, u.since, u.vip FROM e JOIN users AS u ON e.k = u.name;
		SELECT m, i.label FROM e JOIN ids AS i ON e.m = i.id`)
	users := p.Table("users")
	require.NoError(t, users.Load(strings.NewReader(usersCSV)))
	assert.Equal(t, 6, users.Rows())
	j := p.Queries[0].Spec.Query.Join
	require.NotNil(t, j.Values)
	assert.Equal(t, 0, j.Table.KeyWidth, "string keys")
	assert.Equal(t, []string{"u.country", "u.since", "u.vip"}, attrNames(j.Values))
	require.Len(t, j.Table.Keys, 6)
	assert.Equal(t, "paris", string(j.Table.Keys[0]))
	assert.Equal(t, "très long nom de ville", string(j.Table.Keys[5]))
	country, _ := j.Values.Lookup("u.country")
	since, _ := j.Values.Lookup("u.since")
	vip, _ := j.Values.Lookup("u.vip")
	v := j.Table.Values
	assert.Equal(t, "FR", string(strview.Bytes(v[0][country.Offset:])))
	assert.Equal(t, "F,R", string(strview.Bytes(v[4][country.Offset:])))
	assert.False(t, country.IsNull(v[2]), "an empty VARCHAR field is the empty string")
	assert.Equal(t, "", string(strview.Bytes(v[2][country.Offset:])))
	assert.True(t, since.IsNull(v[2]) && vip.IsNull(v[2]), "empty fields of other types are NULL")
	assert.False(t, since.IsNull(v[0]))
	assert.Equal(t, int64(1704164645000), int64(leUint64(v[0][since.Offset:])))
	assert.Equal(t, byte(1), v[0][vip.Offset])
	// integer keys at the stream column's width: an INT column, 4 bytes
	ids := p.Table("ids")
	require.NoError(t, ids.Load(strings.NewReader(idsJSON)))
	j = p.Queries[1].Spec.Query.Join
	assert.Equal(t, 4, j.Table.KeyWidth)
	assert.Equal(t, [][]byte{{1, 0, 0, 0}, {0xfd, 0xff, 0xff, 0xff}, {7, 0, 0, 0}, {12, 0, 0, 0}}, j.Table.Keys)
	// a long string's view points outside the Go heap: reading it back
	label, _ := j.Values.Lookup("i.label")
	assert.Equal(t, "twelve, a long label indeed", string(strview.Bytes(j.Table.Values[3][label.Offset:])))
	// a reload frees the old strings and takes new ones
	require.NoError(t, ids.Load(strings.NewReader(`{"id": 5, "label": "a label longer than twelve"}`)))
	assert.Equal(t, "a label longer than twelve", string(strview.Bytes(j.Table.Values[0][label.Offset:])))
	// duplicate keys, after the key is encoded
	assert.ErrorContains(t, ids.Load(strings.NewReader(`{"id": 5}`+"\n"+`{"id": 5}`)), "rows 0 and 1 have the same id")
	// a bad cell names its line
	assert.ErrorContains(t, users.Load(strings.NewReader("a,FR,x,,\n")), "line 1")
}

func leUint64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}
