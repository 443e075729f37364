package sql

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// INTERVAL arithmetic on a BIGINT event time (and the window bounds over
// one) is in the source's time_unit, as the windows are: with seconds,
// window_start + INTERVAL '1' MINUTE adds 60. A number of no known unit
// is refused.
func TestIntervalInTimeUnit(t *testing.T) {
	src := func(unit string) string {
		return `CREATE SOURCE e (ts BIGINT, v INT, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH (connector = 'stdin', format = 'csv', time_unit = '` + unit + `');
`
	}
	rows := [][]any{{1}, {2}, {3}}
	p, out := semRun(t, src("s")+`CREATE VIEW w AS SELECT window_start, window_start + INTERVAL '1' MINUTE AS a, window_end - INTERVAL '30' SECOND AS b,
  INTERVAL '2' SECOND + window_start AS c, COUNT(*) AS n FROM TUMBLE(e, ts, INTERVAL '10' SECOND) GROUP BY window_start;
SELECT window_start, a, b, c FROM w;
SELECT ts + INTERVAL '2' SECOND AS t2, ts - INTERVAL '1' MINUTE AS t3 FROM e WHERE ts + INTERVAL '1' MINUTE < 1262;
SELECT window_start - INTERVAL '1' MINUTE AS a0, window_start + INTERVAL '1' HOUR AS h FROM w`, rows...)
	assert.Equal(t, int64(10), p.Queries[0].Spec.Query.Window.Size, "the window in seconds")
	// rows at 1000, 1100 and 1200 s: a window each
	assert.Equal(t, [][]string{{"1000", "1060", "980", "1002"}, {"1100", "1160", "1080", "1102"}, {"1200", "1260", "1180", "1202"}}, out[2])
	assert.Equal(t, [][]string{{"1002", "940"}, {"1102", "1040"}, {"1202", "1140"}}, out[3])
	assert.Equal(t, [][]string{{"940", "4600"}, {"1040", "4700"}, {"1140", "4800"}}, out[4])

	// milliseconds, the default
	_, out = semRun(t, src("ms")+`SELECT ts + INTERVAL '2' SECOND AS t2 FROM e`, rows...)
	assert.Equal(t, [][]string{{"3000"}, {"3100"}, {"3200"}}, out[0])

	for _, q := range []string{
		`SELECT v + INTERVAL '1' SECOND AS x FROM e`,
		// a view's column computed from a time: no longer known as one
		`CREATE VIEW w AS SELECT window_start + 1 AS a, COUNT(*) AS n FROM TUMBLE(e, ts, INTERVAL '10' SECOND) GROUP BY window_start;
SELECT a - INTERVAL '1' MINUTE AS a0 FROM w`,
		`SELECT ts + INTERVAL '0.5' SECOND AS x FROM e`,
		`SELECT ts FROM e WHERE ts < 1000 + INTERVAL '1' MINUTE`,
	} {
		_, err := Compile(src("s") + q)
		require.Error(t, err, q)
		t.Log(err)
	}
}
