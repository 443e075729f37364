package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// Explicit edge cases of windowing, each checked against the reference
// evaluator with every task size of edgeTaskSizes and every worker count of
// edgeWorkers.

// The edge stream: 32-byte tuples, so that a 4096-byte task is a whole
// number of them.
const edgeTuple = 32

var (
	edgeTaskSizes = []int{edgeTuple, 7 * edgeTuple, 4096} // one tuple, seven tuples, 4096 bytes
	edgeWorkers   = []int{1, 3}
)

func edgeSchema(t testing.TB) *query.Schema {
	s, err := query.NewSchema(edgeTuple,
		query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "g", Type: query.Int32, Offset: 8},
		query.Attribute{Name: "v", Type: query.Int32, Offset: 12},
		query.Attribute{Name: "f", Type: query.Float64, Offset: 16},
		query.Attribute{Name: "x", Type: query.Float32, Offset: 24},
		query.Attribute{Name: "k", Type: query.Bytes, Offset: 28, Size: 4},
	)
	require.NoError(t, err)
	return s
}

// et is one edge tuple; x is float32(f) and k is g's 4 bytes.
type et struct {
	ts   int64
	g, v int32
	f    float64
}

func edgeData(ts []et) []byte {
	b := make([]byte, len(ts)*edgeTuple)
	for i, e := range ts {
		p := b[i*edgeTuple:]
		binary.LittleEndian.PutUint64(p[0:], uint64(e.ts))
		binary.LittleEndian.PutUint32(p[8:], uint32(e.g))
		binary.LittleEndian.PutUint32(p[12:], uint32(e.v))
		binary.LittleEndian.PutUint64(p[16:], math.Float64bits(e.f))
		binary.LittleEndian.PutUint32(p[24:], math.Float32bits(float32(e.f)))
		binary.LittleEndian.PutUint32(p[28:], uint32(e.g))
	}
	return b
}

// edgeKey is the join key of group g (column k).
func edgeKey(g int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(g)) }

// edgeRun is one run's output in the reference's form, its counters and the
// number of Sink calls.
type edgeRun struct {
	res   *reference.Result
	st    Stats
	calls int
}

// runEdgeOnce runs q over data, written in chunks of random sizes, and checks
// the Sink's contract on the way: windows in increasing order, each with at
// least one row.
func runEdgeOnce(t *testing.T, cfg Config, q *query.Query, data []byte, r *rand.Rand) edgeRun {
	t.Helper()
	var run edgeRun
	res := &reference.Result{}
	lastStart := int64(math.MinInt64)
	first := true
	rows := rowsInto(q, res)
	sink := func(w *Window) error {
		run.calls++
		if !first && w.Start <= lastStart {
			return fmt.Errorf("window [%d, %d) emitted after a window starting at %d", w.Start, w.End, lastStart)
		}
		first, lastStart = false, w.Start
		if w.Rows() == 0 {
			return fmt.Errorf("window [%d, %d) emitted without rows", w.Start, w.End)
		}
		return rows(w)
	}
	e, err := New(cfg, q, sink)
	require.NoError(t, err)
	for len(data) > 0 {
		n := min(len(data), 1+r.IntN(2*cfg.TaskSize))
		require.NoError(t, e.Write(data[:n]))
		data = data[n:]
	}
	st, err := e.Close()
	require.NoError(t, err)
	res.Counts = reference.Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
	run.res, run.st = res, st
	return run
}

// windowsIn is the number of distinct windows among rows.
func windowsIn(rows []reference.Row) int {
	n := 0
	for i, r := range rows {
		if i == 0 || r.Start != rows[i-1].Start {
			n++
		}
	}
	return n
}

