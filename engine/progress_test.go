package engine

import (
	"encoding/binary"
	"math"
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
