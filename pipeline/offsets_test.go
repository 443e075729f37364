package pipeline_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/pipeline"
)

// TestOffsetsCommittedThroughViews: a Kafka source whose queries chain
// (views, window joins) commits its group's offsets while the run goes
// on, as far as the last query has put out what the records count in: the
// records in closed windows, not the last one, whose window is open.
func TestOffsetsCommittedThroughViews(t *testing.T) {
	t.Parallel()
	for name, queries := range map[string]string{
		"a view, then windows": `CREATE VIEW f AS SELECT ts, v FROM ev WHERE v >= 0;
SELECT window_start, COUNT(*) AS n FROM TUMBLE(f, ts, INTERVAL '10' MILLISECOND) GROUP BY window_start;`,
		"windows, then a view": `CREATE VIEW w AS SELECT window_start, COUNT(*) AS n FROM TUMBLE(ev, ts, INTERVAL '10' MILLISECOND) GROUP BY window_start;
SELECT window_start, n FROM w WHERE n > 0;`,
		"a window join": `SELECT * FROM ev [RANGE INTERVAL '10' MILLISECOND] AS a JOIN ev [RANGE INTERVAL '10' MILLISECOND] AS b ON a.v = b.v;`,
		"views, then a window join": `CREATE VIEW f AS SELECT ts, v FROM ev WHERE v >= 0;
SELECT * FROM f [RANGE INTERVAL '10' MILLISECOND] AS a JOIN f [RANGE INTERVAL '10' MILLISECOND] AS b ON a.v = b.v;`,
		"a window join, then windows": `SELECT COUNT(*) AS n FROM ev [RANGE INTERVAL '10' MILLISECOND] AS a JOIN ev [RANGE INTERVAL '10' MILLISECOND] AS b ON a.v = b.v;`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			addr, cl := eventsTopic(t, 100)
			prog, err := pipeline.Compile("-e", fmt.Sprintf(`CREATE SOURCE ev (ts BIGINT, v INT) WITH (connector = 'kafka', brokers = '%s', topic = 'ev', group = 'g', format = 'json');
%s`, addr, queries))
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			job, err := prog.Open(pipeline.Options{Stdout: new(discard), Engine: engine.Config{Workers: 2, TaskSize: 12 * 4}})
			require.NoError(t, err)
			defer job.Close()
			done := make(chan error, 1)
			go func() {
				_, err := job.Run(ctx)
				done <- err
			}()
			// Then a staircase of records far ahead, apart: each closes the
			// windows before it, the last one's stays open.
			for k := range 5 {
				time.Sleep(50 * time.Millisecond)
				rec := &kgo.Record{Topic: "ev", Value: fmt.Appendf(nil, `{"ts": %d, "v": 1}`, 100000*(k+1))}
				require.NoError(t, cl.ProduceSync(context.Background(), rec).FirstErr())
			}
			adm := kadm.NewClient(cl)
			committed := func() int64 {
				offs, err := adm.FetchOffsets(context.Background(), "g")
				if err != nil {
					return -1
				}
				if o, ok := offs.Lookup("ev", 0); ok {
					return o.At
				}
				return -1
			}
			assert.Eventually(t, func() bool { return committed() >= 100 }, 30*time.Second, 20*time.Millisecond,
				"the 100 records in closed windows committed while running: %d", committed())
			assert.Less(t, committed(), int64(105), "the record in the open window is not")
			cancel()
			require.NoError(t, <-done)
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestFlinkStartupModes: Flink's scan.startup.mode over a group that has
// committed: 'earliest-offset' reads the topic again, 'group-offsets'
// resumes where the group is, and without a committed offset fails
// unless properties.auto.offset.reset says where to begin.
func TestFlinkStartupModes(t *testing.T) {
	t.Parallel()
	addr, _ := eventsTopic(t, 10)
	read := func(group, options string) (uint64, error) {
		prog, err := pipeline.Compile("-e", fmt.Sprintf(`CREATE SOURCE ev (ts BIGINT, v INT) WITH (connector = 'kafka', brokers = '%s', topic = 'ev', properties.group.id = '%s', format = 'json'%s);
SELECT ts, v FROM ev;`, addr, group, options))
		require.NoError(t, err)
		job, err := prog.Open(pipeline.Options{Stdout: new(discard), StopAtEnd: true})
		if err != nil {
			return 0, err
		}
		defer job.Close()
		sum, err := job.Run(context.Background())
		if err != nil {
			return 0, err
		}
		return sum.Tuples, nil
	}
	for _, c := range []struct {
		group, options string
		first, second  uint64
	}{
		{"a", `, scan.startup.mode = 'earliest-offset'`, 10, 10},
		{"b", `, scan.startup.mode = 'group-offsets', properties.auto.offset.reset = 'earliest'`, 10, 0},
		{"c", ``, 10, 0},
	} {
		n, err := read(c.group, c.options)
		require.NoError(t, err, c.group)
		assert.Equal(t, c.first, n, "group %s: first run", c.group)
		n, err = read(c.group, c.options)
		require.NoError(t, err, c.group)
		assert.Equal(t, c.second, n, "group %s: second run", c.group)
	}
	_, err := read("d", `, scan.startup.mode = 'group-offsets'`)
	assert.ErrorContains(t, err, "group d has no committed offset for partition 0")
}

// eventsTopic starts a broker with topic ev holding n JSON records
// {"ts": i, "v": i}, and a client of it (closed with the test).
func eventsTopic(t *testing.T, n int) (addr string, cl *kgo.Client) {
	t.Helper()
	addr = kafkatest.Broker(t, 1, "ev")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: "ev", Value: fmt.Appendf(nil, `{"ts": %d, "v": %d}`, i, i)})
	}
	require.NoError(t, cl.ProduceSync(context.Background(), recs...).FirstErr())
	return addr, cl
}
