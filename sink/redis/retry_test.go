package redissink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/redistest"
	"github.com/saber-hx/saber-hx/internal/testenv"
)

type logLines struct {
	mu sync.Mutex
	l  []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.l = append(l.l, fmt.Sprintf(format, args...))
}

func (l *logLines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.l...)
}

// quick is the client through which a test of a server going away
// reaches it by default: one that dials once per command and does not
// retry the command, so that an attempt on a stopped server fails at
// once and what runs is the sink's own retrying, which the tests check.
// Under SABER_HX_LONG_TESTS=1 it is nil: the sink's own client, with
// go-redis's defaults (5 dials per command, 3 retries: about 3 s an
// attempt on a server that is down).
func quick(t *testing.T, addr string) *redis.Client {
	if testenv.Full() {
		return nil
	}
	cl := redis.NewClient(&redis.Options{Addr: addr, DialerRetries: 1, MaxRetries: -1})
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// fastRetry shortens a sink's backoff, so that a test does not wait on it.
func fastRetry(r *retrier) {
	r.policy.Min, r.policy.Max = time.Millisecond, 20*time.Millisecond
}

// outageDuring runs flush while srv is killed, restarts srv once the sink
// has reported the outage, and returns flush's error.
func outageDuring(t *testing.T, srv *redistest.Server, log *logLines, flush func(context.Context) error) error {
	t.Helper()
	srv.Stop()
	done := make(chan error, 1)
	go func() { done <- flush(context.Background()) }()
	require.Eventually(t, func() bool { return len(log.get()) > 0 }, 30*time.Second, time.Millisecond, "the outage reported")
	select {
	case err := <-done:
		t.Fatalf("the flush ended while the server was down: %v", err)
	default:
	}
	srv.Restart(t)
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("the flush did not end once the server was back")
		return nil
	}
}

// TestHashRetriesThroughARestart: a flush while the server is down waits
// for it, holding its rows, and writes them once it is back; the outage
// is reported once when it began and once when it ended, and the retries
// counted. What the server acknowledged before is kept (persistence), so
// the contents equal a run's without the restart.
func TestHashRetriesThroughARestart(t *testing.T) {
	t.Parallel()
	srv := redistest.StartPersistent(t)
	ctx := context.Background()
	var log logLines
	h, err := NewHash(ctx, HashConfig{Addr: srv.Addr, Client: quick(t, srv.Addr), KeyTemplate: "w:{window_start}:{cat}", Columns: []string{"window_start", "cat", "cnt"},
		RetryTimeout: time.Minute, Logger: log.logf})
	require.NoError(t, err)
	defer h.Close()
	fastRetry(&h.retry)
	h.Add(cm1Row{0, "a", 1})
	require.NoError(t, h.Flush(ctx))
	h.Add(cm1Row{0, "a", 2}) // the same row, its value grown
	h.Add(cm1Row{100, "b", 5})

	require.NoError(t, outageDuring(t, srv, &log, h.Flush))
	assert.Zero(t, h.Buffered())
	assert.NotZero(t, h.Retries())
	got := log.get()
	require.Len(t, got, 2, "%q", got)
	assert.Contains(t, got[0], "redis "+srv.Addr+": ")
	assert.Contains(t, got[0], "retrying for up to 1m0s")
	assert.Contains(t, got[1], "redis "+srv.Addr+": recovered after ")

	cl, _ := newClient(t, srv.Addr)
	keys, err := cl.Keys(ctx, "*").Result()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"w:0:a", "w:100:b"}, keys)
	for k, want := range map[string]string{"w:0:a": "2", "w:100:b": "5"} {
		v, err := cl.HGet(ctx, k, "cnt").Result()
		require.NoError(t, err)
		assert.Equal(t, want, v, k)
	}
}

