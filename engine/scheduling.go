package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/saber-hx/saber-hx/scheduler"
)

// checkGPU finds, with a GPU, the streams it has no kernel for
// (Stream.gpuErr): in gpu mode that is an error naming the query and the
// operator; in hybrid mode they are returned, to be run on the CPU only.
func (e *Engine) checkGPU() (cpuOnly []*Stream, err error) {
	if e.cfg.GPU == nil {
		return nil, nil
	}
	for _, s := range e.streams {
		s.gpuErr = e.cfg.GPU.Supports(s.plan)
		if s.gpuErr == nil {
			continue
		}
		if e.cfg.GPUOnly {
			return nil, fmt.Errorf("gpu mode: query %q cannot run on the GPU: %s; run it in hybrid mode (--mode hybrid), where the CPU workers run the queries the GPU cannot", s.win.Query, s.gpuReason())
		}
		cpuOnly = append(cpuOnly, s)
	}
	return cpuOnly, nil
}

// gpuReason is why the GPU cannot run the stream's query, without the
// query's name (GPU.Supports's errors start with it).
func (s *Stream) gpuReason() string {
	if s.gpuErr == nil {
		return ""
	}
	return strings.TrimPrefix(s.gpuErr.Error(), fmt.Sprintf("query %q: ", s.win.Query))
}

// newQueue makes the scheduler's queue: one kind per processor group, one
// query per stream (a window join's two inputs are bound together).
//
// With a GPU, the GPU is the last kind (the only one in gpu mode), with one
// processor: its rate in the throughput matrix is the whole device's (see
// gpuWorker.report), so hls must not divide its backlog further. A query
// the GPU has no kernel for is not runnable by it (scheduler's Runnable).
func (e *Engine) newQueue(capacity int) (scheduler.Queue, error) {
	groups := e.cfg.cpuGroups()
	qc := scheduler.Config{
		Policy: e.cfg.Policy, Queries: len(e.streams), Capacity: capacity,
		SwitchThreshold: e.cfg.SwitchThreshold, MonitorInterval: e.cfg.MonitorInterval,
		Nodes: len(e.nodeIndex),
	}
	for _, g := range groups {
		if g.Workers < 1 {
			return nil, fmt.Errorf("processor group %q: %d workers, need at least 1", g.Name, g.Workers)
		}
		if e.cfg.GPU != nil && g.Name == GPUKindName {
			return nil, fmt.Errorf("processor group %q: the name of the GPU kind", g.Name)
		}
		qc.KindNames = append(qc.KindNames, g.Name)
		qc.Workers = append(qc.Workers, g.Workers)
	}
	if e.cfg.GPU != nil {
		e.gpuKind = len(qc.KindNames)
		qc.KindNames = append(qc.KindNames, GPUKindName)
		qc.Workers = append(qc.Workers, 1)
		if len(groups) > 0 {
			for _, s := range e.streams {
				row := make([]bool, len(qc.KindNames))
				for k := range row {
					row[k] = k != e.gpuKind || s.gpuErr == nil
				}
				qc.Runnable = append(qc.Runnable, row)
			}
		}
	}
	qc.Kinds = len(qc.KindNames)
	if len(e.cfg.Static) > 0 {
		qc.Static = map[int]int{}
		for name, kind := range e.cfg.Static {
			k := slices.Index(qc.KindNames, kind)
			if k < 0 {
				return nil, fmt.Errorf("static binding %s=%s: no processor kind %q (valid: %s)", name, kind, kind, strings.Join(qc.KindNames, ", "))
			}
			found := false
			for _, s := range e.streams {
				if s.specName() == name {
					if k == e.gpuKind && s.gpuErr != nil {
						return nil, fmt.Errorf("static binding %s=%s: query %q has no GPU kernel (%s); bind it to a CPU kind", name, kind, s.win.Query, s.gpuReason())
					}
					qc.Static[s.id] = k
					found = true
				}
			}
			if !found {
				return nil, fmt.Errorf("static binding %s=%s: no query %q (valid: %s)", name, kind, name, strings.Join(e.specNames(), ", "))
			}
		}
	}
	return scheduler.NewQueue(qc)
}

// Scheduling returns the scheduler's counters: tasks and bytes per kind and
// scheduler query, and the throughput matrix. The scheduler's queries are
// the streams, not the specs (a window join has two: its left and right
// inputs, named join.left and join.right): StreamNames names them, in the
// order of these counters. Everything else counts by spec (see Spec).
func (e *Engine) Scheduling() scheduler.Stats { return e.queue.Stats() }

// StreamNames are the names of the scheduler's queries (the streams), in
// the order of Scheduling's counters: a query's name, or for a window join
// its name with ".left" and ".right".
func (e *Engine) StreamNames() []string {
	n := make([]string, len(e.streams))
	for i, s := range e.streams {
		n[i] = s.win.Query
	}
	return n
}

// SpecNames are the names of the specs' queries and joins, in order: the
// index space of Stream, CloseAll's Stats and RingNode.
func (e *Engine) SpecNames() []string { return e.specNames() }
