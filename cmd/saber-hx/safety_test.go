package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/cpu"
	"github.com/saber-hx/saber-hx/ysb"
)

// The command line's rules for flags, outputs and inputs (issue 12): each
// case failed before its fix.

func TestPinValueAsSeparateArgument(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"false", "true", "auto"} {
		code, stdout, stderr := cli(t, "ysb", "--pin", v, "--duration", "50ms", "--warmup", "0s", "--workers", "1", "--bundle-size", "1048576", "--json")
		require.Equal(t, 0, code, "--pin %s: %s", v, stderr)
		s, _ := parseSummary(t, stdout)
		assert.Equal(t, 1, s.Workers)
	}
	// A bare --pin still means true, before another flag.
	code, _, stderr := cli(t, "ysb", "--pin", "--duration", "50ms", "--warmup", "0s", "--workers", "1", "--bundle-size", "1048576")
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, []string{"--pin=false", "x"}, joinPinValue([]string{"--pin", "false", "x"}))
	assert.Equal(t, []string{"--", "--pin", "false"}, joinPinValue([]string{"--", "--pin", "false"}), "nothing after --")
	// A word that is no value of --pin is its bad value, named as such,
	// where it was an unexpected argument; a file after a bare --pin is
	// the file.
	code, _, stderr = cli(t, "bench", "cm1", "--pin", "maybe")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `invalid boolean value "maybe" for -pin: want true, false or auto`)
	sqlFile := filepath.Join(t.TempDir(), "q")
	require.NoError(t, os.WriteFile(sqlFile, nil, 0o644))
	assert.Equal(t, []string{"--pin", sqlFile}, joinPinValue([]string{"--pin", sqlFile}))
	assert.Equal(t, []string{"--pin", "q.sql"}, joinPinValue([]string{"--pin", "q.sql"}), "a file's name, missing or not")
}

func TestUnpinnedSummary(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := cli(t, "ysb", "--pin=false", "--duration", "100ms", "--warmup", "0s", "--workers", workers, "--bundle-size", "1048576")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "workers 2 (not pinned)")
	assert.NotContains(t, stdout, "-1")
	assert.Equal(t, "pinned to CPUs 0 -", pinnedText([]int{0, -1}))
}

func TestFlagErrorsReportedOnce(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := cli(t, "ysb", "--bogus")
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Equal(t, 1, strings.Count(stderr, "bogus"), "one report: %q", stderr)
	assert.NotContains(t, stderr, "Usage:", "no usage dump around an error")
	assert.Contains(t, stderr, "saber-hx ysb -h lists the flags")
}

func TestYSBHelpSynopsis(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := cli(t, "ysb", "-h")
	require.Equal(t, 0, code)
	assert.Empty(t, stderr)
	for _, want := range []string{"saber-hx ysb [flags]", "saber-hx ysb --input F --campaigns C", "- for standard input", "saber-hx ysb generate --tuples N"} {
		assert.Contains(t, stdout, want)
	}
	assert.Contains(t, stdout, "multiple of the page size", "--buffer-size states the page-size rule")
}

