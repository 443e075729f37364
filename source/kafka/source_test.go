package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/source"
)

func rndOf(seed uint64) func(int) int {
	r := rand.New(rand.NewPCG(seed, 7))
	return func(n int) int { return r.IntN(n) }
}

// TestReadJSON reads JSON records over 1 and 4 partitions to the end,
// in the merge's order.
func TestReadJSON(t *testing.T) {
	t.Parallel()
	for _, parts := range []int{1, 4} {
		for _, predecode := range []bool{false, true} {
			t.Run(fmt.Sprint(parts, predecode), func(t *testing.T) {
				t.Parallel()
				c := kafkatest.Start(t, parts, "ev")
				data := genRecords(rndOf(uint64(parts)), parts, 300)
				produce(t, producer(t, c.Addr), "ev", interleave(data, 2, rndOf(1)), false)
				cfg := Config{Brokers: []string{c.Addr}, Topic: "ev", Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true}
				if predecode {
					cfg.NewDecoder = jsonNewDecoder(t, source.Fail)
				}
				s := openT(t, cfg)
				got := readAll(t, s, 64)
				want := oracle(data)
				assert.True(t, bytes.Equal(want, got), "stream differs from the merge rule: %s", firstDiff(want, got))
				st := s.Stats()
				assert.Equal(t, int64(len(want)/testTS), st.Tuples)
				assert.Equal(t, st.Tuples, st.Records)
				assert.Equal(t, uint64(len(want)), st.Position)
				for _, ps := range st.Partitions {
					assert.Equal(t, ps.High, ps.Next, "partition %d read to its high watermark", ps.Partition)
				}
				pre, fell := s.predecoded()
				if predecode {
					assert.Equal(t, len(want)/testTS, pre, "every record decoded by a fetcher")
				} else {
					assert.Zero(t, pre)
				}
				assert.Zero(t, fell)
			})
		}
	}
}

// TestReadBinary reads values that are the tuples themselves.
func TestReadBinary(t *testing.T) {
	t.Parallel()
	for _, parts := range []int{1, 4} {
		t.Run(fmt.Sprint(parts), func(t *testing.T) {
			t.Parallel()
			c := kafkatest.Start(t, parts, "bin")
			data := genRecords(rndOf(uint64(10+parts)), parts, 200)
			produce(t, producer(t, c.Addr), "bin", interleave(data, 0, nil), true)
			s := openT(t, Config{Brokers: []string{c.Addr}, Topic: "bin", Binary: true, TupleSize: testTS, StopAtEnd: true})
			got := readAll(t, s, 7)
			want := oracle(data)
			assert.True(t, bytes.Equal(want, got), "binary stream differs: %s", firstDiff(want, got))
		})
	}
}

// TestDeterministicMerge: the same per-partition contents, written in
// different interleavings and read with different fetch sizes, poll sizes
// and destination sizes, give byte-identical streams, the oracle's.
func TestDeterministicMerge(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rnd := rndOf(seed)
			parts := 2 + rnd(4)
			data := genRecords(rnd, parts, 150)
			want := oracle(data)
			c := kafkatest.Start(t, parts)
			pr := producer(t, c.Addr)
			for how := range 3 {
				topic := fmt.Sprintf("t%d", how)
				require.NoError(t, c.CreateTopic(topic, int32(parts), nil))
				// Several produce calls, so that batches (and fetches) cut
				// the partitions at different places.
				rs := interleave(data, how, rnd)
				for len(rs) > 0 {
					k := min(len(rs), 1+rnd(100))
					produce(t, pr, topic, rs[:k], false)
					rs = rs[k:]
				}
				cfg := Config{Brokers: []string{c.Addr}, Topic: topic, Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true,
					fetchPartitionBytes: int32(200 + rnd(4000)), maxPoll: 1 + rnd(50), bufferTuples: 1 + rnd(40), Fetchers: 1 + rnd(parts)}
				if rnd(2) == 0 {
					cfg.NewDecoder = jsonNewDecoder(t, source.Fail)
				}
				s := openT(t, cfg)
				got := readAll(t, s, 1+rnd(30))
				assert.True(t, bytes.Equal(want, got), "interleaving %d (%+v): %s", how, cfg, firstDiff(want, got))
				require.NoError(t, s.Close())
			}
		})
	}
}

