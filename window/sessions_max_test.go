package window

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// sessionRow is an emitted session: its bounds, its key and its count.
type sessionRow struct{ start, end, key, n int64 }

// runSessions feeds the tuples (time, key) to a Sessions of gap and delay
// (COUNT(*) per key), cut into tasks at the cuts given, and returns what
// it emits, then what the flush emits, and its counters.
func runSessions(t *testing.T, gap, delay int64, tuples [][2]int64, cuts []int) ([]sessionRow, Counters) {
	t.Helper()
	l := &Layout{Groups: 16, Hashed: true}
	s := NewSessions(gap, delay, l)
	var out []sessionRow
	emit := func(r *Result) error {
		for _, g := range r.Rows {
			_, k1 := r.State.Key(g)
			out = append(out, sessionRow{r.Start, r.End, int64(k1), r.State.Row(g)[0]})
		}
		return nil
	}
	rs := SessionRecordSize(l)
	le := binary.LittleEndian
	from := 0
	for _, to := range append(cuts, len(tuples)) {
		res := TaskResult{MaxTS: math.MinInt64}
		wm := int64(math.MinInt64)
		for _, tk := range tuples[from:to] {
			rec := make([]byte, rs)
			le.PutUint64(rec, uint64(tk[0]))
			le.PutUint64(rec[8:], uint64(wm))
			binary.BigEndian.PutUint64(rec[24:], uint64(tk[1]))
			res.Out = append(res.Out, rec...)
			res.Tuples++
			wm = max(wm, tk[0])
		}
		res.MaxTS = wm
		require.NoError(t, s.MergeTake(&res, emit))
		from = to
	}
	require.NoError(t, s.Flush(emit))
	return out, s.Counters
}

// referenceSessions is the reference's sessions of the same query.
func referenceSessions(t *testing.T, gap, delay int64, tuples [][2]int64) ([]sessionRow, reference.Counts) {
	t.Helper()
	sch, err := query.NewSchema(16, query.Attribute{Name: "ts", Type: query.Int64, Offset: 0, Logical: query.Time},
		query.Attribute{Name: "k", Type: query.Int64, Offset: 8})
	require.NoError(t, err)
	w := query.Sessions(gap)
	w.Delay = delay
	q := &query.Query{Name: "s", Schema: sch, Window: w, GroupBy: []query.Expr{query.C("k")},
		Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
	var data []byte
	for _, tk := range tuples {
		data = binary.LittleEndian.AppendUint64(data, uint64(tk[0]))
		data = binary.LittleEndian.AppendUint64(data, uint64(tk[1]))
	}
	res, err := reference.Evaluate(q, data)
	require.NoError(t, err)
	var out []sessionRow
	for _, r := range res.Rows {
		out = append(out, sessionRow{r.Start, r.End, query.DecodeIntKey([]byte(r.Key), 8), r.Values[0].I})
	}
	return out, res.Counts
}

// TestSessionEndingAtMaxInt64: a session whose end is math.MaxInt64
// exactly closes once the watermark reaches it, and a tuple whose session
// would end there is late then, as at any other time: the example of the
// review, at the top of int64 and shifted down.
func TestSessionEndingAtMaxInt64(t *testing.T) {
	t.Parallel()
	const b, a = 2, 1
	for _, base := range []int64{math.MaxInt64 - 10, 1000} {
		tuples := [][2]int64{{base, b}, {base + 10, a}, {base, b}}
		for _, cuts := range [][]int{nil, {1}, {2}, {1, 2}} {
			got, c := runSessions(t, 10, 0, tuples, cuts)
			end := base + 10
			assert.Equal(t, []sessionRow{{base, end, b, 1}, {end, sat(end, 10), a, 1}}, got, "base %d, cuts %v", base, cuts)
			assert.Equal(t, uint64(1), c.Late, "base %d, cuts %v", base, cuts)
			assert.Equal(t, uint64(2), c.Counted, "base %d, cuts %v", base, cuts)
		}
	}
}

// sat is t + d, saturated at math.MaxInt64.
func sat(t, d int64) int64 {
	if t > math.MaxInt64-d {
		return math.MaxInt64
	}
	return t + d
}

// TestSessionsMatchReferenceAtMaxInt64: random tuples (out of order,
// late, a few keys) at ordinary times and at the top of int64, where
// sessions end at math.MaxInt64 exactly or past it, cut into random
// tasks, with and without a delay: the sessions and counters of the
// reference (evalSessions), in its order, but for the sessions whose ends
// saturate at math.MaxInt64 (those past it are flushed by true end there,
// by start here).
func TestSessionsMatchReferenceAtMaxInt64(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 64))
	atMax := 0
	for c := range 400 {
		gap := 1 + r.Int64N(12)
		delay := []int64{0, 0, 0, 2, 7}[r.IntN(5)]
		base := int64(1000)
		if c%2 == 1 {
			base = math.MaxInt64 - 40
		}
		n := 1 + r.IntN(30)
		tuples := make([][2]int64, n)
		for i := range tuples {
			off := r.Int64N(41)
			switch r.IntN(6) {
			case 0:
				off = 40 // math.MaxInt64 at the top
			case 1:
				off = 40 - gap // a session's end at math.MaxInt64 exactly
			}
			tuples[i] = [2]int64{base + off, r.Int64N(3)}
		}
		var cuts []int
		for i := 1; i < n; i++ {
			if r.IntN(4) == 0 {
				cuts = append(cuts, i)
			}
		}
		msg := fmt.Sprintf("case %d: gap %d, delay %d, tuples %v, cuts %v", c, gap, delay, tuples, cuts)
		want, wc := referenceSessions(t, gap, delay, tuples)
		got, gc := runSessions(t, gap, delay, tuples, cuts)
		require.Equal(t, wc.Late, gc.Late, msg)
		require.Equal(t, wc.Counted, gc.Counted, msg)
		if base == 1000 {
			require.Equal(t, want, got, msg)
			continue
		}
		require.ElementsMatch(t, want, got, msg)
		require.Equal(t, belowMax(want), belowMax(got), msg)
		if delay == 0 && slices.ContainsFunc(tuples, func(tk [2]int64) bool { return tk[0] == math.MaxInt64-gap }) &&
			slices.ContainsFunc(tuples, func(tk [2]int64) bool { return tk[0] == math.MaxInt64 }) {
			atMax++ // a session ends at math.MaxInt64, which the watermark reaches
		}
	}
	assert.Greater(t, atMax, 20, "cases with a session that ends at math.MaxInt64 exactly, reached")
}

// belowMax is the sessions of out that end before math.MaxInt64.
func belowMax(out []sessionRow) []sessionRow {
	var below []sessionRow
	for _, s := range out {
		if s.end < math.MaxInt64 {
			below = append(below, s)
		}
	}
	return below
}
