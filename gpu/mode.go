package gpu

import "fmt"

// OpenForMode opens the device of a run's processors mode (the command
// line's --mode and --gpu-emulate): none in "cpu" mode (a nil Device and
// no error); in "gpu" and "hybrid" modes GPU 0 (Open), or the emulator
// (NewEmulator) with emulate. Without the cuda build tag, GPU 0's error
// wraps ErrNotBuilt. The caller closes the device (after the engine that
// ran on it).
func OpenForMode(mode string, emulate bool) (Device, error) {
	switch mode {
	case "cpu":
		return nil, nil
	case "gpu", "hybrid":
	default:
		return nil, fmt.Errorf("mode %q: valid: cpu, gpu, hybrid", mode)
	}
	if emulate {
		return NewEmulator(), nil
	}
	return Open(0)
}
