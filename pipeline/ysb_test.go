package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/redistest"
	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/ysb"
)

func TestYSBKafkaSQLCompiles(t *testing.T) {
	p, err := Compile("ysb", ysbKafkaSQL(YSBKafka{Brokers: []string{"a:1", "b:2"}, Topic: "ad-events", Group: "it's ${HOME}", Redis: "r:3", DelayMs: 250}))
	require.NoError(t, err)
	prog := p.SQL()
	require.Len(t, prog.Sources, 1)
	src := prog.Sources[0]
	assert.Equal(t, []string{"a:1", "b:2"}, src.Brokers)
	assert.Equal(t, "ad-events", src.Topic)
	assert.Equal(t, "it's ${HOME}", src.Group, "a value's ${ is written $${: not read from the environment")
	assert.Equal(t, int64(251), src.WatermarkDelay, "the SQL's, 1 ms more")
	require.Len(t, prog.Queries, 1)
	assert.Equal(t, int64(250), prog.Queries[0].Spec.Query.Window.Delay)
	assert.Equal(t, int64(ysb.WindowMs), prog.Queries[0].Spec.Query.Window.Size)
	assert.Equal(t, 64, src.Schema.TupleSize, "NOT NULL columns: no NULL bits, YSB's 64-byte tuple")
	assert.Contains(t, PlanLine(prog.Queries[0].Spec, false), "fused")
}

// ysbServers starts a real redis-server holding gen's campaigns in the
// original layout, and a Kafka broker of partitions partitions.
func ysbServers(t *testing.T, partitions int, gen ysb.GenConfig) (*redis.Client, *kafkatest.Cluster, *ysb.Campaigns) {
	t.Helper()
	rs := redistest.Start(t)
	cl := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { cl.Close() })
	k := kafkatest.Start(t, partitions)
	g, err := ysb.NewGenerator(gen)
	require.NoError(t, err)
	_, err = ysb.WriteCampaignsRedis(context.Background(), cl, g.Campaigns())
	require.NoError(t, err)
	return cl, k, g.Campaigns()
}

// openYSB opens the pipeline's job over the servers, its tasks of
// tuples tuples.
func openYSB(t *testing.T, a YSBKafka, tuples int, o Options) *Job {
	t.Helper()
	p, _, _, err := YSBKafkaProgram(context.Background(), a)
	require.NoError(t, err)
	if o.Engine.Workers == 0 {
		o.Engine.Workers = 2
	}
	o.Engine.TaskSize = tuples * p.TupleUnit()
	job, err := p.Open(o)
	require.NoError(t, err)
	t.Cleanup(job.Close)
	return job
}

// TestYSBPipeline is the original benchmark end to end: campaigns into
// Redis, events produced to a kfake topic (with skew and late events),
// the run to the end of the topic, then ysb.Check: every window's count
// in Redis is the oracle's over the log in the source's stream order.
func TestYSBPipeline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		parts int
		delay int64
	}{{1, 0}, {4, 0}, {4, 3000}} {
		t.Run(fmt.Sprintf("partitions=%d,delay=%d", tc.parts, tc.delay), func(t *testing.T) {
			t.Parallel()
			gen := ysb.GenConfig{Campaigns: 10, AdsPerCampaign: 10, Seed: 7, TuplesPerMs: 1}
			cl, k, camps := ysbServers(t, tc.parts, gen)
			ctx := context.Background()

			var log bytes.Buffer
			pres, err := ysb.Produce(ctx, ysb.ProduceConfig{Brokers: []string{k.Addr}, Topic: "ad-events", Gen: gen, Rate: 3000,
				Duration: 1500 * time.Millisecond, SkewMs: 2000, LateFraction: 0.02, Partitions: tc.parts, Log: &log, Seed: 3})
			require.NoError(t, err)
			require.Positive(t, pres.Events)
			require.Len(t, pres.PerPartition, tc.parts)
			for _, n := range pres.PerPartition {
				assert.Positive(t, n)
			}

			job := openYSB(t, YSBKafka{Brokers: []string{k.Addr}, Topic: "ad-events", Redis: cl.Options().Addr, DelayMs: tc.delay}, 16,
				Options{StopAtEnd: true})
			sum, err := job.Run(ctx)
			require.NoError(t, err)
			st := sum.Stats[0]
			assert.Equal(t, uint64(pres.Events), st.Tuples)
			assert.Equal(t, uint64(pres.Events), sum.Sources[0].Tuples)
			assert.False(t, sum.Interrupted)

			el, err := ysb.ReadEventLog(&log, "log")
			require.NoError(t, err)
			assert.Equal(t, pres.Events, el.Events)
			res, err := ysb.Check(ctx, cl, el, tc.delay)
			require.NoError(t, err)
			assert.Empty(t, res.Mismatches)
			assert.Equal(t, res.Windows, res.Redis)
			assert.Equal(t, uint64(res.Counts.Counted), st.Counted)
			assert.Equal(t, res.Counts.Late, st.Late)
			assert.Equal(t, res.Counts.Filtered, st.Filtered)
			assert.Positive(t, res.Windows)
			if tc.delay == 0 {
				assert.Positive(t, res.Counts.Late, "skew and late events make some late")
			}
			assert.Equal(t, res.Windows, res.Latency.Windows)

			// The check fails on a count changed in Redis.
			ws, err := ysb.ReadRedisWindows(ctx, cl, []ysb.UUID{camps.CampaignIDs[0]})
			require.NoError(t, err)
			require.NotEmpty(t, ws)
			require.NoError(t, cl.Del(ctx, camps.CampaignIDs[0].String()).Err())
			res, err = ysb.Check(ctx, cl, el, tc.delay)
			require.NoError(t, err)
			assert.Len(t, res.Mismatches, len(ws))
			assert.Equal(t, int64(-1), res.Mismatches[0].Got)
		})
	}
}

