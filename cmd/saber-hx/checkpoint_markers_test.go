package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/saber-hx/saber-hx/checkpoint"
	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/testenv"
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
	testenv.Long(t) // a broker, runs and restarts: CI runs it
	t.Parallel()
	cluster := kafkatest.Start(t, 2, "events", "counts")
	sqlText := kafkaCountsSQL(cluster.Addr, "lost", "to_kafka", "counts")
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
	ckpts, err := filepath.Glob(filepath.Join(dir, "ckpt-*.bin"))
	require.NoError(t, err)
	assert.LessOrEqual(t, len(ckpts), 2, "the directory keeps two checkpoints")
}

// TestRunCheckpointOutputBehindUnreadable: a run killed between writing a
// checkpoint and committing its Kafka output's transaction leaves the
// output at the checkpoint before; where that one cannot be read, the
// newest valid checkpoint is past the output's, and restoring it would
// never write the aborted rows again: the run refuses, naming both and
// the directory, rather than lose them.
func TestRunCheckpointOutputBehindUnreadable(t *testing.T) {
	testenv.Long(t) // a broker, runs and restarts: CI runs it
	t.Parallel()
	cluster := kafkatest.Start(t, 4, "events", "out")
	produced := produceCrashRecords(t, cluster.Addr, 30, 500)
	dir := filepath.Join(t.TempDir(), "ckpt")
	args := []string{"run", "-e", crashKafkaSQL(cluster.Addr, "behind", "out"), "--workers", "2", "--task-size", "4096",
		"--checkpoint-dir", dir, "--checkpoint-interval", "150ms"}
	p := startCLI(t, nil, args...)
	p.waitLine(t, regexp.MustCompile(`checkpoint 2:`), time.Minute)
	p.kill9(t)
	p = startCLI(t, []string{"SABER_HX_COMMIT_PAUSE=5s"}, args...)
	line := p.waitLine(t, regexp.MustCompile(`checkpoint \d+: written, committing the outputs`), time.Minute)
	p.kill9(t)
	require.NoError(t, <-produced)
	var newest uint64
	_, err := fmt.Sscanf(line[strings.Index(line, "checkpoint "):], "checkpoint %d:", &newest)
	require.NoError(t, err, line)
	log := restartOverDamaged(t, args, dir, newest-1)
	assert.Contains(t, log, fmt.Sprintf("the newest valid one, %d, is past it: restoring it would lose the rows in between", newest))
}

// restartOverDamaged damages checkpoint epoch of dir, the one the Kafka
// output committed last, restarts the run of args to the end of its
// input, and checks that it refuses (exit 1), saying that checkpoint
// cannot be read: its log.
func restartOverDamaged(t *testing.T, args []string, dir string, epoch uint64) string {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, checkpoint.Name(epoch)), []byte("not a checkpoint"), 0o644))
	p := startCLI(t, nil, append(args, "--stop-at-end")...)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatalf("still running:\n%s", p.log())
	}
	assert.Equal(t, 1, p.cmd.ProcessState.ExitCode(), p.log())
	assert.Contains(t, p.log(), fmt.Sprintf("the Kafka output stands at checkpoint %d, which cannot be read", epoch))
	return p.log()
}

// TestRunCheckpointOutputAtUnreadable: where the checkpoint a Kafka
// output committed last cannot be read, restoring the one before would
// write the rows in between a second time: the run refuses, naming both
// and the directory (it warned and wrote them twice; a helper's crash
// test found it).
func TestRunCheckpointOutputAtUnreadable(t *testing.T) {
	testenv.Long(t) // a broker, runs and restarts: CI runs it
	t.Parallel()
	cluster := kafkatest.Start(t, 4, "events", "out")
	dir := filepath.Join(t.TempDir(), "ckpt")
	args := []string{"run", "-e", crashKafkaSQL(cluster.Addr, "at", "out"), "--workers", "2", "--task-size", "4096",
		"--checkpoint-dir", dir, "--checkpoint-interval", "100ms"}
	produced := produceCrashRecords(t, cluster.Addr, 30, 500)
	p := startCLI(t, nil, args...)
	p.waitLine(t, regexp.MustCompile(`checkpoint 3:`), time.Minute)
	// Stopped with its checkpoints committed: the output stands at the
	// newest.
	code := p.stop(t, syscall.SIGTERM)
	require.Equal(t, 143, code, p.log())
	require.NoError(t, <-produced)
	newest, err := (&checkpoint.Dir{Path: dir}).Highest()
	require.NoError(t, err)
	log := restartOverDamaged(t, args, dir, newest)
	assert.Contains(t, log, fmt.Sprintf("the newest valid one, %d, is before it: restoring it would write the rows in between again", newest-1))
}

// TestRunCheckpointTwoKafkaOutputs: two Kafka outputs to one cluster
// commit a checkpoint in one transaction: a commit that fails leaves both
// at the checkpoint before, and the restart from it writes each row once
// in each. Committed one after another, a failure between the two left
// one output a checkpoint ahead, and the restart wrote that checkpoint's
// rows in it again.
func TestRunCheckpointTwoKafkaOutputs(t *testing.T) {
	testenv.Long(t) // a broker, runs and restarts: CI runs it
	t.Parallel()
	cluster := kafkatest.Start(t, 2, "events", "counts_a", "counts_b")
	const batches, perBatch = 30, 100
	produced := produceOutage(t, cluster.Addr, batches, perBatch)
	sqlText := kafkaCountsSQL(cluster.Addr, "two", "to_a", "counts_a", "to_b", "counts_b")
	args := []string{"run", "-e", sqlText, "--workers", "2", "--checkpoint-dir", t.TempDir(), "--checkpoint-interval", "200ms"}
	var stdout strings.Builder
	var stderr lockedBuffer
	code := runAsync(append(args, "--duration", "20s"), &stdout, &stderr)
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "checkpoint 2:") }, 30*time.Second, 10*time.Millisecond)
	// The second commit from now fails: one output's, after the other's
	// of the same checkpoint, where each commits its own.
	var commits atomic.Int32
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, TopLevel: true, Err: kerr.UnknownServerError,
		When: func(r kmsg.Request) bool { return r.(*kmsg.EndTxnRequest).Commit && commits.Add(1) == 2 }})
	assert.Equal(t, 1, waitCode(t, code, &stderr), "the failed commit fails the run: %s", stderr.String())
	assert.Equal(t, 1, fault.Hits())
	require.NoError(t, <-produced)

	var stderr2 lockedBuffer
	code = runAsync(append(args, "--stop-at-end"), &stdout, &stderr2)
	require.Equal(t, 0, waitCode(t, code, &stderr2), stderr2.String())
	want := committedOracle(batches * perBatch)
	for _, topic := range []string{"counts_a", "counts_b"} {
		got, dups := committedRows(t, cluster.Addr, topic)
		assert.Zero(t, dups, "%s: rows committed twice", topic)
		assert.Equal(t, want, got, topic)
	}
}
