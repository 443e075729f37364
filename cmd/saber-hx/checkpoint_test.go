package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/checkpoint"
	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/redistest"
)

// cliProcess is saber-hx run as a process of its own (the test binary
// re-executed as the command: TestMain), its stderr read line by line.
type cliProcess struct {
	cmd    *exec.Cmd
	stdout strings.Builder // read once done
	mu     sync.Mutex
	stderr strings.Builder
	lines  chan string
	done   chan struct{}
	err    error
}

func startCLI(t *testing.T, env []string, args ...string) *cliProcess {
	t.Helper()
	return startCLIIn(t, nil, env, args...)
}

// startCLIIn is startCLI with stdin as the process's standard input (nil:
// none).
func startCLIIn(t *testing.T, stdin io.Reader, env []string, args ...string) *cliProcess {
	t.Helper()
	p := &cliProcess{cmd: exec.Command(os.Args[0], args...), lines: make(chan string, 1024), done: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), asCommandEnv+"=1"), env...)
	p.cmd.Stdin = stdin
	p.cmd.Stdout = &p.stdout
	pipe, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		p.err = p.cmd.Wait()
		close(p.lines)
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// waitLine waits for a stderr line matching re, failing t after limit.
func (p *cliProcess) waitLine(t *testing.T, re *regexp.Regexp, limit time.Duration) string {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("exited (%v) without a line matching %s:\n%s", p.err, re, p.log())
			}
			if re.MatchString(l) {
				return l
			}
		case <-deadline:
			t.Fatalf("no line matching %s in %v:\n%s", re, limit, p.log())
		}
	}
}

func (p *cliProcess) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// kill9 kills the process (SIGKILL: nothing runs after it) and waits.
func (p *cliProcess) kill9(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Kill())
	<-p.done
}

// stop sends the process sig and waits for it to end, at most a minute;
// it returns the exit status.
func (p *cliProcess) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatalf("still running a minute after %v:\n%s", sig, p.log())
	}
	return p.cmd.ProcessState.ExitCode()
}

// wait waits for the process to end on its own, at most limit.
func (p *cliProcess) wait(t *testing.T, limit time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("still running after %v:\n%s", limit, p.log())
	}
	for range p.lines {
	}
	require.NoError(t, p.err, p.log())
}

// crashSQL is a sliding window with groups (MAX: the two-stacks
// aggregator; SUM and COUNT) from Kafka to Redis hashes keyed by prefix.
func crashSQL(broker, redisAddr, group, prefix string) string {
	return fmt.Sprintf(`
CREATE SOURCE events (ts BIGINT, cat INT, v INT)
  WITH (connector = 'kafka', brokers = '%[1]s', topic = 'events', group = '%[3]s', format = 'json', idle_timeout = '1s');
CREATE SINK out AS
  SELECT window_start, cat, COUNT(*) AS n, SUM(v) AS s, MAX(v) AS m FROM HOP(events, ts, INTERVAL '50' MILLISECOND, INTERVAL '200' MILLISECOND)
  GROUP BY window_start, cat
  WITH (connector = 'redis', addr = '%[2]s', key = '%[4]s:{window_start}:{cat}', flush = '50ms');
`, broker, redisAddr, group, prefix)
}

type crashKey struct{ start, cat int64 }
type crashAgg struct{ n, s, m int64 }

// crashRecord is record i: event times rise (a millisecond apart), the
// category decides the partition, so that each partition is in order.
func crashRecord(i int) (ts, cat, v int64) { return int64(i), int64(i % 8), int64(i*7%13) + int64(i%3) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// crashOracle is what the query gives over records 0..n-1.
func crashOracle(n int) map[crashKey]crashAgg {
	want := map[crashKey]crashAgg{}
	for i := range n {
		ts, cat, v := crashRecord(i)
		for w := floorDiv(ts-200, 50) + 1; w*50 <= ts; w++ {
			k := crashKey{w * 50, cat}
			a, ok := want[k]
			if !ok {
				a.m = v
			}
			want[k] = crashAgg{a.n + 1, a.s + v, max(a.m, v)}
		}
	}
	return want
}

// redisHashes reads every hash under prefix: its key's rest to its fields.
// One pipeline of HGETALLs: thousands of round trips cost both processes
// more CPU than the reads.
func redisHashes(t *testing.T, rc *redis.Client, prefix string) map[string]map[string]string {
	ctx := context.Background()
	keys, err := rc.Keys(ctx, prefix+":*").Result()
	require.NoError(t, err)
	cmds := make([]*redis.MapStringStringCmd, len(keys))
	_, err = rc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.HGetAll(ctx, k)
		}
		return nil
	})
	require.NoError(t, err)
	out := map[string]map[string]string{}
	for i, k := range keys {
		h, err := cmds[i].Result()
		require.NoError(t, err)
		out[strings.TrimPrefix(k, prefix+":")] = h
	}
	return out
}

