package pipeline_test

import (
	"context"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/pipeline"
)

// A REAL prints as the float32 it is wherever an expression passes it on.
func TestRealPrintsAsFloat32(t *testing.T) {
	t.Parallel()
	prog, err := pipeline.Compile("real.sql", `
CREATE SOURCE src (ts BIGINT, f FLOAT, d DOUBLE) WITH (connector = 'go', format = 'csv', header = 'true');
CREATE VIEW a AS SELECT f, CAST(d AS REAL) AS c, CAST(f AS VARCHAR) AS s, f || '' AS s2, d, CAST(f AS DOUBLE) AS fd FROM src;
CREATE VIEW m AS SELECT window_start, MAX(f) AS mx FROM TUMBLE(src, ts, INTERVAL '1' SECOND) GROUP BY window_start;`)
	require.NoError(t, err)
	got := csvRowsOf(t, prog, "ts,f,d\n1000,0.1,0.1\n", "a", "m")
	assert.Equal(t, "0.1,0.1,0.1,0.1,0.1,0.10000000149011612\n", got["a"])
	assert.Equal(t, "1000,0.1\n", got["m"])
}

// TestCSVOutputQuotesEmptyStrings: an empty string is written "" and a
// NULL as an empty field, so that the two read back apart (PostgreSQL's
// and DuckDB's CSV readers tell them so) and a row of one empty string
// is not an empty line, which CSV readers (this engine's decoder among
// them) skip.
func TestCSVOutputQuotesEmptyStrings(t *testing.T) {
	t.Parallel()
	prog, err := pipeline.Compile("empty.sql", `
CREATE SOURCE src (ts BIGINT, s VARCHAR) WITH (connector = 'go', format = 'csv', header = 'true');
CREATE VIEW two AS SELECT s, NULLIF(s, 'a') AS n FROM src;
CREATE VIEW one AS SELECT s FROM src;`)
	require.NoError(t, err)
	got := csvRowsOf(t, prog, "ts,s\n1,a\n2,\n3,\"\"\n", "two", "one")
	assert.Equal(t, "a,\n\"\",\"\"\n\"\",\"\"\n", got["two"])
	assert.Equal(t, "a\n\"\"\n\"\"\n", got["one"])
	recs, err := csv.NewReader(strings.NewReader(got["one"])).ReadAll()
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"a"}, {""}, {""}}, recs, "every row read back")
}

// csvRowsOf runs prog on one worker over input, its source src's text,
// and returns the rows of each of views as CSV (Rows.AppendCSV).
func csvRowsOf(t *testing.T, prog *pipeline.Program, input string, views ...string) map[string]string {
	t.Helper()
	require.NoError(t, prog.AttachReader("src", strings.NewReader(input)))
	got := map[string]string{}
	for _, v := range views {
		require.NoError(t, prog.OnRows(v, func(rows *pipeline.Rows) error {
			for i := range rows.Len() {
				got[v] += string(rows.AppendCSV(nil, i))
			}
			return nil
		}))
	}
	job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: 1}})
	require.NoError(t, err)
	defer job.Close()
	_, err = job.Run(context.Background())
	require.NoError(t, err)
	return got
}
