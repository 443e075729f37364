package pipeline

import (
	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/gpu"
	"github.com/saber-hx/saber-hx/scheduler"
)

// Processors is the scheduling part of a run's summary: the mode, per
// processor kind the tasks and bytes run per query, the final throughput
// matrix, and with a GPU kind its part (gpu.Summary).
type Processors struct {
	Mode    string      `json:"mode"` // cpu, gpu or hybrid
	Kinds   []string    `json:"kinds"`
	Queries []string    `json:"queries"`
	Tasks   [][]uint64  `json:"tasks"`              // [kind][query]
	Bytes   [][]uint64  `json:"bytes"`              // [kind][query]
	Matrix  [][]float64 `json:"matrix_bytes_per_s"` // [query][kind]; 0: not measured
	// Per-node queues (pinned workers on several NUMA nodes): tasks taken
	// on the worker's own node, and stolen from another.
	LocalTasks  uint64 `json:"local_tasks,omitempty"`
	StolenTasks uint64 `json:"stolen_tasks,omitempty"`
	*gpu.Summary
}

// SummarizeProcessors summarizes the scheduling s of an engine of cfg:
// queries are the scheduler's (engine.StreamNames); fallback is the
// engine's GPUFallbackTasks over every query; emulated says the GPU is
// the emulator.
func SummarizeProcessors(s scheduler.Stats, queries []string, cfg engine.Config, emulated bool, fallback uint64) Processors {
	depth := cfg.GPUDepth
	if depth == 0 {
		depth = engine.DefaultGPUDepth
	}
	return Processors{Mode: cfg.Mode(), Kinds: s.Kinds, Queries: queries, Tasks: s.Tasks, Bytes: s.Bytes, Matrix: s.Matrix,
		LocalTasks: s.Local, StolenTasks: s.Stolen, Summary: gpu.Summarize(cfg.GPU, s, queries, fallback, emulated, depth)}
}

// GPUTasks is the tasks the GPU kind ran, of all tasks.
func (p *Processors) GPUTasks() (gpuTasks, all uint64) {
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

// GPUFallbackTasks is the engine's GPUFallbackTasks over every query.
func (s *Summary) GPUFallbackTasks() uint64 {
	var n uint64
	for _, st := range s.Stats {
		n += st.GPUFallbackTasks
	}
	return n
}
