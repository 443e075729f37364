package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/checkpoint"
	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/testenv"
)

// crashFileSQL is crashSQL's query into a CSV file, its group key a
// VARCHAR (the records' "cat" is quoted, which an INT column reads too):
// dictionary-encoded by the decoders, its dictionary restored with each
// checkpoint.
func crashFileSQL(broker, group, path string) string {
	return fmt.Sprintf(`
CREATE SOURCE events (ts BIGINT, cat VARCHAR, v INT)
  WITH (connector = 'kafka', brokers = '%[1]s', topic = 'events', group = '%[2]s', format = 'json', idle_timeout = '1s');
CREATE SINK out AS
  SELECT window_start, cat, COUNT(*) AS n, SUM(v) AS s, MAX(v) AS m FROM HOP(events, ts, INTERVAL '50' MILLISECOND, INTERVAL '200' MILLISECOND)
  GROUP BY window_start, cat
  WITH (connector = 'file', path = '%[3]s', format = 'csv');
`, broker, group, path)
}

const crashFileHeader = "window_start,cat,n,s,m\n"

// catParts is "cat P.part-*": path's parts in lexical order.
func catParts(t *testing.T, path string) string {
	names, err := filepath.Glob(path + ".part-*")
	require.NoError(t, err)
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		data, err := os.ReadFile(n)
		require.NoError(t, err)
		b.Write(data)
	}
	return b.String()
}

// inProgress counts path's in-progress parts.
func inProgress(t *testing.T, path string) int {
	names, err := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".part-*.inprogress"))
	require.NoError(t, err)
	return len(names)
}

// partEpochs lists the epochs of out's parts, committed or in progress.
func partEpochs(t *testing.T, out string) []uint64 {
	names, err := filepath.Glob(filepath.Join(filepath.Dir(out), "*"+filepath.Base(out)+".part-*"))
	require.NoError(t, err)
	var epochs []uint64
	for _, n := range names {
		_, e, _ := strings.Cut(filepath.Base(n), ".part-")
		e = strings.TrimSuffix(e, ".inprogress")
		v, err := strconv.ParseUint(e, 10, 64)
		require.NoError(t, err, n)
		epochs = append(epochs, v)
	}
	return epochs
}

// waitPreCommitted waits for a line of a checkpoint's pause (re) at which
// a part of out is pre-committed: an epoch in which no window closed has
// no part, and under load the first checkpoint after a restore can come
// before any did; the next pause is then waited for.
func waitPreCommitted(t *testing.T, p *cliProcess, out string, re *regexp.Regexp) {
	t.Helper()
	for range 5 {
		p.waitLine(t, re, time.Minute)
		if inProgress(t, out) > 0 {
			return
		}
	}
}

// csvWindows reads crashFileSQL's rows per window and group.
func csvWindows(t *testing.T, text string) (map[crashKey]crashAgg, int) {
	rows, dups := map[crashKey]crashAgg{}, 0
	for _, l := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(text, crashFileHeader), "\n"), "\n") {
		var v [5]int64
		f := strings.Split(l, ",")
		require.Len(t, f, 5, l)
		for i := range f {
			n, err := strconv.ParseInt(f[i], 10, 64)
			require.NoError(t, err, l)
			v[i] = n
		}
		k := crashKey{v[0], v[1]}
		if _, ok := rows[k]; ok {
			dups++
		}
		rows[k] = crashAgg{v[2], v[3], v[4]}
	}
	return rows, dups
}

