package kafka

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/source"
)

// produceLines writes each partition's records, some several to a value
// (a value of several lines: a tuple each, at one offset), and sets their
// offsets.
func produceLines(t *testing.T, cl *kgo.Client, topic string, data [][]rec, rnd func(int) int) {
	var batch []*kgo.Record
	for _, rs := range data {
		for off := int64(0); len(rs) > 0; off++ {
			k := min(len(rs), 1+rnd(3))
			for i := range rs[:k] {
				rs[i].off = off // data's own: the oracle's order
			}
			var v []byte
			for i, r := range rs[:k] {
				if i > 0 {
					v = append(v, '\n')
				}
				v = append(v, r.json()...)
			}
			batch = append(batch, &kgo.Record{Topic: topic, Partition: rs[0].part, Value: v})
			rs = rs[k:]
		}
	}
	require.NoError(t, cl.ProduceSync(context.Background(), batch...).FirstErr())
}

// readFirst reads s's first k tuples, at most most a FillSome.
func readFirst(t *testing.T, s *Source, k int, rnd func(int) int, most int) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []byte
	for len(got) < k*testTS {
		dst := make([]byte, min(1+rnd(most), k-len(got)/testTS)*testTS)
		n, err := s.FillSome(ctx, dst)
		require.NoError(t, err)
		got = append(got, dst[:n]...)
	}
	return got
}

// TestResumeAtPositions: a source read up to k tuples, its Positions
// taken and closed, and a source opened with them as Resume, read to the
// end, give together exactly the stream of one uninterrupted read (the
// merge order included), also where a value of several lines is cut.
func TestResumeAtPositions(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rnd := rndOf(seed + 100)
			parts := 2 + rnd(4)
			data := genRecords(rnd, parts, 120)
			c := kafkatest.Start(t, parts)
			pr := producer(t, c.Addr)
			require.NoError(t, c.CreateTopic("t", int32(parts), nil))
			produceLines(t, pr, "t", data, rnd)
			want := oracle(data)
			total := len(want) / testTS
			for _, k := range []int{0, 1, rnd(total), rnd(total), total} {
				cfg := Config{Brokers: []string{c.Addr}, Topic: "t", Group: "g", Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true,
					fetchPartitionBytes: int32(200 + rnd(4000)), maxPoll: 1 + rnd(50), bufferTuples: 1 + rnd(40),
					Resume:   map[int32]Position{}, // static: every partition, from the start
					Fetchers: 1 + rnd(parts)}
				if rnd(2) == 0 {
					cfg.NewDecoder = jsonNewDecoder(t, source.Fail)
				}
				s := openT(t, cfg)
				got := readFirst(t, s, k, rnd, 20)
				pos := s.Positions()
				assert.Len(t, pos, parts)
				require.NoError(t, s.Close())

				cfg.Decoder = jsonDecoder(t, source.Fail)
				cfg.Resume = pos
				s2 := openT(t, cfg)
				got = append(got, readAll(t, s2, 1+rnd(30))...)
				require.NoError(t, s2.Close())
				assert.True(t, bytes.Equal(want, got), "cut after %d of %d tuples at %v: %s", k, total, pos, firstDiff(want, got))
			}
		})
	}
}

