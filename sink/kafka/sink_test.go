package kafkasink

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/testenv"
)

func rows(n, batch int) (keys, values []string) {
	for i := range n {
		keys = append(keys, fmt.Sprintf("k%d", i%7))
		values = append(values, fmt.Sprintf(`{"window_start": %d, "batch": %d, "count": %d}`, i/batch*1000, i/batch, i))
	}
	return keys, values
}

func write(t *testing.T, addr, topic string, keys, values []string, batch int) {
	s, err := NewSink(context.Background(), SinkConfig{Brokers: []string{addr}, Topic: topic})
	require.NoError(t, err)
	for i := range values {
		s.Append([]byte(keys[i]), []byte(values[i]))
		if (i+1)%batch == 0 {
			require.NoError(t, s.Flush(context.Background()))
			assert.Zero(t, s.Buffered())
		}
	}
	require.NoError(t, s.Flush(context.Background()))
	require.NoError(t, s.Close())
}

// TestSinkRoundTrip: what the sink wrote, read back with kgo: every row,
// with its key, in order (one partition).
func TestSinkRoundTrip(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 1, "out")
	keys, values := rows(250, 40)
	write(t, c.Addr, "out", keys, values, 40)

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr), kgo.ConsumeTopics("out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var gotK, gotV []string
	for len(gotV) < len(values) {
		fs := cl.PollFetches(ctx)
		require.NoError(t, fs.Err0())
		fs.EachRecord(func(r *kgo.Record) {
			gotK = append(gotK, string(r.Key))
			gotV = append(gotV, string(r.Value))
		})
	}
	assert.Equal(t, keys, gotK)
	assert.Equal(t, values, gotV)
}

// TestSinkKcat: what the sink wrote, read by kcat (an independent client).
func TestSinkKcat(t *testing.T) {
	t.Parallel()
	kafkatest.Kcat(t)
	c := kafkatest.Start(t, 1, "kc")
	keys, values := rows(60, 25)
	write(t, c.Addr, "kc", keys, values, 25)
	out := kafkatest.RunKcat(t, nil, "-C", "-b", c.Addr, "-t", "kc", "-e", "-q", "-f", "%k\t%s\n")
	var want strings.Builder
	for i := range values {
		fmt.Fprintf(&want, "%s\t%s\n", keys[i], values[i])
	}
	assert.Equal(t, want.String(), string(out))
}

// TestSinkError: a record that cannot be written is Flush's error, naming
// the topic.
func TestSinkError(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1)) // no auto-creation
	require.NoError(t, err)
	defer c.Close()
	s, err := NewSink(context.Background(), SinkConfig{Brokers: c.ListenAddrs(), Topic: "nowhere"})
	require.NoError(t, err)
	defer s.Close()
	s.Append(nil, []byte("x"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = s.Flush(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kafka sink nowhere")
	assert.Zero(t, s.Buffered())

	_, err = NewSink(context.Background(), SinkConfig{Topic: "x"})
	assert.ErrorContains(t, err, "no brokers")
	_, err = NewSink(context.Background(), SinkConfig{Brokers: c.ListenAddrs()})
	assert.ErrorContains(t, err, "no topic")
}

// TestAppendNoAlloc: once its buffers have grown, Append allocates nothing.
func TestAppendNoAlloc(t *testing.T) {
	c := kafkatest.Start(t, 1, "a")
	s, err := NewSink(context.Background(), SinkConfig{Brokers: []string{c.Addr}, Topic: "a"})
	require.NoError(t, err)
	defer s.Close()
	k, v := []byte("key"), []byte(`{"a": 1, "b": "some text"}`)
	fill := func() {
		for range 100 {
			s.Append(k, v)
		}
		s.arena, s.spans = s.arena[:0], s.spans[:0]
	}
	fill()
	assert.Zero(t, testing.AllocsPerRun(20, fill))
}

func BenchmarkSink(b *testing.B) {
	c := kafkatest.Start(b, 1, "bench")
	s, err := NewSink(context.Background(), SinkConfig{Brokers: []string{c.Addr}, Topic: "bench"})
	require.NoError(b, err)
	defer s.Close()
	v := []byte(`{"window_start": 1700000000000, "campaign_id": "3f2a9c1e-0b7d-4c5e-9a8f-1d2e3f4a5b6c", "count": 1234}`)
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Append(nil, v)
		if i%1000 == 999 {
			require.NoError(b, s.Flush(context.Background()))
		}
	}
	require.NoError(b, s.Flush(context.Background()))
}

// TestFlushThroughBrokerRestart: a Flush while the broker is down waits
// (kgo retries) and returns once it is back, the outage reported; every
// record is in the topic once.
func TestFlushThroughBrokerRestart(t *testing.T) {
	t.Parallel()
	c := kafkatest.StartRestartable(t, 1, "out")
	var mu sync.Mutex
	var log []string
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		log = append(log, fmt.Sprintf(format, args...))
	}
	logged := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(log, "\n")
	}
	cfg := SinkConfig{Brokers: []string{c.Addr}, Topic: "out", Logger: logf}
	if !testenv.Full() {
		// kgo refreshes its metadata at most every 5 s (MetadataMinAge),
		// so that a flush goes on up to 5 s after the broker is back: the
		// long run waits that out, the default one lets it refresh sooner.
		cfg.clientOpts = []kgo.Opt{kgo.MetadataMinAge(100 * time.Millisecond)}
	}
	s, err := NewSink(context.Background(), cfg)
	require.NoError(t, err)
	defer s.Close()
	keys, values := rows(100, 50)
	for i := range 50 {
		s.Append([]byte(keys[i]), []byte(values[i]))
	}
	require.NoError(t, s.Flush(context.Background()))

	c.Stop()
	for i := 50; i < 100; i++ {
		s.Append([]byte(keys[i]), []byte(values[i]))
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done <- s.Flush(ctx)
	}()
	require.Eventually(t, func() bool { return strings.Contains(logged(), "; retrying") }, 30*time.Second, 5*time.Millisecond, "the outage reported")
	select {
	case err := <-done:
		t.Fatalf("Flush returned while the broker was down: %v", err)
	default:
	}
	c.Restart(t)
	require.NoError(t, <-done)
	assert.Contains(t, logged(), "recovered after")
	assert.NotZero(t, s.Retries())

	// The topic holds exactly the records written: its end offset is
	// their count, and reading it to that end gives each once, in order.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr), kgo.ConsumeTopics("out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "out")
	require.NoError(t, err)
	end, ok := ends.Lookup("out", 0)
	require.True(t, ok)
	require.NoError(t, end.Err)
	assert.Equal(t, int64(len(values)), end.Offset, "every record once")
	var got []string
	for int64(len(got)) < end.Offset {
		fs := cl.PollFetches(ctx)
		require.NoError(t, fs.Err0())
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	assert.Equal(t, values, got, "every record once, in order")
}
