package engine

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/gpu"
	"github.com/saber-hx/saber-hx/query"
)

// runFilled ingests data through SetFill and CommitUnfilled: the producer
// only reserves random lengths of the ring, the processors copy the bytes.
// It returns the rows, the counters and how many times fill was called.
func runFilled(t *testing.T, cfg Config, q *query.Query, data []byte, r *rand.Rand) ([]row, Stats, int64) {
	var rows []row
	e, err := New(cfg, q, rowSink(&rows))
	require.NoError(t, err)
	var calls atomic.Int64
	st := e.Stream(0)
	st.SetFill(func(dst []byte, pos uint64) {
		calls.Add(1)
		copy(dst, data[pos:pos+uint64(len(dst))])
	})
	for pos := 0; pos < len(data); {
		b, err := st.Buffer()
		require.NoError(t, err)
		n := min(len(b), len(data)-pos, 1+r.IntN(2*cfg.TaskSize))
		require.NoError(t, st.CommitUnfilled(n))
		pos += n
	}
	stats, err := e.Close()
	require.NoError(t, err)
	return rows, stats, calls.Load()
}

// TestFillByWorkersMatchesNaive: a stream ingested by the workers (on CPU
// workers, and on the GPU worker of hybrid and gpu modes) gives the naive
// evaluator's windows, like one written by its producer.
func TestFillByWorkersMatchesNaive(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	for seed := range 12 {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		size := 1 + r.Int64N(300)
		slide := size
		if seed%2 == 1 {
			slide = 1 + r.Int64N(size)
		}
		w := query.Sliding(size, slide)
		tt := newTestTable(r, 1+r.IntN(20), 1+r.IntN(6))
		data := genStream(r, 300+r.IntN(4000), tt, r.Int64N(5), r.Int64N(30))
		cfg := Config{Workers: 1 + r.IntN(3), TaskSize: testTuple * (1 + r.IntN(200)), BufferSize: 1 << 16}
		for cfg.BufferSize < 2*cfg.TaskSize {
			cfg.BufferSize *= 2
		}
		mode := []string{"cpu", "hybrid", "gpu"}[seed%3]
		if mode != "cpu" {
			cfg.GPU, cfg.GPUOnly = gpu.NewEmulator(), mode == "gpu"
		}
		q := testQuery(testSchema(t), w, tt)
		if mode == "gpu" && !gpuSupported(t, q) {
			cfg.GPUOnly = false
		}
		t.Run(fmt.Sprintf("seed%d/%s/workers%d/task%d", seed, mode, cfg.Workers, cfg.TaskSize), func(t *testing.T) {
			want, wc := naive(data, w, tt)
			got, st, calls := runFilled(t, cfg, q, data, r)
			assertRows(t, want, got)
			assert.Equal(t, wc, counts{st.Tuples, st.Filtered, st.Unmatched, st.Late, st.Counted})
			assert.Equal(t, int64(st.Tasks), calls, "fill runs once per task")
		})
		if cfg.GPU != nil {
			require.NoError(t, cfg.GPU.(gpu.Device).Close())
		}
	}
	assertNoLeak(t, base)
}

func TestFillErrors(t *testing.T) {
	parallel(t)
	tt := newTestTable(rand.New(rand.NewPCG(1, 1)), 4, 2)
	q := testQuery(testSchema(t), query.Tumbling(10), tt)
	cfg := Config{Workers: 1, TaskSize: 4 * testTuple, BufferSize: 1 << 12}

	e, err := New(cfg, q, func(*Window) error { return nil })
	require.NoError(t, err)
	st := e.Stream(0)
	_, err = st.Buffer()
	require.NoError(t, err)
	assert.EqualError(t, st.CommitUnfilled(testTuple), `engine: query "t": CommitUnfilled without SetFill`)

	st.SetFill(func(dst []byte, pos uint64) { clear(dst) })
	require.NoError(t, st.Commit(testTuple))
	assert.EqualError(t, st.CommitUnfilled(testTuple), `engine: query "t": CommitUnfilled inside a task of 32 bytes written by Commit`)
	_, err = st.Buffer()
	require.NoError(t, err)
	require.NoError(t, st.Commit(3*testTuple)) // ends the task
	_, err = st.Buffer()
	require.NoError(t, err)
	require.NoError(t, st.CommitUnfilled(testTuple))
	assert.EqualError(t, st.Commit(testTuple), `engine: query "t": Commit inside a task of 32 bytes left to the fill function`)
	_, err = st.Buffer()
	require.NoError(t, err)
	require.NoError(t, st.CommitUnfilled(3*testTuple))
	_, err = e.Close()
	require.NoError(t, err)
}

// TestFillIntoWorkerBuffer: a CPU worker ingests every task it runs into
// one buffer of its own, reused from task to task (no allocation per task,
// and the bytes stay in its cache), never into the task's place in the
// ring; the results are still the naive evaluator's.
func TestFillIntoWorkerBuffer(t *testing.T) {
	parallel(t)
	r := rand.New(rand.NewPCG(5, 5))
	tt := newTestTable(r, 8, 3)
	data := genStream(r, 5000, tt, 2, 10)
	w := query.Tumbling(50)
	q := testQuery(testSchema(t), w, tt)
	cfg := Config{Workers: 1, TaskSize: 16 * testTuple, BufferSize: 1 << 12}

	var rows []row
	e, err := New(cfg, q, rowSink(&rows))
	require.NoError(t, err)
	st := e.Stream(0)
	var firstBuf []byte
	var calls, elsewhere int
	ring := e.streams[0].ring
	inRing := func(b []byte) bool {
		p, lo := uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&ring.Slice(0, 1)[0]))
		return p >= lo && p < lo+2*uintptr(ring.Size())
	}
	st.SetFill(func(dst []byte, pos uint64) { // one worker: calls are serial
		calls++
		if firstBuf == nil {
			firstBuf = dst
		}
		if &dst[0] != &firstBuf[0] || inRing(dst) {
			elsewhere++
		}
		copy(dst, data[pos:pos+uint64(len(dst))])
	})
	for pos := 0; pos < len(data); {
		b, err := st.Buffer()
		require.NoError(t, err)
		n := min(len(b), len(data)-pos)
		require.NoError(t, st.CommitUnfilled(n))
		pos += n
	}
	stats, err := e.Close()
	require.NoError(t, err)
	want, wc := naive(data, w, tt)
	assertRows(t, want, rows)
	assert.Equal(t, wc, counts{stats.Tuples, stats.Filtered, stats.Unmatched, stats.Late, stats.Counted})
	require.Greater(t, calls, 10, "the stream wraps the ring several times")
	assert.Zero(t, elsewhere, "fills outside the worker's one buffer, of %d", calls)
}