// TestInstancesSplitPartitions: instance I of N reads the partitions p
// with p mod N = I; the instances together read every record once.
func TestInstancesSplitPartitions(t *testing.T) {
	t.Parallel()
	rnd := rndOf(7)
	data := genRecords(rnd, 6, 50)
	c := kafkatest.Start(t, 6)
	pr := producer(t, c.Addr)
	require.NoError(t, c.CreateTopic("t", 6, nil))
	produceLines(t, pr, "t", data, rnd)
	var all []int64
	for i := range 3 {
		s := openT(t, Config{Brokers: []string{c.Addr}, Topic: "t", Group: "g", Instance: i, Instances: 3,
			Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true})
		var parts []int32
		for _, p := range s.Stats().Partitions {
			parts = append(parts, p.Partition)
		}
		assert.Equal(t, []int32{int32(i), int32(i + 3)}, parts)
		got := readAll(t, s, 17)
		assert.Equal(t, oracle([][]rec{data[i], data[i+3]}), got, "instance %d", i)
		all = append(all, ids(got)...)
		require.NoError(t, s.Close())
	}
	slices.Sort(all)
	assert.Equal(t, allIDs(data), all)

	_, err := Open(context.Background(), Config{Brokers: []string{c.Addr}, Topic: "t", Instance: 3, Instances: 3, Decoder: jsonDecoder(t, source.Fail)})
	assert.ErrorContains(t, err, "instance 3 of 3")
	_, err = Open(context.Background(), Config{Brokers: []string{c.Addr}, Topic: "t", Instance: 6, Instances: 7, Decoder: jsonDecoder(t, source.Fail)})
	assert.ErrorContains(t, err, "no partition")
	_, err = Open(context.Background(), Config{Brokers: []string{c.Addr}, Topic: "t", Instance: 1, Instances: 3, Decoder: jsonDecoder(t, source.Fail),
		Resume: map[int32]Position{0: {Offset: 3}}})
	assert.ErrorContains(t, err, "resume of partition 0")
}

// TestPositionsAfterResumeInARecord: a source resumed within a value of
// several lines (Skip), cut again before that value's last line is out,
// counts the lines produced before it resumed: its Positions skip them
// too.
func TestPositionsAfterResumeInARecord(t *testing.T) {
	s := offline(t, 1, Config{Decoder: jsonDecoder(t, source.Fail)})
	rs := genRecords(rndOf(3), 1, 4)[0][:4]
	var v []byte
	for i, r := range rs {
		if i > 0 {
			v = append(v, '\n')
		}
		v = append(v, r.json()...)
	}
	s.mu.Lock()
	s.assign(0, 5)
	s.parts[0].resumeAt(Position{Offset: 5, Skip: 2})
	require.NoError(t, s.add(s.parts[0], &kgo.Record{Value: v, Offset: 5}))
	s.parts[0].ended = true
	s.refresh(s.parts[0])
	dst := make([]byte, testTS)
	n := s.merge(dst, 0)
	s.mu.Unlock()
	assert.Equal(t, []int64{rs[2].id}, ids(dst[:n]))
	assert.Equal(t, map[int32]Position{0: {Offset: 5, Skip: 3}}, s.Positions())
}

// TestResumeWithFetchersAndMalformedLines: as TestResumeAtPositions, with
// values of several lines, malformed lines skipped (on_error skip) and
// empty values, the first source read through fetchers that decode (small
// buffers and polls: partitions paused and resumed), and its Positions
// resumed from: together the same stream as one uninterrupted read by
// FillSome's own decoder.
func TestResumeWithFetchersAndMalformedLines(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rnd := rndOf(seed + 900)
			parts := 2 + rnd(3)
			c := kafkatest.Start(t, parts, "m")
			batch := messyRecords(rnd, genRecords(rnd, parts, 150), "m", 4, 10, 20)
			require.NoError(t, producer(t, c.Addr).ProduceSync(context.Background(), batch...).FirstErr())
			base := Config{Brokers: []string{c.Addr}, Topic: "m", Decoder: jsonDecoder(t, source.Skip), StopAtEnd: true, Resume: map[int32]Position{}}
			s := openT(t, base)
			want := readAll(t, s, 7)
			require.NoError(t, s.Close())
			total := len(want) / testTS
			for _, k := range []int{1, rnd(total), rnd(total), total - 1} {
				cfg := base
				cfg.Decoder, cfg.NewDecoder = jsonDecoder(t, source.Skip), jsonNewDecoder(t, source.Skip)
				cfg.Fetchers, cfg.maxPoll, cfg.bufferTuples, cfg.fetchPartitionBytes = 1+rnd(parts), 1+rnd(30), 1+rnd(20), int32(200+rnd(3000))
				s := openT(t, cfg)
				got := readFirst(t, s, k, rnd, 10)
				pos := s.Positions()
				require.NoError(t, s.Close())
				cfg.Decoder, cfg.Resume = jsonDecoder(t, source.Skip), pos
				got = append(got, readAll(t, openT(t, cfg), 1+rnd(9))...)
				assert.True(t, bytes.Equal(want, got), "cut after %d tuples at %v: %s", k, pos, firstDiff(want, got))
			}
		})
	}
}

