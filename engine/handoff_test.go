package engine

import (
	"bytes"
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
	"github.com/saber-hx/saber-hx/strview"
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
	parallel(t)
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
		// Grouped by b (out.Attrs[2]: the first is the output's timestamp),
		// summing c. Of Attrs[1], the event time, every tuple its own group,
		// it cost direct tables of 25000 slots a fragment (the mapping
		// widening as the times drift) and the reference a row a tuple.
		down := &query.Query{Name: "down", Schema: out, Window: w,
			GroupBy:    []query.Expr{query.C(out.Attrs[2].Name)},
			Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C(out.Attrs[3].Name)}}}
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
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	identity := &query.UDF{Name: "identity", Output: s, Fn: func(in []byte, _ int, _ []byte) []byte { return in }}
	for _, where := range []query.Expr{nil, query.ColGe("a", 0)} {
		up := &query.Query{Name: "up", Schema: s, Where: where, UDF: identity}
		down := &query.Query{Name: "down", Schema: s, Window: query.Tumbling(50),
			GroupBy: []query.Expr{query.C("b")}, Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("c")}}}
		data := randData(rand.New(rand.NewPCG(5, 8)), 20000)
		wantUp, err := reference.Evaluate(&query.Query{Name: "up", Schema: s, Where: where}, data) // once for both worker counts
		require.NoError(t, err)
		for _, workers := range []int{1, 2} {
			cfg := Config{Workers: workers, TaskSize: randTuple * 64, BufferSize: 1 << 14, lendMin: 1}
			upTuples, e, _ := runChain(t, cfg, up, down, data)
			assert.Equal(t, wantUp.Tuples, upTuples, "where %v, %d workers", where, workers)
			assert.Positive(t, e.Stream(1).hand.lent)
		}
	}
	assertNoLeak(t, base)
}

// TestHandOffStrings: a stateless query's output with strings, grouped
// by one of them downstream, through phases where that string is short
// (held in its view: the output is lent) and long (in the upstream's heap,
// which frees it with the task: the output is copied, and its strings
// into the downstream's heap), the producer's memory overwritten after
// each commit. The counts by string must be those written. Lending a
// task with long strings (Stream.lendable always true) leaves views
// pointing at freed memory: the counts differ.
func TestHandOffStrings(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := stringSchema(t, true)
	up := &query.Query{Name: "up", Schema: s, Project: []query.Projection{{Expr: query.C("ts")}, {Expr: query.C("s"), As: "s"}, {Expr: query.C("u"), As: "u"}}}
	out, err := up.OutputSchema()
	require.NoError(t, err)
	down := countByS("down", out)
	r := rand.New(rand.NewPCG(4, 12))
	const n = 40000
	long := make([]bool, n)
	for i := 0; i < n; {
		end, l := min(n, i+200+r.IntN(5000)), r.IntN(2) == 0
		for ; i < end; i++ {
			long[i] = l
		}
	}
	key := func(i int) string {
		if long[i] {
			return fmt.Sprintf("a key longer than inline, number %d", i%3)
		}
		return fmt.Sprintf("k%d", i%5)
	}
	for _, workers := range []int{1, 2} {
		got := map[string]int64{}
		e, err := Start(Config{Workers: workers, TaskSize: 40 * 1024, BufferSize: 1 << 17}, []Spec{{Query: up},
			{Query: down, Upstream: Output(0), Windows: func(w *Window) error {
				for i := range w.Rows() {
					got[string(bytes.TrimRight(w.CanonicalKey(i)[1:], "\x00"))] += w.Agg(i, 0)
				}
				return nil
			}}})
		require.NoError(t, err)
		require.NotNil(t, e.Stream(1).hand)
		require.NotNil(t, e.Stream(1).heap, "the downstream keeps long strings in a heap")
		arena := strview.NewArena(0)
		ots := out.TupleSize
		at, err := out.Lookup("s")
		require.NoError(t, err)
		two := make([]byte, 2*ots)
		strview.Put(two[at.Offset:at.Offset+strview.Size], []byte("k1"), arena)
		strview.Put(two[ots+at.Offset:ots+at.Offset+strview.Size], []byte("k2"), arena)
		assert.True(t, e.Stream(1).lendable(two), "short keys")
		strview.Put(two[ots+at.Offset:ots+at.Offset+strview.Size], []byte("a key longer than inline"), arena)
		assert.False(t, e.Stream(1).lendable(two), "a long key in the second tuple")
		arena.Reset()
		err = <-e.Produce(func() error {
			return commitCopyAll(e.Stream(0), n, 40, arena, func(t []byte, i int) {
				binary.LittleEndian.PutUint64(t, uint64(i))
				strview.Put(t[8:24], []byte(key(i)), arena)
				strview.Put(t[24:40], []byte("a string no query downstream reads"), arena)
			})
		})
		require.NoError(t, err)
		stats, err := e.CloseAll()
		require.NoError(t, err)
		arena.Free()
		want := map[string]int64{}
		for i := range n {
			want[key(i)]++
		}
		assert.Equal(t, want, got, "%d workers", workers)
		lent := e.Stream(1).hand.lent
		assert.Positive(t, lent, "outputs of short keys lent")
		assert.Less(t, uint64(lent), stats[0].Tasks, "outputs of long keys copied")
	}
	assertNoLeak(t, base)
}
