package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/gpu"
	"github.com/saber-hx/saber-hx/internal/testenv"
)

// The GPU path of the command line, on gpu's emulator (--gpu-emulate):
// what CI can check without a GPU.

// gpuProcessors is the processors part of a summary with a GPU kind.
type gpuProcessors struct {
	Mode      string     `json:"mode"`
	Kinds     []string   `json:"kinds"`
	Queries   []string   `json:"queries"`
	Tasks     [][]uint64 `json:"tasks"`
	GPU       *string    `json:"gpu"`
	Emulated  *bool      `json:"gpu_emulated"`
	Depth     *int       `json:"gpu_pipeline_depth"`
	CannotRun []string   `json:"gpu_cannot_run"`
	Fallback  *uint64    `json:"gpu_fallback_tasks"`
}

// checkGPUFields asserts that every GPU field of the summary is there.
func checkGPUFields(t *testing.T, p gpuProcessors, raw map[string]any, mode string, depth int) {
	t.Helper()
	assert.Equal(t, mode, p.Mode)
	for _, k := range []string{"gpu", "gpu_emulated", "gpu_pipeline_depth", "gpu_cannot_run", "gpu_fallback_tasks",
		"gpu_copy_in_us_p50", "gpu_kernel_us_p50", "gpu_copy_out_us_p50", "gpu_submit_us_p50", "gpu_wait_us_p50", "gpu_times_us",
		"gpu_timed_tasks", "gpu_sync", "gpu_direct_tasks", "gpu_staged_tasks", "gpu_one_trip_tasks", "gpu_two_trip_tasks"} {
		assert.Contains(t, raw, k)
	}
	// The emulator has no GPU times; it times the host's part and copies
	// every task from its registered ring.
	for _, k := range []string{"gpu_copy_in_us_p50", "gpu_kernel_us_p50", "gpu_copy_out_us_p50"} {
		assert.Zero(t, raw[k], k)
	}
	assert.Equal(t, "emulated", raw["gpu_sync"])
	assert.Zero(t, raw["gpu_staged_tasks"], "every task copied from the ring")
	assert.Equal(t, raw["gpu_timed_tasks"], raw["gpu_direct_tasks"])
	require.NotNil(t, p.GPU)
	assert.Equal(t, "emulator", *p.GPU)
	require.NotNil(t, p.Emulated)
	assert.True(t, *p.Emulated)
	require.NotNil(t, p.Depth)
	assert.Equal(t, depth, *p.Depth)
	assert.NotNil(t, p.CannotRun, "a list, empty when the GPU runs every query")
	assert.NotNil(t, p.Fallback)
	if mode == "gpu" {
		assert.Equal(t, []string{"gpu"}, p.Kinds)
	} else {
		assert.Equal(t, []string{"cpu", "gpu"}, p.Kinds)
	}
}

// decodeProcessors decodes the processors object of the last stdout line.
func decodeProcessors(t *testing.T, stdout string) (gpuProcessors, map[string]any) {
	t.Helper()
	var s struct {
		Processors json.RawMessage `json:"processors"`
	}
	require.NoError(t, json.Unmarshal([]byte(lastLine(stdout)), &s))
	var p gpuProcessors
	require.NoError(t, json.Unmarshal(s.Processors, &p))
	var raw map[string]any
	require.NoError(t, json.Unmarshal(s.Processors, &raw))
	return p, raw
}

func TestYSBHybridEmulated(t *testing.T) {
	code, stdout, stderr := cli(t, "ysb", "--mode", "hybrid", "--gpu-emulate", "--duration", "400ms", "--warmup", "0s", "--json",
		"--workers", "1", "--task-size", "65536", "--buffer-size", "1048576", "--bundle-size", "1048576")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	s, m := parseSummary(t, stdout)
	assert.True(t, s.Validated)
	assert.Equal(t, s.Tuples, s.Filtered+s.Unmatched+s.Late+s.Counted)
	p, raw := decodeProcessors(t, stdout)
	checkGPUFields(t, p, raw, "hybrid", 4)
	assert.Empty(t, p.CannotRun, "the GPU has YSB's kernel")
	assert.NotContains(t, stderr, "runs on the CPU only")
	var total uint64
	for k := range p.Tasks {
		total += p.Tasks[k][0]
	}
	assert.Equal(t, uint64(m["tasks"].(float64)), total, "every task ran once, on one kind or the other")
	assert.Positive(t, p.Tasks[1][0], "the GPU ran tasks")
}