// TestRunCheckpointCrashesFile: the sliding window with groups of
// TestRunCheckpointCrashes from a live Kafka topic into a CSV file, written
// as a part per checkpoint, killed with SIGKILL four times (at a random
// moment; between a checkpoint's write and its rename; between the
// checkpoint and the commit of its parts; at a random moment, after which
// the newest checkpoint is corrupted) and restarted each time, then
// stopped by SIGTERM and restarted to the end: the parts,
// read in lexical order, are byte for byte a crash-free checkpointed run's
// and a run's without checkpoints (its one file), the header once, every
// window of the query's result once.
//
// It fails where the recovery does not roll the pre-committed part forward
// (the rows of the epoch killed before its commit are missing), does not
// remove newer parts (the rows of the corrupted checkpoint's epoch twice),
// or where the header is not dropped on a restore (written again).
func TestRunCheckpointCrashesFile(t *testing.T) {
	t.Parallel()
	cluster := kafkatest.Start(t, 4, "events")
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 20))
	// The records go on arriving until the SIGTERM (at most 30 batches
	// of 400 every 100 ms): no wait for the rest of a fixed count after.
	const batches, perBatch = 30, 400
	stop := make(chan struct{})
	produced := produceCrashRecordsUntil(t, cluster.Addr, batches, perBatch, stop)

	tmp := t.TempDir()
	dir, out := filepath.Join(tmp, "ckpt"), filepath.Join(tmp, "out.csv")
	args := []string{"run", "-e", crashFileSQL(cluster.Addr, "crashy", out), "--workers", "2", "--task-size", "4096",
		"--checkpoint-dir", dir, "--checkpoint-interval", "150ms"}
	restored := regexp.MustCompile(`restored checkpoint`)
	// 1: killed at a random moment, a few checkpoints in.
	p := startCLI(t, nil, args...)
	p.waitLine(t, regexp.MustCompile(`checkpoint 2:`), time.Minute)
	time.Sleep(time.Duration(rnd.IntN(400)) * time.Millisecond)
	p.kill9(t)
	// 2: killed between a checkpoint's write and its rename: its parts
	// pre-committed, to be removed.
	p = startCLI(t, []string{"SABER_HX_CHECKPOINT_PAUSE" + "=5s"}, args...)
	p.waitLine(t, restored, time.Minute)
	waitPreCommitted(t, p, out, regexp.MustCompile(`written, renaming`))
	p.kill9(t)
	assert.Equal(t, 1, inProgress(t, out), "the pre-committed part of the checkpoint not renamed")
	// 3: killed between a checkpoint and the commit of its parts: to be
	// rolled forward.
	p = startCLI(t, []string{"SABER_HX_COMMIT_PAUSE" + "=5s"}, args...)
	waitPreCommitted(t, p, out, regexp.MustCompile(`written, committing the outputs`))
	p.kill9(t)
	assert.Regexp(t, `out\.csv\.part-[0-9]{20}\.inprogress: removed \(epoch [0-9]+ is not committed`, p.log())
	assert.Equal(t, 1, inProgress(t, out), "the pre-committed part of the checkpoint written")
	// 4: killed at a random moment; then the newest checkpoint corrupted,
	// so that the restart falls back to the previous one and removes the
	// parts from the newest's epoch on. An epoch in which no window closed
	// writes no part: where the run had read all there was (under load,
	// the restarts before it may have), there is none to remove.
	p = startCLI(t, nil, args...)
	p.waitLine(t, restored, time.Minute)
	p.waitLine(t, regexp.MustCompile(`checkpoint [0-9]+:`), time.Minute)
	time.Sleep(time.Duration(200+rnd.IntN(400)) * time.Millisecond)
	p.kill9(t)
	assert.Regexp(t, `out\.csv\.part-[0-9]{20}: committed \(epoch [0-9]+ was pre-committed`, p.log(), "rolled forward")
	c, err := checkpoint.Latest(dir)
	require.NoError(t, err)
	newer := slices.ContainsFunc(partEpochs(t, out), func(e uint64) bool { return e >= c.Epoch })
	b, err := os.ReadFile(c.Path)
	require.NoError(t, err)
	b[len(b)-1] ^= 0x40
	require.NoError(t, os.WriteFile(c.Path, b, 0o644))
	// 5: stopped by SIGTERM: the last checkpoint's parts committed, the
	// drain's rows after it not written.
	p = startCLI(t, nil, args...)
	p.waitLine(t, restored, time.Minute)
	p.waitLine(t, regexp.MustCompile(`checkpoint [0-9]+:`), time.Minute)
	code := p.stop(t, syscall.SIGTERM)
	close(stop)
	assert.Equal(t, 128+int(syscall.SIGTERM), code, p.log())
	assert.Contains(t, p.log(), "using the previous checkpoint")
	if newer {
		assert.Regexp(t, `out\.csv\.part-[0-9]{20}(\.inprogress)?: removed \(epoch`, p.log(), "the corrupted checkpoint's part")
	} else {
		t.Logf("no part from the corrupted checkpoint's epoch %d on: none to remove", c.Epoch)
	}
	assert.Regexp(t, `interrupted: the files' parts are committed up to checkpoint [0-9]+; the rows after it are not written`, p.log())
	assert.Zero(t, inProgress(t, out), "the drain's part aborted")
	// 6: after the last record, to the end; with a crash-free run, and a
	// run without checkpoints, at the same time.
	pr := <-produced
	require.NoError(t, pr.err)
	calm, plain := filepath.Join(tmp, "calm.csv"), filepath.Join(tmp, "plain.csv")
	p = startCLI(t, nil, append(args, "--stop-at-end")...)
	ref := startCLI(t, nil, "run", "-e", crashFileSQL(cluster.Addr, "calm", calm), "--workers", "2", "--task-size", "4096",
		"--checkpoint-dir", filepath.Join(tmp, "calm"), "--checkpoint-interval", "150ms", "--stop-at-end")
	noCkpt := startCLI(t, nil, "run", "-e", crashFileSQL(cluster.Addr, "plain", plain), "--workers", "2", "--task-size", "4096", "--stop-at-end")
	for _, q := range []*cliProcess{p, ref, noCkpt} {
		q.wait(t, 2*time.Minute)
	}
	assert.Contains(t, p.log(), "the windows open at the end, after checkpoint")
	assert.NotContains(t, p.log(), ": removed (", "SIGTERM left no part after its last checkpoint")

	got, want := catParts(t, out), catParts(t, calm)
	plainOut, err := os.ReadFile(plain)
	require.NoError(t, err)
	assert.Zero(t, inProgress(t, out)+inProgress(t, calm), "in-progress parts left")
	assert.True(t, strings.HasPrefix(got, crashFileHeader), "the header first")
	assert.Equal(t, 1, strings.Count(got, crashFileHeader), "the header once")
	rows, dups := csvWindows(t, got)
	assert.Zero(t, dups, "rows written twice")
	assert.Equal(t, crashOracle(pr.records), rows, "crashed against the query's result")
	assert.Equal(t, want, got, "crashed against crash-free (the parts)")
	assert.Equal(t, string(plainOut), got, "crashed against a run without checkpoints (its file)")
}

