package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// snapCase is a graph of specs run three ways: A uninterrupted; B fed up to
// a cut of each input, snapshotted there and crashed (Abort: nothing more
// emitted); C, a fresh engine of the same specs, restored from B's
// snapshot and fed the rest. What B and C emitted together must be what A
// emitted, spec by spec, and C's final counters A's.
type snapCase struct {
	cfg Config
	// specs returns the graph, spec i's output collected into res[i]
	// (rows, or tuples for a stateless query or a join).
	specs  func(res []*reference.Result) []Spec
	n      int                         // specs
	inputs func(e *Engine) []*Stream   // the producers' streams, data's order
	data   [][]byte                    // per input
	query  func(i int) *query.Query    // spec i's query, for Diff (nil: compare tuples)
	check  func(a []*reference.Result) // an oracle of A's output, if any
	// unordered, where not 0, compares the tuples of the specs without a
	// query as multisets of tuples of that many bytes: a regular join's
	// pairs come in an order of its inputs' arrivals.
	unordered int
	// tuple is the inputs' tuple size (0: randTuple).
	tuple int
}

// tupleSize is the inputs' tuple size.
func (c *snapCase) tupleSize() int {
	if c.tuple != 0 {
		return c.tuple
	}
	return randTuple
}

func (c *snapCase) results() []*reference.Result {
	res := make([]*reference.Result, c.n)
	for i := range res {
		res[i] = &reference.Result{}
	}
	return res
}

