package main

import (
	"errors"
	"fmt"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/gpu"
	"github.com/saber-hx/saber-hx/scheduler"
)

// The GPU device of --mode gpu|hybrid is opened here, and only here.

const (
	gpuEmulateUsage = "run the GPU kind of --mode gpu|hybrid on the Go emulator of the GPU kernels (any build, no GPU needed): " +
		"slow, for checking the GPU path on a machine without a GPU; figures taken with it are not GPU figures"
	gpuDepthUsage = "gpu and hybrid modes: tasks in flight on the GPU at once (>= 1), each on a slot of its own " +
		"(a CUDA stream with its pinned staging and device buffers), so that copies and kernels of several tasks overlap"
)

// checkGPUMode checks --mode, --gpu-pipeline-depth and --gpu-emulate and
// sets the GPU part of c, all but the device (openGPU).
func (f *engineFlags) checkGPUMode(c *engine.Config) error {
	if f.gpuDepth < 1 {
		return usagef("--gpu-pipeline-depth %d: must be >= 1", f.gpuDepth)
	}
	switch f.mode {
	case "cpu":
		if f.gpuEmulate {
			return usagef("--gpu-emulate: needs --mode gpu or --mode hybrid")
		}
		return nil
	case "gpu", "hybrid":
	default:
		return usagef("--mode %q: valid: cpu, gpu, hybrid", f.mode)
	}
	if !f.gpuEmulate {
		if err := gpu.Available(); err != nil {
			if errors.Is(err, gpu.ErrNotBuilt) {
				return usagef("--mode %s: %v (or add --gpu-emulate to run the GPU path on the Go emulator, slowly)", f.mode, err)
			}
			return usagef("--mode %s: %v", f.mode, err)
		}
	}
	c.GPUOnly = f.mode == "gpu"
	c.GPUDepth = f.gpuDepth
	return nil
}

// openGPU opens the device of --mode gpu|hybrid into cfg.GPU
// (gpu.OpenForMode: GPU 0, or gpu's emulator with --gpu-emulate). The
// engine never closes the device: the caller does, with the returned
// function, after the engine's CloseAll (or a failed start). In cpu mode it
// opens nothing.
func (f *engineFlags) openGPU(cfg *engine.Config) (closeGPU func() error, err error) {
	dev, err := gpu.OpenForMode(f.mode, f.gpuEmulate)
	switch {
	case errors.Is(err, gpu.ErrNotBuilt):
		return nil, usagef("--mode %s: %v", f.mode, err)
	case err != nil:
		return nil, fmt.Errorf("--mode %s: %w", f.mode, err)
	case dev == nil:
		return func() error { return nil }, nil
	}
	cfg.GPU = dev
	return func() error {
		if err := dev.Close(); err != nil {
			return fmt.Errorf("close GPU %s: %w", dev.Name(), err)
		}
		return nil
	}, nil
}

// closeInto runs close (deferred by a command) and reports its error
// through *err, unless the command already failed.
func closeInto(err *error, close func() error) {
	if cerr := close(); cerr != nil && *err == nil {
		*err = cerr
	}
}

// cpuWorkers is the number of CPU workers that run: none in gpu mode.
func (f *engineFlags) cpuWorkers() int {
	if f.mode == "gpu" {
		return 0
	}
	return f.workers
}

// gpuSummary is the GPU part of a processors summary, present when a GPU
// kind exists.
type gpuSummary = gpu.Summary

// summarizeGPU returns the GPU part of the summary (nil without a GPU):
// fallback is the engine's Stats.GPUFallbackTasks summed over the queries.
func summarizeGPU(cfg engine.Config, s scheduler.Stats, queries []string, fallback uint64, emulated bool) *gpuSummary {
	depth := cfg.GPUDepth
	if depth == 0 {
		depth = engine.DefaultGPUDepth
	}
	return gpu.Summarize(cfg.GPU, s, queries, fallback, emulated, depth)
}

// gpuTasks is the tasks the GPU kind ran, of all tasks.
func gpuTasks(p *processorsSummary) (gpuTasks, all uint64) {
	for k, per := range p.Tasks {
		for _, n := range per {
			all += n
			if p.Kinds[k] == engine.GPUKindName {
				gpuTasks += n
			}
		}
	}
	return gpuTasks, all
}

// gpuLine is the human summary's line on the GPU ("" without one).
func gpuLine(p *processorsSummary) string {
	if p == nil || p.gpuSummary == nil {
		return ""
	}
	g := p.gpuSummary
	ran, all := gpuTasks(p)
	s := fmt.Sprintf("  %s mode, GPU %s, pipeline depth %d: %d of %d tasks on the GPU, %d of them on its CPU fallback", p.Mode, g.GPU, g.Depth, ran, all, g.Fallback)
	if len(g.CannotRun) > 0 {
		s += fmt.Sprintf("; no GPU kernel for %v (CPU only)", g.CannotRun)
	}
	if g.TimedTasks > 0 {
		s += fmt.Sprintf("\n  per task (p50): GPU copy in %.1f µs, kernels %.1f µs, copy out %.1f µs; host submit %.1f µs, wait %.1f µs (%s sync; %d of %d tasks copied from the ring)",
			g.CopyInUsP50, g.KernelUsP50, g.CopyOutUsP50, g.SubmitUsP50, g.WaitUsP50, g.Sync, g.DirectTasks, g.DirectTasks+g.StagedTasks)
	}
	if g.Emulated {
		s += "\n  (--gpu-emulate: the GPU is emulated in Go; these are not GPU figures)"
	}
	return s + "\n"
}
