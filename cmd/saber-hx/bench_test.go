package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/workloads"
)

// benchQueryOut and benchOut are the subset of the bench --json object that
// the tests read.
type benchQueryOut struct {
	Name      string `json:"name"`
	Tuples    uint64 `json:"tuples"`
	Windows   uint64 `json:"windows"`
	Rows      uint64 `json:"rows"`
	Filtered  uint64 `json:"filtered_tuples"`
	Late      uint64 `json:"late_tuples"`
	Counted   uint64 `json:"counted_tuples"`
	Validated bool   `json:"validated"`
	Mismatch  string `json:"mismatch"`
}

type benchOut struct {
	Tuples     uint64          `json:"tuples"`
	Seconds    float64         `json:"seconds"`
	TuplesPerS float64         `json:"tuples_per_s"`
	Windows    uint64          `json:"windows"`
	Rows       uint64          `json:"rows"`
	Validated  bool            `json:"validated"`
	Ingest     string          `json:"ingest"`
	HeapAlloc  uint64          `json:"heap_alloc_bytes"`
	WarmupS    *float64        `json:"warmup_s"`
	Total      *uint64         `json:"total_tuples"`
	Queries    []benchQueryOut `json:"queries"`
}

// benchSmall are engine flags that keep bench runs small and cut the input
// into several tasks. 16384 is a multiple of every workload's tuple size
// (32 and 64 bytes).
var benchSmall = []string{"--workers", workers, "--task-size", "16384", "--buffer-size", "1048576", "--bundle-size", "1048576"}

// benchJSON runs bench with --json and decodes the last stdout line strictly.
func benchJSON(t *testing.T, args ...string) (benchOut, map[string]any) {
	t.Helper()
	code, stdout, stderr := cli(t, append([]string{"bench"}, args...)...)
	require.Equal(t, 0, code, "args %q\nstdout: %s\nstderr: %s", args, stdout, stderr)
	line := lastLine(stdout)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(line), &m), "last stdout line is not one JSON object: %q", line)
	var s benchOut
	require.NoError(t, json.Unmarshal([]byte(line), &s))
	return s, m
}

func TestBenchList(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := cli(t, "bench", "--list")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	names := workloads.Names()
	require.Len(t, lines, len(names), "one line per workload:\n%s", stdout)
	for i, name := range names {
		fields := strings.Fields(lines[i])
		require.NotEmpty(t, fields, "line %d", i)
		assert.Equal(t, name, fields[0], "line %d names the workload", i)
		assert.Greater(t, len(fields), 2, "line %d has a description: %q", i, lines[i])
	}
}