// TestCheckpointFileRefusals: under --checkpoint-dir, outputs that cannot
// be taken back after a crash (stdout, a FIFO, a device, a descriptor) and
// a start without a checkpoint over the parts of an earlier run, and two
// queries into one file, are usage errors (exit status 2), nothing written. Without the refusal of parts
// the run would go on (and fail on the unreachable broker, not with 2).
func TestCheckpointFileRefusals(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	fifo := filepath.Join(tmp, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	old := filepath.Join(tmp, "old.csv")
	require.NoError(t, os.WriteFile(old+".part-00000000000000000001", []byte(crashFileHeader), 0o644))
	for _, c := range []struct {
		out, msg string
	}{
		{fifo, "not a regular file"},
		{"/dev/null", "not a regular file"},
		{"/dev/stdout", "names a file descriptor of the process"},
		{filepath.Join(tmp, "missing", "out.csv"), "no such file or directory"},
		{old, "holds no checkpoint, but " + old + " already holds parts of an earlier run (" + old + ".part-00000000000000000001): " +
			"resume that run with its checkpoint directory, or remove its parts (rm " + old + ".part-*)"},
	} {
		var stdout, stderr strings.Builder
		code := run([]string{"run", "-e", crashFileSQL("127.0.0.1:1", "g", c.out), "--checkpoint-dir", filepath.Join(tmp, "ckpt"), "--duration", "1s"},
			&stdout, &stderr)
		assert.Equal(t, 2, code, "%s: %s", c.out, stderr.String())
		assert.Contains(t, stderr.String(), c.msg, c.out)
	}
	twice := crashFileSQL("127.0.0.1:1", "g", filepath.Join(tmp, "o.csv")) + `
CREATE SINK again AS SELECT ts, cat FROM events WITH (connector = 'file', path = '` + filepath.Join(tmp, ".", "o.csv") + `');`
	var stdout, stderr strings.Builder
	code := run([]string{"run", "-e", twice, "--checkpoint-dir", filepath.Join(tmp, "ckpt"), "--duration", "1s"}, &stdout, &stderr)
	assert.Equal(t, 2, code, stderr.String())
	assert.Contains(t, stderr.String(), "queries out and again both write to "+filepath.Join(tmp, "o.csv")+": give each its own output")
	ents, err := os.ReadDir(tmp)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"fifo", "old.csv.part-00000000000000000001"}, names, "nothing written")
}

