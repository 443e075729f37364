package kafka

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
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