// feed writes data[i][from[i]:to[i]] tuples to the inputs, in random
// chunks of random inputs (one goroutine: a task boundary is where the
// writes stop).
func (c *snapCase) feed(e *Engine, r *rand.Rand, from, to []int) error {
	in := c.inputs(e)
	at := append([]int(nil), from...)
	for {
		var open []int
		for i := range in {
			if at[i] < to[i] {
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			return nil
		}
		i := open[r.IntN(len(open))]
		ts := c.tupleSize()
		n := min(to[i]-at[i], 1+r.IntN(3*c.cfg.TaskSize/ts))
		if err := in[i].Write(c.data[i][at[i]*ts : (at[i]+n)*ts]); err != nil {
			return err
		}
		at[i] += n
	}
}

func (c *snapCase) ends() (zero, all []int) {
	for _, d := range c.data {
		zero, all = append(zero, 0), append(all, len(d)/c.tupleSize())
	}
	return zero, all
}

// run runs the case uninterrupted and cut at cut, and compares.
func (c *snapCase) run(t *testing.T, r *rand.Rand, cut []int, name string) {
	t.Helper()
	zero, all := c.ends()
	whole := c.results()
	e, err := Start(c.cfg, c.specs(whole))
	require.NoError(t, err)
	require.NoError(t, c.feed(e, r, zero, all), name)
	wantStats, err := e.CloseAll()
	require.NoError(t, err, name)
	for i, st := range wantStats {
		whole[i].Counts = reference.Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
	}
	if c.check != nil {
		c.check(whole)
	}

	got := c.results()
	b, err := Start(c.cfg, c.specs(got))
	require.NoError(t, err)
	require.NoError(t, c.feed(b, r, zero, cut), name)
	for _, s := range c.inputs(b) {
		require.NoError(t, s.Flush(), name)
	}
	snap, err := b.Snapshot(nil)
	require.NoError(t, err, name)
	crash := errors.New("crash")
	b.Abort(crash)
	_, err = b.CloseAll()
	require.ErrorIs(t, err, crash)

	e, err = Start(c.cfg, c.specs(got))
	require.NoError(t, err)
	_, err = e.Restore(snap)
	require.NoError(t, err, name)
	require.NoError(t, c.feed(e, r, cut, all), name)
	stats, err := e.CloseAll()
	require.NoError(t, err, name)
	for i, st := range stats {
		got[i].Counts = reference.Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
	}

	for i := range c.n {
		if q := c.query(i); q != nil && !q.Stateless() {
			assert.Empty(t, reference.Diff(q, whole[i], got[i], 1e-9), "%s: spec %d (%s): against the uninterrupted run", name, i, q.Name)
		} else if c.unordered > 0 && q == nil {
			assert.Equal(t, sortedPairs(whole[i].Tuples, c.unordered), sortedPairs(got[i].Tuples, c.unordered), "%s: spec %d: tuples", name, i)
		} else {
			assert.Equal(t, len(whole[i].Tuples), len(got[i].Tuples), "%s: spec %d: tuples", name, i)
			assert.True(t, string(whole[i].Tuples) == string(got[i].Tuples), "%s: spec %d: tuples differ", name, i)
		}
		w, g := wantStats[i], stats[i]
		assert.Equal(t, [6]uint64{w.Tuples, w.Filtered, w.Late, w.Counted, w.Windows, w.Rows},
			[6]uint64{g.Tuples, g.Filtered, g.Late, g.Counted, g.Windows, g.Rows}, "%s: spec %d: counters", name, i)
	}
}

// randCut is a random point of each input, now and then its start or end.
func randCut(r *rand.Rand, data [][]byte) []int {
	return randCutOf(r, data, randTuple)
}

// randCutOf is randCut over inputs of tuples of size bytes.
func randCutOf(r *rand.Rand, data [][]byte, size int) []int {
	var cut []int
	for _, d := range data {
		n := len(d) / size
		switch r.IntN(8) {
		case 0:
			cut = append(cut, 0)
		case 1:
			cut = append(cut, n)
		default:
			cut = append(cut, r.IntN(n+1))
		}
	}
	return cut
}

func randConfig(r *rand.Rand, maxTask int) Config {
	cfg := Config{Workers: 1 + r.IntN(3), TaskSize: randTuple * (1 + r.IntN(maxTask)), BufferSize: 1 << 13}
	for cfg.BufferSize < 2*cfg.TaskSize {
		cfg.BufferSize *= 2
	}
	return cfg
}

// seeds is how many seeds (or rounds) a property test runs: full under
// SABER_HX_LONG_TESTS=1 (CI's plain pass), at most short under -short
// (CI's race pass), def in the plain `go test ./...` (a share that keeps
// it short on a 2-core machine).
func seeds(def, short, full int) int {
	n := testenv.Scale(def, full)
	if testing.Short() {
		n = min(n, short)
	}
	return n
}

// TestSnapshotChainedQueries: a chain of queries (an upstream stateless or
// a sliding aggregation, a downstream aggregation over its output, now and
// then on a row window) snapshotted at a
// random point: every output an upstream emitted before it reaches its
// downstream's state in the snapshot. Breaking the drain (Snapshot no
// longer dispatching a chained stream's partly filled task, or no longer
// waiting for its tasks) loses those rows: the downstream's windows then
// differ from the uninterrupted run's.
func TestSnapshotChainedQueries(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	for seed := range seeds(8, 12, 40) {
		r := rand.New(rand.NewPCG(uint64(seed), 1818))
		var up *query.Query
		if r.IntN(2) == 0 {
			up = &query.Query{Name: "up", Schema: s, Where: query.ColGe("a", int64(r.IntN(6)-3)),
				Project: []query.Projection{{Expr: query.C("ts")}, {Expr: query.Add(query.C("a"), query.C("b")), As: "ab"}, {Expr: query.C("c")}}}
		} else {
			up = &query.Query{Name: "up", Schema: s, Window: randWindow(r, 60), GroupBy: []query.Expr{query.C("b")},
				Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}, {Func: query.Max, Arg: query.C("c"), As: "max_c"}}}
			if up.Window.Type == query.Rows {
				up.Window.Type = query.Range
			}
		}
		out, err := up.OutputSchema()
		require.NoError(t, err)
		dw := randWindow(r, 150)
		if r.IntN(3) == 0 {
			dw.Type = query.Rows
		}
		// Grouped by the upstream's key (b) or ab, over n or c: a stateless
		// upstream's Attrs[1] is its projected ts (after the output's
		// timestamp), by which every tuple was its own group, and direct
		// tables of 25000 slots a fragment as the times drifted.
		key, val := out.Attrs[1], out.Attrs[2]
		if up.Stateless() {
			key, val = out.Attrs[2], out.Attrs[3]
		}
		down := &query.Query{Name: "down", Schema: out, Window: dw,
			GroupBy:    []query.Expr{query.C(key.Name)},
			Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C(val.Name)}, {Func: query.Min, Arg: query.C(val.Name)}}}
		require.NoError(t, down.Validate())
		qs := []*query.Query{up, down}
		data := randData(r, 200+r.IntN(3000))
		cfg := randConfig(r, 60)
		cfg.lendMin = 1 // a stateless upstream lends its outputs at any size (handoff.go)
		c := &snapCase{
			cfg: cfg, n: len(qs), data: [][]byte{data},
			specs: func(res []*reference.Result) []Spec {
				var sp []Spec
				for i, q := range qs {
					x := specInto(q, res[i])
					if i > 0 {
						x.Upstream = Output(i - 1)
					}
					sp = append(sp, x)
				}
				return sp
			},
			inputs: func(e *Engine) []*Stream { return []*Stream{e.Stream(0)} },
			query:  func(i int) *query.Query { return qs[i] },
			check: func(a []*reference.Result) {
				want, err := reference.Evaluate(up, data)
				require.NoError(t, err)
				assert.Empty(t, reference.Diff(up, want, a[0], 1e-9), "seed %d: up against the reference", seed)
			},
		}
		cut := randCut(r, c.data)
		c.run(t, r, cut, fmt.Sprintf("seed %d (workers %d, task %d, up %v, down %v, %d queries, cut %v of %d)",
			seed, c.cfg.Workers, c.cfg.TaskSize, up.Window, down.Window, len(qs), cut, len(data)/randTuple))
	}
	assertNoLeak(t, base)
}

