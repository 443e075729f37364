package kafkatest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRestartKeepsRecordsAndOffsets: a restartable cluster stopped and
// restarted comes back on the same address with the records and the
// group's committed offsets it had, and a client that lived through it
// goes on producing.
func TestRestartKeepsRecordsAndOffsets(t *testing.T) {
	c := StartRestartable(t, 2, "t")
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	ctx := context.Background()
	for i := range 10 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: fmt.Append(nil, i)}).FirstErr())
	}
	adm := kadm.NewClient(cl)
	_, err = adm.CommitOffsets(ctx, "g", kadm.OffsetsFromRecords(kgo.Record{Topic: "t", Partition: 0, Offset: 2}))
	require.NoError(t, err)

	addr := c.Addr
	c.Stop()
	c.Restart(t)
	require.Equal(t, addr, c.Addr)
	assert.Equal(t, addr, c.ListenAddrs()[0], "the same port")

	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(pctx, &kgo.Record{Topic: "t", Value: []byte("after")}).FirstErr(), "the old client produces again")
	ends, err := adm.ListEndOffsets(pctx, "t")
	require.NoError(t, err)
	total := int64(0)
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	assert.Equal(t, int64(11), total, "the records before the restart and the one after")
	offs, err := adm.FetchOffsets(pctx, "g")
	require.NoError(t, err)
	o, ok := offs.Lookup("t", 0)
	require.True(t, ok, "the group's offset survives")
	assert.Equal(t, int64(3), o.At)
}