// TestIdlePartition: an empty partition holds the merge back until it has
// been idle for IdleTimeout.
func TestIdlePartition(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 2, "idle")
	data := [][]rec{genRecords(rndOf(3), 1, 50)[0], nil}
	produce(t, producer(t, c.Addr), "idle", data[0], false)
	dst := make([]byte, 100*testTS)

	held := openT(t, Config{Brokers: []string{c.Addr}, Topic: "idle", Decoder: jsonDecoder(t, source.Fail), IdleTimeout: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	n, err := held.FillSome(ctx, dst)
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, 0, n, "partition 1 has nothing and is not idle: nothing may pass")

	s := openT(t, Config{Brokers: []string{c.Addr}, Topic: "idle", Decoder: jsonDecoder(t, source.Fail), IdleTimeout: 50 * time.Millisecond})
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []byte
	for len(got) < 50*testTS {
		n, err := s.FillSome(ctx, dst)
		require.NoError(t, err)
		got = append(got, dst[:n]...)
	}
	assert.Equal(t, oracle(data), got)
	st := s.Stats()
	require.Len(t, st.Partitions, 2)
	assert.True(t, st.Partitions[1].Idle)

	// A record on the idle partition ends its idleness.
	produce(t, producer(t, c.Addr), "idle", []rec{{part: 1, time: 1, id: 1_000_000}}, false)
	n, err = s.FillSome(ctx, dst)
	require.NoError(t, err)
	assert.Equal(t, []int64{1_000_000}, ids(dst[:n]))
}

// TestStopAtEndEmpty: a topic with nothing in it ends at once.
func TestStopAtEndEmpty(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 3, "empty")
	s := openT(t, Config{Brokers: []string{c.Addr}, Topic: "empty", Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true})
	assert.Empty(t, readAll(t, s, 4))
}

// TestOpenErrors: a topic the broker creates on first use is created;
// one it does not is a clear error naming it and the broker, and so are
// an unreachable broker, a partition the topic lacks and a bad config.
func TestOpenErrors(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 1, "ev")
	t.Run("created", func(t *testing.T) {
		t.Parallel()
		s := openT(t, Config{Brokers: []string{c.Addr}, Topic: "created", Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true})
		assert.Empty(t, readAll(t, s, 4))
		require.NotNil(t, c.TopicInfo("created"))
	})
	// One that does not: a clear error. Open waits up to topicSettle (10
	// s) for a topic it asked the broker to create before it says so;
	// the default run cuts that wait with Open's context (the same
	// answer, sooner), the long run waits it out.
	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		strict, err := kfake.NewCluster(kfake.NumBrokers(1))
		require.NoError(t, err)
		defer strict.Close()
		ctx := context.Background()
		if !testenv.Full() {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Second)
			defer cancel()
		}
		_, err = Open(ctx, Config{Brokers: strict.ListenAddrs(), Topic: "missing", Decoder: jsonDecoder(t, source.Fail)})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `topic "missing" does not exist`)
		assert.Contains(t, err.Error(), strict.ListenAddrs()[0])
	})
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		_, err := Open(context.Background(), Config{Brokers: []string{"127.0.0.1:1"}, Topic: "ev", Decoder: jsonDecoder(t, source.Fail)})
		assert.ErrorContains(t, err, "kafka source ev (brokers 127.0.0.1:1): metadata:")
	})
	t.Run("config", func(t *testing.T) {
		t.Parallel()
		_, err := Open(context.Background(), Config{Brokers: []string{c.Addr}, Topic: "ev", Decoder: jsonDecoder(t, source.Fail), Partitions: []int32{3}})
		assert.ErrorContains(t, err, "no partition 3")
		_, err = Open(context.Background(), Config{Topic: "ev"})
		assert.ErrorContains(t, err, "no brokers")
		_, err = Open(context.Background(), Config{Brokers: []string{c.Addr}, Topic: "ev"})
		assert.ErrorContains(t, err, "no decoder")
		_, err = Open(context.Background(), Config{Brokers: []string{c.Addr}, Topic: "ev", Binary: true, TupleSize: 4})
		assert.ErrorContains(t, err, "does not fit")
	})
}

