package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/redistest"
	redissink "github.com/saber-hx/saber-hx/sink/redis"
	"github.com/saber-hx/saber-hx/ysb"
)

// TestYSBCheckReportsAndFails: ysb check over windows equal to the
// engine's rule passes and reports the late views and Redis' shortfall
// against YSB's counts; --ysb-counts fails on it; a Redis without the
// campaigns (flushed) fails, saying why, instead of passing with nothing
// compared.
func TestYSBCheckReportsAndFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rs := redistest.Start(t)
	csvPath := filepath.Join(dir, "campaigns.csv")
	code, _, errs := cli(t, "ysb", "setup", "--redis", rs.Addr, "--campaigns-out", csvPath, "--num-campaigns", "4", "--ads-per-campaign", "2", "--seed", "5")
	require.Equal(t, 0, code, errs)
	c, err := ysb.LoadCampaigns(csvPath)
	require.NoError(t, err)

	// 3000 events over 3 partitions, 30 s, every 40th of partition 0 sent
	// 12 s back: late by the engine's rule with no watermark delay.
	g, err := ysb.NewGenerator(ysb.GenConfig{Campaigns: 4, AdsPerCampaign: 2, Seed: 5, TuplesPerMs: 1})
	require.NoError(t, err)
	const n = 3000
	tuples := make([]byte, n*ysb.TupleSize)
	g.Fill(tuples, 0)
	var logText []byte
	for i := range n {
		tup := tuples[i*ysb.TupleSize : (i+1)*ysb.TupleSize]
		binary.LittleEndian.PutUint64(tup[ysb.OffEventTime:], uint64(i*10))
		if i%3 == 0 && i%40 == 0 && i > 0 {
			binary.LittleEndian.PutUint64(tup[ysb.OffEventTime:], uint64(i*10-12000))
		}
		logText = append(append(append(logText, strconv.Itoa(i%3)+"\t"...), ysb.AppendEventJSON(nil, tup)...), '\n')
	}
	logPath := filepath.Join(dir, "events.log")
	require.NoError(t, os.WriteFile(logPath, logText, 0o644))
	el, err := ysb.ReadEventLogFile(logPath)
	require.NoError(t, err)
	rows, counts, err := ysb.ReferenceDelay(ysb.KafkaOrder(el.Partitions), c, ysb.WindowMs, 0)
	require.NoError(t, err)
	require.Positive(t, counts.Late)

	ctx := context.Background()
	sink, err := redissink.NewYSB(ctx, redissink.YSBConfig{Addr: rs.Addr})
	require.NoError(t, err)
	for _, r := range rows {
		sink.Add(r.CampaignID, r.WindowStart, r.Count)
	}
	require.NoError(t, sink.Flush(ctx))
	require.NoError(t, sink.Close())

	code, out, errs := cli(t, "ysb", "check", "--redis", rs.Addr, "--events", logPath, "--json")
	require.Equal(t, 0, code, out+errs)
	var cs ysb.CheckSummary
	require.NoError(t, json.Unmarshal([]byte(lastLine(out)), &cs))
	assert.True(t, cs.OK)
	assert.Empty(t, cs.Problems)
	assert.Equal(t, 4, cs.Campaigns)
	assert.Equal(t, 8, cs.Ads)
	assert.Equal(t, counts.Late, cs.YSB.Late)
	assert.Equal(t, int64(counts.Late), cs.YSB.ShortViews)
	assert.Equal(t, counts.Counted+counts.Late, cs.YSB.Views)
	assert.Positive(t, cs.YSB.ShortWindows)

	code, out, _ = cli(t, "ysb", "check", "--redis", rs.Addr, "--events", logPath)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "YSB's counts (every view in its window, none late):")
	assert.Contains(t, out, "redis short by "+strconv.FormatUint(counts.Late, 10)+" views in ")

	code, out, errs = cli(t, "ysb", "check", "--redis", rs.Addr, "--events", logPath, "--ysb-counts")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, errs, "saber-hx: check failed: redis is short of YSB's counts by "+strconv.FormatUint(counts.Late, 10)+" views")

	// The campaigns gone: not a vacuous pass.
	cl := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer cl.Close()
	require.NoError(t, cl.FlushAll(ctx).Err())
	code, out, errs = cli(t, "ysb", "check", "--redis", rs.Addr, "--events", logPath, "--json")
	assert.Equal(t, 1, code, out)
	require.NoError(t, json.Unmarshal([]byte(lastLine(out)), &cs))
	assert.False(t, cs.OK)
	require.NotEmpty(t, cs.Problems)
	assert.Contains(t, cs.Problems[0], "redis "+rs.Addr+" has no campaigns")
	assert.Contains(t, errs, "saber-hx: check failed: redis "+rs.Addr+" has no campaigns (the set campaigns is empty)")
}
