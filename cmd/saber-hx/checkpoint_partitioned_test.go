package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/sink"
)

// crashPartitionedSQL writes the crash tests' records (TestRunCheckpointCrashes)
// to a table partitioned by the record's second and category, each
// partition committed with a _SUCCESS once the watermark (the records'
// ts less 200 ms) is past its second plus 500 ms.
func crashPartitionedSQL(broker, group, dir string) string {
	return fmt.Sprintf(`
CREATE SOURCE events (ts TIMESTAMP(3), cat VARCHAR, v INT, WATERMARK FOR ts AS ts - INTERVAL '200' MILLISECOND)
  WITH (connector = 'kafka', brokers = '%[1]s', topic = 'events', group = '%[2]s', format = 'json', idle_timeout = '1s');
CREATE TABLE out (ts TIMESTAMP(3), v INT, dt STRING, sec STRING, cat STRING) PARTITIONED BY (dt, sec, cat) WITH (
  'connector' = 'filesystem', 'path' = 'file://%[3]s/', 'format' = 'csv',
  'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.delay' = '500 ms',
  'sink.partition-commit.policy.kind' = 'success-file', 'partition.time-extractor.timestamp-pattern' = '$dt $sec');
INSERT INTO out SELECT ts, v, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH:mm:ss'), cat FROM events;
`, broker, group, dir)
}

// catPartitions is each partition's files concatenated in lexical order
// (its parts in epoch order), and which partitions have a _SUCCESS.
func catPartitions(t *testing.T, dir string) (map[string]string, map[string]bool) {
	t.Helper()
	files, err := sink.ExistingPartitions(dir, "_SUCCESS")
	require.NoError(t, err)
	out, success := map[string]string{}, map[string]bool{}
	for rel, fs := range files {
		sort.Strings(fs)
		var b strings.Builder
		for _, f := range fs {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			b.Write(data)
		}
		out[rel] = b.String()
		_, err := os.Stat(filepath.Join(dir, rel, "_SUCCESS"))
		success[rel] = err == nil
	}
	return out, success
}

// TestRunCheckpointCrashesPartitioned: a partitioned filesystem table
// written from a live Kafka topic under checkpoints, killed with SIGKILL
// three times (at a random moment; between a checkpoint and the commit
// of its parts; at a random moment after a restore) and restarted each
// time, then run to the end: every partition's parts, in epoch order, are
// byte for byte the file of a run without checkpoints, the rows the
// records give, no in-progress file left, a _SUCCESS in every partition.
func TestRunCheckpointCrashesPartitioned(t *testing.T) {
	t.Parallel()
	testenv.Long(t) // three kill -9s of a process reading Kafka; the file crash tests run by default
	cluster := kafkatest.Start(t, 4, "events")
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 21))
	const batches, perBatch = 25, 400
	produced := produceCrashRecords(t, cluster.Addr, batches, perBatch)

	tmp := t.TempDir()
	dir, out := filepath.Join(tmp, "ckpt"), filepath.Join(tmp, "out")
	args := []string{"run", "-e", crashPartitionedSQL(cluster.Addr, "crashy", out), "--workers", "2", "--task-size", "4096",
		"--checkpoint-dir", dir, "--checkpoint-interval", "150ms"}
	restored := regexp.MustCompile(`restored checkpoint`)
	// 1: killed at a random moment, a few checkpoints in.
	p := startCLI(t, nil, args...)
	p.waitLine(t, regexp.MustCompile(`checkpoint 2:`), time.Minute)
	time.Sleep(time.Duration(rnd.IntN(400)) * time.Millisecond)
	p.kill9(t)
	// 2: killed between a checkpoint and the commit of its parts: to be
	// rolled forward.
	p = startCLI(t, []string{"SABER_HX_COMMIT_PAUSE" + "=5s"}, args...)
	p.waitLine(t, restored, time.Minute)
	inProgress := func() int {
		left, err := filepath.Glob(filepath.Join(out, "*", "*", "*", ".data.part-*.inprogress"))
		require.NoError(t, err)
		return len(left)
	}
	for range 5 { // an epoch without rows pre-commits no part
		p.waitLine(t, regexp.MustCompile(`written, committing the outputs`), time.Minute)
		if inProgress() > 0 {
			break
		}
	}
	p.kill9(t)
	rolled := inProgress() > 0
	// 3: killed at a random moment after a restore.
	p = startCLI(t, nil, args...)
	p.waitLine(t, restored, time.Minute)
	p.waitLine(t, regexp.MustCompile(`checkpoint [0-9]+:`), time.Minute)
	time.Sleep(time.Duration(100+rnd.IntN(400)) * time.Millisecond)
	p.kill9(t)
	if rolled {
		assert.Regexp(t, `data\.part-[0-9]{20}: committed \(epoch [0-9]+ was pre-committed`, p.log(), "rolled forward")
	} else {
		t.Log("no part pre-committed when killed in the commit's pause: nothing to roll forward")
	}
	// 4: after the last record, to the end; and a run without
	// checkpoints at the same time.
	require.NoError(t, <-produced)
	plain := filepath.Join(tmp, "plain")
	p = startCLI(t, nil, append(args, "--stop-at-end")...)
	noCkpt := startCLI(t, nil, "run", "-e", crashPartitionedSQL(cluster.Addr, "plain", plain), "--workers", "2", "--task-size", "4096", "--stop-at-end")
	for _, q := range []*cliProcess{p, noCkpt} {
		q.wait(t, 2*time.Minute)
		require.NoError(t, q.err, q.log())
	}
	got, gotSuccess := catPartitions(t, out)
	want, wantSuccess := catPartitions(t, plain)
	// the records' rows, by partition
	oracle := map[string][]string{}
	for i := range batches * perBatch {
		ts, cat, v := crashRecord(i)
		tm := time.UnixMilli(ts).UTC()
		rel := fmt.Sprintf("dt=%s/sec=%s/cat=%d", tm.Format("2006-01-02"), strings.ReplaceAll(tm.Format("15:04:05"), ":", "%3A"), cat)
		oracle[rel] = append(oracle[rel], fmt.Sprintf("%s,%d\n", tm.Format("2006-01-02 15:04:05.000"), v))
	}
	require.Len(t, want, len(oracle))
	for rel, rows := range oracle {
		lines := strings.SplitAfter(want[rel], "\n")
		lines = lines[:len(lines)-1]
		sort.Strings(lines)
		sort.Strings(rows)
		assert.Equal(t, rows, lines, rel)
		assert.True(t, wantSuccess[rel], rel)
	}
	assert.Equal(t, want, got, "crashed against a run without checkpoints")
	assert.Equal(t, wantSuccess, gotSuccess)
	left, err := filepath.Glob(filepath.Join(out, "*", "*", "*", ".*"))
	require.NoError(t, err)
	assert.Empty(t, left, "in-progress parts left")
}
