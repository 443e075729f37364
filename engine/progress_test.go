package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// TestProgress checks Progress against the windows the sink has seen:
// Merged is the bytes of the merged tasks, every window holding an event
// time below Complete has been emitted, and the window that starts at
// Complete has not.
func TestProgress(t *testing.T) {
	parallel(t)
	for _, w := range []query.Window{query.Tumbling(100), query.Sliding(100, 25), {Type: query.Range, Size: 100, Slide: 50, Delay: 30}} {
		q := &query.Query{Name: "count", Schema: testSchema(t), Window: w, Aggregates: []query.Aggregate{{Func: query.Count}}}
		var last int64 = math.MinInt64 // start of the last window emitted (the sink runs under the merge lock)
		eng, err := New(Config{Workers: 2, TaskSize: 10 * testTuple, BufferSize: 1 << 16}, q, func(r *Window) error {
			last = r.Start
			return nil
		})
		require.NoError(t, err)
		st := eng.Stream(0)
		assert.Equal(t, Progress{Merged: 0, Complete: math.MinInt64}, st.Progress())
		tuple := make([]byte, testTuple)
		for i := range 400 {
			binary.LittleEndian.PutUint64(tuple, uint64(i*7))
			require.NoError(t, st.Write(tuple))
			if i%40 != 39 {
				continue
			}
			want := uint64(i+1) * testTuple // whole tasks: all dispatched
			require.Eventually(t, func() bool { return st.Progress().Merged == want }, 10*time.Second, time.Millisecond)
			p := st.Progress()
			emitted := last // read after Progress took and released the lock
			require.NotEqual(t, int64(math.MinInt64), p.Complete, "window %+v: a window closed by event time %d", w, i*7)
			// Complete is a window start: the first window not yet out.
			assert.Zero(t, p.Complete%w.Slide)
			assert.Equal(t, p.Complete-w.Slide, emitted, "window %+v: the last window emitted is the one before Complete", w)
			// It is the first window the watermark (i*7) minus the delay
			// has not closed.
			assert.Greater(t, p.Complete+w.Size+w.Delay, int64(i*7))
			assert.LessOrEqual(t, p.Complete-w.Slide+w.Size+w.Delay, int64(i*7))
		}
		_, err = eng.Close()
		require.NoError(t, err)
	}
}

// TestProgressUnknown: where a stream alone cannot tell which windows are
// out, Complete stays math.MinInt64; a stateless query's is MaxInt64.
func TestProgressUnknown(t *testing.T) {
	parallel(t)
	rows := &query.Query{Name: "rows", Schema: testSchema(t), Window: query.Window{Type: query.Rows, Size: 4, Slide: 4}, Aggregates: []query.Aggregate{{Func: query.Count}}}
	sel := &query.Query{Name: "sel", Schema: testSchema(t), Where: query.ColLt("kind", 3)}
	eng, err := Start(Config{Workers: 1, TaskSize: 4 * testTuple, BufferSize: 1 << 16}, []Spec{{Query: rows, Windows: func(*Window) error { return nil }}, {Query: sel, Tuples: func([]byte) error { return nil }}})
	require.NoError(t, err)
	tuple := make([]byte, testTuple)
	for i := range 16 {
		binary.LittleEndian.PutUint64(tuple, uint64(i))
		require.NoError(t, eng.Stream(0).Write(tuple))
		require.NoError(t, eng.Stream(1).Write(tuple))
	}
	require.Eventually(t, func() bool { return eng.Stream(1).Progress().Merged == 16*testTuple }, 10*time.Second, time.Millisecond)
	assert.Equal(t, int64(math.MaxInt64), eng.Stream(1).Progress().Complete)
	require.Eventually(t, func() bool { return eng.Stream(0).Progress().Merged == 16*testTuple }, 10*time.Second, time.Millisecond)
	assert.Equal(t, int64(math.MinInt64), eng.Stream(0).Progress().Complete)
	_, err = eng.CloseAll()
	require.NoError(t, err)
}

