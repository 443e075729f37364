package pipeline

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/query"
)

// TestProgressOfARestoredEngine: the progress lines count what the
// engine itself merged, not the tuples its restore carried over from the
// snapshot (the watcher starts with the engine, before the restore).
func TestProgressOfARestoredEngine(t *testing.T) {
	t.Parallel()
	s, err := query.NewSchema(16, query.Attribute{Name: "ts", Type: query.Int64}, query.Attribute{Name: "v", Type: query.Int64, Offset: 8})
	require.NoError(t, err)
	q := &query.Query{Name: "n", Schema: s, Window: query.Tumbling(10), Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
	cfg := engine.Config{Workers: 1, TaskSize: 16 * 64, BufferSize: 1 << 14}
	spec := []engine.Spec{{Query: q, Windows: func(*engine.Window) error { return nil }}}
	e, err := engine.Start(cfg, spec)
	require.NoError(t, err)
	data := make([]byte, 16*1000)
	for i := range 1000 {
		binary.LittleEndian.PutUint64(data[16*i:], uint64(i))
	}
	require.NoError(t, e.Stream(0).Write(data))
	require.NoError(t, e.Stream(0).Flush())
	snap, err := e.Snapshot(nil)
	require.NoError(t, err)
	_, err = e.CloseAll()
	require.NoError(t, err)

	e, err = engine.Start(cfg, spec)
	require.NoError(t, err)
	var mu sync.Mutex
	var counted float64
	stop := WatchProgress(e, time.Now(), time.Millisecond, func(_ time.Duration, streams []StreamProgress) {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range streams {
			counted += p.TuplesPerS // a rate over ~1 ms: positive only where a tuple was counted
		}
	})
	time.Sleep(5 * time.Millisecond)
	_, err = e.Restore(snap)
	require.NoError(t, err)
	time.Sleep(20 * time.Millisecond)
	stop()
	_, err = e.CloseAll()
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Zero(t, counted, "no tuple came in: every line says none")
}

// TestWatchProgressStopTwice: the stop function may be called again (a
// deferred stop besides the one before the summary); it panicked closing
// a closed channel.
func TestWatchProgressStopTwice(t *testing.T) {
	t.Parallel()
	s, err := query.NewSchema(16, query.Attribute{Name: "ts", Type: query.Int64}, query.Attribute{Name: "v", Type: query.Int64, Offset: 8})
	require.NoError(t, err)
	e, err := engine.Start(engine.Config{Workers: 1, TaskSize: 16 * 64, BufferSize: 1 << 14}, []engine.Spec{{Query: &query.Query{Name: "q", Schema: s}}})
	require.NoError(t, err)
	defer e.CloseAll()
	stop := WatchProgress(e, time.Now(), time.Millisecond, func(time.Duration, []StreamProgress) {})
	time.Sleep(5 * time.Millisecond)
	stop()
	assert.NotPanics(t, stop)
}
