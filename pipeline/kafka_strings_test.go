package pipeline_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/nexmark"
	"github.com/saber-hx/saber-hx/pipeline"
)

// TestKafkaStrings: Nexmark's people as JSON records on a topic of three
// partitions (kfake), read by a SQL source with VARCHAR columns: the long
// strings wait in the Kafka source's memory and are copied into the
// streams' heaps as they are committed; every person comes out with its
// strings as generated.
func TestKafkaStrings(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Broker(t, 3, "people")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	cfg := nexmark.DefaultConfig()
	// More long strings than a partition's memory holds (4 MiB): it is
	// reused while the run goes on.
	cfg.Events, cfg.AvgPersonByteSize = 50*10000, 2000
	g, err := nexmark.New(cfg)
	require.NoError(t, err)
	// The rows and the records are written into reused or shared
	// buffers (csvLines; a record's value is copied into a chunk of
	// them all): 20 MB of them, each a slice grown from nothing, were
	// half the test's CPU.
	var want csvLines
	var recs []*kgo.Record
	var ev nexmark.Event
	var val, chunk []byte
	for g.NextOf(nexmark.PersonTable, &ev) {
		p := &ev.Person
		want.Int(p.ID).Raw(p.Name).Raw(p.EmailAddress).Raw(p.Extra).End()
		val = nexmark.AppendJSON(val[:0], &ev)
		if cap(chunk)-len(chunk) < len(val) {
			chunk = make([]byte, 0, max(1<<20, len(val)))
		}
		n := len(chunk)
		chunk = append(chunk, val...)
		recs = append(recs, &kgo.Record{Topic: "people", Partition: int32(p.ID % 3), Value: chunk[n:len(chunk):len(chunk)]})
	}
	require.NoError(t, cl.ProduceSync(context.Background(), recs...).FirstErr())

	prog, err := pipeline.Compile("people.sql", fmt.Sprintf(`
CREATE SOURCE person (id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR,
  `+"`dateTime`"+` TIMESTAMP(3), extra VARCHAR)
  WITH (connector = 'kafka', brokers = '%s', topic = 'people', format = 'json');
CREATE VIEW q AS SELECT id, name, emailAddress, extra FROM person;`, addr))
	require.NoError(t, err)
	var got csvLines
	var line []byte
	require.NoError(t, prog.OnRows("q", func(rows *pipeline.Rows) error {
		for i := range rows.Len() {
			line = rows.AppendCSV(line[:0], i)
			got.Add(line)
		}
		return nil
	}))
	job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: 2, TaskSize: 256 * 16, BufferSize: 1 << 16}, StopAtEnd: true})
	require.NoError(t, err)
	defer job.Close()
	sum, err := job.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(want.Len()), sum.Sources[0].Tuples)
	assert.Equal(t, want.Sorted(), got.Sorted())
}
