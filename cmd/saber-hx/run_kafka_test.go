package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/redistest"
)

// TestRunKafkaToKafkaAndRedis runs a SQL query reading JSON records from a
// Kafka topic of four partitions (a real Kafka-protocol broker on
// loopback) into a Kafka sink, read back with kcat (an independent
// client), and a Redis hash sink on a real redis-server: both hold exactly
// the counts computed here, and the group's committed offsets are the ends
// of every partition (every record is out).
func TestRunKafkaToKafkaAndRedis(t *testing.T) {
	t.Parallel()
	kafkatest.Kcat(t) // skips (or fails with SABER_HX_REQUIRE_SERVERS=1) without kcat
	cluster := kafkatest.Start(t, 4, "events", "counts")
	rds := redistest.Start(t)

	// Event times rise and records go round robin: each partition is in
	// order, so the source's merge restores the global order and no
	// record is late.
	type key = outageKey
	type agg = outageAgg
	const n = 5000
	want := outageOracle(n)
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.Addr), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	var recs []*kgo.Record
	for i := range n {
		ts, cat, v := outageRecord(i)
		recs = append(recs, &kgo.Record{Topic: "events", Value: fmt.Appendf(nil, `{"ts": %d, "cat": %d, "v": %d}`, ts, cat, v)})
	}
	require.NoError(t, cl.ProduceSync(context.Background(), recs...).FirstErr())

	sqlText := countsProgram(cluster.Addr, rds.Addr, "run-test")
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "-e", sqlText, "--stop-at-end", "--workers", "2", "--json"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	var sum runSummary
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &sum))
	assert.Equal(t, uint64(n), sum.Tuples)
	require.Len(t, sum.Queries, 2)
	assert.Equal(t, "kafka topic counts", sum.Queries[0].Output)
	assert.Equal(t, "redis "+rds.Addr, sum.Queries[1].Output)

	// The Kafka sink, read by kcat: one JSON record per row, keyed by cat.
	out := kafkatest.RunKcat(t, nil, "-C", "-b", cluster.Addr, "-t", "counts", "-e", "-q", "-f", "%k\t%s\n")
	got := map[key]agg{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, ok := strings.Cut(line, "\t")
		require.True(t, ok, line)
		var row struct{ Window_start, Cat, N, S int64 }
		require.NoError(t, json.Unmarshal([]byte(v), &row), v)
		assert.Equal(t, fmt.Sprint(row.Cat), k, "the record's key is its cat")
		kk := key{row.Window_start, row.Cat}
		require.NotContains(t, got, kk, "one row per window and cat")
		got[kk] = agg{row.N, row.S}
	}
	assert.Equal(t, want, got, "kafka sink")

	// The Redis sink: one hash per row.
	rc := redis.NewClient(&redis.Options{Addr: rds.Addr})
	defer rc.Close()
	ctx := context.Background()
	keys, err := rc.Keys(ctx, "w:*").Result()
	require.NoError(t, err)
	assert.Len(t, keys, len(want))
	for k, a := range want {
		h, err := rc.HGetAll(ctx, fmt.Sprintf("w:%d:%d", k.start, k.cat)).Result()
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"n": fmt.Sprint(a.n), "s": fmt.Sprint(a.sum)}, h, "redis hash of %+v", k)
	}

	// Every record is out: the group committed each partition's end.
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, "run-test")
	require.NoError(t, err)
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "events")
	require.NoError(t, err)
	committed := 0
	ends.Each(func(e kadm.ListedOffset) {
		o, ok := offs.Lookup("events", e.Partition)
		if assert.True(t, ok, "partition %d committed", e.Partition) {
			assert.Equal(t, e.Offset, o.At, "partition %d", e.Partition)
			committed++
		}
	})
	assert.Equal(t, 4, committed)
}

// TestRunFailsWhenRedisGoes: a run reading a live topic into Redis, with
// no --duration and no retry (a budget of 0), ends with an error naming
// the server once Redis has gone away and rows have nowhere to go,
// instead of reading on and buffering.
func TestRunFailsWhenRedisGoes(t *testing.T) {
	t.Parallel()
	cluster := kafkatest.Start(t, 1, "events")
	rds := redistest.Start(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.Addr))
	require.NoError(t, err)
	defer cl.Close()
	for i := range 100 {
		require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: "events", Value: fmt.Appendf(nil, `{"ts": %d, "cat": %d}`, i*50, i%3)}).FirstErr())
	}
	sqlText := fmt.Sprintf(`
CREATE SOURCE events (ts BIGINT, cat INT) WITH (connector = 'kafka', brokers = '%s', topic = 'events', format = 'json');
CREATE SINK out AS SELECT window_start, cat, COUNT(*) AS n FROM TUMBLE(events, ts, INTERVAL '100' MILLISECOND) GROUP BY window_start, cat
  WITH (connector = 'redis', addr = '%s', key = 'w:{window_start}:{cat}', flush = '100ms');
`, cluster.Addr, rds.Addr)
	var stderr lockedBuffer
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"run", "-e", sqlText, "--workers", "1", "--sink-retry-timeout", "0"}, io.Discard, &stderr)
	}()
	rc := redis.NewClient(&redis.Options{Addr: rds.Addr})
	defer rc.Close()
	require.Eventually(t, func() bool {
		keys, _ := rc.Keys(context.Background(), "w:*").Result()
		return len(keys) > 0
	}, 20*time.Second, 10*time.Millisecond, "rows written while the run goes on")
	rds.Stop()
	// New windows: rows that have nowhere to go.
	for i := 100; i < 200; i++ {
		require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: "events", Value: fmt.Appendf(nil, `{"ts": %d, "cat": %d}`, i*50, i%3)}).FirstErr())
	}
	select {
	case c := <-code:
		assert.Equal(t, 1, c)
		assert.Contains(t, stderr.String(), "redis "+rds.Addr)
	case <-time.After(60 * time.Second):
		t.Fatalf("the run went on after Redis stopped: %s", stderr.String())
	}
}
