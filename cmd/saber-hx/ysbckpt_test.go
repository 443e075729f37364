package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/redistest"
	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/ysb"
)

// ysbWindows reads every window of the campaigns in Redis: campaign and
// start to seen_count.
func ysbWindows(t *testing.T, addr string) map[string]int64 {
	t.Helper()
	cl := redis.NewClient(&redis.Options{Addr: addr})
	defer cl.Close()
	ctx := context.Background()
	_, camps, err := ysb.LoadCampaignsRedis(ctx, cl)
	require.NoError(t, err)
	ws, err := ysb.ReadRedisWindows(ctx, cl, camps)
	require.NoError(t, err)
	out := map[string]int64{}
	for _, w := range ws {
		k := fmt.Sprintf("%s@%d", w.Campaign, w.Start)
		_, dup := out[k]
		assert.False(t, dup, "window %s listed twice", k)
		out[k] = w.Count
	}
	return out
}

// TestYSBKafkaCheckpointCrashes: ysb --source kafka --checkpoint-dir, as a
// process over a live topic (ysb produce running, 4 partitions, skewed,
// some late events) and a consumer group, killed with SIGKILL three times
// (at a random moment, between a checkpoint's write and its rename, and
// at a random moment after a restore) and restarted each time, then run
// to the topic's end: ysb check finds every window equal to the oracle's
// over the producer's log, and Redis holds what a run without a crash
// (nor checkpoints) writes into another Redis.
func TestYSBKafkaCheckpointCrashes(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	k := kafkatest.Start(t, 4, "ad-events")
	crashed, calm := redistest.Start(t), redistest.Start(t)
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	gen := []string{"--num-campaigns", "20", "--ads-per-campaign", "5", "--seed", "5"}
	for _, rs := range []*redistest.Server{crashed, calm} {
		code, _, errs := cli(t, append([]string{"ysb", "setup", "--redis", rs.Addr}, gen...)...)
		require.Equal(t, 0, code, errs)
	}
	logPath := filepath.Join(t.TempDir(), "events.log")
	prod := startCLI(t, nil, append([]string{"ysb", "produce", "--brokers", k.Addr, "--topic", "ad-events", "--rate", "2000",
		"--duration", "8s", "--skew", "500", "--late-fraction", "0.01", "--partitions", "4", "--log", logPath}, gen...)...)

	dir := filepath.Join(t.TempDir(), "ckpt")
	args := []string{"ysb", "--source", "kafka", "--brokers", k.Addr, "--topic", "ad-events", "--redis", crashed.Addr, "--group", "ysb-crash",
		"--workers", workers, "--task-size", "2048", "--checkpoint-dir", dir, "--checkpoint-interval", "200ms"}
	// 1: killed at a random moment, a few checkpoints in.
	p := startCLI(t, nil, args...)
	p.waitLine(t, regexp.MustCompile(`checkpoint 2:`), time.Minute)
	time.Sleep(time.Duration(rnd.IntN(800)) * time.Millisecond)
	p.kill9(t)
	// 2: killed between a checkpoint's write and its rename.
	p = startCLI(t, []string{"SABER_HX_CHECKPOINT_PAUSE" + "=5s"}, args...)
	p.waitLine(t, regexp.MustCompile(`restored checkpoint`), time.Minute)
	p.waitLine(t, regexp.MustCompile(`written, renaming`), time.Minute)
	p.kill9(t)
	// 3: killed at a random moment after the restore.
	p = startCLI(t, nil, args...)
	p.waitLine(t, regexp.MustCompile(`restored checkpoint`), time.Minute)
	time.Sleep(time.Duration(200+rnd.IntN(1000)) * time.Millisecond)
	p.kill9(t)
	select {
	case <-prod.done:
		t.Fatalf("the producer ended before the last crash: the crashes were not all over a live topic\n%s", prod.log())
	default:
	}
	prod.wait(t, time.Minute)

	// 4: to the end of the topic; beside it, the same run without a crash
	// nor checkpoints, into the other Redis.
	p = startCLI(t, nil, append(args, "--stop-at-end", "--json")...)
	ref := startCLI(t, nil, "ysb", "--source", "kafka", "--brokers", k.Addr, "--topic", "ad-events", "--redis", calm.Addr,
		"--workers", workers, "--task-size", "2048", "--stop-at-end")
	p.wait(t, 2*time.Minute)
	ref.wait(t, 2*time.Minute)
	assert.Contains(t, p.log(), "restored checkpoint")
	lines := strings.Split(strings.TrimSpace(p.stdout.String()), "\n")
	var sum ysbKafkaSummary
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &sum), p.stdout.String())
	assert.Equal(t, "kafka", sum.Mode)
	require.NotNil(t, sum.Checkpoints)
	assert.Positive(t, sum.Checkpoints.RestoredEpoch)
	assert.Equal(t, dir, sum.Checkpoints.Dir)

	for _, rs := range []*redistest.Server{crashed, calm} {
		code, out, errs := cli(t, "ysb", "check", "--redis", rs.Addr, "--events", logPath)
		assert.Equal(t, 0, code, out+errs)
		assert.Contains(t, out, " 0 mismatches")
	}
	want, got := ysbWindows(t, calm.Addr), ysbWindows(t, crashed.Addr)
	require.NotEmpty(t, want)
	assert.Equal(t, want, got, "crashed against crash-free")
}

