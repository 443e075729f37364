package redissink

import (
	"context"
	"net"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/redistest"
	"github.com/saber-hx/saber-hx/internal/testenv"
)

// counter is a hook that counts what the client sends: single commands,
// pipelines, and the commands in them; not the commands go-redis sends
// on a new connection (HELLO, CLIENT SETINFO ...).
type counter struct{ singles, pipelines, piped atomic.Int64 }

func connInit(cmd redis.Cmder) bool { return cmd.Name() == "hello" || cmd.Name() == "client" }

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !connInit(cmd) {
			c.singles.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		n := 0
		for _, cmd := range cmds {
			if !connInit(cmd) {
				n++
			}
		}
		if n > 0 {
			c.pipelines.Add(1)
			c.piped.Add(int64(n))
		}
		return next(ctx, cmds)
	}
}

func (c *counter) reset() { c.singles.Store(0); c.pipelines.Store(0); c.piped.Store(0) }

func newClient(t *testing.T, addr string) (*redis.Client, *counter) {
	cl := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = cl.Close() })
	require.NoError(t, cl.Ping(context.Background()).Err())
	h := &counter{}
	cl.AddHook(h)
	return cl, h
}

// cm1Row is a row of (window_start, cat, cnt).
type cm1Row struct {
	start int64
	cat   string
	cnt   int64
}

func (r cm1Row) AppendColumn(dst []byte, col int) []byte {
	switch col {
	case 0:
		return strconv.AppendInt(dst, r.start, 10)
	case 1:
		return append(dst, r.cat...)
	}
	return strconv.AppendInt(dst, r.cnt, 10)
}

func TestHash(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	cl, hook := newClient(t, srv.Addr)
	h, err := NewHash(ctx, HashConfig{Client: cl, KeyTemplate: "cm1:{window_start}:{cat}", Columns: []string{"window_start", "cat", "cnt"}, Fields: []string{"cnt", "window_start"}})
	require.NoError(t, err)
	defer h.Close()

	rows := []cm1Row{{0, "a", 3}, {0, "b", 1}, {1000, "a", 7}, {-1000, "x:y", 0}}
	for _, r := range rows {
		h.Add(r)
	}
	assert.Equal(t, len(rows), h.Buffered())
	hook.reset()
	require.NoError(t, h.Flush(ctx))
	assert.Equal(t, int64(1), hook.pipelines.Load(), "one pipeline per flush")
	assert.Equal(t, int64(len(rows)), hook.piped.Load(), "one HSET per row")
	assert.Equal(t, int64(0), hook.singles.Load())
	assert.Equal(t, 0, h.Buffered())

	// An empty flush sends nothing.
	hook.reset()
	require.NoError(t, h.Flush(ctx))
	assert.Equal(t, int64(0), hook.pipelines.Load()+hook.singles.Load())

	for _, r := range rows {
		got, err := cl.HGetAll(ctx, "cm1:"+strconv.FormatInt(r.start, 10)+":"+r.cat).Result()
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"cnt": strconv.FormatInt(r.cnt, 10), "window_start": strconv.FormatInt(r.start, 10)}, got)
	}
	keys, err := cl.Keys(ctx, "*").Result()
	require.NoError(t, err)
	assert.Len(t, keys, len(rows))

	// Every column as a field when Fields is nil; a second write of a key is absolute.
	h2, err := NewHash(ctx, HashConfig{Addr: srv.Addr, KeyTemplate: "k{cat}", Columns: []string{"window_start", "cat", "cnt"}})
	require.NoError(t, err)
	defer h2.Close()
	h2.Add(cm1Row{5, "q", 9})
	require.NoError(t, h2.Flush(ctx))
	h2.Add(cm1Row{5, "q", 9})
	require.NoError(t, h2.Flush(ctx))
	got, err := cl.HGetAll(ctx, "kq").Result()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"window_start": "5", "cat": "q", "cnt": "9"}, got)
}

func TestHashConfigErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cols := []string{"window_start", "cat", "cnt"}
	for _, tc := range []struct {
		tmpl   string
		fields []string
		want   string
	}{
		{"cm1:{window}:{cat}", nil, `unknown column "window" (columns: window_start, cat, cnt)`},
		{"cm1:{cat", nil, `'{' at byte 4 is not closed`},
		{"cm1:cat}", nil, `'}' without '{' at byte 7`},
		{"", nil, "empty key template"},
		{"{cat}", []string{"nope"}, `field "nope" is not a column`},
	} {
		_, err := NewHash(ctx, HashConfig{Addr: "127.0.0.1:1", KeyTemplate: tc.tmpl, Columns: cols, Fields: tc.fields})
		if assert.Error(t, err, tc.tmpl) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
	_, err := NewHash(ctx, HashConfig{KeyTemplate: "{a}", Columns: []string{"a", "a"}})
	assert.ErrorContains(t, err, `column "a" named twice`)
}

// TestUnreachable: the error names the address; the sink is not built.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = NewYSB(ctx, YSBConfig{Addr: addr, Client: quick(t, addr)})
	assert.ErrorContains(t, err, "redis "+addr+": ping")
	_, err = NewHash(ctx, HashConfig{Addr: addr, Client: quick(t, addr), KeyTemplate: "{a}", Columns: []string{"a"}})
	assert.ErrorContains(t, err, "redis "+addr+": ping")
}