// TestMalformed: Fail names the topic, partition and offset; Skip counts.
func TestMalformed(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 1, "bad")
	pr := producer(t, c.Addr)
	good := genRecords(rndOf(5), 1, 4)[0][:4]
	values := [][]byte{good[0].json(), good[1].json(), []byte(`{"event_time": "x", "id": 1, "val": 2}`), good[2].json(), {}, good[3].json()}
	for _, v := range values {
		require.NoError(t, pr.ProduceSync(context.Background(), &kgo.Record{Topic: "bad", Value: v}).FirstErr())
	}
	for _, predecode := range []bool{false, true} {
		t.Run(fmt.Sprint(predecode), func(t *testing.T) { testMalformed(t, c.Addr, good, predecode) })
	}
}

func testMalformed(t *testing.T, addr string, good []rec, predecode bool) {
	cfg := Config{Brokers: []string{addr}, Topic: "bad", Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true}
	if predecode {
		cfg.NewDecoder = jsonNewDecoder(t, source.Fail)
	}
	s := openT(t, cfg)
	dst := make([]byte, 10*testTS)
	var err error
	for err == nil {
		_, err = s.FillSome(context.Background(), dst)
	}
	assert.ErrorContains(t, err, "kafka source bad: partition 0 offset 2:")
	assert.ErrorContains(t, err, `field "event_time"`)
	var se *source.Error
	assert.ErrorAs(t, err, &se, "the decoder's error, wrapped")
	_, again := s.FillSome(context.Background(), dst)
	assert.Equal(t, err, again, "the error sticks")

	cfg = Config{Brokers: []string{addr}, Topic: "bad", Decoder: jsonDecoder(t, source.Skip), StopAtEnd: true}
	if predecode {
		cfg.NewDecoder = jsonNewDecoder(t, source.Skip)
	}
	s = openT(t, cfg)
	got := readAll(t, s, 10)
	assert.Equal(t, oracle([][]rec{good}), got)
	assert.Equal(t, int64(2), s.Stats().Malformed, "a bad value and an empty one")
}

