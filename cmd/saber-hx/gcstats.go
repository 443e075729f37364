package main

import "runtime/metrics"

// gcSample reads the runtime's garbage-collection counters, so that a
// benchmark can say whether its measured interval ran a GC cycle (issue
// #15 asks for none in steady state) and how much it allocated.
type gcSample struct {
	cycles, allocBytes uint64
}

var gcMetricNames = [...]string{"/gc/cycles/total:gc-cycles", "/gc/heap/allocs:bytes"}

func readGC() gcSample {
	var s [len(gcMetricNames)]metrics.Sample
	for i, n := range gcMetricNames {
		s[i].Name = n
	}
	metrics.Read(s[:])
	var g gcSample
	if s[0].Value.Kind() == metrics.KindUint64 {
		g.cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		g.allocBytes = s[1].Value.Uint64()
	}
	return g
}

// since is what ran between from and g.
func (g gcSample) since(from gcSample) gcSample {
	return gcSample{cycles: g.cycles - from.cycles, allocBytes: g.allocBytes - from.allocBytes}
}
