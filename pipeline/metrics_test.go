package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/metrics"
	"github.com/saber-hx/saber-hx/pipeline"
)

// gatherFamilies gathers reg, failing on an error (series that collide).
func gatherFamilies(t *testing.T, reg *metrics.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gatherer().Gather()
	require.NoError(t, err, "the scrape")
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// countingJob opens a program whose Go source feeds n tuples, its
// metrics into reg, its messages into log.
func countingJob(t *testing.T, reg *metrics.Registry, n int, log *bytes.Buffer) *pipeline.Job {
	t.Helper()
	prog, err := pipeline.Compile("-e", `CREATE SOURCE r (ts BIGINT, v INT) WITH (connector = 'go');
CREATE VIEW all_r AS SELECT ts, v FROM r;`)
	require.NoError(t, err)
	require.NoError(t, prog.AttachSource("r", func(ctx context.Context, w *pipeline.TupleWriter) error {
		for i := range n {
			if err := w.Append(int64(i), int32(i)); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, prog.OnRows("all_r", func(*pipeline.Rows) error { return nil }))
	job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: 1}, Metrics: reg, Log: log})
	require.NoError(t, err)
	return job
}

// recordsIn is the one saber_records_in_total sample of mfs (-1: none).
func recordsIn(t *testing.T, mfs map[string]*dto.MetricFamily) float64 {
	t.Helper()
	mf := mfs["saber_records_in_total"]
	if mf == nil {
		return -1
	}
	require.Len(t, mf.GetMetric(), 1)
	return mf.GetMetric()[0].GetCounter().GetValue()
}

// TestMetricsRegistryAcrossRuns: one registry (a long-lived service's one
// /metrics) over two runs, each closed: the finished run's series were
// served and the next's dropped, every scrape failing on the duplicates.
// Close removes what its job added; a job not closed has its series
// replaced by the next's of the same names, which the log says.
func TestMetricsRegistryAcrossRuns(t *testing.T) {
	t.Parallel()
	reg := metrics.NewRegistry(metrics.Options{})
	var log bytes.Buffer
	for _, n := range []int{10, 20} {
		job := countingJob(t, reg, n, &log)
		_, err := job.Run(context.Background())
		require.NoError(t, err)
		assert.EqualValues(t, n, recordsIn(t, gatherFamilies(t, reg)), "the run's tuples, after it and before its Close")
		job.Close()
		assert.EqualValues(t, -1, recordsIn(t, gatherFamilies(t, reg)), "a closed job's series")
	}
	assert.NotContains(t, log.String(), "metrics")

	// A job not closed (yet) before the next runs.
	first := countingJob(t, reg, 30, &log)
	defer first.Close()
	_, err := first.Run(context.Background())
	require.NoError(t, err)
	second := countingJob(t, reg, 40, &log)
	_, err = second.Run(context.Background())
	require.NoError(t, err)
	assert.EqualValues(t, 40, recordsIn(t, gatherFamilies(t, reg)), "the later run's")
	assert.Contains(t, log.String(), "saber-hx: warning: metrics: another run's queries all_r")
	first.Close() // its engine was replaced: the second's stays
	assert.EqualValues(t, 40, recordsIn(t, gatherFamilies(t, reg)))
	second.Close()
	assert.EqualValues(t, -1, recordsIn(t, gatherFamilies(t, reg)))
}

// runLags runs prog on one worker, its metrics in a registry of
// milliseconds (as saber-hx run --metrics-addr makes it), and returns each
// query's saber_event_time_lag_seconds once it ended.
func runLags(t *testing.T, prog *pipeline.Program) map[string]float64 {
	t.Helper()
	reg := metrics.NewRegistry(metrics.Options{})
	job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: 1}, Metrics: reg})
	require.NoError(t, err)
	defer job.Close()
	_, err = job.Run(context.Background())
	require.NoError(t, err)
	lags := map[string]float64{}
	if mf := gatherFamilies(t, reg)["saber_event_time_lag_seconds"]; mf != nil {
		for _, m := range mf.GetMetric() {
			lags[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	return lags
}

// TestEventTimeLagFollowsTimeUnit: saber_event_time_lag_seconds reads the
// watermark in its query's source's time_unit (and a view's reader in its
// input's): with one unit for the registry (milliseconds) event times of
// now were 1e9 s off in seconds, 1e12 s off in microseconds.
func TestEventTimeLagFollowsTimeUnit(t *testing.T) {
	t.Parallel()
	for _, unit := range []string{"s", "ms", "us"} {
		t.Run(unit, func(t *testing.T) {
			t.Parallel()
			prog, err := pipeline.Compile("-e", `CREATE SOURCE r (ts BIGINT, v INT) WITH (connector = 'go', time_unit = '`+unit+`');
CREATE VIEW c AS SELECT window_start, COUNT(*) AS n FROM TUMBLE(r, ts, INTERVAL '1' SECOND) GROUP BY window_start;
CREATE VIEW late AS SELECT window_start, COUNT(*) AS n FROM TUMBLE(c, window_start, INTERVAL '1' SECOND) GROUP BY window_start;`)
			require.NoError(t, err)
			per := map[string]int64{"s": 1e9, "ms": 1e6, "us": 1e3}[unit]
			require.NoError(t, prog.AttachSource("r", func(ctx context.Context, w *pipeline.TupleWriter) error {
				return w.Append(time.Now().UnixNano()/per, int32(1)) // now, in the source's unit
			}))
			for _, q := range []string{"c", "late"} {
				require.NoError(t, prog.OnRows(q, func(*pipeline.Rows) error { return nil }))
			}
			lags := runLags(t, prog)
			require.Contains(t, lags, "c")
			require.Contains(t, lags, "late", "a view's reader")
			for q, lag := range lags {
				assert.InDelta(t, 0, lag, 60, "query %s: the lag of event times that are now, in time_unit %s", q, unit)
			}
		})
	}
}

// TestEventTimeLagOfProcessingTime: a query windowed by a processing time
// reads milliseconds (the time the part before it stamps), whatever the
// source's time_unit says of its own event time; the lag was read in
// seconds, 1e3 times the clock.
func TestEventTimeLagOfProcessingTime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "r.csv")
	now := time.Now().Unix()
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "%d,%d\n", now, i)
	}
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	prog, err := pipeline.Compile("-e", `CREATE SOURCE r (ts BIGINT, v INT, WATERMARK FOR ts AS ts) WITH (connector = 'file', path = '`+path+`', format = 'csv', time_unit = 's');
CREATE VIEW v AS SELECT *, PROCTIME() AS p FROM r;
CREATE VIEW c AS SELECT window_start, COUNT(*) AS n FROM TUMBLE(v, p, INTERVAL '1' SECOND) GROUP BY window_start;`)
	require.NoError(t, err)
	require.NoError(t, prog.OnRows("c", func(*pipeline.Rows) error { return nil }))
	lags := runLags(t, prog)
	require.Contains(t, lags, "c")
	assert.InDelta(t, 0, lags["c"], 60, "the lag of processing times that are now")
}
