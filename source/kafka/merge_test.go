package kafka

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/source"
)

// offline is a Source with partitions assigned and no client: records go
// in through add, tuples out through merge.
func offline(t testing.TB, parts int, cfg Config) *Source {
	cfg.Brokers, cfg.Topic = []string{"none:1"}, "t"
	if cfg.Decoder == nil && !cfg.Binary {
		cfg.Binary, cfg.TupleSize = true, testTS
	}
	s, err := newSource(cfg)
	require.NoError(t, err)
	for p := range parts {
		s.assign(int32(p), 0)
	}
	s.pauseReq, s.resumeReq = nil, nil
	return s
}

// TestMergeRule: fed the partitions' records in random chunks, the merge
// produces the oracle's order whatever the chunks (no Kafka).
func TestMergeRule(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		rnd := rndOf(seed)
		parts := 1 + rnd(6)
		data := genRecords(rnd, parts, 60)
		want := oracle(data)
		s := offline(t, parts, Config{})
		heads := make([]int, parts)
		var got []byte
		dst := make([]byte, (1+rnd(9))*testTS)
		for {
			// Feed a random partition a random chunk, as a poll would.
			p := rnd(parts)
			for k := rnd(5); k > 0 && heads[p] < len(data[p]); k-- {
				r := data[p][heads[p]]
				require.NoError(t, s.add(s.parts[p], &kgo.Record{Value: r.tuple(), Offset: int64(heads[p])}))
				heads[p]++
			}
			if heads[p] == len(data[p]) && !s.parts[p].ended {
				s.parts[p].ended = true // read to its end
				s.refresh(s.parts[p])
			}
			for {
				n := s.merge(dst, 0)
				got = append(got, dst[:n]...)
				if n == 0 {
					break
				}
			}
			if s.atEndOffline() {
				break
			}
		}
		assert.True(t, bytes.Equal(want, got), "seed %d: %s", seed, firstDiff(want, got))
	}
}

// atEndOffline is atEnd without StopAtEnd's flag.
func (s *Source) atEndOffline() bool {
	if len(s.heap) > 0 {
		return false
	}
	for _, p := range s.parts {
		if p != nil && p.assigned && !p.ended {
			return false
		}
	}
	return true
}

// TestMergeNoAlloc: decoding a record into its partition's buffer and
// merging allocate nothing once the buffers have grown.
func TestMergeNoAlloc(t *testing.T) {
	s := offline(t, 4, Config{Decoder: jsonDecoder(t, source.Fail), Group: "g"})
	recs := make([]*kgo.Record, 64)
	for i := range recs {
		recs[i] = &kgo.Record{Value: rec{time: int64(i * 7 % 13), id: int64(i)}.json(), Offset: int64(i)}
	}
	dst := make([]byte, 16*testTS)
	round := func() {
		for i, r := range recs {
			_ = s.add(s.parts[i%4], r)
			s.parts[i%4].next = -1
		}
		// Idle: an empty partition does not hold the rest back, so that
		// each round drains the buffers (else they grow without bound).
		for _, p := range s.parts {
			p.idle = true
			s.refresh(p)
		}
		for s.merge(dst, 0) > 0 {
			s.pushMarks()
		}
		s.Done(s.pos, 1<<62)
	}
	round()
	assert.Zero(t, testing.AllocsPerRun(50, round))
}

// BenchmarkMerge: the merge alone, over 4 partitions of buffered tuples.
func BenchmarkMerge(b *testing.B) {
	for _, parts := range []int{1, 4, 16} {
		b.Run(fmt.Sprint(parts), func(b *testing.B) {
			s := offline(b, parts, Config{})
			data := genRecords(rndOf(1), parts, 1024)
			vals := make([][][]byte, parts)
			for p := range data {
				for _, r := range data[p] {
					vals[p] = append(vals[p], r.tuple())
				}
			}
			dst := make([]byte, 256*testTS)
			tuples := 0
			b.ReportAllocs()
			b.SetBytes(testTS)
			b.ResetTimer()
			for tuples < b.N {
				b.StopTimer()
				for p := range vals {
					for _, v := range vals[p] {
						s.push(s.parts[p], v, 0)
					}
					s.refresh(s.parts[p])
				}
				// One partition drains first; mark them all ended so that the
				// last tuples pass too.
				for _, p := range s.parts {
					p.ended = true
					s.refresh(p)
				}
				b.StartTimer()
				for {
					n := s.merge(dst, 0)
					if n == 0 {
						break
					}
					tuples += n / testTS
				}
			}
		})
	}
}

