package engine

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/strview"
)

// TestDictColumnsMatchReference: aggregations grouped by dictionary-encoded
// string columns (Spec.DictColumns: the kernels group by the numbers
// beside the views), alone or with another key, NULLs among them, over
// tumbling, sliding and session windows, give the reference evaluator's
// output with 1 to 3 workers and any task size; one dictionary serves
// several runs, as a source's serves every query over it.
func TestDictColumnsMatchReference(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := sqlSchema(t)
	dc := sqlDictColumns(strview.NewDict())
	keys := []func() query.Expr{
		func() query.Expr { return query.C("n") }, func() query.Expr { return query.C("m") },
		func() query.Expr { return query.Call{Fn: "upper", Args: []query.Expr{query.C("t")}} },
	}
	for seed := range testenv.Scale(15, 300) {
		r := rand.New(rand.NewPCG(uint64(seed), 31))
		var a strview.Arena
		data := sqlData(r, s, &a, 200+r.IntN(1500), []int{0, 3}[r.IntN(2)])
		q := sqlQuery(r, s)
		for q.Stateless() || q.Join != nil {
			q = sqlQuery(r, s)
		}
		q.GroupBy = []query.Expr{query.C([]string{"s", "t"}[r.IntN(2)])}
		switch r.IntN(3) {
		case 0:
			q.GroupBy = append(q.GroupBy, query.C("s"), query.C("t"))[1:]
		case 1:
			q.GroupBy = append(q.GroupBy, keys[r.IntN(len(keys))]())
		}
		r.Shuffle(len(q.GroupBy), func(i, j int) { q.GroupBy[i], q.GroupBy[j] = q.GroupBy[j], q.GroupBy[i] })
		if q.Validate() != nil { // keys too wide for the engine
			q.GroupBy = q.GroupBy[:1]
		}
		require.NoError(t, q.Validate(), "seed %d", seed)
		encodeSQLData(t, s, dc, data)
		want, err := reference.Evaluate(q, data)
		require.NoError(t, err, "seed %d", seed)
		cfg := Config{Workers: 1 + r.IntN(3), TaskSize: sqlTuple * (1 + r.IntN(64)), BufferSize: 1 << 16}
		got := runSQLValues(t, q, data, cfg, dc)
		require.Empty(t, reference.Diff(q, want, got, 1e-9), "seed %d, %d workers, task %d B: group %v window %+v aggs %+v having %v",
			seed, cfg.Workers, cfg.TaskSize, q.GroupBy, q.Window, q.Aggregates, q.Having)
		a.Free()
	}
	assertNoLeak(t, base)
}

// TestDictColumnsSnapshotRestore: two queries over dictionary-encoded
// columns of one dictionary (a source's, shared) are snapshotted, the
// engine crashes, and a fresh engine with a fresh dictionary (a restarted
// process) restores both snapshots of it, then takes the rest of the
// input encoded by that dictionary: what was emitted is the reference's
// output for the whole input.
func TestDictColumnsSnapshotRestore(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := sqlSchema(t)
	crash := errors.New("crash")
	for seed := range testenv.Scale(6, 40) {
		r := rand.New(rand.NewPCG(uint64(seed), 32))
		var a strview.Arena
		n := 300 + r.IntN(1500)
		data := sqlData(r, s, &a, n, 4)
		qs := []*query.Query{
			{Name: "by_s", Schema: s, Window: query.Tumbling(2000), GroupBy: []query.Expr{query.C("s")},
				Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}, {Func: query.Sum, Arg: query.C("m"), As: "sm"}}},
			{Name: "by_t", Schema: s, Window: query.Sliding(4000, 1000), GroupBy: []query.Expr{query.C("t"), query.C("s")},
				Aggregates: []query.Aggregate{{Func: query.Max, Arg: query.C("n"), As: "mx"}}},
		}
		wants := make([]*reference.Result, len(qs))
		for i, q := range qs {
			require.NoError(t, q.Validate())
			var err error
			wants[i], err = reference.Evaluate(q, data)
			require.NoError(t, err)
		}
		k := r.IntN(n + 1)
		cfg := Config{Workers: 1 + r.IntN(3), TaskSize: sqlTuple * (1 + r.IntN(40)), BufferSize: 1 << 16}
		gots := []*reference.Result{{}, {}}
		start := func(dc *kernels.DictColumns) *Engine {
			var specs []Spec
			for i, q := range qs {
				specs = append(specs, Spec{Query: q, Windows: sqlRowsInto(q, gots[i]), DictColumns: dc})
			}
			e, err := Start(cfg, specs)
			require.NoError(t, err)
			return e
		}
		write := func(e *Engine, dc *kernels.DictColumns, part []byte) {
			part = append([]byte(nil), part...)
			encodeSQLData(t, s, dc, part)
			for i := range qs {
				require.NoError(t, e.Stream(i).Write(part))
				require.NoError(t, e.Stream(i).Flush())
			}
		}
		dc1 := sqlDictColumns(strview.NewDict())
		e1 := start(dc1)
		write(e1, dc1, data[:k*sqlTuple])
		snap, err := e1.Snapshot(nil)
		require.NoError(t, err, "seed %d", seed)
		// The dictionary the two queries share is in the snapshot once.
		assert.LessOrEqual(t, bytes.Count(snap, []byte("0123456789abcdef0123456789")), 1, "seed %d", seed)
		e1.Abort(crash)
		_, err = e1.CloseAll()
		require.ErrorIs(t, err, crash)

		dc2 := sqlDictColumns(strview.NewDict())
		e2 := start(dc2)
		_, err = e2.Restore(snap)
		require.NoError(t, err, "seed %d", seed)
		assert.Equal(t, dc1.Dict.Len(), dc2.Dict.Len(), "seed %d: the dictionary restored", seed)
		write(e2, dc2, data[k*sqlTuple:])
		_, err = e2.CloseAll()
		require.NoError(t, err)
		for i, q := range qs {
			gots[i].Counts = wants[i].Counts
			assert.Empty(t, reference.Diff(q, wants[i], gots[i], 1e-9), "seed %d, k %d of %d, query %s, workers %d, task %d", seed, k, n, q.Name, cfg.Workers, cfg.TaskSize)
		}
		a.Free()
	}
	assertNoLeak(t, base)
}

