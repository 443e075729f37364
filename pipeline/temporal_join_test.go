package pipeline_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/pipeline"
)

// TestTemporalLookupJoin: a lookup join as Flink writes it and Nexmark's
// q13 does: the table declared with Flink's old descriptor options and a
// file:// path under ${NAME}, the stream a subquery adding PROCTIME(),
// JOIN table FOR SYSTEM_TIME AS OF that processing time, keyed by an
// expression of the stream's columns. Its rows are a plain Go join's
// (a NULL key and a key without a row match nothing; Java's and Go's %
// keep a negative dividend's sign), whatever the workers and task size.
func TestTemporalLookupJoin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var side strings.Builder
	values := map[int64]string{}
	for k := range int64(10) {
		if k == 3 {
			continue // a key without a row
		}
		values[k] = fmt.Sprintf("v%d", k)
		fmt.Fprintf(&side, "%d,%s\n", k, values[k])
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "side.csv"), []byte(side.String()), 0o644))
	r := rand.New(rand.NewPCG(1, 2))
	var events strings.Builder
	var want []string
	for i := range 20000 {
		ts := int64(i)
		if r.IntN(50) == 0 {
			fmt.Fprintf(&events, "%d,\n", ts) // a NULL auction
			continue
		}
		auction := r.Int64N(2000) - 100
		fmt.Fprintf(&events, "%d,%d\n", ts, auction)
		if v, ok := values[auction%10]; ok {
			want = append(want, fmt.Sprintf("%d,%d,%s", ts, auction, v))
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "e.csv"), []byte(events.String()), 0o644))
	text := `CREATE TABLE e (ts BIGINT, auction BIGINT, WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem', 'path' = 'file://${DATA}/e.csv', 'format' = 'csv');
CREATE TABLE side_input (key BIGINT, ` + "`value`" + ` VARCHAR) WITH ('connector.type' = 'filesystem', 'connector.path' = 'file://${DATA}/side.csv', 'format.type' = 'csv');
CREATE VIEW out AS SELECT B.ts, B.auction, S.` + "`value`" + `
FROM (SELECT *, PROCTIME() AS p_time FROM e) B
JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S
ON MOD(B.auction, 10) = S.key;`
	env := func(k string) (string, bool) {
		if k == "DATA" {
			return dir, true
		}
		return "", false
	}
	slices.Sort(want)
	for _, cfg := range []engine.Config{{Workers: 1}, {Workers: 2, TaskSize: 24 * 64}, {Workers: 3, TaskSize: 24 * 1000}} {
		t.Run(fmt.Sprintf("w%d", cfg.Workers), func(t *testing.T) {
			prog, err := pipeline.CompileEnv("-e", text, env)
			require.NoError(t, err)
			assert.Equal(t, want, validatedRows(t, prog, "out", cfg))
		})
	}
}

// TestLookupJoinKeyExpressions: the stream's side of a lookup join's ON as
// an expression of each type: a string's (LOWER(name)) and an integer's,
// computed by the lookup kernel, and a timestamp's, computed by a part
// before the join. Rows are a plain Go join's at 1 and 2 workers.
func TestLookupJoinKeyExpressions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// An empty CSV field of a VARCHAR is the empty string, a key too.
	names := []string{"Paris", "LYON", "nice", "Ab", "Oslo!", ""}
	keys := map[int]string{} // the table's key of each length
	var side strings.Builder
	for _, k := range []string{"paris", "lyon", "ab", ""} {
		keys[len(k)] = k
		at := time.UnixMilli(int64(len(k)) * 1000).UTC().Format("2006-01-02 15:04:05.000")
		fmt.Fprintf(&side, "%s,%d,%s\n", k, len(k)*100, at)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "side.csv"), []byte(side.String()), 0o644))
	r := rand.New(rand.NewPCG(5, 6))
	var events strings.Builder
	var names3k []string
	for i := range 3000 {
		n := names[r.IntN(len(names))]
		names3k = append(names3k, n)
		at := time.UnixMilli(int64(len(n))*1000 - 1000).UTC().Format("2006-01-02 15:04:05.000")
		fmt.Fprintf(&events, "%d,%s,%s\n", i, n, at)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "e.csv"), []byte(events.String()), 0o644))
	byLength := func(n string) (string, bool) {
		k, ok := keys[len(n)]
		return k, ok
	}
	for _, c := range []struct {
		on    string
		match func(name string) (string, bool) // the table's key that the row matches
	}{
		{"LOWER(B.name) = S.k", func(n string) (string, bool) {
			k, ok := keys[len(n)]
			return k, ok && k == strings.ToLower(n)
		}},
		{"CHAR_LENGTH(B.name) * 100 = S.n", byLength},
		{"B.at + INTERVAL '1' SECOND = S.t", byLength},
	} {
		text := `CREATE TABLE e (ts BIGINT, name VARCHAR, at TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem', 'path' = '` + dir + `/e.csv', 'format' = 'csv');
CREATE TABLE side_input (k VARCHAR, n BIGINT, t TIMESTAMP(3)) WITH ('connector' = 'filesystem', 'path' = '` + dir + `/side.csv', 'format' = 'csv');
CREATE VIEW out AS SELECT B.ts, S.k FROM (SELECT *, PROCTIME() AS p FROM e) AS B
JOIN side_input FOR SYSTEM_TIME AS OF B.p AS S ON ` + c.on + `;`
		var want []string
		for i, n := range names3k {
			if k, ok := c.match(n); ok {
				want = append(want, fmt.Sprintf("%d,%s", i, k))
			}
		}
		slices.Sort(want)
		for _, w := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/w%d", c.on, w), func(t *testing.T) {
				prog, err := pipeline.Compile("-e", text)
				require.NoError(t, err)
				assert.Equal(t, want, validatedRows(t, prog, "out", engine.Config{Workers: w, TaskSize: 1 << 12}))
			})
		}
	}
}

// validatedRows runs prog with the reference evaluator checking every
// query (Options.Validate) and returns view's rows, each its columns'
// text joined by commas, sorted.
func validatedRows(t *testing.T, prog *pipeline.Program, view string, cfg engine.Config) []string {
	t.Helper()
	var mu sync.Mutex
	var got []string
	require.NoError(t, prog.OnRows(view, func(rows *pipeline.Rows) error {
		mu.Lock()
		defer mu.Unlock()
		for i := range rows.Len() {
			var b []byte
			for c := range rows.Columns() {
				if c > 0 {
					b = append(b, ',')
				}
				b = rows.AppendText(b, i, c)
			}
			got = append(got, string(b))
		}
		return nil
	}))
	job, err := prog.Open(pipeline.Options{Engine: cfg, Validate: true})
	require.NoError(t, err)
	defer job.Close()
	sum, err := job.Run(context.Background())
	require.NoError(t, err)
	require.NotNil(t, sum.Validated)
	assert.True(t, *sum.Validated, "the reference evaluator's rows: %+v", sum.Queries)
	slices.Sort(got)
	return got
}
