package sql

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/strview"
)

// watermarkRun runs text's first query over source e's rows at the given
// event times (ms after base; the other columns as semTuples takes them),
// checked against the reference, and returns its rows as "start n sum"
// and its late count.
func watermarkRun(t *testing.T, text string, times []int64, rows ...[]any) ([]string, uint64) {
	t.Helper()
	const base = 1_700_000_000_000 // a multiple of every window here
	a := strview.NewArena(1 << 16)
	t.Cleanup(a.Free)
	p := mustCompile(t, text)
	src := p.Source("e")
	data := semTuples(t, src, a, rows...)
	require.Len(t, times, len(rows))
	for i, ts := range times {
		binary.LittleEndian.PutUint64(data[i*src.Schema.TupleSize:], uint64(base+ts))
	}
	outs := checkProgram(t, p, map[string][]byte{"e": data}, a, 64)
	var got []string
	for _, r := range outs[0].rows {
		got = append(got, fmt.Sprintf("%d %s %s", r.Start-base, r.Values[0].Text(), r.Values[1].Text()))
	}
	return got, outs[0].counts.Late
}

// Flink SQL's watermark is the largest event time minus the WATERMARK's
// delay, without the DataStream API's minus one, and it fires a window
// [s, e) once it reaches e - 1, the window's last millisecond (its timer,
// and its lateness test, are at window_end - 1): after a tuple at
// e - 1 + delay, the window is closed and a tuple of it is late.
func TestWatermarkClosesAtLastMillisecond(t *testing.T) {
	const src = `CREATE SOURCE e (ts TIMESTAMP(3), v BIGINT, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH (connector = 'stdin', format = 'csv');
`
	rows := [][]any{{1}, {2}, {4}, {8}, {16}}

	// 5999 puts the watermark at 4999: [0, 5000) fires, and 4000 after it
	// is late, as 4500 after 6000 is.
	got, late := watermarkRun(t, src+`SELECT window_start, COUNT(*) AS n, SUM(v) AS s
FROM TABLE(TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY window_start`,
		[]int64{0, 5999, 4000, 6000, 4500}, rows...)
	assert.Equal(t, []string{"0 1 1", "5000 2 10"}, got)
	assert.Equal(t, uint64(2), late)

	// The same for a session: 1999 puts the watermark at 999, the last
	// millisecond of the session [0, 1000), which fires; the tuple at 0
	// after it is late (its own window is [0, 1000) too).
	got, late = watermarkRun(t, src+`SELECT window_start, COUNT(*) AS n, SUM(v) AS s
FROM TABLE(SESSION(TABLE e, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end`,
		[]int64{0, 1999, 0, 1999, 5000}, rows...)
	assert.Equal(t, []string{"0 1 1", "1999 2 10", "5000 1 16"}, got)
	assert.Equal(t, uint64(1), late)

	// A tuple one millisecond before that is not late: the watermark is
	// 4998 after 5998.
	got, late = watermarkRun(t, src+`SELECT window_start, COUNT(*) AS n, SUM(v) AS s
FROM TABLE(TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY window_start`,
		[]int64{0, 5998, 4999, 6000, 4500}, rows...)
	assert.Equal(t, []string{"0 2 5", "5000 2 10"}, got)
	assert.Equal(t, uint64(1), late)
}
