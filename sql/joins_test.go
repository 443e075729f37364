package sql

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/strview"
)

// Joins as Flink SQL users write them, run through the engine, their rows
// compared with what Flink outputs for the same input.

// joinTuples lays out rows of source src: each row its declared columns'
// values in order, the event time first (as putValues takes them).
func joinTuples(t *testing.T, src *Source, a *strview.Arena, rows ...[]any) []byte {
	t.Helper()
	s := src.Schema
	data := make([]byte, len(rows)*s.TupleSize)
	for i, row := range rows {
		require.Len(t, row, len(src.Columns), "row %d", i)
		putValues(t, src, a, data[i*s.TupleSize:(i+1)*s.TupleSize], 0, row)
	}
	return data
}

// joinRows runs p (tables loaded) over data, in tasks of taskTuples
// tuples, and returns the rows of its last query, each its columns'
// values joined by ',' (NULL for NULL, an ENUM by its label), sorted.
func joinRows(t *testing.T, p *Program, data map[string][]byte, a *strview.Arena, taskTuples int) []string {
	t.Helper()
	outs := runProgram(t, p, data, a, taskTuples)
	last := p.Queries[len(p.Queries)-1]
	vs, err := reference.DecodeTuples(last.Output, outs[len(outs)-1].tuples)
	require.NoError(t, err)
	var rows []string
	for _, v := range vs {
		var f []string
		for _, c := range last.Columns {
			x := v[c.Attr]
			switch {
			case x.Null:
				f = append(f, "NULL")
			case c.Labels != nil:
				f = append(f, c.Labels[x.I])
			case x.Kind == reference.StringKind:
				f = append(f, x.Str)
			default:
				f = append(f, x.Text())
			}
		}
		rows = append(rows, strings.Join(f, ","))
	}
	slices.Sort(rows)
	return rows
}

// TestLookupJoinSelectsTheTableKey: the table's key column of a lookup
// join is a column like the others: selected beside another of the
// table's, in WHERE, GROUP BY or an aggregate, it is the matched row's
// key (Flink's lookup join outputs the table's row whole).
func TestLookupJoinSelectsTheTableKey(t *testing.T) {
	const ddl = `CREATE SOURCE s (ts BIGINT, k INT, v INT) WITH (connector = 'stdin', format = 'csv');
CREATE TABLE t (k BIGINT, name VARCHAR) WITH (connector = 'file', path = 't.csv', format = 'csv');
`
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"SELECT v, name, t.k FROM s JOIN t ON s.k = t.k", []string{"10,one,1", "20,minus,-1", "50,one,1"}},
		{"SELECT v, t.k + 1 AS k1, name FROM s JOIN t ON s.k = t.k WHERE t.k > 0", []string{"10,2,one", "50,2,one"}},
		{"SELECT v, name FROM s JOIN t ON t.k = s.k WHERE t.k < 0", []string{"20,minus"}},
		{"SELECT t.k, name, COUNT(*) AS n FROM TUMBLE(s, ts, INTERVAL '10' SECOND) JOIN t ON s.k = t.k GROUP BY t.k, name",
			[]string{"-1,minus,1", "1,one,2"}},
		{"SELECT name, MAX(t.k) AS mk FROM TUMBLE(s, ts, INTERVAL '10' SECOND) JOIN t ON s.k = t.k GROUP BY name",
			[]string{"minus,-1", "one,1"}},
	} {
		a := strview.NewArena(1 << 16)
		p := mustCompile(t, ddl+tc.query)
		require.NoError(t, p.Table("t").Load(strings.NewReader("1,one\n-1,minus\n4294967297,big\n")))
		data := map[string][]byte{"s": joinTuples(t, p.Source("s"), a,
			[]any{1000, 1, 10}, []any{2000, -1, 20}, []any{3000, nil, 30}, []any{4000, 4, 40}, []any{5000, 1, 50})}
		assert.Equal(t, tc.want, joinRows(t, p, data, a, 2), tc.query)
		a.Free()
	}
}