func TestEngineFlagBounds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"workers far too many", []string{"--workers", "99999999"}, []string{"--workers 99999999", "at most"}},
		{"task size overflowing", []string{"--task-size", "9223372036854775680"}, []string{"task size 9223372036854775680", "two tasks"}},
		{"buffer not a page multiple", []string{"--task-size", "128", "--buffer-size", "1024"}, []string{"page size"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, cmd := range [][]string{{"ysb"}, {"bench", "cm1"}} {
				code, stdout, stderr := cli(t, append(cmd, tc.args...)...)
				assert.Equal(t, 2, code, "%v: %s", cmd, stderr)
				assert.Empty(t, stdout)
				for _, w := range tc.want {
					assert.Contains(t, stderr, w, "%v", cmd)
				}
			}
		})
	}
	// Pinning more workers than CPUs is allowed, with a warning.
	n := len(cpu.AllowedCPUs()) + 1
	code, _, stderr := cli(t, "ysb", "--pin=true", "--workers", itoa(n), "--duration", "100ms", "--warmup", "0s", "--bundle-size", "1048576")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "warning: --pin=true with "+itoa(n)+" workers")
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestBenchWindowFlagsOverrideOneField(t *testing.T) {
	t.Parallel()
	// groupby's window is tumbling 1000 ms: a slide alone makes it slide.
	s, _ := benchJSON(t, append([]string{"groupby", "--window-slide", "500", "--json", "--validate", "--validate-tuples", "20000"}, benchSmall...)...)
	require.Len(t, s.Queries, 1)
	assert.True(t, s.Queries[0].Validated, s.Queries[0].Mismatch)
	// 20000 tuples at 1000 per ms: positions 0..19 ms lie in windows
	// [-500, 500) and [0, 1000).
	assert.Equal(t, uint64(2), s.Queries[0].Windows)

	// A row window of the workload's size and slide.
	s, _ = benchJSON(t, append([]string{"groupby", "--window-type", "row", "--json", "--validate", "--validate-tuples", "20000"}, benchSmall...)...)
	assert.True(t, s.Queries[0].Validated, s.Queries[0].Mismatch)
	assert.Equal(t, uint64(20), s.Queries[0].Windows, "20000 tuples in tumbling row windows of 1000")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agg", "--window-size", "0"}, "--window-size 0: must be positive"},
		{[]string{"agg", "--window-size", "-5"}, "--window-size -5: must be positive"},
		{[]string{"agg", "--window-slide", "0"}, "--window-slide 0: must be positive"},
		{[]string{"agg", "--window-size", "50"}, "the workload's slide is 100; give --window-slide too"},
	} {
		code, stdout, stderr := cli(t, append([]string{"bench"}, tc.args...)...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
}

// eventsAt writes tuples with the given event times, views of the first ad
// of the generated campaigns table, and the table.
func eventsAt(t *testing.T, times ...int64) (events, campaigns string) {
	t.Helper()
	gen, err := ysb.NewGenerator(ysb.DefaultGenConfig())
	require.NoError(t, err)
	c := gen.Campaigns()
	b := make([]byte, len(times)*ysb.TupleSize)
	for k, ts := range times {
		p := tupleAt(b, k)
		setTime(p, ts)
		binary.LittleEndian.PutUint32(p[ysb.OffEventType:], uint32(ysb.EventView))
		copy(p[ysb.OffAdID:], c.AdIDs[0][:])
	}
	return handFiles(t, b, c)
}

func TestEventTimesAtTheInt64Edges(t *testing.T) {
	t.Parallel()
	ev, camp := eventsAt(t, math.MaxInt64-100, math.MaxInt64-50)
	for _, kernel := range []string{"auto", "vector"} {
		code, stdout, stderr := cli(t, "ysb", "--input", ev, "--campaigns", camp, "--kernel", kernel, "--workers", workers)
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, stdout, ",2,9223372036854775757\n", "%s: both views counted in the topmost window", kernel)
	}
	ev, camp = eventsAt(t, 0, -9223372036854770000, math.MinInt64)
	code, stdout, stderr := cli(t, "ysb", "--input", ev, "--campaigns", camp, "--workers", workers)
	assert.Equal(t, 2, code, "a window starting below MinInt64 is bad input: %s", stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "tuple 2 (byte offset 256)", "the refused tuple's offset")
}

func TestOutputSafety(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	events, campaigns := generate(t, dir, 3000)
	evBefore, err := os.ReadFile(events)
	require.NoError(t, err)
	campBefore, err := os.ReadFile(campaigns)
	require.NoError(t, err)
	link := filepath.Join(dir, "link.bin")
	require.NoError(t, os.Link(events, link))
	for _, out := range []string{events, campaigns, link, "./" + filepath.Base(events)} {
		code, stdout, stderr := runIn(t, dir, "ysb", "--input", events, "--campaigns", campaigns, "--output", out)
		assert.Equal(t, 2, code, "--output %s: %s", out, stderr)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, "same file")
	}
	code, _, stderr := cli(t, "ysb", "--input", events, "--campaigns", campaigns, "--output", "")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, `--output ""`)
	code, _, stderr = cli(t, "ysb", "generate", "--tuples", "10", "--out", events, "--campaigns", events)
	assert.Equal(t, 2, code, stderr)
	for path, want := range map[string][]byte{events: evBefore, campaigns: campBefore} {
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), "%s untouched", path)
	}

	// A character device is written through, not replaced.
	code, _, stderr = cli(t, "ysb", "--input", events, "--campaigns", campaigns, "--output", os.DevNull)
	require.Equal(t, 0, code, stderr)
	fi, err := os.Stat(os.DevNull)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeCharDevice, "%s is still a device", os.DevNull)

	// A missing directory is reported before any input is read.
	code, _, stderr = cli(t, "ysb", "--input", filepath.Join(dir, "missing.bin"), "--campaigns", campaigns, "--output", filepath.Join(dir, "no", "out.csv"))
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, filepath.Join(dir, "no"), "the output's directory is checked first: %s", stderr)
	assertDirHolds(t, dir, "events.bin", "campaigns.csv", "link.bin")
}

