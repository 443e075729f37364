package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/redistest"
	"github.com/saber-hx/saber-hx/ysb"
)

// TestYSBPipelineCLI runs the original benchmark's pipeline through the
// command line: setup, produce (with skew and late events), the run to
// the end of the topic, check (exit 0, then 1 once a window is changed).
// The two cases, each with servers of its own, at once: each waits out
// its producer's 1.5 s.
func TestYSBPipelineCLI(t *testing.T) {
	t.Parallel()
	for _, parts := range []string{"1", "4"} {
		t.Run("partitions="+parts, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rs := redistest.Start(t)
			k := kafkatest.Start(t, 1)
			gen := []string{"--num-campaigns", "20", "--ads-per-campaign", "5", "--seed", "11"}

			csvPath := filepath.Join(dir, "campaigns.csv")
			code, out, errs := cli(t, append([]string{"ysb", "setup", "--redis", rs.Addr, "--campaigns-out", csvPath}, gen...)...)
			require.Equal(t, 0, code, errs)
			assert.Contains(t, out, "wrote 20 campaigns")
			assert.Contains(t, out, "100 ads")
			c, err := ysb.LoadCampaigns(csvPath)
			require.NoError(t, err)
			assert.Len(t, c.AdIDs, 100)

			logPath := filepath.Join(dir, "events.log")
			code, out, errs = cli(t, append([]string{"ysb", "produce", "--brokers", k.Addr, "--topic", "ad-events", "--rate", "2000",
				"--duration", "1500ms", "--skew", "1500", "--late-fraction", "0.01", "--partitions", parts, "--log", logPath}, gen...)...)
			require.Equal(t, 0, code, errs)
			assert.Contains(t, out, "produce done:")
			assert.Contains(t, errs, "produce     1s")

			// Over 4 partitions, two fetchers (each decoding what it
			// polls): ysb check finds the windows as one client gives them.
			code, out, errs = cli(t, "ysb", "--source", "kafka", "--brokers", k.Addr, "--topic", "ad-events", "--redis", rs.Addr,
				"--stop-at-end", "--workers", workers, "--task-size", "2048", "--json", "--fetchers", map[string]string{"1": "1", "4": "2"}[parts])
			require.Equal(t, 0, code, errs)
			s, _ := parseSummary(t, out)
			assert.Equal(t, "kafka", s.Mode)
			assert.Positive(t, s.Counted)
			assert.Contains(t, errs, "ysb kafka: 20 campaigns, 100 ads")

			code, out, errs = cli(t, "ysb", "check", "--redis", rs.Addr, "--events", logPath, "--json")
			require.Equal(t, 0, code, out+errs)
			var cs ysb.CheckSummary
			require.NoError(t, json.Unmarshal([]byte(lastLine(out)), &cs))
			assert.True(t, cs.OK)
			assert.Equal(t, s.Counted, cs.Counts.Counted)
			assert.Equal(t, s.Late, cs.Counts.Late)
			assert.Equal(t, s.Tuples, uint64(cs.Events))
			assert.Equal(t, cs.Windows, cs.Latency.Windows)

			code, out, _ = cli(t, "ysb", "check", "--redis", rs.Addr, "--events", logPath)
			require.Equal(t, 0, code)
			assert.Contains(t, out, "0 mismatches")
			assert.Contains(t, out, "p50")

			// A changed count is found: exit 1, the window named.
			cl := redis.NewClient(&redis.Options{Addr: rs.Addr})
			defer cl.Close()
			ctx := context.Background()
			ws, err := ysb.ReadRedisWindows(ctx, cl, c.CampaignIDs[:1])
			require.NoError(t, err)
			require.NotEmpty(t, ws)
			id, err := cl.HGet(ctx, c.CampaignIDs[0].String(), strconv.FormatInt(ws[0].Start, 10)).Result()
			require.NoError(t, err)
			require.NoError(t, cl.HSet(ctx, id, "seen_count", ws[0].Count+1).Err())
			code, out, _ = cli(t, "ysb", "check", "--redis", rs.Addr, "--events", logPath)
			assert.Equal(t, 1, code)
			assert.Contains(t, out, "mismatch: campaign "+c.CampaignIDs[0].String()+" window "+strconv.FormatInt(ws[0].Start, 10))
		})
	}
}

func TestYSBPipelineUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ysb", "setup"}, "needs --redis"},
		{[]string{"ysb", "produce"}, "needs --brokers"},
		{[]string{"ysb", "produce", "--brokers", "x:1", "--rate", "0"}, "--rate 0"},
		{[]string{"ysb", "produce", "--brokers", "x:1", "--late-fraction", "2"}, "--late-fraction 2"},
		{[]string{"ysb", "check", "--redis", "x:1"}, "needs --redis and --events"},
		{[]string{"ysb", "check", "--redis", "x:1", "--events", "/nonexistent/log"}, "events: open /nonexistent/log"},
		{[]string{"ysb", "--source", "kafka", "--redis", "x:1"}, "needs --brokers"},
		{[]string{"ysb", "--source", "kafka", "--brokers", "x:1"}, "needs --redis"},
		{[]string{"ysb", "--source", "file"}, `--source "file"`},
		{[]string{"ysb", "--source", "kafka", "--input", "x"}, "--input applies to file mode, not to --source kafka"},
		{[]string{"ysb", "--source", "kafka", "--brokers", "127.0.0.1:1", "--redis", "127.0.0.1:1", "--fetchers", "-1"}, "--fetchers -1: want 1 to 64"},
		{[]string{"ysb", "--source", "kafka", "--brokers", "127.0.0.1:1", "--redis", "127.0.0.1:1", "--fetchers", "2", "--group", "g"}, "and 1 with --group"},
	} {
		code, _, errs := cli(t, tc.args...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, errs)
		assert.Contains(t, errs, tc.want, "%v", tc.args)
	}
	// A server that does not answer: a run failure naming it.
	code, _, errs := cli(t, "ysb", "setup", "--redis", "127.0.0.1:1")
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "redis 127.0.0.1:1")
}

// TestYSBKafkaInterrupted: SIGTERM ends the run with 143 after draining:
// every tuple it counted is in Redis (the seen_counts add up to it).
func TestYSBKafkaInterrupted(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	k := kafkatest.Start(t, 2)
	code, _, errs := cli(t, "ysb", "setup", "--redis", rs.Addr)
	require.Equal(t, 0, code, errs)
	code, _, errs = cli(t, "ysb", "produce", "--brokers", k.Addr, "--rate", "3000", "--duration", "1s", "--skew", "500")
	require.Equal(t, 0, code, errs)
	s := signalCommand(t, syscall.SIGTERM, "ysb kafka:", time.Minute, "ysb", "--source", "kafka", "--brokers", k.Addr,
		"--redis", rs.Addr, "--workers", workers, "--task-size", "2048", "--json")
	require.Equal(t, 143, s.code, s.stderr)
	sum, raw := parseSummary(t, s.stdout)
	assert.Equal(t, true, raw["interrupted"])
	assert.Equal(t, "SIGTERM", raw["signal"])

	cl := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer cl.Close()
	ctx := context.Background()
	_, camps, err := ysb.LoadCampaignsRedis(ctx, cl)
	require.NoError(t, err)
	ws, err := ysb.ReadRedisWindows(ctx, cl, camps)
	require.NoError(t, err)
	var total int64
	for _, w := range ws {
		total += w.Count
	}
	assert.Equal(t, int64(sum.Counted), total)
}

// TestYSBProduceInterrupted: SIGINT stops the producer with 130 after
// what it sent is acknowledged and logged.
func TestYSBProduceInterrupted(t *testing.T) {
	t.Parallel()
	k := kafkatest.Start(t, 2)
	logPath := filepath.Join(t.TempDir(), "events.log")
	s := signalCommand(t, syscall.SIGINT, "acked", time.Minute, "ysb", "produce", "--brokers", k.Addr, "--rate", "500",
		"--duration", "0", "--log", logPath)
	require.Equal(t, 130, s.code, s.stderr)
	assert.Contains(t, s.stdout, "produce interrupted:")
	f, err := os.Open(logPath)
	require.NoError(t, err)
	defer f.Close()
	el, err := ysb.ReadEventLog(f, logPath)
	require.NoError(t, err)
	assert.Contains(t, s.stdout, "produce interrupted: "+strconv.FormatInt(el.Events, 10)+" events")
}