func TestBenchUsageErrors(t *testing.T) {
	t.Parallel()
	validNames := workloads.Names()
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown workload", []string{"nosuch"}, append([]string{`unknown workload "nosuch"`}, validNames...)},
		{"unknown workload in a list", []string{"nosuch,proj"}, append([]string{`"nosuch"`}, validNames...)},
		{"agg median", []string{"agg", "--agg", "median"}, []string{"median", "count", "sum", "avg", "min", "max"}},
		{"window size 0", []string{"groupby", "--window-type", "range", "--window-size", "0"}, []string{"size 0", "positive"}},
		{"row window size 0", []string{"groupby", "--window-type", "row", "--window-size", "0", "--window-slide", "1"}, []string{"size 0", "positive"}},
		{"slide over size", []string{"groupby", "--window-size", "100", "--window-slide", "200"}, []string{"slide 200 larger than size 100", "0 < slide <= size"}},
		{"window type tumbling", []string{"groupby", "--window-type", "tumbling", "--window-size", "100"}, []string{`"tumbling"`, "range", "row"}},
		{"row window as a duration", []string{"groupby", "--window-type", "row", "--window-size", "10s"}, []string{"row window are counts of tuples, not durations"}},
		{"window size not whole ms", []string{"groupby", "--window-size", "1.5ms"}, []string{"window-size", "not a whole number of milliseconds"}},
		{"window type tumbling alone", []string{"groupby", "--window-type", "tumbling"}, []string{`"tumbling"`, "range", "row"}},
		{"window for proj", []string{"proj", "--window-size", "100"}, []string{"do not apply to proj"}},
		{"window for select", []string{"select", "--window-type", "row", "--window-size", "10"}, []string{"do not apply to select"}},
		{"window for select in a list", []string{"select,groupby", "--window-size", "10"}, []string{"do not apply to select"}},
		{"selectivity 1.5", []string{"select", "--selectivity", "1.5"}, []string{"selectivity 1.5", "[0, 1]"}},
		{"selectivity negative", []string{"select", "--selectivity", "-0.1"}, []string{"selectivity -0.1", "[0, 1]"}},
		{"predicates 0", []string{"select", "--predicates", "0"}, []string{"predicates 0", fmt.Sprintf("[1, %d]", workloads.MaxPredicates)}},
		{"groups 0", []string{"groupby", "--groups", "0"}, []string{"groups 0", fmt.Sprintf("[1, %d]", workloads.MaxGroups)}},
		{"duration 0", []string{"proj", "--duration", "0s"}, []string{"duration 0s", "positive"}},
		{"validate tuples 0", []string{"proj", "--validate", "--validate-tuples", "0"}, []string{"validate-tuples 0", "positive"}},
		{"warmup negative", []string{"proj", "--warmup", "-1s"}, []string{"--warmup -1s: must not be negative"}},
		{"bundle size negative", []string{"proj", "--bundle-size", "-1"}, []string{"--bundle-size -1: must not be negative"}},
		// Flags that do nothing for the workloads named (they were accepted
		// silently; proj --selectivity 2 with a value select refuses).
		{"predicates for proj", []string{"proj", "--predicates", "5"}, []string{"bench: --predicates applies to select, not to proj"}},
		{"selectivity for proj", []string{"proj", "--selectivity", "2"}, []string{"bench: --selectivity applies to select, not to proj"}},
		{"groups for proj", []string{"proj", "--groups", "5"}, []string{"bench: --groups applies to groupby, not to proj"}},
		{"agg for groupby", []string{"groupby", "--agg", "max"}, []string{"bench: --agg applies to agg, not to groupby"}},
		{"join predicates in a list", []string{"proj,sg3", "--join-predicates", "2"}, []string{"bench: --join-predicates applies to join, not to proj,sg3"}},
		{"validate tuples without validate", []string{"proj", "--validate-tuples", "10"}, []string{"bench: --validate-tuples applies to --validate, not to a run without it"}},
		{"no workload", []string{"--duration", "1s"}, append([]string{"name a workload", "--list"}, validNames...)},
		{"nothing at all", nil, append([]string{"name a workload"}, validNames...)},
		{"stray argument", []string{"proj", "--duration", "1s", "extra"}, []string{`unexpected argument "extra"`}},
		{"two workload arguments", []string{"proj", "select"}, []string{`unexpected argument "select"`}},
		{"unknown flag", []string{"proj", "--bogus"}, []string{"flag provided but not defined", "bogus"}},
		{"bad task size", []string{"proj", "--task-size", "100"}, []string{"task size 100", "32"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := cli(t, append([]string{"bench"}, tc.args...)...)
			assert.Equal(t, 2, code, "stderr: %s", stderr)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, "saber-hx: ", "the error is reported with the program name")
			for _, w := range tc.want {
				assert.Contains(t, stderr, w)
			}
		})
	}
}

func TestBenchHelp(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := cli(t, "bench", "-h")
	assert.Equal(t, 0, code)
	assert.Empty(t, stderr, "help asked for is output")
	for _, f := range []string{"-list", "-validate", "-validate-tuples", "-window-type", "-window-size", "-window-slide", "-selectivity", "-agg", "-groups", "-tuples-per-ms"} {
		assert.Contains(t, stdout, "\n  "+f, "flag %s listed", f)
	}
	for _, w := range workloads.All() {
		assert.Contains(t, stdout, fmt.Sprintf("%s %d", w.Name, w.ValidateTuples), "--validate-tuples names %s's bound", w.Name)
		for _, o := range w.Options {
			assert.Contains(t, stdout, "\n  -"+o+" ", "%s's option %s is a flag", w.Name, o)
		}
	}
}

