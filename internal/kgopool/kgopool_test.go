package kgopool

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
)

// TestGetsHoldWhatTheyAsk: whatever capacities went back, a get of n
// has room for n.
func TestGetsHoldWhatTheyAsk(t *testing.T) {
	p := New()
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := rnd.IntN(1 << rnd.IntN(20))
		r := p.GetRecords(n)
		assert.GreaterOrEqual(t, cap(r), n)
		assert.Empty(t, r)
		b := p.GetDecompressBytes(make([]byte, n), kgo.CodecZstd)
		assert.GreaterOrEqual(t, cap(b), 4*n)
		assert.Empty(t, b)
		// Back with capacities of any size, as a codec that grew its
		// output gives them.
		p.PutRecords(make([]kgo.Record, 0, rnd.IntN(1<<rnd.IntN(20))+1))
		p.PutDecompressBytes(make([]byte, 0, rnd.IntN(1<<rnd.IntN(22))+1))
		p.PutRecords(r)
		p.PutDecompressBytes(b)
	}
	p.PutRecords(nil)
	p.PutDecompressBytes(nil)
}

// TestGuessFindsGrownSlices: a slice a codec grew past its guess (zstd,
// lz4, gzip decode into what they are given and grow it) comes back a
// class up, and the next guess for a batch of a like size takes it; a
// snappy batch's exact length does not take more than it needs.
func TestGuessFindsGrownSlices(t *testing.T) {
	p := New()
	found := false
	// sync.Pool may drop what is put (always so under the race
	// detector, at random): a few tries.
	for range 20 {
		p.PutDecompressBytes(make([]byte, 0, 3000))
		b := p.GetDecompressBytes(make([]byte, 200), kgo.CodecZstd)
		require.GreaterOrEqual(t, cap(b), 800)
		if cap(b) == 3000 {
			found = true
			break
		}
	}
	assert.True(t, found, "the grown slice was never taken for a like batch")
	p.PutDecompressBytes(make([]byte, 0, 1<<20))
	b := p.GetDecompressBytes(snappyBlock(1000), kgo.CodecSnappy)
	assert.Equal(t, 1024, cap(b), "snappy's exact length: its own class only")
}

// snappyBlock is a snappy block whose header says n decoded bytes.
func snappyBlock(n int) []byte {
	return binary.AppendUvarint(nil, uint64(n))
}

// TestConsumerWithPools: records produced with each codec, read by a
// consumer with the pools and recycled as soon as they are checked, read
// as they were written, batch after batch reusing the pools' memory,
// and every batch handed out comes back.
func TestConsumerWithPools(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 2, "pooled")
	codecs := []kgo.CompressionCodec{kgo.SnappyCompression(), kgo.NoCompression(), kgo.ZstdCompression(), kgo.Lz4Compression(), kgo.GzipCompression()}
	want := map[string]bool{}
	for i, codec := range codecs {
		var recs []*kgo.Record
		for j := range 600 {
			v := fmt.Sprintf(`{"codec": %d, "n": %d, "pad": "%0*d"}`, i, j, j%97, j)
			want[v] = true
			recs = append(recs, &kgo.Record{Partition: int32(j % 2), Value: []byte(v)})
		}
		kafkatest.Produce(t, c.Addr, "pooled", recs, kgo.ProducerBatchCompression(codec), kgo.ProducerBatchMaxBytes(2<<10))
	}
	pools := New()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr), kgo.WithPools(pools), kgo.FetchMaxBytes(4<<10), kgo.FetchMaxPartitionBytes(4<<10),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"pooled": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(want) > 0 && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			assert.True(t, want[v], "a value not produced: %q", v)
			delete(want, v)
			r.Recycle()
		})
	}
	assert.Zero(t, len(want), "values not read")
	out, back := pools.Batches()
	assert.Positive(t, out)
	assert.Equal(t, out, back, "every batch recycled goes back")
}
