package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/source"
)

// produceStr writes each partition's records in a random interleaving of
// the partitions, with multi some several to a value (a tuple a line, at
// one offset), in several produce calls, and sets the records' offsets.
func produceStr(t testing.TB, cl *kgo.Client, topic string, data [][]srec, rnd func(int) int, multi bool) {
	t.Helper()
	heads := make([]int, len(data))
	offs := make([]int64, len(data)) // the records' offsets, in a topic written by this call alone
	left := 0
	for _, p := range data {
		left += len(p)
	}
	var batch []*kgo.Record
	for left > 0 {
		p := rnd(len(data))
		rs := data[p][heads[p]:]
		if len(rs) == 0 {
			continue
		}
		k := 1
		if multi {
			k = min(len(rs), 1+rnd(3))
		}
		var v []byte
		for i, r := range rs[:k] {
			if i > 0 {
				v = append(v, '\n')
			}
			v = append(v, r.json()...)
			rs[i].off = offs[p]
		}
		offs[p]++
		batch = append(batch, &kgo.Record{Topic: topic, Partition: int32(p), Value: v})
		heads[p] += k
		left -= k
		if len(batch) >= 50 || left == 0 {
			require.NoError(t, cl.ProduceSync(context.Background(), batch...).FirstErr())
			batch = batch[:0]
		}
	}
}

// readStr reads s through a dst of 1 to 7 tuples until it has read n
// tuples (n < 0: all) or io.EOF, checking each call's tuples before the
// next call and garbling dst after; it returns their ids.
func readStr(t testing.TB, s *Source, n int, want map[int64]srec, rnd func(int) int) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	buf := make([]byte, 7*strTS)
	var got []int64
	for n < 0 || len(got) < n {
		k := 1 + rnd(7)
		if n >= 0 {
			k = min(k, n-len(got))
		}
		dst := buf[:k*strTS]
		m, err := s.FillSome(ctx, dst)
		got = append(got, checkStrTuples(t, dst[:m], want)...)
		garble(dst)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "after %d tuples", len(got))
	}
	return got
}

// TestReadStrings: JSON records with short and long strings (up to 64
// KiB) over several partitions, interleaved event times, values of one
// line or several, read through a small dst: every call's tuples are
// right, strings and all, in the merge's order; each partition's string
// memory is one region of StringBytes, reused many times over, records
// waiting while it is full.
func TestReadStrings(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rnd := rndOf(seed + 200)
			parts := 2 + rnd(3)
			data := genStrRecords(rnd, parts, 250)
			want := byID(data)
			c := kafkatest.Start(t, parts, "s")
			produceStr(t, producer(t, c.Addr), "s", data, rnd, seed != 1)
			var s *Source
			cfg := Config{Brokers: []string{c.Addr}, Topic: "s", Decoder: strDecoder(t, &s, source.Fail), StopAtEnd: true, StringBytes: 128 << 10}
			if seed == 3 {
				cfg.fetchPartitionBytes, cfg.maxPoll, cfg.bufferTuples = int32(20000+rnd(100000)), 1+rnd(50), 1+rnd(40)
			}
			if seed != 1 {
				// Records without long strings decoded by the fetchers, the
				// others by FillSome.
				cfg.NewDecoder, cfg.Fetchers = strNewDecoder(t, source.Fail), int(seed)
			}
			s = openT(t, cfg)
			got := readStr(t, s, -1, want, rnd)
			assert.Equal(t, strOracle(data), got)

			st := s.Stats()
			assert.Len(t, st.Partitions, parts)
			for _, ps := range st.Partitions {
				assert.Equal(t, 128<<10, ps.StringMemory, "partition %d: one region", ps.Partition)
				assert.LessOrEqual(t, ps.Strings, ps.StringMemory)
			}
			var total uint64
			s.mu.Lock()
			assert.Len(t, s.strParts, parts)
			for _, id := range s.strParts {
				total += s.parts[id].strW
			}
			s.mu.Unlock()
			assert.Greater(t, total, uint64(parts)*2*(128<<10), "the regions are reused")
			t.Logf("%d partitions, %d tuples, %d KiB of strings through %d regions of 128 KiB, %d waits",
				parts, len(got), total>>10, parts, st.StringWaits)
			pre, fell := s.predecoded()
			if seed != 1 {
				assert.Positive(t, pre, "records without long strings decoded by the fetchers")
				assert.Positive(t, fell, "records with long strings left to FillSome")
			}
			_, err := s.FillSome(context.Background(), make([]byte, strTS))
			assert.ErrorIs(t, err, kgo.ErrClientClosed, "no tuple after Close")
		})
	}
}

