package kafkasink

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/security"
)

// flushedSink is a sink over a broker that can be stopped, its first
// record flushed.
func flushedSink(t *testing.T) (*kafkatest.Cluster, *Sink) {
	c := kafkatest.StartRestartable(t, 1, "out")
	s, err := NewSink(context.Background(), SinkConfig{Brokers: []string{c.Addr}, Topic: "out",
		clientOpts: []kgo.Opt{kgo.MetadataMinAge(100 * time.Millisecond)}})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	s.Append(nil, []byte("first"))
	require.NoError(t, s.Flush(context.Background()))
	return c, s
}

// boundedFlush flushes a record under a context of bound, stop run once
// the flush began: the broker stays down. The flush must return an error
// once its context ends (the pipeline bounds each flush by the retry
// budget plus 30 s, docs/operations.md): one that does not return holds
// the sink, and the engine, for ever. The error is returned.
func boundedFlush(t *testing.T, c *kafkatest.Cluster, s *Sink, stop func()) error {
	s.Append(nil, []byte("second"))
	done := make(chan error, 1)
	const bound = time.Second
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		done <- s.Flush(ctx)
	}()
	stop()
	select {
	case err := <-done:
		t.Logf("Flush returned after %v: %v", time.Since(start), err)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		return err
	case <-time.After(bound + 15*time.Second):
		t.Errorf("Flush, bounded by a context of %v, has not returned after %v (the broker still down)", bound, time.Since(start))
		c.Restart(t) // let it finish
		t.Logf("after the restart, Flush returned: %v", <-done)
		return nil
	}
}

// TestFlushBoundedByItsContextBrokerDown: the broker is down before the
// flush begins and stays down: Flush returns once its context ends, and
// the sink stays failed (its client closed).
func TestFlushBoundedByItsContextBrokerDown(t *testing.T) {
	t.Parallel()
	c, s := flushedSink(t)
	c.Stop()
	if err := boundedFlush(t, c, s, func() {}); err != nil {
		s.Append(nil, []byte("third"))
		assert.Equal(t, err, s.Flush(context.Background()), "the sink stays failed: its client is closed")
	}
}

// TestFlushBoundedByItsContextWhenBrokerDiesMidRequest: the broker goes
// down while a produce request is in flight and stays down.
func TestFlushBoundedByItsContextWhenBrokerDiesMidRequest(t *testing.T) {
	t.Parallel()
	c, s := flushedSink(t)
	// Hold the next produce request at the broker, then take the
	// broker down with it in flight.
	arrived := make(chan struct{}, 1)
	c.ControlKey(kmsg.Produce.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		c.SleepControl(func() { select {} }) // woken by Close
		return nil, nil, false
	})
	boundedFlush(t, c, s, func() {
		<-arrived
		c.Stop()
	})
}

// trackingListener remembers the connections it accepted, to cut them.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *trackingListener) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

// TestFlushRefusedMidRun: the broker starts refusing the sink's
// credentials mid-run (the connections cut, the password no longer
// accepted). The Flush must end with a *security.Error well within its
// context, whether the broker closes the connection (kfake) or answers
// SASL_AUTHENTICATION_FAILED (Apache Kafka).
func TestFlushRefusedMidRun(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"close", "kerr"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var tl *trackingListener
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "out"), kfake.EnableSASL(),
				kfake.Superuser("SCRAM-SHA-256", "writer", "pw-secret"),
				kfake.ListenFn(func(network, addr string) (net.Listener, error) {
					l, err := net.Listen(network, addr)
					if err != nil {
						return nil, err
					}
					tl = &trackingListener{Listener: l}
					return tl, nil
				}))
			require.NoError(t, err)
			defer c.Close()
			var refuse atomic.Bool
			c.ControlKey(kmsg.SASLAuthenticate.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				if !refuse.Load() {
					return nil, nil, false
				}
				if mode == "close" {
					return nil, errors.New("invalid sasl"), true
				}
				resp := r.(*kmsg.SASLAuthenticateRequest).ResponseKind().(*kmsg.SASLAuthenticateResponse)
				resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
				msg := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
				resp.ErrorMessage = &msg
				return resp, nil, true
			})
			k := security.Kafka{Protocol: security.SASLPlaintext, Mechanism: security.ScramSHA256, Username: "writer", Password: security.NewSecret("pw-secret")}
			s, err := NewSink(context.Background(), SinkConfig{Brokers: c.ListenAddrs(), Topic: "out", Security: k})
			require.NoError(t, err)
			defer s.Close()
			s.Append(nil, []byte("before"))
			require.NoError(t, s.Flush(context.Background()))

			refuse.Store(true)
			tl.cut()
			time.Sleep(200 * time.Millisecond)
			s.Append(nil, []byte("after"))
			start := time.Now()
			done := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				done <- s.Flush(ctx)
			}()
			select {
			case err := <-done:
				t.Logf("after %v: %v", time.Since(start), err)
				require.Error(t, err)
				assert.True(t, security.IsFailure(err), "not a *security.Error: %v", err)
			case <-time.After(20 * time.Second):
				t.Errorf("Flush (context 5 s) has not returned after %v", time.Since(start))
				refuse.Store(false)
				select {
				case err := <-done:
					t.Logf("once accepted again: %v", err)
				case <-time.After(20 * time.Second):
					t.Logf("still not returned")
				}
			}
		})
	}
}