// TestYSBRetriesThroughARestart: as for Hash, with the ids looked up
// again by each attempt: every window once in its campaign's list.
func TestYSBRetriesThroughARestart(t *testing.T) {
	t.Parallel()
	srv := redistest.StartPersistent(t)
	ctx := context.Background()
	var log logLines
	y, err := NewYSB(ctx, YSBConfig{Addr: srv.Addr, Client: quick(t, srv.Addr), RetryTimeout: time.Minute, Logger: log.logf})
	require.NoError(t, err)
	defer y.Close()
	fastRetry(&y.retry)
	c := [16]byte{9}
	y.Add(c, 0, 3)
	require.NoError(t, y.Flush(ctx))
	y.Add(c, 0, 4)
	y.Add(c, 10000, 1)

	require.NoError(t, outageDuring(t, srv, &log, y.Flush))
	assert.Zero(t, y.Buffered())
	assert.NotZero(t, y.Retries())
	cl, _ := newClient(t, srv.Addr)
	starts, counts, _ := readYSB(t, cl, c)
	assert.ElementsMatch(t, []string{"0", "10000"}, starts, "each window once")
	assert.Equal(t, map[string]string{"0": "4", "10000": "1"}, counts)
}

// TestRetryGivesUp: a server that does not come back fails the flush
// once the budget is spent, the rows kept, the error naming the server.
func TestRetryGivesUp(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	h, err := NewHash(ctx, HashConfig{Addr: srv.Addr, Client: quick(t, srv.Addr), KeyTemplate: "{a}", Columns: []string{"a"}, RetryTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	defer h.Close()
	fastRetry(&h.retry)
	h.Add(cm1Row{cat: "x"})
	srv.Stop()
	err = h.Flush(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "redis "+srv.Addr)
	assert.Contains(t, err.Error(), "gave up after retrying for")
	assert.True(t, connectionError(err), "the last failure retried, a connection's: %v", err)
	assert.Equal(t, 1, h.Buffered(), "the row kept")
}

// TestNoRetry: RetryTimeout 0 fails the flush on the first error, as the
// sinks did before retrying.
func TestNoRetry(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	var log logLines
	h, err := NewHash(ctx, HashConfig{Addr: srv.Addr, Client: quick(t, srv.Addr), KeyTemplate: "{a}", Columns: []string{"a"}, Logger: log.logf})
	require.NoError(t, err)
	defer h.Close()
	h.Add(cm1Row{cat: "x"})
	srv.Stop()
	err = h.Flush(ctx)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "attempts")
	assert.Zero(t, h.Retries())
	assert.Empty(t, log.get())
}

// TestReplyErrorNotRetried: WRONGTYPE (a key of another type) fails the
// flush at once, whatever the budget.
func TestReplyErrorNotRetried(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	cl, _ := newClient(t, srv.Addr)
	require.NoError(t, cl.LPush(ctx, "7", "a list").Err())
	h, err := NewHash(ctx, HashConfig{Addr: srv.Addr, KeyTemplate: "{a}", Columns: []string{"a"}, RetryTimeout: time.Hour})
	require.NoError(t, err)
	defer h.Close()
	h.Add(cm1Row{start: 7}) // the key "7"
	err = h.Flush(ctx)
	require.ErrorContains(t, err, "WRONGTYPE")
	assert.Zero(t, h.Retries())
}

func TestConnectionError(t *testing.T) {
	t.Parallel()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "x"}}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{refused, true},
		{fmt.Errorf("redis x: write 3 rows: %w", syscall.ECONNREFUSED), true},
		{syscall.ECONNRESET, true},
		{io.EOF, true},
		{io.ErrUnexpectedEOF, true},
		{redis.ErrPoolTimeout, true},
		{proto("LOADING Redis is loading the dataset in memory"), true},
		{proto("BUSY Redis is busy running a script"), true},
		{proto("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{proto("OOM command not allowed when used memory > 'maxmemory'"), false},
		{proto("NOAUTH Authentication required."), false},
		{redis.ErrClosed, false},
		{context.Canceled, false},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), false},
		{errors.New("something else"), false},
	} {
		assert.Equal(t, c.want, connectionError(c.err), "%v", c.err)
	}
}

// proto is a reply error as go-redis returns it (a redis.Error).
func proto(msg string) error {
	srv := replyServer(msg)
	cl := redis.NewClient(&redis.Options{Addr: srv, MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	defer cl.Close()
	err := cl.Do(context.Background(), "PING").Err()
	var re redis.Error
	if !errors.As(err, &re) {
		panic(fmt.Sprintf("reply %q: not a redis.Error: %v", msg, err))
	}
	return err
}

// replyServer answers every command with the error msg, on loopback.
func replyServer(msg string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go func() {
		c, err := l.Accept()
		l.Close()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			if _, err := c.Write([]byte("-" + msg + "\r\n")); err != nil {
				return
			}
		}
	}()
	return l.Addr().String()
}
