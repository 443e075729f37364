//go:build cuda

package offload

import "errors"

// open opens CUDA device dev (work in progress).
func open(dev int) (Device, error) {
	return nil, errors.New("offload: the CUDA device is not implemented yet")
}