// checkEdge runs q over data with every task size and worker count and
// requires the output to equal the reference's (floats within relative
// tolerance tol), and Stats.Windows/Rows and the Sink calls to count the
// reference's windows and rows exactly. It returns the reference's result
// and calls check, if set, on every run.
func checkEdge(t *testing.T, q *query.Query, data []byte, tol float64, check func(t *testing.T, run edgeRun)) *reference.Result {
	t.Helper()
	require.NoError(t, q.Validate())
	want, err := reference.Evaluate(q, data)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(uint64(len(data)), 11))
	for _, task := range edgeTaskSizes {
		for _, workers := range edgeWorkers {
			t.Run(fmt.Sprintf("task%d/workers%d", task, workers), func(t *testing.T) {
				// A ring of 128 one-tuple tasks, 18 of seven, 4 of 4096
				// bytes: wrapped many times. 512 one-tuple tasks, as 16 KiB
				// made, cost a task record each, most of the run.
				cfg := Config{Workers: workers, TaskSize: task, BufferSize: max(1<<12, 4*task)}
				run := runEdgeOnce(t, cfg, q, data, r)
				if d := reference.Diff(q, want, run.res, tol); d != "" {
					t.Fatalf("differs from the reference: %s", d)
				}
				assert.Equal(t, uint64(windowsIn(want.Rows)), run.st.Windows, "Stats.Windows counts the windows with rows")
				assert.Equal(t, windowsIn(want.Rows), run.calls, "one Sink call per window with rows")
				assert.Equal(t, uint64(len(want.Rows)), run.st.Rows, "Stats.Rows")
				if check != nil {
					check(t, run)
				}
			})
		}
	}
	return want
}

func edgeAggs() []query.Aggregate {
	return []query.Aggregate{
		{Func: query.Count, As: "n"},
		{Func: query.Sum, Arg: query.C("v"), As: "s"},
		{Func: query.Min, Arg: query.C("v"), As: "lo"},
		{Func: query.Max, Arg: query.C("v"), As: "hi"},
		{Func: query.Max, Arg: query.C("ts"), As: "last"},
	}
}

// TestEdgeWindowSmallerThanStep: range windows smaller than the event-time
// step between tuples, so that most windows hold no tuple; only the windows
// with one are emitted.
func TestEdgeWindowSmallerThanStep(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	var ts []et
	for i := range 300 {
		ts = append(ts, et{ts: int64(10*i) - 1000, g: int32(i % 3), v: int32(i)})
	}
	data := edgeData(ts)
	for _, tc := range []struct {
		w       query.Window
		windows int // windows with a tuple
	}{
		{query.Tumbling(3), 300},   // one window per tuple
		{query.Tumbling(1), 300},   // windows of one millisecond
		{query.Sliding(4, 2), 600}, // tuple 10i is in windows 5i-1 and 5i, no other tuple is
		{query.Sliding(5, 3), 0},   // one or two windows per tuple: counted by the reference only
	} {
		t.Run(fmt.Sprintf("size%d/slide%d", tc.w.Size, tc.w.Slide), func(t *testing.T) {
			q := &query.Query{Name: "step", Schema: edgeSchema(t), Window: tc.w, GroupBy: []query.Expr{query.C("g")}, Aggregates: edgeAggs()}
			want := checkEdge(t, q, data, 0, nil)
			if tc.windows > 0 {
				assert.Equal(t, tc.windows, windowsIn(want.Rows))
			}
			// No window spans two tuples: every row counts one tuple.
			for _, row := range want.Rows {
				require.Equal(t, reference.Int(1), row.Values[0], "row %+v", row)
			}
		})
	}
	assertNoLeak(t, base)
}

// TestEdgeSlideNotDividingSize: size 7, slide 3 (panes of 1 ms), one tuple
// per millisecond with value ts, so window [3w, 3w+7) holds 7 tuples of sum
// 7*3w+21.
func TestEdgeSlideNotDividingSize(t *testing.T) {
	parallel(t)
	var ts []et
	for i := range 500 {
		ts = append(ts, et{ts: int64(i), v: int32(i)})
	}
	q := &query.Query{Name: "7/3", Schema: edgeSchema(t), Window: query.Sliding(7, 3), Aggregates: edgeAggs()}
	want := checkEdge(t, q, edgeData(ts), 0, nil)
	// Windows -2..166 hold a tuple: [3w, 3w+7) meets [0, 500).
	require.Equal(t, 169, windowsIn(want.Rows))
	for _, row := range want.Rows {
		lo, hi := max(row.Start, 0), min(row.End, 500)
		assert.Equal(t, []reference.Value{
			reference.Int(hi - lo), reference.Int((lo + hi - 1) * (hi - lo) / 2),
			reference.Int(lo), reference.Int(hi - 1), reference.Int(hi - 1),
		}, row.Values, "window [%d, %d)", row.Start, row.End)
	}
}

