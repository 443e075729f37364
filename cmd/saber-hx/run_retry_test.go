package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/redistest"
	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/pipeline"
)

// outageKey and outageAgg are a row of the outage tests' query: per
// window of 100 ms and cat, COUNT(*) and SUM(v).
type outageKey struct{ start, cat int64 }
type outageAgg struct{ n, sum int64 }

// outageRecord is record i of the outage tests' topic: event times rise,
// so that round robin over the partitions keeps each in order.
func outageRecord(i int) (ts, cat, v int64) { return int64(i * 3), int64(i % 5), int64(i % 7) }

// kafkaCountsSQL is a program over outageRecord's records in topic events
// (consumer group group) whose sinks, pairs of a name and a Kafka topic,
// each write the count and sum per cat of every 100 ms window.
func kafkaCountsSQL(broker, group string, sinks ...string) string {
	text := fmt.Sprintf(`CREATE SOURCE events (ts BIGINT, cat INT, v INT)
  WITH (connector = 'kafka', brokers = '%s', topic = 'events', group = '%s', format = 'json', idle_timeout = '30s');
`, broker, group)
	for i := 0; i+1 < len(sinks); i += 2 {
		text += fmt.Sprintf(`CREATE SINK %s AS
  SELECT window_start, cat, COUNT(*) AS n, SUM(v) AS s FROM TUMBLE(events, ts, INTERVAL '100' MILLISECOND) GROUP BY window_start, cat
  WITH (connector = 'kafka', brokers = '%s', topic = '%s', key = 'cat');
`, sinks[i], broker, sinks[i+1])
	}
	return text
}

func outageOracle(n int) map[outageKey]outageAgg {
	want := map[outageKey]outageAgg{}
	for i := range n {
		ts, cat, v := outageRecord(i)
		k := outageKey{ts / 100 * 100, cat}
		a := want[k]
		want[k] = outageAgg{a.n + 1, a.sum + v}
	}
	return want
}

// committedOracle is outageOracle as a bounded run (--stop-at-end) with
// checkpoints commits it to Kafka: its last checkpoint, taken at the end
// of the records, keeps the last window open (no record after it closes
// it), so the drain's rows of it are not committed; a next run restores
// the window and emits it once complete.
func committedOracle(n int) map[outageKey]outageAgg {
	want := outageOracle(n)
	ts, _, _ := outageRecord(n - 1)
	for k := range want {
		if k.start == ts/100*100 {
			delete(want, k)
		}
	}
	return want
}

// produceOutage produces the outage tests' records, batches of perBatch
// every 100 ms, in a goroutine; its error comes on the channel. A batch
// produced while the broker is down waits for it (kgo retries).
func produceOutage(t *testing.T, broker string, batches, perBatch int) <-chan error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		defer cl.Close()
		for b := range batches {
			var recs []*kgo.Record
			for i := b * perBatch; i < (b+1)*perBatch; i++ {
				ts, cat, v := outageRecord(i)
				recs = append(recs, &kgo.Record{Topic: "events", Value: fmt.Appendf(nil, `{"ts": %d, "cat": %d, "v": %d}`, ts, cat, v)})
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := cl.ProduceSync(ctx, recs...).FirstErr()
			cancel()
			if err != nil {
				done <- err
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		done <- nil
	}()
	return done
}

// runAsync runs the command in a goroutine; its exit code comes on the
// channel, its stdout in stdout once it has.
func runAsync(args []string, stdout *strings.Builder, stderr *lockedBuffer) <-chan int {
	code := make(chan int, 1)
	go func() {
		var out lockedBuffer
		c := run(args, &out, stderr)
		stdout.WriteString(out.String())
		code <- c
	}()
	return code
}

func waitCode(t *testing.T, code <-chan int, stderr *lockedBuffer) int {
	t.Helper()
	select {
	case c := <-code:
		return c
	case <-time.After(2 * time.Minute):
		t.Fatalf("the run did not end: %s", stderr.String())
		return -1
	}
}

// summaryOf is the --json summary, the last line of stdout.
func summaryOf(t *testing.T, stdout string) runSummary {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var sum runSummary
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &sum), stdout)
	return sum
}