func TestBenchSelectJSON(t *testing.T) {
	t.Parallel()
	// --validate bounds the input to --validate-tuples: the run ends at
	// 50000 tuples, long before the duration (a minute: the run shares
	// the machine with the other tests).
	s, m := benchJSON(t, "select", "--duration", "60s", "--workers", workers, "--json", "--validate", "--validate-tuples", "50000")
	for _, k := range []string{"workloads", "tuples", "seconds", "tuples_per_s", "windows", "rows", "validated", "workers", "task_size", "buffer_size", "gc_cycles", "heap_alloc_bytes", "queries"} {
		assert.Contains(t, m, k)
	}
	require.Len(t, s.Queries, 1)
	q := s.Queries[0]
	assert.NotEmpty(t, q.Name)
	assert.True(t, s.Validated, "mismatch: %s", q.Mismatch)
	assert.True(t, q.Validated)
	assert.Empty(t, q.Mismatch)
	require.Equal(t, uint64(50000), s.Tuples, "the input bounded by --validate-tuples")
	assert.Equal(t, uint64(50000), q.Tuples)
	assert.Greater(t, s.Seconds, 0.0)
	assert.Greater(t, s.TuplesPerS, 0.0)
	// Selectivity 0.5 passes exactly 500 of every aligned block of 1000
	// tuples, and 50000 is 50 such blocks.
	assert.Equal(t, uint64(25000), q.Filtered)
	assert.Equal(t, uint64(25000), q.Counted)
	assert.Equal(t, uint64(0), q.Late)
	assert.Equal(t, uint64(0), s.Windows, "a stateless query has no windows")
	assert.Equal(t, uint64(25000), s.Rows, "a stateless query's rows are its tuples out")

	// Another selectivity: exact by construction too.
	s, _ = benchJSON(t, append([]string{"select", "--json", "--validate", "--validate-tuples", "20000", "--selectivity", "0.25", "--predicates", "3"}, benchSmall...)...)
	require.Len(t, s.Queries, 1)
	assert.True(t, s.Queries[0].Validated, s.Queries[0].Mismatch)
	assert.Equal(t, uint64(15000), s.Queries[0].Filtered)
}

// TestBenchMemProfile: --memprofile writes a heap profile (gzipped
// protobuf) when the run ends, and the summary counts the measured
// interval's allocations: --validate records every output tuple, so they
// are more than nothing.
func TestBenchMemProfile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mem.prof")
	s, _ := benchJSON(t, append([]string{"select", "--json", "--validate", "--validate-tuples", "20000", "--memprofile", path}, benchSmall...)...)
	assert.Positive(t, s.HeapAlloc)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(b), 2)
	assert.Equal(t, []byte{0x1f, 0x8b}, b[:2], "not gzip")

	code, _, stderr := cli(t, "bench", "select", "--duration", "10ms", "--memprofile", filepath.Join(t.TempDir(), "no", "such", "dir"))
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "memprofile")
}

// TestBenchWarmup: with --warmup the summary's figures are those of the
// measured interval after it, and it says how many tuples the whole run
// had; an input that ends within the warm-up (--validate bounds it) is
// measured whole, and validated whole. One worker and a 1 MiB bundle: the
// figures' plumbing does not depend on how many run, two ran flat out for
// 300 ms.
func TestBenchWarmup(t *testing.T) {
	s, m := benchJSON(t, "groupby", "--warmup", "150ms", "--duration", "150ms", "--workers", "1", "--bundle-size", "1048576", "--json")
	require.NotNil(t, s.WarmupS, "%v", m)
	require.NotNil(t, s.Total)
	assert.Equal(t, 0.15, *s.WarmupS)
	assert.Positive(t, s.Tuples)
	assert.Greater(t, *s.Total, s.Tuples, "the warm-up's tuples are not measured")
	assert.InDelta(t, 0.3, s.Seconds, 0.25, "the measured interval is the duration, not the whole run")
	require.Len(t, s.Queries, 1)
	assert.Equal(t, s.Tuples, s.Queries[0].Tuples)

	s, _ = benchJSON(t, append([]string{"groupby", "--json", "--validate", "--validate-tuples", "5000", "--warmup", "1m"}, benchSmall...)...)
	assert.Nil(t, s.WarmupS, "the input ended within the warm-up")
	assert.Equal(t, uint64(5000), s.Tuples)
	assert.True(t, s.Validated)

	code, _, stderr := cli(t, "bench", "groupby", "--warmup", "-1s")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "warmup -1s")
}

