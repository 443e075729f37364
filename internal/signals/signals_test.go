package signals

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWatch: the first SIGTERM is reported and cancels the context;
// Stop without a signal cancels it too, with no signal recorded.
func TestWatch(t *testing.T) {
	got := make(chan syscall.Signal, 1)
	w := Start(func(s syscall.Signal) { got <- s })
	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGTERM))
	select {
	case s := <-got:
		assert.Equal(t, syscall.SIGTERM, s)
	case <-time.After(10 * time.Second):
		t.Fatal("no signal")
	}
	<-w.Context().Done()
	assert.Equal(t, syscall.SIGTERM, w.Signal())
	w.Stop()
	assert.Equal(t, "SIGTERM", Name(w.Signal()))
	assert.Equal(t, "SIGTERM", w.Name())
	assert.Equal(t, "SIGINT", Name(syscall.SIGINT))
	err := w.Err(true)
	assert.Equal(t, Interrupted{Signal: syscall.SIGTERM, Summarized: true}, err)
	assert.EqualError(t, err, "interrupted by SIGTERM")
	assert.Equal(t, 143, err.(Interrupted).ExitCode())
	assert.Equal(t, Interrupted{Signal: syscall.SIGTERM}, w.Err(false))

	w = Start(func(syscall.Signal) { t.Error("no signal was sent") })
	w.Stop()
	<-w.Context().Done()
	assert.Zero(t, w.Signal())
	assert.NoError(t, w.Err(true))
	assert.Empty(t, w.Name())
}
