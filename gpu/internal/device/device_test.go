//go:build !cuda

package device

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWithoutCUDAEveryEntryPointRefuses(t *testing.T) {
	assert.False(t, Built())
	d, err := Devices()
	assert.Nil(t, d)
	assert.ErrorIs(t, err, ErrNotBuilt)
	assert.ErrorIs(t, Available(), ErrNotBuilt)
	assert.Contains(t, ErrNotBuilt.Error(), "-tags cuda")
	assert.Contains(t, ErrNotBuilt.Error(), "build/cuda-env.sh")
}