func TestYSBGPUModeEmulated(t *testing.T) {
	code, stdout, stderr := cli(t, "ysb", "--mode", "gpu", "--gpu-emulate", "--gpu-pipeline-depth", "2", "--duration", "150ms", "--warmup", "50ms",
		"--task-size", "65536", "--buffer-size", "1048576", "--bundle-size", "1048576", "--json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	s, m := parseSummary(t, stdout)
	assert.True(t, s.Validated)
	assert.Zero(t, s.Workers, "gpu mode runs no CPU worker")
	p, raw := decodeProcessors(t, stdout)
	checkGPUFields(t, p, raw, "gpu", 2)
	assert.Equal(t, uint64(m["tasks"].(float64)), p.Tasks[0][0], "the GPU ran every task")

	// The human summary says the figures are not a GPU's.
	code, stdout, stderr = cli(t, "ysb", "--mode", "gpu", "--gpu-emulate", "--duration", "100ms", "--warmup", "0s",
		"--task-size", "65536", "--buffer-size", "1048576", "--bundle-size", "1048576")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stdout, "gpu mode, GPU emulator, pipeline depth 4")
	assert.Contains(t, stdout, "not GPU figures")
	assert.Contains(t, stdout, "validated: true")
}

// TestYSBFileGPUEmulated: file mode in gpu and hybrid modes writes the
// reference's results.
func TestYSBFileGPUEmulated(t *testing.T) {
	dir := t.TempDir()
	events, campaigns := generate(t, dir, 60000)
	want, _ := ysbReference(t, events, campaigns)
	for _, mode := range []string{"gpu", "hybrid"} {
		out := filepath.Join(dir, mode+".csv")
		code, _, stderr := cli(t, append([]string{"ysb", "--mode", mode, "--gpu-emulate", "--input", events, "--campaigns", campaigns, "--output", out,
			"--task-size", "12800", "--json"}, workersFor(mode, "1")...)...)
		require.Equal(t, 0, code, "stderr: %s", stderr)
		assertRowsEqual(t, want, readResults(t, out))
	}
}

func TestBenchGPUEmulated(t *testing.T) {
	t.Parallel()
	// agg has a GPU kernel: gpu mode, validated.
	args := append([]string{"agg", "--mode", "gpu", "--gpu-emulate", "--validate", "--validate-tuples", "30000", "--duration", "60s", "--json"}, benchSmallFor("gpu")...)
	code, stdout, stderr := cli(t, append([]string{"bench"}, args...)...)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	s := decodeBench(t, stdout)
	assert.True(t, s.Validated)
	p, raw := decodeProcessors(t, stdout)
	checkGPUFields(t, p, raw, "gpu", 4)
	assert.Empty(t, p.CannotRun)
	var b struct {
		Workers int `json:"workers"`
		Queries []struct {
			Fallback *uint64 `json:"gpu_fallback_tasks"`
		} `json:"queries"`
	}
	require.NoError(t, json.Unmarshal([]byte(lastLine(stdout)), &b))
	assert.Zero(t, b.Workers)
	require.Len(t, b.Queries, 1)
	assert.NotNil(t, b.Queries[0].Fallback, "per query: the tasks the GPU ran on its CPU fallback")

	// So do groupby, and in the long run select and proj: gpu mode, validated.
	others := []string{"groupby"}
	if testenv.Full() {
		others = append(others, "select", "proj")
	}
	for _, w := range others {
		args := append([]string{w, "--mode", "gpu", "--gpu-emulate", "--validate", "--validate-tuples", "20000", "--duration", "60s", "--json"}, benchSmallFor("gpu")...)
		code, stdout, stderr := cli(t, append([]string{"bench"}, args...)...)
		require.Equal(t, 0, code, "%s: stderr: %s", w, stderr)
		assert.True(t, decodeBench(t, stdout).Validated, w)
		p, _ := decodeProcessors(t, stdout)
		assert.Empty(t, p.CannotRun, w)
	}

	// cm1 (float sums) has none: gpu mode refuses it, naming the query
	// and the operator, and points at hybrid mode.
	code, stdout, stderr = cli(t, append([]string{"bench", "cm1", "--mode", "gpu", "--gpu-emulate", "--validate"}, benchSmallFor("gpu")...)...)
	assert.Equal(t, 2, code, "stderr: %s", stderr)
	assert.Empty(t, stdout)
	for _, w := range []string{`query "CM1"`, "over a float expression", "no GPU kernel", "--mode hybrid"} {
		assert.Contains(t, stderr, w)
	}

	// Binding it to the GPU is refused, naming it.
	code, stdout, stderr = cli(t, append([]string{"bench", "cm1,agg", "--mode", "hybrid", "--gpu-emulate", "--policy", "static",
		"--static", "CM1=gpu,AGG_avg=gpu"}, benchSmall...)...)
	assert.Equal(t, 2, code, "stderr: %s", stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, `static binding CM1=gpu: query "CM1" has no GPU kernel (SUM(cpu) over a float expression`)

	// Hybrid mode runs it on the CPU only, says so, and validates; with
	// select and agg alongside, which the GPU shares, and a window join,
	// whose inputs pass through the GPU and whose pairs the result stage
	// has the GPU's join program compute. 1024 tuples a side: the join's 8
	// windows of 128 (at 2500, 20 windows and 158,000 pairs, its reference
	// was most of this test's CPU).
	args = append([]string{"cm1,select,agg,join", "--mode", "hybrid", "--gpu-emulate", "--gpu-pipeline-depth", "1", "--policy", "fcfs",
		"--validate", "--validate-tuples", "1024", "--duration", "60s", "--json"}, benchSmall...)
	code, stdout, stderr = cli(t, append([]string{"bench"}, args...)...)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stderr, "runs on the CPU only: SUM(cpu) over a float expression")
	s = decodeBench(t, stdout)
	assert.True(t, s.Validated)
	for _, q := range s.Queries {
		assert.True(t, q.Validated, "%s: %s", q.Name, q.Mismatch)
	}
	p, raw = decodeProcessors(t, stdout)
	checkGPUFields(t, p, raw, "hybrid", 1)
	require.Len(t, p.CannotRun, 1)
	sel := p.CannotRun[0]
	assert.Equal(t, "CM1", sel)
	for q, name := range p.Queries {
		if name == sel {
			assert.Zero(t, p.Tasks[1][q], "no task of %s on the GPU", sel)
			assert.Positive(t, p.Tasks[0][q])
		}
	}
}

