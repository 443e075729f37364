package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/cpu"
)

func TestParseIngest(t *testing.T) {
	parallel(t)
	for in, want := range map[string]Ingest{"": IngestAuto, "auto": IngestAuto, "producer": IngestProducer, "workers": IngestWorkers, "shared": IngestShared} {
		got, err := ParseIngest(in)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := ParseIngest("gpu")
	assert.EqualError(t, err, `ingest "gpu": want one of auto, producer, workers, shared`)
}

// TestIngestResolve: auto is shared in gpu mode and for one worker with a
// CPU to spare for the producer, the workers otherwise; a set
// mode stays.
func TestIngestResolve(t *testing.T) {
	parallel(t)
	cpus := len(cpu.AllowedCPUs())
	assert.Equal(t, IngestShared, IngestAuto.Resolve(Config{GPUOnly: true}))
	if cpus > 1 {
		assert.Equal(t, IngestShared, IngestAuto.Resolve(Config{Workers: 1}))
	} else {
		assert.Equal(t, IngestWorkers, IngestAuto.Resolve(Config{Workers: 1}), "no CPU for the producer")
	}
	assert.Equal(t, IngestWorkers, IngestAuto.Resolve(Config{Workers: 2}), "the producer's CPU would add a half at most")
	assert.Equal(t, IngestWorkers, IngestAuto.Resolve(Config{Workers: max(2, cpus-1)}))
	assert.Equal(t, IngestWorkers, IngestAuto.Resolve(Config{Workers: cpus}))
	assert.Equal(t, IngestWorkers, IngestAuto.Resolve(Config{}), "the default: a worker per CPU")
	for _, i := range []Ingest{IngestProducer, IngestWorkers, IngestShared} {
		assert.Equal(t, i, i.Resolve(Config{GPUOnly: true, Workers: cpus}))
	}
}
