package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/doubling"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// outputs are what a run handed on: every window's rows as the Windows
// sink reads them (keys, and the aggregates' bits), the rows as tuples,
// a downstream query's tuples, and the counters.
type outputs struct {
	rows, tuples, down []byte
	stats              Stats
}

// bracket is a TupleEncoder's Encode for tests: each whole tuple of ts
// bytes between '[' and ']', so that an encoding cut or joined at another
// place than a batch of tuples shows.
func bracket(ts int) func(dst, tuples []byte) []byte {
	return func(dst, tuples []byte) []byte {
		for o := 0; o+ts <= len(tuples); o += ts {
			dst = append(append(append(dst, '['), tuples[o:o+ts]...), ']')
		}
		return dst
	}
}

// runParts runs q, then a stateless query over its output, on cfg with
// result partitions parts (1: one assembler), feeding data in random
// chunks.
func runParts(t *testing.T, cfg Config, parts int, q *query.Query, data []byte, r *rand.Rand) outputs {
	t.Helper()
	var o outputs
	cfg.resultParts = parts
	out, err := q.OutputSchema()
	require.NoError(t, err)
	down := &query.Query{Name: "down", Schema: out, Where: query.Cmp(query.C(out.Attrs[0].Name), query.Ge, query.Int(math.MinInt64))}
	// Both also write through encoders (Spec.Encoded), whose output must
	// be the encoding of the tuples, in order: made by the workers for the
	// partitioned stage and the stateless query, in order for one
	// assembler.
	var enc, downEnc []byte
	encoder := func(dst *[]byte) *TupleEncoder {
		return &TupleEncoder{Encode: bracket(out.TupleSize), Write: func(b []byte) error { *dst = append(*dst, b...); return nil }}
	}
	defer func() {
		assert.Equal(t, bracket(out.TupleSize)(nil, o.tuples), enc, "the aggregation's encoded output")
		assert.Equal(t, bracket(out.TupleSize)(nil, o.down), downEnc, "the stateless query's encoded output")
	}()
	e, err := Start(cfg, []Spec{
		{Query: q, Windows: func(w *Window) error {
			o.rows = fmt.Appendf(o.rows, "[%d %d)", w.Start, w.End)
			for i := range w.Rows() {
				o.rows = fmt.Appendf(o.rows, " %x", w.Key(i))
				for a := range q.Aggregates {
					if w.AggIsFloat(a) {
						o.rows = fmt.Appendf(o.rows, ":%x", math.Float64bits(w.AggFloat(i, a)))
					} else {
						o.rows = fmt.Appendf(o.rows, ":%d", w.Agg(i, a))
					}
				}
			}
			o.rows = append(o.rows, '\n')
			return nil
		}, Tuples: func(b []byte) error { o.tuples = doubling.Append(o.tuples, b...); return nil }, Encoded: encoder(&enc)},
		{Query: down, Upstream: Output(0), Tuples: func(b []byte) error { o.down = doubling.Append(o.down, b...); return nil }, Encoded: encoder(&downEnc)},
	})
	require.NoError(t, err)
	if parts > 1 {
		require.NotNil(t, e.Stream(0).parts, "a hashed aggregation's stage is partitioned")
	}
	require.NoError(t, writeChunks(e.Stream(0), data, r, cfg.TaskSize))
	stats, err := e.CloseAll()
	require.NoError(t, err)
	o.stats = stats[0]
	return o
}

// TestPartitionedStageMatchesOneAssembler: random grouped aggregations
// (sliding and tumbling windows, range and row, HAVING, float sums) give,
// with their result stage cut into 2, 3 or 8 partitions on 1 to 3
// workers, exactly (bit for bit, in the same order) the windows, tuples
// and downstream tuples of one assembler, and the reference's rows and
// counters.
func TestPartitionedStageMatchesOneAssembler(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	n := seeds(16, 16, 60)
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 26))
		q := randQuery(r, s)
		for len(q.GroupBy) == 0 || q.Stateless() || q.Validate() != nil {
			q = randQuery(r, s)
		}
		data := randData(r, 200+r.IntN(3000))
		cfg := Config{Workers: 1 + r.IntN(3), TaskSize: randTuple * (1 + r.IntN(120)), BufferSize: 1 << 14}
		want, err := reference.Evaluate(q, data)
		require.NoError(t, err)
		one := runParts(t, cfg, 1, q, data, r)
		parts := []int{2, 3, 8}[seed%3]
		got := runParts(t, cfg, parts, q, data, r)
		name := fmt.Sprintf("seed %d, %d workers, %d partitions, task %d, window %+v, group %v, aggs %v, having %v",
			seed, cfg.Workers, parts, cfg.TaskSize, q.Window, q.GroupBy, q.Aggregates, q.Having)
		assert.Equal(t, string(one.rows), string(got.rows), name)
		assert.Equal(t, one.tuples, got.tuples, name)
		assert.Equal(t, one.down, got.down, name)
		for _, st := range []*Stats{&one.stats, &got.stats} {
			st.SerialTime, st.WorkerTime, st.LatencyP50, st.LatencyP99, st.Pinned = 0, 0, 0, 0, nil
		}
		assert.Equal(t, one.stats, got.stats, name)
		res := &reference.Result{}
		e, err := Start(Config{Workers: cfg.Workers, TaskSize: cfg.TaskSize, BufferSize: cfg.BufferSize, resultParts: parts},
			[]Spec{specInto(q, res)})
		require.NoError(t, err)
		require.NoError(t, writeChunks(e.Stream(0), data, r, cfg.TaskSize))
		st, err := e.Close()
		require.NoError(t, err)
		res.Counts = reference.Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
		assert.Empty(t, reference.Diff(q, want, res, 1e-9), name)
	}
	assertNoLeak(t, base)
}

