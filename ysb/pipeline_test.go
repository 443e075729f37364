package ysb

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/kafkatest"
)

// TestPipeline is the original benchmark end to end: campaigns into
// Redis, events produced to a kfake topic (with skew and late events),
// RunKafka to the end of the topic, then Check: every window's count in
// Redis is the oracle's over the log in the source's stream order.
func TestPipeline(t *testing.T) {
	for _, tc := range []struct {
		parts int
		delay int64
	}{{1, 0}, {4, 0}, {4, 3000}} {
		t.Run("", func(t *testing.T) {
			gen := GenConfig{Campaigns: 10, AdsPerCampaign: 10, Seed: 7, TuplesPerMs: 1}
			cl, k, camps := pipelineServers(t, tc.parts, gen)
			ctx := context.Background()

			var log bytes.Buffer
			pres, err := Produce(ctx, ProduceConfig{Brokers: []string{k.Addr}, Topic: "ad-events", Gen: gen, Rate: 3000,
				Duration: 1500 * time.Millisecond, SkewMs: 2000, LateFraction: 0.02, Partitions: tc.parts, Log: &log, Seed: 3})
			require.NoError(t, err)
			require.Positive(t, pres.Events)
			require.Len(t, pres.PerPartition, tc.parts)
			for _, n := range pres.PerPartition {
				assert.Positive(t, n)
			}

			rres, err := RunKafka(ctx, engine.Config{Workers: 2, TaskSize: 16 * TupleSize},
				KafkaRunConfig{Brokers: []string{k.Addr}, Topic: "ad-events", Redis: cl.Options().Addr, DelayMs: tc.delay,
					StopAtEnd: true, FlushEvery: 50 * time.Millisecond})
			require.NoError(t, err)
			assert.Equal(t, uint64(pres.Events), rres.Stats.Tuples)
			assert.Equal(t, pres.Events, rres.Source.Tuples)
			assert.False(t, rres.Interrupted)

			el, err := ReadEventLog(&log, "log")
			require.NoError(t, err)
			assert.Equal(t, pres.Events, el.Events)
			res, err := Check(ctx, cl, el, tc.delay)
			require.NoError(t, err)
			assert.Empty(t, res.Mismatches)
			assert.Equal(t, res.Windows, res.Redis)
			assert.Equal(t, uint64(res.Counts.Counted), rres.Stats.Counted)
			assert.Equal(t, res.Counts.Late, rres.Stats.Late)
			assert.Equal(t, res.Counts.Filtered, rres.Stats.Filtered)
			assert.Positive(t, res.Windows)
			if tc.delay == 0 {
				assert.Positive(t, res.Counts.Late, "skew and late events make some late")
			}
			assert.Equal(t, res.Windows, res.Latency.Windows)

			// The check fails on a count changed in Redis.
			ws, err := ReadRedisWindows(ctx, cl, []UUID{camps.CampaignIDs[0]})
			require.NoError(t, err)
			require.NotEmpty(t, ws)
			require.NoError(t, cl.Del(ctx, camps.CampaignIDs[0].String()).Err())
			res, err = Check(ctx, cl, el, tc.delay)
			require.NoError(t, err)
			assert.Len(t, res.Mismatches, len(ws))
			assert.Equal(t, int64(-1), res.Mismatches[0].Got)
		})
	}
}

// TestRunKafkaGroupResumes: with a group, a run commits what it wrote to
// Redis; a second run of the group reads nothing again, and Redis still
// checks. No goroutine is left behind.
func TestRunKafkaGroupResumes(t *testing.T) {
	gen := GenConfig{Campaigns: 5, AdsPerCampaign: 4, Seed: 8, TuplesPerMs: 1}
	cl, k, _ := pipelineServers(t, 3, gen)
	ctx := context.Background()
	var log bytes.Buffer
	pres, err := Produce(ctx, ProduceConfig{Brokers: []string{k.Addr}, Topic: "t", Gen: gen, Rate: 2000, Duration: time.Second, SkewMs: 300, Log: &log})
	require.NoError(t, err)

	before := runtime.NumGoroutine()
	kc := KafkaRunConfig{Brokers: []string{k.Addr}, Topic: "t", Group: "ysb", Redis: cl.Options().Addr, StopAtEnd: true, FlushEvery: 20 * time.Millisecond}
	r1, err := RunKafka(ctx, engine.Config{Workers: 2, TaskSize: 8 * TupleSize}, kc)
	require.NoError(t, err)
	assert.Equal(t, pres.Events, r1.Source.Tuples)
	assert.Positive(t, r1.Source.Commits)
	r2, err := RunKafka(ctx, engine.Config{Workers: 2, TaskSize: 8 * TupleSize}, kc)
	require.NoError(t, err)
	assert.Zero(t, r2.Source.Tuples, "the group's offsets were committed")
	assertNoGoroutinesLeft(t, before)

	el, err := ReadEventLog(&log, "log")
	require.NoError(t, err)
	res, err := Check(ctx, cl, el, 0)
	require.NoError(t, err)
	assert.Empty(t, res.Mismatches)
}