// committed reads a group's committed offsets back.
func committed(t *testing.T, addr, group, topic string) map[int32]int64 {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	resp, err := kadm.NewClient(cl).FetchOffsets(context.Background(), group)
	require.NoError(t, err)
	out := map[int32]int64{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out
}

// TestCommitsOnlyDone: after Done(pos, complete) the committed offset of
// each partition is the end of its longest prefix of done records, and a
// restart reads exactly the records that were not done.
func TestCommitsOnlyDone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		static bool
		dst    int
	}{{false, 1}, {true, 1}, {false, 5}, {true, 7}} {
		static := tc.static
		t.Run(fmt.Sprintf("static=%v,dst=%d", static, tc.dst), func(t *testing.T) {
			t.Parallel()
			const parts = 3
			c := kafkatest.Start(t, parts, "cm")
			data := genRecords(rndOf(9), parts, 40)
			produce(t, producer(t, c.Addr), "cm", interleave(data, 2, rndOf(2)), false)
			cfg := Config{Brokers: []string{c.Addr}, Topic: "cm", Group: "g", Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true, CommitInterval: time.Hour}
			if static {
				cfg.Partitions = []int32{0, 1, 2}
			}
			s := openT(t, cfg)
			stream := readAll(t, s, tc.dst)
			require.Equal(t, oracle(data), stream)
			// The engine has merged the first half of the stream and
			// emitted the windows below complete.
			total := len(stream) / testTS
			pos := uint64(total / 2 * testTS)
			times := make([]int64, 0, total)
			for i := 0; i < len(stream); i += testTS {
				times = append(times, int64(binary.LittleEndian.Uint64(stream[i:])))
			}
			complete := times[total/4] + 1
			s.Done(pos, complete)
			require.NoError(t, s.Close())

			// The oracle: a record is done when its tuple ends by pos and
			// its time is below complete; commit the first undone offset.
			order := ids(stream)
			at := map[int64]int{}
			for i, id := range order {
				at[id] = i
			}
			want := map[int32]int64{}
			for p, rs := range data {
				k := 0
				for k < len(rs) && uint64((at[rs[k].id]+1)*testTS) <= pos && rs[k].time < complete {
					k++
				}
				if k > 0 {
					want[int32(p)] = int64(k)
				}
			}
			got := committed(t, c.Addr, "g", "cm")
			if tc.dst == 1 {
				// A mark per tuple: the commit is the done prefix exactly.
				assert.Equal(t, want, got)
			} else {
				// A mark per FillSome call: never past the done prefix.
				for p, o := range got {
					assert.LessOrEqual(t, o, want[p], "partition %d", p)
				}
			}

			// A restart reads exactly the records not committed.
			var undone []rec
			for p, rs := range data {
				undone = append(undone, rs[got[int32(p)]:]...)
			}
			s2 := openT(t, cfg)
			again := readAll(t, s2, 8)
			var wantIDs []int64
			for _, r := range undone {
				wantIDs = append(wantIDs, r.id)
			}
			assert.ElementsMatch(t, wantIDs, ids(again))
		})
	}
}

// TestCommitsSkipped: a malformed record at the end of a partition is
// committed once the tuples before it are done.
func TestCommitsSkipped(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 1, "sk")
	pr := producer(t, c.Addr)
	r0 := rec{time: 5, id: 0}
	for _, v := range [][]byte{r0.json(), []byte("not json")} {
		require.NoError(t, pr.ProduceSync(context.Background(), &kgo.Record{Topic: "sk", Value: v}).FirstErr())
	}
	s := openT(t, Config{Brokers: []string{c.Addr}, Topic: "sk", Group: "g", Decoder: jsonDecoder(t, source.Skip), StopAtEnd: true, CommitInterval: time.Hour})
	readAll(t, s, 4)
	s.Done(0, math.MaxInt64)
	require.NoError(t, s.Close())
	assert.Empty(t, committed(t, c.Addr, "g", "sk"), "nothing done yet")
	s = openT(t, Config{Brokers: []string{c.Addr}, Topic: "sk", Group: "g", Decoder: jsonDecoder(t, source.Skip), StopAtEnd: true, CommitInterval: time.Hour})
	readAll(t, s, 4)
	s.Done(testTS, math.MaxInt64)
	require.NoError(t, s.Close())
	assert.Equal(t, map[int32]int64{0: 2}, committed(t, c.Addr, "g", "sk"))
}

