package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/doubling"
	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/strview"
)

// regSchema is randData's layout with b NULL where the low bit of byte 40
// (k's first byte in randSchema) is set: about two tuples in five.
func regSchema(t testing.TB) *query.Schema {
	s, err := query.NewSchema(randTuple,
		query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "a", Type: query.Int32, Offset: 8},
		query.Attribute{Name: "b", Type: query.Int32, Offset: 12, Nullable: true, NullBit: 40 * 8},
		query.Attribute{Name: "c", Type: query.Int64, Offset: 16},
	)
	require.NoError(t, err)
	return s
}

// regJoin is a regular join of regSchema's streams on b.
func regJoin(t testing.TB) *query.WindowJoin {
	s := regSchema(t)
	return &query.WindowJoin{Name: "rj", Left: s, Right: s, Regular: true, LeftKey: 2, RightKey: 2}
}

// sortedPairs is the pairs of p (of size bytes each) sorted, one after
// the other: compared as one byte slice (bytes.Equal), not a string a pair,
// which cost more than the engine's run in the tests that use it.
func sortedPairs(p []byte, size int) []byte {
	idx := make([]int, len(p)/size)
	for i := range idx {
		idx[i] = i * size
	}
	slices.SortFunc(idx, func(a, b int) int { return bytes.Compare(p[a:a+size], p[b:b+size]) })
	out := make([]byte, 0, len(idx)*size)
	for _, o := range idx {
		out = append(out, p[o:o+size]...)
	}
	return out
}

// TestRegularJoinMatchesNestedLoops: a regular join at 1, 2 and 3 workers
// and several task sizes, its inputs fed concurrently, left before right
// or right before left, against the reference's nested loops (repeated
// keys on both sides, NULL keys that join nothing): the same pairs, each
// once, in an order of the arrivals.
func TestRegularJoinMatchesNestedLoops(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	j := regJoin(t)
	size := 2 * randTuple
	for seed := range seeds(3, 3, 20) {
		r := rand.New(rand.NewPCG(uint64(seed), 26))
		// Up to 900 tuples a side (22 tasks of 40 and up), not 1600: the
		// pairs, a seventh of the product, cost more than the runs.
		left, right := randData(r, 100+r.IntN(800)), randData(r, 100+r.IntN(800))
		want, err := reference.EvaluateJoin(j, left, right)
		require.NoError(t, err)
		require.NotEmpty(t, want.Tuples)
		wantPairs := sortedPairs(want.Tuples, size) // once for the runs
		for _, workers := range []int{1, 2, 3} {
			for o, order := range []string{"concurrent", "left first", "right first"} {
				task := randTuple * []int{1, 7, 40}[r.IntN(3)]
				if (workers+o+seed)%3 != 0 && !testenv.Full() {
					continue // by default a Latin square: each worker count and each order once a seed
				}
				cfg := Config{Workers: workers, TaskSize: task, BufferSize: 1 << 13}
				name := fmt.Sprintf("seed %d, %d workers, task %d, %s", seed, workers, task, order)
				var got []byte
				e, err := Start(cfg, []Spec{{Join: j, Tuples: func(b []byte) error { got = doubling.Append(got, b...); return nil }}})
				require.NoError(t, err, name)
				in := [2]*Stream{e.Stream(0), e.Stream(0).Right()}
				data := [2][]byte{left, right}
				switch order {
				case "concurrent":
					errs := make(chan error, 2)
					go func() { errs <- in[0].Write(left) }()
					go func() { errs <- in[1].Write(right) }()
					require.NoError(t, <-errs, name)
					require.NoError(t, <-errs, name)
				default:
					first := 0
					if order == "right first" {
						first = 1
					}
					require.NoError(t, in[first].Write(data[first]), name)
					require.NoError(t, in[first].Flush(), name)
					require.NoError(t, in[1-first].Write(data[1-first]), name)
				}
				st, err := e.Close()
				require.NoError(t, err, name)
				assert.Equal(t, wantPairs, sortedPairs(got, size), name)
				assert.Equal(t, uint64(len(want.Tuples)/size), st.Rows, name)
				assert.Equal(t, want.Counts.Tuples, st.Tuples, name)
			}
		}
	}
	assertNoLeak(t, base)
}