// TestEdgeRowWindowOfOneTuple: row windows of size 1: one window per
// counted tuple, holding just it; filtered tuples leave their windows empty
// (not emitted).
func TestEdgeRowWindowOfOneTuple(t *testing.T) {
	parallel(t)
	var ts []et
	for i := range 400 {
		ts = append(ts, et{ts: int64(i / 4), g: int32(i % 5), v: int32(i*7%13 - 6)})
	}
	for _, where := range []query.Expr{nil, query.ColNe("g", 2)} {
		t.Run(fmt.Sprint(where), func(t *testing.T) {
			q := &query.Query{Name: "row1", Schema: edgeSchema(t), Window: query.Window{Type: query.Rows, Size: 1, Slide: 1},
				Where: where, GroupBy: []query.Expr{query.C("g")}, Aggregates: edgeAggs()}
			want := checkEdge(t, q, edgeData(ts), 0, nil)
			n := 400
			if where != nil {
				n = 320
			}
			require.Len(t, want.Rows, n)
			for _, row := range want.Rows {
				i := row.Start
				assert.Equal(t, i+1, row.End)
				assert.Equal(t, reference.Int(1), row.Values[0])
				assert.Equal(t, reference.Int(int64(ts[i].v)), row.Values[1], "window of tuple %d", i)
			}
		})
	}
}

// TestEdgeGroupInOneTaskOnly: a group appears in a single tuple (so in a
// single task, whatever the task size), among groups present everywhere;
// with hashed keys (GROUP BY a column) and dense ones (GROUP BY a joined
// value).
func TestEdgeGroupInOneTaskOnly(t *testing.T) {
	parallel(t)
	var ts []et
	for i := range 600 {
		e := et{ts: int64(i), g: int32(i % 2), v: int32(i)}
		if i == 333 {
			e.g, e.v = 99, -5
		}
		ts = append(ts, e)
	}
	data := edgeData(ts)
	table := &query.StaticTable{KeyWidth: 4, ValueWidth: 4,
		Keys:   [][]byte{edgeKey(0), edgeKey(1), edgeKey(99)},
		Values: [][]byte{[]byte("even"), []byte("odd!"), []byte("rare")}}
	for _, w := range []query.Window{query.Tumbling(100), query.Sliding(50, 10), query.Tumbling(1 << 20), {Type: query.Rows, Size: 64, Slide: 16}} {
		for _, dense := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/size%d/slide%d/dense%v", w.Type, w.Size, w.Slide, dense), func(t *testing.T) {
				q := &query.Query{Name: "rare", Schema: edgeSchema(t), Window: w, GroupBy: []query.Expr{query.C("g")}, Aggregates: edgeAggs()}
				rare := string(query.AppendIntKey(nil, 99, 4))
				if dense {
					q.Join = &query.StaticJoin{Column: "k", Table: table, As: "site"}
					q.GroupBy = []query.Expr{query.C("site")}
					rare = "rare"
				}
				want := checkEdge(t, q, data, 0, nil)
				// The rare group is in exactly the windows holding tuple 333.
				pos := int64(333) // its event time and its index
				n := 0
				for _, row := range want.Rows {
					if row.Key == rare {
						n++
						assert.True(t, row.Start <= pos && pos < row.End, "rare group in window [%d, %d)", row.Start, row.End)
						assert.Equal(t, []reference.Value{reference.Int(1), reference.Int(-5), reference.Int(-5), reference.Int(-5), reference.Int(333)}, row.Values)
					}
				}
				assert.Equal(t, int(w.Size/w.Slide), n, "windows holding the rare group")
			})
		}
	}
}

