//go:build !cuda

package offload

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/saber-hx/saber-hx/gpu"
)

func TestOpenWithoutCUDASaysHowToBuild(t *testing.T) {
	d, err := Open(0)
	assert.Nil(t, d)
	assert.ErrorIs(t, err, gpu.ErrNotBuilt)
	assert.ErrorContains(t, err, "-tags cuda")
}
