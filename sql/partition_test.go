package sql

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A partitioned filesystem sink table: PARTITIONED BY and Flink's
// partition options read into Sink.Partition; what saber-hx does not do
// is refused at its option.

const partSrc = "CREATE SOURCE s (ts TIMESTAMP(3), k BIGINT, c VARCHAR, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) WITH (connector = 'stdin', format = 'csv');\n"

func partTable(with string) string {
	return partSrc + "CREATE TABLE o (k BIGINT, c VARCHAR, d STRING) PARTITIONED BY (d, c) WITH ('connector' = 'filesystem', 'path' = 'file:///out/', 'format' = 'csv'" + with + ");\n" +
		"INSERT INTO o SELECT k, c, DATE_FORMAT(ts, 'yyyy-MM-dd') FROM s WHERE k > 0;"
}

func TestPartitionedSink(t *testing.T) {
	t.Parallel()
	p, err := Compile(partTable(", 'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.delay' = '1 min', " +
		"'sink.partition-commit.policy.kind' = 'success-file', 'sink.partition-commit.success-file.name' = 'DONE', " +
		"'partition.time-extractor.timestamp-pattern' = '$d 00:00:00', 'partition.default-name' = 'none', " +
		"'sink.rolling-policy.rollover-interval' = '1min', 'sink.rolling-policy.check-interval' = '30 s'"))
	require.NoError(t, err)
	q := p.Queries[len(p.Queries)-1]
	require.NotNil(t, q.Sink.Partition)
	pt := q.Sink.Partition
	assert.Equal(t, "/out/", q.Sink.Path)
	assert.Equal(t, []int{2, 1}, pt.Columns)
	assert.Equal(t, []string{"d", "c"}, pt.Names)
	assert.Equal(t, "partition-time", pt.Trigger)
	assert.Equal(t, time.Minute, pt.Delay)
	assert.Equal(t, "DONE", pt.SuccessFile)
	assert.Equal(t, "$d 00:00:00", pt.Pattern)
	assert.Equal(t, "none", pt.DefaultName)
	assert.Equal(t, int64(2000), pt.WatermarkDelay)
	assert.Equal(t, time.Millisecond, pt.TimeUnit)

	p, err = Compile(partTable(""))
	require.NoError(t, err)
	pt = p.Queries[len(p.Queries)-1].Sink.Partition
	assert.Equal(t, "__DEFAULT_PARTITION__", pt.DefaultName)
	assert.Equal(t, "", pt.Trigger)
	assert.Equal(t, "", pt.SuccessFile)
}

func TestPartitionedSinkErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ text, msg string }{
		{partTable(", 'sink.partition-commit.trigger' = 'process-time', 'sink.partition-commit.policy.kind' = 'success-file'"), "committing partitions by the wall clock is not supported"},
		{partTable(", 'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.policy.kind' = 'metastore'"), "the metastore policy is Hive's"},
		{partTable(", 'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.policy.kind' = 'success-file,custom'"), "a custom policy is a Java class"},
		{partTable(", 'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.policy.kind' = 'mail'"), "unknown partition-commit policy \"mail\""},
		{partTable(", 'sink.partition-commit.policy.kind' = 'success-file'"), "needs sink.partition-commit.trigger = 'partition-time'"},
		{partTable(", 'sink.partition-commit.trigger' = 'partition-time'"), "commits nothing"},
		{partTable(", 'sink.partition-commit.delay' = '1 min'"), "applies to sink.partition-commit.trigger = 'partition-time'"},
		{partTable(", 'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.policy.kind' = 'success-file', 'sink.partition-commit.delay' = 'soon'"), "want a duration"},
		{partTable(", 'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.policy.kind' = 'success-file', 'partition.time-extractor.timestamp-pattern' = '$x 00:00:00'"), "$ names no partition column"},
		{partTable(", 'partition.time-extractor.kind' = 'custom'"), "only 'default' is supported"},
		{partTable(", 'sink.rolling-policy.file-size' = '1MB'"), "unknown option sink.rolling-policy.file-size"},
		{partTable(", 'partition.default-name' = 'a/b'"), "want a directory name"},
		{partSrc + "CREATE TABLE o (k BIGINT, d STRING) PARTITIONED BY (e) WITH ('connector' = 'filesystem', 'path' = 'x');\nINSERT INTO o SELECT k, c FROM s;", "table o has no column e"},
		{partSrc + "CREATE TABLE o (k BIGINT, d STRING) PARTITIONED BY (d, d) WITH ('connector' = 'filesystem', 'path' = 'x');\nINSERT INTO o SELECT k, c FROM s;", "PARTITIONED BY names d twice"},
		{partSrc + "CREATE TABLE o (k BIGINT, d STRING) PARTITIONED BY (d) WITH ('connector' = 'kafka', 'topic' = 't', 'properties.bootstrap.servers' = 'h:1');\nINSERT INTO o SELECT k, c FROM s;", "PARTITIONED BY is for connector = 'filesystem'"},
		{partSrc + "CREATE TABLE o (k BIGINT, d STRING) PARTITIONED BY (d) WITH ('connector' = 'print');\nINSERT INTO o SELECT k, c FROM s;", "PARTITIONED BY is for connector = 'filesystem'"},
		{"CREATE SOURCE s (ts BIGINT, d VARCHAR) PARTITIONED BY (d) WITH (connector = 'stdin', format = 'csv');", "source s: PARTITIONED BY is for a filesystem sink table"},
		{"CREATE TABLE s (ts BIGINT, d VARCHAR) PARTITIONED BY (d) WITH (connector = 'filesystem', path = 'x', format = 'csv');\nSELECT ts FROM s;", "PARTITIONED BY is for a filesystem sink table that INSERT INTO writes"},
		{partSrc + "CREATE TABLE o (n BIGINT, d VARCHAR) PARTITIONED BY (d) WITH ('connector' = 'filesystem', 'path' = 'x', 'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.policy.kind' = 'success-file');\n" +
			"INSERT INTO o SELECT COUNT(*), c FROM TUMBLE(s, ts, INTERVAL '1' SECOND) GROUP BY c;", "reads the watermark from the event times of the rows"},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			e := compileErr(t, tc.text)
			assert.Contains(t, e.Msg, tc.msg)
		})
	}
}

// TestPartitionedSinkOverARegularJoin: 'partition-time' over a view of a
// regular join's pairs is refused: their attribute 0 (a left row's time)
// is no event time, and it comes in the order of the arrivals, so the
// sink's watermark (the largest time written less the delay) ran ahead
// of both sides' watermarks and committed partitions the pairs to come
// still fall into.
func TestPartitionedSinkOverARegularJoin(t *testing.T) {
	t.Parallel()
	src := "CREATE SOURCE a (ts TIMESTAMP(3), k BIGINT, c VARCHAR, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) WITH (connector = 'stdin', format = 'csv');\n" +
		"CREATE SOURCE b (ts TIMESTAMP(3), k BIGINT, e VARCHAR, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) WITH (connector = 'stdin', format = 'csv');\n" +
		"CREATE VIEW v AS SELECT a.ts, a.k, b.e FROM a JOIN b ON a.k = b.k;\n" +
		"CREATE VIEW w AS SELECT * FROM v WHERE k > 0;\n" +
		"CREATE TABLE o (k BIGINT, d STRING) PARTITIONED BY (d) WITH ('connector' = 'filesystem', 'path' = 'x', 'format' = 'csv'%s);\n" +
		"INSERT INTO o SELECT k, DATE_FORMAT(ts, 'yyyy-MM-dd') FROM %s;"
	const trigger = ", 'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.policy.kind' = 'success-file'"
	for _, from := range []string{"v", "w"} {
		e := compileErr(t, fmt.Sprintf(src, trigger, from))
		assert.Contains(t, e.Msg, "reads the watermark from the event times of the rows", from)
		// without the trigger, partitions are committed at the end
		_, err := Compile(fmt.Sprintf(src, "", from))
		assert.NoError(t, err, from)
	}
}