// TestViewKeepsTheWatermarkDelay: a view that filters or projects a
// source's tuples keeps the source's WATERMARK (Flink's rowtime and
// watermarks pass through a projection): a window join, an interval join
// or a window over the view waits the delay, and counts the tuples out
// of order within it, as over the source itself.
func TestViewKeepsTheWatermarkDelay(t *testing.T) {
	const ddl = `CREATE SOURCE l (ts BIGINT, v INT, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH (connector = 'stdin', format = 'csv');
CREATE SOURCE r (ts BIGINT, v INT, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH (connector = 'stdin', format = 'csv');
CREATE VIEW lv AS SELECT * FROM l WHERE v > 0;
CREATE VIEW rv AS SELECT ts, v FROM r;
CREATE VIEW mx AS SELECT MAX(v) AS top, window_end AS we FROM TUMBLE(l, ts, INTERVAL '2' SECOND) GROUP BY window_start, window_end;
`
	// 1500 comes after 6000: 4.5 s out of order, within the delay
	rows := [][]any{{1000, 1}, {2000, 2}, {6000, 3}, {1500, 4}, {9000, 5}}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"SELECT lv.v AS a, rv.v AS b FROM TUMBLE(lv, ts, INTERVAL '2' SECOND) JOIN TUMBLE(rv, ts, INTERVAL '2' SECOND) ON lv.v = rv.v",
			[]string{"1,1", "2,2", "3,3", "4,4", "5,5"}},
		{"SELECT lv.v, mx.we FROM lv JOIN mx ON lv.v = mx.top WHERE lv.ts BETWEEN mx.we - INTERVAL '2' SECOND AND mx.we",
			[]string{"2,4000", "3,8000", "4,2000", "5,10000"}},
		{"SELECT window_start, COUNT(*) AS n FROM TUMBLE(rv, ts, INTERVAL '2' SECOND) GROUP BY window_start",
			[]string{"0,2", "2000,1", "6000,1", "8000,1"}},
	} {
		for _, task := range []int{1, 2, 64} {
			a := strview.NewArena(1 << 16)
			p := mustCompile(t, ddl+tc.query)
			data := map[string][]byte{"l": joinTuples(t, p.Source("l"), a, rows...), "r": joinTuples(t, p.Source("r"), a, rows...)}
			if !strings.Contains(tc.query, "COUNT") {
				assert.Equal(t, tc.want, joinRows(t, p, data, a, task), "%s, tasks of %d", tc.query, task)
			} else {
				outs := runProgram(t, p, data, a, task)
				var got []string
				for _, row := range outs[len(outs)-1].rows {
					got = append(got, fmt.Sprintf("%d,%d", row.Start, row.Values[0].I))
				}
				assert.Equal(t, tc.want, got, "%s, tasks of %d", tc.query, task)
			}
			a.Free()
		}
	}
}

// TestWindowJoinOfDifferentDelays: a window join of two sources whose
// WATERMARKs have different delays runs (Flink joins any two streams),
// its windows waiting the longer delay: each side's tuples out of order
// within their own delay join.
func TestWindowJoinOfDifferentDelays(t *testing.T) {
	const text = `CREATE SOURCE l (ts BIGINT, v INT, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH (connector = 'stdin', format = 'csv');
CREATE SOURCE r (ts BIGINT, v INT) WITH (connector = 'stdin', format = 'csv');
SELECT l.v AS a, r.v AS b FROM TUMBLE(l, ts, INTERVAL '2' SECOND) JOIN TUMBLE(r, ts, INTERVAL '2' SECOND) ON l.v = r.v`
	a := strview.NewArena(1 << 16)
	defer a.Free()
	p := mustCompile(t, text)
	require.NotNil(t, p.Queries[0].Spec.Join)
	assert.Equal(t, int64(4999), p.Queries[0].Spec.Join.Window.Delay, "the longer delay, less the last millisecond (windowDelay)")
	// l's 1500 comes 4.5 s after 6000, within l's delay; r is in order
	data := map[string][]byte{
		"l": joinTuples(t, p.Source("l"), a, []any{1000, 1}, []any{6000, 3}, []any{1500, 4}, []any{9000, 5}),
		"r": joinTuples(t, p.Source("r"), a, []any{1000, 1}, []any{1900, 4}, []any{6000, 3}, []any{9000, 5}),
	}
	for _, task := range []int{1, 3, 64} {
		assert.Equal(t, []string{"1,1", "3,3", "4,4", "5,5"}, joinRows(t, p, data, a, task), "tasks of %d", task)
	}
}