// redisRows reads the hashes w:{window_start}:{cat} back.
func redisRows(t *testing.T, addr string) map[outageKey]outageAgg {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	ctx := context.Background()
	keys, err := rc.Keys(ctx, "w:*").Result()
	require.NoError(t, err)
	got := map[outageKey]outageAgg{}
	for _, key := range keys {
		var k outageKey
		_, err := fmt.Sscanf(key, "w:%d:%d", &k.start, &k.cat)
		require.NoError(t, err, key)
		h, err := rc.HGetAll(ctx, key).Result()
		require.NoError(t, err)
		var a outageAgg
		_, err = fmt.Sscan(h["n"]+" "+h["s"], &a.n, &a.sum)
		require.NoError(t, err, "%s: %v", key, h)
		got[k] = a
	}
	return got
}

// TestRunRedisRestartMidRun: Redis is killed while a run reads a live
// topic into it, and comes back on the same port (its append-only file
// kept what it acknowledged) seconds later: the run reports the outage,
// holds its rows meanwhile, writes them once Redis is back, and ends
// well with Redis holding exactly the query's result, as without the
// restart; with --checkpoint-dir too. (With a budget of 0, both fail.)
func TestRunRedisRestartMidRun(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	skipOutageInShort(t)
	for _, ckpt := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpoints=%v", ckpt), func(t *testing.T) { redisRestartMidRun(t, ckpt) })
	}
}

// redisRestartMidRun is TestRunRedisRestartMidRun's, with checkpoints
// (whose flush of the outputs then waits for Redis) or without.
func redisRestartMidRun(t *testing.T, ckpt bool) {
	cluster := kafkatest.Start(t, 2, "events")
	rds := redistest.StartPersistent(t)
	const batches, perBatch = 30, 100
	produced := produceOutage(t, cluster.Addr, batches, perBatch)
	sqlText := fmt.Sprintf(`
CREATE SOURCE events (ts BIGINT, cat INT, v INT)
  WITH (connector = 'kafka', brokers = '%s', topic = 'events', group = 'outage', format = 'json', idle_timeout = '1s');
CREATE SINK out AS
  SELECT window_start, cat, COUNT(*) AS n, SUM(v) AS s FROM TUMBLE(events, ts, INTERVAL '100' MILLISECOND) GROUP BY window_start, cat
  WITH (connector = 'redis', addr = '%s', key = 'w:{window_start}:{cat}', flush = '100ms');
`, cluster.Addr, rds.Addr)
	args := []string{"run", "-e", sqlText, "--duration", "12s", "--workers", "2", "--json"}
	if ckpt {
		args = append(args, "--checkpoint-dir", t.TempDir(), "--checkpoint-interval", "200ms")
	}
	var stdout strings.Builder
	var stderr lockedBuffer
	code := runAsync(args, &stdout, &stderr)
	require.Eventually(t, func() bool { return len(redisRows(t, rds.Addr)) > 0 }, 30*time.Second, 10*time.Millisecond, "rows written before the outage")
	rds.Stop()
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "retrying for up to") }, 30*time.Second, 10*time.Millisecond,
		"the outage reported: %s", stderr.String())
	time.Sleep(time.Second) // down a while longer: more attempts fail
	rds.Restart(t)
	require.NoError(t, <-produced)

	require.Equal(t, 0, waitCode(t, code, &stderr), stderr.String())
	log := stderr.String()
	assert.Equal(t, 1, strings.Count(log, "redis "+rds.Addr+": ")-strings.Count(log, "still failing")-strings.Count(log, "recovered after"),
		"the outage's first failure reported once: %s", log)
	assert.Contains(t, log, "redis "+rds.Addr+": recovered after ")
	assert.Equal(t, uint64(batches*perBatch), summaryOf(t, stdout.String()).Tuples)
	want := outageOracle(batches * perBatch)
	if ckpt {
		// Stopped by its duration, the run took a last checkpoint and
		// drained: the window open then, the last, is the resumed run's
		// to write complete, not written as it stood.
		var last int64
		for k := range want {
			last = max(last, k.start)
		}
		for k := range want {
			if k.start == last {
				delete(want, k)
			}
		}
	}
	assert.Equal(t, want, redisRows(t, rds.Addr), "Redis against the query's result")
}

