package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/checkpoint"
	"github.com/saber-hx/saber-hx/internal/kafkatest"
)

// TestRunCheckpointMarkersLost: the topic of a Kafka output's epoch
// markers is lost (deleted, say) while the checkpoint directory keeps its
// checkpoints: the next run starts afresh (at least once: the output may
// repeat rows), and numbers its checkpoints above the directory's, so that
// they are not pruned as soon as written and the run after it restores
// its newest, repeating nothing more. Numbered from 1, the third run
// restored the first run's checkpoint and wrote again every row of the
// second.
func TestRunCheckpointMarkersLost(t *testing.T) {
	t.Parallel()
	cluster := kafkatest.Start(t, 2, "events", "counts")
	sqlText := fmt.Sprintf(`
CREATE SOURCE events (ts BIGINT, cat INT, v INT)
  WITH (connector = 'kafka', brokers = '%[1]s', topic = 'events', group = 'lost', format = 'json', idle_timeout = '30s');
CREATE SINK to_kafka AS
  SELECT window_start, cat, COUNT(*) AS n, SUM(v) AS s FROM TUMBLE(events, ts, INTERVAL '100' MILLISECOND) GROUP BY window_start, cat
  WITH (connector = 'kafka', brokers = '%[1]s', topic = 'counts', key = 'cat');
`, cluster.Addr)
	dir := t.TempDir()
	run := func(extra ...string) {
		t.Helper()
		var stdout strings.Builder
		var stderr lockedBuffer
		code := runAsync(append([]string{"run", "-e", sqlText, "--workers", "2", "--checkpoint-dir", dir, "--checkpoint-interval", "200ms"}, extra...), &stdout, &stderr)
		require.Equal(t, 0, waitCode(t, code, &stderr), stderr.String())
	}
	// produce writes records from to to, a hundred each pause long.
	produce := func(from, to int, pause time.Duration) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.Addr), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		require.NoError(t, err)
		defer cl.Close()
		for b := from; b < to; b += 100 {
			var recs []*kgo.Record
			for i := b; i < min(b+100, to); i++ {
				ts, cat, v := outageRecord(i)
				recs = append(recs, &kgo.Record{Topic: "events", Value: fmt.Appendf(nil, `{"ts": %d, "cat": %d, "v": %d}`, ts, cat, v)})
			}
			assert.NoError(t, cl.ProduceSync(context.Background(), recs...).FirstErr())
			time.Sleep(pause)
		}
	}
	highest := func() uint64 {
		n, err := (&checkpoint.Dir{Path: dir}).Highest()
		require.NoError(t, err)
		return n
	}

	// The first run checkpoints a few times while the records come.
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		produce(0, 3000, 50*time.Millisecond)
	}()
	run("--duration", "2500ms")
	<-produced
	run("--stop-at-end")
	first := highest()
	require.Greater(t, first, uint64(2), "the first runs' checkpoints")

	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.Addr))
	require.NoError(t, err)
	_, err = kadm.NewClient(cl).DeleteTopics(context.Background(), "__saber_hx_epochs")
	cl.Close()
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond)

	produce(3000, 6000, 0)
	run("--stop-at-end")
	assert.Greater(t, highest(), first, "the second run's checkpoints are above the first's")
	_, dups := committedRows(t, cluster.Addr, "counts")

	produce(6000, 6500, 0)
	run("--stop-at-end")
	_, dups3 := committedRows(t, cluster.Addr, "counts")
	assert.Equal(t, dups, dups3, "rows the third run wrote again (the second may repeat some: it started afresh)")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(ents), 3, "the directory keeps two checkpoints (and maybe a part file)")
}
