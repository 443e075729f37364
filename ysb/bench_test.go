package ysb

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
)

// pipeline feeds a replayed bundle through a whole engine, as the benchmark
// mode does, without validation.
type pipeline struct {
	eng    *engine.Engine
	bundle []byte
	n      int // tuples in the bundle
	span   int64
	k      uint64
}

func newPipeline(t testing.TB, workers int) *pipeline {
	gc := DefaultGenConfig()
	gen, err := NewGenerator(gc)
	require.NoError(t, err)
	n := BundleTuples(4<<20, gc)
	p := &pipeline{bundle: make([]byte, n*TupleSize), n: n, span: int64(n / gc.TuplesPerMs)}
	gen.Fill(p.bundle, 0)
	p.eng, err = engine.New(engine.Config{Workers: workers, Pin: true, TaskSize: 256 << 10, BufferSize: 16 << 20},
		Query(gen.Campaigns(), WindowMs), nil)
	require.NoError(t, err)
	return p
}

// task ingests one task's worth of tuples.
func (p *pipeline) task(t testing.TB) int {
	b, err := p.eng.Buffer()
	require.NoError(t, err)
	for off := 0; off < len(b); {
		pos := int(p.k % uint64(p.n))
		c := copy(b[off:], p.bundle[pos*TupleSize:])
		shiftEventTimes(b[off:off+c], int64(p.k/uint64(p.n))*p.span)
		off += c
		p.k += uint64(c / TupleSize)
	}
	require.NoError(t, p.eng.Commit(len(b)))
	return len(b)
}

// TestPipelineSteadyStateAllocations: once warm, ingesting, processing and
// merging tasks allocates nothing per task.
func TestPipelineSteadyStateAllocations(t *testing.T) {
	p := newPipeline(t, 2)
	for range 500 {
		p.task(t)
	}
	allocs := testing.AllocsPerRun(20, func() {
		for range 64 {
			p.task(t)
		}
	})
	st, err := p.eng.Close()
	require.NoError(t, err)
	assert.Zero(t, st.Late)
	assert.Less(t, allocs, 1.0, "allocations per 64 tasks")
}

func BenchmarkYSBPipeline(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(map[int]string{1: "workers1", 2: "workers2"}[workers], func(b *testing.B) {
			p := newPipeline(b, workers)
			b.ReportAllocs()
			var bytes int64
			for b.Loop() {
				bytes += int64(p.task(b))
			}
			st, err := p.eng.Close()
			require.NoError(b, err)
			b.SetBytes(bytes / int64(b.N))
			b.ReportMetric(float64(st.Tuples)/b.Elapsed().Seconds()/1e6, "Mtuples/s")
		})
	}
}
