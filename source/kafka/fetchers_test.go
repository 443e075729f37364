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

// TestFetchersDecodeAsFillSome: values of one line or several, some of
// their lines malformed, some values empty, read with OnError Skip by
// FillSome's decoder alone and by the fetchers' (1 to 4 of them), give
// the same stream, the same count of malformed lines and the same
// commits' positions; with OnError Fail, the same first error.
func TestFetchersDecodeAsFillSome(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rnd := rndOf(seed + 400)
			parts := 1 + rnd(4)
			c := kafkatest.Start(t, parts, "m")
			data := genRecords(rnd, parts, 200)
			batch := messyRecords(rnd, data, "m", 3, 20, 30)
			require.NoError(t, producer(t, c.Addr).ProduceSync(context.Background(), batch...).FirstErr())

			read := func(onErr source.OnError, fetchers int, predecode bool) ([]byte, Stats, error) {
				cfg := Config{Brokers: []string{c.Addr}, Topic: "m", Decoder: jsonDecoder(t, onErr), StopAtEnd: true,
					Fetchers: fetchers, maxPoll: 1 + rnd(100), fetchPartitionBytes: int32(500 + rnd(5000))}
				if predecode {
					cfg.NewDecoder = jsonNewDecoder(t, onErr)
				}
				s := openT(t, cfg)
				dst := make([]byte, (1+rnd(20))*testTS)
				var out []byte
				var err error
				for err == nil {
					var n int
					n, err = s.FillSome(context.Background(), dst)
					out = append(out, dst[:n]...)
				}
				st := s.Stats()
				pre, _ := s.predecoded()
				if predecode && len(out) > 0 {
					assert.Positive(t, pre, "the fetchers decoded")
				}
				return out, st, err
			}
			want, wantSt, err := read(source.Skip, 1, false)
			require.ErrorContains(t, err, "EOF")
			_, _, wantErr := read(source.Fail, 1, false)
			for fetchers := 1; fetchers <= parts; fetchers++ {
				got, st, err := read(source.Skip, fetchers, true)
				require.ErrorContains(t, err, "EOF")
				assert.True(t, bytes.Equal(want, got), "%d fetchers: %s", fetchers, firstDiff(want, got))
				assert.Equal(t, wantSt.Malformed, st.Malformed, "%d fetchers", fetchers)
				assert.Equal(t, wantSt.Records, st.Records, "%d fetchers", fetchers)
				assert.Equal(t, wantSt.Tuples, st.Tuples, "%d fetchers", fetchers)
				if parts == 1 {
					// One partition: the first error is the same record's.
					_, _, err = read(source.Fail, fetchers, true)
					assert.Equal(t, wantErr.Error(), err.Error())
				}
			}
		})
	}
}

// TestValuesWithByteOrderMark: values that each start with a UTF-8 byte
// order mark (as some producers write every document) decode as without
// it, whichever decoder decodes them: FillSome's, or each fetcher's, whose
// first line would otherwise be the only one to lose it.
func TestValuesWithByteOrderMark(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 2, "bom")
	data := genRecords(rndOf(5), 2, 30)
	var batch []*kgo.Record
	for p := range data {
		for _, r := range data[p] {
			batch = append(batch, &kgo.Record{Topic: "bom", Partition: int32(p), Value: append([]byte("\xef\xbb\xbf"), r.json()...)})
		}
	}
	require.NoError(t, producer(t, c.Addr).ProduceSync(context.Background(), batch...).FirstErr())
	for _, fetchers := range []int{1, 2} {
		for _, predecode := range []bool{false, true} {
			cfg := Config{Brokers: []string{c.Addr}, Topic: "bom", Decoder: jsonDecoder(t, source.Skip), StopAtEnd: true, Fetchers: fetchers}
			if predecode {
				cfg.NewDecoder = jsonNewDecoder(t, source.Skip)
			}
			s := openT(t, cfg)
			got, want := readAll(t, s, 8), oracle(data)
			assert.True(t, bytes.Equal(want, got), "fetchers %d, predecode %v: %d tuples, want %d", fetchers, predecode, len(got)/testTS, len(want)/testTS)
			assert.Zero(t, s.Stats().Malformed, "fetchers %d, predecode %v", fetchers, predecode)
		}
	}
}
