package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/cpu"
	"github.com/saber-hx/saber-hx/internal/signals"
	"github.com/saber-hx/saber-hx/ysb"
)

// workers is the --workers value of the runs.
const workers = "2"

// cli runs the command line in-process and returns its exit code, stdout and
// stderr.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// summary is the subset of the --json object that the tests read.
type summary struct {
	Mode      string  `json:"mode"`
	Tuples    uint64  `json:"tuples"`
	Seconds   float64 `json:"seconds"`
	Workers   int     `json:"workers"`
	TaskSize  int     `json:"task_size"`
	Windows   uint64  `json:"windows"`
	Rows      uint64  `json:"rows"`
	Filtered  uint64  `json:"filtered_tuples"`
	Unmatched uint64  `json:"unmatched_tuples"`
	Late      uint64  `json:"late_tuples"`
	Counted   uint64  `json:"counted_tuples"`
	Validated bool    `json:"validated"`
	Output    string  `json:"output"`
}

// parseSummary decodes the last stdout line as the JSON summary, strictly:
// exactly one JSON object on that line.
func parseSummary(t *testing.T, stdout string) (summary, map[string]any) {
	t.Helper()
	line := lastLine(stdout)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(line), &m), "last stdout line is not one JSON object: %q", line)
	var s summary
	require.NoError(t, json.Unmarshal([]byte(line), &s))
	return s, m
}

// generate writes tuples generator tuples and the campaigns table into dir via
// the CLI and returns their paths.
func generate(t *testing.T, dir string, tuples int, extra ...string) (events, campaigns string) {
	t.Helper()
	events, campaigns = filepath.Join(dir, "events.bin"), filepath.Join(dir, "campaigns.csv")
	args := append([]string{"ysb", "generate", "--tuples", fmt.Sprint(tuples), "--out", events, "--campaigns", campaigns}, extra...)
	code, _, stderr := cli(t, args...)
	require.Equal(t, 0, code, "generate failed: %s", stderr)
	return events, campaigns
}

// ysbReference runs ysb.Reference over the files.
func ysbReference(t *testing.T, events, campaigns string) ([]ysb.Row, ysb.Counts) {
	t.Helper()
	b, err := os.ReadFile(events)
	require.NoError(t, err)
	c, err := ysb.LoadCampaigns(campaigns)
	require.NoError(t, err)
	rows, counts, err := ysb.Reference(b, c, ysb.WindowMs)
	require.NoError(t, err)
	return rows, counts
}

// readResults reads a results CSV file and checks its exact header.
func readResults(t *testing.T, path string) []ysb.Row {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	header, _, _ := strings.Cut(string(b), "\n")
	assert.Equal(t, "window_start,campaign_id,count,max_event_time", header)
	rows, err := ysb.ReadResultsCSV(bytes.NewReader(b), path)
	require.NoError(t, err)
	return rows
}

func assertRowsEqual(t *testing.T, want, got []ysb.Row) {
	t.Helper()
	if len(want) == 0 && len(got) == 0 {
		return // nil vs empty
	}
	if slices.Equal(want, got) {
		return
	}
	// A compact diff: the full dumps of thousands of rows are unreadable.
	w, g := rowSet(want), rowSet(got)
	var diff []string
	for k, v := range w {
		if gv, ok := g[k]; !ok {
			diff = append(diff, fmt.Sprintf("missing %s: %s", k, v))
		} else if gv != v {
			diff = append(diff, fmt.Sprintf("differs %s: want %s, got %s", k, v, gv))
		}
	}
	for k, v := range g {
		if _, ok := w[k]; !ok {
			diff = append(diff, fmt.Sprintf("extra   %s: %s", k, v))
		}
	}
	sort.Strings(diff)
	if len(diff) > 20 {
		diff = append(diff[:20], fmt.Sprintf("... and %d more", len(diff)-20))
	}
	if len(diff) == 0 {
		diff = []string{"same rows in a different order"}
	}
	assert.Fail(t, "rows differ from ysb.Reference",
		"want %d rows, got %d:\n%s", len(want), len(got), strings.Join(diff, "\n"))
}

// rowSet maps "window campaign" to "count=N max=M".
func rowSet(rows []ysb.Row) map[string]string {
	m := make(map[string]string, len(rows))
	for _, r := range rows {
		m[fmt.Sprintf("window %d campaign %s", r.WindowStart, r.CampaignID)] = fmt.Sprintf("count=%d max_event_time=%d", r.Count, r.MaxEventTime)
	}
	return m
}

// assertDirHolds checks that dir holds exactly the named files (no leftover
// temp file from an aborted atomic write).
func assertDirHolds(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	assert.ElementsMatch(t, names, got, "files in %s", dir)
}