// TestRegularJoinOfFiltersFeedsAQuery: a regular join of two filters'
// outputs (their result stages add to the join: joinFeed), its output
// feeding a projection, as the SQL compiler lowers Nexmark's q3 and q20.
func TestRegularJoinOfFiltersFeedsAQuery(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	j := regJoin(t)
	s := j.Left
	lq := &query.Query{Name: "lq", Schema: s, Where: query.Cmp(query.C("a"), query.Lt, query.Int(8))}
	rq := &query.Query{Name: "rq", Schema: s, Where: query.Cmp(query.C("c"), query.Gt, query.Int(0))}
	out, err := j.OutputSchema()
	require.NoError(t, err)
	proj := &query.Query{Name: "proj", Schema: out, Project: []query.Projection{{Expr: query.C("l.ts"), As: "ts"}, {Expr: query.C("r.c"), As: "c"}}}
	r := rand.New(rand.NewPCG(5, 26))
	// 1000 tuples a side (60 tasks of 16): 60000 pairs, not 250000, which
	// cost more than the run.
	left, right := randData(r, 1000), randData(r, 1000)
	want := joinOfQueries(t, j, lq, rq, left, right)
	wantProj, err := reference.Evaluate(proj, want.Tuples)
	require.NoError(t, err)
	ps, err := proj.OutputSchema()
	require.NoError(t, err)
	require.NotEmpty(t, wantProj.Tuples)
	wantPairs := sortedPairs(wantProj.Tuples, ps.TupleSize) // once for the three runs
	for _, workers := range []int{1, 2, 3} {
		var got []byte
		e, err := Start(Config{Workers: workers, TaskSize: randTuple * 16, BufferSize: 1 << 13}, []Spec{
			{Query: lq}, {Query: rq},
			{Join: j, Upstream: Output(0), UpstreamRight: Output(1)},
			{Query: proj, Upstream: Output(2), Tuples: func(b []byte) error { got = doubling.Append(got, b...); return nil }},
		})
		require.NoError(t, err)
		errs := make(chan error, 2)
		go func() { errs <- e.Stream(0).Write(left) }()
		go func() { errs <- e.Stream(1).Write(right) }()
		require.NoError(t, <-errs)
		require.NoError(t, <-errs)
		_, err = e.CloseAll()
		require.NoError(t, err)
		assert.Equal(t, wantPairs, sortedPairs(got, ps.TupleSize), "workers %d", workers)
	}
	assertNoLeak(t, base)
}

