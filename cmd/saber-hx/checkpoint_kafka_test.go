package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/testenv"
)

func crashKafkaSQL(broker, group, topic string) string {
	return fmt.Sprintf(`
CREATE SOURCE events (ts BIGINT, cat INT, v INT)
  WITH (connector = 'kafka', brokers = '%[1]s', topic = 'events', group = '%[2]s', format = 'json', idle_timeout = '1s');
CREATE SINK out AS
  SELECT window_start, cat, COUNT(*) AS n, SUM(v) AS s, MAX(v) AS m FROM HOP(events, ts, INTERVAL '50' MILLISECOND, INTERVAL '200' MILLISECOND)
  GROUP BY window_start, cat
  WITH (connector = 'kafka', brokers = '%[1]s', topic = '%[3]s', key = 'cat');
`, broker, group, topic)
}

// readCommitted reads every committed record of topic (read committed,
// an independent client), until three polls of a second each in a row
// bring nothing new: under CI's load one empty second cut a read short
// (a crash-free run's 1,495 windows of its 2,392), as the broker had not
// yet answered for every partition.
func readCommitted(t *testing.T, broker, topic string) [][]byte {
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	var out [][]byte
	empty := 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				require.NoError(t, err)
			}
		})
		n := 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r.Value); n++ })
		if n > 0 {
			empty = 0
		} else if empty++; empty == 3 {
			return out
		}
	}
}

// windowRows counts the rows of a Kafka output per window and group.
func windowRows(t *testing.T, recs [][]byte) (rows map[crashKey]crashAgg, dups int) {
	rows = map[crashKey]crashAgg{}
	for _, v := range recs {
		var r struct{ Window_start, Cat, N, S, M int64 }
		require.NoError(t, json.Unmarshal(v, &r), string(v))
		k := crashKey{r.Window_start, r.Cat}
		if _, ok := rows[k]; ok {
			dups++
		}
		rows[k] = crashAgg{r.N, r.S, r.M}
	}
	return rows, dups
}

// TestRunCheckpointCrashesKafkaExactlyOnce: as TestRunCheckpointCrashes,
// into a Kafka topic written in a transaction per checkpoint, killed at a
// random moment, between a checkpoint's write and its rename, and between
// the checkpoint and the commit of its output: read back (read committed)
// the topic holds every row once, equal to a crash-free run's and to the
// query's result.
func TestRunCheckpointCrashesKafkaExactlyOnce(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	cluster := kafkatest.Start(t, 4, "events", "out", "calm")
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 19))
	const batches, perBatch = 30, 500
	produced := produceCrashRecords(t, cluster.Addr, batches, perBatch)

	dir := filepath.Join(t.TempDir(), "ckpt")
	args := []string{"run", "-e", crashKafkaSQL(cluster.Addr, "crashy", "out"), "--workers", "2", "--task-size", "4096",
		"--checkpoint-dir", dir, "--checkpoint-interval", "150ms"}
	p := startCLI(t, nil, args...)
	p.waitLine(t, regexp.MustCompile(`checkpoint 2:`), time.Minute)
	time.Sleep(time.Duration(rnd.IntN(600)) * time.Millisecond)
	p.kill9(t)
	p = startCLI(t, []string{"SABER_HX_CHECKPOINT_PAUSE" + "=5s"}, args...)
	p.waitLine(t, regexp.MustCompile(`written, renaming`), time.Minute)
	p.kill9(t)
	p = startCLI(t, []string{"SABER_HX_COMMIT_PAUSE" + "=5s"}, args...)
	p.waitLine(t, regexp.MustCompile(`written, committing the outputs`), time.Minute)
	p.kill9(t)
	require.NoError(t, <-produced)
	p = startCLI(t, nil, append(args, "--stop-at-end")...)
	ref := startCLI(t, nil, "run", "-e", crashKafkaSQL(cluster.Addr, "calm", "calm"), "--workers", "2", "--task-size", "4096",
		"--checkpoint-dir", filepath.Join(t.TempDir(), "calm"), "--checkpoint-interval", "150ms", "--stop-at-end")
	p.wait(t, 2*time.Minute)
	ref.wait(t, 2*time.Minute)
	assert.Contains(t, p.log(), "the Kafka output stands at checkpoint", "the last crash left a checkpoint newer than the output")

	got, dups := windowRows(t, readCommitted(t, cluster.Addr, "out"))
	assert.Zero(t, dups, "rows written twice")
	calm, calmDups := windowRows(t, readCommitted(t, cluster.Addr, "calm"))
	assert.Zero(t, calmDups)
	require.NotEmpty(t, calm)
	oracle := crashOracle(batches * perBatch)
	for k, a := range calm {
		assert.Equal(t, oracle[k], a, "crash-free run, window %+v", k)
	}
	assert.Equal(t, len(calm), len(got))
	assert.Equal(t, calm, got, "crashed against crash-free")
}
