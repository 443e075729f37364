package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/redistest"
)

// TestRunInstancesSplitPartitions: three processes (--instance I
// --instances 3) over a topic of six partitions, whose records are keyed
// (and partitioned) by the GROUP BY key, write together exactly the
// windows one process writes; instance 1 checkpoints and is killed with
// SIGKILL mid-run and restarted, resuming from its checkpoint.
func TestRunInstancesSplitPartitions(t *testing.T) {
	t.Parallel()
	cluster := kafkatest.Start(t, 6, "events")
	rds := redistest.Start(t)
	rc := redis.NewClient(&redis.Options{Addr: rds.Addr})
	defer rc.Close()
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 5))

	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	const n = 6000 // 1000 a partition, half before the kill: 12000 checked the same split at twice the work
	produce := func(from, to int) {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			ts, cat, v := crashRecord(i)
			recs = append(recs, &kgo.Record{Topic: "events", Partition: int32(cat % 6), Key: fmt.Append(nil, cat),
				Value: fmt.Appendf(nil, `{"ts": %d, "cat": %d, "v": %d}`, ts, cat, v)})
		}
		require.NoError(t, cl.ProduceSync(context.Background(), recs...).FirstErr())
	}
	produce(0, n/2)

	common := []string{"--workers", "1", "--task-size", "4096"}
	dir := filepath.Join(t.TempDir(), "ckpt1")
	split := func(i int, extra ...string) *cliProcess {
		args := append([]string{"run", "-e", crashSQL(cluster.Addr, rds.Addr, "split", "split"), "--instance", fmt.Sprint(i), "--instances", "3"}, common...)
		return startCLI(t, nil, append(args, extra...)...)
	}
	// Instances 0 and 2 run until told to stop (SIGTERM: they drain);
	// instance 1 checkpoints, and is killed mid-run.
	// They serve their metrics, so that the test can see when they read
	// all of their partitions' records.
	p0, p2 := split(0, "--metrics-addr", "127.0.0.1:0"), split(2, "--metrics-addr", "127.0.0.1:0")
	urls := []string{urlOf(t, p0), urlOf(t, p2)}
	p1 := split(1, "--checkpoint-dir", dir, "--checkpoint-interval", "100ms")
	p1.waitLine(t, regexp.MustCompile(`checkpoint 2:`), time.Minute)
	time.Sleep(time.Duration(rnd.IntN(300)) * time.Millisecond)
	p1.kill9(t)
	produce(n/2, n)
	// Both read the whole topic, produced by now, however long a loaded
	// machine takes to start them.
	p1 = split(1, "--checkpoint-dir", dir, "--checkpoint-interval", "100ms", "--stop-at-end")
	one := startCLI(t, nil, append([]string{"run", "-e", crashSQL(cluster.Addr, rds.Addr, "one", "one"), "--stop-at-end"}, common...)...)
	one.wait(t, 2*time.Minute)
	p1.wait(t, 2*time.Minute)
	// Instance 2i reads partitions 2i and 2i+3.
	records := func(i int) int {
		parts := map[int64]bool{int64(2 * i): true, int64(2*i + 3): true}
		count := 0
		for r := range n {
			if _, cat, _ := crashRecord(r); parts[cat%6] {
				count++
			}
		}
		return count
	}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	for i, p := range []*cliProcess{p0, p2} {
		// The merge holds a partition's last records until the others go
		// idle: wait for the query to have them.
		scrapeUntil(t, client, urls[i], fmt.Sprintf("saber_records_in_total{query=\"out\"} %d\n", records(i)))
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		select {
		case <-p.done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("still running 2 minutes after SIGTERM:\n%s", p.log())
		}
		assert.Equal(t, 128+int(syscall.SIGTERM), p.cmd.ProcessState.ExitCode(), "interrupted and drained:\n%s", p.log())
		assert.Contains(t, p.stdout.String()+p.log(), "interrupted by SIGTERM", "the summary says it")
	}
	assert.Contains(t, p1.log(), "restored checkpoint")
	// Each instance read its partitions only.
	for i, p := range []*cliProcess{p0, p2} {
		assert.Contains(t, p.stdout.String(), fmt.Sprintf("source events: %d tuples", records(i)), "instance %d", 2*i)
	}

	got, want := redisHashes(t, rc, "split"), redisHashes(t, rc, "one")
	assert.Len(t, want, len(crashOracle(n)))
	assert.Equal(t, len(want), len(got))
	assert.Equal(t, want, got, "three instances against one")
}

// urlOf waits for the metrics URL that p prints on stderr.
func urlOf(t *testing.T, p *cliProcess) string {
	t.Helper()
	l := p.waitLine(t, regexp.MustCompile(`http://\S+`), time.Minute)
	return regexp.MustCompile(`http://\S+`).FindString(l)
}