// kafkaRows reads a Kafka output back with kcat (an independent client):
// one JSON row a record; dups counts the rows of a window and cat seen
// before.
func kafkaRows(t *testing.T, broker, topic string) (rows map[outageKey]outageAgg, dups int) {
	t.Helper()
	out := kafkatest.RunKcat(t, nil, "-C", "-b", broker, "-t", topic, "-e", "-q", "-f", "%s\n")
	var values [][]byte
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line != "" {
			values = append(values, []byte(line))
		}
	}
	return outageRows(t, values)
}

// outageRows decodes the outage tests' output records (JSON rows of
// window_start, cat, n and s), counting the windows written twice.
func outageRows(t *testing.T, values [][]byte) (rows map[outageKey]outageAgg, dups int) {
	t.Helper()
	rows = map[outageKey]outageAgg{}
	for _, v := range values {
		var r struct{ Window_start, Cat, N, S int64 }
		require.NoError(t, json.Unmarshal(v, &r), string(v))
		k := outageKey{r.Window_start, r.Cat}
		if _, ok := rows[k]; ok {
			dups++
		}
		rows[k] = outageAgg{r.N, r.S}
	}
	return rows, dups
}

// countsProgram is the SQL of the Kafka tests of run: records of
// outageRecord from topic events (group group) counted per 100 ms
// tumbling window and cat into topic counts (keyed by cat) and into Redis
// hashes w:{window_start}:{cat}.
func countsProgram(broker, redisAddr, group string) string {
	return fmt.Sprintf(`
CREATE SOURCE events (ts BIGINT, cat INT, v INT)
  WITH (connector = 'kafka', brokers = '%[1]s', topic = 'events', group = '%[3]s', format = 'json', idle_timeout = '1s');
CREATE SINK to_kafka AS
  SELECT window_start, cat, COUNT(*) AS n, SUM(v) AS s FROM TUMBLE(events, ts, INTERVAL '100' MILLISECOND) GROUP BY window_start, cat
  WITH (connector = 'kafka', brokers = '%[1]s', topic = 'counts', key = 'cat');
CREATE SINK to_redis AS
  SELECT window_start, cat, COUNT(*) AS n, SUM(v) AS s FROM TUMBLE(events, ts, INTERVAL '100' MILLISECOND) GROUP BY window_start, cat
  WITH (connector = 'redis', addr = '%[2]s', key = 'w:{window_start}:{cat}', flush = '100ms');
`, broker, redisAddr, group)
}

// TestRunBrokerRestartMidRun: the broker a run reads from and writes to
// is shut down mid-run and restarted on its port seconds later (its
// logs, group offsets and producer state kept): the run reports the
// outage, waits (the source's fetches and the sink's produce retried),
// and ends well, the output topic holding every row once, equal to the
// query's result, and so does a Redis output written meanwhile.
func TestRunBrokerRestartMidRun(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	skipOutageInShort(t)
	brokerRestartMidRun(t, 3*time.Second)
}

// TestRunBrokerLongOutage: as TestRunBrokerRestartMidRun, with the broker
// down for longer than the Kafka client's own deadlines (its produce and
// fetch requests time out within 30 s, the group session within 45 s):
// only the run's retries carry it over, within --sink-retry-timeout's
// default.
func TestRunBrokerLongOutage(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	skipOutageInShort(t)
	brokerRestartMidRun(t, 35*time.Second)
}

