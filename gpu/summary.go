package gpu

import (
	"slices"

	"github.com/saber-hx/saber-hx/scheduler"
)

// KindName is the name of the GPU's processor kind among the scheduler's
// kinds (engine.GPUKindName, which this package does not import).
const KindName = "gpu"

// Summary is the GPU part of a run's summary (the command line's
// processors summary, --json), present when a GPU kind exists.
type Summary struct {
	GPU      string `json:"gpu"`          // the device's name: "cuda:0 (...)", or "emulator"
	Emulated bool   `json:"gpu_emulated"` // --gpu-emulate: not GPU figures
	Depth    int    `json:"gpu_pipeline_depth"`
	// CannotRun are the queries (scheduler queries: a window join's inputs
	// are two) that the GPU has no kernel for: they ran on the CPU workers
	// only.
	CannotRun []string `json:"gpu_cannot_run"`
	// Fallback are the tasks the GPU kind took but ran on its CPU kernel
	// (a pane outside the range its program's output covers).
	Fallback uint64 `json:"gpu_fallback_tasks"`

	// Per task, medians over the device's tasks (Timings): the GPU's copy
	// in, kernels and copy out, from CUDA events on the task's stream (zero
	// on the emulator), and the host's time enqueueing a task (its staging
	// copy included) and blocked waiting for one.
	CopyInUsP50  float64 `json:"gpu_copy_in_us_p50"`
	KernelUsP50  float64 `json:"gpu_kernel_us_p50"`
	CopyOutUsP50 float64 `json:"gpu_copy_out_us_p50"`
	SubmitUsP50  float64 `json:"gpu_submit_us_p50"`
	WaitUsP50    float64 `json:"gpu_wait_us_p50"`
	// Times has the p50, p90, p99 and mean of each, in µs.
	Times map[string]Quantiles `json:"gpu_times_us"`
	// TimedTasks: the tasks the device ran (and timed), warm-up included.
	TimedTasks uint64 `json:"gpu_timed_tasks"`
	// Sync: how the host waits for the device (blocking, spin, ...).
	Sync string `json:"gpu_sync"`
	// DirectTasks were copied to the device from the ring (registered
	// host memory), StagedTasks through a page-locked staging copy;
	// OneTripTasks came back in one copy and wait, TwoTripTasks needed a
	// second (hashed groups with a large bound).
	DirectTasks  uint64 `json:"gpu_direct_tasks"`
	StagedTasks  uint64 `json:"gpu_staged_tasks"`
	OneTripTasks uint64 `json:"gpu_one_trip_tasks"`
	TwoTripTasks uint64 `json:"gpu_two_trip_tasks"`
}

// Summarize returns the GPU part of a run's summary (nil where dev is
// nil): dev is the device the engine ran on (a Device, or an engine.GPU
// holding one), sched the engine's scheduling stats and queries its
// scheduler queries (engine.StreamNames); fallback is the engine's
// Stats.GPUFallbackTasks summed over the queries, emulated whether dev is
// the emulator standing in for a GPU, depth the pipeline depth the engine
// ran.
func Summarize(dev interface{ Name() string }, sched scheduler.Stats, queries []string, fallback uint64, emulated bool, depth int) *Summary {
	if dev == nil {
		return nil
	}
	g := &Summary{GPU: dev.Name(), Emulated: emulated, Depth: depth, CannotRun: []string{}, Fallback: fallback}
	if tm, ok := TimingsOf(dev); ok {
		g.CopyInUsP50, g.KernelUsP50, g.CopyOutUsP50 = tm.CopyIn.P50, tm.Kernel.P50, tm.CopyOut.P50
		g.SubmitUsP50, g.WaitUsP50 = tm.Submit.P50, tm.Wait.P50
		g.Times = map[string]Quantiles{"copy_in": tm.CopyIn, "kernel": tm.Kernel, "copy_out": tm.CopyOut, "submit": tm.Submit, "wait": tm.Wait}
		g.TimedTasks, g.Sync = tm.Tasks, tm.Sync
		g.DirectTasks, g.StagedTasks, g.OneTripTasks, g.TwoTripTasks = tm.DirectTasks, tm.StagedTasks, tm.OneTrip, tm.TwoTrips
	}
	if k := slices.Index(sched.Kinds, KindName); k >= 0 && sched.Runnable != nil {
		for q, ks := range sched.Runnable {
			if !ks[k] && q < len(queries) {
				g.CannotRun = append(g.CannotRun, queries[q])
			}
		}
	}
	return g
}
