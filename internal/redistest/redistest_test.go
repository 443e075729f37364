package redistest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStart(t *testing.T) {
	s := Start(t)
	require.NoError(t, ping(s.Addr))
}
