//go:build cuda

package gpu

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"

	"github.com/saber-hx/saber-hx/gpu/internal/device"
)

// TestCUDACopyBandwidth logs the host-to-device and device-to-host copy
// bandwidth of GPU 0 from page-locked memory, for the copy sizes of tasks
// (256 KiB) up to 64 MiB: the yardstick of the GPU processor's figures in
// docs/gpu.md (a task's bytes cross PCIe once; the GPU can go no faster
// than this for a query that reads whole tuples). It checks the bytes
// arrive; it asserts no speed.
func TestCUDACopyBandwidth(t *testing.T) {
	d := openGPU(t).(*cudaDevice)
	const maxBytes = 64 << 20
	host, free, err := device.AllocPinned(maxBytes)
	require.NoError(t, err)
	defer func() { require.NoError(t, free()) }()
	for i := range host {
		host[i] = byte(i * 7)
	}
	require.NoError(t, d.do(func() error {
		dev, err := cu.MemAlloc(maxBytes)
		if err != nil {
			return err
		}
		defer cu.MemFree(dev)
		for size := int64(256 << 10); size <= maxBytes; size *= 4 {
			reps := int(max(4, (1<<30)/size))
			start := time.Now()
			for range reps {
				if err := cu.MemcpyHtoD(dev, unsafe.Pointer(&host[0]), size); err != nil {
					return err
				}
			}
			h2d := time.Since(start)
			start = time.Now()
			for range reps {
				if err := cu.MemcpyDtoH(unsafe.Pointer(&host[0]), dev, size); err != nil {
					return err
				}
			}
			d2h := time.Since(start)
			gb := float64(size) * float64(reps) / 1e9
			t.Logf("%6d KiB: host to device %.1f GB/s, device to host %.1f GB/s (%d copies each)", size>>10, gb/h2d.Seconds(), gb/d2h.Seconds(), reps)
		}
		return nil
	}))
	for i := range 1 << 16 {
		require.Equal(t, byte(i*7), host[i], "byte %d came back changed", i)
	}
}
