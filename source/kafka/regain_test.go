package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