// TestSnapshotRegularJoins: a regular join, alone or of two filters,
// snapshotted at a random cut of each input, crashed, restored and fed
// the rest: what the crashed and the restored runs output together is
// what the uninterrupted run outputs (sorted: each pair is output when its
// later tuple arrives), and that is the reference's. Without the join's
// state in the snapshot the restored join loses every pair of a tuple
// before the cut with one after.
func TestSnapshotRegularJoins(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	j := regJoin(t)
	s := j.Left
	for seed := range seeds(6, 8, 30) {
		r := rand.New(rand.NewPCG(uint64(seed), 2626))
		left, right := randData(r, 100+r.IntN(800)), randData(r, 100+r.IntN(800))
		filters := r.IntN(2) == 0
		lq := &query.Query{Name: "lq", Schema: s, Where: query.Cmp(query.C("a"), query.Lt, query.Int(int64(r.IntN(12))))}
		rq := &query.Query{Name: "rq", Schema: s, Where: query.Cmp(query.C("c"), query.Gt, query.Int(int64(r.IntN(400)-200)))}
		c := &snapCase{
			cfg: randConfig(r, 40), n: 1, data: [][]byte{left, right}, unordered: 2 * randTuple,
			specs: func(res []*reference.Result) []Spec {
				return []Spec{{Join: j, Tuples: func(b []byte) error { res[0].Tuples = append(res[0].Tuples, b...); return nil }}}
			},
			inputs: func(e *Engine) []*Stream { return []*Stream{e.Stream(0), e.Stream(0).Right()} },
			query:  func(int) *query.Query { return nil },
			check: func(a []*reference.Result) {
				want, err := reference.EvaluateJoin(j, left, right)
				require.NoError(t, err)
				assert.Equal(t, sortedPairs(want.Tuples, 2*randTuple), sortedPairs(a[0].Tuples, 2*randTuple), "seed %d: pairs against the reference", seed)
			},
		}
		if filters {
			c.n = 3
			c.specs = func(res []*reference.Result) []Spec {
				return []Spec{{Query: lq}, {Query: rq},
					{Join: j, Upstream: Output(0), UpstreamRight: Output(1), Tuples: func(b []byte) error { res[2].Tuples = append(res[2].Tuples, b...); return nil }}}
			}
			c.inputs = func(e *Engine) []*Stream { return []*Stream{e.Stream(0), e.Stream(1)} }
			c.check = func(a []*reference.Result) {
				want := joinOfQueries(t, j, lq, rq, left, right)
				assert.Equal(t, sortedPairs(want.Tuples, 2*randTuple), sortedPairs(a[2].Tuples, 2*randTuple), "seed %d: pairs of the filters against the reference", seed)
			}
		}
		cut := randCut(r, c.data)
		c.run(t, r, cut, fmt.Sprintf("seed %d (filters %v, workers %d, task %d, cut %v)", seed, filters, c.cfg.Workers, c.cfg.TaskSize, cut))
	}
	assertNoLeak(t, base)
}

// TestRegularJoinProgress: a regular join's inputs are never complete
// (Progress.Complete math.MinInt64, as a row window's): each tuple pairs
// with tuples still to come, so a source without checkpoints commits its
// records only when the run ends.
func TestRegularJoinProgress(t *testing.T) {
	parallel(t)
	j := regJoin(t)
	e, err := Start(Config{Workers: 2, TaskSize: randTuple * 8, BufferSize: 1 << 13}, []Spec{{Join: j, Tuples: func([]byte) error { return nil }}})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(1, 1))
	require.NoError(t, e.Stream(0).Write(randData(r, 500)))
	require.NoError(t, e.Stream(0).Right().Write(randData(r, 500)))
	require.NoError(t, e.Stream(0).Flush())
	require.NoError(t, e.Stream(0).Right().Flush())
	for _, s := range []*Stream{e.Stream(0), e.Stream(0).Right()} {
		assert.Equal(t, int64(math.MinInt64), s.Progress().Complete)
	}
	_, err = e.Close()
	require.NoError(t, err)
}

// TestRegularJoinTaskPathDoesNotAllocate: filing a regular join's input
// (its tasks, Cut's copies into the join's state, the index, the pairs
// and their hand-off) costs no allocation per tuple in steady state: its
// state grows, but by chunks of thousands of tuples (its index by
// doubling), which the average over a run of 512 tuples makes 0. On a
// loaded machine a run now and then makes one or two: the outputs that
// wait for the drain reach a new high (their queue grows, and a buffer
// is made for the newest), which 1 run in 6 did here at load averages of
// 8-10 on 2 CPUs; the bound, 4 a run, is one per 128 tuples, and the
// kernel's own filing is held to 0 (kernels.TestRegularJoinAllocs).
func TestRegularJoinTaskPathDoesNotAllocate(t *testing.T) {
	j := regJoin(t)
	const tupleTasks, perRun = 64, 8
	e, err := Start(Config{Workers: 2, TaskSize: randTuple * tupleTasks, BufferSize: 1 << 16},
		[]Spec{{Join: j, Tuples: func([]byte) error { return nil }}})
	require.NoError(t, err)
	// The right side: one tuple of each key 0-63.
	right := make([]byte, 64*randTuple)
	for k := range 64 {
		binary.LittleEndian.PutUint32(right[k*randTuple+12:], uint32(k))
	}
	require.NoError(t, e.Stream(0).Right().Write(right))
	require.NoError(t, e.Stream(0).Right().Flush())
	st := e.Stream(0)
	var next int64
	chunk := make([]byte, perRun*tupleTasks*randTuple)
	feed := func() {
		for o := 0; o < len(chunk); o += randTuple {
			binary.LittleEndian.PutUint64(chunk[o:], uint64(next))
			binary.LittleEndian.PutUint32(chunk[o+12:], uint32(next%64))
			next++
		}
		if err := st.Write(chunk); err != nil {
			panic(err)
		}
	}
	allocs := steadyAllocs(st, feed)
	stats, err := e.Close()
	require.NoError(t, err)
	assert.LessOrEqual(t, allocs, 4.0, "allocations per %d tasks of %d tuples", perRun, tupleTasks)
	assert.Equal(t, uint64(next), stats.Rows, "one pair a left tuple")
}

