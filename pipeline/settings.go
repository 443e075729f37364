package pipeline

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/saber-hx/saber-hx/cpu"
	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/gpu"
	"github.com/saber-hx/saber-hx/scheduler"
)

// EngineSettings are the engine's tuning knobs as a command line takes
// them (saber-hx's flags of the same names): Config checks them and
// makes the engine's configuration, its workers placed on the machine's
// topology.
type EngineSettings struct {
	// Workers are the CPU workers; where WorkersSet is false,
	// engine.DefaultWorkers(Mode).
	Workers    int
	WorkersSet bool
	// Pin is "true", "false" or "auto" (PinWorkers); with Cores, "auto"
	// means "true" and "false" is refused.
	Pin                  string
	TaskSize, BufferSize int // 0: the engine's defaults (engine.Config.Defaults)
	// Mode is the processors: cpu, gpu or hybrid. GPUDepth is the tasks
	// in flight on the GPU; GPUEmulate runs the GPU kind on the emulator
	// (no GPU needed).
	Mode       string
	GPUDepth   int
	GPUEmulate bool
	// Policy is fcfs, static or hls; Static binds queries to processor
	// kinds, QUERY=KIND,... (static's alone: refused with another policy);
	// SwitchThreshold and MonitorInterval are hls's.
	Policy, Static  string
	SwitchThreshold int
	MonitorInterval time.Duration
	// Placement is compact or spread; Cores a CPU list that overrides
	// it, worker i pinned to its CPU i mod its length; MemPolicy the
	// rings' memory policy (default, preferred, bind); IngestCore the CPU
	// of the ingestion goroutine (-1: not pinned).
	Placement, Cores, MemPolicy string
	IngestCore                  int
	// Kernel is the CPU kernels: auto or vector.
	Kernel string
	// Warn receives the warnings (the engine's too); nil: dropped.
	Warn func(msg string)
	// Name is how the messages name a setting (a command line's flag:
	// "--workers"); nil: by its own name ("workers").
	Name func(setting string) string
	// Given reports whether a setting was given rather than left at its
	// default (a command line's flag.Visit), so that one that would do
	// nothing with the others is refused; nil: none was.
	Given func(setting string) bool
}

// SettingError is a setting whose value is not valid: Setting names it,
// and the message says why (naming the settings as EngineSettings.Name
// does). It is an ErrUsage.
type SettingError struct {
	Setting string
	Msg     string
}

func (e *SettingError) Error() string        { return e.Msg }
func (e *SettingError) Is(target error) bool { return target == ErrUsage }

// minWorkerLimit is the least bound on the workers, whatever the CPUs.
const minWorkerLimit = 1024

// MaxWorkers bounds EngineSettings.Workers: every worker has a
// goroutine, an OS thread when pinned, and task buffers of its own, so
// a mistyped count would exhaust memory instead of running.
func MaxWorkers() int { return max(minWorkerLimit, 64*len(cpu.AllowedCPUs())) }

// PinWorkers says whether workers are pinned where Pin is pin: auto pins
// them only when at most half the CPUs this process may use run workers.
// Measured (docs/performance.md): on two CPUs, two unpinned workers won
// two batches of alternating runs of three (medians 1.19 and 1.14; a
// pinned worker is locked to its thread, and with three busy goroutines on
// two CPUs every wait hands the CPU over between threads), one worker was
// within the noise either way; on sixteen, pinned workers won at 4 and 8
// (1.04-1.25x) and lost at 15 (YSB 0.70x, the join 0.77-0.88x).
func PinWorkers(pin string, workers int) bool {
	switch pin {
	case "true":
		return true
	case "false":
		return false
	}
	return workers <= len(cpu.AllowedCPUs())/2
}

// CPUWorkers is the CPU workers that run: Workers, none in gpu mode.
func (s EngineSettings) CPUWorkers() int {
	if s.Mode == "gpu" {
		return 0
	}
	return s.Workers
}