// TestJoinOnEnumsOfDifferentLabels: ENUMs compare by their labels, also
// two ENUM columns whose label lists differ (their codes do not mean the
// same label): a window join on them pairs equal labels; a lookup join,
// whose table holds its own codes, refuses them, naming both types.
func TestJoinOnEnumsOfDifferentLabels(t *testing.T) {
	const text = `CREATE SOURCE l (ts BIGINT, e ENUM('a', 'b', 'c'), v INT) WITH (connector = 'stdin', format = 'csv');
CREATE SOURCE r (ts BIGINT, e ENUM('b', 'a', 'd'), v INT) WITH (connector = 'stdin', format = 'csv');
`
	a := strview.NewArena(1 << 16)
	defer a.Free()
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"SELECT l.v AS lv, r.v AS rv, l.e AS le, r.e AS re FROM TUMBLE(l, ts, INTERVAL '10' SECOND) JOIN TUMBLE(r, ts, INTERVAL '10' SECOND) ON l.e = r.e",
			[]string{"1,11,a,a", "2,10,b,b", "4,11,a,a"}},
		{"SELECT l.v AS lv, r.v AS rv FROM TUMBLE(l, ts, INTERVAL '10' SECOND) JOIN TUMBLE(r, ts, INTERVAL '10' SECOND) ON r.e = l.e AND l.v < 3",
			[]string{"1,11", "2,10"}},
		{"SELECT l.v AS lv, r.v AS rv FROM TUMBLE(l, ts, INTERVAL '10' SECOND) JOIN TUMBLE(r, ts, INTERVAL '10' SECOND) ON l.e <> r.e WHERE l.v = 3",
			[]string{"3,10", "3,11", "3,12"}},
	} {
		p := mustCompile(t, text+tc.query)
		data := map[string][]byte{
			"l": joinTuples(t, p.Source("l"), a, []any{1000, "a", 1}, []any{2000, "b", 2}, []any{3000, "c", 3}, []any{4000, "a", 4}, []any{5000, nil, 5}),
			"r": joinTuples(t, p.Source("r"), a, []any{1500, "b", 10}, []any{2500, "a", 11}, []any{3500, "d", 12}, []any{4500, nil, 13}),
		}
		for _, task := range []int{1, 64} {
			assert.Equal(t, tc.want, joinRows(t, p, data, a, task), "%s, tasks of %d", tc.query, task)
		}
	}
	_, err := Compile(text + `CREATE TABLE t (e ENUM('b', 'a'), name VARCHAR) WITH (connector = 'file', path = 't.csv', format = 'csv');
SELECT v, name FROM l JOIN t ON l.e = t.e`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ENUM('a', 'b', 'c')")
	assert.Contains(t, err.Error(), "ENUM('b', 'a')")
}

