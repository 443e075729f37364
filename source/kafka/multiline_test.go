package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/source"
)

// TestCommitsMultiLineRecord: a record whose value holds several lines is
// committed only once all its tuples are out, however the reads cut it.
func TestCommitsMultiLineRecord(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 1, "ml")
	var lines []byte
	for i := range 3 {
		lines = fmt.Appendf(lines, "%s\n", rec{part: 0, time: int64(i), id: int64(i)}.json())
	}
	cl := producer(t, c.Addr)
	require.NoError(t, cl.ProduceSync(context.Background(),
		&kgo.Record{Topic: "ml", Value: rec{part: 0, time: 0, id: 100}.json()}, // offset 0: one line
		&kgo.Record{Topic: "ml", Value: lines},                                 // offset 1: three lines
	).FirstErr())
	s := openT(t, Config{Brokers: []string{c.Addr}, Topic: "ml", Group: "g", Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true, CommitInterval: time.Hour})
	stream := readAll(t, s, 1) // a tuple a FillSome: the reads cut the record
	require.Len(t, stream, 4*testTS)
	// The engine is done with the first two tuples only: the one-line
	// record and the first line of the other.
	s.Done(2*testTS, 1<<62)
	require.NoError(t, s.Close())
	assert.Equal(t, map[int32]int64{0: 1}, committed(t, c.Addr, "g", "ml"), "offset 1 is not done until its last line is")

	s = openT(t, Config{Brokers: []string{c.Addr}, Topic: "ml", Group: "g", Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true, CommitInterval: time.Hour})
	stream = readAll(t, s, 1)
	require.Len(t, stream, 3*testTS, "the record read again, whole")
	s.Done(3*testTS, 1<<62)
	require.NoError(t, s.Close())
	assert.Equal(t, map[int32]int64{0: 2}, committed(t, c.Addr, "g", "ml"))
}

// TestStartLatest: with Start Latest a statically assigned source reads
// what comes after it opened and nothing before, and its position before
// any record is the end it reads from. (In a group, latest is resolved
// when the group assigns the partition, as Kafka's consumers do.)
func TestStartLatest(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 1, "late")
	pr := producer(t, c.Addr)
	produce(t, pr, "late", []rec{{part: 0, time: 1, id: 1}, {part: 0, time: 2, id: 2}}, false)
	s := openT(t, Config{Brokers: []string{c.Addr}, Topic: "late", Group: "g", Start: Latest, Partitions: []int32{0}, Decoder: jsonDecoder(t, source.Fail)})
	assert.Equal(t, int64(2), s.Positions()[0].Offset, "the end it reads from")
	produce(t, pr, "late", []rec{{part: 0, time: 3, id: 3}}, false)
	dst := make([]byte, 4*testTS)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := s.FillSome(ctx, dst)
	require.NoError(t, err)
	assert.Equal(t, []int64{3}, ids(dst[:n]), "a record produced just after the open is read")
	require.NoError(t, s.Close())
}
