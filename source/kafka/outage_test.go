package kafka

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/source"
)

// readN reads s until it has produced n tuples.
func readN(t *testing.T, s *Source, n int) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dst := make([]byte, 64*s.TupleSize())
	var out []byte
	for len(out) < n*s.TupleSize() {
		m, err := s.FillSome(ctx, dst)
		out = append(out, dst[:m]...)
		require.NoError(t, err, "after %d tuples of %d", len(out)/s.TupleSize(), n)
	}
	return out
}

// TestBrokerRestart: the broker is shut down while a source reads from
// it, and restarted on its port once the source has seen it go (its logs
// and the group's offsets kept; down 2 s more in the long run, 0.2 s in
// the default one): the source goes on from where it was, every record
// read once, none lost, the group and the static assignment alike.
func TestBrokerRestart(t *testing.T) {
	t.Parallel()
	for _, group := range []string{"g", ""} {
		t.Run("group="+group, func(t *testing.T) {
			t.Parallel()
			cluster := kafkatest.StartRestartable(t, 2, "t")
			cl := producer(t, cluster.Addr)
			data := genRecords(func(n int) int { return n / 2 }, 2, 200)
			var first, second [][]rec
			for _, p := range data {
				first, second = append(first, p[:len(p)/2]), append(second, p[len(p)/2:])
			}
			produce(t, cl, "t", interleave(first, 0, nil), false)
			var mu sync.Mutex
			var log []string
			logf := func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				log = append(log, fmt.Sprintf(format, args...))
			}
			s := openT(t, Config{Brokers: []string{cluster.Addr}, Topic: "t", Group: group, Decoder: jsonDecoder(t, source.Fail),
				TimeOffset: 0, IdleTimeout: 100 * time.Millisecond, Logger: logf})
			got := readN(t, s, len(allIDs(first)))
			s.Done(s.Stats().Position, 1<<62)

			cluster.Stop()
			logged := func() string {
				mu.Lock()
				defer mu.Unlock()
				return strings.Join(log, "\n")
			}
			require.Eventually(t, func() bool { return strings.Contains(logged(), "kafka source t: broker 127.0.0.1:") },
				30*time.Second, 5*time.Millisecond, "the outage reported")
			// The broker stays down a while after the source saw it go:
			// 2 s in the long run, a moment in the default one.
			time.Sleep(time.Duration(testenv.Scale(200, 2000)) * time.Millisecond)
			cluster.Restart(t)
			produce(t, cl, "t", interleave(second, 0, nil), false)
			got = append(got, readN(t, s, len(allIDs(second)))...)
			assert.Equal(t, allIDs(data), sortedIDs(got), "every record once")
			all := logged()
			assert.Contains(t, all, "kafka source t: broker 127.0.0.1:", "the outage reported")
			assert.Contains(t, all, "kafka source t: recovered after ", "its end reported")
		})
	}
}