// TestStringsResume: a source read up to k tuples, its Positions taken
// and closed, and one opened with them as Resume, read to the end, give
// the stream of one read, strings and all, also where a value of several
// lines is cut and where records waited for string memory.
func TestStringsResume(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rnd := rndOf(seed + 300)
			parts := 2 + rnd(3)
			data := genStrRecords(rnd, parts, 100)
			want := byID(data)
			c := kafkatest.Start(t, parts, "r")
			produceStr(t, producer(t, c.Addr), "r", data, rnd, true)
			order := strOracle(data)
			for _, k := range []int{1, rnd(len(order)), rnd(len(order))} {
				var s *Source
				cfg := Config{Brokers: []string{c.Addr}, Topic: "r", Decoder: strDecoder(t, &s, source.Fail), StopAtEnd: true,
					StringBytes: 128 << 10, Resume: map[int32]Position{}, maxPoll: 1 + rnd(50), Fetchers: 1 + rnd(parts)}
				if rnd(2) == 0 {
					cfg.NewDecoder = strNewDecoder(t, source.Fail)
				}
				s = openT(t, cfg)
				got := readStr(t, s, k, want, rnd)
				pos := s.Positions()
				require.NoError(t, s.Close())

				var s2 *Source
				cfg.Decoder = strDecoder(t, &s2, source.Fail)
				cfg.Resume = pos
				s2 = openT(t, cfg)
				got = append(got, readStr(t, s2, -1, want, rnd)...)
				require.NoError(t, s2.Close())
				assert.Equal(t, order, got, "cut after %d of %d tuples at %v", k, len(order), pos)
			}
		})
	}
}

// TestStringsRestart: a source of a group restarted mid-stream (closed
// with part of what it read done, opened again) and one whose broker
// restarts under it (the group's member lost and back) read every record
// at least once, strings right.
func TestStringsRestart(t *testing.T) {
	t.Parallel()
	t.Run("source", func(t *testing.T) {
		t.Parallel()
		rnd := rndOf(400)
		data := genStrRecords(rnd, 3, 150)
		want := byID(data)
		c := kafkatest.Start(t, 3, "rs")
		produceStr(t, producer(t, c.Addr), "rs", data, rnd, true)
		seen := map[int64]bool{}
		for range 3 {
			var s *Source
			s = openT(t, Config{Brokers: []string{c.Addr}, Topic: "rs", Group: "g", Decoder: strDecoder(t, &s, source.Fail), StopAtEnd: true,
				StringBytes: 128 << 10, CommitInterval: time.Hour})
			got := readStr(t, s, 1+rnd(len(want)/2), want, rnd)
			for _, id := range got {
				seen[id] = true
			}
			// What the engine has done: the first half of what it read.
			s.Done(uint64(len(got)/2*strTS), math.MaxInt64)
			require.NoError(t, s.Close())
		}
		var s *Source
		s = openT(t, Config{Brokers: []string{c.Addr}, Topic: "rs", Group: "g", Decoder: strDecoder(t, &s, source.Fail), StopAtEnd: true,
			StringBytes: 128 << 10})
		for _, id := range readStr(t, s, -1, want, rnd) {
			seen[id] = true
		}
		assert.Len(t, seen, len(want), "every record read")
	})
	t.Run("broker", func(t *testing.T) {
		t.Parallel()
		rnd := rndOf(401)
		data := genStrRecords(rnd, 2, 200)
		want := byID(data)
		cluster := kafkatest.StartRestartable(t, 2, "t")
		cl := producer(t, cluster.Addr)
		var first, second [][]srec
		for _, p := range data {
			first, second = append(first, p[:len(p)/2]), append(second, p[len(p)/2:])
		}
		produceStr(t, cl, "t", first, rnd, true)
		var s *Source
		s = openT(t, Config{Brokers: []string{cluster.Addr}, Topic: "t", Group: "g", Decoder: strDecoder(t, &s, source.Fail),
			IdleTimeout: 100 * time.Millisecond, StringBytes: 128 << 10})
		seen := map[int64]bool{}
		for len(seen) < len(byID(first)) {
			for _, id := range readStr(t, s, 1, want, rnd) {
				seen[id] = true
			}
		}
		s.Done(s.Stats().Position, 1<<62)
		cluster.Stop()
		time.Sleep(200 * time.Millisecond)
		cluster.Restart(t)
		produceStr(t, cl, "t", second, rnd, true)
		for len(seen) < len(want) {
			for _, id := range readStr(t, s, 1, want, rnd) {
				seen[id] = true
			}
		}
	})
}

