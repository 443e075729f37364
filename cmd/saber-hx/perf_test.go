package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWarmupFlag: --warmup is listed with its default, refused when negative.
func TestWarmupFlag(t *testing.T) {
	t.Parallel()
	code, help, _ := cli(t, "ysb", "-h")
	assert.Equal(t, 0, code)
	_, entry, found := strings.Cut(help, "\n  -warmup ")
	require.True(t, found, "--warmup not listed in:\n%s", help)
	assert.Contains(t, entry, "(default 3s)")

	code, stdout, stderr := cli(t, "ysb", "--warmup", "-1s", "--duration", "100ms")
	assert.Equal(t, 2, code, stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "warmup -1s")
}

// TestBenchmarkPerfFields: the JSON summary has the measured interval's
// rates, latencies and GC figures, and the whole run's tuples. The run is
// a process of its own: the heap figures are the process's, which the
// other tests of this binary would share. One worker: the fields do not
// depend on how many, two ran flat out for 400 ms.
func TestBenchmarkPerfFields(t *testing.T) {
	t.Parallel()
	p := startCLI(t, nil, "ysb", "--duration", "300ms", "--warmup", "100ms", "--workers", "1",
		"--task-size", "65536", "--buffer-size", "1048576", "--bundle-size", "1048576", "--json")
	p.wait(t, time.Minute)
	s, m := parseSummary(t, p.stdout.String())
	for _, k := range []string{"gb_per_s", "latency_p50_ms", "latency_p99_ms", "gc_cycles", "heap_alloc_bytes", "warmup_s", "total_tuples"} {
		assert.Contains(t, m, k)
	}
	assert.True(t, s.Validated)
	assert.Equal(t, 0.1, m["warmup_s"])
	assert.Positive(t, s.Tuples)
	assert.Less(t, float64(s.Tuples), m["total_tuples"], "the warm-up's tuples are not measured")
	// The measured interval runs from the first task boundary after the
	// warm-up to the end of the drain after the duration: about the
	// duration, less the producer's lag at the boundary, more the drain,
	// which a loaded machine draws out (the bound is not a speed).
	assert.Greater(t, s.Seconds, 0.05, "measured seconds")
	assert.Less(t, s.Seconds, 10.0, "measured seconds")
	assert.Positive(t, m["gb_per_s"])
	assert.InDelta(t, m["mb_per_s"].(float64)/1000, m["gb_per_s"], 1e-9)
	p50, p99 := m["latency_p50_ms"].(float64), m["latency_p99_ms"].(float64)
	assert.Positive(t, p50)
	assert.GreaterOrEqual(t, p99, p50)
	assert.Less(t, m["heap_alloc_bytes"], float64(64<<20))
	assert.Equal(t, s.Tuples, s.Filtered+s.Unmatched+s.Late+s.Counted, "every measured tuple classified once")

	// Human summary: the warm-up and the latencies.
	code, stdout, stderr := cli(t, "ysb", "--duration", "100ms", "--warmup", "0s", "--workers", "1",
		"--task-size", "65536", "--buffer-size", "1048576", "--bundle-size", "1048576")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stdout, "warm-up")
	assert.Contains(t, stdout, "task latency p50 ")
	assert.Contains(t, stdout, "gc cycles ")
}

// TestFileModeHasNoWarmup: the benchmark-only fields are absent in file mode.
func TestFileModeHasNoWarmup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	events, campaigns := generate(t, dir, 5000)
	code, stdout, stderr := cli(t, "ysb", "--input", events, "--campaigns", campaigns, "--output", dir+"/out.csv", "--workers", workers, "--task-size", "12800", "--json")
	require.Equal(t, 0, code, stderr)
	_, m := parseSummary(t, stdout)
	for _, k := range []string{"warmup_s", "total_tuples", "gc_cycles", "heap_alloc_bytes"} {
		assert.NotContains(t, m, k)
	}
	assert.Contains(t, m, "gb_per_s")
	assert.Contains(t, m, "latency_p99_ms")
}
