//go:build cuda

package device

// These tests need a machine with an NVIDIA GPU and driver: cu's init exits
// the test binary without one. Build the binary elsewhere with
//   eval "$(build/cuda-env.sh)"; go test -c -tags cuda -o gpu.test ./gpu/
// and run ./gpu.test -test.v on the GPU machine.

import (
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCUDABuildEnumeratesDevices(t *testing.T) {
	assert.True(t, Built())
	require.NoError(t, Available())
	devs, err := Devices()
	require.NoError(t, err)
	require.NotEmpty(t, devs)
	for i, d := range devs {
		t.Logf("gpu %d: %q, %d MiB, sm_%d%d, pci %s, node %d", d.Index, d.Name, d.MemBytes>>20, d.ComputeMajor, d.ComputeMinor, d.PCIBusID, d.NUMANode)
		assert.Equal(t, i, d.Index)
		assert.NotEmpty(t, d.Name)
		assert.Positive(t, d.MemBytes)
		assert.GreaterOrEqual(t, d.ComputeMajor, 3)
		assert.Regexp(t, `^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.0$`, d.PCIBusID)
		assert.GreaterOrEqual(t, d.NUMANode, -1)
		if _, err := os.Stat(sysPCIDevices + "/" + d.PCIBusID); err == nil {
			assert.Equal(t, numaNodeOf(sysPCIDevices, d.PCIBusID), d.NUMANode)
		}
	}
}

func TestPinAndUnpinMmapMemory(t *testing.T) {
	const n = 4 << 20
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	defer syscall.Munmap(b)
	require.NoError(t, PinHostMemory(b))
	// A second registration of the same range is refused, with the
	// driver's reason.
	err = PinHostMemory(b)
	var ce *CUDAError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "cuMemHostRegister", ce.Op)
	assert.Contains(t, ce.Name, "ALREADY_REGISTERED")
	b[0], b[n-1] = 1, 2
	require.NoError(t, UnpinHostMemory(b))
	// Unregistering twice fails: it was unpinned.
	assert.Error(t, UnpinHostMemory(b))
	// And it can be pinned again.
	require.NoError(t, PinHostMemory(b))
	require.NoError(t, UnpinHostMemory(b))
	assert.Error(t, PinHostMemory(nil))
}

func TestPinAndUnpinGoHeapMemory(t *testing.T) {
	b := make([]byte, 1<<20)
	require.NoError(t, PinHostMemory(b))
	require.NoError(t, UnpinHostMemory(b))
}

func TestAllocPinned(t *testing.T) {
	const n = 8<<20 + 3
	b, free, err := AllocPinned(n)
	require.NoError(t, err)
	require.Len(t, b, n)
	for i := range b {
		b[i] = byte(i)
	}
	for i := 0; i < n; i += 4099 {
		require.Equal(t, byte(i), b[i])
	}
	// Already page-locked: registering it again is refused.
	assert.Error(t, PinHostMemory(b))
	require.NoError(t, free())
	require.NoError(t, free(), "free is idempotent")
	_, _, err = AllocPinned(0)
	assert.Error(t, err)
}
