package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/source"
)

// The test tuple: event time (int64 at 0), id (int64 at 8: the record's
// partition*1e6 + its index in the partition), val (int32 at 16).
const testTS = 24

func testLayout(t testing.TB) *source.Layout {
	l, err := source.NewLayout(testTS,
		source.Column{Name: "event_time", Kind: source.Int64, Offset: 0},
		source.Column{Name: "id", Kind: source.Int64, Offset: 8},
		source.Column{Name: "val", Kind: source.Int32, Offset: 16},
	)
	require.NoError(t, err)
	return l
}

func jsonDecoder(t testing.TB, onErr source.OnError) source.Decoder {
	d, err := source.NewJSONDecoder(testLayout(t), source.JSONOptions{Options: source.Options{Input: "kafka", OnError: onErr}})
	require.NoError(t, err)
	return d
}

// jsonNewDecoder makes decoders like jsonDecoder's, for the fetchers
// (Config.NewDecoder).
func jsonNewDecoder(t testing.TB, onErr source.OnError) func(func(int) ([]byte, error)) (source.Decoder, error) {
	return func(strings func(int) ([]byte, error)) (source.Decoder, error) {
		return source.NewJSONDecoder(testLayout(t), source.JSONOptions{Options: source.Options{Input: "kafka", OnError: onErr, Strings: strings}})
	}
}

// rec is one test record.
type rec struct {
	part int32
	time int64
	id   int64
	val  int32
	off  int64 // the offset of its record (the merge's order at equal times)
}

func (r rec) json() []byte {
	return fmt.Appendf(nil, `{"event_time": %d, "id": %d, "val": %d}`, r.time, r.id, r.val)
}

func (r rec) tuple() []byte {
	b := make([]byte, testTS)
	binary.LittleEndian.PutUint64(b, uint64(r.time))
	binary.LittleEndian.PutUint64(b[8:], uint64(r.id))
	binary.LittleEndian.PutUint32(b[16:], uint32(r.val))
	return b
}

// genRecords makes per-partition sequences with random, locally
// disordered event times.
func genRecords(rnd func(int) int, parts, perPart int) [][]rec {
	out := make([][]rec, parts)
	for p := range out {
		n := perPart
		if perPart > 4 {
			n = perPart/2 + rnd(perPart)
		}
		tm := int64(rnd(100))
		for i := 0; i < n; i++ {
			tm += int64(rnd(20)) - 5 // mostly forward, sometimes back
			out[p] = append(out[p], rec{part: int32(p), time: tm, id: int64(p)*1_000_000 + int64(i), val: int32(rnd(1000)), off: int64(i)})
		}
	}
	return out
}

// oracle is the stream order the package promises: per-partition
// sequences in offset order, merged by smallest head event time, ties by
// lowest offset, then lowest partition, no partition idle.
func oracle(parts [][]rec) []byte {
	heads := make([]int, len(parts))
	var out []byte
	for {
		best := -1
		for p := range parts {
			if heads[p] == len(parts[p]) {
				continue
			}
			if best < 0 {
				best = p
				continue
			}
			r, b := parts[p][heads[p]], parts[best][heads[best]]
			if r.time < b.time || r.time == b.time && r.off < b.off {
				best = p
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, parts[best][heads[best]].tuple()...)
		heads[best]++
	}
}

// producer returns a client that writes to the partition each record names.
func producer(t testing.TB, addr string) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// produce writes records in the order given.
func produce(t testing.TB, cl *kgo.Client, topic string, rs []rec, binaryValues bool) {
	t.Helper()
	batch := make([]*kgo.Record, 0, len(rs))
	for _, r := range rs {
		v := r.json()
		if binaryValues {
			v = r.tuple()
		}
		batch = append(batch, &kgo.Record{Topic: topic, Partition: r.part, Value: v})
	}
	require.NoError(t, cl.ProduceSync(context.Background(), batch...).FirstErr())
}

// interleave orders the records of every partition in one of a few ways,
// each partition's in its own order.
func interleave(parts [][]rec, how int, rnd func(int) int) []rec {
	var out []rec
	switch how {
	case 0: // partition after partition
		for _, p := range parts {
			out = append(out, p...)
		}
	case 1: // last partition first
		for i := len(parts) - 1; i >= 0; i-- {
			out = append(out, parts[i]...)
		}
	default: // random interleaving
		heads := make([]int, len(parts))
		left := 0
		for _, p := range parts {
			left += len(p)
		}
		for ; left > 0; left-- {
			for {
				p := rnd(len(parts))
				if heads[p] < len(parts[p]) {
					out = append(out, parts[p][heads[p]])
					heads[p]++
					break
				}
			}
		}
	}
	return out
}

// readAll reads s to io.EOF through a dst of dstTuples tuples.
func readAll(t testing.TB, s *Source, dstTuples int) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dst := make([]byte, dstTuples*s.TupleSize())
	var out []byte
	for {
		n, err := s.FillSome(ctx, dst)
		out = append(out, dst[:n]...)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		require.Positive(t, n)
	}
}

