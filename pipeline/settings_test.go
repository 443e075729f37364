package pipeline

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/cpu"
	"github.com/saber-hx/saber-hx/engine"
)

// TestEngineSettings: the settings make the engine's configuration; a
// bad one is a *SettingError (an ErrUsage) naming it, by its own name or
// as Name says.
func TestEngineSettings(t *testing.T) {
	t.Parallel()
	ok := EngineSettings{Workers: 1, WorkersSet: true, Pin: "false", TaskSize: 4096, BufferSize: 1 << 20, Mode: "cpu", GPUDepth: 1,
		Policy: "fcfs", SwitchThreshold: 1, MonitorInterval: time.Second, Placement: "compact", MemPolicy: "default", IngestCore: -1, Kernel: "vector"}
	c, err := ok.Config()
	require.NoError(t, err)
	assert.Equal(t, 1, c.Workers)
	assert.True(t, c.Vectorised)
	assert.False(t, c.Pin)

	// Without --cores the engine places pinned workers (on the CPUs no
	// other engine holds); with them, they are the plan.
	pinned := ok
	pinned.Pin, pinned.Placement = "true", "spread"
	c, err = pinned.Config()
	require.NoError(t, err)
	assert.Nil(t, c.CPUs)
	assert.Equal(t, cpu.Spread, c.Placement)
	pinned.Cores = strconv.Itoa(cpu.AllowedCPUs()[0])
	c, err = pinned.Config()
	require.NoError(t, err)
	assert.Equal(t, cpu.AllowedCPUs()[:1], c.CPUs)

	def := ok
	def.WorkersSet = false
	c, err = def.Config()
	require.NoError(t, err)
	assert.Equal(t, engine.DefaultWorkers("cpu"), c.Workers)

	// A zero ring is the engine's default for the mode: larger in hybrid
	// mode, where the GPU's tasks hold up the CPU workers' results.
	ring := ok
	ring.BufferSize, ring.TaskSize, ring.Workers = 0, 1<<20, 3
	c, err = ring.Config()
	require.NoError(t, err)
	assert.Equal(t, engine.DefaultBufferSizeFor(3, 1<<20), c.BufferSize)
	ring.Mode, ring.GPUEmulate = "hybrid", true
	c, err = ring.Config()
	require.NoError(t, err)
	assert.Equal(t, 128<<20, c.BufferSize, "hybrid: 32 tasks per worker")

	for _, tc := range []struct {
		set     func(*EngineSettings)
		setting string
		msg     string
	}{
		{func(s *EngineSettings) { s.Workers = 0 }, "workers", "workers 0: need at least 1"},
		{func(s *EngineSettings) { s.Kernel = "jit" }, "kernel", `kernel "jit": valid: auto, vector`},
		{func(s *EngineSettings) { s.GPUEmulate = true }, "gpu-emulate", "gpu-emulate: needs mode gpu or mode hybrid"},
		{func(s *EngineSettings) { s.Policy = "lifo" }, "policy", `policy "lifo": valid: fcfs, static, hls`},
		{func(s *EngineSettings) { s.Static = "x" }, "static", `static "x": want QUERY=KIND,...`},
		{func(s *EngineSettings) { s.Cores = "0-x" }, "cores", "cores: "},
		{func(s *EngineSettings) { s.IngestCore = 100000 }, "ingest-core", "ingest-core 100000: not among the CPUs"},
	} {
		s := ok
		tc.set(&s)
		_, err := s.Config()
		var se *SettingError
		require.ErrorAs(t, err, &se, tc.msg)
		assert.Equal(t, tc.setting, se.Setting)
		assert.Contains(t, err.Error(), tc.msg)
		assert.True(t, errors.Is(err, ErrUsage))
	}
	s := ok
	s.SwitchThreshold = 0
	s.Name = func(n string) string { return "--" + n }
	_, err = s.Config()
	require.EqualError(t, err, "--switch-threshold 0: must be >= 1")
}