// TestResumeOutOfRange: a position outside the log's range at open. Before
// its start (retention deleted the records), the source begins at the
// start whatever Start says; past its end (the topic made again), at
// Start: the earliest record, or only what comes after open. Each is
// logged, with what is lost.
func TestResumeOutOfRange(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 1)
	pr := producer(t, c.Addr)
	recs := func(from, to int64) []rec {
		var rs []rec
		for i := from; i < to; i++ {
			rs = append(rs, rec{time: i, id: i, val: int32(i)})
		}
		return rs
	}
	for _, tc := range []struct {
		name   string
		start  Start
		resume int64
		want   []int64
		log    string
	}{
		{"before the start", Latest, 1, []int64{4, 5, 6, 7, 8, 9}, "the checkpoint's offset 1 is before the log's start 4 (deleted by retention): 3 records lost, reading from 4"},
		{"past the end, earliest", Earliest, 50, []int64{4, 5, 6, 7, 8, 9, 10, 11}, "the checkpoint's offset 50 is past the log's end 10 (the topic made again, or truncated?): reading from 4 (earliest)"},
		{"past the end, latest", Latest, 50, []int64{10, 11}, "the checkpoint's offset 50 is past the log's end 10 (the topic made again, or truncated?): reading from 10 (latest)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			topic := strings.ReplaceAll(tc.name, " ", "-")
			require.NoError(t, c.CreateTopic(topic, 1, nil))
			produce(t, pr, topic, recs(0, 10), false)
			adm := kadm.NewClient(pr)
			var del kadm.Offsets
			del.Add(kadm.Offset{Topic: topic, Partition: 0, At: 4})
			dr, err := adm.DeleteRecords(context.Background(), del)
			require.NoError(t, err)
			require.NoError(t, dr.Error())
			var mu sync.Mutex
			var logged []string
			s := openT(t, Config{Brokers: []string{c.Addr}, Topic: topic, Decoder: jsonDecoder(t, source.Fail), Start: tc.start,
				Resume: map[int32]Position{0: {Offset: tc.resume}}, fetchMaxWait: 20 * time.Millisecond,
				Logger: func(f string, a ...any) { mu.Lock(); defer mu.Unlock(); logged = append(logged, fmt.Sprintf(f, a...)) }})
			produce(t, pr, topic, recs(10, 12), false)
			got := ids(readFirst(t, s, len(tc.want), func(int) int { return 0 }, 1))
			assert.Equal(t, tc.want, got)
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, []string{"kafka source " + topic + ": partition 0: " + tc.log}, logged)
		})
	}
}

// TestResumePastTheEndWithSkip: a checkpoint's position past the log's
// end that skips lines of its record is moved, skip and all: the record
// now at that offset (the topic made again) is read whole, and Positions
// says where the source begins.
func TestResumePastTheEndWithSkip(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 1)
	pr := producer(t, c.Addr)
	const topic = "made-again"
	require.NoError(t, c.CreateTopic(topic, 1, nil))
	recs := func(from, to int64) []rec {
		var rs []rec
		for i := from; i < to; i++ {
			rs = append(rs, rec{time: i, id: i, val: int32(i)})
		}
		return rs
	}
	produce(t, pr, topic, recs(0, 10), false)
	s := openT(t, Config{Brokers: []string{c.Addr}, Topic: topic, Decoder: jsonDecoder(t, source.Fail), Start: Earliest,
		Resume: map[int32]Position{0: {Offset: 12, Skip: 1}}, fetchMaxWait: 20 * time.Millisecond, Logger: func(string, ...any) {}})
	assert.Equal(t, map[int32]Position{0: {Offset: 0}}, s.Positions(), "where it begins: the log's start")
	produce(t, pr, topic, recs(10, 14), false)
	assert.Equal(t, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, ids(readFirst(t, s, 13, func(int) int { return 0 }, 1)),
		"record 12 of the new topic read whole")
}
