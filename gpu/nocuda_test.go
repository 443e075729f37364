//go:build !cuda

package gpu

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/saber-hx/saber-hx/gpu/internal/device"
)

func TestOpenWithoutCUDASaysHowToBuild(t *testing.T) {
	d, err := Open(0)
	assert.Nil(t, d)
	assert.ErrorIs(t, err, device.ErrNotBuilt)
	assert.ErrorContains(t, err, "-tags cuda")
}
