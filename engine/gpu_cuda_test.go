//go:build cuda

package engine

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/gpu"
)

// TestCUDAModesMatchReference is TestGPUModesMatchReference on GPU 0
// instead of the emulator: gpu and hybrid modes, every policy, depths 1
// and 4, against the reference evaluator (needs a GPU: a cuda-tagged test
// binary does not start without one).
func TestCUDAModesMatchReference(t *testing.T) {
	parallel(t)
	dev, err := gpu.Open(0)
	require.NoError(t, err)
	defer func() { require.NoError(t, dev.Close()) }()
	t.Logf("device %s", dev.Name())
	testModesMatchReference(t, func() gpu.Device { return sharedDevice{dev} }, 3)
}

// sharedDevice is a device whose Close is left to its opener.
type sharedDevice struct{ gpu.Device }

func (sharedDevice) Close() error { return nil }