// TestPartitionedSnapshots: a snapshot of a stage of one number of
// partitions restores into a stage of another (one assembler included),
// and the two runs together emit what the uninterrupted run emits.
func TestPartitionedSnapshots(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	crash := errors.New("crash")
	for seed := range seeds(12, 12, 40) {
		r := rand.New(rand.NewPCG(uint64(seed), 27))
		q := randQuery(r, s)
		for len(q.GroupBy) == 0 || q.Stateless() || q.Window.Type != query.Range || q.Validate() != nil {
			q = randQuery(r, s)
		}
		tuples := 200 + r.IntN(3000)
		data := randData(r, tuples)
		k := r.IntN(tuples + 1)
		cfg := Config{Workers: 2, TaskSize: randTuple * (1 + r.IntN(100)), BufferSize: 1 << 14}
		from, to := []int{1, 2, 5}[seed%3], []int{3, 1, 2}[seed%3]
		want, err := reference.Evaluate(q, data)
		require.NoError(t, err)

		got := &reference.Result{}
		cfg.resultParts = from
		e1, err := Start(cfg, []Spec{specInto(q, got)})
		require.NoError(t, err)
		require.NoError(t, writeChunks(e1.Stream(0), data[:k*randTuple], r, cfg.TaskSize))
		require.NoError(t, e1.Stream(0).Flush())
		snap, err := e1.Snapshot(nil)
		require.NoError(t, err)
		e1.Abort(crash)
		_, err = e1.CloseAll()
		require.ErrorIs(t, err, crash)

		cfg.resultParts = to
		e2, err := Start(cfg, []Spec{specInto(q, got)})
		require.NoError(t, err)
		_, err = e2.Restore(snap)
		require.NoError(t, err)
		require.NoError(t, writeChunks(e2.Stream(0), data[k*randTuple:], r, cfg.TaskSize))
		st, err := e2.CloseAll()
		require.NoError(t, err)
		got.Counts = reference.Counts{Tuples: st[0].Tuples, Filtered: st[0].Filtered, Unmatched: st[0].Unmatched, Late: st[0].Late, Counted: st[0].Counted}
		assert.Empty(t, reference.Diff(q, want, got, 1e-9), "seed %d: %d partitions, then %d; window %+v group %v aggs %v having %v", seed, from, to, q.Window, q.GroupBy, q.Aggregates, q.Having)
	}
	assertNoLeak(t, base)
}

// TestPartitionedStageIsMostlyParallel: with the rows of every window read
// by a sink, an aggregation whose groups are many spends most of its
// result stage's work in its partitions: its serial fraction is below
// the one assembler's on the same input.
func TestPartitionedStageIsMostlyParallel(t *testing.T) {
	s := randSchema(t)
	q := &query.Query{Name: "many", Schema: s, Window: query.Sliding(200, 1),
		GroupBy:    []query.Expr{query.C("c")},
		Aggregates: []query.Aggregate{{Func: query.Avg, Arg: query.C("y")}, {Func: query.Count}}}
	r := rand.New(rand.NewPCG(1, 26))
	data := randData(r, 200000)
	for i, o := 0, 0; o < len(data); i, o = i+1, o+randTuple {
		binary.LittleEndian.PutUint64(data[o:], uint64(i/64))           // 64 tuples a time unit
		binary.LittleEndian.PutUint64(data[o+16:], uint64(r.IntN(512))) // c: 512 groups
	}
	fraction := func(parts int) float64 {
		e, err := Start(Config{Workers: 2, TaskSize: randTuple * 256, BufferSize: 1 << 16, resultParts: parts},
			[]Spec{{Query: q, Windows: func(*Window) error { return nil }}})
		require.NoError(t, err)
		require.NoError(t, e.Stream(0).Write(data))
		st, err := e.Close()
		require.NoError(t, err)
		require.Positive(t, st.Windows)
		return st.SerialFraction()
	}
	// A fraction is a share of measured time, which other load on the
	// machine skews: the best of three pairs is compared.
	best := 1.0
	for range 3 {
		one, four := fraction(1), fraction(4)
		t.Logf("serial fraction: one assembler %.3f, four partitions %.3f", one, four)
		best = min(best, four/one)
		if best < 0.5 {
			break
		}
	}
	assert.Less(t, best, 0.5, "four partitions' serial fraction over one assembler's")
}