func brokerRestartMidRun(t *testing.T, outage time.Duration) {
	kafkatest.Kcat(t)
	cluster := kafkatest.StartRestartable(t, 2, "events", "counts")
	rds := redistest.Start(t)
	const batches, perBatch = 30, 100
	produced := produceOutage(t, cluster.Addr, batches, perBatch)
	sqlText := countsProgram(cluster.Addr, rds.Addr, "outage")
	var stdout strings.Builder
	var stderr lockedBuffer
	// The run reads for the outage and 20 s more: what a run's duration
	// leaves unread is not lost (its offsets are not committed), but the
	// test counts every record in this one run, and on a loaded machine the
	// clients take seconds to come back after the restart.
	duration := (outage + 20*time.Second).String()
	code := runAsync([]string{"run", "-e", sqlText, "--duration", duration, "--workers", "2", "--json"}, &stdout, &stderr)

	require.Eventually(t, func() bool { return len(redisRows(t, rds.Addr)) > 0 }, 30*time.Second, 10*time.Millisecond, "rows written before the outage")
	cluster.Stop()
	time.Sleep(outage)
	cluster.Restart(t)
	require.NoError(t, <-produced)

	require.Equal(t, 0, waitCode(t, code, &stderr), stderr.String())
	log := stderr.String()
	t.Logf("%s", log)
	want := outageOracle(batches * perBatch)
	assert.Equal(t, uint64(batches*perBatch), summaryOf(t, stdout.String()).Tuples)
	got, dups := kafkaRows(t, cluster.Addr, "counts")
	assert.Zero(t, dups, "rows written twice")
	assert.Equal(t, want, got, "the Kafka output against the query's result")
	assert.Equal(t, want, redisRows(t, rds.Addr), "the Redis output against the query's result")
}

// TestRunCheckpointBrokerRestart: as TestRunBrokerRestartMidRun with
// --checkpoint-dir, the Kafka output written in a transaction per
// checkpoint: the broker's restart falls among checkpoints (a
// checkpoint's flush and commit wait for it); read back read committed,
// the output holds every row once, equal to a crash-free run's, itself
// the query's result.
func TestRunCheckpointBrokerRestart(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	skipOutageInShort(t)
	cluster := kafkatest.StartRestartable(t, 2, "events", "counts")
	const batches, perBatch = 30, 100
	produced := produceOutage(t, cluster.Addr, batches, perBatch)
	sqlText := fmt.Sprintf(`
CREATE SOURCE events (ts BIGINT, cat INT, v INT)
  WITH (connector = 'kafka', brokers = '%[1]s', topic = 'events', group = 'outage', format = 'json', idle_timeout = '1s');
CREATE SINK to_kafka AS
  SELECT window_start, cat, COUNT(*) AS n, SUM(v) AS s FROM TUMBLE(events, ts, INTERVAL '100' MILLISECOND) GROUP BY window_start, cat
  WITH (connector = 'kafka', brokers = '%[1]s', topic = 'counts', key = 'cat');
`, cluster.Addr)
	var stdout strings.Builder
	var stderr lockedBuffer
	// The run reads for the outage and 22 s more (as brokerRestartMidRun):
	// the test counts every record in this one run.
	code := runAsync([]string{"run", "-e", sqlText, "--duration", "25s", "--workers", "2", "--json",
		"--checkpoint-dir", t.TempDir(), "--checkpoint-interval", "200ms"}, &stdout, &stderr)

	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "checkpoint 3:") }, 30*time.Second, 10*time.Millisecond,
		"checkpoints taken before the outage: %s", stderr.String())
	cluster.Stop()
	time.Sleep(3 * time.Second)
	cluster.Restart(t)
	require.NoError(t, <-produced)

	require.Equal(t, 0, waitCode(t, code, &stderr), stderr.String())
	assert.Contains(t, stderr.String(), "recovered after", "the outage reported")
	sum := summaryOf(t, stdout.String())
	require.Equal(t, uint64(batches*perBatch), sum.Tuples, "every record read in the run: %s", stdout.String())

	// The crash-free run: the same query over the same records into
	// another topic, as a group of its own.
	calmSQL := strings.ReplaceAll(strings.ReplaceAll(sqlText, "'counts'", "'calm'"), "'outage'", "'calm'")
	var calmOut strings.Builder
	var calmErr lockedBuffer
	calmCode := runAsync([]string{"run", "-e", calmSQL, "--stop-at-end", "--workers", "2", "--json",
		"--checkpoint-dir", t.TempDir(), "--checkpoint-interval", "200ms"}, &calmOut, &calmErr)
	require.Equal(t, 0, waitCode(t, calmCode, &calmErr), calmErr.String())

	got, dups := committedRows(t, cluster.Addr, "counts")
	assert.Zero(t, dups, "rows committed twice")
	calm, calmDups := committedRows(t, cluster.Addr, "calm")
	assert.Zero(t, calmDups)
	assert.Equal(t, committedOracle(batches*perBatch), calm, "crash-free run against the query's result")
	assert.Equal(t, calm, got, "through the broker's restart against crash-free")
}

