package ysb

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKafkaOrder: the merge by head event time, ties by partition, each
// partition's order kept even when its times go down.
func TestKafkaOrder(t *testing.T) {
	g, err := NewGenerator(GenConfig{Campaigns: 1, AdsPerCampaign: 1, Seed: 1, TuplesPerMs: 1})
	require.NoError(t, err)
	parts := map[int32][]byte{
		0: views(g, 5, 1, 9),
		2: views(g, 3, 7),
		1: views(g, 5, 2),
	}
	var got []int64
	out := KafkaOrder(parts)
	for off := 0; off < len(out); off += TupleSize {
		got = append(got, int64(binary.LittleEndian.Uint64(out[off:])))
	}
	// heads 5,5,3 -> 3(p2); heads 5,5,7 -> 5(p0); heads 1,5,7 -> 1(p0);
	// heads 9,5,7 -> 5(p1); 9,2,7 -> 2(p1); 9,7 -> 7(p2); 9.
	assert.Equal(t, []int64{3, 5, 1, 5, 2, 7, 9}, got)
	assert.Empty(t, KafkaOrder(nil))
}

func TestReadEventLog(t *testing.T) {
	g, err := NewGenerator(GenConfig{Campaigns: 3, AdsPerCampaign: 2, Seed: 4, TuplesPerMs: 2})
	require.NoError(t, err)
	tuples := make([]byte, 10*TupleSize)
	g.Fill(tuples, 0)
	var log []byte
	want := map[int32][]byte{}
	for i := 0; i < 10; i++ {
		p := int32(i % 3)
		tup := tuples[i*TupleSize : (i+1)*TupleSize]
		log = append(append(append(log, byte('0'+p), '\t'), AppendEventJSON(nil, tup)...), '\n')
		want[p] = append(want[p], tup...)
	}
	el, err := ReadEventLog(bytes.NewReader(log), "events.log")
	require.NoError(t, err)
	assert.Equal(t, int64(10), el.Events)
	assert.Equal(t, want, el.Partitions)

	for _, tc := range []struct{ in, want string }{
		{"0 {}\n", "events.log line 1: want a partition, a tab"},
		{"x\t{}\n", `events.log line 1: bad partition "x"`},
		{"-1\t{}\n", `bad partition "-1"`},
		{"0\t{\"user_id\": 3}\n", "events.log line 1: after the tab:"},
	} {
		_, err := ReadEventLog(strings.NewReader(tc.in), "events.log")
		assert.ErrorContains(t, err, tc.want, tc.in)
	}
}

func TestLatencyOf(t *testing.T) {
	var ws []RedisWindow
	for i := range 100 {
		ws = append(ws, RedisWindow{Start: int64(i) * WindowMs, TimeUpdated: int64(i)*WindowMs + WindowMs + int64(100-i)})
	}
	rand.Shuffle(len(ws), func(i, j int) { ws[i], ws[j] = ws[j], ws[i] })
	assert.Equal(t, Latency{Windows: 100, Min: 1, P50: 50, P90: 90, P99: 99, Max: 100}, latencyOf(ws))
	assert.Equal(t, Latency{}, latencyOf(nil))
}

func TestCompareWindows(t *testing.T) {
	a, b := UUID{1}, UUID{2}
	want := []Row{{WindowStart: 0, CampaignID: a, Count: 3}, {WindowStart: 0, CampaignID: b, Count: 1}, {WindowStart: 10000, CampaignID: a, Count: 2}}
	got := []RedisWindow{{Campaign: a, Start: 0, Count: 3}, {Campaign: a, Start: 10000, Count: 5}, {Campaign: b, Start: 20000, Count: 4}, {Campaign: b, Start: 30000, Count: 0}}
	assert.Equal(t, []Mismatch{
		{Campaign: b, Start: 0, Expected: 1, Got: -1},
		{Campaign: a, Start: 10000, Expected: 2, Got: 5},
		{Campaign: b, Start: 20000, Expected: 0, Got: 4},
	}, compareWindows(want, got))
}

// FuzzReadEventLog: any input is read or refused with an error, never a
// panic; what is read re-encodes to the same events.
func FuzzReadEventLog(f *testing.F) {
	g, _ := NewGenerator(DefaultGenConfig())
	tup := make([]byte, TupleSize)
	g.Fill(tup, 7)
	f.Add([]byte("3\t" + string(AppendEventJSON(nil, tup)) + "\n"))
	f.Add([]byte("0\t{}\n\n"))
	f.Add([]byte("\t\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		el, err := ReadEventLog(bytes.NewReader(in), "fuzz")
		if err != nil {
			return
		}
		var n int64
		for p, b := range el.Partitions {
			if p < 0 || len(b)%TupleSize != 0 {
				t.Fatalf("partition %d: %d bytes", p, len(b))
			}
			n += int64(len(b) / TupleSize)
		}
		if n != el.Events {
			t.Fatalf("%d tuples, %d events", n, el.Events)
		}
	})
}