// stringKeyJoin is a regular join of sqlSchema's tuples on their String
// column s, the filters that may feed its sides, and a projection of two
// numbers of its pairs, which the tests compare: the pairs' strings' views
// point into each run's own memory.
type stringKeyJoin struct {
	j        *query.WindowJoin
	lq, rq   *query.Query
	proj     *query.Query
	pairSize int // proj's tuple size
}

func newStringKeyJoin(t *testing.T) *stringKeyJoin {
	s := sqlSchema(t)
	key := slices.IndexFunc(s.Attrs, func(a query.Attribute) bool { return a.Name == "s" })
	j := &query.WindowJoin{Name: "rj", Left: s, Right: s, Regular: true, LeftKey: key, RightKey: key}
	require.NoError(t, j.Validate())
	out, err := j.OutputSchema()
	require.NoError(t, err)
	proj := &query.Query{Name: "proj", Schema: out, Project: []query.Projection{{Expr: query.C("l.n"), As: "ln"}, {Expr: query.C("r.m"), As: "rm"}}}
	ps, err := proj.OutputSchema()
	require.NoError(t, err)
	return &stringKeyJoin{j: j, proj: proj, pairSize: ps.TupleSize,
		lq: &query.Query{Name: "lq", Schema: s, Where: query.Cmp(query.C("f"), query.Gt, query.Int(-50))},
		rq: &query.Query{Name: "rq", Schema: s, Where: query.Cmp(query.C("n"), query.Gt, query.Int(-40))}}
}

// draw makes the two sides' tuples (their long strings in a) and the
// reference's projected pairs of them, sorted (sortedPairs), with the
// sides fed through the filters where fed.
func (sj *stringKeyJoin) draw(t *testing.T, r *rand.Rand, a *strview.Arena, fed bool) (left, right []byte, want []byte) {
	s := sj.j.Left
	left, right = sqlData(r, s, a, 200+r.IntN(400), 4), sqlData(r, s, a, 200+r.IntN(400), 4)
	var pairs *reference.Result
	if fed {
		pairs = joinOfQueries(t, sj.j, sj.lq, sj.rq, left, right)
	} else {
		var err error
		pairs, err = reference.EvaluateJoin(sj.j, left, right)
		require.NoError(t, err)
	}
	proj, err := reference.Evaluate(sj.proj, pairs.Tuples)
	require.NoError(t, err)
	require.NotEmpty(t, proj.Tuples)
	return left, right, sortedPairs(proj.Tuples, sj.pairSize)
}

// specs are the join's specs, its sides fed by the filters where fed, the
// projection's pairs to sink (the last spec).
func (sj *stringKeyJoin) specs(fed bool, sink TupleSink) []Spec {
	if fed {
		return []Spec{{Query: sj.lq}, {Query: sj.rq}, {Join: sj.j, Upstream: Output(0), UpstreamRight: Output(1)},
			{Query: sj.proj, Upstream: Output(2), Tuples: sink}}
	}
	return []Spec{{Join: sj.j}, {Query: sj.proj, Upstream: Output(0), Tuples: sink}}
}

