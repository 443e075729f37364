package engine

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/gpu"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// TestFlush: a flushed partial task is merged (its windows out) without
// the task filling; the results equal those of the same input unflushed;
// a partial tuple is refused.
func TestFlush(t *testing.T) {
	parallel(t)
	q := &query.Query{Name: "count", Schema: testSchema(t), Window: query.Tumbling(10), Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
	counts := func(flush bool) []int64 {
		var rows []int64
		eng, err := New(Config{Workers: 2, TaskSize: 64 * testTuple, BufferSize: 1 << 16}, q, func(w *Window) error {
			c, err := w.Column("n")
			if err != nil {
				return err
			}
			rows = append(rows, w.Start, w.Int(0, c))
			return nil
		})
		require.NoError(t, err)
		st := eng.Stream(0)
		tuple := make([]byte, testTuple)
		for i := range 100 {
			binary.LittleEndian.PutUint64(tuple, uint64(i))
			require.NoError(t, st.Write(tuple))
			if flush && i%25 == 24 {
				require.NoError(t, st.Flush())
				want := uint64(i+1) * testTuple
				require.Eventually(t, func() bool { return st.Progress().Merged == want }, 10*time.Second, time.Millisecond, "flushed tuples merged")
				// Progress reads Merged and Complete apart (each true when
				// read), and the merge publishes Merged first: Complete
				// may trail it by a moment.
				complete := int64(i-10)/10*10 + 10
				assert.Eventually(t, func() bool { return st.Progress().Complete == complete }, 10*time.Second, time.Millisecond,
					"the windows the watermark (%d) closed are out: Complete reaches %d", i, complete)
			}
		}
		require.NoError(t, st.Flush())
		require.NoError(t, st.Flush(), "nothing to flush")
		require.NoError(t, st.Write(tuple[:5]))
		assert.ErrorContains(t, st.Flush(), "inside a tuple")
		require.NoError(t, st.Write(tuple[5:]))
		_, err = eng.Close()
		require.NoError(t, err)
		assert.Error(t, st.Flush(), "after Close")
		return rows
	}
	assert.Equal(t, counts(false), counts(true))
}

// TestChainFlushesWhileTheInputPauses: rows that a chain's upstream
// (an aggregation, a filter, a window join) emitted reach the query
// downstream while the input pauses, without more input or the end of
// it, once the producer flushes (a live source's linger): the last merge
// before the pause leaves them in a task too young to dispatch, and no
// later merge comes.
func TestChainFlushesWhileTheInputPauses(t *testing.T) {
	t.Parallel()
	s := randSchema(t)
	input := pausedInput
	cfg := Config{Workers: 2, TaskSize: randTuple * 256, BufferSize: 1 << 20}

	t.Run("an aggregation, then a filter", func(t *testing.T) {
		t.Parallel()
		up := &query.Query{Name: "up", Schema: s, Window: query.Tumbling(64), Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
		out, err := up.OutputSchema()
		require.NoError(t, err)
		var rows atomic.Int64
		e, err := Start(cfg, []Spec{{Query: up}, {Query: &query.Query{Name: "down", Schema: out}, Upstream: Output(0), Tuples: count(out, &rows)}})
		require.NoError(t, err)
		require.NoError(t, e.Stream(0).Write(input(1000)))
		require.NoError(t, e.Stream(0).Flush())
		assert.Eventually(t, func() bool { return rows.Load() == 16 }, 5*time.Second, time.Millisecond, "the 16 windows' rows downstream: %d", rows.Load())
		_, err = e.CloseAll()
		require.NoError(t, err)
	})

	t.Run("a pause on a task boundary", func(t *testing.T) {
		// The producer's last task went out full (Commit), unmarked: the
		// rows its merge pushed still wait downstream.
		t.Parallel()
		up := &query.Query{Name: "filter", Schema: s, Where: query.ColGe("a", 1)}
		out, err := up.OutputSchema()
		require.NoError(t, err)
		for _, n := range []int{1022, 1023} { // 1023 and the one ahead: 4 whole tasks of 256
			var windows atomic.Int64
			down := &query.Query{Name: "agg", Schema: out, Window: query.Tumbling(100), Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
			e, err := Start(cfg, []Spec{{Query: up}, {Query: down, Upstream: Output(0), Windows: func(*Window) error { windows.Add(1); return nil }}})
			require.NoError(t, err)
			require.NoError(t, e.Stream(0).Write(input(n)))
			require.NoError(t, e.Stream(0).Flush())
			want := int64(n+99) / 100
			assert.Eventually(t, func() bool { return windows.Load() == want }, 5*time.Second, time.Millisecond, "%d tuples: the %d windows: %d", n, want, windows.Load())
			_, err = e.CloseAll()
			require.NoError(t, err)
		}
	})

	t.Run("two filters, then an aggregation", func(t *testing.T) {
		// The first filter's output fills the second's tasks to a
		// boundary: the second's tasks go out full, unmarked.
		t.Parallel()
		const n = 1919
		in := input(n)
		want := map[int64]bool{}
		for i := range n {
			a, b := uint32(i%5), uint32(i%4)
			binary.LittleEndian.PutUint32(in[i*randTuple+8:], a)
			binary.LittleEndian.PutUint32(in[i*randTuple+12:], b)
			if a >= 1 && b >= 1 {
				want[int64(i)/100] = true
			}
		}
		f1 := &query.Query{Name: "f1", Schema: s, Where: query.ColGe("a", 1)}
		o1, err := f1.OutputSchema()
		require.NoError(t, err)
		f2 := &query.Query{Name: "f2", Schema: o1, Where: query.ColGe("b", 1)}
		o2, err := f2.OutputSchema()
		require.NoError(t, err)
		var windows atomic.Int64
		agg := &query.Query{Name: "agg", Schema: o2, Window: query.Tumbling(100), Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
		e, err := Start(cfg, []Spec{{Query: f1}, {Query: f2, Upstream: Output(0)}, {Query: agg, Upstream: Output(1), Windows: func(*Window) error { windows.Add(1); return nil }}})
		require.NoError(t, err)
		require.NoError(t, e.Stream(0).Write(in))
		require.NoError(t, e.Stream(0).Flush())
		assert.Eventually(t, func() bool { return windows.Load() == int64(len(want)) }, 5*time.Second, time.Millisecond, "the %d windows: %d", len(want), windows.Load())
		_, err = e.CloseAll()
		require.NoError(t, err)
	})

	for _, gpuOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("an aggregation on a GPU, then a filter, GPU only %v", gpuOnly), func(t *testing.T) {
			// No CPU worker where the GPU runs alone: its worker flushes.
			t.Parallel()
			up := &query.Query{Name: "up", Schema: s, Window: query.Tumbling(64), Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
			out, err := up.OutputSchema()
			require.NoError(t, err)
			var rows atomic.Int64
			dev := &checkedDevice{Device: gpu.NewEmulator()}
			defer dev.Close()
			cfg := Config{TaskSize: randTuple * 256, BufferSize: 1 << 20, GPU: dev, GPUOnly: gpuOnly, Workers: 1, GPUDepth: 2}
			e, err := Start(cfg, []Spec{{Query: up}, {Query: &query.Query{Name: "down", Schema: out, Where: query.ColGe("n", 0)}, Upstream: Output(0), Tuples: count(out, &rows)}})
			require.NoError(t, err)
			require.NoError(t, e.Stream(0).Write(input(1000)))
			require.NoError(t, e.Stream(0).Flush())
			assert.Eventually(t, func() bool { return rows.Load() == 16 }, 5*time.Second, time.Millisecond, "rows downstream: %d", rows.Load())
			_, err = e.CloseAll()
			require.NoError(t, err)
		})
	}

	t.Run("a filter, then an aggregation", func(t *testing.T) {
		t.Parallel()
		up := &query.Query{Name: "filter", Schema: s, Where: query.ColGe("a", 0)}
		out, err := up.OutputSchema()
		require.NoError(t, err)
		var windows atomic.Int64
		down := &query.Query{Name: "agg", Schema: out, Window: query.Tumbling(100), Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
		e, err := Start(cfg, []Spec{{Query: up}, {Query: down, Upstream: Output(0), Windows: func(*Window) error { windows.Add(1); return nil }}})
		require.NoError(t, err)
		in := input(2000)
		for b := in; len(b) > 0; b = b[min(len(b), 50*randTuple):] {
			require.NoError(t, e.Stream(0).Write(b[:min(len(b), 50*randTuple)]))
			require.NoError(t, e.Stream(0).Flush())
		}
		assert.Eventually(t, func() bool { return windows.Load() == 20 }, 5*time.Second, time.Millisecond, "the 20 windows: %d", windows.Load())
		_, err = e.CloseAll()
		require.NoError(t, err)
	})

	t.Run("a window join, then a filter", func(t *testing.T) {
		t.Parallel()
		j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Tumbling(10),
			Where: query.Cmp(query.C("l.b"), query.Eq, query.C("r.b"))}
		out, err := j.OutputSchema()
		require.NoError(t, err)
		var pairs atomic.Int64
		e, err := Start(cfg, []Spec{{Join: j}, {Query: &query.Query{Name: "down", Schema: out}, Upstream: Output(0), Tuples: count(out, &pairs)}})
		require.NoError(t, err)
		in := input(1000)
		want, err := reference.EvaluateJoin(j, in[:1000*randTuple], in[:1000*randTuple])
		require.NoError(t, err)
		require.NotEmpty(t, want.Tuples)
		errs := make(chan error, 2)
		for _, st := range []*Stream{e.Stream(0), e.Stream(0).Right()} {
			go func() {
				err := st.Write(in)
				if err == nil {
					err = st.Flush()
				}
				errs <- err
			}()
		}
		require.NoError(t, <-errs)
		require.NoError(t, <-errs)
		wantPairs := int64(len(want.Tuples) / out.TupleSize)
		assert.Eventually(t, func() bool { return pairs.Load() == wantPairs }, 5*time.Second, time.Millisecond, "the %d pairs downstream: %d", wantPairs, pairs.Load())
		_, err = e.CloseAll()
		require.NoError(t, err)
	})
}

// pausedInput is n tuples of randSchema at ts 0..n-1 (a = i%7), then one
// far ahead (a and b 1: past the tests' filters): every window of the n
// closed.
func pausedInput(n int) []byte {
	b := make([]byte, (n+1)*randTuple)
	for i := range n + 1 {
		ts, a, bb := int64(i), uint32(i%7), uint32(0)
		if i == n {
			ts, a, bb = 1<<20, 1, 1
		}
		binary.LittleEndian.PutUint64(b[i*randTuple:], uint64(ts))
		binary.LittleEndian.PutUint32(b[i*randTuple+8:], a)
		binary.LittleEndian.PutUint32(b[i*randTuple+12:], bb)
	}
	return b
}

// count counts the tuples of schema handed to it into n.
func count(schema *query.Schema, n *atomic.Int64) func([]byte) error {
	return func(b []byte) error {
		n.Add(int64(len(b) / schema.TupleSize))
		return nil
	}
}