// TestYSBGroupResumes: with a group, a run commits what it wrote to
// Redis; a second run of the group reads nothing again, and Redis still
// checks. No goroutine is left behind.
func TestYSBGroupResumes(t *testing.T) {
	gen := ysb.GenConfig{Campaigns: 5, AdsPerCampaign: 4, Seed: 8, TuplesPerMs: 1}
	cl, k, _ := ysbServers(t, 3, gen)
	ctx := context.Background()
	var log bytes.Buffer
	pres, err := ysb.Produce(ctx, ysb.ProduceConfig{Brokers: []string{k.Addr}, Topic: "t", Gen: gen, Rate: 2000, Duration: time.Second, SkewMs: 300, Log: &log})
	require.NoError(t, err)

	before := runtime.NumGoroutine()
	a := YSBKafka{Brokers: []string{k.Addr}, Topic: "t", Group: "ysb", Redis: cl.Options().Addr}
	for i, want := range []uint64{uint64(pres.Events), 0} {
		job := openYSB(t, a, 8, Options{StopAtEnd: true})
		sum, err := job.Run(ctx)
		require.NoError(t, err)
		job.Close()
		assert.Equal(t, want, sum.Sources[0].Tuples, "run %d: the second reads nothing, the group's offsets committed", i+1)
	}
	testenv.NoGoroutinesLeft(t, before)

	el, err := ysb.ReadEventLog(&log, "log")
	require.NoError(t, err)
	res, err := ysb.Check(ctx, cl, el, 0)
	require.NoError(t, err)
	assert.Empty(t, res.Mismatches)
}

// mergedWhileRunning runs job until cond holds of its stream's counters
// while it runs (the test fails if it does not within 30 s, or the run
// ends first), then cancels it and returns its summary.
func mergedWhileRunning(t *testing.T, job *Job, cond func(engine.Stats) bool, ended <-chan error) *Summary {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		sum *Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := job.Run(ctx)
		done <- result{sum, err}
	}()
	deadline := time.After(30 * time.Second)
	for {
		if e := job.Engine(); e != nil && cond(e.Stream(0).Stats()) {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the run ended before merging: %v", r.err)
		case err := <-ended:
			t.Fatalf("nothing merged while the events came: %v", err)
		case <-deadline:
			t.Fatal("the events were not merged while the run went on")
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	r := <-done
	require.NoError(t, r.err)
	return r.sum
}

// TestYSBLinger: a few events in a task far from full are merged while
// the run goes on (the partial task is dispatched once the topic pauses),
// not only when it ends.
func TestYSBLinger(t *testing.T) {
	t.Parallel()
	gen := ysb.GenConfig{Campaigns: 2, AdsPerCampaign: 2, Seed: 3, TuplesPerMs: 1}
	cl, k, _ := ysbServers(t, 2, gen)
	pres, err := ysb.Produce(context.Background(), ysb.ProduceConfig{Brokers: []string{k.Addr}, Topic: "t", Gen: gen, Rate: 200, Duration: 500 * time.Millisecond})
	require.NoError(t, err)
	require.Positive(t, pres.Events)
	job := openYSB(t, YSBKafka{Brokers: []string{k.Addr}, Topic: "t", Redis: cl.Options().Addr}, 1<<14, Options{})
	sum := mergedWhileRunning(t, job, func(st engine.Stats) bool { return st.Tuples == uint64(pres.Events) }, nil)
	assert.True(t, sum.Interrupted)
	assert.Equal(t, uint64(pres.Events), sum.Stats[0].Tuples)
}

// TestYSBTrickle: events arriving more often than kafka.Linger, but too
// slowly to fill a task, are merged while they keep coming.
func TestYSBTrickle(t *testing.T) {
	t.Parallel()
	gen := ysb.GenConfig{Campaigns: 2, AdsPerCampaign: 2, Seed: 3, TuplesPerMs: 1}
	cl, k, _ := ysbServers(t, 1, gen)
	produceCtx, stopProducing := context.WithCancel(context.Background())
	defer stopProducing()
	produced := make(chan error, 1)
	go func() {
		_, err := ysb.Produce(produceCtx, ysb.ProduceConfig{Brokers: []string{k.Addr}, Topic: "t", Gen: gen, Rate: 100, Duration: 20 * time.Second})
		produced <- err
	}()
	job := openYSB(t, YSBKafka{Brokers: []string{k.Addr}, Topic: "t", Redis: cl.Options().Addr}, 1<<14, Options{Engine: engine.Config{Workers: 1}})
	mergedWhileRunning(t, job, func(st engine.Stats) bool { return st.Tuples > 0 }, produced)
	stopProducing()
	<-produced
}