// runIn runs the command line in a process of its own in dir.
func runIn(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), asCommandEnv+"=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, out.String(), errb.String()
}

func TestInputFromStdin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	events, campaigns := generate(t, dir, 30000)
	code, want, stderr := cli(t, "ysb", "--input", events, "--campaigns", campaigns, "--workers", workers)
	require.Equal(t, 0, code, stderr)

	b, err := os.ReadFile(events)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "ysb", "--input", "-", "--campaigns", campaigns, "--workers", workers, "--task-size", "4096", "--buffer-size", "65536")
	cmd.Env = append(os.Environ(), asCommandEnv+"=1")
	cmd.Stdin = bytes.NewReader(b) // through a pipe
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), errb.String())
	assert.Equal(t, want, out.String(), "the stream gives the file's results")

	cmd = exec.Command(os.Args[0], "ysb", "--input", "-", "--campaigns", campaigns)
	cmd.Env = append(os.Environ(), asCommandEnv+"=1")
	cmd.Stdin = bytes.NewReader(b[:len(b)-5])
	errb.Reset()
	cmd.Stderr = &errb
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 2, ee.ExitCode(), errb.String())
	assert.Contains(t, errb.String(), "123 trailing bytes")
}

func TestFileModeInterruptedCommitsNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, campaigns := generate(t, dir, 10)
	out := filepath.Join(dir, "out.csv")
	require.NoError(t, os.WriteFile(out, []byte("old\n"), 0o600))
	// Events from a pipe that stays open: the run waits for more input
	// until the signal.
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	gen, err := ysb.NewGenerator(ysb.DefaultGenConfig())
	require.NoError(t, err)
	b := make([]byte, 1024*ysb.TupleSize) // 32 whole tasks of 4096 B
	gen.Fill(b, 0)
	p := startCLIIn(t, r, nil, "ysb", "--input", "-", "--campaigns", campaigns, "--output", out, "--task-size", "4096", "--buffer-size", "65536", "--json",
		"--metrics-addr", "127.0.0.1:0")
	r.Close()
	_, err = w.Write(b) // more than a pipe holds: once the command reads
	require.NoError(t, err)
	// No line says the tuples are in: the engine's counter, scraped, does
	// (whole tasks, each taken as it is read).
	client, url := p.metrics(t)
	scrapeUntil(t, client, url, `saber_records_in_total{query="ysb"} 1024`+"\n")
	code := p.stop(t, syscall.SIGINT)
	assert.Equal(t, 130, code, p.log())
	s, m := parseSummary(t, p.stdout.String())
	assert.Equal(t, true, m["interrupted"])
	assert.Equal(t, uint64(1024), s.Tuples, "what ran is summarised")
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "old\n", string(got), "nothing committed")
	assertDirHolds(t, dir, "events.bin", "campaigns.csv", "out.csv")
}

// TestHybridDefaultWorkers: hybrid mode leaves the GPU worker a CPU of its
// own unless --workers is given.
func TestHybridDefaultWorkers(t *testing.T) {
	t.Parallel()
	cpus := len(cpu.AllowedCPUs())
	args := []string{"ysb", "--mode", "hybrid", "--gpu-emulate", "--duration", "100ms", "--warmup", "0s", "--bundle-size", "1048576", "--json"}
	code, stdout, stderr := cli(t, args...)
	require.Equal(t, 0, code, stderr)
	s, _ := parseSummary(t, stdout)
	assert.Equal(t, max(cpus-1, 1), s.Workers)
	code, stdout, stderr = cli(t, append(args, "--workers", itoa(cpus))...)
	require.Equal(t, 0, code, stderr)
	s, _ = parseSummary(t, stdout)
	assert.Equal(t, cpus, s.Workers, "an explicit --workers is kept")
}