// TestSnapshotRowWindows: random aggregations over row windows snapshotted
// at a random point, against the reference over the whole input: the
// restored stream counts its tuples on from the snapshot's position.
// Without that (Restore no longer moving the stream on, skipTo), the
// restored windows start again at position 0 and both the windows and
// their contents differ.
func TestSnapshotRowWindows(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	for seed := range seeds(12, 15, 60) {
		r := rand.New(rand.NewPCG(uint64(seed), 1819))
		q := randQuery(r, s)
		if q.Stateless() {
			q.Window = query.Tumbling(1)
			q.Aggregates = []query.Aggregate{{Func: query.Count}}
			q.Project = nil
		}
		q.Window.Type = query.Rows
		q.Window.Delay = 0
		require.NoError(t, q.Validate(), "%+v", q)
		data := randData(r, 100+r.IntN(3000))
		c := &snapCase{
			cfg: randConfig(r, 200), n: 1, data: [][]byte{data},
			specs:  func(res []*reference.Result) []Spec { return []Spec{specInto(q, res[0])} },
			inputs: func(e *Engine) []*Stream { return []*Stream{e.Stream(0)} },
			query:  func(int) *query.Query { return q },
			check: func(a []*reference.Result) {
				want, err := reference.Evaluate(q, data)
				require.NoError(t, err)
				assert.Empty(t, reference.Diff(q, want, a[0], 1e-9), "seed %d: against the reference", seed)
			},
		}
		cut := randCut(r, c.data)
		c.run(t, r, cut, fmt.Sprintf("seed %d (workers %d, task %d, window %+v, cut %v)", seed, c.cfg.Workers, c.cfg.TaskSize, q.Window, cut))
	}
	assertNoLeak(t, base)
}

// TestSnapshotWindowJoins: random window joins (range and row windows,
// tumbling and sliding, theta predicates) of two producers' inputs, cut
// at a random point of each, against the reference and the uninterrupted
// run; and now and then a join of two aggregations chained to one input,
// the join's output feeding a later query, or a join of two filters that
// add their output to it themselves (joinFeed). Without the join's part
// of the snapshot (its open panes) the restored join loses every pair of
// a window open at the snapshot; without its drain the pairs of windows
// closed before it and not yet handed on.
func TestSnapshotWindowJoins(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	for seed := range seeds(6, 12, 40) {
		r := rand.New(rand.NewPCG(uint64(seed), 1820))
		switch r.IntN(4) {
		case 0:
			snapJoinOfChains(t, r, s, seed)
			continue
		case 1:
			snapJoinOfFilters(t, r, s, seed)
			continue
		}
		j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: randWindow(r, 60)}
		switch r.IntN(3) {
		case 0:
		case 1:
			j.Where = query.Cmp(query.C("l.a"), query.Lt, query.C("r.a"))
		default:
			j.Where = query.And(query.Cmp(query.C("l.b"), query.Eq, query.C("r.b")), query.Cmp(query.C("l.y"), query.Gt, query.Int(10)))
		}
		left, right := randData(r, 100+r.IntN(800)), randData(r, 100+r.IntN(800))
		c := &snapCase{
			cfg: randConfig(r, 40), n: 1, data: [][]byte{left, right},
			specs: func(res []*reference.Result) []Spec {
				return []Spec{{Join: j, Tuples: func(b []byte) error { res[0].Tuples = append(res[0].Tuples, b...); return nil }}}
			},
			inputs: func(e *Engine) []*Stream { return []*Stream{e.Stream(0), e.Stream(0).Right()} },
			query:  func(int) *query.Query { return nil },
			check: func(a []*reference.Result) {
				want, err := reference.EvaluateJoin(j, left, right)
				require.NoError(t, err)
				assert.True(t, string(want.Tuples) == string(a[0].Tuples), "seed %d: pairs against the reference", seed)
			},
		}
		cut := randCut(r, c.data)
		c.run(t, r, cut, fmt.Sprintf("seed %d (workers %d, task %d, window %+v, cut %v)", seed, c.cfg.Workers, c.cfg.TaskSize, j.Window, cut))
	}
	assertNoLeak(t, base)
}