// TestStringsRebalance: two sources of a group read a topic of strings
// while the group moves partitions between them (their buffered tuples
// and strings dropped, read again by the new owner): every tuple either
// reads is right, strings and all, and together they read every record.
func TestStringsRebalance(t *testing.T) {
	t.Parallel()
	const parts = 4
	rnd := rndOf(500)
	c := kafkatest.Start(t, parts, "rb")
	data := genStrRecords(rnd, parts, 200)
	want := byID(data)
	pr := producer(t, c.Addr)
	var first, second [][]srec
	for _, p := range data {
		first, second = append(first, p[:len(p)/2]), append(second, p[len(p)/2:])
	}
	produceStr(t, pr, "rb", first, rnd, true)
	open := func() *Source {
		var s *Source
		s = openT(t, Config{Brokers: []string{c.Addr}, Topic: "rb", Group: "rg", Decoder: strDecoder(t, &s, source.Fail),
			IdleTimeout: 20 * time.Millisecond, CommitInterval: 20 * time.Millisecond, StringBytes: 128 << 10})
		return s
	}
	seen := map[int64]bool{}
	read := func(s *Source, d time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		dst := make([]byte, (1+rnd(7))*strTS)
		for {
			n, err := s.FillSome(ctx, dst)
			for _, id := range checkStrTuples(t, dst[:n], want) {
				seen[id] = true
			}
			garble(dst)
			s.Done(s.Stats().Position, math.MaxInt64)
			if err != nil {
				require.ErrorIs(t, err, context.DeadlineExceeded)
				return
			}
		}
	}
	a := open()
	deadline := time.Now().Add(30 * time.Second)
	for len(seen) < len(byID(first))/2 && time.Now().Before(deadline) {
		read(a, 100*time.Millisecond)
	}
	b := open()
	for (len(a.Stats().Partitions) == parts || len(b.Stats().Partitions) == 0) && time.Now().Before(deadline) {
		read(a, 100*time.Millisecond)
		read(b, 100*time.Millisecond)
	}
	require.NotEmpty(t, b.Stats().Partitions, "the group gave b partitions")
	produceStr(t, pr, "rb", second, rnd, true)
	for len(seen) < len(want) && time.Now().Before(deadline) {
		read(a, 200*time.Millisecond)
		read(b, 200*time.Millisecond)
	}
	var all []int64
	for id := range want {
		all = append(all, id)
	}
	slices.Sort(all)
	assert.Equal(t, all, sortedKeys(seen), "the union of what both read covers every record")
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
}

// TestStringsCloseNoGoroutines: a source of strings, closed, leaves no
// goroutine.
func TestStringsCloseNoGoroutines(t *testing.T) {
	rnd := rndOf(600)
	data := genStrRecords(rnd, 2, 40)
	c := kafkatest.Start(t, 2, "gs")
	produceStr(t, producer(t, c.Addr), "gs", data, rnd, true)
	time.Sleep(50 * time.Millisecond)
	before := runtime.NumGoroutine()
	for _, group := range []string{"", "gg"} {
		var s *Source
		s, err := Open(context.Background(), Config{Brokers: []string{c.Addr}, Topic: "gs", Group: group, Decoder: strDecoder(t, &s, source.Fail),
			StopAtEnd: true, CommitInterval: 10 * time.Millisecond, StringBytes: 128 << 10})
		require.NoError(t, err)
		assert.Equal(t, strOracle(data), readStr(t, s, -1, byID(data), rnd))
		s.Done(s.Stats().Position, math.MaxInt64)
		require.NoError(t, s.Close())
	}
	n, stacks := settleGoroutines(before)
	assert.LessOrEqual(t, n, before, "goroutines left after Close:\n%s", stacks)
}