func (s EngineSettings) name(setting string) string {
	if s.Name == nil {
		return setting
	}
	return s.Name(setting)
}

// errorf is a *SettingError of setting: format's %[1]s is the setting's
// name (other settings' names are args).
func (s EngineSettings) errorf(setting, format string, args ...any) error {
	return &SettingError{Setting: setting, Msg: fmt.Sprintf(format, append([]any{s.name(setting)}, args...)...)}
}

// Config checks the settings and returns the engine's configuration;
// every bad value is a *SettingError naming the valid ones. Its GPU is
// not opened (gpu.OpenForMode).
func (s EngineSettings) Config() (engine.Config, error) {
	warn := s.Warn
	if warn == nil {
		warn = func(string) {}
	}
	if !s.WorkersSet {
		s.Workers = engine.DefaultWorkers(s.Mode)
		if cores, err := cpu.ParseCPUList(s.Cores); s.Cores != "" && err == nil {
			// One worker per CPU listed, not per CPU of the machine
			// stacked on them.
			s.Workers = distinctCPUs(cores)
		}
	}
	pin := s.Pin
	if s.Cores != "" { // a CPU list pins the workers: auto means true
		if pin == "false" {
			return engine.Config{}, s.errorf("cores", "%s pins the workers to the CPUs it lists: not with %s false", s.name("pin"))
		}
		if s.Mode == "gpu" {
			return engine.Config{}, s.errorf("cores", "%s: %s gpu runs no CPU workers to pin", s.name("mode"))
		}
		pin = "true"
	}
	c := engine.Config{
		Workers: s.Workers, Pin: PinWorkers(pin, s.Workers), TaskSize: s.TaskSize, BufferSize: s.BufferSize, Warn: s.Warn,
		Policy: scheduler.Policy(s.Policy), SwitchThreshold: s.SwitchThreshold, MonitorInterval: s.MonitorInterval,
	}
	switch s.Kernel {
	case "auto":
	case "vector":
		c.Vectorised = true
	default:
		return c, s.errorf("kernel", "%s %q: valid: auto, vector", s.Kernel)
	}
	if err := s.gpuMode(&c); err != nil {
		return c, err
	}
	if s.Workers < 1 {
		return c, s.errorf("workers", "%s %d: need at least 1", s.Workers)
	}
	if limit := MaxWorkers(); s.Workers > limit {
		return c, s.errorf("workers", "%s %d: at most %d (64 per CPU this process may use, and never under %d)", s.Workers, limit, minWorkerLimit)
	}
	if c.Pin && s.Pin == "true" && s.Cores == "" && s.Mode != "gpu" && s.Workers > len(cpu.AllowedCPUs()) {
		warn(fmt.Sprintf("%s=true with %d workers on %d CPUs: several workers are pinned to each CPU and share it", s.name("pin"), s.Workers, len(cpu.AllowedCPUs())))
	}
	// 0 is the engine's default, for a caller that leaves it unset; a
	// 0 given is a mistake, which the engine would run as its default.
	if s.TaskSize < 0 || s.TaskSize == 0 && s.Given != nil && s.Given("task-size") {
		return c, s.errorf("task-size", "%s %d: must be a positive multiple of the tuple size", s.TaskSize)
	}
	// Checked here, before the engine's own checks, because its "two
	// tasks" rule doubles the task size, which a huge value overflows.
	if s.TaskSize > math.MaxInt/2 {
		if s.BufferSize == 0 { // the default ring, which would hold two at least
			return c, s.errorf("task-size", "task size %[2]d: too large for any ring, which holds two tasks at least (%[1]s)", s.TaskSize)
		}
		return c, s.errorf("task-size", "task size %[2]d: buffer size %[3]d must hold at least two tasks (%[1]s at most half of %[4]s)",
			s.TaskSize, s.BufferSize, s.name("buffer-size"))
	}
	if c.BufferSize == 0 { // the engine's default, here for the summaries (c has no GPU yet)
		d := c.Defaults()
		c.BufferSize = d.BufferSize
		if s.Mode == "hybrid" {
			c.BufferSize = engine.HybridBufferSizeFor(d.Workers, d.TaskSize)
		}
	}
	if s.SwitchThreshold < 1 {
		return c, s.errorf("switch-threshold", "%s %d: must be >= 1", s.SwitchThreshold)
	}
	if s.MonitorInterval <= 0 {
		return c, s.errorf("monitor-interval", "%s %v: must be > 0", s.MonitorInterval)
	}
	if !slices.Contains(scheduler.Policies, scheduler.Policy(s.Policy)) {
		return c, s.errorf("policy", "%s %q: valid: fcfs, static, hls", s.Policy)
	}
	if s.Static != "" && s.Policy != string(scheduler.Static) {
		return c, s.errorf("static", "%s binds queries under %s static, not %[2]s %[3]s", s.name("policy"), s.Policy)
	}
	if s.Static != "" {
		c.Static = map[string]string{}
		for _, b := range strings.Split(s.Static, ",") {
			q, k, ok := strings.Cut(b, "=")
			if !ok || q == "" || k == "" {
				return c, s.errorf("static", "%s %q: want QUERY=KIND,...", s.Static)
			}
			c.Static[q] = k
		}
	}
	if err := s.place(&c, warn); err != nil {
		return c, err
	}
	return c, s.doNothing(c)
}

