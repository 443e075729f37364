package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// fuzzGraph is the engine FuzzRestoreEngineSnapshot restores into: a
// chain (a sliding aggregation into a row window) and two window joins
// (range and row windows).
type fuzzGraph struct {
	specs []Spec
	cfg   Config
	data  []byte
}

func newFuzzGraph(tb testing.TB) *fuzzGraph {
	s := randSchema(tb)
	up := &query.Query{Name: "up", Schema: s, Window: query.Sliding(30, 10), GroupBy: []query.Expr{query.C("b")},
		Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}, {Func: query.Max, Arg: query.C("c"), As: "m"}}}
	out, err := up.OutputSchema()
	require.NoError(tb, err)
	down := &query.Query{Name: "down", Schema: out, Window: query.Window{Type: query.Rows, Size: 7, Slide: 3},
		Aggregates: []query.Aggregate{{Func: query.Sum, Arg: query.C("n")}}}
	j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Sliding(20, 5),
		Where: query.Cmp(query.C("l.a"), query.Lt, query.C("r.a"))}
	rowJoin := &query.WindowJoin{Name: "rj", Left: s, Right: s, Window: query.Window{Type: query.Rows, Size: 8, Slide: 4}}
	nop := func(*Window) error { return nil }
	return &fuzzGraph{
		specs: []Spec{{Query: up}, {Query: down, Upstream: Output(0), Windows: nop}, {Join: j}, {Join: rowJoin}},
		cfg:   Config{Workers: 2, TaskSize: randTuple * 8, BufferSize: 1 << 13},
		data:  randData(rand.New(rand.NewPCG(18, 18)), 600),
	}
}

func (g *fuzzGraph) inputs(e *Engine) []*Stream {
	return []*Stream{e.Stream(0), e.Stream(2), e.Stream(2).Right(), e.Stream(3), e.Stream(3).Right()}
}

// snapshots are the graph's snapshots after k tuples of every input.
func (g *fuzzGraph) snapshots(tb testing.TB, ks ...int) [][]byte {
	var snaps [][]byte
	for _, k := range ks {
		e, err := Start(g.cfg, g.specs)
		require.NoError(tb, err)
		for _, in := range g.inputs(e) {
			require.NoError(tb, in.Write(g.data[:k*randTuple]))
			require.NoError(tb, in.Flush())
		}
		snap, err := e.Snapshot(nil)
		require.NoError(tb, err)
		snaps = append(snaps, snap)
		e.Abort(nil)
		_, _ = e.CloseAll()
	}
	return snaps
}

// restoreAny restores b into a fresh engine of the graph: refused as an
// ErrConfig, the engine left as Start made it, or restored and fed the
// rest of an input.
func (g *fuzzGraph) restoreAny(t *testing.T, b []byte) {
	e, err := Start(g.cfg, g.specs)
	require.NoError(t, err)
	defer func() { _, _ = e.CloseAll() }()
	if _, err := e.Restore(b); err != nil {
		assert.ErrorIs(t, err, ErrConfig)
		for _, in := range e.Streams() {
			assert.Zero(t, in.Stats().Tuples, "a refused snapshot left counters")
		}
		return
	}
	for _, in := range g.inputs(e) {
		if err := in.Write(g.data[len(g.data)-100*randTuple:]); err != nil {
			return // an input error of a restored state: refused, not a panic
		}
	}
}

// FuzzRestoreEngineSnapshot extends window's FuzzRestoreSnapshot (an
// assembler's part) to the engine's: the stream records and positions,
// chained queries, a row window and a window join's panes. Any bytes are
// refused as an ErrConfig, or restored, never a panic or a hang.
func FuzzRestoreEngineSnapshot(f *testing.F) {
	g := newFuzzGraph(f)
	for _, snap := range g.snapshots(f, 0, 50, 333) {
		f.Add(snap)
	}
	f.Fuzz(g.restoreAny)
}

// TestRestoreEngineSnapshotMutated: the fuzz target over random
// mutations of its seeds (a byte or three changed), and every truncation
// of one: refused or restored.
func TestRestoreEngineSnapshotMutated(t *testing.T) {
	parallel(t)
	g := newFuzzGraph(t)
	snaps := g.snapshots(t, 0, 50, 333)
	r := rand.New(rand.NewPCG(7, 18))
	for i := range seeds(40, 40, 200) {
		b := append([]byte(nil), snaps[i%len(snaps)]...)
		for range 1 + r.IntN(3) {
			b[r.IntN(len(b))] = byte(r.IntN(256))
		}
		g.restoreAny(t, b)
	}
	snap := snaps[1]
	for n := 0; n < len(snap); n += 1 + n/8 {
		g.restoreAny(t, snap[:n])
	}
}
