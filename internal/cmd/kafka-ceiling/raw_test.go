package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
)

// TestRawReadCountsEveryRecord: records produced in many batches
// (snappy, franz-go's default, and uncompressed) over three partitions
// are all read by the raw fetches, whatever the parsers' count, and
// reading from an offset past the start reads only the rest.
func TestRawReadCountsEveryRecord(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 3, "raw")
	for _, codec := range []kgo.CompressionCodec{kgo.SnappyCompression(), kgo.NoCompression()} {
		var recs []*kgo.Record
		for i := range 3000 {
			recs = append(recs, &kgo.Record{Partition: int32(i % 3), Value: fmt.Appendf(nil, `{"n": %d, "pad": "%0100d"}`, i, i)})
		}
		kafkatest.Produce(t, c.Addr, "raw", recs, kgo.ProducerBatchCompression(codec), kgo.ProducerBatchMaxBytes(4<<10))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr))
	require.NoError(t, err)
	defer cl.Close()
	for _, parsers := range []int{1, 3} {
		n, err := rawRead(context.Background(), cl, "raw", map[int32]int64{0: 0, 1: 0, 2: 0}, 6000, parsers)
		require.NoError(t, err)
		assert.Equal(t, int64(6000), n, "%d parsers", parsers)
	}
	n, err := rawRead(context.Background(), cl, "raw", map[int32]int64{0: 1500, 1: 1000, 2: 0}, 6000-2500, 2)
	require.NoError(t, err)
	assert.Equal(t, int64(3500), n)
}

// TestNextOffset: the offset after the last whole batch, the fetch's
// own where the first is cut short.
func TestNextOffset(t *testing.T) {
	batch := func(first int64, lastDelta int32, size int) []byte {
		b := make([]byte, size)
		be := func(at int, v uint64, n int) {
			for i := range n {
				b[at+i] = byte(v >> (8 * (n - 1 - i)))
			}
		}
		be(0, uint64(first), 8)
		be(8, uint64(size-12), 4)
		b[16] = 2
		be(23, uint64(lastDelta), 4)
		return b
	}
	two := append(batch(10, 4, 61), batch(15, 9, 80)...)
	got, err := nextOffset(two, 10)
	require.NoError(t, err)
	assert.Equal(t, int64(25), got)
	got, err = nextOffset(two[:100], 10)
	require.NoError(t, err)
	assert.Equal(t, int64(15), got, "the second batch cut short")
	got, err = nextOffset(two[:20], 10)
	require.NoError(t, err)
	assert.Equal(t, int64(10), got)
	old := batch(10, 0, 61)
	old[16] = 1
	_, err = nextOffset(old, 10)
	assert.ErrorContains(t, err, "magic 1")
}

// TestRunPrintsItsFigures: both readers count the topic whole and, with
// --json, end with the figures as one JSON object (what the GPU bundle's
// run.sh records).
func TestRunPrintsItsFigures(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 2, "figures")
	var recs []*kgo.Record
	for i := range 1000 {
		recs = append(recs, &kgo.Record{Partition: int32(i % 2), Value: fmt.Appendf(nil, `{"n": %d}`, i)})
	}
	kafkatest.Produce(t, c.Addr, "figures", recs, kgo.ProducerBatchMaxBytes(2<<10))
	for _, raw := range []int{0, 2} {
		var out bytes.Buffer
		require.NoError(t, run(&out, []string{c.Addr}, "figures", 2, raw, true, true))
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		require.Len(t, lines, 2, out.String())
		assert.True(t, strings.HasPrefix(lines[0], "read 1000 records with "), lines[0])
		var fig struct {
			Records    int64   `json:"records"`
			Seconds    float64 `json:"seconds"`
			TuplesPerS float64 `json:"tuples_per_s"`
			Raw        int     `json:"raw"`
		}
		require.NoError(t, json.Unmarshal([]byte(lines[1]), &fig))
		assert.Equal(t, int64(1000), fig.Records)
		assert.Equal(t, raw, fig.Raw)
		assert.Positive(t, fig.Seconds)
		assert.InDelta(t, 1000/fig.Seconds, fig.TuplesPerS, 1e-6*fig.TuplesPerS)
	}
}