// checkLog is a log of n generator tuples (a third of them views) over two
// partitions, every 50th of partition 0 sent 15 s back in event time: late
// by the engine's rule with a watermark delay below 5 s, counted by YSB's.
func checkLog(t *testing.T, g *Generator, n int) *EventLog {
	t.Helper()
	tuples := make([]byte, n*TupleSize)
	g.Fill(tuples, 0)
	el := &EventLog{Partitions: map[int32][]byte{}}
	le := binary.LittleEndian
	for i := range n {
		tup := tuples[i*TupleSize : (i+1)*TupleSize]
		p := int32(i % 2)
		if p == 0 && i%100 == 0 && i > 0 {
			le.PutUint64(tup[OffEventTime:], le.Uint64(tup[OffEventTime:])-15000)
		}
		el.Partitions[p] = append(el.Partitions[p], tup...)
		el.Events++
	}
	return el
}

// writeWindows writes rows into Redis in the original layout, as the YSB
// sink does.
func writeWindows(t *testing.T, cl *redis.Client, rows []Row) {
	t.Helper()
	ctx := context.Background()
	for i, r := range rows {
		c, w := r.CampaignID.String(), strconv.FormatInt(r.WindowStart, 10)
		list, id := "list-"+c, "window-"+strconv.Itoa(i)
		require.NoError(t, cl.HSet(ctx, c, "windows", list, w, id).Err())
		require.NoError(t, cl.LPush(ctx, list, w).Err())
		require.NoError(t, cl.HSet(ctx, id, "seen_count", r.Count, "time_updated", r.WindowStart+WindowMs+100).Err())
	}
}

// TestCheckAgainstRedis: windows equal to the engine's rule pass, with the
// late views and Redis' shortfall against YSB's counts reported; a changed
// count fails; --ysb-counts fails on the shortfall, which a watermark delay
// beyond the time the late views were sent back removes.
func TestCheckAgainstRedis(t *testing.T) {
	cl := redisClient(t)
	ctx := context.Background()
	g, err := NewGenerator(GenConfig{Campaigns: 5, AdsPerCampaign: 3, Seed: 3, TuplesPerMs: 1})
	require.NoError(t, err)
	_, err = WriteCampaignsRedis(ctx, cl, g.Campaigns())
	require.NoError(t, err)
	el := checkLog(t, g, 60000)
	rows, counts, err := ReferenceDelay(KafkaOrder(el.Partitions), g.Campaigns(), WindowMs, 0)
	require.NoError(t, err)
	require.Positive(t, counts.Late)
	writeWindows(t, cl, rows)

	res, err := Check(ctx, cl, el, 0)
	require.NoError(t, err)
	assert.Empty(t, res.Mismatches)
	assert.Empty(t, res.Problems)
	assert.Equal(t, 5, res.Campaigns)
	assert.Equal(t, 15, res.Ads)
	assert.Equal(t, len(rows), res.Windows)
	assert.Equal(t, len(rows), res.Redis)
	// YSB counts every view, the late ones too, some in windows of
	// their own (the first views sent back 15 s: before 0).
	require.Equal(t, uint64(40000), counts.Filtered)
	ysbRows, _, err := ReferenceDelay(KafkaOrder(el.Partitions), g.Campaigns(), WindowMs, 1<<62)
	require.NoError(t, err)
	assert.Equal(t, YSBCounts{Windows: 32, Views: 20000, Late: counts.Late, ShortWindows: res.YSB.ShortWindows, ShortViews: int64(counts.Late)}, res.YSB)
	assert.Equal(t, len(ysbRows), res.YSB.Windows)
	assert.Equal(t, counts.Counted+counts.Late, res.YSB.Views)
	assert.Positive(t, res.YSB.ShortWindows)
	s := res.Summary(10)
	assert.True(t, s.OK)
	require.NoError(t, s.Err())
	var text bytes.Buffer
	s.WriteText(&text)
	assert.Contains(t, text.String(), "ysb check: 60000 events, 30 windows expected, 30 in redis, 0 mismatches\n")
	assert.Contains(t, text.String(), fmt.Sprintf("late %d, filtered 40000, unmatched 0 (redis: 5 campaigns, 15 ads)", counts.Late))
	assert.Contains(t, text.String(), fmt.Sprintf("YSB's counts (every view in its window, none late): 32 windows, 20000 views; redis short by %d views in %d windows, %d views late by the watermark delay of 0 ms",
		counts.Late, res.YSB.ShortWindows, counts.Late))

	// --ysb-counts: the shortfall fails the check.
	s.RequireYSBCounts()
	assert.False(t, s.OK)
	assert.ErrorContains(t, s.Err(), fmt.Sprintf("check failed: redis is short of YSB's counts by %d views in %d windows", counts.Late, res.YSB.ShortWindows))

	// A changed count: a mismatch.
	id, err := cl.HGet(ctx, rows[3].CampaignID.String(), strconv.FormatInt(rows[3].WindowStart, 10)).Result()
	require.NoError(t, err)
	require.NoError(t, cl.HSet(ctx, id, "seen_count", rows[3].Count-1).Err())
	res, err = Check(ctx, cl, el, 0)
	require.NoError(t, err)
	assert.Equal(t, []Mismatch{{Campaign: rows[3].CampaignID, Start: rows[3].WindowStart, Expected: rows[3].Count, Got: rows[3].Count - 1}}, res.Mismatches)
	assert.EqualError(t, res.Summary(10).Err(), "check failed: 1 windows in redis differ from the oracle over the log")

	// A watermark delay of 15 s, as far as views were sent back: nothing
	// late, and Redis (written so) equal to YSB's counts.
	require.NoError(t, cl.FlushAll(ctx).Err())
	_, err = WriteCampaignsRedis(ctx, cl, g.Campaigns())
	require.NoError(t, err)
	rows, counts, err = ReferenceDelay(KafkaOrder(el.Partitions), g.Campaigns(), WindowMs, 15000)
	require.NoError(t, err)
	require.Zero(t, counts.Late)
	writeWindows(t, cl, rows)
	res, err = Check(ctx, cl, el, 15000)
	require.NoError(t, err)
	assert.Equal(t, YSBCounts{Windows: 32, Views: 20000}, res.YSB)
	s = res.Summary(10)
	s.RequireYSBCounts()
	assert.True(t, s.OK, s.Problems)
}

