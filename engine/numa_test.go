package engine

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/cpu"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// TestPerNodeQueues runs the engine as on a two-socket machine (a fixture
// topology; the CPUs it names may not exist here, so pinning may only warn):
// tasks wait in per-node queues, workers on the ring's node take them
// locally and the others steal, and the results are those of the reference.
func TestPerNodeQueues(t *testing.T) {
	topo, err := cpu.DiscoverFS("../cpu/testdata/two-socket-smt", nil)
	require.NoError(t, err)
	require.Len(t, topo.Nodes, 2)
	plan, err := topo.Plan(cpu.Spread, 4, nil)
	require.NoError(t, err)
	s := randSchema(t)
	q := &query.Query{Name: "g", Schema: s, Window: query.Tumbling(50), GroupBy: []query.Expr{query.C("b")},
		Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("c")}}}
	data := randData(rand.New(rand.NewPCG(8, 8)), 20000)
	want, err := reference.Evaluate(q, data)
	require.NoError(t, err)

	// Which worker takes a task is up to the OS scheduler: on a loaded
	// machine the node-0 workers can steal every task of one run. The
	// results and the accounting are checked on every run; that node 1's
	// workers take node 1's tasks, on the first of up to five runs that
	// shows it.
	var local, stolen uint64
	var warnings atomic.Int64 // Warn is called from the workers, concurrently
	for try := 0; try < 5 && local == 0; try++ {
		got := &reference.Result{}
		// The first worker is on node 1, so the (only) stream's ring is too.
		p := append([]int(nil), plan...)
		p[0], p[1] = p[1], p[0]
		cfg := Config{Workers: 4, Pin: true, CPUs: p, TaskSize: randTuple * 50, BufferSize: 1 << 15,
			Warn: func(string) { warnings.Add(1) }, Topology: topo}
		e, err := Start(cfg, []Spec{{Query: q, Windows: rowsInto(q, got)}})
		require.NoError(t, err)
		require.NoError(t, e.Write(data))
		ss := func() (uint64, uint64) { st := e.Scheduling(); return st.Local, st.Stolen }
		st, err := e.Close()
		require.NoError(t, err)
		got.Counts = reference.Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
		assert.Empty(t, reference.Diff(q, want, got, 1e-9))
		local, stolen = ss()
		assert.Equal(t, st.Tasks, local+stolen, "every task taken once, locally or stolen")
		assert.Equal(t, 1, e.streams[0].node, "the ring's node is the first worker's")
	}
	assert.Positive(t, local, "workers on node 1 take node 1's tasks")
	t.Logf("local %d, stolen %d, pin warnings %d", local, stolen, warnings.Load())
}