// TestRebalance: two sources in one group (cooperative sticky) read the
// topic while the group rebalances between them; nothing is lost (the
// union of what they read covers every record) and, with every tuple done,
// every partition ends committed at its end.
func TestRebalance(t *testing.T) {
	t.Parallel()
	const parts = 4
	c := kafkatest.Start(t, parts, "rb")
	data := genRecords(rndOf(21), parts, 400)
	pr := producer(t, c.Addr)
	all := interleave(data, 2, rndOf(3))
	produce(t, pr, "rb", all[:len(all)/2], false)
	cfg := Config{Brokers: []string{c.Addr}, Topic: "rb", Group: "rg", Decoder: jsonDecoder(t, source.Fail), IdleTimeout: 20 * time.Millisecond, CommitInterval: 20 * time.Millisecond}

	seen := map[int64]bool{}
	count := map[*Source]int{}
	read := func(s *Source, d time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		dst := make([]byte, 16*testTS)
		for {
			n, err := s.FillSome(ctx, dst)
			for _, id := range ids(dst[:n]) {
				seen[id] = true
			}
			count[s] += n / testTS
			s.Done(s.Stats().Position, math.MaxInt64)
			if err != nil {
				require.ErrorIs(t, err, context.DeadlineExceeded)
				return
			}
		}
	}
	a := openT(t, cfg)
	deadline := time.Now().Add(20 * time.Second)
	for len(seen) < len(all)/2 && time.Now().Before(deadline) {
		read(a, 100*time.Millisecond) // a alone: the first half
	}
	b := openT(t, cfg)
	for (len(a.Stats().Partitions) == parts || len(b.Stats().Partitions) == 0) && time.Now().Before(deadline) {
		read(a, 100*time.Millisecond)
		read(b, 100*time.Millisecond)
	}
	require.NotEmpty(t, b.Stats().Partitions, "the group gave b partitions")
	produce(t, pr, "rb", all[len(all)/2:], false)
	for len(seen) < len(all) && time.Now().Before(deadline) {
		read(a, 200*time.Millisecond)
		read(b, 200*time.Millisecond)
	}
	assert.Equal(t, allIDs(data), sortedKeys(seen), "the union of what both read covers every record")
	assert.Positive(t, count[b], "b read its share")
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
	want := map[int32]int64{}
	for p, rs := range data {
		want[int32(p)] = int64(len(rs))
	}
	assert.Equal(t, want, committed(t, c.Addr, "rg", "rb"))
}

func sortedKeys(m map[int64]bool) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// TestBackPressure: with FillSome not called, what the source buffers
// stays bounded however much the topic holds: after every FillSome, a
// partition buffers at most its cap and two polls (the fetcher polls while
// FillSome takes; the partitions a take fills are paused before the
// fetcher polls again). Over caps smaller and larger than a poll.
func TestBackPressure(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 2, "bp")
	data := genRecords(rndOf(4), 2, 5000)
	produce(t, producer(t, c.Addr), "bp", interleave(data, 0, nil), false)
	for _, tc := range []struct{ bufCap, maxPoll, fetchBytes int }{{100, 50, 4096}, {50, 100, 1 << 16}, {20, 30, 1 << 20}} {
		// Once the fetchers may poll again, every partition paused is
		// paused in its fetcher's client.
		var unpaused []int32
		afterTake := func(s *Source) {
			for _, f := range s.fetchers {
				paused := f.cl.PauseFetchPartitions(nil)[s.cfg.Topic]
				for _, id := range f.ids {
					if p := s.parts[id]; p != nil && p.paused && !slices.Contains(paused, id) {
						unpaused = append(unpaused, id)
					}
				}
			}
		}
		s := openT(t, Config{Brokers: []string{c.Addr}, Topic: "bp", Decoder: jsonDecoder(t, source.Fail), NewDecoder: jsonNewDecoder(t, source.Fail),
			bufferTuples: tc.bufCap, maxPoll: tc.maxPoll, fetchPartitionBytes: int32(tc.fetchBytes), afterTake: afterTake})
		dst := make([]byte, 10*testTS)
		most := 0
		for range 100 {
			_, err := s.FillSome(context.Background(), dst)
			require.NoError(t, err)
			for _, ps := range s.Stats().Partitions {
				most = max(most, ps.Buffered)
			}
		}
		assert.LessOrEqual(t, most, tc.bufCap+2*tc.maxPoll, "%+v: the most a partition buffered", tc)
		assert.Empty(t, unpaused, "%+v: partitions a take paused, not paused in their clients when the fetchers could poll again", tc)
		st := s.Stats()
		time.Sleep(200 * time.Millisecond)
		assert.Equal(t, st.Records, s.Stats().Records, "%+v: nothing is decoded while FillSome is not called", tc)
		assert.Less(t, st.Records, int64(3000), "%+v: records polled are a few polls' worth, not the topic", tc)
		require.NoError(t, s.Close())
	}
}

