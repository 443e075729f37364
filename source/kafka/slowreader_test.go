package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/source"
)

// TestSlowReaderDoesNotMakePartitionsIdle: a bounded run (StopAtEnd) over
// records already written merges in the oracle's order (doc.go: "always
// for a bounded run over records already written"), however long the
// engine takes between FillSome calls (engine.Stream.Buffer blocking on
// back-pressure, a slow flush). While FillSome is not called nothing is
// polled, so a partition gets no records because the source is not
// reading, not because it is idle: the idle clock must not run then.
func TestSlowReaderDoesNotMakePartitionsIdle(t *testing.T) {
	t.Parallel()
	// Long enough that the time spent polling in FillSome (slow under
	// the race detector) stays under it.
	const parts, idle = 2, time.Second
	data := make([][]rec, parts)
	for p := range data {
		for i := range 40 {
			data[p] = append(data[p], rec{part: int32(p), time: int64(i), id: int64(p)*1_000_000 + int64(i), off: int64(i)})
		}
	}
	for _, fetchers := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d fetchers", fetchers), func(t *testing.T) {
			t.Parallel()
			c := kafkatest.Start(t, parts, "slow")
			produce(t, producer(t, c.Addr), "slow", interleave(data, 0, nil), false)
			s := openT(t, Config{Brokers: []string{c.Addr}, Topic: "slow", Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true,
				IdleTimeout: idle, Fetchers: fetchers, Logger: t.Logf, bufferTuples: 40, maxPoll: 10, fetchPartitionBytes: 1024,
				// A fetch that waits for records of partitions with none
				// holds back another, resumed meanwhile, for as long.
				fetchMaxWait: 10 * time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dst := make([]byte, 80*testTS)
			var got []byte
			for {
				n, err := s.FillSome(ctx, dst)
				got = append(got, dst[:n]...)
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err)
				time.Sleep(idle + 200*time.Millisecond) // the engine is busy with what it got
			}
			require.Equal(t, sortedIDs(oracle(data)), sortedIDs(got), "every record once")
			require.True(t, string(oracle(data)) == string(got), "merge order differs from the oracle: %s", firstDiff(oracle(data), got))
		})
	}
}