// TestGPUFlags: what the GPU flags refuse, for both commands.
func TestGPUFlags(t *testing.T) {
	for _, cmd := range [][]string{{"ysb"}, {"bench", "agg"}} {
		for _, tc := range []struct {
			args []string
			want []string
		}{
			{[]string{"--mode", "gpu"}, []string{"--mode gpu", "without CUDA", "-tags cuda", "build/cuda-env.sh", "--gpu-emulate"}},
			{[]string{"--mode", "hybrid"}, []string{"--mode hybrid", "without CUDA"}},
			{[]string{"--mode", "gpu", "--gpu-emulate", "--gpu-pipeline-depth", "0"}, []string{"--gpu-pipeline-depth 0", ">= 1"}},
			{[]string{"--gpu-pipeline-depth", "-3"}, []string{"--gpu-pipeline-depth -3"}},
			{[]string{"--gpu-pipeline-depth", "x"}, []string{"gpu-pipeline-depth"}},
			{[]string{"--gpu-emulate"}, []string{"--gpu-emulate", "--mode gpu or --mode hybrid"}},
			{[]string{"--gpu-pipeline-depth", "2"}, []string{"--gpu-pipeline-depth", "--mode gpu or --mode hybrid"}},
			{[]string{"--mode", "hybrid", "--gpu-emulate", "--policy", "fcfs", "--switch-threshold", "5"}, []string{"--switch-threshold", "--policy hls"}},
			{[]string{"--switch-threshold", "5"}, []string{"--switch-threshold", "--mode hybrid"}},
			{[]string{"--mode", "gpu", "--gpu-emulate", "--policy", "static", "--static", "ysb=cpu,AGG_avg=cpu"}, []string{`no processor kind "cpu"`, "valid: gpu"}},
		} {
			if gpu.Built() && !slices.Contains(tc.args, "--gpu-emulate") && slices.Contains(tc.args, "--mode") {
				continue // a cuda build runs them (gpu_cuda_test.go)
			}
			args := append(append(append([]string{}, cmd...), tc.args...), "--duration", "100ms")
			code, stdout, stderr := cli(t, args...)
			assert.Equal(t, 2, code, "%v: %s", args, stderr)
			assert.Empty(t, stdout, "%v", args)
			for _, w := range tc.want {
				assert.Contains(t, stderr, w, "%v", args)
			}
		}
	}
	// The help (on stdout) documents them.
	code, stdout, _ := cli(t, "ysb", "-h")
	require.Equal(t, 0, code)
	for _, w := range []string{"-gpu-pipeline-depth", "(default 4)", "-gpu-emulate", "not GPU figures", "hybrid"} {
		assert.Contains(t, stdout, w)
	}
}

