//go:build !cuda

package gpu

import (
	"fmt"

	"github.com/saber-hx/saber-hx/gpu/internal/device"
)

// open: this build has no CUDA support.
func open(dev int) (Device, error) {
	return nil, fmt.Errorf("gpu: open GPU %d: %w", dev, device.ErrNotBuilt)
}
