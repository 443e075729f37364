package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/cpu"
	"github.com/saber-hx/saber-hx/gpu"
)

func TestTopologyText(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := cli(t, "topology")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Empty(t, stderr)

	want, err := cpu.Discover()
	require.NoError(t, err)
	for _, s := range []string{
		fmt.Sprintf("NUMA nodes: %d\n", len(want.Nodes)),
		fmt.Sprintf("  node %d: ", want.Nodes[0].ID),
		fmt.Sprintf("CPUs: %d allowed, on ", len(want.CPUs)),
		fmt.Sprintf("core %d: CPUs %s\n", want.CPUs[0].Core, cpu.FormatCPUList(want.CPUs[0].Siblings)),
		"Caches (per instance): L1d ",
		"CPU: ",
		"Features: ",
	} {
		assert.Contains(t, stdout, s)
	}
	if gpu.Built() {
		assert.Contains(t, stdout, "GPUs: ")
	} else {
		assert.Contains(t, stdout, "GPUs: none (this build has no CUDA support)\n")
	}
}

func TestTopologyJSON(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := cli(t, "topology", "--json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Empty(t, stderr)
	require.Equal(t, 1, strings.Count(stdout, "\n"), "one line: %q", stdout)

	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &raw))
	for _, k := range []string{"nodes", "cpus", "vendor", "brand", "features", "l1d_bytes", "l2_bytes", "l3_bytes"} {
		assert.Contains(t, raw, k)
	}

	dec := json.NewDecoder(bytes.NewReader([]byte(stdout)))
	dec.DisallowUnknownFields()
	var got cpu.Topology
	require.NoError(t, dec.Decode(&got))
	require.NotEmpty(t, got.Nodes)
	require.NotEmpty(t, got.CPUs)
	want, err := cpu.Discover()
	require.NoError(t, err)
	assert.Equal(t, *want, got, "the JSON is the whole topology")
}

func TestTopologyUsage(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"-h", "--help"} {
		code, stdout, stderr := cli(t, "topology", h)
		assert.Equal(t, 0, code, h)
		assert.Empty(t, stderr, h)
		assert.Contains(t, stdout, "Usage:\n  saber-hx topology [--json]", h)
		assert.Contains(t, stdout, "-json", h)
	}
	for _, args := range [][]string{{"--bogus"}, {"extra"}, {"--json=maybe"}} {
		code, stdout, stderr := cli(t, append([]string{"topology"}, args...)...)
		assert.Equal(t, 2, code, "%v", args)
		assert.Empty(t, stdout, "%v", args)
		assert.Contains(t, stderr, "saber-hx: ", "%v", args)
	}

	code, stdout, _ := cli(t, "help")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "saber-hx topology [--json]")
}
