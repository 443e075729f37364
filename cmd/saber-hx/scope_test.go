package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/redistest"
)

// TestYSBFlagScope: a flag that the selected mode of ysb does not read is
// refused (exit 2), naming it, the mode and where it applies; nothing is
// run, and no output written. The flags a mode reads pass the check (the
// run then fails on a later check, or runs).
func TestYSBFlagScope(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res := filepath.Join(dir, "res.csv")
	file := []string{"ysb", "--input", filepath.Join(dir, "e.bin"), "--campaigns", filepath.Join(dir, "c.csv")}
	kafka := []string{"ysb", "--source", "kafka", "--brokers", "127.0.0.1:1", "--redis", "127.0.0.1:1"}
	bench := []string{"ysb", "--duration", "1s", "--warmup", "0s"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		// The review's: the in-memory benchmark ran, res.csv never written.
		{append(bench, "--brokers", "127.0.0.1:9092", "--redis", "127.0.0.1:6379", "--topic", "foo", "--output", res),
			"ysb: --brokers applies to --source kafka, not to the generator benchmark"},
		{append(bench, "--output", res), "ysb: --output applies to file mode, not to the generator benchmark"},
		{append(bench, "--redis", "127.0.0.1:6379"), "--redis applies to --source kafka"},
		{append(bench, "--topic", "foo"), "--topic applies to --source kafka"},
		{append(bench, "--group", "g"), "--group applies to --source kafka"},
		{append(bench, "--fetchers", "2"), "--fetchers applies to --source kafka"},
		{append(bench, "--stop-at-end"), "--stop-at-end applies to --source kafka"},
		{append(bench, "--watermark-delay", "10ms"), "--watermark-delay applies to --source kafka"},
		{append(bench, "--checkpoint-interval", "1s"), "--checkpoint-interval applies to --source kafka"},
		{append(bench, "--checkpoint-dir", dir), "--checkpoint-dir applies to --source kafka"},
		{append(bench, "--instances", "2"), "--instances applies to --source kafka"},
		{append(bench, "--sink-retry-timeout", "1s"), "--sink-retry-timeout applies to --source kafka"},
		{append(bench, "--kafka-security-protocol", "SSL"), "--kafka-security-protocol applies to --source kafka"},
		{append(bench, "--redis-tls"), "--redis-tls applies to --source kafka"},
		{append(file, "--duration", "1s"), "ysb: --duration applies to the generator benchmark and --source kafka, not to file mode"},
		{append(file, "--warmup", "1s"), "--warmup applies to the generator benchmark, not to file mode"},
		{append(file, "--bundle-size", "4096"), "--bundle-size applies to the generator benchmark, not to file mode"},
		{append(file, "--ingest", "producer"), "--ingest applies to the generator benchmark, not to file mode"},
		{append(file, "--num-campaigns", "5"), "--num-campaigns applies to the generator benchmark, not to file mode"},
		{append(file, "--progress-interval", "1s"), "--progress-interval applies to the generator benchmark and --source kafka, not to file mode"},
		{append(file, "--brokers", "127.0.0.1:1"), "--brokers applies to --source kafka, not to file mode"},
		{append(file, "--stop-at-end"), "--stop-at-end applies to --source kafka, not to file mode"},
		{append(kafka, "--output", res), "ysb: --output applies to file mode, not to --source kafka"},
		{append(kafka, "--bundle-size", "4096"), "--bundle-size applies to the generator benchmark, not to --source kafka"},
		{append(kafka, "--warmup", "1s"), "--warmup applies to the generator benchmark, not to --source kafka"},
		{append(kafka, "--ingest", "producer"), "--ingest applies to the generator benchmark, not to --source kafka"},
		{append(kafka, "--ads-per-campaign", "3"), "--ads-per-campaign applies to the generator benchmark, not to --source kafka"},
		{append(kafka, "--input", "e.bin"), "--input applies to file mode, not to --source kafka"},
		{append(kafka, "--checkpoint-interval", "1s"), "--checkpoint-interval: needs --checkpoint-dir"},
		// What each mode reads passes: the runs fail on the check after.
		{append(kafka, "--duration", "1s", "--stop-at-end", "--group", "g", "--topic", "t", "--sink-retry-timeout", "1s", "--json",
			"--progress-interval", "1s", "--instance", "0", "--instances", "1", "--checkpoint-dir", dir, "--checkpoint-interval", "0s",
			"--workers", "1", "--cores", "0", "--ingest-core", "0", "--redis-tls", "--kafka-security-protocol", "PLAINTEXT", "--watermark-delay", "5ms"), "--checkpoint-interval 0s: must be positive"},
		{append(file, "--output", res, "--workers", "1", "--ingest-core", "0", "--json", "--source", "generator"), "e.bin"},
	} {
		code, stdout, stderr := cli(t, tc.args...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		assert.Empty(t, stdout, "%v", tc.args)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
	assert.NoFileExists(t, res)

	// The benchmark's own flags run it.
	code, stdout, stderr := cli(t, "ysb", "--duration", "100ms", "--warmup", "0s", "--bundle-size", "65536", "--ingest", "producer",
		"--num-campaigns", "5", "--ads-per-campaign", "2", "--progress-interval", "0", "--workers", "1", "--pin=false", "--json", "--source", "generator")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `"validated":true`)
}

// TestRunFlagsNeedKafka: run's --instances above 1 and --stop-at-end act
// on Kafka sources alone (the partitions shared, read to their end), and
// --checkpoint-interval on --checkpoint-dir: refused where they would do
// nothing, accepted with a Kafka source.
func TestRunFlagsNeedKafka(t *testing.T) {
	t.Parallel()
	gen := `CREATE SOURCE task_events (timestamp BIGINT, jobId BIGINT, taskId BIGINT, machineId BIGINT, userId INT, eventType INT,
  category INT, priority INT, cpu REAL, ram REAL, disk REAL, constraints INT) WITH (connector = 'generator', workload = 'cm1');
SELECT category FROM task_events;`
	csv := filepath.Join(t.TempDir(), "in.csv")
	require.NoError(t, os.WriteFile(csv, []byte("1,2\n"), 0o600))
	file := `CREATE SOURCE e (ts BIGINT, k INT) WITH (connector = 'file', path = '` + csv + `', format = 'csv'); SELECT ts, k FROM e;`
	kafka := `CREATE SOURCE events (ts BIGINT, cat INT) WITH (connector = 'kafka', brokers = '127.0.0.1:1', topic = 'e', format = 'json');
SELECT ts, cat FROM events;`
	for _, tc := range []struct {
		sql  string
		args []string
		want string
	}{
		{gen, []string{"--instances", "2", "--instance", "1"}, "--instances 2: shares Kafka sources' partitions, and -e has no Kafka source"},
		{file, []string{"--instances", "3"}, "--instances 3: shares Kafka sources' partitions"},
		{gen, []string{"--stop-at-end"}, "--stop-at-end: reads Kafka sources to their end, and -e has no Kafka source"},
		{file, []string{"--stop-at-end"}, "--stop-at-end: reads Kafka sources to their end"},
		{gen, []string{"--checkpoint-interval", "1s"}, "--checkpoint-interval: needs --checkpoint-dir"},
		{kafka, []string{"--checkpoint-interval", "1s"}, "--checkpoint-interval: needs --checkpoint-dir"},
		// A Kafka source takes them: the run stops at the next check.
		{kafka, []string{"--instances", "2", "--instance", "1", "--stop-at-end", "--checkpoint-dir", t.TempDir(), "--checkpoint-interval", "1s"},
			"writes to stdout: checkpoints need every output"},
	} {
		code, _, stderr := cli(t, append([]string{"run", "-e", tc.sql, "--duration", "1s"}, tc.args...)...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
	// --instances 1 is every partition: nothing to refuse.
	code, stdout, stderr := cli(t, "run", "-e", file, "--instances", "1", "--instance", "0", "--workers", "1", "--pin=false")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "1,2")
}

// TestEngineFlagScope: --cores pins (not with --pin false), and --static
// binds queries under --policy static only: usage errors naming the flags.
func TestEngineFlagScope(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cores", "0", "--pin", "false"}, "--cores pins the workers to the CPUs it lists: not with --pin false"},
		{[]string{"--static", "ysb=cpu"}, "--static binds queries under --policy static, not --policy hls"},
		{[]string{"--static", "ysb=cpu", "--policy", "fcfs"}, "--static binds queries under --policy static, not --policy fcfs"},
	} {
		code, _, stderr := cli(t, append([]string{"ysb", "--duration", "1s"}, tc.args...)...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
	// --cores alone pins the workers (--pin auto), where two workers on
	// two CPUs ran unpinned.
	code, stdout, stderr := cli(t, "ysb", "--duration", "100ms", "--warmup", "0s", "--workers", "2", "--cores", "0", "--progress-interval", "0", "--json",
		"--bundle-size", "1048576")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, lastLine(stdout), `"pinned_cpus":[0,0]`)
	assert.Contains(t, stderr, "--cores 0: 2 workers on 1 distinct CPU(s)")
	// The static policy with its bindings runs.
	code, _, stderr = cli(t, "ysb", "--duration", "100ms", "--warmup", "0s", "--workers", "1", "--pin=false", "--progress-interval", "0",
		"--policy", "static", "--static", "ysb=cpu", "--bundle-size", "1048576")
	require.Equal(t, 0, code, stderr)
}

// TestYSBKafkaProgress: ysb --source kafka writes a progress line every
// --progress-interval on stderr, as run does; stdout holds the summary
// alone.
func TestYSBKafkaProgress(t *testing.T) {
	t.Parallel()
	k := kafkatest.Start(t, 1, "ad-events")
	rs := redistest.Start(t)
	code, _, errs := cli(t, "ysb", "setup", "--redis", rs.Addr, "--num-campaigns", "2", "--ads-per-campaign", "2")
	require.Equal(t, 0, code, errs)
	code, out, errs := cli(t, "ysb", "--source", "kafka", "--brokers", k.Addr, "--redis", rs.Addr, "--duration", "600ms",
		"--progress-interval", "50ms", "--workers", "1", "--pin=false")
	require.Equal(t, 0, code, errs)
	lines := 0
	for l := range strings.Lines(errs) {
		if strings.HasPrefix(l, "ysb kafka ") && strings.Contains(l, "M tuples/s") {
			lines++
		}
	}
	assert.GreaterOrEqual(t, lines, 2, "a line every 50 ms of 600 ms: %s", errs)
	assert.NotContains(t, out, "ysb kafka ", "progress goes to stderr")
}
