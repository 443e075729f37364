// Package gpu is where saber-hx's GPU processor will live: the CUDA device
// runtime (gorgonia.org/cu, behind the `cuda` build tag) and the
// copy-in / execute / copy-out pipeline that returns the same window
// fragments as the CPU kernels.
//
// None of that exists yet. This build has no GPU support: every entry point
// returns ErrNotBuilt, which says so and how a GPU build will be made. The
// engine therefore runs CPU workers only.
package gpu

import "errors"

// ErrNotBuilt is returned by every entry point of a build without CUDA.
var ErrNotBuilt = errors.New("saber-hx was built without CUDA support: GPU offload needs a build with `-tags cuda`, which this version does not provide yet")

// Device describes one GPU.
type Device struct {
	Index    int
	Name     string
	MemBytes int64
	NUMANode int // -1 where unknown
}

// Devices lists the GPUs this build can use.
func Devices() ([]Device, error) { return nil, ErrNotBuilt }

// Available reports whether GPU processors can be started, and why not.
func Available() error { return ErrNotBuilt }
