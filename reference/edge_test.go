package reference

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// TestInt64EdgesTop: a window whose end lies past MaxInt64 is closed by no
// watermark: its tuples are counted, and its row's End is MaxInt64 (issue
// 12: MaxInt64-100 then MaxInt64-50 in one 10 s window counted 2).
func TestInt64EdgesTop(t *testing.T) {
	const top = math.MaxInt64 / 10000 * 10000 // the topmost window's start
	q := &query.Query{Name: "top", Schema: testSchema(t), Window: query.Tumbling(10000),
		Aggregates: []query.Aggregate{count(), agg(query.Max, query.C("ts"), "m")}}
	res := run(t, q, data(tu{ts: math.MaxInt64 - 100}, tu{ts: math.MaxInt64 - 50}))
	assert.Equal(t, []Row{row(top, math.MaxInt64, "", Int(2), Int(math.MaxInt64-50))}, res.Rows)
	assert.Equal(t, Counts{Tuples: 2, Counted: 2}, res.Counts)

	// [0, MaxInt64]: the top row holds MaxInt64, and 0 is not late.
	res = run(t, q, data(tu{ts: 0}, tu{ts: math.MaxInt64}, tu{ts: math.MaxInt64 - 1}))
	assert.Equal(t, []Row{
		row(0, 10000, "", Int(1), Int(0)),
		row(top, math.MaxInt64, "", Int(2), Int(math.MaxInt64)),
	}, res.Rows)

	// A window ending exactly at MaxInt64 is closed by the watermark
	// MaxInt64; the one past it is not.
	q.Window = query.Tumbling(1)
	res = run(t, q, data(tu{ts: math.MaxInt64}, tu{ts: math.MaxInt64 - 1}, tu{ts: math.MaxInt64}))
	assert.Equal(t, []Row{row(math.MaxInt64, math.MaxInt64, "", Int(2), Int(math.MaxInt64))}, res.Rows)
	assert.Equal(t, Counts{Tuples: 3, Late: 1, Counted: 2}, res.Counts)

	// Sliding: MaxInt64 is in windows whose ends are all past it.
	q.Window = query.Sliding(4, 2)
	res = run(t, q, data(tu{ts: math.MaxInt64 - 3}, tu{ts: math.MaxInt64}, tu{ts: math.MaxInt64 - 3}))
	assert.Equal(t, []Row{
		row(math.MaxInt64-5, math.MaxInt64-1, "", Int(1), Int(math.MaxInt64-3)),
		row(math.MaxInt64-3, math.MaxInt64, "", Int(2), Int(math.MaxInt64)),
		row(math.MaxInt64-1, math.MaxInt64, "", Int(1), Int(math.MaxInt64)),
	}, res.Rows)
	assert.Equal(t, Counts{Tuples: 3, Late: 1, Counted: 2}, res.Counts, "the last tuple's first window ended at MaxInt64-1")
}

// TestInt64EdgesBottom: the lowest windows start at an int64 or the tuple
// is refused (issue 12: -9223372036854770000 starts its own 10 s window;
// MinInt64's window would start below MinInt64).
func TestInt64EdgesBottom(t *testing.T) {
	const low = -9223372036854770000
	q := &query.Query{Name: "low", Schema: testSchema(t), Window: query.Tumbling(10000), Where: query.ColGe("a", 0),
		Aggregates: []query.Aggregate{count()}}
	res := run(t, q, data(tu{ts: low}, tu{ts: low + 9999}))
	assert.Equal(t, []Row{row(low, low+10000, "", Int(2))}, res.Rows)

	// MinInt64 is refused when it passes WHERE, late or not, and only then.
	res = run(t, q, data(tu{ts: math.MinInt64, a: -1}, tu{ts: low}))
	assert.Equal(t, Counts{Tuples: 2, Filtered: 1, Counted: 1}, res.Counts)
	for _, d := range [][]byte{
		data(tu{ts: low}, tu{ts: math.MinInt64}),
		data(tu{ts: 1 << 40}, tu{ts: math.MinInt64}), // late as well
	} {
		_, err := Evaluate(q, d)
		assert.EqualError(t, err, `reference: query "low": tuple 1 (byte offset 48): event time -9223372036854775808 lies in a window starting below the int64 range (window [-9223372036854780000, -9223372036854770000))`)
	}
	// Sliding: the first of a tuple's windows must start at an int64.
	q.Window = query.Sliding(20000, 10000)
	_, err := Evaluate(q, data(tu{ts: low}))
	assert.ErrorContains(t, err, "tuple 0 (byte offset 0): event time -9223372036854770000 lies in a window starting below")
	res = run(t, q, data(tu{ts: low + 10000}))
	assert.Equal(t, []Row{row(low, low+20000, "", Int(1)), row(low+10000, low+30000, "", Int(1))}, res.Rows)

	// Windows of one: MinInt64 starts its own.
	q.Window = query.Tumbling(1)
	res = run(t, q, data(tu{ts: math.MinInt64}))
	assert.Equal(t, []Row{row(math.MinInt64, math.MinInt64+1, "", Int(1))}, res.Rows)
}

// TestInt64EdgesJoin: the window join's reference at the edges.
func TestInt64EdgesJoin(t *testing.T) {
	s := testSchema(t)
	j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Tumbling(10)}
	require.NoError(t, j.Validate())
	res, err := EvaluateJoin(j, data(tu{ts: math.MaxInt64}), data(tu{ts: math.MaxInt64 - 5}))
	require.NoError(t, err)
	assert.Len(t, res.Tuples, 96, "one pair in the topmost window")
	_, err = EvaluateJoin(j, data(tu{ts: 0}), data(tu{ts: 0}, tu{ts: math.MinInt64}))
	assert.ErrorContains(t, err, `join "j": right input: tuple 1 (byte offset 48): event time -9223372036854775808 lies in a window starting below the int64 range`)
}