// TestProgressAllFiltered: windows the query filtered out entirely are
// done once the watermark closes them, so that a selective WHERE does not
// hold the committed offsets back.
func TestProgressAllFiltered(t *testing.T) {
	parallel(t)
	w := query.Window{Type: query.Range, Size: 100, Slide: 50, Delay: 30}
	q := &query.Query{Name: "none", Schema: testSchema(t), Window: w, Where: query.ColLt("kind", -5), Aggregates: []query.Aggregate{{Func: query.Count}}}
	eng, err := New(Config{Workers: 2, TaskSize: 10 * testTuple, BufferSize: 1 << 16}, q, func(*Window) error { return nil })
	require.NoError(t, err)
	st := eng.Stream(0)
	tuple := make([]byte, testTuple)
	const n = 400
	for i := range n {
		binary.LittleEndian.PutUint64(tuple, uint64(i*7))
		require.NoError(t, st.Write(tuple))
	}
	require.Eventually(t, func() bool { return st.Progress().Merged == n*testTuple }, 10*time.Second, time.Millisecond)
	// The watermark is (n-1)*7: window k ([50k, 50k+100)) is closed when
	// 50k + 130 <= wm; the first open one starts Complete.
	wm := int64((n - 1) * 7)
	first := (wm-130)/50 + 1
	assert.Equal(t, first*50, st.Progress().Complete)
	_, err = eng.Close()
	require.NoError(t, err)
}

// TestProgressThroughAChain: the Progress of a stream whose output feeds
// other queries says what is out of the whole chain (checked, while the
// input goes on, against what the last query's sink has seen: every
// input tuple it counts out lies in windows out there), and reaches the
// whole input once the windows close.
func TestProgressThroughAChain(t *testing.T) {
	t.Parallel()
	s := testSchema(t)
	const n = 3000
	for _, shape := range []string{"filter, then windows", "windows, then a filter", "filter, windows, filter"} {
		for _, workers := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/%d workers", shape, workers), func(t *testing.T) {
				t.Parallel()
				r := rand.New(rand.NewPCG(uint64(workers), uint64(len(shape))))
				size, slide := 10+r.Int64N(90), int64(0)
				slide = max(1, size/(1+r.Int64N(3)))
				w := query.Sliding(size, slide)
				filter := &query.Query{Name: "filter", Schema: s, Where: query.ColGe("kind", 0)}
				fout, err := filter.OutputSchema()
				require.NoError(t, err)
				// last is the start of the newest window out at the end of
				// the chain: windows leave in order.
				var last atomic.Int64
				last.Store(math.MinInt64)
				var specs []Spec
				var windowOf func(ts int64) int64 // the newest window of the chain's that holds ts
				switch shape {
				case "filter, then windows":
					agg := &query.Query{Name: "agg", Schema: fout, Window: w, Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
					specs = []Spec{{Query: filter}, {Query: agg, Upstream: Output(0), Windows: func(win *Window) error { last.Store(win.Start); return nil }}}
					windowOf = func(ts int64) int64 { return ts - ts%slide }
				default:
					agg := &query.Query{Name: "agg", Schema: s, Window: w, Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
					aout, err := agg.OutputSchema()
					require.NoError(t, err)
					rows := func(b []byte) error {
						for o := 0; o < len(b); o += aout.TupleSize {
							last.Store(int64(binary.LittleEndian.Uint64(b[o:])))
						}
						return nil
					}
					after := &query.Query{Name: "after", Schema: aout, Where: query.ColGe("n", 0)}
					specs = []Spec{{Query: agg}, {Query: after, Upstream: Output(0), Tuples: rows}}
					if shape == "filter, windows, filter" {
						agg.Schema = fout
						specs = []Spec{{Query: filter}, {Query: agg, Upstream: Output(0)}, {Query: after, Upstream: Output(1), Tuples: rows}}
					}
					windowOf = func(ts int64) int64 { return ts - ts%slide }
				}
				eng, err := Start(Config{Workers: workers, TaskSize: (1 + r.IntN(40)) * testTuple, BufferSize: 1 << 16}, specs)
				require.NoError(t, err)
				st := eng.Stream(0)
				const stairs = 10
				in, ts := staircase(r, n, stairs, size)
				check := func() {
					p := st.Progress()
					out := last.Load() // after Progress: the sink only gets further
					for i := range min(int(p.Merged/testTuple), n) {
						if ts[i] < p.Complete && windowOf(ts[i]) > out {
							require.Failf(t, "a tuple counted out is not", "tuple %d (ts %d) of %d merged, Complete %d: its window %d is not out (the last out starts at %d)", i, ts[i], p.Merged/testTuple, p.Complete, windowOf(ts[i]), out)
						}
					}
				}
				for b := in[:n*testTuple]; len(b) > 0; {
					k := min(len(b), (1+r.IntN(100))*testTuple)
					require.NoError(t, st.Write(b[:k]))
					b = b[k:]
					if r.IntN(3) == 0 {
						require.NoError(t, st.Flush())
					}
					check()
				}
				require.NoError(t, st.Flush())
				// Each step of the staircase once the chain holds nothing
				// of the last: else a task downstream may take several,
				// and its windows the last of them closes none.
				for i := n; i < n+stairs; i++ {
					require.Eventually(t, eng.ringsDrained, 10*time.Second, time.Millisecond)
					require.NoError(t, st.Write(in[i*testTuple:(i+1)*testTuple]))
					require.NoError(t, st.Flush())
					check()
				}
				assert.Eventually(t, func() bool {
					check()
					p := st.Progress()
					return p.Merged >= n*testTuple && p.Complete > ts[n-1]
				}, 10*time.Second, time.Millisecond, "the first %d tuples out: %+v", n, st.Progress())

				_, err = eng.CloseAll()
				require.NoError(t, err)
			})
		}
	}
}

