package gpu_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/gpu"
	"github.com/saber-hx/saber-hx/scheduler"
)

// The GPU kind's name is the engine's, which gpu does not import.
func TestKindName(t *testing.T) {
	assert.Equal(t, engine.GPUKindName, gpu.KindName)
}

// TestOpenForMode: cpu mode opens nothing, --gpu-emulate the emulator,
// and GPU 0 without the cuda build tag fails with ErrNotBuilt.
func TestOpenForMode(t *testing.T) {
	dev, err := gpu.OpenForMode("cpu", false)
	require.NoError(t, err)
	assert.Nil(t, dev)
	dev, err = gpu.OpenForMode("cpu", true)
	require.NoError(t, err)
	assert.Nil(t, dev, "cpu mode runs no GPU kind, emulated or not")
	for _, mode := range []string{"gpu", "hybrid"} {
		dev, err := gpu.OpenForMode(mode, true)
		require.NoError(t, err, mode)
		require.NotNil(t, dev, mode)
		assert.Equal(t, "emulator", dev.Name())
		require.NoError(t, dev.Close())
		if !gpu.Built() {
			dev, err = gpu.OpenForMode(mode, false)
			assert.Nil(t, dev)
			assert.True(t, errors.Is(err, gpu.ErrNotBuilt), "%v", err)
		}
	}
	_, err = gpu.OpenForMode("tpu", true)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `mode "tpu": valid: cpu, gpu, hybrid`)
}

// TestSummarize: nil without a device; the device's name, its timings,
// and the queries the GPU kind cannot run; the JSON fields in the order
// the summaries have always printed them.
func TestSummarize(t *testing.T) {
	assert.Nil(t, gpu.Summarize(nil, scheduler.Stats{}, nil, 0, false, 4))
	var none engine.GPU // a Config without a GPU
	assert.Nil(t, gpu.Summarize(none, scheduler.Stats{}, nil, 0, false, 4))

	dev := gpu.NewEmulator()
	defer dev.Close()
	var g engine.GPU = dev // as the command line passes it: the engine's Config.GPU
	s := gpu.Summarize(g, scheduler.Stats{Kinds: []string{"cpu", "gpu"}}, []string{"a", "b"}, 7, true, 2)
	require.NotNil(t, s)
	assert.Equal(t, "emulator", s.GPU)
	assert.True(t, s.Emulated)
	assert.Equal(t, 2, s.Depth)
	assert.Equal(t, uint64(7), s.Fallback)
	assert.Equal(t, []string{}, s.CannotRun, "a list, empty when the GPU runs every query")
	assert.Equal(t, "emulated", s.Sync, "the emulator's timings are read through the engine's interface")
	assert.Len(t, s.Times, 5)

	sched := scheduler.Stats{Kinds: []string{"cpu", "gpu"}, Runnable: [][]bool{{true, true}, {true, false}, {true, true}, {true, false}}}
	s = gpu.Summarize(dev, sched, []string{"a", "b", "c"}, 0, false, 4)
	assert.Equal(t, []string{"b"}, s.CannotRun, "queries the scheduler has beyond the names are not named")
	// Without a GPU kind nothing is "cannot run".
	s = gpu.Summarize(dev, scheduler.Stats{Kinds: []string{"cpu"}, Runnable: [][]bool{{false}}}, []string{"a"}, 0, false, 4)
	assert.Empty(t, s.CannotRun)

	b, err := json.Marshal(s)
	require.NoError(t, err)
	var keys []string
	dec := json.NewDecoder(strings.NewReader(string(b)))
	_, err = dec.Token() // {
	require.NoError(t, err)
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, k.(string))
		var v json.RawMessage
		require.NoError(t, dec.Decode(&v))
	}
	assert.Equal(t, []string{"gpu", "gpu_emulated", "gpu_pipeline_depth", "gpu_cannot_run", "gpu_fallback_tasks",
		"gpu_copy_in_us_p50", "gpu_kernel_us_p50", "gpu_copy_out_us_p50", "gpu_submit_us_p50", "gpu_wait_us_p50", "gpu_times_us",
		"gpu_timed_tasks", "gpu_sync", "gpu_direct_tasks", "gpu_staged_tasks", "gpu_one_trip_tasks", "gpu_two_trip_tasks"}, keys)
}
