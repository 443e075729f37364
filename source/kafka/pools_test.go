package kafka

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/kgopool"
	"github.com/saber-hx/saber-hx/source"
)

// TestRecordsGoBackToThePools: records read in many small batches, by
// one fetcher or two (their polls predecoded or not) or by a group
// member's FillSome, read as the oracle says, and their batches go back
// to the clients' pools once taken: all but those of the polls still
// held at the end (a fetcher recycles a poll when it reuses it).
func TestRecordsGoBackToThePools(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 2, "pooled")
	data := genRecords(rndOf(9), 2, 300)
	cl := producer(t, c.Addr)
	var batch []*kgo.Record
	for p := range data {
		for _, r := range data[p] {
			batch = append(batch, &kgo.Record{Topic: "pooled", Partition: int32(p), Value: r.json()})
		}
	}
	for len(batch) > 0 { // a batch or two per call
		n := min(len(batch), 10)
		require.NoError(t, cl.ProduceSync(context.Background(), batch[:n]...).FirstErr())
		batch = batch[n:]
	}
	want := oracle(data)
	for _, tc := range []struct {
		fetchers  int
		group     string
		predecode bool
	}{{1, "", false}, {1, "", true}, {2, "", true}, {0, "pooled-member", true}} {
		name := fmt.Sprintf("fetchers %d, group %q, predecode %v", tc.fetchers, tc.group, tc.predecode)
		cfg := Config{Brokers: []string{c.Addr}, Topic: "pooled", Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true,
			Fetchers: tc.fetchers, Group: tc.group, fetchPartitionBytes: 600}
		if tc.predecode {
			cfg.NewDecoder = jsonNewDecoder(t, source.Fail)
		}
		s := openT(t, cfg)
		got := readAll(t, s, 16)
		assert.True(t, bytes.Equal(want, got), "%s: %s", name, firstDiff(want, got))
		out, back := s.pools.Batches()
		require.Greater(t, out, int64(20), "%s: the records came in many batches", name)
		// At most two polls of each fetcher (one per partition each) are
		// not yet recycled.
		assert.GreaterOrEqual(t, back, out-int64(4*max(tc.fetchers, 1)), "%s: batches handed out %d, back %d", name, out, back)
		assert.LessOrEqual(t, back, out, name)
	}
}

// TestRevokedBacklogGoesBackToThePools: records from the pools that wait
// for a partition's string memory go back to them when the partition is
// revoked, as the decoded ones do once taken.
func TestRevokedBacklogGoesBackToThePools(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 1, "revoked")
	cl := producer(t, c.Addr)
	for i := range 8 { // a batch each
		r := srec{time: int64(i), id: int64(i), a: strOf(int64(i), 'a', 1000), b: strOf(int64(i), 'b', 20)}
		require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: "revoked", Value: r.json()}).FirstErr())
	}
	pools := kgopool.New()
	consumer, err := kgo.NewClient(kgo.SeedBrokers(c.Addr), kgo.ConsumeTopics("revoked"), kgo.WithPools(pools),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer consumer.Close()
	var recs []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(recs) < 8 {
		f := consumer.PollRecords(ctx, 8-len(recs))
		require.NoError(t, ctx.Err())
		recs = append(recs, f.Records()...)
	}

	s := offlineStr(t, 1, Config{StringBytes: 4096})
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.parts[0]
	for _, r := range recs {
		require.NoError(t, s.add(p, r))
	}
	// 4 KiB: four records of 1020 bytes each fit; the rest wait.
	require.Equal(t, 4, p.n)
	require.Len(t, p.backlog, 4)
	for _, r := range recs[:4] { // decoded: recycled once taken
		r.Recycle()
	}
	out, back := pools.Batches()
	require.Equal(t, int64(8), out)
	require.Equal(t, int64(4), back)
	s.unassign(0)
	out, back = pools.Batches()
	assert.Equal(t, out, back, "the backlog's records back to the pools")
}