// TestCloseNoGoroutines: Close leaves no goroutine of the source's.
func TestCloseNoGoroutines(t *testing.T) {
	c := kafkatest.Start(t, 2, "gr")
	produce(t, producer(t, c.Addr), "gr", genRecords(rndOf(6), 2, 20)[0], false)
	time.Sleep(50 * time.Millisecond)
	before := runtime.NumGoroutine()
	for _, group := range []string{"", "gg"} {
		s, err := Open(context.Background(), Config{Brokers: []string{c.Addr}, Topic: "gr", Group: group, Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true, CommitInterval: 10 * time.Millisecond})
		require.NoError(t, err)
		readAll(t, s, 8)
		s.Done(s.Stats().Position, math.MaxInt64)
		require.NoError(t, s.Close())
	}
	n, stacks := settleGoroutines(before)
	assert.LessOrEqual(t, n, before, "goroutines left after Close:\n%s", stacks)
}

// TestKcatProduce: records written by kcat, an independent client, read
// by the source.
func TestKcatProduce(t *testing.T) {
	t.Parallel()
	kafkatest.Kcat(t)
	c := kafkatest.Start(t, 1, "kc")
	data := genRecords(rndOf(8), 1, 30)
	var in []byte
	for _, r := range data[0] {
		in = append(append(in, r.json()...), '\n')
	}
	kafkatest.RunKcat(t, in, "-P", "-b", c.Addr, "-t", "kc", "-p", "0")
	s := openT(t, Config{Brokers: []string{c.Addr}, Topic: "kc", Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true})
	assert.Equal(t, oracle(data), readAll(t, s, 16))
}

// TestRestartAllCommitted: a group whose offsets are all at the end reads
// nothing and ends (the poll under way when the group assigns the
// partitions is woken).
func TestRestartAllCommitted(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 2, "ac")
	data := genRecords(rndOf(1), 2, 5)
	produce(t, producer(t, c.Addr), "ac", interleave(data, 0, nil), false)
	cfg := Config{Brokers: []string{c.Addr}, Topic: "ac", Group: "g", Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true, CommitInterval: time.Hour}
	s := openT(t, cfg)
	assert.Equal(t, oracle(data), readAll(t, s, 4))
	s.Done(s.Stats().Position, math.MaxInt64)
	require.NoError(t, s.Close())
	assert.Equal(t, map[int32]int64{0: int64(len(data[0])), 1: int64(len(data[1]))}, committed(t, c.Addr, "g", "ac"))
	s = openT(t, cfg)
	assert.Empty(t, readAll(t, s, 4))
}

// TestDoneConcurrent: Done and Stats from another goroutine while
// FillSome reads (run with -race), and every record ends committed.
func TestDoneConcurrent(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 3, "dc")
	data := genRecords(rndOf(12), 3, 300)
	produce(t, producer(t, c.Addr), "dc", interleave(data, 2, rndOf(5)), false)
	s := openT(t, Config{Brokers: []string{c.Addr}, Topic: "dc", Group: "g", Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true, CommitInterval: time.Millisecond})
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-stop:
				return
			default:
				s.Done(s.Stats().Position, math.MaxInt64)
			}
		}
	}()
	got := readAll(t, s, 3)
	close(stop)
	<-finished
	s.Done(s.Stats().Position, math.MaxInt64)
	require.NoError(t, s.Close())
	assert.Equal(t, oracle(data), got)
	want := map[int32]int64{}
	for p, rs := range data {
		want[int32(p)] = int64(len(rs))
	}
	assert.Equal(t, want, committed(t, c.Addr, "g", "dc"))
}

