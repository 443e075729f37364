package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/redistest"
	"github.com/saber-hx/saber-hx/pipeline"
)

// TestRedisNotWrittenTheDrain: a checkpointed run stopped by its duration
// takes a last checkpoint, then drains: the windows open then are emitted
// as they stand, and the run that resumes restores them and emits them
// complete. Redis keeps what is written, so the drain's rows are not
// written: a window whose partial row passed HAVING and whose complete
// row does not stayed in Redis for good.
func TestRedisNotWrittenTheDrain(t *testing.T) {
	t.Parallel()
	cluster := kafkatest.Start(t, 1, "in")
	rs := redistest.Start(t)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.Addr))
	require.NoError(t, err)
	defer cl.Close()
	produce := func(ts ...int) {
		for _, x := range ts {
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "in", Value: fmt.Appendf(nil, `{"ts": %d, "k": 1}`, x)}).FirstErr())
		}
	}
	text := fmt.Sprintf(`
CREATE SOURCE e (ts BIGINT, k INT) WITH (connector = 'kafka', brokers = '%[1]s', topic = 'in', group = 'having', format = 'json', idle_timeout = '1s');
CREATE SINK r AS SELECT window_start, k, COUNT(*) AS n FROM TUMBLE(e, ts, INTERVAL '1000' MILLISECOND)
  GROUP BY window_start, k HAVING COUNT(*) < 3
  WITH (connector = 'redis', addr = '%[2]s', key = 'w:{window_start}:{k}', flush = '10ms');`, cluster.Addr, rs.Addr)
	dir := t.TempDir()
	var log strings.Builder
	run := func() {
		prog, err := pipeline.Compile("having.sql", text) // a Program is opened once: one per run, as a restarted process
		require.NoError(t, err)
		job, err := prog.Open(pipeline.Options{Log: &log, Engine: engine.Config{Workers: 1, TaskSize: 16 * 4, BufferSize: 1 << 16},
			CheckpointDir: dir, CheckpointInterval: 100 * time.Millisecond, Duration: 1500 * time.Millisecond})
		require.NoError(t, err)
		defer job.Close()
		_, err = job.Run(ctx)
		require.NoError(t, err)
	}
	produce(0, 1) // window [0, 1000): 2 rows so far
	run()         // stopped by its duration: a last checkpoint, then the drain
	keys, err := rc.Keys(ctx, "w:*").Result()
	require.NoError(t, err)
	assert.Empty(t, keys, "the drain's window, as it stood, is the next run's to write")
	produce(2, 3, 5000, 5001, 5002) // window [0, 1000) ends with 4 rows: HAVING drops it
	run()
	require.Contains(t, log.String(), "restored checkpoint")
	keys, err = rc.Keys(ctx, "w:*").Result()
	require.NoError(t, err)
	assert.NotContains(t, keys, "w:0:1", "window 0 holds 4 rows; Redis: %v", rc.HGetAll(ctx, "w:0:1").Val())
}
