package kafka

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/source"
)

// TestRegainedPartitionCommitsNotPastOpenWindow: a group member that
// gives a partition up in a rebalance and gets it back goes on from where
// its stream stood (adjustOffsets). The records it produced before are
// still in its engine: one of event time 1000 whose window is open
// (complete = 1000). Records of a lower event time read after the regain
// must not commit past it: the window holding 1000 is not out.
func TestRegainedPartitionCommitsNotPastOpenWindow(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 2, "rgn")
	pr := producer(t, c.Addr)
	produce(t, pr, "rgn", []rec{{part: 0, time: 1000, id: 1}, {part: 1, time: 1000, id: 2}}, false)
	cfg := Config{Brokers: []string{c.Addr}, Topic: "rgn", Group: "g", Decoder: jsonDecoder(t, source.Fail),
		IdleTimeout: 20 * time.Millisecond, CommitInterval: 20 * time.Millisecond}
	a := openT(t, cfg)
	require.ElementsMatch(t, []int64{1, 2}, ids(readN(t, a, 2)))
	const complete = 1000 // the window of event time 1000 is open
	a.Done(a.Stats().Position, complete)

	poll := func(s *Source) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, _ = s.FillSome(ctx, make([]byte, 4*testTS))
	}
	b := openT(t, cfg) // joins: a gives one partition up
	require.Eventually(t, func() bool { poll(a); poll(b); return len(a.Stats().Partitions) == 1 }, 20*time.Second, time.Millisecond)
	require.NoError(t, b.Close()) // leaves: a gets it back
	require.Eventually(t, func() bool { poll(a); return len(a.Stats().Partitions) == 2 }, 20*time.Second, time.Millisecond)

	// Late records (event time 5) on both partitions.
	produce(t, pr, "rgn", []rec{{part: 0, time: 5, id: 3}, {part: 1, time: 5, id: 4}}, false)
	require.ElementsMatch(t, []int64{3, 4}, ids(readN(t, a, 2)), "a goes on from where it stood")
	a.Done(a.Stats().Position, complete)
	require.NoError(t, a.Close())
	// Neither partition's record of time 1000 is out: nothing is done.
	assert.Empty(t, committed(t, c.Addr, "g", "rgn"), "committed past a record whose window is not out")
}

// TestStopAtEndOverANewPartition: a bounded group member (StopAtEnd)
// assigned a partition made after it opened ends all the same: that
// partition's end when the source opened was its start, where the member
// waited on it for ever.
func TestStopAtEndOverANewPartition(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 1, "grow")
	pr := producer(t, c.Addr)
	var recs []rec
	const n0 = 3000
	for i := range n0 {
		recs = append(recs, rec{part: 0, time: int64(i), id: int64(i)})
	}
	produce(t, pr, "grow", recs, false)
	s := openT(t, Config{Brokers: []string{c.Addr}, Topic: "grow", Group: "g", Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true,
		IdleTimeout: 20 * time.Millisecond, metadataAge: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	one := make([]byte, testTS)
	n, err := s.FillSome(ctx, one) // joined: partition 0 assigned
	require.NoError(t, err)
	got := n / testTS
	_, err = kadm.NewClient(pr).CreatePartitions(ctx, 1, "grow")
	require.NoError(t, err)
	produce(t, producer(t, c.Addr), "grow", []rec{{part: 1, time: 1000, id: 1000}}, false) // a client that knows of partition 1
	for len(s.Stats().Partitions) < 2 {
		n, err := s.FillSome(ctx, one) // a tuple at a time: partition 0 not at its end
		require.NoError(t, err, "partition 1 assigned before partition 0 is read")
		got += n / testTS
		time.Sleep(2 * time.Millisecond)
	}
	dst := make([]byte, 64*testTS)
	for {
		n, err := s.FillSome(ctx, dst)
		got += n / testTS
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "the bounded read ends")
	}
	assert.Equal(t, n0, got, "partition 0's records, none of the new partition's (after its start)")
}