// TestCheckVacuous: a check that would compare nothing fails, saying why:
// no campaigns in Redis (flushed), campaigns without ads, another seed's
// campaigns, no window in Redis, a log without views or without events.
func TestCheckVacuous(t *testing.T) {
	cl := redisClient(t)
	ctx := context.Background()
	addr := cl.Options().Addr
	g, err := NewGenerator(GenConfig{Campaigns: 5, AdsPerCampaign: 3, Seed: 3, TuplesPerMs: 1})
	require.NoError(t, err)
	other, err := NewGenerator(GenConfig{Campaigns: 5, AdsPerCampaign: 3, Seed: 7, TuplesPerMs: 1})
	require.NoError(t, err)
	el := checkLog(t, g, 20000)
	clicks := checkLog(t, g, 100)
	for _, p := range clicks.Partitions {
		for off := 0; off < len(p); off += TupleSize {
			binary.LittleEndian.PutUint32(p[off+OffEventType:], 2)
		}
	}

	for _, tc := range []struct {
		name  string
		setup func()
		log   *EventLog
		want  []string
	}{
		{"flushed", func() {}, el, []string{"redis " + addr + " has no campaigns (the set campaigns is empty): run ysb setup"}},
		{"no ads", func() { require.NoError(t, cl.SAdd(ctx, CampaignsKey, g.Campaigns().CampaignIDs[0].String()).Err()) }, el,
			[]string{"redis " + addr + " has no ads of its 1 campaigns"}},
		{"another seed", func() {
			_, err := WriteCampaignsRedis(ctx, cl, other.Campaigns())
			require.NoError(t, err)
			rows, _, err := Reference(KafkaOrder(checkLog(t, other, 20000).Partitions), other.Campaigns(), WindowMs)
			require.NoError(t, err)
			writeWindows(t, cl, rows)
		}, el, []string{"none of the log's 6667 views joins one of the 15 ads in redis " + addr + ": it holds other campaigns than the producer's"}},
		{"no windows", func() {
			_, err := WriteCampaignsRedis(ctx, cl, g.Campaigns())
			require.NoError(t, err)
		}, el, []string{"redis " + addr + " holds no window of its 5 campaigns"}},
		{"no views", func() {
			_, err := WriteCampaignsRedis(ctx, cl, g.Campaigns())
			require.NoError(t, err)
		}, clicks, []string{"the log's 100 events (0 views) give no window to check"}},
		{"no events", func() {
			_, err := WriteCampaignsRedis(ctx, cl, g.Campaigns())
			require.NoError(t, err)
		}, &EventLog{}, []string{"the event log has no events"}},
	} {
		require.NoError(t, cl.FlushAll(ctx).Err())
		tc.setup()
		res, err := Check(ctx, cl, tc.log, 0)
		require.NoError(t, err, tc.name)
		require.Len(t, res.Problems, len(tc.want), tc.name)
		for i, w := range tc.want {
			assert.Contains(t, res.Problems[i], w, tc.name)
		}
		s := res.Summary(10)
		assert.False(t, s.OK, tc.name)
		assert.ErrorContains(t, s.Err(), "check failed: "+tc.want[0], tc.name)
		var text bytes.Buffer
		s.WriteText(&text)
		assert.Contains(t, text.String(), "  fail: "+tc.want[0], tc.name)
	}
}