// inputs are the streams that the join's left and right tuples are
// written to in e, started with specs(fed, ...).
func (sj *stringKeyJoin) inputs(e *Engine, fed bool) []*Stream {
	if fed {
		return []*Stream{e.Stream(0), e.Stream(1)}
	}
	return []*Stream{e.Stream(0), e.Stream(0).Right()}
}

// TestRegularJoinOnStrings: a regular join on a String key (NULL in some
// tuples, short strings in their views, long ones out of line), its sides
// fed by filters (joinFeed) or written directly, its pairs read by a
// projection of two numbers: the pairs are the reference's, each once,
// over worker counts and task sizes. The projection reads no string, so
// the sides empty the long strings they pass on (narrowJoinSides): all
// but the key, which the join reads.
func TestRegularJoinOnStrings(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	sj := newStringKeyJoin(t)
	for seed := range seeds(2, 2, 8) {
		r := rand.New(rand.NewPCG(uint64(seed), 41))
		var a strview.Arena
		fed := seed%2 == 0
		left, right, wantPairs := sj.draw(t, r, &a, fed)
		for _, workers := range []int{1, 2, 3} {
			name := fmt.Sprintf("seed %d fed %v workers %d", seed, fed, workers)
			var got []byte
			sink := func(b []byte) error { got = doubling.Append(got, b...); return nil }
			// A task holds whole tuples of every query: the pairs are two tuples.
			e, err := Start(Config{Workers: workers, TaskSize: 2 * sqlTuple * (1 + r.IntN(10)), BufferSize: 1 << 14}, sj.specs(fed, sink))
			require.NoError(t, err, name)
			in := sj.inputs(e, fed)
			done := e.Produce(func() error { return in[0].Write(left) })
			require.NoError(t, <-e.Produce(func() error { return in[1].Write(right) }), name)
			require.NoError(t, <-done, name)
			_, err = e.CloseAll()
			require.NoError(t, err, name)
			assert.Equal(t, wantPairs, sortedPairs(got, sj.pairSize), name)
		}
		a.Free()
	}
	assertNoLeak(t, base)
}

// TestSnapshotRegularJoinOnStrings: TestSnapshotRegularJoins with a
// String key (NULL in some tuples, short strings in their views, long ones
// out of line): a run cut by a snapshot and restored in a new engine gives
// the pairs of the uninterrupted run and of the reference, the restored
// sides' keys matching tuples that arrive after the cut. The pairs are
// read by a projection of two numbers, as their strings' views point into
// each run's own memory.
func TestSnapshotRegularJoinOnStrings(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	sj := newStringKeyJoin(t)
	for seed := range seeds(3, 2, 12) {
		r := rand.New(rand.NewPCG(uint64(seed), 4242))
		var a strview.Arena
		fed := seed%2 == 1
		left, right, wantPairs := sj.draw(t, r, &a, fed)
		sink := func(res []*reference.Result, i int) func([]byte) error {
			return func(b []byte) error { res[i].Tuples = append(res[i].Tuples, b...); return nil }
		}
		// A task holds whole tuples of every query: the pairs are two tuples.
		cfg := Config{Workers: 1 + r.IntN(3), TaskSize: 2 * sqlTuple * (1 + r.IntN(10)), BufferSize: 1 << 14}
		c := &snapCase{
			cfg: cfg, n: len(sj.specs(fed, nil)), data: [][]byte{left, right}, unordered: sj.pairSize, tuple: sqlTuple,
			inputs: func(e *Engine) []*Stream { return sj.inputs(e, fed) },
			query:  func(int) *query.Query { return nil },
		}
		c.specs = func(res []*reference.Result) []Spec { return sj.specs(fed, sink(res, c.n-1)) }
		c.check = func(res []*reference.Result) {
			assert.Equal(t, wantPairs, sortedPairs(res[c.n-1].Tuples, sj.pairSize), "seed %d: pairs against the reference", seed)
		}
		cut := randCutOf(r, c.data, sqlTuple)
		c.run(t, r, cut, fmt.Sprintf("seed %d (fed %v, workers %d, task %d, cut %v)", seed, fed, cfg.Workers, cfg.TaskSize, cut))
		a.Free()
	}
	assertNoLeak(t, base)
}
