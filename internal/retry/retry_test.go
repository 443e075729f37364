package retry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	errDown  = errors.New("connection refused")
	errFatal = errors.New("WRONGTYPE")
)

func isDown(err error) bool { return errors.Is(err, errDown) }

type lines struct {
	mu sync.Mutex
	l  []string
}

func (l *lines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.l = append(l.l, fmt.Sprintf(format, args...))
}

func (l *lines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.l...)
}

var fast = Policy{Timeout: time.Minute, Min: time.Microsecond, Max: 10 * time.Microsecond}

// failing fails its first n calls with err, then succeeds.
func failing(n int, err error) (write func(context.Context) error, calls *int) {
	calls = new(int)
	return func(context.Context) error {
		*calls++
		if *calls <= n {
			return err
		}
		return nil
	}, calls
}

func TestDoRetriesThroughAnOutage(t *testing.T) {
	var log lines
	o := NewOutage("redis x", log.logf, 0)
	write, calls := failing(5, errDown)
	require.NoError(t, Do(context.Background(), fast, o, isDown, write))
	assert.Equal(t, 6, *calls)
	assert.Equal(t, uint64(5), o.Retries())
	assert.False(t, o.Down())
	got := log.get()
	require.Len(t, got, 2, "the outage's first failure and its end, not one line per attempt: %q", got)
	assert.Equal(t, "redis x: connection refused; retrying for up to 1m0s", got[0])
	assert.True(t, strings.HasPrefix(got[1], "redis x: recovered after "), got[1])
	assert.True(t, strings.HasSuffix(got[1], "(5 attempts failed)"), got[1])

	// The next outage is reported anew.
	write, _ = failing(1, errDown)
	require.NoError(t, Do(context.Background(), fast, o, isDown, write))
	assert.Len(t, log.get(), 4)
	assert.Equal(t, uint64(6), o.Retries())
}

func TestDoFailsAtOnce(t *testing.T) {
	for name, c := range map[string]struct {
		p   Policy
		err error
	}{
		"not a connection error": {fast, errFatal},
		"no budget":              {Policy{}, errDown},
	} {
		t.Run(name, func(t *testing.T) {
			var log lines
			o := NewOutage("redis x", log.logf, 0)
			write, calls := failing(3, c.err)
			err := Do(context.Background(), c.p, o, isDown, write)
			assert.Equal(t, c.err, err, "the write's error as it is")
			assert.Equal(t, 1, *calls)
			assert.Zero(t, o.Retries())
			assert.Empty(t, log.get())
		})
	}
}

func TestDoGivesUp(t *testing.T) {
	var log lines
	o := NewOutage("redis x", log.logf, 0)
	p := Policy{Timeout: 20 * time.Millisecond, Min: time.Millisecond, Max: 2 * time.Millisecond}
	write, calls := failing(1<<30, errDown)
	err := Do(context.Background(), p, o, isDown, write)
	require.ErrorIs(t, err, errDown)
	assert.Contains(t, err.Error(), "gave up after retrying for")
	assert.Greater(t, *calls, 1)
	assert.Equal(t, uint64(*calls-1), o.Retries())
	assert.True(t, o.Down(), "an outage given up on has not ended")
}

func TestDoStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := Policy{Timeout: time.Hour, Min: time.Hour}
	done := make(chan error, 1)
	write, _ := failing(1<<30, errDown)
	go func() { done <- Do(ctx, p, nil, isDown, write) }()
	cancel()
	err := <-done
	require.ErrorIs(t, err, errDown)
	assert.ErrorIs(t, err, context.Canceled)
}

// TestOutageReportsEverySoOften: an outage that lasts is reported again
// every interval of its clock, not at each attempt.
func TestOutageReportsEverySoOften(t *testing.T) {
	var log lines
	o := NewOutage("kafka b", log.logf, 10*time.Second)
	now := time.Unix(0, 0)
	o.now = func() time.Time { return now }
	for range 30 { // an attempt a second for 30 s
		o.Failed(errDown, 0)
		now = now.Add(time.Second)
	}
	o.Recovered()
	o.Recovered() // no outage: nothing
	assert.Equal(t, []string{
		"kafka b: connection refused; retrying",
		"kafka b: still failing after 10s (11 attempts): connection refused",
		"kafka b: still failing after 20s (21 attempts): connection refused",
		"kafka b: recovered after 30s (30 attempts failed)",
	}, log.get())

	// An error that names the client already is not named twice.
	o.Failed(fmt.Errorf("kafka b: %w", errDown), time.Second)
	assert.Equal(t, "kafka b: connection refused; retrying for up to 1s", log.get()[4])
	now = now.Add(time.Second)
	o.Recovered()
	assert.Equal(t, "kafka b: recovered after 1s (1 attempt failed)", log.get()[5])
}

// TestDoBoundsAnAttempt: an attempt that hangs (a dial to a server gone
// silent) ends with the budget, not after it.
func TestDoBoundsAnAttempt(t *testing.T) {
	calls := 0
	write := func(ctx context.Context) error {
		calls++
		if calls == 1 {
			return errDown
		}
		<-ctx.Done()
		return fmt.Errorf("dial: %w", ctx.Err())
	}
	p := Policy{Timeout: 50 * time.Millisecond, Min: time.Millisecond, Max: time.Millisecond}
	err := Do(context.Background(), p, nil, isDown, write)
	require.ErrorIs(t, err, errDown, "the failure retried, not the budget's deadline")
	assert.Contains(t, err.Error(), "gave up after retrying for")
	assert.Equal(t, 2, calls)
}
