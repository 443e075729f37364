package main

import "github.com/saber-hx/saber-hx/ysb"

// gcSample is the runtime's garbage-collection counters, so that a
// benchmark can say whether its measured interval ran a GC cycle (issue
// #15 asks for none in steady state) and how much it allocated.
type gcSample struct {
	cycles, allocBytes uint64
}

func readGC() gcSample {
	c, a := ysb.GCMetrics()
	return gcSample{cycles: c, allocBytes: a}
}

// since is what ran between from and g.
func (g gcSample) since(from gcSample) gcSample {
	return gcSample{cycles: g.cycles - from.cycles, allocBytes: g.allocBytes - from.allocBytes}
}