// TestProgressThroughAJoin: a window join's inputs count a tuple out once
// every window of the join that holds it was handed on, and out of the
// queries over the join; the inputs fed directly, through views that add
// to the join from their result stage (joinFeed), and under an
// aggregation of the pairs. Each side has the same tuples, each matching
// only itself, so that every window with tuples has pairs.
func TestProgressThroughAJoin(t *testing.T) {
	t.Parallel()
	s := testSchema(t)
	const n, stairs = 2000, 10
	for _, shape := range []string{"join", "filters, join", "join, windows"} {
		for _, workers := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/%d workers", shape, workers), func(t *testing.T) {
				t.Parallel()
				r := rand.New(rand.NewPCG(uint64(workers), uint64(len(shape))))
				size := 10 + r.Int64N(90)
				filter := &query.Query{Name: "filter", Schema: s, Where: query.ColGe("kind", 0)}
				j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Tumbling(size),
					Where: query.Cmp(query.C("l.val"), query.Eq, query.C("r.val"))}
				jout, err := j.OutputSchema()
				require.NoError(t, err)
				// last is the start of the newest window out at the end
				// of the chain: windows leave in order.
				var last atomic.Int64
				last.Store(math.MinInt64)
				pairs := func(b []byte) error {
					for o := 0; o < len(b); o += jout.TupleSize {
						ts := int64(binary.LittleEndian.Uint64(b[o:]))
						last.Store(ts - ts%size)
					}
					return nil
				}
				var specs []Spec
				var sides [2]func(*Engine) *Stream
				switch shape {
				case "join":
					specs = []Spec{{Join: j, Tuples: pairs}}
					sides = [2]func(*Engine) *Stream{func(e *Engine) *Stream { return e.Stream(0) }, func(e *Engine) *Stream { return e.Stream(0).Right() }}
				case "filters, join":
					right := *filter
					right.Name = "filter.right"
					specs = []Spec{{Query: filter}, {Query: &right}, {Join: j, Upstream: Output(0), UpstreamRight: Output(1), Tuples: pairs}}
					sides = [2]func(*Engine) *Stream{func(e *Engine) *Stream { return e.Stream(0) }, func(e *Engine) *Stream { return e.Stream(1) }}
				default:
					agg := &query.Query{Name: "agg", Schema: jout, Window: query.Tumbling(size), Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
					specs = []Spec{{Join: j}, {Query: agg, Upstream: Output(0), Windows: func(win *Window) error { last.Store(win.Start); return nil }}}
					sides = [2]func(*Engine) *Stream{func(e *Engine) *Stream { return e.Stream(0) }, func(e *Engine) *Stream { return e.Stream(0).Right() }}
				}
				eng, err := Start(Config{Workers: workers, TaskSize: (1 + r.IntN(40)) * testTuple, BufferSize: 1 << 16}, specs)
				require.NoError(t, err)
				in := [2]*Stream{sides[0](eng), sides[1](eng)}
				SameProducer(in[0], in[1]) // one goroutine writes both
				if shape == "filters, join" {
					require.NotNil(t, eng.Stream(0).joinFeed, "the views feed the join from their result stage")
				}
				data, ts := staircase(r, n, stairs, size)
				for i := range n + stairs {
					binary.LittleEndian.PutUint32(data[i*testTuple+12:], uint32(i)) // val: each tuple matches only itself
				}
				check := func() {
					for side, st := range in {
						p := st.Progress()
						out := last.Load() // after Progress: the sink only gets further
						for i := range min(int(p.Merged/testTuple), n) {
							if ts[i] < p.Complete && ts[i]-ts[i]%size > out {
								require.Failf(t, "a tuple counted out is not", "side %d: tuple %d (ts %d) of %d merged, Complete %d: its window is not out (the last out starts at %d)", side, i, ts[i], p.Merged/testTuple, p.Complete, out)
							}
						}
					}
				}
				write := func(b []byte) {
					require.NoError(t, in[0].Write(b))
					require.NoError(t, in[1].Write(b))
				}
				flush := func() {
					require.NoError(t, in[0].Flush())
					require.NoError(t, in[1].Flush())
				}
				for b := data[:n*testTuple]; len(b) > 0; {
					k := min(len(b), (1+r.IntN(100))*testTuple)
					write(b[:k])
					b = b[k:]
					if r.IntN(3) == 0 {
						flush()
					}
					check()
				}
				flush()
				for i := n; i < n+stairs; i++ {
					require.Eventually(t, eng.ringsDrained, 10*time.Second, time.Millisecond)
					write(data[i*testTuple : (i+1)*testTuple])
					flush()
					check()
				}
				assert.Eventually(t, func() bool {
					check()
					for _, st := range in {
						if p := st.Progress(); p.Merged < n*testTuple || p.Complete <= ts[n-1] {
							return false
						}
					}
					return true
				}, 10*time.Second, time.Millisecond, "the first %d tuples out: %+v, %+v", n, in[0].Progress(), in[1].Progress())
				_, err = eng.CloseAll()
				require.NoError(t, err)
			})
		}
	}
}

// staircase is n tuples of testSchema's, times rising by 0 to 3, then
// stairs tuples each 10 windows of size past the last: each closes the
// windows before it. It returns the tuples and their times.
func staircase(r *rand.Rand, n, stairs int, size int64) ([]byte, []int64) {
	in := make([]byte, (n+stairs)*testTuple)
	ts := make([]int64, n+stairs)
	for i := range n + stairs {
		switch {
		case i >= n:
			ts[i] = ts[i-1] + 10*size
		case i > 0:
			ts[i] = ts[i-1] + r.Int64N(4)
		}
		binary.LittleEndian.PutUint64(in[i*testTuple:], uint64(ts[i]))
	}
	return in, ts
}

// ringsDrained says whether every stream's ring is free: all its input
// merged.
func (e *Engine) ringsDrained() bool {
	for _, s := range e.streams {
		if s.ring.Freed() != s.ring.Written() {
			return false
		}
	}
	return true
}
