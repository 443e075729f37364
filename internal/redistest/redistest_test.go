package redistest

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

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

// TestPersistentRestart: a persistent server killed and restarted keeps
// what it acknowledged; one without persistence comes back empty.
func TestPersistentRestart(t *testing.T) {
	for _, persist := range []bool{true, false} {
		var s *Server
		if persist {
			s = StartPersistent(t)
		} else {
			s = Start(t)
		}
		require.NoError(t, command(s.Addr, "SET k v", "+OK"))
		s.Stop()
		s.Restart(t)
		if persist {
			assert.NoError(t, command(s.Addr, "GET k", "$1\r\nv"), "persistent")
		} else {
			assert.NoError(t, command(s.Addr, "GET k", "$-1"), "without persistence")
		}
	}
}

// command sends an inline command and wants a reply starting with want.
func command(addr, cmd, want string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(buf[:n]), want) {
		return fmt.Errorf("%s answered %q, want %q", cmd, buf[:n], want)
	}
	return nil
}