// committedRows reads a transactional output back, read committed.
func committedRows(t *testing.T, broker, topic string) (rows map[outageKey]outageAgg, dups int) {
	return outageRows(t, readCommitted(t, broker, topic))
}

// TestRunCheckpointCommitUnconfirmed: a checkpoint's transaction commit
// whose outcome is unknown (the broker answers UNKNOWN_SERVER_ERROR, as
// for a commit cut by a broker going away: kgo cannot retry it) fails
// the run, naming it, rather than going on with an epoch the output may
// lack; run again, it resumes from the checkpoint the output stands at,
// and the output, read committed, equals a crash-free run's. The runs
// after the failure are bounded (--stop-at-end), and idle_timeout is long:
// on a loaded machine a partition whose fetch stalls would otherwise turn
// idle, the merge go on without it and its records come late, and a run
// cut by --duration leave a tail unread, either making the two outputs
// differ by timing alone.
func TestRunCheckpointCommitUnconfirmed(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	skipOutageInShort(t)
	cluster := kafkatest.Start(t, 2, "events", "counts", "calm")
	const batches, perBatch = 30, 100
	produced := produceOutage(t, cluster.Addr, batches, perBatch)
	sqlText := kafkaCountsSQL(cluster.Addr, "unconfirmed", "to_kafka", "counts")
	dir := t.TempDir()
	args := []string{"run", "-e", sqlText, "--workers", "2", "--json", "--checkpoint-dir", dir, "--checkpoint-interval", "200ms"}
	var stdout strings.Builder
	var stderr lockedBuffer
	code := runAsync(append(args, "--duration", "20s"), &stdout, &stderr)
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "checkpoint 2:") }, 30*time.Second, 10*time.Millisecond,
		"checkpoints taken: %s", stderr.String())
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, TopLevel: true, Err: kerr.UnknownServerError,
		When: func(r kmsg.Request) bool { return r.(*kmsg.EndTxnRequest).Commit }})
	assert.Equal(t, 1, waitCode(t, code, &stderr), stderr.String())
	assert.Equal(t, 1, fault.Hits())
	assert.Contains(t, stderr.String(), "commit epoch")
	require.NoError(t, <-produced)

	var stdout2 strings.Builder
	var stderr2 lockedBuffer
	code = runAsync(append(args, "--stop-at-end"), &stdout2, &stderr2)
	require.Equal(t, 0, waitCode(t, code, &stderr2), stderr2.String())
	assert.Contains(t, stderr2.String(), "the Kafka output stands at checkpoint", "the checkpoint whose commit failed is not the one resumed")

	calmSQL := strings.ReplaceAll(strings.ReplaceAll(sqlText, "'counts'", "'calm'"), "'unconfirmed'", "'calm'")
	var calmOut strings.Builder
	var calmErr lockedBuffer
	calmCode := runAsync([]string{"run", "-e", calmSQL, "--stop-at-end", "--workers", "2", "--json",
		"--checkpoint-dir", t.TempDir(), "--checkpoint-interval", "200ms"}, &calmOut, &calmErr)
	require.Equal(t, 0, waitCode(t, calmCode, &calmErr), calmErr.String())

	got, dups := committedRows(t, cluster.Addr, "counts")
	assert.Zero(t, dups, "rows committed twice")
	calm, _ := committedRows(t, cluster.Addr, "calm")
	assert.Equal(t, committedOracle(batches*perBatch), calm, "crash-free run against the query's result")
	assert.Equal(t, calm, got, "after the failed commit against crash-free")
}

