package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNexmarkCommand: a short validated replayed run prints its JSON
// alone with --json (it printed the text line before it, where the other
// commands print the JSON only); the same query over files that generate
// wrote prints its line.
func TestNexmarkCommand(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := cli(t, "nexmark", "q1", "--workers", "2", "--warmup", "100ms", "--duration", "150ms", "--events", "5000",
		"--validate", "--validate-events", "5000", "--json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Equal(t, 1, strings.Count(stdout, "\n"), "the JSON line alone: %s", stdout)
	var res struct {
		Query      string  `json:"query"`
		EventsPerS float64 `json:"events_per_s"`
		PerCore    float64 `json:"events_per_s_per_core"`
		Rows       uint64  `json:"rows"`
		Validated  *bool   `json:"validated"`
		CPU        string  `json:"cpu"`
		Serial     float64 `json:"serial_fraction"`
		Part       string  `json:"largest_part"`
		PartSerial float64 `json:"largest_part_serial_fraction"`
	}
	require.NoError(t, json.Unmarshal([]byte(lastLine(stdout)), &res))
	assert.Equal(t, "q1", res.Query)
	assert.GreaterOrEqual(t, res.Serial, 0.0)
	assert.LessOrEqual(t, res.Serial, res.PartSerial+1e-9, "the program's fraction is at most its largest part's")
	assert.Equal(t, "nexmark_q1", res.Part)
	assert.Positive(t, res.EventsPerS)
	assert.Positive(t, res.PerCore)
	assert.Positive(t, res.Rows)
	require.NotNil(t, res.Validated)
	assert.True(t, *res.Validated)
	assert.Contains(t, stderr, "nexmark q1: validating over 5000 events")

	dir := filepath.Join(t.TempDir(), "events")
	code, stdout, stderr = cli(t, "nexmark", "generate", "--events", "5000", "--out", dir)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stdout, filepath.Join(dir, "bid.json")+": 4600 records\n")
	_, err := os.Stat(filepath.Join(dir, "person.json"))
	require.NoError(t, err)
	code, _, stderr = cli(t, "nexmark", "generate", "--events", "5000", "--out", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "person.json exists")

	code, stdout, stderr = cli(t, "nexmark", "q1", "--source", "json", "--dir", dir, "--workers", "2")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stdout, "nexmark q1 (json): ")
	assert.Contains(t, stdout, " 5000 events in ")
	assert.Contains(t, stdout, " 4600 rows,")
	assert.NotContains(t, stdout, "interrupted")
}

func TestNexmarkCommandUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"nexmark"}, "nexmark: name a query (q0, q1, q2"},
		{[]string{"nexmark", "q99"}, `no Nexmark query "q99"`},
		{[]string{"nexmark", "q1", "--source", "json"}, "source json: name the directory"},
		{[]string{"nexmark", "q1", "--rate", "0", "--duration", "1s"}, "--rate 0: must be positive"},
		// Durations and counts: refused before the bundle is generated,
		// naming the flag (they ran the default, or measured a negative
		// interval, or failed with exit 1 after the bundle).
		{[]string{"nexmark", "q0", "--warmup", "200ms", "--duration", "-100ms"}, "--duration -100ms: must be positive"},
		{[]string{"nexmark", "q0", "--warmup", "0", "--duration", "0"}, "--duration 0s: must be positive"},
		{[]string{"nexmark", "q0", "--warmup", "1s", "--duration", "0"}, "--duration 0s: must be positive"},
		{[]string{"nexmark", "q0", "--warmup", "-1s", "--duration", "300ms"}, "--warmup -1s: must not be negative"},
		{[]string{"nexmark", "q0", "--events", "-5", "--warmup", "0", "--duration", "100ms"}, "--events -5: must be positive"},
		{[]string{"nexmark", "q0", "--events", "0", "--warmup", "0", "--duration", "100ms"}, "--events 0: must be positive"},
		{[]string{"nexmark", "q0", "--validate", "--validate-events", "0"}, "--validate-events 0: must be positive"},
		{[]string{"nexmark", "generate", "--out", "x"}, "give the number of events"},
		{[]string{"nexmark", "generate", "--events", "5"}, "give a directory or Kafka brokers (--out DIR or --brokers B, one of them)"},
		{[]string{"nexmark", "generate", "--events", "5", "--out", "x", "--brokers", "127.0.0.1:1"}, "give a directory or Kafka brokers (--out DIR or --brokers B"},
		{[]string{"nexmark", "generate", "--events", "-5", "--out", "x"}, "generate: --events -5: must be positive"},
		{[]string{"nexmark", "generate", "--out", "x"}, "generate: give the number of events (--events N, > 0)"},
	} {
		code, _, stderr := cli(t, c.args...)
		assert.Equal(t, 2, code, "%v: %s", c.args, stderr)
		assert.Contains(t, stderr, c.msg, c.args)
		// As the other commands' usage errors: no "usage:" inside.
		assert.NotContains(t, stderr, "usage:", c.args)
		assert.NotContains(t, stderr, "generating", "%v: refused before any work", c.args)
	}
	code, stdout, _ := cli(t, "nexmark", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "--validate-events")
	// Without --task-size nexmark's tasks are whole tuples of its sources,
	// not the engine's 1 MiB the help said.
	_, help, _ := strings.Cut(stdout, "-task-size int\n")
	help, _, _ = strings.Cut(help, "\n  -")
	assert.Contains(t, help, "(default whole tuples of the query's sources, the most that fit 1048576 B)")
}

// TestNexmarkFlagsThatDoNothing: a flag given where it does nothing is
// refused (exit 2), naming it, before any work: they were accepted
// silently (--warmup and --duration with --source json, --dir with the
// generator, --validate-events without --validate, ...).
func TestNexmarkFlagsThatDoNothing(t *testing.T) {
	t.Parallel()
	nx := t.TempDir()
	for _, c := range []struct {
		flag string
		args []string
	}{
		{"--warmup", []string{"q0", "--source", "json", "--dir", nx, "--warmup", "1h", "--duration", "1h"}},
		{"--duration", []string{"q0", "--source", "kafka", "--brokers", "127.0.0.1:1", "--duration", "1s"}},
		{"--inline", []string{"q0", "--source", "json", "--dir", nx, "--inline"}},
		{"--events", []string{"q0", "--source", "json", "--dir", nx, "--events", "1000"}},
		{"--events", []string{"q0", "--inline", "--events", "1000", "--warmup", "0", "--duration", "100ms"}},
		{"--rate", []string{"q0", "--source", "json", "--dir", nx, "--rate", "1000"}},
		{"--dir", []string{"q0", "--dir", nx, "--events", "1000", "--warmup", "0", "--duration", "100ms"}},
		{"--brokers", []string{"q0", "--brokers", "127.0.0.1:1", "--events", "1000", "--warmup", "0", "--duration", "100ms"}},
		{"--topic-prefix", []string{"q0", "--source", "json", "--dir", nx, "--topic-prefix", "x-"}},
		{"--validate-events", []string{"q0", "--validate-events", "5", "--events", "1000", "--warmup", "0", "--duration", "100ms"}},
		{"--topic-prefix", []string{"generate", "--events", "10", "--out", filepath.Join(nx, "g"), "--topic-prefix", "x-"}},
		{"--nexmark-dir", []string{"q0", "--nexmark-dir", nx, "--events", "1000", "--warmup", "0", "--duration", "100ms"}},
	} {
		code, stdout, stderr := cli(t, append([]string{"nexmark"}, c.args...)...)
		assert.Equal(t, 2, code, "%v: %s %s", c.args, stdout, stderr)
		assert.Contains(t, stderr, c.flag+" applies to ", c.args)
		assert.NotContains(t, stderr, "generating", c.args)
	}
	_, err := os.Stat(filepath.Join(nx, "g"))
	assert.ErrorIs(t, err, os.ErrNotExist, "generate refused before it wrote")
}

