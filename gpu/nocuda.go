//go:build !cuda

package offload

import (
	"fmt"

	"github.com/saber-hx/saber-hx/gpu"
)

// open: this build has no CUDA support.
func open(dev int) (Device, error) {
	return nil, fmt.Errorf("offload: open GPU %d: %w", dev, gpu.ErrNotBuilt)
}