// doNothing refuses a setting given where it would do nothing, as a
// command line refuses a flag that is not read.
func (s EngineSettings) doNothing(c engine.Config) error {
	given := s.Given
	if given == nil {
		return nil
	}
	hls := s.Mode == "hybrid" && s.Policy == string(scheduler.HLS)
	// firstGiven is the first of names given ("": none), --workers counted
	// as WorkersSet says.
	firstGiven := func(names ...string) string {
		for _, n := range names {
			if n == "workers" && s.WorkersSet || given(n) {
				return n
			}
		}
		return ""
	}
	switch {
	case s.Mode == "cpu" && given("gpu-pipeline-depth"):
		return s.errorf("gpu-pipeline-depth", "%s: needs %[2]s gpu or %[2]s hybrid", s.name("mode"))
	case given("switch-threshold") && !hls:
		return s.errorf("switch-threshold", "%s: hls's share of tasks for each processor kind: needs %s hybrid and %s hls", s.name("mode"), s.name("policy"))
	case given("monitor-interval") && !hls:
		return s.errorf("monitor-interval", "%s: how often hls measures the processors: needs %s hybrid and %s hls", s.name("mode"), s.name("policy"))
	case s.Mode == "gpu" && firstGiven("workers", "mem-policy", "placement", "pin") != "":
		return s.errorf(firstGiven("workers", "mem-policy", "placement", "pin"), "%s: %s gpu runs no CPU workers", s.name("mode"))
	case given("placement") && s.Cores != "":
		return s.errorf("placement", "%s: %s places the workers on the CPUs it lists", s.name("cores"))
	case !c.Pin && firstGiven("placement", "mem-policy") != "":
		return s.errorf(firstGiven("placement", "mem-policy"), "%s: the workers are not pinned (%s auto pins them where they are at most half the CPUs): give %[2]s true", s.name("pin"))
	}
	return nil
}