// TestNexmarkInterrupted: an interrupted run's text summary says so, by
// which signal (it did not), and its JSON names the signal beside
// "interrupted" (it had no "signal"), as run's, bench's and ysb's do.
func TestNexmarkInterrupted(t *testing.T) {
	t.Parallel()
	args := []string{"nexmark", "q0", "--events", "1000", "--warmup", "0", "--duration", "10m", "--workers", workers, "--progress-interval", "0"}
	s := signalCommand(t, syscall.SIGINT, "warmed up", time.Minute, args...)
	require.Equal(t, 130, s.code, s.stderr)
	assert.Contains(t, s.stdout, "nexmark q0 (nexmark): ")
	assert.Contains(t, s.stdout, "; interrupted by SIGINT: the figures are those of what ran before it")

	s = signalCommand(t, syscall.SIGTERM, "warmed up", time.Minute, append(args, "--json")...)
	require.Equal(t, 143, s.code, s.stderr)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(lastLine(s.stdout)), &m), "stdout: %s", s.stdout)
	assert.Equal(t, true, m["interrupted"])
	assert.Equal(t, "SIGTERM", m["signal"])
}

// TestNexmarkValidationInterrupted: a signal during --validate's run ends
// the command with 128 + N, marked interrupted (it exited 1, "output
// differs from the reference evaluator: interrupted", after generating
// the bundle).
func TestNexmarkValidationInterrupted(t *testing.T) {
	t.Parallel()
	s := signalCommand(t, syscall.SIGINT, "validating", time.Minute, "nexmark", "q5", "--validate", "--validate-events", "100000000",
		"--events", "1000", "--workers", workers, "--progress-interval", "0", "--json")
	require.Equal(t, 130, s.code, s.stderr)
	assert.NotContains(t, s.stderr, "differs")
	assert.NotContains(t, s.stderr, "generating")
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(lastLine(s.stdout)), &m), "stdout: %s", s.stdout)
	assert.Equal(t, true, m["interrupted"])
	assert.Equal(t, true, m["validation_interrupted"])
	assert.Equal(t, "SIGINT", m["signal"])
	assert.Nil(t, m["validated"])
}

// TestNexmarkQ10Command: saber-hx nexmark q10 writes its partitions
// under --nexmark-dir's data/output/SUBMIT_TIME/bid/, validated against
// the generator's bids (rows per partition, every _SUCCESS), and keeps
// them; without --nexmark-dir, in a temporary directory that the run
// removes.
func TestNexmarkQ10Command(t *testing.T) {
	t.Parallel()
	nx := filepath.Join(t.TempDir(), "nexmark")
	code, stdout, stderr := cli(t, "nexmark", "q10", "--workers", "2", "--warmup", "0", "--duration", "100ms", "--events", "5000",
		"--validate", "--validate-events", "5000", "--nexmark-dir", nx, "--json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, lastLine(stdout), `"validated":true`)
	runs, err := filepath.Glob(filepath.Join(nx, "data", "output", "*", "bid"))
	require.NoError(t, err)
	require.Len(t, runs, 2, "the validation run's and the measured run's")
	for _, r := range runs {
		success, err := filepath.Glob(filepath.Join(r, "dt=*", "hm=*", "_SUCCESS"))
		require.NoError(t, err)
		assert.NotEmpty(t, success, r)
		data, err := filepath.Glob(filepath.Join(r, "dt=*", "hm=*", "data"))
		require.NoError(t, err)
		assert.Len(t, data, len(success), r)
	}

	tmp := t.TempDir()
	p := startCLI(t, []string{"TMPDIR=" + tmp}, "nexmark", "q10", "--workers", "2", "--warmup", "0", "--duration", "100ms", "--events", "5000")
	p.wait(t, time.Minute)
	require.NoError(t, p.err, p.log())
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "the temporary ${NEXMARK_DIR} removed")
}