// ysbLayout is YSB's event as JSON decodes it.
func ysbLayout(t testing.TB) *source.Layout {
	l, err := source.NewLayout(72,
		source.Column{Name: "event_time", Kind: source.Int64, Offset: 0},
		source.Column{Name: "user_id", Kind: source.UUID, Offset: 8},
		source.Column{Name: "page_id", Kind: source.UUID, Offset: 24},
		source.Column{Name: "ad_id", Kind: source.UUID, Offset: 40},
		source.Column{Name: "ad_type", Kind: source.Enum, Offset: 56, Labels: []string{"banner", "modal", "sponsored-search", "mail", "mobile"}},
		source.Column{Name: "event_type", Kind: source.Enum, Offset: 60, Labels: []string{"view", "click", "purchase"}},
		source.Column{Name: "ip_address", Kind: source.IPv4, Offset: 64},
	)
	require.NoError(t, err)
	return l
}

// BenchmarkFillSomeJSON: YSB-shaped JSON records through kfake on 4
// partitions, read to the end by FillSome (an op is one record).
func BenchmarkFillSomeJSON(b *testing.B) {
	const parts, records = 4, 100_000
	c := kafkatest.Start(b, parts, "ysb")
	pr := producer(b, c.Addr)
	var batch []*kgo.Record
	var total int64
	for i := range records {
		v := fmt.Appendf(nil, `{"user_id": "%08x-0000-4000-8000-000000000001", "page_id": "%08x-0000-4000-8000-000000000002", "ad_id": "%08x-0000-4000-8000-000000000003", "ad_type": "banner", "event_type": "view", "event_time": "%d", "ip_address": "1.2.3.4"}`,
			i, i*3, i%1000, 1700000000000+int64(i))
		total += int64(len(v))
		batch = append(batch, &kgo.Record{Topic: "ysb", Partition: int32(i % parts), Value: v})
		if len(batch) == 5000 {
			require.NoError(b, pr.ProduceSync(context.Background(), batch...).FirstErr())
			batch = batch[:0]
		}
	}
	l := ysbLayout(b)
	dst := make([]byte, 1024*72)
	b.SetBytes(total / records)
	b.ReportAllocs()
	b.ResetTimer()
	done := 0
	for done < b.N {
		b.StopTimer()
		d, err := source.NewJSONDecoder(l, source.JSONOptions{})
		require.NoError(b, err)
		s, err := Open(context.Background(), Config{Brokers: []string{c.Addr}, Topic: "ysb", Decoder: d, StopAtEnd: true})
		require.NoError(b, err)
		b.StartTimer()
		for {
			n, err := s.FillSome(context.Background(), dst)
			done += n / 72
			if err == io.EOF {
				break
			}
			require.NoError(b, err)
		}
		b.StopTimer()
		require.NoError(b, s.Close())
		b.StartTimer()
	}
}

// TestMergeTiesTakeThePartitionsInTurn: records of one event time go out
// by offset, the partitions in turn, where they went out a partition at a
// time (each drained before the next, the others' buffers full).
func TestMergeTiesTakeThePartitionsInTurn(t *testing.T) {
	s := offline(t, 3, Config{})
	for p := range 3 {
		for off := range 3 {
			r := rec{part: int32(p), time: 5, id: int64(10*p + off)}
			require.NoError(t, s.add(s.parts[p], &kgo.Record{Value: r.tuple(), Offset: int64(off)}))
		}
		s.parts[p].ended = true
		s.refresh(s.parts[p])
	}
	dst := make([]byte, 9*testTS)
	require.Equal(t, 9*testTS, s.merge(dst, 0))
	assert.Equal(t, []int64{0, 10, 20, 1, 11, 21, 2, 12, 22}, ids(dst))
}
