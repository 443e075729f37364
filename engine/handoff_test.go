package engine

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/gpu"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// TestHandOff: a stateless query's output handed to the aggregation
// downstream (handoff.go) at the default threshold, through phases where
// the upstream passes every tuple (its outputs lent), half of them or few
// (copied into the ring) or none, on rings that wrap many times, on CPU
// workers and on an emulated GPU (which fills the task's place in the
// ring). The downstream's windows must equal the reference's over the
// upstream's output, and both ways must have been taken. Breaking the
// entries' spans (handOff.cut keeping the last entry for the next task
// only where it is lent) shifts bytes between tasks: the windows differ.
func TestHandOff(t *testing.T) {
	base := runtime.NumGoroutine()
	s := randSchema(t)
	up := &query.Query{Name: "up", Schema: s, Where: query.ColGe("a", 0),
		Project: []query.Projection{{Expr: query.C("ts")}, {Expr: query.C("b")}, {Expr: query.C("c")}}}
	out, err := up.OutputSchema()
	require.NoError(t, err)
	for seed := range seeds(4, 3, 12) {
		r := rand.New(rand.NewPCG(uint64(seed), 2026))
		n := 30000 + r.IntN(20000)
		data := randData(r, n)
		for i := 0; i < n; {
			end := min(n, i+50+r.IntN(4000))
			pass := []float64{1, 1, 0.5, 0.02, 0}[r.IntN(5)]
			for ; i < end; i++ {
				a := int32(-1)
				if r.Float64() < pass {
					a = 1
				}
				binary.LittleEndian.PutUint32(data[i*randTuple+8:], uint32(a))
			}
		}
		// Panes of 20 or more: the point is the input, not tiny panes' cost.
		slide := 20 + r.Int64N(200)
		w := query.Sliding(slide*(1+r.Int64N(4)), slide)
		if r.IntN(3) == 0 {
			w.Type = query.Rows
		}
		down := &query.Query{Name: "down", Schema: out, Window: w,
			GroupBy:    []query.Expr{query.C(out.Attrs[1].Name)},
			Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C(out.Attrs[2].Name)}}}
		require.NoError(t, down.Validate())
		cfg := Config{Workers: 1 + seed%3, TaskSize: randTuple * (512 + r.IntN(800)), BufferSize: 128 << 10}
		if seed%4 == 3 {
			cfg.GPU = gpu.NewEmulator()
		}
		t.Run(fmt.Sprintf("seed%d/workers%d/task%d/gpu%v/%v", seed, cfg.Workers, cfg.TaskSize, cfg.GPU != nil, down.Window), func(t *testing.T) {
			upTuples, e, stats := runChain(t, cfg, up, down, data)
			require.NotNil(t, e.Stream(1).hand, "the aggregation takes the stateless query's output by a hand-off")
			wantUp, err := reference.Evaluate(up, data)
			require.NoError(t, err)
			assert.Equal(t, wantUp.Tuples, upTuples)
			lent := e.Stream(1).hand.lent
			assert.Positive(t, lent, "outputs lent")
			assert.Less(t, uint64(lent), stats[0].Tasks, "outputs copied")
		})
		if cfg.GPU != nil {
			require.NoError(t, cfg.GPU.(gpu.Device).Close())
		}
	}
	assertNoLeak(t, base)
}

// TestLentChainDoesNotAllocate: in steady state a stateless query's task
// lent to the aggregation downstream costs no allocation: the buffers
// its tasks take come back to the hand-off's pool as the downstream
// frees them.
func TestLentChainDoesNotAllocate(t *testing.T) {
	s := randSchema(t)
	const tupleTasks, perRun = 64, 8
	up := &query.Query{Name: "up", Schema: s, Where: query.ColGe("a", 0)}
	down := &query.Query{Name: "down", Schema: s, Window: query.Tumbling(32),
		Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Max, Arg: query.C("c")}}}
	cfg := Config{Workers: 2, TaskSize: randTuple * tupleTasks, BufferSize: 1 << 16, lendMin: 1}
	e, err := Start(cfg, []Spec{{Query: up}, {Query: down, Upstream: Output(0), Windows: func(*Window) error { return nil }}})
	require.NoError(t, err)
	st, ds := e.Stream(0), e.Stream(1)
	require.NotNil(t, ds.hand)
	var next int64
	chunk := make([]byte, perRun*tupleTasks*randTuple)
	feed := func() {
		for o := 0; o < len(chunk); o += randTuple {
			binary.LittleEndian.PutUint64(chunk[o:], uint64(next))
			binary.LittleEndian.PutUint32(chunk[o+8:], uint32(next%7)) // every tuple passes
			next++
		}
		require.NoError(t, st.Write(chunk))
		for st.InFlight() > 0 || ds.InFlight() > 0 {
			runtime.Gosched()
		}
	}
	allocs := steadyAllocs(st, feed)
	_, err = e.Close()
	require.NoError(t, err)
	assert.Zero(t, allocs, "allocations per %d tasks", perRun)
	assert.Positive(t, ds.hand.lent)
}

// TestLentUDFOutputOfItsInput: a UDF that returns its input, against its
// contract (query.UDF), is copied by the kernel: lent, the slice would be
// the ring's or the worker's memory, reused before the query downstream
// reads it, and the pool would hand it on as a task's output buffer.
// Without the copy (kernels' processUDF) the windows differ.
func TestLentUDFOutputOfItsInput(t *testing.T) {
	base := runtime.NumGoroutine()
	s := randSchema(t)
	identity := &query.UDF{Name: "identity", Output: s, Fn: func(in []byte, _ int, _ []byte) []byte { return in }}
	for _, where := range []query.Expr{nil, query.ColGe("a", 0)} {
		up := &query.Query{Name: "up", Schema: s, Where: where, UDF: identity}
		down := &query.Query{Name: "down", Schema: s, Window: query.Tumbling(50),
			GroupBy: []query.Expr{query.C("b")}, Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("c")}}}
		data := randData(rand.New(rand.NewPCG(5, 8)), 20000)
		for _, workers := range []int{1, 2} {
			cfg := Config{Workers: workers, TaskSize: randTuple * 64, BufferSize: 1 << 14, lendMin: 1}
			upTuples, e, _ := runChain(t, cfg, up, down, data)
			wantUp, err := reference.Evaluate(&query.Query{Name: "up", Schema: s, Where: where}, data)
			require.NoError(t, err)
			assert.Equal(t, wantUp.Tuples, upTuples, "where %v, %d workers", where, workers)
			assert.Positive(t, e.Stream(1).hand.lent)
		}
	}
	assertNoLeak(t, base)
}