var firstWindowLine = regexp.MustCompile(`first window after the restore: ([0-9.]+) ms`)

// produceCrashRecords produces the crash tests' records of crashRecord
// into topic events, batches of perBatch every 100 ms, each record in the
// partition of its cat (of 4) and keyed by it, in a goroutine; its error
// comes on the channel.
func produceCrashRecords(t *testing.T, broker string, batches, perBatch int) <-chan error {
	res := produceCrashRecordsUntil(t, broker, batches, perBatch, nil)
	errc := make(chan error, 1)
	go func() { errc <- (<-res).err }()
	return errc
}

// crashProduced is what produceCrashRecordsUntil produced: records
// 0..records-1 (whole batches), or the error that stopped it.
type crashProduced struct {
	records int
	err     error
}

// produceCrashRecordsUntil is produceCrashRecords stopping early, after
// the batch under way, once stop is closed (nil: never): a test whose
// crashes must happen while records arrive produces until they are over,
// neither waiting for the rest of a fixed count nor running out of
// records first on a loaded machine.
func produceCrashRecordsUntil(t *testing.T, broker string, batches, perBatch int, stop <-chan struct{}) <-chan crashProduced {
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	produced := make(chan crashProduced, 1)
	go func() {
		defer cl.Close()
		for b := range batches {
			select {
			case <-stop:
				produced <- crashProduced{records: b * perBatch}
				return
			default:
			}
			var recs []*kgo.Record
			for i := b * perBatch; i < (b+1)*perBatch; i++ {
				ts, cat, v := crashRecord(i)
				recs = append(recs, &kgo.Record{Topic: "events", Partition: int32(cat % 4), Key: fmt.Append(nil, cat),
					Value: fmt.Appendf(nil, `{"ts": %d, "cat": "%d", "v": %d}`, ts, cat, v)})
			}
			if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				produced <- crashProduced{err: err}
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		produced <- crashProduced{records: batches * perBatch}
	}()
	return produced
}

// TestRunCheckpointCrashes: saber-hx run over a live Kafka topic (records
// produced while it runs) into Redis, killed with SIGKILL three times
// (at a random moment, during a checkpoint write, and at a random moment
// after the newest checkpoint was corrupted) and restarted each time from
// its checkpoint directory, leaves in Redis exactly what a run without a
// crash leaves, and what the query gives over the records. The records
// go on arriving until the third crash (at most 40 batches of 500 every
// 100 ms): no wait for the rest of a fixed count after the crashes.
func TestRunCheckpointCrashes(t *testing.T) {
	t.Parallel()
	cluster := kafkatest.Start(t, 4, "events")
	rds := redistest.Start(t)
	rc := redis.NewClient(&redis.Options{Addr: rds.Addr})
	defer rc.Close()
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 18))

	const batches, perBatch = 40, 500
	stop := make(chan struct{})
	produced := produceCrashRecordsUntil(t, cluster.Addr, batches, perBatch, stop)

	dir := filepath.Join(t.TempDir(), "ckpt")
	args := []string{"run", "-e", crashSQL(cluster.Addr, rds.Addr, "crashy", "a"), "--workers", "2", "--task-size", "4096",
		"--checkpoint-dir", dir, "--checkpoint-interval", "150ms"}
	var recoveries []string
	restarted := func(p *cliProcess) {
		if m := firstWindowLine.FindStringSubmatch(p.log()); m != nil {
			recoveries = append(recoveries, m[1]+" ms")
		}
	}
	// 1: killed at a random moment, a few checkpoints in.
	p := startCLI(t, nil, args...)
	p.waitLine(t, regexp.MustCompile(`checkpoint 2:`), time.Minute)
	time.Sleep(time.Duration(rnd.IntN(600)) * time.Millisecond)
	p.kill9(t)
	// 2: killed between a checkpoint's write and its rename.
	p = startCLI(t, []string{"SABER_HX_CHECKPOINT_PAUSE" + "=5s"}, args...)
	p.waitLine(t, regexp.MustCompile(`restored checkpoint`), time.Minute)
	p.waitLine(t, regexp.MustCompile(`written, renaming`), time.Minute)
	p.kill9(t)
	restarted(p)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	tmp := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			tmp++
		}
	}
	assert.Equal(t, 1, tmp, "the write killed before its rename leaves its temporary file")
	// 3: the newest checkpoint corrupted (a byte of its payload flipped):
	// the restart falls back to the previous one, with a warning; killed
	// at a random moment.
	p = startCLI(t, nil, args...)
	p.waitLine(t, regexp.MustCompile(`checkpoint [0-9]+:`), time.Minute)
	time.Sleep(time.Duration(200+rnd.IntN(800)) * time.Millisecond)
	p.kill9(t)
	close(stop)
	restarted(p)
	c, err := checkpoint.Latest(dir)
	require.NoError(t, err)
	b, err := os.ReadFile(c.Path)
	require.NoError(t, err)
	b[len(b)-1] ^= 0x40
	require.NoError(t, os.WriteFile(c.Path, b, 0o644))
	// 4: after the last record, run to its end.
	pr := <-produced
	require.NoError(t, pr.err)
	t.Logf("%d records", pr.records)
	// The same query without a crash (nor checkpoints), into other keys,
	// at the same time.
	p = startCLI(t, nil, append(args, "--stop-at-end", "--json")...)
	ref := startCLI(t, nil, "run", "-e", crashSQL(cluster.Addr, rds.Addr, "calm", "b"), "--workers", "2", "--task-size", "4096", "--stop-at-end")
	p.wait(t, 2*time.Minute)
	ref.wait(t, 2*time.Minute)
	assert.Contains(t, p.log(), "using the previous checkpoint")
	restarted(p)
	var sum runSummary
	lines := strings.Split(strings.TrimSpace(p.stdout.String()), "\n")
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &sum), p.stdout.String())
	require.NotNil(t, sum.Checkpoints)
	assert.Equal(t, dir, sum.Checkpoints.Dir)
	assert.Positive(t, sum.Checkpoints.Taken)
	assert.Positive(t, sum.Checkpoints.RestoredEpoch)
	assert.Greater(t, sum.Checkpoints.Epoch, sum.Checkpoints.RestoredEpoch)
	assert.Positive(t, sum.Checkpoints.Bytes)
	assert.Positive(t, sum.Checkpoints.RecoveryMillis)
	t.Logf("recovery (process start to the first window after the restore): %v", recoveries)

	got, calm := redisHashes(t, rc, "a"), redisHashes(t, rc, "b")
	want := map[string]map[string]string{}
	for k, a := range crashOracle(pr.records) {
		want[fmt.Sprintf("%d:%d", k.start, k.cat)] = map[string]string{"n": fmt.Sprint(a.n), "s": fmt.Sprint(a.s), "m": fmt.Sprint(a.m)}
	}
	assert.Equal(t, len(want), len(calm), "the crash-free run against the oracle")
	assert.Equal(t, want, calm, "the crash-free run against the oracle")
	assert.Equal(t, len(calm), len(got), "crashed against crash-free")
	if !assert.Equal(t, calm, got, "crashed against crash-free") {
		var diff []string
		for k, v := range calm {
			if fmt.Sprint(got[k]) != fmt.Sprint(v) {
				diff = append(diff, fmt.Sprintf("%s: %v, want %v", k, got[k], v))
			}
		}
		sort.Strings(diff)
		t.Logf("%d keys differ, first: %v", len(diff), diff[:min(10, len(diff))])
	}
}

