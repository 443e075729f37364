package pipeline_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/pipeline"
)

// TestProcTime: a processing-time column, declared in the source (p AS
// PROCTIME()) or added by a view of it (SELECT *, PROCTIME() AS p, as
// Nexmark's q12), holds the wall clock when the tuple was read (never
// earlier than the run's start nor later than its end, never decreasing),
// whatever the records hold; a processing-time window counts every
// record, at one worker (one decoder) and at two (decoders in parallel).
func TestProcTime(t *testing.T) {
	t.Parallel()
	var csv strings.Builder
	csv.WriteString("ts,k\n")
	for i := range 5000 {
		csv.WriteString(strconv.Itoa(i) + "," + strconv.Itoa(i%3) + "\n")
	}
	for _, c := range []struct{ name, text string }{
		{"declared", `
CREATE SOURCE s (ts BIGINT, k INT, p AS PROCTIME()) WITH (connector = 'go', format = 'csv', header = 'true');
CREATE VIEW stamped AS SELECT ts, p FROM s;
CREATE VIEW per_second AS SELECT window_start, COUNT(*) AS n FROM TUMBLE(s, p, INTERVAL '1' SECOND) GROUP BY window_start;`},
		{"view", `
CREATE SOURCE s (ts BIGINT, k INT) WITH (connector = 'go', format = 'csv', header = 'true');
CREATE VIEW sp AS SELECT *, PROCTIME() AS p FROM s;
CREATE VIEW stamped AS SELECT ts, p FROM sp;
CREATE VIEW per_second AS SELECT window_start, COUNT(*) AS n FROM TUMBLE(sp, p, INTERVAL '1' SECOND) GROUP BY window_start;`},
	} {
		for _, workers := range []int{1, 2} {
			prog, err := pipeline.Compile("p.sql", c.text)
			require.NoError(t, err, c.name)
			require.NoError(t, prog.AttachReader("s", strings.NewReader(csv.String())))
			var stamps, times []int64
			require.NoError(t, prog.OnRows("stamped", func(rows *pipeline.Rows) error {
				for i := range rows.Len() {
					times = append(times, rows.Int(i, 0))
					stamps = append(stamps, rows.Int(i, 1))
				}
				return nil
			}))
			var counted int64
			var starts []int64
			require.NoError(t, prog.OnRows("per_second", func(rows *pipeline.Rows) error {
				for i := range rows.Len() {
					starts = append(starts, rows.Int(i, 0))
					counted += rows.Int(i, 1)
				}
				return nil
			}))
			job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: workers, TaskSize: 16 * 64, BufferSize: 1 << 14}})
			require.NoError(t, err)
			before := time.Now().UnixMilli()
			_, err = job.Run(context.Background())
			after := time.Now().UnixMilli()
			job.Close()
			require.NoError(t, err, c.name)
			require.Len(t, stamps, 5000, c.name)
			for i, p := range stamps {
				require.Equal(t, int64(i), times[i], "%s: tuple %d", c.name, i)
				require.True(t, p >= before && p <= after, "%s: tuple %d stamped %d, outside the run [%d, %d]", c.name, i, p, before, after)
				if i > 0 {
					require.GreaterOrEqual(t, p, stamps[i-1], "%s: tuple %d", c.name, i)
				}
			}
			assert.Equal(t, int64(5000), counted, "%s at %d workers", c.name, workers)
			// Every query over the source sees the stamps, not only the
			// one its reads go to first.
			for _, ws := range starts {
				assert.True(t, ws > before-1000 && ws <= after, "%s at %d workers: a window at %d, outside the run [%d, %d]", c.name, workers, ws, before, after)
			}
		}
	}
}

// TestAppendValues: TupleWriter.Append takes strings, times, booleans and
// NULLs, the PROCTIME() column left out.
func TestAppendValues(t *testing.T) {
	t.Parallel()
	prog, err := pipeline.Compile("a.sql", `
CREATE SOURCE s (ts TIMESTAMP(3), name VARCHAR, ok BOOLEAN, n BIGINT, p AS PROCTIME()) WITH (connector = 'go', format = 'json');
CREATE VIEW v AS SELECT ts, name, ok, n FROM s;`)
	require.NoError(t, err)
	long := strings.Repeat("a long name ", 5)
	require.NoError(t, prog.AttachSource("s", func(ctx context.Context, w *pipeline.TupleWriter) error {
		if err := w.Append(time.UnixMilli(1000).UTC(), "short", true, int64(7)); err != nil {
			return err
		}
		if err := w.Append(int64(2000), []byte(long), false, nil); err != nil {
			return err
		}
		return w.Append(int64(3000), nil, nil, int64(-1))
	}))
	var got []string
	require.NoError(t, prog.OnRows("v", func(rows *pipeline.Rows) error {
		for i := range rows.Len() {
			got = append(got, string(rows.AppendCSV(nil, i)))
		}
		return nil
	}))
	job, err := prog.Open(pipeline.Options{})
	require.NoError(t, err)
	defer job.Close()
	_, err = job.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{
		"1970-01-01 00:00:01.000,short,true,7\n",
		"1970-01-01 00:00:02.000," + long + ",false,\n",
		"1970-01-01 00:00:03.000,,,-1\n",
	}, got)

	prog, err = pipeline.Compile("b.sql", "CREATE SOURCE s (ts BIGINT, n BIGINT NOT NULL) WITH (connector = 'go'); CREATE VIEW v AS SELECT n FROM s;")
	require.NoError(t, err)
	require.NoError(t, prog.AttachSource("s", func(ctx context.Context, w *pipeline.TupleWriter) error { return w.Append(int64(1), nil) }))
	job, err = prog.Open(pipeline.Options{})
	require.NoError(t, err)
	defer job.Close()
	_, err = job.Run(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "column n: value of the wrong type: NULL in a column declared NOT NULL")
}
