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