// place sets the placement part of c: the workers' CPUs (on the
// topology, by Placement or Cores), the rings' memory node and policy,
// the ingestion's CPU.
func (s EngineSettings) place(c *engine.Config, warn func(string)) error {
	mp, err := cpu.ParseMemPolicy(s.MemPolicy)
	if err != nil {
		return s.errorf("mem-policy", "%s: %v", err)
	}
	topo, err := cpu.Discover()
	if err != nil {
		warn(fmt.Sprintf("topology: %v; placement from the affinity mask", err))
	}
	var cores []int
	if s.Cores != "" {
		if cores, err = cpu.ParseCPUList(s.Cores); err != nil {
			return s.errorf("cores", "%s: %v", err)
		}
		// The engine pins worker i to the list's CPU i mod its length.
		if n := distinctCPUs(cores); n < s.Workers {
			warn(fmt.Sprintf("%s %s: %d workers on %d distinct CPU(s): they are pinned in turn, several to a CPU", s.name("cores"), s.Cores, s.Workers, n))
		}
	}
	if s.Placement != string(cpu.Compact) && s.Placement != string(cpu.Spread) {
		return s.errorf("placement", "%s %q: valid: compact, spread", s.Placement)
	}
	// Without --cores the engine places the workers (Config.Placement), on
	// the CPUs no other engine of the process holds, and puts the rings
	// on the first one's node.
	c.Placement, c.Topology = cpu.Placement(s.Placement), topo
	if mp != cpu.MemDefault && c.Pin && topo != nil {
		c.MemPolicy = mp
	}
	switch {
	case topo != nil && cores != nil:
		plan, err := topo.Plan(cpu.Placement(s.Placement), s.Workers, cores)
		if err != nil {
			return &SettingError{Setting: "placement", Msg: fmt.Sprintf("placement: %v", err)}
		}
		c.CPUs = plan
		if c.MemPolicy != cpu.MemDefault {
			c.MemNode = topo.MemoryNode(topo.NodeOfCPU(plan[0]))
		}
	case cores != nil:
		c.CPUs = cores
	}
	if s.IngestCore >= 0 {
		if !slices.Contains(cpu.AllowedCPUs(), s.IngestCore) {
			return s.errorf("ingest-core", "%s %d: not among the CPUs this process may use (%s)", s.IngestCore, cpu.FormatCPUList(cpu.AllowedCPUs()))
		}
		c.PinIngest, c.IngestCore = true, s.IngestCore
	}
	return nil
}

// gpuMode checks Mode, GPUDepth and GPUEmulate and sets the GPU part of
// c, all but the device (gpu.OpenForMode).
func (s EngineSettings) gpuMode(c *engine.Config) error {
	if s.GPUDepth < 1 {
		return s.errorf("gpu-pipeline-depth", "%s %d: must be >= 1", s.GPUDepth)
	}
	switch s.Mode {
	case "cpu":
		if s.GPUEmulate {
			return s.errorf("gpu-emulate", "%s: needs %[2]s gpu or %[2]s hybrid", s.name("mode"))
		}
		return nil
	case "gpu", "hybrid":
	default:
		return s.errorf("mode", "%s %q: valid: cpu, gpu, hybrid", s.Mode)
	}
	if !s.GPUEmulate {
		if err := gpu.Available(); err != nil {
			if errors.Is(err, gpu.ErrNotBuilt) {
				return s.errorf("mode", "%s %s: %v (or add %s to run the GPU path on the Go emulator, slowly)", s.Mode, err, s.name("gpu-emulate"))
			}
			return s.errorf("mode", "%s %s: %v", s.Mode, err)
		}
	}
	c.GPUOnly = s.Mode == "gpu"
	c.GPUDepth = s.GPUDepth
	return nil
}

// FitTaskSize is size made a whole number of every source's tuples (the
// largest such size not above it, at least one unit: TupleUnit); size
// itself for a program without sources.
func (p *Program) FitTaskSize(size int) int {
	if len(p.prog.Sources) == 0 {
		return size
	}
	unit := p.TupleUnit()
	if n := size / unit * unit; n > 0 {
		return n
	}
	return unit
}

// distinctCPUs is how many CPUs a CPU list names, each once.
func distinctCPUs(cores []int) int { return len(slices.Compact(slices.Sorted(slices.Values(cores)))) }
