package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNexmarkProgressAndAccounting: --progress-interval writes progress
// lines to stderr during the measured run (after the validation run's
// lines, none with 0); the summary has the records read, the rate and the
// CPU time used beside the events. Eight intervals of 50 ms for the three
// lines asked (the run's CPU goes with its length, paced or not: 600 ms at
// 100 ms intervals cost twice the CPU for the same ratio).
func TestNexmarkProgressAndAccounting(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := cli(t, "nexmark", "q1", "--workers", "2", "--warmup", "100ms", "--duration", "300ms", "--events", "5000",
		"--rate", "100000", "--validate", "--validate-events", "5000", "--progress-interval", "50ms", "--json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	line := regexp.MustCompile(`(?m)^nexmark q1 +[0-9.]+s  nexmark_q1 [0-9.]+ M tuples/s, windows \d+`)
	assert.GreaterOrEqual(t, len(line.FindAllString(stderr, -1)), 3, stderr)
	validating := strings.Index(stderr, "validating over")
	require.GreaterOrEqual(t, validating, 0)
	assert.Greater(t, line.FindStringIndex(stderr)[0], validating, "progress of the measured run, not the validation's")

	var res struct {
		Rate       int64    `json:"rate"`
		Mode       string   `json:"mode"`
		Tables     []string `json:"tables_read"`
		WholeMix   *bool    `json:"whole_mix"`
		Tuples     uint64   `json:"tuples"`
		TuplesPerS float64  `json:"tuples_per_s"`
		Events     uint64   `json:"events"`
		CPUSeconds float64  `json:"cpu_s"`
		CPUsUsed   float64  `json:"cpus_used"`
		PerCPU     float64  `json:"tuples_per_cpu_s"`
	}
	require.NoError(t, json.Unmarshal([]byte(lastLine(stdout)), &res))
	assert.Equal(t, int64(100_000), res.Rate)
	assert.Equal(t, "replay", res.Mode)
	assert.Equal(t, []string{"bid"}, res.Tables)
	require.NotNil(t, res.WholeMix)
	assert.False(t, *res.WholeMix)
	assert.Positive(t, res.TuplesPerS)
	assert.Greater(t, res.Events, res.Tuples, "the bids' events span people and auctions that were not read")
	assert.Positive(t, res.CPUSeconds)
	assert.Positive(t, res.CPUsUsed)
	assert.Positive(t, res.PerCPU)

	code, stdout, stderr = cli(t, "nexmark", "q1", "--workers", "1", "--warmup", "0s", "--duration", "100ms", "--events", "5000", "--progress-interval", "0")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.NotRegexp(t, line, stderr)
	assert.Contains(t, stdout, " M tuples/s, ")
	assert.Contains(t, stdout, "bid read, not the whole mix")
}
