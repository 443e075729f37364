package ysb

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
)

// pipeline feeds a replayed bundle through a whole engine, as the benchmark
// mode does, without validation.
type pipeline struct {
	eng     *engine.Engine
	src     *replay
	k       uint64
	ingest  engine.Ingest // not engine.IngestAuto
	workers int
}

func newPipeline(t testing.TB, workers int, ingest engine.Ingest) *pipeline {
	gc := DefaultGenConfig()
	gen, err := NewGenerator(gc)
	require.NoError(t, err)
	n := BundleTuples(16<<20, gc)
	src, err := newReplay(gen, n, nil)
	require.NoError(t, err)
	p := &pipeline{src: src, ingest: ingest, workers: workers}
	p.eng, err = engine.Start(engine.Config{Workers: workers, TaskSize: 256 << 10, BufferSize: 4 << 20},
		[]engine.Spec{{Query: Query(gen.Campaigns(), WindowMs)}})
	require.NoError(t, err)
	if ingest != engine.IngestProducer {
		p.eng.Stream(0).SetFill(p.src.fillAt)
	}
	return p
}

// task ingests one task's worth of tuples.
func (p *pipeline) task(t testing.TB) int {
	st := p.eng.Stream(0)
	b, err := st.Buffer()
	require.NoError(t, err)
	if p.ingest.LeaveToWorkers(st, p.workers) {
		require.NoError(t, st.CommitUnfilled(len(b)))
	} else {
		p.src.fill(b, p.k)
		require.NoError(t, st.Commit(len(b)))
	}
	p.k += uint64(len(b) / TupleSize)
	return len(b)
}

// TestPipelineSteadyStateAllocations: once warm, ingesting, processing and
// merging tasks allocates nothing per task, whoever copies.
func TestPipelineSteadyStateAllocations(t *testing.T) {
	for _, ingest := range []engine.Ingest{engine.IngestProducer, engine.IngestWorkers, engine.IngestShared} {
		p := newPipeline(t, 2, ingest)
		for range 500 {
			p.task(t)
		}
		allocs := testing.AllocsPerRun(20, func() {
			for range 64 {
				p.task(t)
			}
		})
		st, err := p.eng.CloseAll()
		require.NoError(t, err)
		assert.Zero(t, st[0].Late)
		assert.Less(t, allocs, 1.0, "allocations per 64 tasks, ingest %s", ingest)
	}
}

func BenchmarkYSBPipeline(b *testing.B) {
	for _, workers := range []int{1, 2} {
		for _, ingest := range []engine.Ingest{engine.IngestProducer, engine.IngestWorkers, engine.IngestShared} {
			b.Run(fmt.Sprintf("workers%d/%s", workers, ingest), func(b *testing.B) {
				p := newPipeline(b, workers, ingest)
				b.ReportAllocs()
				var bytes int64
				for b.Loop() {
					bytes += int64(p.task(b))
				}
				st, err := p.eng.CloseAll()
				require.NoError(b, err)
				b.SetBytes(bytes / int64(b.N))
				b.ReportMetric(float64(st[0].Tuples)/b.Elapsed().Seconds()/1e6, "Mtuples/s")
			})
		}
	}
}