// readYSB reads campaign c's windows back as the original checker does:
// the list of window starts, and each window's hash through the campaign.
func readYSB(t *testing.T, cl *redis.Client, c [16]byte) (starts []string, counts map[string]string, updated map[string]string) {
	ctx := context.Background()
	list, err := cl.HGet(ctx, uuidText(c), "windows").Result()
	require.NoError(t, err)
	starts, err = cl.LRange(ctx, list, 0, -1).Result()
	require.NoError(t, err)
	counts, updated = map[string]string{}, map[string]string{}
	for _, w := range starts {
		id, err := cl.HGet(ctx, uuidText(c), w).Result()
		require.NoError(t, err)
		m, err := cl.HGetAll(ctx, id).Result()
		require.NoError(t, err)
		counts[w], updated[w] = m["seen_count"], m["time_updated"]
		assert.Len(t, m, 2)
	}
	return starts, counts, updated
}

func TestYSB(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	cl, hook := newClient(t, srv.Addr)
	now := time.UnixMilli(1_700_000_123_456)
	y, err := NewYSB(ctx, YSBConfig{Client: cl, Now: func() time.Time { return now }})
	require.NoError(t, err)
	c1, c2 := [16]byte{1, 2, 3}, [16]byte{0xff, 0xab}
	y.Add(c1, 0, 5)
	y.Add(c1, 10000, 7)
	y.Add(c2, 10000, 1)
	y.Add(c1, 10000, 8) // replaces 7
	assert.Equal(t, 3, y.Buffered())
	hook.reset()
	require.NoError(t, y.Flush(ctx))
	assert.Equal(t, int64(2), hook.pipelines.Load(), "a lookup pipeline and a write pipeline")
	assert.Equal(t, int64(0), hook.singles.Load())

	starts, counts, updated := readYSB(t, cl, c1)
	assert.ElementsMatch(t, []string{"0", "10000"}, starts)
	assert.Equal(t, map[string]string{"0": "5", "10000": "8"}, counts)
	assert.Equal(t, map[string]string{"0": "1700000123456", "10000": "1700000123456"}, updated)
	starts, counts, _ = readYSB(t, cl, c2)
	assert.Equal(t, []string{"10000"}, starts)
	assert.Equal(t, map[string]string{"10000": "1"}, counts)
	assert.Equal(t, "ffab0000-0000-0000-0000-000000000000", uuidText(c2))

	// Known windows: one pipeline, one HSET per window.
	now = now.Add(time.Second)
	y.Add(c1, 10000, 9)
	hook.reset()
	require.NoError(t, y.Flush(ctx))
	assert.Equal(t, int64(1), hook.pipelines.Load())
	assert.Equal(t, int64(3), hook.piped.Load(), "MULTI, one HSET per window, EXEC")
	_, counts, updated = readYSB(t, cl, c1)
	assert.Equal(t, map[string]string{"0": "5", "10000": "9"}, counts)
	assert.Equal(t, "1700000124456", updated["10000"])
	require.NoError(t, y.Close())

	// A restart: a new sink over the same server keeps the ids and pushes
	// no window twice; the count written again is the same.
	id0, err := cl.HGet(ctx, uuidText(c1), "0").Result()
	require.NoError(t, err)
	y2, err := NewYSB(ctx, YSBConfig{Addr: srv.Addr})
	require.NoError(t, err)
	defer y2.Close()
	y2.Add(c1, 0, 5)
	y2.Add(c1, 20000, 2)
	require.NoError(t, y2.Flush(ctx))
	starts, counts, _ = readYSB(t, cl, c1)
	assert.ElementsMatch(t, []string{"0", "10000", "20000"}, starts)
	assert.Equal(t, map[string]string{"0": "5", "10000": "9", "20000": "2"}, counts)
	id0b, err := cl.HGet(ctx, uuidText(c1), "0").Result()
	require.NoError(t, err)
	assert.Equal(t, id0, id0b)
	n, err := cl.SCard(ctx, "campaigns").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(0), n, "the sink writes no campaigns set")
}

// TestYSBFailedFlushKeeps: a flush to a stopped server fails naming the
// address and keeps the windows for the next flush.
func TestYSBFailedFlushKeeps(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	cl := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: 200 * time.Millisecond})
	defer cl.Close()
	y, err := NewYSB(ctx, YSBConfig{Client: cl})
	require.NoError(t, err)
	y.Add([16]byte{1}, 0, 3)
	srv.Stop()
	fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err = y.Flush(fctx)
	assert.ErrorContains(t, err, "redis "+srv.Addr)
	assert.Equal(t, 1, y.Buffered())
}

func TestRunFlushes(t *testing.T) {
	srv := redistest.Start(t)
	before := runtime.NumGoroutine()
	ctx := context.Background()
	cl, _ := newClient(t, srv.Addr)
	y, err := NewYSB(ctx, YSBConfig{Client: cl})
	require.NoError(t, err)
	y.Add([16]byte{7}, 0, 4)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- y.Run(rctx, 10*time.Millisecond) }()
	require.Eventually(t, func() bool {
		return cl.HGet(ctx, uuidText([16]byte{7}), "windows").Err() == nil
	}, 10*time.Second, 5*time.Millisecond)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	_, counts, _ := readYSB(t, cl, [16]byte{7})
	assert.Equal(t, map[string]string{"0": "4"}, counts)
	require.NoError(t, cl.Close())
	testenv.NoGoroutinesLeft(t, before)
}

func TestNewUUID(t *testing.T) {
	t.Parallel()
	a, b := newUUID(), newUUID()
	assert.NotEqual(t, a, b)
	assert.Len(t, a, 36)
	assert.Equal(t, byte('4'), a[14])
}
