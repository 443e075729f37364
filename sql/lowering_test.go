package sql

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/strview"
)

// The lowerings' meaning, checked against SQL's: what the compiled
// program outputs (run through the engine) against the answer computed
// from the reference evaluator's rows of a plain aggregation and Go.

// rowsByWindow runs a plain aggregation (q over data) in the reference:
// its rows.
func refRows(t *testing.T, q *query.Query, data []byte) []reference.Row {
	t.Helper()
	res, err := reference.Evaluate(q, data)
	require.NoError(t, err)
	return res.Rows
}

// TestCountDistinctMeaning: COUNT(DISTINCT k) per window and key is the
// number of k's distinct values that are not NULL among the window's
// tuples of the key, as a GROUP BY m, k over the window counts them.
func TestCountDistinctMeaning(t *testing.T) {
	for _, win := range []string{"TUMBLE(e, ts, INTERVAL '5' SECOND)", "HOP(e, ts, INTERVAL '2' SECOND, INTERVAL '6' SECOND)"} {
		var a strview.Arena
		p, data := compileValues(t, "SELECT window_start, window_end, m, COUNT(DISTINCT k) AS dk FROM "+win+" GROUP BY m", 3, 3, &a)
		outs := runProgram(t, p, data, &a, 16)
		final := p.Queries[len(p.Queries)-1]
		got, err := reference.DecodeTuples(final.Output, outs[len(outs)-1].tuples)
		require.NoError(t, err)
		// the same windows, grouped by m and k, in the reference
		inner := p.Queries[0].Spec.Query
		plain := &query.Query{Name: "plain", Schema: inner.Schema, Window: inner.Window,
			GroupBy: []query.Expr{query.C("m"), query.C("k")}, Aggregates: []query.Aggregate{{Func: query.Count, As: "c"}}}
		type wk struct {
			start int64
			m     string
		}
		want := map[wk]map[string]bool{}
		for _, r := range refRows(t, plain, data["e"]) {
			// keys: m (a nullable int32: a NULL byte, then 4 bytes), k (a string's form)
			mk := "NULL"
			if r.Key[0] != 0 {
				mk = fmt.Sprint(query.DecodeIntKey([]byte(r.Key[1:5]), 4))
			}
			k := wk{r.Start, mk}
			if want[k] == nil {
				want[k] = map[string]bool{}
			}
			ks, null, _, err := query.DecodeStringKey([]byte(r.Key[5:]))
			require.NoError(t, err)
			if !null {
				want[k][string(ks)] = true
			}
		}
		var wantRows, gotRows []string
		for k, ks := range want {
			wantRows = append(wantRows, fmt.Sprintf("%d %s %d", k.start, k.m, len(ks)))
		}
		col := func(v []reference.Value, name string) reference.Value {
			for _, oc := range final.Columns {
				if oc.Name == name {
					if oc.Kind == WindowEnd {
						return reference.Int(v[0].I + final.Spec.Query.Window.Size)
					}
					return v[oc.Attr]
				}
			}
			t.Fatalf("no column %s", name)
			return reference.Value{}
		}
		for _, v := range got {
			m := "NULL"
			if x := col(v, "m"); !x.Null {
				m = fmt.Sprint(x.I)
			}
			start := col(v, "window_start").I
			gotRows = append(gotRows, fmt.Sprintf("%d %s %d", start, m, col(v, "dk").I))
			require.Equal(t, start+inner.Window.Size, col(v, "window_end").I, "window_end")
		}
		slices.Sort(wantRows)
		slices.Sort(gotRows)
		require.NotEmpty(t, wantRows)
		require.Equal(t, wantRows, gotRows, win)
		a.Free()
	}
}

// TestWindowsOfViewsMeaning: Nexmark q5's shape, an aggregation over a
// view of windows grouped by its window start and a join of two such on
// their starts, gives the auctions with the most bids of each window.
func TestWindowsOfViewsMeaning(t *testing.T) {
	var a strview.Arena
	defer a.Free()
	p, data := compileValues(t, `SELECT AuctionBids.k, AuctionBids.num, AuctionBids.starttime
		FROM (SELECT k, COUNT(*) AS num, window_start AS starttime, window_end AS endtime
		      FROM TABLE(HOP(TABLE e, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
		      GROUP BY k, window_start, window_end) AS AuctionBids
		JOIN (SELECT MAX(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
		      FROM (SELECT COUNT(*) AS num, window_start AS starttime, window_end AS endtime
		            FROM TABLE(HOP(TABLE e, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
		            GROUP BY k, window_start, window_end) CountBids
		      GROUP BY CountBids.starttime, CountBids.endtime) AS MaxBids
		ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime AND AuctionBids.num >= MaxBids.maxn`,
		5, 0, &a)
	checkProgram(t, p, data, &a, 16)
	outs := runProgram(t, p, data, &a, 16)
	final := p.Queries[len(p.Queries)-1]
	got, err := reference.DecodeTuples(final.Output, outs[len(outs)-1].tuples)
	require.NoError(t, err)
	// the per-window counts of each k, in the reference; the k's whose
	// count is the window's highest
	first := p.Queries[0].Spec.Query
	plain := &query.Query{Name: "plain", Schema: first.Schema, Window: first.Window,
		GroupBy: []query.Expr{query.C("k")}, Aggregates: []query.Aggregate{{Func: query.Count, As: "c"}}}
	rows := refRows(t, plain, data["e"])
	top := map[int64]int64{}
	for _, r := range rows {
		top[r.Start] = max(top[r.Start], r.Values[0].I)
	}
	var want, have []string
	for _, r := range rows {
		if r.Values[0].I == top[r.Start] {
			want = append(want, fmt.Sprintf("%d %d", r.Start, r.Values[0].I))
		}
	}
	for _, v := range got {
		have = append(have, fmt.Sprintf("%d %d", v[3].I, v[2].I))
	}
	slices.Sort(want)
	slices.Sort(have)
	require.NotEmpty(t, want)
	require.Equal(t, want, have)
}