// ids lists the ids of a stream's tuples.
func ids(stream []byte) []int64 {
	var out []int64
	for i := 0; i+testTS <= len(stream); i += testTS {
		out = append(out, int64(binary.LittleEndian.Uint64(stream[i+8:])))
	}
	return out
}

// firstDiff describes where two streams differ, for failure messages.
func firstDiff(a, b []byte) string {
	if bytes.Equal(a, b) {
		return "equal"
	}
	ia, ib := ids(a), ids(b)
	for i := range min(len(ia), len(ib)) {
		if ia[i] != ib[i] {
			return fmt.Sprintf("tuple %d: id %d vs %d", i, ia[i], ib[i])
		}
	}
	return fmt.Sprintf("lengths %d vs %d tuples", len(ia), len(ib))
}

func openT(t testing.TB, cfg Config) *Source {
	t.Helper()
	s, err := Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// settleGoroutines waits (briefly) for the goroutine count to fall to at
// most want, and returns the last count and the stacks of what is left.
func settleGoroutines(want int) (int, string) {
	var n int
	for range 200 {
		if n = runtime.NumGoroutine(); n <= want {
			return n, ""
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return n, string(buf)
}

func sortedIDs(stream []byte) []int64 {
	x := ids(stream)
	slices.Sort(x)
	return x
}

func allIDs(parts [][]rec) []int64 {
	var x []int64
	for _, p := range parts {
		for _, r := range p {
			x = append(x, r.id)
		}
	}
	slices.Sort(x)
	return x
}

// predecoded sums the fetchers' counts of records they decoded and of
// those they left to FillSome (Close first: the fetchers have stopped).
func (s *Source) predecoded() (pre, fellBack int) {
	s.Close()
	for _, f := range s.fetchers {
		pre += f.predecoded
		fellBack += f.fellBack
	}
	return pre, fellBack
}

// messyRecords is data as records of topic: up to perValue of them to a
// value, a line at a time; about one line in oneInBad/2 malformed (an
// event time that is a string, or a line cut short) and one value in
// oneInEmpty empty.
func messyRecords(rnd func(int) int, data [][]rec, topic string, perValue, oneInBad, oneInEmpty int) []*kgo.Record {
	var batch []*kgo.Record
	for p, rs := range data {
		for len(rs) > 0 {
			k := min(len(rs), 1+rnd(perValue))
			var v []byte
			for i, r := range rs[:k] {
				if i > 0 {
					v = append(v, '\n')
				}
				switch rnd(oneInBad) {
				case 0:
					v = append(v, `{"event_time": "late", "id": 1}`...)
				case 1:
					v = append(v, `{"event_time": 1, "id": `...) // cut short
				default:
					v = append(v, r.json()...)
				}
			}
			if rnd(oneInEmpty) == 0 {
				v = nil
			}
			batch = append(batch, &kgo.Record{Topic: topic, Partition: int32(p), Value: v})
			rs = rs[k:]
		}
	}
	return batch
}