// TestJoinOfViewsOnWindowEnds: two views of windows of one size joined on
// their windows' ends are joined on their windows (Flink's regular join
// of the same rows), as on their starts: it was refused as an interval
// join of the wrong shape.
func TestJoinOfViewsOnWindowEnds(t *testing.T) {
	const text = `CREATE SOURCE bid (ts BIGINT, price INT) WITH (connector = 'stdin', format = 'csv');
CREATE VIEW c AS SELECT window_end AS en, COUNT(*) AS n FROM TUMBLE(bid, ts, INTERVAL '10' SECOND) GROUP BY window_start, window_end;
CREATE VIEW m AS SELECT window_end AS en, MAX(price) AS mp FROM TUMBLE(bid, ts, INTERVAL '10' SECOND) GROUP BY window_start, window_end;
SELECT c.en, n, mp FROM c JOIN m ON c.en = m.en AND n > 1`
	a := strview.NewArena(1 << 16)
	defer a.Free()
	p := mustCompile(t, text)
	data := map[string][]byte{"bid": joinTuples(t, p.Source("bid"), a,
		[]any{0, 5}, []any{3000, 7}, []any{10000, 7}, []any{12000, 9}, []any{25000, 1}, []any{40000, 2}, []any{41000, 3})}
	for _, task := range []int{1, 64} {
		assert.Equal(t, []string{"10000,2,7", "20000,2,9", "50000,2,3"}, joinRows(t, p, data, a, task), "tasks of %d", task)
	}
}

// TestWindowOverAViewsCopyOfTheTime: a view's column that selects its
// input's event time as it is (l.ts AS ts over a window join, whose own
// name for it is l.ts) stays the event time, as doc.go says and Flink's
// rowtime does: a window over it, here a second window join, runs.
func TestWindowOverAViewsCopyOfTheTime(t *testing.T) {
	const text = `CREATE SOURCE l (ts BIGINT, k INT, v INT) WITH (connector = 'stdin', format = 'csv');
CREATE SOURCE r (ts BIGINT, k INT, w INT) WITH (connector = 'stdin', format = 'csv');
CREATE VIEW j AS SELECT l.ts AS ts, l.k AS k, v, w FROM TUMBLE(l, ts, INTERVAL '10' SECOND) JOIN TUMBLE(r, ts, INTERVAL '10' SECOND) ON l.k = r.k;
SELECT j.v, j.w, r.w AS w2 FROM TUMBLE(j, ts, INTERVAL '10' SECOND) JOIN TUMBLE(r, ts, INTERVAL '10' SECOND) ON j.k = r.k AND j.w <= r.w`
	a := strview.NewArena(1 << 16)
	defer a.Free()
	p := mustCompile(t, text)
	data := map[string][]byte{
		"l": joinTuples(t, p.Source("l"), a, []any{1000, 1, 10}, []any{2000, 2, 20}, []any{3000, 1, 30}, []any{9999, 3, 40}, []any{10000, 1, 50}, []any{15000, 2, 60}),
		"r": joinTuples(t, p.Source("r"), a, []any{500, 1, 100}, []any{2500, 1, 200}, []any{4000, 2, 300}, []any{10000, 1, 400}, []any{12000, 3, 500}, []any{19999, 2, 600}),
	}
	want := []string{"10,100,100", "10,100,200", "10,200,200", "20,300,300", "30,100,100", "30,100,200", "30,200,200", "50,400,400", "60,600,600"}
	for _, task := range []int{1, 64} {
		assert.Equal(t, want, joinRows(t, p, data, a, task), "tasks of %d", task)
	}
}

