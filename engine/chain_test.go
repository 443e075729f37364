package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/doubling"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// TestChainedQueries: the output of one query is the input of the next
// (SABER's connectTo), with its own ring, on workers that also run the
// upstream's tasks. The downstream's output must equal the reference run
// over the reference's upstream output. One worker and small rings force
// the upstream's result stage to wait for the downstream ring, which it
// does by running tasks rather than blocking.
func TestChainedQueries(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	r := rand.New(rand.NewPCG(11, 12))
	ups := []*query.Query{
		{Name: "up", Schema: s, Where: query.ColGe("a", 0),
			Project: []query.Projection{{Expr: query.Add(query.C("a"), query.C("b")), As: "ab"}, {Expr: query.Mul(query.C("y"), query.Float(2)), As: "y2"}}},
		{Name: "up", Schema: s, Window: query.Sliding(40, 10), GroupBy: []query.Expr{query.C("b")},
			Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}, {Func: query.Avg, Arg: query.C("y"), As: "avg_y"}, {Func: query.Max, Arg: query.C("c"), As: "max_c"}}},
	}
	for i, up := range ups {
		for _, workers := range []int{1, 3} {
			t.Run(fmt.Sprintf("up%d/workers%d", i, workers), func(t *testing.T) {
				out, err := up.OutputSchema()
				require.NoError(t, err)
				down := &query.Query{Name: "down", Schema: out, Window: query.Tumbling(100),
					GroupBy:    []query.Expr{query.C(out.Attrs[1].Name)},
					Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C(out.Attrs[2].Name)}}}
				data := randData(r, 5000)
				// Three workers lend the stateless output (handoff.go).
				cfg := Config{Workers: workers, TaskSize: randTuple * 16, BufferSize: 4096, lendMin: workers / 3}
				upTuples, _, stats := runChain(t, cfg, up, down, data)
				wantUp, err := reference.Evaluate(up, data)
				require.NoError(t, err)
				if up.Stateless() {
					assert.Equal(t, wantUp.Tuples, upTuples)
				} else {
					gotUp := &reference.Result{Rows: decodeRows(t, up, out, upTuples), Counts: wantUp.Counts}
					assert.Empty(t, reference.Diff(up, wantUp, gotUp, 1e-9))
				}
				st := stats[1]
				assert.Positive(t, st.Windows)
			})
		}
	}
	assertNoLeak(t, base)
}

// runChain runs up and down, which takes up's output, over data, checks
// down's windows against the reference over up's output, and returns
// that output, the closed engine and its stats.
func runChain(t *testing.T, cfg Config, up, down *query.Query, data []byte) ([]byte, *Engine, []Stats) {
	t.Helper()
	var upTuples []byte
	got := &reference.Result{}
	e, err := Start(cfg, []Spec{
		{Query: up, Tuples: func(b []byte) error { upTuples = doubling.Append(upTuples, b...); return nil }},
		{Query: down, Upstream: Output(0), Windows: rowsInto(down, got)},
	})
	require.NoError(t, err)
	require.NoError(t, e.Write(data))
	stats, err := e.CloseAll()
	require.NoError(t, err)
	want, err := reference.Evaluate(down, upTuples)
	require.NoError(t, err)
	st := stats[1]
	got.Counts = reference.Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
	assert.Empty(t, reference.Diff(down, want, got, 1e-9))
	return upTuples, e, stats
}

