package sql

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzCompile: Compile never panics; every error is an *Error whose
// position lies within the text (its offset, line and column agree) and
// renders with a caret; every compiled query validates.
func FuzzCompile(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "examples", "*.sql"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		require.NoError(f, err)
		f.Add(string(b))
	}
	for _, s := range []string{
		"SELECT * FROM s WHERE a = 1 OR NOT (b < 2 AND k = 'click')",
		"SELECT a, COUNT(*) AS n FROM s [ROWS 4 SLIDE 2] GROUP BY a HAVING n > 1",
		"SELECT v, COUNT(*) FROM HOP(s, ts, INTERVAL '1' SECOND, INTERVAL '2' SECOND) JOIN t ON s.u = t.u GROUP BY v",
		"SELECT * FROM s [ROWS 4] AS x JOIN s [ROWS 4] AS y ON x.a < y.a",
		"CREATE VIEW v AS SELECT a * 2 AS x FROM s; SELECT SUM(x) FROM v [RANGE INTERVAL '1' SECOND]",
		"CREATE SINK o AS SELECT a FROM s WITH (connector = 'file', path = 'o.csv', format = 'csv')",
		"CREATE SINK o AS SELECT window_start, u AS campaign_id, COUNT(*) AS n FROM TUMBLE(s, ts, INTERVAL '1' SECOND) GROUP BY u WITH (connector = 'redis', addr = 'h:6379', key = 'k:{window_start}:{campaign_id}')",
		"CREATE SINK o AS SELECT window_start, u AS campaign_id, COUNT(*) AS n FROM TUMBLE(s, ts, INTERVAL '1' SECOND) GROUP BY u WITH (connector = 'kafka', brokers = 'h:9092', topic = 'o', key = 'campaign_id')",
		"CREATE SOURCE q (ts BIGINT, a INT) WITH (connector = 'kafka', brokers = 'h:9092,h2:9092', topic = 't', group = 'g', idle_timeout = '1s'); SELECT * FROM q",
		"SELECT 'unclosed",
		"/* unclosed",
	} {
		f.Add(base + s)
	}
	for _, s := range []string{
		"SELECT CASE WHEN n > 1 THEN 'a' ELSE k END, CAST(x AS VARCHAR) || s, EXTRACT(HOUR FROM ts), SUBSTRING(s FROM 2 FOR 3), TRIM(LEADING FROM s) FROM e WHERE k IN ('a', 'b') AND n BETWEEN 1 AND 3 AND s NOT LIKE '%x!_' ESCAPE '!' AND b IS NOT TRUE",
		"SELECT window_start, window_end, k, COUNT(DISTINCT m) AS d, SUM(n) FILTER (WHERE b) AS s, SUM(x) * 1.0 / COUNT(*) AS r FROM TABLE(HOP(TABLE e, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '5' SECOND)) GROUP BY window_start, window_end, k HAVING COUNT(*) > 1",
		"SELECT k, TUMBLE_START(ts, INTERVAL '10' SECOND), TUMBLE_ROWTIME(ts, INTERVAL '10' SECOND), MAX(n) FROM e GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), k",
		"SELECT k, SESSION_END(ts, INTERVAL '1' SECOND), COUNT(*) FROM e GROUP BY SESSION(ts, INTERVAL '1' SECOND), k",
		"SELECT x.k, x.c FROM (SELECT window_end, k, COUNT(*) AS c FROM TUMBLE(e, ts, INTERVAL '1' SECOND) GROUP BY k) AS x WHERE x.c > 1",
		"SELECT e.*, u.country FROM e JOIN users AS u ON e.k = u.name",
		"SELECT window_start, u.country, COUNT(*) FROM TUMBLE(e, ts, INTERVAL '1' SECOND) JOIN users AS u ON e.k = u.name GROUP BY u.country",
		"SELECT l.k, COUNT(*) FROM TUMBLE(e, ts, INTERVAL '1' SECOND) AS l JOIN TUMBLE(e, ts, INTERVAL '1' SECOND) AS r ON l.k = r.k GROUP BY l.k",
		"CREATE TABLE o (a TIMESTAMP(3), b VARCHAR) WITH ('connector' = 'blackhole'); INSERT INTO o SELECT ts, k FROM e",
		"CREATE TABLE o (a BIGINT, b DOUBLE) WITH ('connector' = 'print'); INSERT INTO o (b, a) SELECT n, m FROM e",
		"CREATE TABLE src (ts TIMESTAMP(3), v DECIMAL(10, 2) NOT NULL, p AS PROCTIME(), WATERMARK FOR ts AS ts - INTERVAL '4' SECOND) WITH ('connector' = 'kafka', 'topic' = 't', 'properties.bootstrap.servers' = 'h:9092', 'format' = 'json')",
		"SELECT ts + INTERVAL '1' DAY, TIMESTAMP '2024-01-01 00:00:00' < ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), COALESCE(n, m, 0), IF(b, 1, 2), NULLIF(k, ''), n % 3 FROM e",
	} {
		f.Add(valuesBase + s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Compile(text)
		if err != nil {
			e, ok := err.(*Error)
			if !ok {
				t.Fatalf("%T is not an *Error: %v", err, err)
			}
			if e.Offset < 0 || e.Offset > len(text) {
				t.Fatalf("offset %d outside the %d-byte text: %v", e.Offset, len(text), e)
			}
			if pos := position(text, e.Offset); pos.line != e.Line || pos.col != e.Column {
				t.Fatalf("line %d column %d, but offset %d is at line %d column %d", e.Line, e.Column, e.Offset, pos.line, pos.col)
			}
			if e.Msg == "" {
				t.Fatal("an error without a message")
			}
			_ = e.Caret(text)
			return
		}
		for _, q := range p.Queries {
			var verr error
			if q.Spec.Join != nil {
				verr = q.Spec.Join.Validate()
			} else {
				verr = q.Spec.Query.Validate()
			}
			if verr != nil {
				t.Fatalf("query %s does not validate: %v", q.Name, verr)
			}
			if q.Output == nil || len(q.Columns) == 0 {
				t.Fatalf("query %s has no output columns", q.Name)
			}
		}
	})
}