// TestEdgeMinMaxExpire: MIN and MAX over sliding windows, where an extreme
// value early (and one in the middle) leaves the window: later windows must
// not report it.
func TestEdgeMinMaxExpire(t *testing.T) {
	parallel(t)
	var ts []et
	for i := range 400 {
		v := int32(100 - i%50) // decreasing saw-tooth in (50, 100]
		switch i {
		case 0:
			v = 1_000_000 // a huge max first
		case 1:
			v = -1_000_000 // a huge min right after
		case 200:
			v = 2_000_000
		case 201:
			v = -2_000_000
		}
		ts = append(ts, et{ts: int64(i), g: int32(i % 2), v: v, f: float64(v)})
	}
	data := edgeData(ts)
	aggs := []query.Aggregate{
		{Func: query.Min, Arg: query.C("v")}, {Func: query.Max, Arg: query.C("v")},
		{Func: query.Min, Arg: query.C("f")}, {Func: query.Max, Arg: query.C("f")},
	}
	for _, w := range []query.Window{query.Sliding(10, 1), query.Sliding(30, 4), query.Sliding(64, 32), {Type: query.Rows, Size: 20, Slide: 3}} {
		for _, groups := range [][]query.Expr{nil, {query.C("g")}} {
			t.Run(fmt.Sprintf("%s/size%d/slide%d/groups%d", w.Type, w.Size, w.Slide, len(groups)), func(t *testing.T) {
				q := &query.Query{Name: "minmax", Schema: edgeSchema(t), Window: w, GroupBy: groups, Aggregates: aggs}
				checkEdge(t, q, data, 0, func(t *testing.T, run edgeRun) {
					for _, row := range run.res.Rows {
						// Position i is tuple i's event time and index.
						for _, ex := range []struct {
							pos  int64
							v    int64
							aggs []int
						}{{0, 1_000_000, []int{1, 3}}, {1, -1_000_000, []int{0, 2}}, {200, 2_000_000, []int{1, 3}}, {201, -2_000_000, []int{0, 2}}} {
							if row.Start <= ex.pos && ex.pos < row.End {
								continue
							}
							for _, a := range ex.aggs {
								got := row.Values[a]
								require.False(t, got.I == ex.v || got.F == float64(ex.v),
									"window [%d, %d) reports %v, expired with position %d", row.Start, row.End, got, ex.pos)
							}
						}
					}
				})
			})
		}
	}
}

// TestEdgeFloatSumAvg: float SUM and AVG (and AVG of an integer) compared
// with a relative tolerance of 1e-9. The engine adds per-pane partial sums
// and then the panes of a window (in a two-stacks aggregator for sliding
// windows), while the reference adds the tuples one by one in input order:
// float addition is not associative, so the two may differ in the last bits.
// The values are positive and of similar magnitude (no cancellation), so
// the rounding differences are ~1e-15 relative and 1e-9 is a wide margin that
// still catches any missing or double-counted tuple (>= 1e-6 relative here).
func TestEdgeFloatSumAvg(t *testing.T) {
	parallel(t)
	r := rand.New(rand.NewPCG(9, 9))
	var ts []et
	for i := range 1500 {
		ts = append(ts, et{ts: int64(i / 3), g: int32(r.IntN(4)), v: int32(r.IntN(1000)), f: 1 + r.Float64()*1000})
	}
	// Some out-of-order tuples, still inside their first window.
	for i := 10; i < len(ts); i += 97 {
		ts[i].ts -= 2
	}
	data := edgeData(ts)
	aggs := []query.Aggregate{
		{Func: query.Sum, Arg: query.C("f")}, {Func: query.Avg, Arg: query.C("f")},
		{Func: query.Sum, Arg: query.C("x")}, {Func: query.Avg, Arg: query.C("x")},
		{Func: query.Avg, Arg: query.C("v")}, {Func: query.Sum, Arg: query.Mul(query.C("f"), query.Float(0.1))},
		{Func: query.Count},
	}
	for _, w := range []query.Window{query.Tumbling(50), query.Sliding(100, 10), query.Sliding(7, 3), {Type: query.Rows, Size: 300, Slide: 100}} {
		for _, groups := range [][]query.Expr{nil, {query.C("g")}} {
			t.Run(fmt.Sprintf("%s/size%d/slide%d/groups%d", w.Type, w.Size, w.Slide, len(groups)), func(t *testing.T) {
				q := &query.Query{Name: "float", Schema: edgeSchema(t), Window: w, GroupBy: groups, Aggregates: aggs}
				checkEdge(t, q, data, 1e-9, nil)
			})
		}
	}
}