// --- 1. commands ---

func TestHelpAndCommands(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"help", "-h", "--help"} {
		code, stdout, stderr := cli(t, arg)
		assert.Equal(t, 0, code, arg)
		assert.Empty(t, stderr, arg)
		for _, want := range []string{"saber-hx ysb [flags]", "saber-hx ysb --input", "saber-hx ysb generate", "saber-hx help", "Exit status"} {
			assert.Contains(t, stdout, want, arg)
		}
	}

	code, stdout, stderr := cli(t)
	assert.Equal(t, 2, code, "no arguments")
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "saber-hx ysb generate", "no arguments prints the help on stderr")

	code, stdout, stderr = cli(t, "frobnicate", "--x")
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, `unknown command "frobnicate"`)
}

// --- 2. flag help ---

func TestFlagHelp(t *testing.T) {
	t.Parallel()
	// flag.PrintDefaults omits the default of zero values (false, "", 0), so
	// those flags are checked by name only.
	cases := []struct {
		args  []string
		flags map[string]string // flag -> its printed default ("" for zero values)
	}{
		{[]string{"ysb", "-h"}, map[string]string{
			"workers":          "(default ", // depends on the machine
			"pin":              "(default auto)",
			"task-size":        "(default 1048576)",
			"buffer-size":      "",
			"bundle-size":      "(default 16777216)",
			"ingest":           `(default "auto")`,
			"duration":         "(default 30s)",
			"json":             "",
			"input":            "",
			"campaigns":        "",
			"output":           `(default "-")`,
			"num-campaigns":    "(default 100)",
			"ads-per-campaign": "(default 10)",
		}},
		{[]string{"ysb", "generate", "-h"}, map[string]string{
			"tuples":           "",
			"out":              "",
			"campaigns":        "",
			"num-campaigns":    "(default 100)",
			"ads-per-campaign": "(default 10)",
		}},
	}
	for _, tc := range cases {
		for _, h := range []string{"-h", "--help"} {
			args := append(append([]string{}, tc.args[:len(tc.args)-1]...), h)
			name := strings.Join(args, " ")
			t.Run(name, func(t *testing.T) {
				code, stdout, stderr := cli(t, args...)
				assert.Equal(t, 0, code)
				assert.Empty(t, stderr, "help asked for is output, not an error")
				for flagName, def := range tc.flags {
					// Each flag's entry runs from "  -name" to the next entry.
					_, entry, found := strings.Cut(stdout, "\n  -"+flagName+" ")
					if !found {
						_, entry, found = strings.Cut(stdout, "\n  -"+flagName+"\n")
					}
					if !assert.True(t, found, "flag --%s not listed in:\n%s", flagName, stdout) {
						continue
					}
					if i := strings.Index(entry, "\n  -"); i >= 0 {
						entry = entry[:i]
					}
					if def != "" {
						assert.Contains(t, entry, def, "default of --%s", flagName)
					}
				}
			})
		}
	}
}