func TestBenchHumanOutput(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := cli(t, append([]string{"bench", "groupby", "--validate", "--validate-tuples", "5000"}, benchSmall...)...)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stdout, "bench groupby: 5000 tuples")
	assert.Contains(t, stdout, "validated true")
}

// benchArgs are the per-workload overrides that keep a validated run quick:
// the naive reference adds every tuple to every window containing it, so
// the sliding windows of sg1, sg2 (3600 panes) and lrb1 (300 panes) are cut
// to 10 panes. The reference's cost goes with the tuples and rows: where a
// workload's windows are as many with fewer tuples (cm1's and cm2's 60 of
// 60 s sliding by 1 s, lrb1's 10), the input is that much smaller, still
// many tasks.
func benchArgs(name string) (tuples int, extra []string) {
	switch name {
	case "sg1":
		return 20000, []string{"--window-size", "10s", "--window-slide", "1s"} // durations, as ms
	case "lrb1":
		return 5000, []string{"--window-size", "10s", "--window-slide", "1s"}
	case "cm1", "cm2":
		return 5000, nil
	case "sg2", "sg3":
		// One group per plug: 2000 tuples are ~2000 rows per window, in
		// 10 windows and 4 tasks as with 8000 (sg3 runs with each
		// ingestion).
		return 2000, []string{"--window-size", "10000", "--window-slide", "1000"}
	case "join":
		// Every window joins its tuples pairwise: keep the output small
		// (4 windows of 128 tuples a side), in tasks of 64 tuples (8 a
		// side, each window across two of them; benchSmall's would hold
		// the whole input in one).
		return 512, []string{"--task-size", "2048"}
	}
	return 20000, nil
}

// TestBenchEveryWorkloadValidates runs every workload validated, with each
// way of ingesting its replayed input: the producer alone, the workers
// (each into its own buffer), and the two shared.
// TestBenchEveryWorkloadValidates: every workload validates with the
// producer's ingestion; the workers' and the shared ingestion with a
// workload of each shape (stateless, sliding aggregation, hashed groups,
// the window join's two inputs, chained queries; by default the join and
// the chain, the others in the long tests). Who copies the input does not
// depend on the query beyond those shapes (engine's tests cover the
// ingestion modes against the reference).
func TestBenchEveryWorkloadValidates(t *testing.T) {
	t.Parallel()
	every := map[string]bool{"join": true, "sg3": true}
	if testenv.Full() {
		every["select"], every["cm1"], every["sg2"] = true, true, true
	}
	for _, name := range workloads.Names() {
		for _, ingest := range []string{"producer", "workers", "shared"} {
			if ingest != "producer" && !every[name] {
				continue
			}
			t.Run(name+"/"+ingest, func(t *testing.T) { benchValidates(t, name, ingest) })
		}
	}
}