// TestReadCSV: CSV records (no header: the layout's columns in order),
// one value of two lines giving two tuples at one offset.
func TestReadCSV(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 2, "csv")
	pr := producer(t, c.Addr)
	d, err := source.NewCSVDecoder(testLayout(t), source.CSVOptions{})
	require.NoError(t, err)
	data := genRecords(rndOf(30), 2, 20)
	var batch []*kgo.Record
	for _, rs := range data {
		for i := 0; i < len(rs); i++ {
			v := fmt.Appendf(nil, "%d,%d,%d\n", rs[i].time, rs[i].id, rs[i].val)
			if i == 3 && i+1 < len(rs) { // two records in one value
				i++
				v = fmt.Appendf(v, "%d,%d,%d", rs[i].time, rs[i].id, rs[i].val)
			}
			batch = append(batch, &kgo.Record{Topic: "csv", Partition: rs[0].part, Value: v})
		}
	}
	require.NoError(t, pr.ProduceSync(context.Background(), batch...).FirstErr())
	s := openT(t, Config{Brokers: []string{c.Addr}, Topic: "csv", Decoder: d, StopAtEnd: true})
	assert.Equal(t, oracle(data), readAll(t, s, 5))
	assert.Equal(t, int64(len(batch)), s.Stats().Records)
}

// TestContextDoneLosesNothing: FillSome calls cut short by their context
// (mid-poll, at random) lose no record and keep the order.
func TestContextDoneLosesNothing(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 3, "cx")
	data := genRecords(rndOf(40), 3, 400)
	produce(t, producer(t, c.Addr), "cx", interleave(data, 2, rndOf(6)), false)
	s := openT(t, Config{Brokers: []string{c.Addr}, Topic: "cx", Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true,
		fetchPartitionBytes: 512, maxPoll: 7})
	dst := make([]byte, 5*testTS)
	var got []byte
	cut := 0
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(1+len(got)%300)*time.Microsecond)
		n, err := s.FillSome(ctx, dst)
		cancel()
		got = append(got, dst[:n]...)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			cut++
		}
	}
	assert.Equal(t, oracle(data), got, "%s", firstDiff(oracle(data), got))
	t.Logf("%d calls cut short", cut)
}

// TestStopAtEndAfterTransactions: records written in transactions, one
// of them aborted and the last still open, read to the end. By default
// (read_committed) the committed records are read and the end is the last
// stable offset, before the open transaction; with ReadUncommitted every
// record. Each transaction ends in a marker, which takes an offset that
// the end offset counts but that no record carries: StopAtEnd reads past
// the markers and ends, through FillSome's decoding, the fetchers' and a
// group's.
func TestStopAtEndAfterTransactions(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 2, "tx")
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("tx"))
	require.NoError(t, err)
	defer cl.Close()
	data := genRecords(rndOf(3), 2, 40)
	ctx := context.Background()
	// Each partition's records in four transactions: committed, aborted,
	// committed, left open. Each record's offset is the one the broker
	// gave it (markers and aborted records take offsets too).
	committed, all := make([][]rec, 2), make([][]rec, 2)
	for txn := range 4 {
		require.NoError(t, cl.BeginTransaction())
		for p := range data {
			n := len(data[p])
			for _, r := range data[p][txn*n/4 : (txn+1)*n/4] {
				res := cl.ProduceSync(ctx, &kgo.Record{Topic: "tx", Partition: r.part, Value: r.json()})
				require.NoError(t, res.FirstErr())
				r.off = res[0].Record.Offset
				all[p] = append(all[p], r)
				if txn == 0 || txn == 2 {
					committed[p] = append(committed[p], r)
				}
			}
		}
		if txn < 3 {
			require.NoError(t, cl.EndTransaction(ctx, kgo.TransactionEndTry(txn != 1)))
		}
	}
	defer func() { assert.NoError(t, cl.EndTransaction(ctx, kgo.TryAbort)) }()
	for _, tc := range []struct {
		name string
		cfg  Config
		want [][]rec
	}{
		{"FillSome", Config{}, committed},
		{"fetchers", Config{Fetchers: 2, NewDecoder: jsonNewDecoder(t, source.Fail)}, committed},
		{"group", Config{Group: "txg"}, committed},
		{"uncommitted", Config{ReadUncommitted: true}, all},
	} {
		cfg := tc.cfg
		cfg.Brokers, cfg.Topic, cfg.Decoder, cfg.StopAtEnd = []string{c.Addr}, "tx", jsonDecoder(t, source.Fail), true
		s := openT(t, cfg)
		got, want := readAll(t, s, 16), oracle(tc.want)
		assert.True(t, bytes.Equal(want, got), "%s: %d tuples, want %d", tc.name, len(got)/testTS, len(want)/testTS)
		st := s.Stats()
		assert.Equal(t, int64(len(tc.want[0])+len(tc.want[1])), st.Records, "%s: the markers are not records", tc.name)
		assert.Zero(t, st.Malformed, tc.name)
	}
}