// decodeRows reads an aggregation's output tuples (query.OutputSchema) of a
// query grouped by one integer column back into rows.
func decodeRows(t *testing.T, q *query.Query, out *query.Schema, b []byte) []reference.Row {
	require.Zero(t, len(b)%out.TupleSize)
	var rows []reference.Row
	for o := 0; o < len(b); o += out.TupleSize {
		tu := b[o : o+out.TupleSize]
		start := int64(binary.LittleEndian.Uint64(tu))
		key := query.AppendIntKey(nil, int64(binary.LittleEndian.Uint64(tu[8:])), q.KeyWidth(q.GroupBy[0]))
		row := reference.Row{Start: start, End: start + q.Window.Size, Key: string(key)}
		for a, ag := range q.Aggregates {
			v := binary.LittleEndian.Uint64(tu[16+8*a:])
			if q.AggType(ag) == query.FloatValue {
				row.Values = append(row.Values, reference.Float(math.Float64frombits(v)))
			} else {
				row.Values = append(row.Values, reference.Int(int64(v)))
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func TestChainErrors(t *testing.T) {
	parallel(t)
	s := randSchema(t)
	up := &query.Query{Name: "up", Schema: s, Project: []query.Projection{{Expr: query.C("a")}}}
	down := &query.Query{Name: "down", Schema: s, Window: query.Tumbling(10), Aggregates: []query.Aggregate{{Func: query.Count}}}
	cfg := Config{Workers: 1, TaskSize: 480, BufferSize: 4096}
	_, err := Start(cfg, []Spec{{Query: up}, {Query: down, Upstream: Output(0)}})
	assert.ErrorContains(t, err, `query "down" takes the output of "up"`)
	// A bad edge: to no spec, to itself, to a later spec, both kinds, a
	// right edge without a join; each an ErrConfig naming the spec.
	for _, c := range []struct {
		specs []Spec
		want  string
	}{
		{[]Spec{{Query: down, Upstream: Output(0)}}, `spec 0 ("down"): Upstream is Output(0), but the first spec has no earlier spec`},
		{[]Spec{{Query: up}, {Query: down, Upstream: Output(1)}}, `spec 1 ("down"): Upstream is Output(1), not an earlier spec (Output(0) to Output(0))`},
		{[]Spec{{Query: up}, {Query: down, Upstream: Output(5)}}, `spec 1 ("down"): Upstream is Output(5), not an earlier spec`},
		{[]Spec{{Query: up}, {Query: down, Upstream: Output(-2)}}, `spec 1 ("down"): Upstream is Output(-2), not an earlier spec`},
		{[]Spec{{Query: up}, {Query: down, UpstreamRight: Output(0)}}, `spec 1 ("down"): UpstreamRight without a Join`},
	} {
		_, err = Start(cfg, c.specs)
		assert.ErrorContains(t, err, c.want)
		assert.ErrorIs(t, err, ErrConfig)
	}

	out, err := up.OutputSchema()
	require.NoError(t, err)
	down.Schema = out
	cfg.TaskSize = 48 * 10
	e, err := Start(cfg, []Spec{{Query: up}, {Query: down, Upstream: Output(0)}})
	require.NoError(t, err)
	assert.ErrorContains(t, e.Stream(1).Write(make([]byte, 16)), "takes its input from")
	_, err = e.CloseAll()
	require.NoError(t, err)
}

// TestUDF: a user-defined operator over a task's batch, after WHERE.
func TestUDF(t *testing.T) {
	parallel(t)
	s := randSchema(t)
	outSchema, err := query.NewSchema(16, query.Attribute{Name: "ts", Type: query.Int64}, query.Attribute{Name: "twice_a", Type: query.Int64, Offset: 8})
	require.NoError(t, err)
	udf := &query.UDF{Name: "double", Output: outSchema, Fn: func(in []byte, ts int, out []byte) []byte {
		for o := 0; o < len(in); o += ts {
			out = append(out, in[o:o+8]...)
			out = binary.LittleEndian.AppendUint64(out, uint64(2*int64(int32(binary.LittleEndian.Uint32(in[o+8:])))))
		}
		return out
	}}
	q := &query.Query{Name: "udf", Schema: s, Where: query.ColLt("b", 3), UDF: udf}
	r := rand.New(rand.NewPCG(3, 3))
	data := randData(r, 3000)
	var want []byte
	for o := 0; o < len(data); o += randTuple {
		if int32(binary.LittleEndian.Uint32(data[o+12:])) < 3 {
			want = udf.Fn(data[o:o+randTuple], randTuple, want)
		}
	}
	for _, workers := range []int{1, 3} {
		var got []byte
		e, err := Start(Config{Workers: workers, TaskSize: randTuple * 10, BufferSize: 4096},
			[]Spec{{Query: q, Tuples: func(b []byte) error { got = doubling.Append(got, b...); return nil }}})
		require.NoError(t, err)
		require.NoError(t, e.Write(data))
		st, err := e.Close()
		require.NoError(t, err)
		assert.Equal(t, want, got)
		assert.Equal(t, st.Tuples, st.Filtered+st.Counted)
	}
}

// TestChainedRowsFlowWhileInputGoesOn: an aggregation's rows, far fewer
// than a task of its downstream's, reach the downstream queries (a
// stateless one, and through it the sink) while the input goes on, not
// only when it ends: the task of them is dispatched as it is once its
// first rows are partialAge old (as Nexmark's q7 needs, whose join
// holds its stream's tuples until the rows come).
func TestChainedRowsFlowWhileInputGoesOn(t *testing.T) {
	s := randSchema(t)
	up := &query.Query{Name: "up", Schema: s, Window: query.Tumbling(64), Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
	out, err := up.OutputSchema()
	require.NoError(t, err)
	mid := &query.Query{Name: "mid", Schema: out, Where: query.ColGe("n", 0)}
	var rows atomic.Int64
	// Tasks of 2048 tuples: 32 windows' rows a task upstream, a task
	// downstream holds more rows than the 20 tasks written make.
	e, err := Start(Config{Workers: 2, TaskSize: randTuple * 2048, BufferSize: 1 << 20}, []Spec{
		{Query: up},
		{Query: mid, Upstream: Output(0)},
		{Query: &query.Query{Name: "down", Schema: out}, Upstream: Output(1), Tuples: func(b []byte) error {
			rows.Add(int64(len(b) / out.TupleSize))
			return nil
		}},
	})
	require.NoError(t, err)
	chunk := make([]byte, randTuple*2048)
	var next int64
	for range 20 {
		for o := 0; o < len(chunk); o += randTuple {
			binary.LittleEndian.PutUint64(chunk[o:], uint64(next))
			next++
		}
		require.NoError(t, e.Write(chunk))
		time.Sleep(3 * time.Millisecond)
	}
	for i := 0; i < 500 && rows.Load() == 0; i++ {
		time.Sleep(time.Millisecond) // the workers still merging
	}
	before := rows.Load()
	_, err = e.CloseAll()
	require.NoError(t, err)
	assert.Positive(t, before, "rows downstream before the input ended (%d tuples written)", next)
	assert.Equal(t, next/64, rows.Load(), "one row a window")
}