// decodeBench decodes bench's --json line.
func decodeBench(t *testing.T, stdout string) benchOut {
	t.Helper()
	var s benchOut
	require.NoError(t, json.Unmarshal([]byte(lastLine(stdout)), &s))
	return s
}

// TestBenchComputeHeavyEmulated: the compute-heavy cases that the GPU
// bundle's run.sh measures (select with 256 predicates, proj with 16
// attributes of depth 8) run validated in gpu and hybrid mode on the
// emulator: in gpu mode the GPU runs their tasks; none falls back; every
// output matches the reference evaluator.
func TestBenchComputeHeavyEmulated(t *testing.T) {
	testenv.Long(t) // four emulated GPU runs with validation: CI runs it
	t.Parallel()
	for _, w := range [][]string{{"select", "--predicates", "256"}, {"proj", "--attributes", "16", "--expr-depth", "8"}} {
		for _, mode := range []string{"gpu", "hybrid"} {
			args := append(append([]string{"bench"}, w...), "--mode", mode, "--gpu-emulate", "--gpu-pipeline-depth", "2", "--policy", "fcfs",
				"--validate", "--validate-tuples", "12000", "--duration", "60s", "--json")
			code, stdout, stderr := cli(t, append(args, benchSmallFor(mode)...)...)
			require.Equal(t, 0, code, "%v: stderr: %s", args, stderr)
			s := decodeBench(t, stdout)
			assert.True(t, s.Validated, "%v", args)
			for _, q := range s.Queries {
				assert.True(t, q.Validated, "%v: %s: %s", args, q.Name, q.Mismatch)
			}
			p, raw := decodeProcessors(t, stdout)
			checkGPUFields(t, p, raw, mode, 2)
			assert.Empty(t, p.CannotRun, "%v: the GPU has its kernel", args)
			gpu := slices.Index(p.Kinds, "gpu")
			require.GreaterOrEqual(t, gpu, 0)
			if mode == "gpu" {
				// In hybrid mode fcfs hands each task to whichever
				// worker asks first: on a loaded machine the CPU
				// workers may take all of a run this short.
				assert.Positive(t, p.Tasks[gpu][0], "%v: the GPU ran tasks", args)
			}
			assert.Zero(t, *p.Fallback, "%v", args)
		}
	}
}

// TestRunSummaryGPUMode: run in hybrid and gpu mode summarises the
// processors as ysb and bench do: the mode, the GPU's fields, and the
// human summary's GPU line (the summary read the configuration before its
// GPU was opened: mode cpu, no GPU).
func TestRunSummaryGPUMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("ts,k,v\n")
	for i := range 4000 {
		fmt.Fprintf(&b, "%d,%d,%d\n", i, i%7, i%100)
	}
	in := filepath.Join(dir, "in.csv")
	require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))
	text := fmt.Sprintf(`CREATE SOURCE src (ts BIGINT, k INT NOT NULL, v INT NOT NULL) WITH (connector = 'file', path = '%s', format = 'csv', header = 'true');
SELECT window_start, k, COUNT(*) AS c, SUM(v) AS sv FROM TUMBLE(src, ts, INTERVAL '1' SECOND) GROUP BY window_start, k;`, in)
	for _, mode := range []string{"hybrid", "gpu"} {
		args := append([]string{"run", "-e", text, "--mode", mode, "--gpu-emulate", "--task-size", "4096", "--progress-interval", "0"}, workersFor(mode, "1")...)
		code, stdout, stderr := cli(t, append(args, "--output", filepath.Join(dir, mode+".csv"), "--json")...)
		require.Equal(t, 0, code, "stderr: %s", stderr)
		p, raw := decodeProcessors(t, stdout)
		assert.Equal(t, mode, p.Mode, "processors.mode")
		assert.Contains(t, raw, "gpu_fallback_tasks")
		code, stdout, stderr = cli(t, append(args, "--output", filepath.Join(dir, mode+"2.csv"))...)
		require.Equal(t, 0, code, "stderr: %s", stderr)
		assert.Contains(t, stdout, mode+" mode, GPU ", "the human summary's GPU line: %s", stdout)
	}
}

// workersFor is --workers n, but in gpu mode, which runs no CPU workers
// and refuses the flag.
func workersFor(mode, n string) []string {
	if mode == "gpu" {
		return nil
	}
	return []string{"--workers", n}
}

// benchSmallFor is benchSmall in mode.
func benchSmallFor(mode string) []string {
	return append(workersFor(mode, workers), benchSmall[2:]...)
}