// TestRunKafkaAndFileCrashBeforeTheFirstCommit: a program with a Kafka
// output and a file output, killed between its first checkpoint's write
// and the outputs' commit. The Kafka output committed no checkpoint, so
// the restart starts afresh, its checkpoints numbered past the directory's:
// the file output's next part is that checkpoint's, where it was the
// first's and every checkpoint of every restart failed its pre-commit.
func TestRunKafkaAndFileCrashBeforeTheFirstCommit(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	cluster := kafkatest.Start(t, 4, "events", "out")
	produced := produceCrashRecords(t, cluster.Addr, 30, 200)
	tmp := t.TempDir()
	dir, out := filepath.Join(tmp, "ckpt"), filepath.Join(tmp, "out.csv")
	program := fmt.Sprintf(`
CREATE SOURCE events (ts BIGINT, cat VARCHAR, v INT)
  WITH (connector = 'kafka', brokers = '%[1]s', topic = 'events', group = 'kf', format = 'json', idle_timeout = '1s');
CREATE SINK to_kafka AS
  SELECT window_start, cat, COUNT(*) AS n FROM TUMBLE(events, ts, INTERVAL '50' MILLISECOND) GROUP BY window_start, cat
  WITH (connector = 'kafka', brokers = '%[1]s', topic = 'out', key = 'cat');
CREATE SINK to_file AS
  SELECT window_start, cat, COUNT(*) AS n FROM TUMBLE(events, ts, INTERVAL '50' MILLISECOND) GROUP BY window_start, cat
  WITH (connector = 'file', path = '%[2]s', format = 'csv');
`, cluster.Addr, out)
	args := []string{"run", "-e", program, "--workers", "2", "--task-size", "4096", "--checkpoint-dir", dir, "--checkpoint-interval", "150ms"}
	p := startCLI(t, []string{"SABER_HX_COMMIT_PAUSE=5s"}, args...)
	p.waitLine(t, regexp.MustCompile(`checkpoint 1: written, committing the outputs`), time.Minute)
	p.kill9(t)

	p = startCLI(t, nil, append(args, "--duration", "4s")...)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatalf("still running:\n%s", p.log())
	}
	require.NoError(t, <-produced)
	assert.Equal(t, 0, p.cmd.ProcessState.ExitCode(), p.log())
	assert.Contains(t, p.log(), "the Kafka output has committed no checkpoint: starting afresh")
	assert.NotContains(t, p.log(), "is being written")
	parts := catParts(t, out)
	assert.Equal(t, 1, strings.Count(parts, "window_start,cat,n\n"), "the header once: %.200q", parts)
	assert.True(t, strings.HasPrefix(parts, "window_start,cat,n\n"), "%.200q", parts)
}
