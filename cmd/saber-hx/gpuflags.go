package main

import (
	"errors"
	"fmt"

	"github.com/saber-hx/saber-hx/pipeline"
)

// The GPU flags' help and the summary's line on the GPU; the device of
// --mode gpu|hybrid is opened by begin (engineflags.go), and only there.

const (
	gpuEmulateUsage = "run the GPU kind of --mode gpu|hybrid on the Go emulator of the GPU kernels (any build, no GPU needed): " +
		"slow, for checking the GPU path on a machine without a GPU; figures taken with it are not GPU figures"
	gpuDepthUsage = "gpu and hybrid modes: tasks in flight on the GPU at once (>= 1), each on a slot of its own " +
		"(a CUDA stream with its pinned staging and device buffers), so that copies and kernels of several tasks overlap"
)

// closeInto runs close (deferred by a command) and reports its error
// through *err, beside the command's own (a profile not written after
// an interrupted run is said, and the exit status stays the signal's).
func closeInto(err *error, close func() error) {
	if cerr := close(); cerr != nil {
		*err = errors.Join(*err, cerr)
	}
}

// gpuLine is the human summary's line on the GPU ("" without one).
func gpuLine(p *pipeline.Processors) string {
	if p == nil || p.Summary == nil {
		return ""
	}
	g := p.Summary
	ran, all := p.GPUTasks()
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
