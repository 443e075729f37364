package offload

import (
	"errors"

	"github.com/saber-hx/saber-hx/kernels"
)

// NewEmulator returns a Device that runs the GPU programs' algorithms in Go,
// one goroutine per in-flight slot, producing the device-format outputs
// (the same buffers the CUDA kernels write) and turning them into results
// with the same host code as the CUDA device. It exists so that everything
// the GPU path shares with the CPU (layouts, pane ranges, fragment
// unpacking, the fallback, pipelining) is tested without a GPU.
func NewEmulator() Device { return &emulator{} }

type emulator struct{}

func (*emulator) Name() string { return "emulator" }

func (*emulator) Compile(p *kernels.Plan, depth int) (Program, error) {
	if err := Supported(p); err != nil {
		return nil, err
	}
	return nil, errors.New("offload: emulator: not implemented yet")
}

func (*emulator) Close() error { return nil }
