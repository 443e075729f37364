//go:build !cuda

package device

// This build has no CUDA support: every entry point returns ErrNotBuilt.

const built = false

func devices() ([]Device, error) { return nil, ErrNotBuilt }

func available() error { return ErrNotBuilt }