// snapJoinOfFilters is a window join of two filters' outputs, each filter
// over a producer's input and with no sink of its own: the filters' result
// stages add their output to the join (joinFeed).
func snapJoinOfFilters(t *testing.T, r *rand.Rand, s *query.Schema, seed int) {
	lq := &query.Query{Name: "lq", Schema: s, Where: query.Cmp(query.C("a"), query.Lt, query.Int(int64(r.IntN(12))))}
	rq := &query.Query{Name: "rq", Schema: s, Where: query.Cmp(query.C("b"), query.Ne, query.Int(int64(r.IntN(7))))}
	j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: randWindow(r, 60), Where: query.Cmp(query.C("l.c"), query.Lt, query.C("r.c"))}
	left, right := randData(r, 100+r.IntN(800)), randData(r, 100+r.IntN(800))
	c := &snapCase{
		cfg: randConfig(r, 40), n: 3, data: [][]byte{left, right},
		specs: func(res []*reference.Result) []Spec {
			return []Spec{{Query: lq}, {Query: rq},
				{Join: j, Upstream: Output(0), UpstreamRight: Output(1), Tuples: func(b []byte) error { res[2].Tuples = append(res[2].Tuples, b...); return nil }}}
		},
		inputs: func(e *Engine) []*Stream { return []*Stream{e.Stream(0), e.Stream(1)} },
		query:  func(int) *query.Query { return nil },
		check: func(a []*reference.Result) {
			want := joinOfQueries(t, j, lq, rq, left, right)
			assert.True(t, string(want.Tuples) == string(a[2].Tuples), "seed %d: pairs of the filters against the reference", seed)
		},
	}
	cut := randCut(r, c.data)
	c.run(t, r, cut, fmt.Sprintf("seed %d: join of filters (workers %d, task %d, window %+v, cut %v)", seed, c.cfg.Workers, c.cfg.TaskSize, j.Window, cut))
}

// snapJoinOfChains is sg3's shape with a query after the join: two
// aggregations over one input (each its own stream), joined, the pairs
// filtered by a stateless query downstream.
func snapJoinOfChains(t *testing.T, r *rand.Rand, s *query.Schema, seed int) {
	w := randWindow(r, 60)
	w.Type = query.Range
	local := &query.Query{Name: "local", Schema: s, Window: w, GroupBy: []query.Expr{query.C("b")},
		Aggregates: []query.Aggregate{{Func: query.Sum, Arg: query.C("c"), As: "sum"}}}
	global := &query.Query{Name: "global", Schema: s, Window: w,
		Aggregates: []query.Aggregate{{Func: query.Max, Arg: query.C("c"), As: "max"}}}
	lo, err := local.OutputSchema()
	require.NoError(t, err)
	gl, err := global.OutputSchema()
	require.NoError(t, err)
	j := &query.WindowJoin{Name: "above", Left: lo, Right: gl, Window: query.Tumbling(w.Slide),
		Where: query.Cmp(query.Mul(query.C("l.sum"), query.Int(3)), query.Gt, query.C("r.max"))}
	out := j.OutputSchemaUnchecked()
	down := &query.Query{Name: "down", Schema: out, Where: query.Cmp(query.C("l.b"), query.Le, query.Int(3))}
	data := randData(r, 200+r.IntN(2500))
	qs := []*query.Query{local, global, nil, down}
	c := &snapCase{
		cfg: randConfig(r, 40), n: 4, data: [][]byte{data, data},
		specs: func(res []*reference.Result) []Spec {
			return []Spec{
				specInto(local, res[0]),
				specInto(global, res[1]),
				{Join: j, Upstream: Output(0), UpstreamRight: Output(1), Tuples: func(b []byte) error { res[2].Tuples = append(res[2].Tuples, b...); return nil }},
				{Query: down, Upstream: Output(2), Tuples: func(b []byte) error { res[3].Tuples = append(res[3].Tuples, b...); return nil }},
			}
		},
		inputs: func(e *Engine) []*Stream { return []*Stream{e.Stream(0), e.Stream(1)} },
		query:  func(i int) *query.Query { return qs[i] },
		check: func(a []*reference.Result) {
			want, err := reference.Evaluate(down, a[2].Tuples)
			require.NoError(t, err)
			assert.True(t, string(want.Tuples) == string(a[3].Tuples), "seed %d: downstream of the join against the reference", seed)
		},
	}
	cut := randCut(r, c.data)
	c.run(t, r, cut, fmt.Sprintf("seed %d: join of chains (workers %d, task %d, window %+v, cut %v)", seed, c.cfg.Workers, c.cfg.TaskSize, w, cut))
}