// TestCloseWhileFetchersBlock: Close while the fetchers wait for FillSome
// to take their polls (their slots full), with or without a FillSome
// waiting meanwhile: that FillSome returns kgo.ErrClientClosed, and no
// goroutine of the source's is left.
func TestCloseWhileFetchersBlock(t *testing.T) {
	c := kafkatest.Start(t, 4, "cb")
	data := genRecords(rndOf(4), 4, 3000)
	produce(t, producer(t, c.Addr), "cb", interleave(data, 2, rndOf(3)), false)
	time.Sleep(50 * time.Millisecond)
	before := runtime.NumGoroutine()
	for i := range 6 {
		s, err := Open(context.Background(), Config{Brokers: []string{c.Addr}, Topic: "cb", Decoder: jsonDecoder(t, source.Fail), NewDecoder: jsonNewDecoder(t, source.Fail),
			Fetchers: 4, bufferTuples: 50, maxPoll: 20, IdleTimeout: -1})
		require.NoError(t, err)
		dst := make([]byte, 10*testTS)
		_, err = s.FillSome(context.Background(), dst)
		require.NoError(t, err)
		time.Sleep(20 * time.Millisecond) // the fetchers fill the channel and wait on their slots
		filled := make(chan error, 1)
		if i%2 == 0 {
			go func() {
				for {
					if _, err := s.FillSome(context.Background(), dst); err != nil {
						filled <- err
						return
					}
				}
			}()
		}
		time.Sleep(time.Duration(i) * time.Millisecond)
		require.NoError(t, s.Close())
		if i%2 == 0 {
			assert.ErrorIs(t, <-filled, kgo.ErrClientClosed, "FillSome once closed")
		}
	}
	n, stacks := settleGoroutines(before)
	assert.LessOrEqual(t, n, before, "goroutines left after Close:\n%s", stacks)
}

// TestStopAtEndBeforeAnOpenTransaction: two transactional writers on one
// partition, A's transaction aborted while B's, begun after it, is still
// open: the end offset (the last stable one) is B's first record, and A's
// abort marker lies past it. StopAtEnd reads the records before the end
// and, once B's transaction ends (its records then come), ends there
// without them.
func TestStopAtEndBeforeAnOpenTransaction(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 1, "ia")
	ctx := context.Background()
	writer := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		return cl
	}
	plain, a, b := writer(), writer(kgo.TransactionalID("A")), writer(kgo.TransactionalID("B"))
	write := func(cl *kgo.Client, rs ...rec) {
		for _, r := range rs {
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "ia", Partition: 0, Value: r.json()}).FirstErr())
		}
	}
	before := []rec{{time: 1, id: 1}, {time: 2, id: 2}}
	write(plain, before...)
	require.NoError(t, a.BeginTransaction())
	write(a, rec{time: 3, id: 3}, rec{time: 4, id: 4})
	require.NoError(t, b.BeginTransaction())
	write(b, rec{time: 5, id: 5})
	require.NoError(t, a.EndTransaction(ctx, kgo.TryAbort))

	s := openT(t, Config{Brokers: []string{c.Addr}, Topic: "ia", Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true})
	go func() {
		time.Sleep(200 * time.Millisecond)
		assert.NoError(t, b.EndTransaction(ctx, kgo.TryCommit))
	}()
	assert.Equal(t, oracle([][]rec{before}), readAll(t, s, 8))
}
