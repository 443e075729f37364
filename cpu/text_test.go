package cpu

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 48 << 10: "48 KiB", 2 << 20: "2 MiB", 32000 << 20: "31.25 GiB", 1500: "1.46 KiB"} {
		assert.Equal(t, want, FormatBytes(n))
	}
}

func TestWriteText(t *testing.T) {
	topo := &Topology{Nodes: []Node{{ID: 0, CPUs: []int{0, 1}, MemBytes: 8 << 30}},
		CPUs: []CPUInfo{{ID: 0, Core: 0, Siblings: []int{0, 1}}, {ID: 1, Core: 0, Siblings: []int{0, 1}}},
		L1D:  32 << 10, L2: 1 << 20, L3: 32 << 20, Brand: "Some CPU"}
	var b bytes.Buffer
	topo.WriteText(&b)
	assert.Equal(t, "NUMA nodes: 1\n  node 0: 2 CPUs 0-1, memory 8 GiB\nCPUs: 2 allowed, on 1 physical cores\n"+
		"  node 0 socket 0 core 0: CPUs 0-1\nCaches (per instance): L1d 32 KiB, L2 1 MiB, L3 32 MiB\nCPU: unknown, Some CPU\nFeatures: unknown\n", b.String())
}
