package redistest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStart(t *testing.T) {
	s := Start(t)
	require.NoError(t, ping(s.Addr))
}

func TestStopAndRestart(t *testing.T) {
	s := Start(t)
	addr := s.Addr
	s.Stop()
	assert.Error(t, ping(addr), "a stopped server does not answer")
	s.Stop() // a second Stop does nothing
	s.Restart(t)
	assert.Equal(t, addr, s.Addr, "the same port")
	require.NoError(t, ping(s.Addr))
	s.Restart(t) // a running server is stopped first
	require.NoError(t, ping(s.Addr))
}
