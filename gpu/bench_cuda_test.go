//go:build cuda

package gpu_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/gpu"
)

// TestCUDABenchWorkloads: saber-hx bench's select, proj and groupby
// workloads on GPU 0: every task's device output is the emulator's
// (compileCUDA) and its result the CPU kernels'.
func TestCUDABenchWorkloads(t *testing.T) {
	dev, err := gpu.Open(0)
	require.NoError(t, err)
	defer func() { assert.NoError(t, dev.Close()) }()
	runBench(t, dev, 300000)
}
