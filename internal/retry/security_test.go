package retry

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/redistest"
	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/internal/tlstest"
)

// TestRefusedIsNotRetried: a write refused by a real server (a wrong
// password, a certificate from another authority) is returned after its
// first attempt, as a *security.Error naming the client, even with an
// hour of retry budget and a transient that would retry anything; the
// outage is neither begun nor counted. A server that is down still is
// retried.
func TestRefusedIsNotRetried(t *testing.T) {
	t.Parallel()
	pki, other := tlstest.New(t), tlstest.New(t)
	srv := redistest.StartSecure(t, redistest.Secure{Password: "right", TLS: pki})
	for name, opts := range map[string]*redis.Options{
		"wrong password": {Addr: srv.Addr, Password: "wrong", TLSConfig: pki.ClientConfig(false)},
		"wrong CA":       {Addr: srv.Addr, Password: "right", TLSConfig: other.ClientConfig(false)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts.TLSConfig.ServerName = "localhost"
			cl := redis.NewClient(opts)
			defer cl.Close()
			var mu sync.Mutex
			var logs []string
			o := NewOutage("redis "+srv.Addr, func(f string, a ...any) {
				mu.Lock()
				defer mu.Unlock()
				logs = append(logs, f)
			}, 0)
			calls := 0
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := Do(ctx, Policy{Timeout: time.Hour, Min: time.Millisecond}, o, func(error) bool { return true }, func(ctx context.Context) error {
				calls++
				return cl.HSet(ctx, "k", "f", "v").Err()
			})
			require.Error(t, err)
			assert.Equal(t, 1, calls)
			var se *security.Error
			require.ErrorAs(t, err, &se)
			assert.True(t, strings.HasPrefix(err.Error(), "redis "+srv.Addr+": "), err.Error())
			assert.NotContains(t, err.Error(), "right")
			assert.False(t, o.Down())
			assert.Zero(t, o.Retries())
			mu.Lock()
			assert.Empty(t, logs)
			mu.Unlock()
		})
	}
	t.Run("down is retried", func(t *testing.T) {
		t.Parallel()
		s := redistest.Start(t)
		s.Stop()
		cl := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		defer cl.Close()
		calls := 0
		err := Do(context.Background(), Policy{Timeout: 300 * time.Millisecond, Min: 10 * time.Millisecond, Max: 20 * time.Millisecond}, nil,
			func(error) bool { return true }, func(ctx context.Context) error {
				calls++
				return cl.Ping(ctx).Err()
			})
		require.Error(t, err)
		assert.Greater(t, calls, 1)
		assert.False(t, security.Failed(err))
	})
}

// TestKafkaTransientRefused: a refused connection is not transient, nor
// is it reported as an outage by BrokerHook.
func TestKafkaTransientRefused(t *testing.T) {
	t.Parallel()
	pki, other := tlstest.New(t), tlstest.New(t)
	srv := redistest.StartSecure(t, redistest.Secure{TLS: pki})
	cfg := other.ClientConfig(false)
	cfg.ServerName = "localhost"
	cl := redis.NewClient(&redis.Options{Addr: srv.Addr, TLSConfig: cfg})
	defer cl.Close()
	err := cl.Ping(context.Background()).Err()
	require.Error(t, err)
	assert.False(t, KafkaTransient(err), "%v", err)
	o := NewOutage("kafka", nil, 0)
	BrokerHook{O: o}.OnBrokerConnect(kgo.BrokerMetadata{Host: "127.0.0.1", Port: 1}, 0, nil, err)
	assert.False(t, o.Down())
	assert.Zero(t, o.Retries())
}