// TestCheckpointFlagErrors: what --checkpoint-dir, --instance and
// --instances refuse, as usage errors (exit status 2) naming the flag.
func TestCheckpointFlagErrors(t *testing.T) {
	t.Parallel()
	gen := `CREATE SOURCE task_events (timestamp BIGINT, jobId BIGINT, taskId BIGINT, machineId BIGINT, userId INT, eventType INT,
  category INT, priority INT, cpu REAL, ram REAL, disk REAL, constraints INT) WITH (connector = 'generator', workload = 'cm1');
SELECT category FROM task_events;`
	dir := t.TempDir()
	toStdout := `CREATE SOURCE events (ts BIGINT, cat INT) WITH (connector = 'kafka', brokers = '127.0.0.1:1', topic = 'e', format = 'json');
SELECT ts, cat FROM events;`
	for _, c := range []struct {
		args []string
		msg  string
		sql  string
	}{
		{[]string{"--checkpoint-dir", dir}, "needs the program's source from Kafka, whose offsets a checkpoint holds (source task_events reads connector generator)", ""},
		{[]string{"--checkpoint-dir", dir}, "writes to stdout: checkpoints need every output in Kafka or Redis", toStdout},
		{[]string{"--checkpoint-dir", dir, "--checkpoint-interval", "0s"}, "--checkpoint-interval 0s", ""},
		{[]string{"--instance", "3", "--instances", "3"}, "--instance 3 --instances 3", ""},
		{[]string{"--instances", "0"}, "want 0 <= instance < instances", ""},
	} {
		var stdout, stderr strings.Builder
		text := gen
		if c.sql != "" {
			text = c.sql
		}
		code := run(append([]string{"run", "-e", text, "--duration", "1s"}, c.args...), &stdout, &stderr)
		assert.Equal(t, 2, code, "%v: %s", c.args, stderr.String())
		assert.Contains(t, stderr.String(), c.msg, "%v", c.args)
	}
}
