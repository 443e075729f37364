package engine

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/cpu"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/scheduler"
)

// TestConfigDefaults: a zero Config is the command line's defaults; set
// fields stay; a zero BufferSize grows to hold two tasks, and two tasks
// per worker.
func TestConfigDefaults(t *testing.T) {
	cpus := len(cpu.AllowedCPUs())
	assert.Equal(t, Config{Workers: cpus, TaskSize: 1 << 20, BufferSize: DefaultBufferSizeFor(cpus, 1<<20), Policy: scheduler.HLS}, Config{}.Defaults())
	set := Config{Workers: 3, TaskSize: 640, BufferSize: 4096, Policy: scheduler.FCFS}
	assert.Equal(t, set, set.Defaults())
	assert.Equal(t, 16<<20, Config{Workers: 1, TaskSize: 8 << 20}.Defaults().BufferSize)
	assert.Equal(t, 4<<20, Config{Workers: 1}.Defaults().BufferSize)
	assert.Equal(t, 4<<20, Config{Workers: 2}.Defaults().BufferSize)
	assert.Equal(t, 8<<20, Config{Workers: 4}.Defaults().BufferSize, "two 1 MiB tasks per worker")
	assert.Equal(t, 16<<20, Config{Workers: 5}.Defaults().BufferSize)
	assert.Equal(t, 32<<20, Config{Workers: 15}.Defaults().BufferSize)
	assert.Equal(t, 4<<20, Config{Workers: 15, TaskSize: 64 << 10}.Defaults().BufferSize)
	hybrid := Config{GPU: kernelGPU{}}
	assert.Equal(t, 512<<20, Config{Workers: 15, GPU: hybrid.GPU}.Defaults().BufferSize, "hybrid: 32 tasks per worker, at most 512 MiB")
	assert.Equal(t, 64<<20, Config{Workers: 2, GPU: hybrid.GPU}.Defaults().BufferSize)
	assert.Equal(t, 1<<30, Config{Workers: 15, TaskSize: 32 << 20, GPU: hybrid.GPU}.Defaults().BufferSize, "two tasks per worker at the least")
	assert.Equal(t, 4<<20, Config{Workers: 15, GPU: hybrid.GPU, GPUOnly: true}.Defaults().BufferSize, "gpu mode: as cpu mode")
	assert.Equal(t, max(cpus-1, 1), DefaultWorkers("hybrid"))
	assert.Equal(t, cpus, DefaultWorkers("cpu"))
	require.NoError(t, Config{}.Defaults().Validate(32))
	assert.ErrorContains(t, Config{}.Validate(32), "workers 0", "Validate checks the config as given")
}

// TestZeroConfigRuns: Start with a zero Config runs a query (the defaults'
// task size, a multiple of the 32-byte tuple), through Produce.
func TestZeroConfigRuns(t *testing.T) {
	base := runtime.NumGoroutine()
	r := rand.New(rand.NewPCG(3, 4))
	tt := newTestTable(r, 4, 2)
	q := testQuery(testSchema(t), query.Tumbling(10), tt)
	data := genStream(r, 3000, tt, 1, 0)
	want, _ := naive(data, query.Tumbling(10), tt)
	var rows []row
	e, err := Start(Config{}, []Spec{{Query: q, Windows: rowSink(&rows)}})
	require.NoError(t, err)
	require.NoError(t, <-e.Produce(func() error { return e.Stream(0).Write(data) }))
	st, err := e.CloseAll()
	require.NoError(t, err)
	assert.Equal(t, uint64(len(data)/testTuple), st[0].Tuples)
	assertRows(t, want, rows)
	assertNoLeak(t, base)
}

// TestProducePins: with PinIngest, Produce runs the producer on a thread
// pinned to IngestCore without the producer asking; without it, unpinned.
func TestProducePins(t *testing.T) {
	allowed := cpu.AllowedCPUs()
	core := allowed[len(allowed)-1]
	q := &query.Query{Name: "p", Schema: testSchema(t)}
	for _, pin := range []bool{true, false} {
		var warns []string
		e, err := Start(Config{Workers: 1, PinIngest: pin, IngestCore: core, Warn: func(m string) { warns = append(warns, m) }}, []Spec{{Query: q}})
		require.NoError(t, err)
		var on []int
		require.NoError(t, <-e.Produce(func() (err error) {
			on, err = cpu.CurrentThreadCPUs()
			return err
		}))
		_, err = e.CloseAll()
		require.NoError(t, err)
		if pin && len(warns) == 0 {
			assert.Equal(t, []int{core}, on)
		} else if !pin {
			assert.Equal(t, allowed, on)
		}
	}
}

// TestDefaultWorkersWithinGOMAXPROCS: the default is no more workers than
// GOMAXPROCS (a container's CPU quota, as the runtime reads it). Not
// parallel: GOMAXPROCS is the process's.
func TestDefaultWorkersWithinGOMAXPROCS(t *testing.T) {
	if len(cpu.AllowedCPUs()) < 2 {
		t.Skip("needs 2 CPUs")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	assert.Equal(t, 1, DefaultWorkers("cpu"))
	assert.Equal(t, 1, DefaultWorkers("hybrid"))
}

func TestDefaultWorkersByCPUs(t *testing.T) {
	assert.Equal(t, 16, defaultWorkers("cpu", 16))
	assert.Equal(t, 16, defaultWorkers("gpu", 16), "gpu mode runs no CPU worker anyway")
	assert.Equal(t, 15, defaultWorkers("hybrid", 16), "one core for the GPU worker")
	assert.Equal(t, 1, defaultWorkers("hybrid", 1))
	assert.Equal(t, 1, defaultWorkers("cpu", 0))
}
