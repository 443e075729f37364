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

// TestStringsFromCSV: VARCHAR columns decoded from CSV (short strings
// inline, long ones in the first stream's string heap, copied into the
// other's; the grouped one dictionary-encoded), grouped by, filtered on
// and printed by two queries over the same source, across many tasks:
// every row is what a plain Go count of the same records gives. The
// records come as CSV text (the decoders encode the grouped column) or
// from a Go function (TupleWriter.Append: Write encodes it).
func TestStringsFromCSV(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	names := []string{"a", "bb", "a-name-longer-than-twelve", strings.Repeat("x", 300), "\"quoted\", with a comma", "ünïcødé-ünïcødé"}
	var csv strings.Builder
	csv.WriteString("ts,name,note\n")
	type record struct {
		ts         int64
		name, note string
	}
	var recs []record
	count := map[[2]string]int{}
	hits := map[string]int{}
	const n = 20000
	for i := range n {
		name := names[r.IntN(len(names))]
		note := fmt.Sprintf("note %d %s", i, strings.Repeat("y", r.IntN(40)))
		ts := int64(i) // 1 ms apart: windows of 1 s hold 1000 records
		fmt.Fprintf(&csv, "%d,%s,%s\n", ts, quote(name), quote(note))
		recs = append(recs, record{ts, name, note})
		count[[2]string{fmt.Sprint(ts / 1000 * 1000), name}]++
		if strings.HasPrefix(note, "note 1") {
			hits[name]++
		}
	}
	for _, feed := range []string{"reader", "func"} {
		t.Run(feed, func(t *testing.T) {
			t.Parallel()
			prog, err := pipeline.Compile("strings.sql", `
CREATE SOURCE s (ts BIGINT, name VARCHAR, note VARCHAR)
  WITH (connector = 'go', format = 'csv', header = 'true');
CREATE VIEW per_name AS
  SELECT window_start, name, COUNT(*) AS n
  FROM TUMBLE(s, ts, INTERVAL '1' SECOND)
  GROUP BY window_start, name;
CREATE VIEW notes AS
  SELECT name, note FROM s WHERE note LIKE 'note 1%';`)
			require.NoError(t, err)
			assert.Contains(t, prog.SQL().Explain(), "name             VARCHAR      at 8, NULL bit 320, dictionary-encoded (number at 44)")
			if feed == "reader" {
				require.NoError(t, prog.AttachReader("s", strings.NewReader(csv.String())))
			} else {
				require.NoError(t, prog.AttachSource("s", func(_ context.Context, w *pipeline.TupleWriter) error {
					for _, rec := range recs {
						if err := w.Append(rec.ts, rec.name, rec.note); err != nil {
							return err
						}
					}
					return nil
				}))
			}
			got := map[[2]string]int{}
			require.NoError(t, prog.OnRows("per_name", func(rows *pipeline.Rows) error {
				for i := range rows.Len() {
					got[[2]string{rows.Text(i, 0), rows.Text(i, 1)}] += int(rows.Int(i, 2))
				}
				return nil
			}))
			gotHits := map[string]int{}
			var bad []string
			require.NoError(t, prog.OnRows("notes", func(rows *pipeline.Rows) error {
				for i := range rows.Len() {
					name, note := rows.Text(i, 0), rows.Text(i, 1)
					if !slices.Contains(names, name) || !strings.HasPrefix(note, "note 1") {
						bad = append(bad, name+" / "+note)
					}
					gotHits[name]++
				}
				return nil
			}))
			job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: 2, TaskSize: 4 << 10, BufferSize: 1 << 16}})
			require.NoError(t, err)
			defer job.Close()
			sum, err := job.Run(context.Background())
			require.NoError(t, err)
			assert.Equal(t, uint64(n), sum.Tuples)
			assert.Equal(t, count, got)
			assert.Equal(t, hits, gotHits)
			assert.Empty(t, bad)
		})
	}
}

// quote writes s as an RFC 4180 CSV field.
func quote(s string) string {
	if !strings.ContainsAny(s, ",\"\n\r") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// TestLongStringsOutgrowTheHeap: a file whose records' long strings, each
// under half the string heap, together outgrow it within one task: read by
// one decoder (its strings straight into the heap: the decoder stops
// before the record the heap has no room for, the tuples before it are
// committed, and it goes on) and by the pool (CommitCopy), every record
// comes out with its string, where the run waited for ever. The engine
// has the smallest string heap, 4 MiB (a 1 MiB ring of 512 KiB tasks),
// so that 6 MiB of strings outgrow it, where the default 16 MiB took 18
// MiB of them; each is 1.5 tasks, as before.
func TestLongStringsOutgrowTheHeap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "big.csv")
	const records = 8
	long := make([]string, records)
	var b strings.Builder
	for i := range records {
		long[i] = fmt.Sprint(i) + strings.Repeat("x", 768<<10) // 0.75 MiB
		fmt.Fprintf(&b, "%d,%s\n", i, long[i])
	}
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) {
			prog, err := pipeline.Compile("big.sql", fmt.Sprintf(`CREATE SOURCE s (ts BIGINT, name VARCHAR) WITH (connector = 'file', path = '%s', format = 'csv');
CREATE VIEW big AS SELECT ts, name FROM s;`, path))
			require.NoError(t, err)
			var mu sync.Mutex
			got := map[int64]string{}
			require.NoError(t, prog.OnRows("big", func(r *pipeline.Rows) error {
				mu.Lock()
				defer mu.Unlock()
				for i := range r.Len() {
					got[r.Int(i, 0)] = r.Text(i, 1)
				}
				return nil
			}))
			job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: workers, TaskSize: 512 << 10, BufferSize: 1 << 20}})
			require.NoError(t, err)
			defer job.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err = job.Run(ctx)
			require.NoError(t, err)
			require.Len(t, got, records)
			for i := range records {
				assert.True(t, got[int64(i)] == long[i], "record %d's string (%d bytes)", i, len(got[int64(i)]))
			}
		})
	}
}