// TestYSBKafkaCheckpointUsage: the checkpoint and share flags belong to
// --source kafka.
func TestYSBKafkaCheckpointUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ysb", "--checkpoint-dir", "x", "--duration", "1s"}, "--checkpoint-dir applies to --source kafka, not to the generator benchmark"},
		{[]string{"ysb", "--source", "kafka", "--instance", "2", "--instances", "2", "--brokers", "x:1", "--redis", "x:1"}, "--instance 2 --instances 2"},
		{[]string{"ysb", "--source", "kafka", "--checkpoint-dir", "x", "--checkpoint-interval", "0s", "--brokers", "x:1", "--redis", "x:1"}, "--checkpoint-interval 0s"},
	} {
		code, _, errs := cli(t, tc.args...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, errs)
		assert.Contains(t, errs, tc.want, "%v", tc.args)
	}
}

// TestYSBKafkaInstances: ysb --source kafka --instance 1 --instances 2
// reads the partitions 1 and 3 alone, and says that YSB's counts are then
// partial.
func TestYSBKafkaInstances(t *testing.T) {
	t.Parallel()
	k := kafkatest.Start(t, 4, "ad-events")
	rs := redistest.Start(t)
	code, _, errs := cli(t, "ysb", "setup", "--redis", rs.Addr, "--num-campaigns", "10")
	require.Equal(t, 0, code, errs)
	logPath := filepath.Join(t.TempDir(), "events.log")
	code, _, errs = cli(t, "ysb", "produce", "--brokers", k.Addr, "--rate", "4000", "--duration", "1s", "--partitions", "4",
		"--num-campaigns", "10", "--log", logPath)
	require.Equal(t, 0, code, errs)
	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	var mine uint64
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if p, _, _ := strings.Cut(l, "\t"); p == "1" || p == "3" {
			mine++
		}
	}
	require.Positive(t, mine)
	code, out, errs := cli(t, "ysb", "--source", "kafka", "--brokers", k.Addr, "--redis", rs.Addr, "--instance", "1", "--instances", "2",
		"--stop-at-end", "--workers", workers, "--task-size", "2048", "--json")
	require.Equal(t, 0, code, errs)
	s, raw := parseSummary(t, out)
	assert.Equal(t, mine, s.Tuples)
	assert.NotContains(t, raw, "checkpoints")
	assert.Contains(t, errs, "(instance 1 of 2)")
	assert.Contains(t, errs, "warning: --instances 2")
}

// TestYSBKafkaCheckpointDuration: --duration ends a checkpointed run with
// exit 0 after a last checkpoint (the merge may hold the last records of
// a partition back, waiting for the other to go idle); the next run over
// the same directory, with --stop-at-end, restores it and reads only what
// the first left: the engine's counters, restored, count every event once,
// and Redis is as ysb check wants it.
func TestYSBKafkaCheckpointDuration(t *testing.T) {
	t.Parallel()
	k := kafkatest.Start(t, 2, "ad-events")
	rs := redistest.Start(t)
	code, _, errs := cli(t, "ysb", "setup", "--redis", rs.Addr, "--num-campaigns", "10")
	require.Equal(t, 0, code, errs)
	logPath := filepath.Join(t.TempDir(), "events.log")
	code, _, errs = cli(t, "ysb", "produce", "--brokers", k.Addr, "--rate", "3000", "--duration", "1s", "--partitions", "2",
		"--num-campaigns", "10", "--log", logPath)
	require.Equal(t, 0, code, errs)
	dir := filepath.Join(t.TempDir(), "ckpt")
	args := []string{"ysb", "--source", "kafka", "--brokers", k.Addr, "--redis", rs.Addr, "--checkpoint-dir", dir,
		"--workers", workers, "--task-size", "2048", "--json"}
	code, out, errs := cli(t, append(args, "--duration", "1500ms")...)
	require.Equal(t, 0, code, errs)
	var first ysbKafkaSummary
	require.NoError(t, json.Unmarshal([]byte(lastLine(out)), &first))
	require.NotNil(t, first.Checkpoints)
	assert.Positive(t, first.Checkpoints.Taken)
	assert.Zero(t, first.Checkpoints.RestoredEpoch)
	assert.False(t, first.Interrupted)
	assert.Contains(t, errs, "no valid checkpoint")

	code, out, errs = cli(t, append(args, "--stop-at-end")...)
	require.Equal(t, 0, code, errs)
	var again ysbKafkaSummary
	require.NoError(t, json.Unmarshal([]byte(lastLine(out)), &again))
	require.NotNil(t, again.Checkpoints)
	assert.Equal(t, first.Checkpoints.Epoch, again.Checkpoints.RestoredEpoch)
	assert.Contains(t, errs, "restored checkpoint")
	f, err := os.Open(logPath)
	require.NoError(t, err)
	el, err := ysb.ReadEventLog(f, logPath)
	f.Close()
	require.NoError(t, err)
	// The engine's counters are restored too: the second run's own and
	// those it restored are the whole stream's, every event once.
	assert.LessOrEqual(t, first.Tuples, uint64(el.Events))
	assert.Positive(t, again.RestoredTuples)
	assert.Equal(t, uint64(el.Events), again.Tuples+again.RestoredTuples, "every event read once over the two runs")

	code, out, errs = cli(t, "ysb", "check", "--redis", rs.Addr, "--events", logPath)
	assert.Equal(t, 0, code, out+errs)
}