// TestRunRedisRetryGivesUp: a Redis that does not come back fails the
// run once the retry budget is spent, naming the server, the outage
// reported first.
func TestRunRedisRetryGivesUp(t *testing.T) {
	t.Parallel()
	cluster := kafkatest.Start(t, 1, "events")
	rds := redistest.Start(t)
	produced := produceOutage(t, cluster.Addr, 40, 50)
	sqlText := fmt.Sprintf(`
CREATE SOURCE events (ts BIGINT, cat INT, v INT) WITH (connector = 'kafka', brokers = '%s', topic = 'events', format = 'json');
CREATE SINK out AS SELECT window_start, cat, COUNT(*) AS n, SUM(v) AS s FROM TUMBLE(events, ts, INTERVAL '100' MILLISECOND) GROUP BY window_start, cat
  WITH (connector = 'redis', addr = '%s', key = 'w:{window_start}:{cat}', flush = '100ms');
`, cluster.Addr, rds.Addr)
	var stdout strings.Builder
	var stderr lockedBuffer
	code := runAsync([]string{"run", "-e", sqlText, "--workers", "1", "--sink-retry-timeout", "1s"}, &stdout, &stderr)
	require.Eventually(t, func() bool { return len(redisRows(t, rds.Addr)) > 0 }, 30*time.Second, 10*time.Millisecond, "rows written")
	rds.Stop()
	assert.Equal(t, 1, waitCode(t, code, &stderr))
	log := stderr.String()
	assert.Contains(t, log, "redis "+rds.Addr+": ")
	assert.Contains(t, log, "retrying for up to 1s")
	assert.Contains(t, log, "gave up after retrying for")
	assert.NotContains(t, log, "recovered after")
	require.NoError(t, <-produced)
}

func TestSinkRetrySetting(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	d := addSinkRetryFlag(fs)
	require.NoError(t, fs.Parse(nil))
	assert.Equal(t, 2*time.Minute, *d, "the default")
	require.NoError(t, fs.Parse([]string{"--sink-retry-timeout", "0"}))
	assert.Zero(t, *d)

	for _, c := range []struct{ flag, option time.Duration }{{0, -1}, {5 * time.Second, 5 * time.Second}, {2 * time.Minute, 2 * time.Minute}} {
		got, err := pipeline.SinkRetryTimeout(c.flag)
		require.NoError(t, err)
		assert.Equal(t, c.option, got, "--sink-retry-timeout %v", c.flag)
	}
	_, err := pipeline.SinkRetryTimeout(-time.Second)
	assert.ErrorIs(t, err, pipeline.ErrUsage)

	for _, cmd := range []string{"run", "ysb"} {
		args := []string{cmd, "-e", "SELECT * FROM s", "--sink-retry-timeout", "soon"}
		if cmd == "ysb" {
			args = []string{cmd, "--source", "kafka", "--sink-retry-timeout", "soon"}
		}
		code, _, stderr := cli(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, stderr)
		assert.Contains(t, stderr, "sink-retry-timeout", "%v", args)
	}
	code, _, stderr := cli(t, "ysb", "--source", "kafka", "--brokers", "127.0.0.1:1", "--redis", "127.0.0.1:1", "--sink-retry-timeout", "-1s")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "--sink-retry-timeout -1s")
}

// skipOutageInShort skips, with -short, a test that waits through a
// server's outage: CI's plain pass runs it, and its race pass (-short)
// leaves it to the packages whose own tests race the retries through a
// real restart (internal/retry, sink/..., source/kafka).
func skipOutageInShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("waits through a server outage; runs without -short")
	}
}
