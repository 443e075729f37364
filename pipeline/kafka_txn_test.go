package pipeline_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/pipeline"
)

// TestKafkaIsolationLevel: a topic written in transactions, the second
// aborted, as a crashed run of saber-hx's exactly-once Kafka sink leaves
// one: a SQL kafka source reads the committed records only, unless
// isolation_level = 'read_uncommitted' says every record.
func TestKafkaIsolationLevel(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Broker(t, 1, "txn")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("txn"))
	require.NoError(t, err)
	defer cl.Close()
	ctx := context.Background()
	var committed, all []string
	for txn := range 3 {
		require.NoError(t, cl.BeginTransaction())
		for i := range 5 {
			id := txn*100 + i
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "txn", Value: fmt.Appendf(nil, `{"ts": %d, "id": %d}`, id, id)}).FirstErr())
			all = append(all, fmt.Sprint(id))
			if txn != 1 {
				committed = append(committed, fmt.Sprint(id))
			}
		}
		require.NoError(t, cl.EndTransaction(ctx, kgo.TransactionEndTry(txn != 1)))
	}
	for _, tc := range []struct {
		option string
		want   []string
	}{
		{"", committed},
		{", isolation_level = 'read_committed'", committed},
		{", isolation_level = 'read_uncommitted'", all},
	} {
		prog, err := pipeline.Compile("txn.sql", fmt.Sprintf(`
CREATE SOURCE ev (ts BIGINT, id BIGINT) WITH (connector = 'kafka', brokers = '%s', topic = 'txn'%s);
CREATE VIEW q AS SELECT id FROM ev;`, addr, tc.option))
		require.NoError(t, err)
		var got []string
		require.NoError(t, prog.OnRows("q", func(rows *pipeline.Rows) error {
			for i := range rows.Len() {
				got = append(got, strings.TrimSpace(string(rows.AppendCSV(nil, i))))
			}
			return nil
		}))
		job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: 1, TaskSize: 256 * 16, BufferSize: 1 << 16}, StopAtEnd: true})
		require.NoError(t, err)
		_, err = job.Run(ctx)
		require.NoError(t, err)
		job.Close()
		slices.Sort(got)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		assert.Equal(t, want, got, "option %q", tc.option)
	}
}