func benchValidates(t *testing.T, name, ingest string) {
	n, extra := benchArgs(name)
	args := append([]string{name, "--json", "--validate", "--validate-tuples", fmt.Sprint(n), "--duration", "60s", "--ingest", ingest}, benchSmall...)
	s, _ := benchJSON(t, append(args, extra...)...)
	require.NotEmpty(t, s.Queries)
	assert.True(t, s.Validated)
	assert.Equal(t, ingest, s.Ingest)
	for _, q := range s.Queries {
		assert.True(t, q.Validated, "%s: mismatch: %s", q.Name, q.Mismatch)
	}
	if len(s.Queries) > 1 {
		return // a composite workload: one entry per operator
	}
	q := s.Queries[0]
	assert.NotEmpty(t, q.Name)
	// A join reads --validate-tuples from each of its two inputs.
	assert.Positive(t, q.Tuples)
	assert.Zero(t, q.Tuples%uint64(n), "tuples %d: --validate-tuples %d per input", q.Tuples, n)
	assert.Equal(t, q.Tuples, q.Filtered+q.Late+q.Counted, "unmatched is 0 without a join")
	w, err := workloads.Lookup(name)
	require.NoError(t, err)
	if w.Windowed {
		assert.Positive(t, q.Windows, "a windowed workload emits windows")
		assert.GreaterOrEqual(t, q.Rows, q.Windows, "an emitted window has at least one row")
	} else {
		assert.Zero(t, q.Windows)
	}
}

func TestBenchTwoWorkloads(t *testing.T) {
	t.Parallel()
	s, _ := benchJSON(t, append([]string{"proj,groupby", "--json", "--validate", "--validate-tuples", "30000", "--duration", "60s"}, benchSmall...)...)
	require.Len(t, s.Queries, 2)
	// The stateless proj first (no windows), then groupby's windows.
	assert.Zero(t, s.Queries[0].Windows)
	assert.Positive(t, s.Queries[1].Windows)
	for _, q := range s.Queries {
		assert.True(t, q.Validated, "%s: %s", q.Name, q.Mismatch)
		assert.Equal(t, uint64(30000), q.Tuples, q.Name)
	}
	assert.True(t, s.Validated)
	assert.Equal(t, uint64(60000), s.Tuples, "the summary adds the queries up")
	assert.Equal(t, s.Queries[0].Windows+s.Queries[1].Windows, s.Windows)
	assert.Equal(t, s.Queries[0].Rows+s.Queries[1].Rows, s.Rows)
}

func TestBenchRowWindows(t *testing.T) {
	t.Parallel()
	s, _ := benchJSON(t, append([]string{"groupby", "--window-type", "row", "--window-size", "1000", "--window-slide", "250",
		"--json", "--validate", "--validate-tuples", "20000", "--duration", "60s"}, benchSmall...)...)
	require.Len(t, s.Queries, 1)
	q := s.Queries[0]
	assert.True(t, q.Validated, "mismatch: %s", q.Mismatch)
	// Positions 0..19999 lie in windows -3..79 (start w*250, size 1000),
	// every one of them non-empty; 64 groups, each in every window of 1000
	// (250 at the edges) consecutive tuples.
	assert.Equal(t, uint64(83), q.Windows)
	assert.Equal(t, uint64(20000), q.Counted)

	// The human form and the workflow of the brief: --validate without --json.
	code, stdout, stderr := cli(t, append([]string{"bench", "groupby", "--window-type", "row", "--window-size", "1000", "--window-slide", "250",
		"--validate", "--validate-tuples", "20000"}, benchSmall...)...)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stdout, "validated true")
}

func TestBenchWindowOverrides(t *testing.T) {
	t.Parallel()
	// A tumbling range window given by its size alone, and the workload list
	// after the flags.
	s, _ := benchJSON(t, append([]string{"--window-size", "5", "--window-slide", "5", "--json", "--validate", "--validate-tuples", "20000", "--duration", "60s"}, append(benchSmall, "agg")...)...)
	require.Len(t, s.Queries, 1)
	q := s.Queries[0]
	assert.True(t, q.Validated, "mismatch: %s", q.Mismatch)
	// 20000 tuples at 1000 per ms: 20 ms, 4 windows of 5 ms.
	assert.Equal(t, uint64(4), q.Windows)

	for _, agg := range []string{"count", "sum", "min", "max"} {
		s, _ := benchJSON(t, append([]string{"agg", "--agg", agg, "--tuples-per-ms", "100", "--json", "--validate", "--validate-tuples", "10000", "--duration", "60s"}, benchSmall...)...)
		require.Len(t, s.Queries, 1)
		assert.True(t, s.Queries[0].Validated, "%s: %s", agg, s.Queries[0].Mismatch)
	}
}
