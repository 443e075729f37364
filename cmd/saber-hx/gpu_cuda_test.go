//go:build cuda

package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCUDAModes: on a GPU machine (a cuda-tagged test binary does not start
// without one), --mode gpu and hybrid run on GPU 0 and validate.
func TestCUDAModes(t *testing.T) {
	for _, mode := range []string{"gpu", "hybrid"} {
		code, stdout, stderr := cli(t, "ysb", "--mode", mode, "--duration", "2s", "--warmup", "500ms", "--json")
		require.Equal(t, 0, code, "stderr: %s", stderr)
		s, _ := parseSummary(t, stdout)
		assert.True(t, s.Validated, mode)
		p, _ := decodeProcessors(t, stdout)
		require.NotNil(t, p.GPU)
		assert.True(t, strings.HasPrefix(*p.GPU, "cuda:0"), *p.GPU)
		require.NotNil(t, p.Emulated)
		assert.False(t, *p.Emulated)
		t.Logf("%s: %s", mode, lastLine(stdout))
	}
	code, stdout, stderr := cli(t, append([]string{"bench", "agg,join", "--mode", "gpu", "--validate", "--validate-tuples", "20000", "--duration", "60s", "--json"}, benchSmallFor("gpu")...)...)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.True(t, decodeBench(t, stdout).Validated)
}