// TestDictColumnsRefused: dictionary-encoded columns are a producer's
// tuples': a query fed by an upstream's output with them, or with a
// number outside the tuple or for a column that is not a string, is
// refused, naming the query and the column.
func TestDictColumnsRefused(t *testing.T) {
	parallel(t)
	s := sqlSchema(t)
	q := &query.Query{Name: "by_s", Schema: s, Window: query.Tumbling(1000), GroupBy: []query.Expr{query.C("s")},
		Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
	view := &query.Query{Name: "all", Schema: s}
	d := strview.NewDict()
	cfg := Config{Workers: 1, TaskSize: sqlTuple * 64, BufferSize: 1 << 16}
	_, err := Start(cfg, []Spec{{Query: view}, {Query: q, Upstream: Output(0), DictColumns: sqlDictColumns(d)}})
	assert.ErrorContains(t, err, `spec 1 (by_s): dictionary-encoded columns (Spec.DictColumns) are a producer's`)
	for _, dc := range []*kernels.DictColumns{
		{Dict: d, Numbers: map[string]int{"s": sqlTuple - 2}},
		{Dict: d, Numbers: map[string]int{"n": 72}},
		{Dict: d, Numbers: map[string]int{"nope": 72}},
	} {
		_, err := Start(cfg, []Spec{{Query: q, DictColumns: dc}})
		assert.ErrorContains(t, err, `query "by_s": encoded column`)
	}
}

// TestDictColumnsRefuseVersion4: a snapshot of version 4, whose queries
// numbered their strings each in a dictionary of its own, restores into
// queries that hash their string keys, and is refused, with a message
// that says what to do, by queries that read a source's shared one.
func TestDictColumnsRefuseVersion4(t *testing.T) {
	parallel(t)
	s := sqlSchema(t)
	q := &query.Query{Name: "by_s", Schema: s, Window: query.Tumbling(1000), GroupBy: []query.Expr{query.C("s")},
		Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
	cfg := Config{Workers: 1, TaskSize: sqlTuple * 64, BufferSize: 1 << 16}
	var a strview.Arena
	defer a.Free()
	data := sqlData(rand.New(rand.NewPCG(1, 2)), s, &a, 500, 4)
	e, err := Start(cfg, []Spec{{Query: q, Windows: func(*Window) error { return nil }}})
	require.NoError(t, err)
	require.NoError(t, e.Stream(0).Write(data))
	require.NoError(t, e.Stream(0).Flush())
	snap, err := e.Snapshot(nil)
	require.NoError(t, err)
	_, err = e.CloseAll()
	require.NoError(t, err)
	require.Equal(t, byte(engineSnapshotVersion), snap[0])
	snap = asVersion5(snap)
	snap[0] = 4
	for _, dc := range []*kernels.DictColumns{nil, sqlDictColumns(strview.NewDict())} {
		e, err := Start(cfg, []Spec{{Query: q, Windows: func(*Window) error { return nil }, DictColumns: dc}})
		require.NoError(t, err)
		_, err = e.Restore(snap)
		if dc == nil {
			assert.NoError(t, err)
		} else {
			assert.ErrorContains(t, err, "snapshot version 4 numbers each query's string group keys in a dictionary of its own")
		}
		_, _ = e.CloseAll()
	}
}
