package pipeline_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/pipeline"
)

// TestWindowJoinIntoAProjectionEnds: a window join whose pairs a
// projection after it takes (INSERT INTO a table: its columns' types),
// over inputs out of order within the watermark's delay, hands on more
// windows than the projection's stream has task records free; the
// worker that pushes them runs the projection's tasks while it waits for
// a record, so the run ends, on one worker too, with every pair. It hung
// there: the push waited for a record that only its own worker could
// free (a helper's crash test found it).
func TestWindowJoinIntoAProjectionEnds(t *testing.T) {
	t.Parallel()
	const rows, keys = 60000, 50
	var in [2]strings.Builder
	var count [2]map[[2]int64]int64 // (window, k) -> tuples
	for side := range in {
		r := rand.New(rand.NewPCG(uint64(side), 7))
		count[side] = map[[2]int64]int64{}
		for i := range rows {
			ts, k := int64(1_000_000+10*i-r.IntN(400)), int64(r.IntN(keys)) // out of order by < 0.4 s
			fmt.Fprintf(&in[side], "%d,%d\n", ts, k)
			count[side][[2]int64{ts / 1000, k}]++
		}
	}
	want := int64(0) // none late: the disorder is within the delay
	for wk, n := range count[0] {
		want += n * count[1][wk]
	}
	for _, workers := range []int{1, 2} {
		prog, err := pipeline.Compile("-e", `CREATE SOURCE a (ts BIGINT, k INT, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH (connector = 'go', format = 'csv');
CREATE SOURCE b (ts BIGINT, k INT, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH (connector = 'go', format = 'csv');
CREATE TABLE o (ats BIGINT, bts BIGINT, k INT) WITH (connector = 'blackhole');
INSERT INTO o SELECT a.ts, b.ts, a.k FROM TUMBLE(a, ts, INTERVAL '1' SECOND) JOIN TUMBLE(b, ts, INTERVAL '1' SECOND) ON a.k = b.k;`)
		require.NoError(t, err)
		require.NoError(t, prog.AttachReader("a", strings.NewReader(in[0].String())))
		require.NoError(t, prog.AttachReader("b", strings.NewReader(in[1].String())))
		var got atomic.Int64
		require.NoError(t, prog.OnRows("o", func(r *pipeline.Rows) error { got.Add(int64(r.Len())); return nil }))
		job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: workers}})
		require.NoError(t, err)
		require.NoError(t, runWithin(t, job, time.Minute), "%d workers", workers)
		job.Close()
		assert.Equal(t, want, got.Load(), "%d workers: every pair", workers)
	}
}