// TestEdgeEmptyWindowsNotEmitted: two bursts far apart in event time; the
// windows between them are empty and not emitted, and the emitted windows
// are counted exactly.
func TestEdgeEmptyWindowsNotEmitted(t *testing.T) {
	parallel(t)
	var ts []et
	for i := range 100 {
		ts = append(ts, et{ts: int64(i), g: int32(i % 3), v: int32(i)})
	}
	for i := range 100 {
		ts = append(ts, et{ts: 1_000_000 + int64(i), g: int32(i % 3), v: int32(i)})
	}
	data := edgeData(ts)
	for _, tc := range []struct {
		w       query.Window
		windows int
	}{
		{query.Tumbling(10), 20},    // 10 per burst
		{query.Sliding(20, 10), 22}, // windows -1..9 per burst
		// [7w, 7w+30) meets [0, 100) for w in -4..14 and
		// [1000000, 1000100) for w in 142853..142871.
		{query.Sliding(30, 7), 19 + 19},
		{query.Tumbling(1000), 2},
	} {
		t.Run(fmt.Sprintf("size%d/slide%d", tc.w.Size, tc.w.Slide), func(t *testing.T) {
			q := &query.Query{Name: "bursts", Schema: edgeSchema(t), Window: tc.w, GroupBy: []query.Expr{query.C("g")}, Aggregates: edgeAggs()}
			want := checkEdge(t, q, data, 0, func(t *testing.T, run edgeRun) {
				for _, row := range run.res.Rows {
					require.True(t, row.End > 0 && row.Start < 100 || row.End > 1_000_000 && row.Start < 1_000_100,
						"window [%d, %d) between the bursts", row.Start, row.End)
				}
			})
			assert.Equal(t, tc.windows, windowsIn(want.Rows))
		})
	}
}

// TestEdgeHavingEmptiesWindows: HAVING removes every row of some windows;
// those windows are not emitted and not counted in Stats.Windows.
func TestEdgeHavingEmptiesWindows(t *testing.T) {
	parallel(t)
	var ts []et
	for i := range 1000 {
		v := int32(1)
		if (i/10)%2 == 0 { // even 10-ms windows: large values
			v = 100
		}
		ts = append(ts, et{ts: int64(i), g: int32(i % 4), v: v})
	}
	data := edgeData(ts)
	aggs := []query.Aggregate{{Func: query.Count, As: "n"}, {Func: query.Sum, Arg: query.C("v"), As: "s"}, {Func: query.Max, Arg: query.C("v"), As: "m"}}
	for _, tc := range []struct {
		name    string
		w       query.Window
		groups  []query.Expr
		having  query.Expr
		windows int // windows left
	}{
		{"tumbling", query.Tumbling(10), []query.Expr{query.C("g")}, query.Cmp(query.C("s"), query.Ge, query.Int(50)), 50},
		{"tumbling no group", query.Tumbling(10), nil, query.Cmp(query.C("m"), query.Gt, query.Int(1)), 50},
		{"sliding", query.Sliding(10, 5), []query.Expr{query.C("g")}, query.Cmp(query.C("m"), query.Eq, query.Int(1)), 51}, // [10, 20), [30, 40) ... [990, 1000) and [995, 1005)
		{"group column", query.Tumbling(10), []query.Expr{query.C("g")}, query.And(query.Cmp(query.C("g"), query.Eq, query.Int(3)), query.Cmp(query.C("s"), query.Lt, query.Int(50))), 50},
		{"all removed", query.Tumbling(10), []query.Expr{query.C("g")}, query.Cmp(query.C("n"), query.Gt, query.Int(1000)), 0},
		{"row window", query.Window{Type: query.Rows, Size: 10, Slide: 10}, []query.Expr{query.C("g")}, query.Cmp(query.C("s"), query.Ge, query.Int(50)), 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &query.Query{Name: "having", Schema: edgeSchema(t), Window: tc.w, GroupBy: tc.groups, Aggregates: aggs, Having: tc.having}
			want := checkEdge(t, q, data, 0, nil)
			assert.Equal(t, tc.windows, windowsIn(want.Rows))
		})
	}
}
