package pipeline

import (
	"errors"
	"fmt"
	"math"
	"slices"
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

	// A task size left at 0 is the engine's default; 0 given, or below
	// 0, is refused (the engine would have run its default).
	zero := ok
	zero.TaskSize = 0
	_, err = zero.Config()
	require.NoError(t, err)
	zero.Given = func(s string) bool { return s == "task-size" }
	_, err = zero.Config()
	assert.EqualError(t, err, "task-size 0: must be a positive multiple of the tuple size")
	zero.TaskSize, zero.Given = -64, nil
	_, err = zero.Config()
	assert.EqualError(t, err, "task-size -64: must be a positive multiple of the tuple size")
	// Too large for the engine's two-task rule, which would overflow.
	huge := ok
	huge.TaskSize = math.MaxInt/2 + 1
	_, err = huge.Config()
	assert.ErrorContains(t, err, "buffer size 1048576 must hold at least two tasks")
	huge.BufferSize = 0
	_, err = huge.Config()
	assert.ErrorContains(t, err, "too large for any ring, which holds two tasks at least")

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
		{func(s *EngineSettings) { s.Policy, s.Static = "static", "x" }, "static", `static "x": want QUERY=KIND,...`},
		{func(s *EngineSettings) { s.Static = "ysb=cpu" }, "static", "static binds queries under policy static, not policy fcfs"},
		{func(s *EngineSettings) { s.Policy, s.Static = "hls", "ysb=cpu" }, "static", "static binds queries under policy static, not policy hls"},
		{func(s *EngineSettings) { s.Cores = "0" }, "cores", "cores pins the workers to the CPUs it lists: not with pin false"},
		{func(s *EngineSettings) { s.Pin, s.Cores, s.Mode, s.GPUEmulate = "auto", "0", "gpu", true }, "cores", "cores: mode gpu runs no CPU workers"},
		{func(s *EngineSettings) { s.Pin, s.Cores = "true", "0-x" }, "cores", "cores: "},
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

// TestEngineSettingsCores: a CPU list pins the workers (auto means true
// with it), each to the list's CPU in turn; a list of fewer CPUs than
// workers is a warning, since they then share CPUs.
func TestEngineSettingsCores(t *testing.T) {
	t.Parallel()
	first := cpu.AllowedCPUs()[0]
	n := len(cpu.AllowedCPUs()) + 1 // more workers than CPUs: auto alone does not pin them
	require.False(t, PinWorkers("auto", n))
	var warnings []string
	s := EngineSettings{Workers: n, WorkersSet: true, Pin: "auto", Cores: strconv.Itoa(first), TaskSize: 4096, BufferSize: 1 << 20, Mode: "cpu",
		GPUDepth: 1, Policy: "hls", SwitchThreshold: 1, MonitorInterval: time.Second, Placement: "compact", MemPolicy: "default", IngestCore: -1,
		Kernel: "auto", Warn: func(msg string) { warnings = append(warnings, msg) }}
	c, err := s.Config()
	require.NoError(t, err)
	assert.True(t, c.Pin, "--cores pins")
	assert.Equal(t, slices.Repeat([]int{first}, n), c.CPUs)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], fmt.Sprintf("cores %d: %d workers on 1 distinct CPU(s)", first, n))

	// A CPU named twice is one CPU; as many CPUs as workers, no warning.
	warnings, s.Workers = nil, 2
	s.Cores = fmt.Sprintf("%d,%d", first, first)
	_, err = s.Config()
	require.NoError(t, err)
	assert.Len(t, warnings, 1, "a CPU named twice is one CPU")
	warnings, s.Workers = nil, 1
	c, err = s.Config()
	require.NoError(t, err)
	assert.True(t, c.Pin)
	assert.Empty(t, warnings)

	// Without a worker count, one worker per CPU listed: not one per CPU
	// of the machine, stacked on those.
	warnings, s.WorkersSet, s.Workers = nil, false, 0
	s.Cores = fmt.Sprintf("%d,%d", first, first)
	c, err = s.Config()
	require.NoError(t, err)
	assert.Equal(t, 1, c.Workers)
	assert.Equal(t, []int{first}, c.CPUs)
	assert.Empty(t, warnings)
}
