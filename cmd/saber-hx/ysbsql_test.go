package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/redistest"
)

// TestYSBPipelineSQL runs the original pipeline with the query in SQL
// (examples/ysb_kafka.sql: a Kafka source of JSON events with ENUM labels,
// the campaigns table, the Redis sink in YSB's layout) between ysb setup,
// ysb produce (4 partitions, skewed, some late events) and ysb check,
// which finds every window equal to the oracle's.
func TestYSBPipelineSQL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rs := redistest.Start(t)
	k := kafkatest.Start(t, 4)
	gen := []string{"--num-campaigns", "20", "--ads-per-campaign", "5", "--seed", "7"}
	csvPath := filepath.Join(dir, "campaigns.csv")
	code, _, errs := cli(t, append([]string{"ysb", "setup", "--redis", rs.Addr, "--campaigns-out", csvPath}, gen...)...)
	require.Equal(t, 0, code, errs)
	logPath := filepath.Join(dir, "events.log")
	code, _, errs = cli(t, append([]string{"ysb", "produce", "--brokers", k.Addr, "--topic", "ad-events", "--rate", "4000",
		"--duration", "1500ms", "--skew", "1500", "--late-fraction", "0.01", "--partitions", "4", "--log", logPath}, gen...)...)
	require.Equal(t, 0, code, errs)

	text, err := os.ReadFile("../../examples/ysb_kafka.sql")
	require.NoError(t, err)
	sqlText := strings.NewReplacer("127.0.0.1:9092", k.Addr, "127.0.0.1:6379", rs.Addr, "'campaigns.csv'", "'"+csvPath+"'",
		"format = 'json')", "format = 'json', idle_timeout = '30s')").Replace(string(text))
	require.NotEqual(t, string(text), sqlText)
	// A bounded run over the events produced (as TestYSBPipelineCLI's):
	// no partition turns idle before its end, so the merge's order is the
	// one ysb check's oracle follows, however loaded the machine.
	code, out, errs := cli(t, "run", "-e", sqlText, "--stop-at-end", "--workers", workers, "--task-size", "2048")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "output redis "+rs.Addr)

	code, out, errs = cli(t, "ysb", "check", "--redis", rs.Addr, "--events", logPath)
	assert.Equal(t, 0, code, out+errs)
	assert.Contains(t, out, " 0 mismatches")
}
