package reference

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// TestDelayCountsLateTuples: a watermark delay turns late tuples into
// counted ones, exactly: a tuple is late when W - D has reached the end of
// its window (the comments give the delays for which each is late).
func TestDelayCountsLateTuples(t *testing.T) {
	q := &query.Query{Name: "delay", Schema: testSchema(t), Window: query.Tumbling(10),
		Aggregates: []query.Aggregate{count(), agg(query.Sum, query.C("b"), "s")}}
	in := data(
		tu{ts: 1, b: 1},
		tu{ts: 5, b: 2},
		tu{ts: 3, b: 4},    // W=5: counted with any delay
		tu{ts: 12, b: 8},   // opens [10,20)
		tu{ts: 9, b: 16},   // W=12: late when 12-D >= 10, i.e. D <= 2
		tu{ts: 25, b: 32},  // opens [20,30)
		tu{ts: 19, b: 64},  // W=25: late when 25-D >= 20: D <= 5
		tu{ts: 10, b: 128}, // W=25, [10,20): late when D <= 5
		tu{ts: 8, b: 256},  // W=25, [0,10): late when D <= 15
	)
	for _, tc := range []struct {
		delay int64
		rows  []Row
		late  uint64
	}{
		{0, []Row{row(0, 10, "", Int(3), Int(7)), row(10, 20, "", Int(1), Int(8)), row(20, 30, "", Int(1), Int(32))}, 4},
		{2, []Row{row(0, 10, "", Int(3), Int(7)), row(10, 20, "", Int(1), Int(8)), row(20, 30, "", Int(1), Int(32))}, 4},
		{3, []Row{row(0, 10, "", Int(4), Int(23)), row(10, 20, "", Int(1), Int(8)), row(20, 30, "", Int(1), Int(32))}, 3},
		{6, []Row{row(0, 10, "", Int(4), Int(23)), row(10, 20, "", Int(3), Int(200)), row(20, 30, "", Int(1), Int(32))}, 1},
		{16, []Row{row(0, 10, "", Int(5), Int(279)), row(10, 20, "", Int(3), Int(200)), row(20, 30, "", Int(1), Int(32))}, 0},
		{math.MaxInt64, []Row{row(0, 10, "", Int(5), Int(279)), row(10, 20, "", Int(3), Int(200)), row(20, 30, "", Int(1), Int(32))}, 0},
	} {
		q.Window.Delay = tc.delay
		res := run(t, q, in)
		assert.Equal(t, tc.rows, res.Rows, "delay %d", tc.delay)
		assert.Equal(t, Counts{Tuples: 9, Late: tc.late, Counted: 9 - tc.late}, res.Counts, "delay %d", tc.delay)
	}

	// Row windows: the delay counts tuples. Positions run 0..5 in order, so
	// nothing is late: the delay changes no row.
	q.Window = query.Window{Type: query.Rows, Size: 2, Slide: 2, Delay: 1}
	res := run(t, q, data(tu{b: 1}, tu{b: 2}, tu{b: 4}))
	assert.Equal(t, []Row{row(0, 2, "", Int(2), Int(3)), row(2, 4, "", Int(1), Int(4))}, res.Rows)
}

// TestDelayAtTheEdges: W - D is never computed in int64: a watermark near
// MinInt64 minus a delay does not wrap to a large one, and an end plus a
// delay past MaxInt64 is never reached.
func TestDelayAtTheEdges(t *testing.T) {
	const low = -9223372036854770000
	q := &query.Query{Name: "edge", Schema: testSchema(t), Window: query.Tumbling(10000),
		Aggregates: []query.Aggregate{count()}}
	// W = low+20000 minus MaxInt64 wraps to a large positive in int64.
	q.Window.Delay = math.MaxInt64
	res := run(t, q, data(tu{ts: low + 20000}, tu{ts: low}))
	assert.Equal(t, Counts{Tuples: 2, Counted: 2}, res.Counts)
	// At the top, windows of 1, delay 5, W = MaxInt64: [M-7, M-6) closed
	// at M-1 and [M-6, M-5) at M (late); [M-2, M-1) would close at M+4,
	// past MaxInt64 (counted).
	q.Window = query.Tumbling(1)
	q.Window.Delay = 5
	res = run(t, q, data(tu{ts: math.MaxInt64}, tu{ts: math.MaxInt64 - 7}, tu{ts: math.MaxInt64 - 6}, tu{ts: math.MaxInt64 - 2}))
	assert.Equal(t, Counts{Tuples: 4, Late: 2, Counted: 2}, res.Counts)

	// The join's reference judges each stream with the delay.
	s := testSchema(t)
	j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Window{Type: query.Range, Size: 10, Slide: 10, Delay: 3}}
	require.NoError(t, j.Validate())
	l := data(tu{ts: 12}, tu{ts: 8}) // 12-3 < 10: 8 is on time
	r := data(tu{ts: 13}, tu{ts: 5}) // 13-3 >= 10: 5 is late
	jr, err := EvaluateJoin(j, l, r)
	require.NoError(t, err)
	assert.Equal(t, Counts{Tuples: 4, Late: 1, Counted: 3}, jr.Counts)
	assert.Len(t, jr.Tuples, 96, "one pair: (12, 13) in [10, 20); 8 has no partner in [0, 10)")
}