// assertNoGoroutinesLeft waits a little for the goroutine count to come
// back to before (by hand: testify's Eventually runs its condition on a
// goroutine of its own).
func assertNoGoroutinesLeft(t *testing.T, before int) {
	t.Helper()
	n := runtime.NumGoroutine()
	for i := 0; i < 500 && n > before; i++ {
		time.Sleep(10 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	if !assert.LessOrEqual(t, n, before, "goroutines left") {
		buf := make([]byte, 1<<20)
		t.Logf("%s", buf[:runtime.Stack(buf, true)])
	}
}

// TestRunKafkaLinger: a few events in a task far from full are merged
// while the run goes on (the partial task is dispatched once the topic
// pauses), not only when it ends.
func TestRunKafkaLinger(t *testing.T) {
	gen := GenConfig{Campaigns: 2, AdsPerCampaign: 2, Seed: 3, TuplesPerMs: 1}
	cl, k, _ := pipelineServers(t, 2, gen)
	ctx := context.Background()
	pres, err := Produce(ctx, ProduceConfig{Brokers: []string{k.Addr}, Topic: "t", Gen: gen, Rate: 200, Duration: 500 * time.Millisecond})
	require.NoError(t, err)
	require.Positive(t, pres.Events)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	merged := make(chan struct{})
	var once sync.Once
	kc := KafkaRunConfig{Brokers: []string{k.Addr}, Topic: "t", Redis: cl.Options().Addr, FlushEvery: 20 * time.Millisecond,
		Flushed: func(st engine.Stats) {
			if st.Tuples == uint64(pres.Events) {
				once.Do(func() { close(merged) })
			}
		}}
	done := make(chan error, 1)
	var res KafkaRunResult
	go func() {
		var err error
		res, err = RunKafka(runCtx, engine.Config{Workers: 2, TaskSize: 1 << 20}, kc)
		done <- err
	}()
	select {
	case <-merged:
	case err := <-done:
		t.Fatalf("run ended before merging its events: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the events were not merged while the run went on")
	}
	cancel()
	require.NoError(t, <-done)
	assert.True(t, res.Interrupted)
	assert.Equal(t, uint64(pres.Events), res.Stats.Tuples)
}

// TestRunKafkaTrickle: events arriving more often than KafkaLinger, but
// too slowly to fill a task, are merged while they keep coming.
func TestRunKafkaTrickle(t *testing.T) {
	gen := GenConfig{Campaigns: 2, AdsPerCampaign: 2, Seed: 3, TuplesPerMs: 1}
	cl, k, _ := pipelineServers(t, 1, gen)
	ctx := context.Background()

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	merged := make(chan struct{})
	var once sync.Once
	kc := KafkaRunConfig{Brokers: []string{k.Addr}, Topic: "t", Redis: cl.Options().Addr, FlushEvery: 20 * time.Millisecond,
		Flushed: func(st engine.Stats) {
			if st.Tuples > 0 {
				once.Do(func() { close(merged) })
			}
		}}
	done := make(chan error, 1)
	go func() {
		_, err := RunKafka(runCtx, engine.Config{Workers: 1, TaskSize: 1 << 20}, kc)
		done <- err
	}()
	produced := make(chan error, 1)
	produceCtx, stopProducing := context.WithCancel(ctx)
	defer stopProducing()
	go func() {
		_, err := Produce(produceCtx, ProduceConfig{Brokers: []string{k.Addr}, Topic: "t", Gen: gen, Rate: 100, Duration: 20 * time.Second})
		produced <- err
	}()
	select {
	case <-merged:
	case err := <-produced:
		t.Fatalf("nothing merged while the events came: %v", err)
	case err := <-done:
		t.Fatalf("run ended: %v", err)
	}
	stopProducing()
	<-produced
	cancel()
	require.NoError(t, <-done)
}

// TestEnsureTopicCreatedMeanwhile: the topic is created by another client
// (a consumer's auto-creation) after the producer's client cached it as
// unknown: CreateTopic then answers "already exists", and ensureTopic
// must read the topic's partitions from the broker, not the stale cache.
// TestRunKafkaTrickle failed this way in CI.
func TestEnsureTopicCreatedMeanwhile(t *testing.T) {
	k := kafkatest.Start(t, 1)
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addr), kgo.MetadataMinAge(time.Minute))
	require.NoError(t, err)
	defer cl.Close()
	_, err = kadm.NewClient(cl).ListTopics(ctx, "t")
	require.NoError(t, err)
	other, err := kgo.NewClient(kgo.SeedBrokers(k.Addr))
	require.NoError(t, err)
	defer other.Close()
	_, err = kadm.NewClient(other).CreateTopic(ctx, 4, -1, nil, "t")
	require.NoError(t, err)

	n, err := ensureTopic(ctx, cl, "t", 0)
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	n, err = ensureTopic(ctx, cl, "t", 2)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
}

// pipelineServers starts a real redis-server holding gen's campaigns in
// the original layout, and a Kafka broker of partitions partitions: what
// every pipeline test runs against. It returns the campaigns too.
func pipelineServers(t *testing.T, partitions int, gen GenConfig) (*redis.Client, *kafkatest.Cluster, *Campaigns) {
	t.Helper()
	cl := redisClient(t)
	k := kafkatest.Start(t, partitions)
	g, err := NewGenerator(gen)
	require.NoError(t, err)
	_, err = WriteCampaignsRedis(context.Background(), cl, g.Campaigns())
	require.NoError(t, err)
	return cl, k, g.Campaigns()
}