// --- 3. usage errors ---

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown flag", []string{"ysb", "--bogus"}, []string{"flag provided but not defined", "bogus"}},
		{"unknown generate flag", []string{"ysb", "generate", "--bogus"}, []string{"flag provided but not defined", "bogus"}},
		{"bad int", []string{"ysb", "--workers", "two"}, []string{"workers"}},
		{"workers 0", []string{"ysb", "--workers", "0"}, []string{"workers 0"}},
		{"workers negative", []string{"ysb", "--workers", "-3"}, []string{"workers -3"}},
		{"task size not a tuple multiple", []string{"ysb", "--task-size", "100"}, []string{"task size 100", "multiple", "128"}},
		{"task size 0", []string{"ysb", "--task-size", "0"}, []string{"--task-size 0: must be a positive multiple of the tuple size"}},
		{"buffer not a power of two", []string{"ysb", "--buffer-size", "1000"}, []string{"buffer size 1000", "power of two"}},
		{"buffer under two tasks", []string{"ysb", "--task-size", "4096", "--buffer-size", "4096"}, []string{"buffer size 4096", "two tasks"}},
		{"duration 0", []string{"ysb", "--duration", "0s"}, []string{"duration 0s", "positive"}},
		{"duration negative", []string{"ysb", "--duration", "-1s"}, []string{"duration -1s", "positive"}},
		{"bundle under a tuple", []string{"ysb", "--bundle-size", "64"}, []string{"--bundle-size 64"}},
		{"bad ingest", []string{"ysb", "--ingest", "socket"}, []string{`ingest "socket"`, "auto, producer, workers, shared"}},
		{"bad pin", []string{"ysb", "--pin=sometimes"}, []string{`"sometimes"`, "-pin", "true, false or auto"}},
		{"no campaigns", []string{"ysb", "--num-campaigns", "0"}, []string{"campaigns 0: need at least 1"}},
		{"input without campaigns", []string{"ysb", "--input", filepath.Join(dir, "e.bin")}, []string{"--input", "--campaigns"}},
		{"campaigns without input", []string{"ysb", "--campaigns", filepath.Join(dir, "c.csv")}, []string{"--input", "--campaigns"}},
		{"file mode with bad task size", []string{"ysb", "--input", "e", "--campaigns", "c", "--task-size", "100"}, []string{"task size 100"}},
		{"generate without tuples", []string{"ysb", "generate", "--out", filepath.Join(dir, "e.bin"), "--campaigns", filepath.Join(dir, "c.csv")}, []string{"--tuples"}},
		{"generate zero tuples", []string{"ysb", "generate", "--tuples", "0", "--out", filepath.Join(dir, "e.bin"), "--campaigns", filepath.Join(dir, "c.csv")}, []string{"--tuples"}},
		{"generate without out", []string{"ysb", "generate", "--tuples", "10", "--campaigns", filepath.Join(dir, "c.csv")}, []string{"--out"}},
		{"generate without campaigns", []string{"ysb", "generate", "--tuples", "10", "--out", filepath.Join(dir, "e.bin")}, []string{"--campaigns"}},
		{"generate bad ads per campaign", []string{"ysb", "generate", "--tuples", "10", "--out", filepath.Join(dir, "e.bin"), "--campaigns", filepath.Join(dir, "c.csv"), "--ads-per-campaign", "0"}, []string{"ads per campaign 0: need at least 1"}},
		{"stray argument", []string{"ysb", "--workers", "2", "extra"}, []string{`unexpected argument "extra"`}},
		{"stray argument after generate", []string{"ysb", "generate", "--tuples", "10", "--out", filepath.Join(dir, "e.bin"), "--campaigns", filepath.Join(dir, "c.csv"), "extra"}, []string{`unexpected argument "extra"`}},
		{"generate not first", []string{"ysb", "--workers", "2", "generate"}, []string{`unexpected argument "generate"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := cli(t, tc.args...)
			assert.Equal(t, 2, code, "stderr: %s", stderr)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, "saber-hx: ", "the error is reported with the program name")
			for _, w := range tc.want {
				assert.Contains(t, stderr, w)
			}
		})
	}
	// None of the refused generate commands wrote anything.
	assertDirHolds(t, dir)
}

// --- 4. benchmark ---

func TestBenchmarkJSON(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := cli(t, "ysb", "--duration", "150ms", "--warmup", "50ms", "--workers", workers, "--task-size", "65536", "--buffer-size", "1048576", "--bundle-size", "1048576", "--json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	s, m := parseSummary(t, stdout)
	for _, k := range []string{"mode", "tuples", "bytes", "seconds", "tuples_per_s", "mb_per_s", "workers", "pinned_cpus", "task_size", "buffer_size",
		"tasks", "windows", "rows", "filtered_tuples", "unmatched_tuples", "late_tuples", "counted_tuples", "validated", "serial_fraction"} {
		assert.Contains(t, m, k)
	}
	assert.GreaterOrEqual(t, m["serial_fraction"], 0.0)
	assert.LessOrEqual(t, m["serial_fraction"], 1.0)
	assert.Equal(t, "benchmark", s.Mode)
	assert.True(t, s.Validated)
	assert.Equal(t, workers, strconv.Itoa(s.Workers))
	assert.Equal(t, 65536, s.TaskSize)
	assert.Positive(t, s.Tuples)
	assert.Positive(t, s.Seconds)
	assert.Positive(t, m["tuples_per_s"])
	assert.Equal(t, s.Tuples, s.Filtered+s.Unmatched+s.Late+s.Counted, "every tuple classified once")
	assert.Zero(t, s.Unmatched, "generated ads are all in the table")
	assert.Zero(t, s.Late, "generated stream is in order")
	assert.Equal(t, 0.0, m["unmatched_tuples"])
	// Views are every third tuple.
	assert.InDelta(t, float64(s.Tuples)/3, float64(s.Counted), 1)
	if s.Windows > 0 {
		assert.Positive(t, s.Rows)
	}
	assert.NotContains(t, m, "output", "no output file in benchmark mode")
	assert.Equal(t, map[bool]string{true: "workers", false: "shared"}[len(cpu.AllowedCPUs()) <= 2], m["ingest"], "auto with %s workers", workers)
}

// TestBenchmarkIngest: both ingestion modes run validated, and the summary
// says which ran.
func TestBenchmarkIngest(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"producer", "workers", "shared"} {
		code, stdout, stderr := cli(t, "ysb", "--duration", "100ms", "--warmup", "0s", "--workers", "2", "--task-size", "65536",
			"--buffer-size", "1048576", "--bundle-size", "1048576", "--ingest", mode, "--json")
		require.Equal(t, 0, code, "stderr: %s", stderr)
		s, m := parseSummary(t, stdout)
		assert.True(t, s.Validated, mode)
		assert.Positive(t, s.Tuples, mode)
		assert.Equal(t, mode, m["ingest"])
	}
}

func TestBenchmarkHuman(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := cli(t, "ysb", "--duration", "100ms", "--warmup", "50ms", "--workers", workers, "--task-size", "65536", "--buffer-size", "1048576",
		"--bundle-size", "1048576", "--num-campaigns", "7", "--ads-per-campaign", "3", "--pin=false")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stdout, "ysb benchmark: ")
	assert.Contains(t, stdout, "validated: true")
	assert.Contains(t, stdout, "workers "+workers+" ")
	assert.NotContains(t, stdout, "{", "no JSON without --json")
}

// --- 5. file mode round trip ---

func TestFileModeRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Two windows of 10 s (10 tuples a ms), 15 MB: several times the
	// default ring. (250,000 tuples, a third window, cost each of the six
	// runs and the reference twice the work for nothing more.)
	const n = 120000
	events, campaigns := generate(t, dir, n)

	fi, err := os.Stat(events)
	require.NoError(t, err)
	assert.Equal(t, int64(n*ysb.TupleSize), fi.Size())
	c, err := ysb.LoadCampaigns(campaigns)
	require.NoError(t, err)
	assert.Len(t, c.AdIDs, 1000)

	want, counts := ysbReference(t, events, campaigns)
	require.NotEmpty(t, want)
	require.Equal(t, uint64(n), counts.Tuples)

	out := filepath.Join(dir, "out.csv")
	code, stdout, stderr := cli(t, "ysb", "--input", events, "--campaigns", campaigns, "--output", out, "--workers", workers, "--task-size", "12800", "--json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assertRowsEqual(t, want, readResults(t, out))

	s, _ := parseSummary(t, stdout)
	assert.Equal(t, "file", s.Mode)
	assert.Equal(t, out, s.Output)
	assert.Equal(t, uint64(n), s.Tuples)
	assert.Equal(t, counts.Filtered, s.Filtered)
	assert.Equal(t, counts.Unmatched, s.Unmatched)
	assert.Equal(t, counts.Late, s.Late)
	assert.Equal(t, counts.Counted, s.Counted)
	assert.Equal(t, uint64(len(want)), s.Rows)
	assert.False(t, s.Validated, "file mode is checked against the reference, not validated")
	assertDirHolds(t, dir, "events.bin", "campaigns.csv", "out.csv")

	fileCSV, err := os.ReadFile(out)
	require.NoError(t, err)

	t.Run("stdout", func(t *testing.T) {
		code, stdout, stderr := cli(t, "ysb", "--input", events, "--campaigns", campaigns, "--output", "-", "--workers", workers, "--task-size", "12800")
		require.Equal(t, 0, code, "stderr: %s", stderr)
		assert.Equal(t, string(fileCSV), stdout, "stdout holds exactly the CSV")
		assert.Contains(t, stderr, fmt.Sprintf("ysb file: %d tuples", n), "the human summary goes to stderr")
		assert.Contains(t, stderr, "unmatched")
	})
	t.Run("default output is stdout", func(t *testing.T) {
		code, stdout, stderr := cli(t, "ysb", "--input", events, "--campaigns", campaigns, "--workers", "1", "--task-size", "4096", "--buffer-size", "65536")
		require.Equal(t, 0, code, "stderr: %s", stderr)
		assert.Equal(t, string(fileCSV), stdout)
	})
	t.Run("stdout with json", func(t *testing.T) {
		code, stdout, stderr := cli(t, "ysb", "--input", events, "--campaigns", campaigns, "--output", "-", "--workers", workers, "--task-size", "12800", "--json")
		require.Equal(t, 0, code, "stderr: %s", stderr)
		assert.Equal(t, string(fileCSV), stdout, "stdout holds the CSV alone")
		s, _ := parseSummary(t, stderr)
		assert.Equal(t, "-", s.Output)
		assert.Equal(t, uint64(n), s.Tuples)
		assert.Equal(t, counts.Late, s.Late, "the summary on stderr shows every count")
		assert.Equal(t, counts.Unmatched, s.Unmatched)
	})
	t.Run("human summary", func(t *testing.T) {
		out2 := filepath.Join(dir, "out2.csv")
		code, stdout, stderr := cli(t, "ysb", "--input", events, "--campaigns", campaigns, "--output", out2, "--workers", workers, "--task-size", "12800")
		require.Equal(t, 0, code, "stderr: %s", stderr)
		assert.Contains(t, stdout, fmt.Sprintf("ysb file: %d tuples", n))
		assert.NotContains(t, stdout, "validated")
		b, err := os.ReadFile(out2)
		require.NoError(t, err)
		assert.Equal(t, string(fileCSV), string(b))
		fi, err := os.Stat(out2)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	})
	t.Run("overwrites existing output", func(t *testing.T) {
		out3 := filepath.Join(dir, "out3.csv")
		require.NoError(t, os.WriteFile(out3, []byte("old contents that are longer than nothing\n"), 0o644))
		code, _, stderr := cli(t, "ysb", "--input", events, "--campaigns", campaigns, "--output", out3, "--workers", workers, "--task-size", "12800")
		require.Equal(t, 0, code, "stderr: %s", stderr)
		b, err := os.ReadFile(out3)
		require.NoError(t, err)
		assert.Equal(t, string(fileCSV), string(b))
	})
}

func TestGenerateMatchesGenerator(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n = 3001
	events, campaigns := generate(t, dir, n, "--num-campaigns", "7", "--ads-per-campaign", "3")

	cfg := ysb.DefaultGenConfig()
	cfg.Campaigns, cfg.AdsPerCampaign = 7, 3
	g, err := ysb.NewGenerator(cfg)
	require.NoError(t, err)
	want := make([]byte, n*ysb.TupleSize)
	g.Fill(want, 0)
	got, err := os.ReadFile(events)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, got), "events file equals Generator.Fill")

	c, err := ysb.LoadCampaigns(campaigns)
	require.NoError(t, err)
	assert.Equal(t, g.Campaigns(), c)

	code, stdout, stderr := cli(t, "ysb", "generate", "--tuples", "5", "--out", events, "--campaigns", campaigns)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout, "--out may be stdout: the message goes to stderr")
	assert.Contains(t, stderr, "wrote 5 tuples")
	fi, err := os.Stat(events)
	require.NoError(t, err)
	assert.Equal(t, int64(5*ysb.TupleSize), fi.Size(), "generate replaces an existing file")
	assertDirHolds(t, dir, "events.bin", "campaigns.csv")
}

func TestGenerateIntoMissingDirFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope")
	code, stdout, stderr := cli(t, "ysb", "generate", "--tuples", "10", "--out", filepath.Join(missing, "e.bin"), "--campaigns", filepath.Join(dir, "c.csv"))
	assert.NotEqual(t, 0, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, missing)
	assertDirHolds(t, dir) // the campaigns file was not written either
}

func TestFileModeEmptyEvents(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, campaigns := generate(t, dir, 10)
	events := filepath.Join(dir, "empty.bin")
	require.NoError(t, os.WriteFile(events, nil, 0o644))
	out := filepath.Join(dir, "out.csv")
	code, stdout, stderr := cli(t, "ysb", "--input", events, "--campaigns", campaigns, "--output", out, "--workers", workers, "--task-size", "4096", "--json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, ysb.ResultsHeader+"\n", string(b))
	s, _ := parseSummary(t, stdout)
	assert.Zero(t, s.Tuples)
	assert.Zero(t, s.Rows)
}

// --- 6. bad input ---

func TestFileModeBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	events, campaigns := generate(t, dir, 5000)
	eventsBytes, err := os.ReadFile(events)
	require.NoError(t, err)
	campBytes, err := os.ReadFile(campaigns)
	require.NoError(t, err)
	campLines := strings.SplitAfter(string(campBytes), "\n")
	require.Greater(t, len(campLines), 5)
	ad2, _, _ := strings.Cut(campLines[1], ",") // ad_id on line 2

	write := func(t *testing.T, name string, b []byte) string {
		p := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	replaceLine := func(n int, s string) []byte { // n is 1-based
		l := append([]string{}, campLines...)
		l[n-1] = s
		return []byte(strings.Join(l, ""))
	}

	cases := []struct {
		name              string
		events, campaigns func(t *testing.T) string
		want              []string
	}{
		{"events trailing bytes",
			func(t *testing.T) string {
				return write(t, "e.bin", append(append([]byte{}, eventsBytes...), 1, 2, 3, 4, 5))
			},
			func(*testing.T) string { return campaigns },
			[]string{"e.bin", "5 trailing bytes"}},
		{"events shorter than a tuple",
			func(t *testing.T) string { return write(t, "e.bin", eventsBytes[:100]) },
			func(*testing.T) string { return campaigns },
			[]string{"e.bin", "100 trailing bytes"}},
		{"bad uuid on line 3",
			func(*testing.T) string { return events },
			func(t *testing.T) string {
				return write(t, "c.csv", replaceLine(3, "not-a-uuid,"+strings.SplitN(campLines[2], ",", 2)[1]))
			},
			[]string{"c.csv", "line 3", "ad_id", "not-a-uuid"}},
		{"bad campaign uuid on line 4",
			func(*testing.T) string { return events },
			func(t *testing.T) string {
				ad, _, _ := strings.Cut(campLines[3], ",")
				return write(t, "c.csv", replaceLine(4, ad+",0123\n"))
			},
			[]string{"c.csv", "line 4", "campaign_id"}},
		{"three fields on line 5",
			func(*testing.T) string { return events },
			func(t *testing.T) string {
				return write(t, "c.csv", replaceLine(5, strings.TrimSuffix(campLines[4], "\n")+",x\n"))
			},
			[]string{"c.csv", "line 5"}},
		{"missing header",
			func(*testing.T) string { return events },
			func(t *testing.T) string { return write(t, "c.csv", []byte(strings.Join(campLines[1:], ""))) },
			[]string{"c.csv", "line 1", "header"}},
		{"empty campaigns file",
			func(*testing.T) string { return events },
			func(t *testing.T) string { return write(t, "c.csv", nil) },
			[]string{"c.csv", "header"}},
		{"duplicate ad_id",
			func(*testing.T) string { return events },
			func(t *testing.T) string {
				return write(t, "c.csv", append(append([]byte{}, campBytes...), campLines[1]...))
			},
			[]string{"c.csv", "duplicate", ad2, fmt.Sprintf("line %d", len(campLines)), "line 2"}},
		{"empty line before data",
			func(*testing.T) string { return events },
			func(t *testing.T) string { return write(t, "c.csv", replaceLine(6, "\n")) },
			[]string{"c.csv", "line 6", "empty line"}},
		{"missing events file",
			func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope.bin") },
			func(*testing.T) string { return campaigns },
			[]string{"nope.bin", "no such file"}},
		{"missing campaigns file",
			func(*testing.T) string { return events },
			func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope.csv") },
			[]string{"nope.csv", "no such file"}},
		{"events is a directory",
			func(t *testing.T) string { return t.TempDir() },
			func(*testing.T) string { return campaigns },
			[]string{"is a directory"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev, camp := tc.events(t), tc.campaigns(t)
			for _, preexisting := range []bool{false, true} {
				outDir := t.TempDir()
				out := filepath.Join(outDir, "out.csv")
				old := []byte("precious,old\nresults\n")
				if preexisting {
					require.NoError(t, os.WriteFile(out, old, 0o600))
				}
				code, stdout, stderr := cli(t, "ysb", "--input", ev, "--campaigns", camp, "--output", out, "--workers", workers, "--task-size", "4096", "--json")
				assert.Equal(t, 2, code, "stderr: %s", stderr)
				assert.Empty(t, stdout, "no summary on failure")
				assert.Contains(t, stderr, "saber-hx: ")
				for _, w := range tc.want {
					assert.Contains(t, stderr, w)
				}
				if preexisting {
					b, err := os.ReadFile(out)
					require.NoError(t, err)
					assert.Equal(t, old, b, "an existing output stays byte-identical")
					fi, err := os.Stat(out)
					require.NoError(t, err)
					assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
					assertDirHolds(t, outDir, "out.csv")
				} else {
					assert.NoFileExists(t, out)
					assertDirHolds(t, outDir)
				}
			}
			// With --output - nothing reaches stdout either.
			code, stdout, _ := cli(t, "ysb", "--input", ev, "--campaigns", camp, "--workers", workers, "--task-size", "4096")
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
		})
	}
}

func TestFileModeOutputDirMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	events, campaigns := generate(t, dir, 1000)
	out := filepath.Join(dir, "nope", "out.csv")
	code, stdout, stderr := cli(t, "ysb", "--input", events, "--campaigns", campaigns, "--output", out, "--workers", workers, "--task-size", "4096", "--json")
	assert.NotEqual(t, 0, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, out)
	assert.NoDirExists(t, filepath.Join(dir, "nope"))
}

// --- 7, 8. hand-built events ---

// handFiles writes events and gen's campaigns table into a temp dir.
func handFiles(t *testing.T, events []byte, c *ysb.Campaigns) (eventsPath, campaignsPath string) {
	t.Helper()
	dir := t.TempDir()
	eventsPath, campaignsPath = filepath.Join(dir, "events.bin"), filepath.Join(dir, "campaigns.csv")
	require.NoError(t, os.WriteFile(eventsPath, events, 0o644))
	var b bytes.Buffer
	require.NoError(t, c.WriteCSV(&b))
	require.NoError(t, os.WriteFile(campaignsPath, b.Bytes(), 0o644))
	return eventsPath, campaignsPath
}

func tupleAt(b []byte, k int) []byte { return b[k*ysb.TupleSize : (k+1)*ysb.TupleSize] }

func isView(p []byte) bool {
	return int32(binary.LittleEndian.Uint32(p[ysb.OffEventType:])) == ysb.EventView
}

func setTime(p []byte, ts int64) { binary.LittleEndian.PutUint64(p[ysb.OffEventTime:], uint64(ts)) }

// runHand runs the CLI over hand-built files with --json --output and checks
// the rows and every counter against ysb.Reference; it returns the summary
// and the reference counts.
func runHand(t *testing.T, events []byte, c *ysb.Campaigns, engineArgs ...string) (summary, ysb.Counts) {
	t.Helper()
	want, counts, err := ysb.Reference(events, c, ysb.WindowMs)
	require.NoError(t, err)
	ev, camp := handFiles(t, events, c)
	out := filepath.Join(t.TempDir(), "out.csv")
	args := append([]string{"ysb", "--input", ev, "--campaigns", camp, "--output", out, "--json"}, engineArgs...)
	code, stdout, stderr := cli(t, args...)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assertRowsEqual(t, want, readResults(t, out))
	s, _ := parseSummary(t, stdout)
	assert.Equal(t, counts.Tuples, s.Tuples, "tuples")
	assert.Equal(t, counts.Filtered, s.Filtered, "filtered")
	assert.Equal(t, counts.Unmatched, s.Unmatched, "unmatched")
	assert.Equal(t, counts.Late, s.Late, "late")
	assert.Equal(t, counts.Counted, s.Counted, "counted")
	assert.Equal(t, uint64(len(want)), s.Rows, "rows")
	return s, counts
}

func TestFileModeUnmatchedAds(t *testing.T) {
	t.Parallel()
	cfg := ysb.DefaultGenConfig()
	cfg.TuplesPerMs = 1 // 20000 tuples span two windows
	g, err := ysb.NewGenerator(cfg)
	require.NoError(t, err)
	const n = 20000
	events := make([]byte, n*ysb.TupleSize)
	g.Fill(events, 0)
	unknown, err := ysb.ParseUUID("eeeeeeee-0000-4000-8000-123456789abc")
	require.NoError(t, err)
	require.NotContains(t, g.Campaigns().AdIDs, unknown)

	changedViews, changedOthers := 0, 0
	for k := 0; k < n; k += 7 { // every 7th tuple: views and non-views
		p := tupleAt(events, k)
		copy(p[ysb.OffAdID:ysb.OffAdID+16], unknown[:])
		if isView(p) {
			changedViews++
		} else {
			changedOthers++
		}
	}
	require.Positive(t, changedViews)
	require.Positive(t, changedOthers)

	for _, engineArgs := range [][]string{
		{"--workers", workers, "--task-size", "4096", "--buffer-size", "65536"},
		{"--workers", "1", "--task-size", "12800", "--buffer-size", "32768"},
	} {
		t.Run(strings.Join(engineArgs, " "), func(t *testing.T) {
			s, counts := runHand(t, events, g.Campaigns(), engineArgs...)
			assert.Equal(t, uint64(changedViews), counts.Unmatched, "reference sanity")
			assert.Equal(t, uint64(changedViews), s.Unmatched, "only views are joined")
			assert.Zero(t, s.Late)
		})
	}
}

func TestFileModeLateAndOutOfOrder(t *testing.T) {
	t.Parallel()
	cfg := ysb.DefaultGenConfig()
	cfg.TuplesPerMs = 1 // event time = tuple index: 40000 tuples, 4 windows
	g, err := ysb.NewGenerator(cfg)
	require.NoError(t, err)
	const n = 40000
	base := make([]byte, n*ysb.TupleSize)
	g.Fill(base, 0)
	unknown, err := ysb.ParseUUID("eeeeeeee-0000-4000-8000-123456789abc")
	require.NoError(t, err)

	// nextView returns the first view at or after k.
	nextView := func(b []byte, k int) int {
		for ; !isView(tupleAt(b, k)); k++ {
		}
		return k
	}
	nextOther := func(b []byte, k int) int {
		for ; isView(tupleAt(b, k)); k++ {
		}
		return k
	}

	cases := []struct {
		name   string
		edit   func(b []byte)
		late   bool // the edit must yield late tuples
		counts func(t *testing.T, c ysb.Counts)
	}{
		{"in order", func([]byte) {}, false, nil},
		{"late view in closed window after a later one", func(b []byte) {
			// At time ~25000 (window [20000,30000)) a view of time 5000:
			// window [0,10000) closed on arrival.
			setTime(tupleAt(b, nextView(b, 25000)), 5000)
		}, true, nil},
		{"late views at task boundaries", func(b []byte) {
			// 4096-byte tasks hold 32 tuples: first, last and middle of tasks.
			for _, k := range []int{12000, 12031, 12032, 12063, 12064, 12100, 30720, 30751, 39999} {
				if isView(tupleAt(b, k)) {
					setTime(tupleAt(b, k), int64(k)-10000-int64(k%10000)+3) // in the window before
				}
			}
		}, true, nil},
		{"out of order within the open window", func(b []byte) {
			// Views going back in time but staying in [20000,30000): counted.
			for _, k := range []int{25000, 25100, 29990, 20100} {
				setTime(tupleAt(b, nextView(b, k)), 20000+int64(k%7))
			}
			// And one just at the window start, after time 29999.
			setTime(tupleAt(b, nextView(b, 29999)), 20000)
		}, false, func(t *testing.T, c ysb.Counts) { assert.Zero(t, c.Late) }},
		{"boundary: watermark equal to window end is late", func(b []byte) {
			// Tuple 10000 has time 10000 = end of [0,10000); the next view
			// with time 9999 is late.
			setTime(tupleAt(b, nextView(b, 10001)), 9999)
			// A view at 19999 after the watermark 19998 is counted.
			k := nextView(b, 19990)
			setTime(tupleAt(b, k), 19990)
			setTime(tupleAt(b, k+1), 19999)
		}, true, nil},
		{"a far jump in time closes windows", func(b []byte) {
			// A click at time 35000 in the middle of window [10000,20000):
			// every view after it up to time 30000 is late.
			setTime(tupleAt(b, nextOther(b, 15000)), 35000)
		}, true, func(t *testing.T, c ysb.Counts) { assert.Greater(t, c.Late, uint64(1000)) }},
		{"late non-views and unmatched are not late", func(b []byte) {
			k := nextOther(b, 25000)
			setTime(tupleAt(b, k), 100) // filtered
			k = nextView(b, 25010)
			setTime(tupleAt(b, k), 200)
			copy(tupleAt(b, k)[ysb.OffAdID:], unknown[:]) // unmatched: the join comes first
			setTime(tupleAt(b, nextView(b, 25020)), 300)  // late
		}, true, func(t *testing.T, c ysb.Counts) {
			assert.Equal(t, uint64(1), c.Late)
			assert.Equal(t, uint64(1), c.Unmatched)
		}},
		{"negative event times", func(b []byte) {
			// Shift everything back by 15000 ms: windows start at -20000,
			// -10000, 0, 10000 (floor, not truncation), and one late view.
			for k := range n {
				setTime(tupleAt(b, k), int64(k)-15000)
			}
			setTime(tupleAt(b, nextView(b, 6000)), -12000) // window [-20000,-10000) closed at -9000
			setTime(tupleAt(b, nextView(b, 14000)), -1)    // window [-10000,0) still open at -1000: counted
		}, true, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := append([]byte{}, base...)
			tc.edit(b)
			for _, engineArgs := range [][]string{
				{"--workers", workers, "--task-size", "4096", "--buffer-size", "65536"},
				{"--workers", workers, "--task-size", "12800", "--buffer-size", "32768"},
			} {
				s, counts := runHand(t, b, g.Campaigns(), engineArgs...)
				if tc.late {
					assert.Positive(t, counts.Late, "the case must produce late tuples")
				}
				assert.Equal(t, counts.Late, s.Late)
				if tc.counts != nil {
					tc.counts(t, counts)
				}
			}
		})
	}
}

// TestExitAfterAnInterruptedRun: an interruption the summary reported
// ends with its exit status and no line; a close that failed after it
// (a profile not written) is printed, the status still the signal's.
func TestExitAfterAnInterruptedRun(t *testing.T) {
	var stderr strings.Builder
	err := error(signals.Interrupted{Signal: syscall.SIGINT, Summarized: true})
	assert.Equal(t, 130, exitCode(err, &stderr))
	assert.Empty(t, stderr.String())

	closeInto(&err, func() error { return errors.New("--cpuprofile: disk full") })
	assert.Equal(t, 130, exitCode(err, &stderr))
	assert.Equal(t, "saber-hx: interrupted by SIGINT\n--cpuprofile: disk full\n", stderr.String())

	stderr.Reset()
	assert.Equal(t, 143, exitCode(signals.Interrupted{Signal: syscall.SIGTERM}, &stderr), "not summarized")
	assert.Equal(t, "saber-hx: interrupted by SIGTERM\n", stderr.String())
}