// TestLookupJoinAggregationKeepsTheWatermarkDelay: a window aggregation
// over a lookup join waits the WATERMARK delay of the stream's source
// also where the join reads a part (a view's tuples, or the key part
// that computes an expression key): the tuple 4.5 s out of order, within
// the delay, is counted, as without the join.
func TestLookupJoinAggregationKeepsTheWatermarkDelay(t *testing.T) {
	const ddl = `CREATE SOURCE s (ts BIGINT, k INT, v INT, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH (connector = 'stdin', format = 'csv');
CREATE TABLE t (k BIGINT, name VARCHAR) WITH (connector = 'file', path = 't.csv', format = 'csv');
CREATE VIEW sv AS SELECT * FROM s WHERE v > 0;
`
	// 1500 comes after 6000: 4.5 s out of order, within the delay
	rows := [][]any{{1000, 1, 10}, {6000, 1, 60}, {1500, 1, 15}, {20000, 1, 200}}
	for _, query := range []string{
		"SELECT COUNT(*) AS n FROM TUMBLE(s, ts, INTERVAL '2' SECOND) JOIN t ON s.k = t.k GROUP BY window_start",
		"SELECT COUNT(*) AS n FROM TUMBLE(s, ts, INTERVAL '2' SECOND) JOIN t ON s.k + 0 = t.k GROUP BY window_start",
		"SELECT COUNT(*) AS n FROM TUMBLE(sv, ts, INTERVAL '2' SECOND) JOIN t ON sv.k = t.k GROUP BY window_start",
		"SELECT name, COUNT(*) AS n FROM TUMBLE(s, ts, INTERVAL '2' SECOND) JOIN t ON s.k + 0 = t.k GROUP BY window_start, name",
	} {
		p := mustCompile(t, ddl+query)
		last := p.Queries[len(p.Queries)-1]
		require.NotNil(t, last.Spec.Query, query)
		assert.Equal(t, int64(4999), last.Spec.Query.Window.Delay, "%s: the source's delay less 1 ms", query)
		require.NoError(t, p.Table("t").Load(strings.NewReader("1,one\n")))
		a := strview.NewArena(1 << 16)
		data := map[string][]byte{"s": joinTuples(t, p.Source("s"), a, rows...)}
		outs := runProgram(t, p, data, a, 1)
		var got []string
		for _, row := range outs[len(outs)-1].rows {
			got = append(got, fmt.Sprintf("%d,%d", row.Start, row.Values[len(row.Values)-1].I))
		}
		assert.Equal(t, []string{"0,2", "6000,1", "20000,1"}, got, query)
		assert.Zero(t, outs[len(outs)-1].counts.Late, query)
		a.Free()
	}
}

// TestLookupJoinOnAComputedEnumKey: an ENUM expression of the stream
// (COALESCE or CASE of an ENUM column) as a lookup join's key, which the
// lookup kernel computes as the ENUM's codes, is checked against the
// table's ENUM as the column is: refused where the labels differ (a code
// of one is another label in the other: 'a' matched the table's 'b'),
// naming the expression, and joined by label where they are alike.
func TestLookupJoinOnAComputedEnumKey(t *testing.T) {
	const src = `CREATE SOURCE l (ts BIGINT, e ENUM('a', 'b', 'c'), v INT) WITH (connector = 'stdin', format = 'csv');
`
	for _, on := range []string{"COALESCE(l.e, l.e) = t.e", "CASE WHEN l.v > 0 THEN l.e ELSE l.e END = t.e"} {
		_, err := Compile(src + `CREATE TABLE t (e ENUM('b', 'a'), name VARCHAR) WITH (connector = 'file', path = 't.csv', format = 'csv');
SELECT v, name FROM l JOIN t ON ` + on)
		require.Error(t, err, on)
		assert.Contains(t, err.Error(), "are ENUMs of different labels", on)
		assert.Contains(t, err.Error(), "ENUM('a', 'b', 'c')", on)
		assert.Contains(t, err.Error(), "ENUM('b', 'a')", on)
		assert.NotContains(t, err.Error(), "$joinkey", on)

		a := strview.NewArena(1 << 16)
		p := mustCompile(t, src+`CREATE TABLE t (e ENUM('a', 'b', 'c'), name VARCHAR) WITH (connector = 'file', path = 't.csv', format = 'csv');
SELECT v, name FROM l JOIN t ON `+on)
		require.NoError(t, p.Table("t").Load(strings.NewReader("b,bee\nc,sea\n")))
		data := map[string][]byte{"l": joinTuples(t, p.Source("l"), a,
			[]any{1000, "a", 1}, []any{2000, "b", 2}, []any{3000, "c", 3}, []any{4000, nil, 4}, []any{5000, "b", 5})}
		assert.Equal(t, []string{"2,bee", "3,sea", "5,bee"}, joinRows(t, p, data, a, 2), on)
		a.Free()
	}
}
