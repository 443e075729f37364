package main

// The GPU bundle's run.sh (build/gpu-run.sh) without a GPU: the bundle's
// binaries are replaced by stand-ins (bash scripts) on a fake bundle, with
// a fake nvidia-smi on PATH, and this test binary stands in for ./collect.
// It checks that a failing step is reported and the next one still runs,
// that a hanging step is stopped by its timeout, that the budget skips
// steps and says so, that the exit status says whether every step passed,
// and that results.json is valid JSON with every figure.

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
)

func TestMain(m *testing.M) {
	// As ./collect of the fake bundle.
	if os.Getenv("GPUCOLLECT_AS_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	// The tests mostly wait on run.sh's processes: all at once.
	os.Exit(testenv.MainParallel(m, 8))
}

const fakeSaber = `#!/usr/bin/env bash
# saber-hx stand-in: a --json summary whose throughput depends on --mode.
cmd=$1; shift
[ "$cmd $1" = "ysb check" ] && [ -n "${FAKE_CHECK_FAIL:-}" ] && { echo "ysb check: 3 windows differ" >&2; exit 1; }
[ "$cmd" = topology ] && { echo "GPUs: 1 (fake)"; exit 0; }
w=ysb
[ "$cmd" = bench ] && { w=$1; shift; }
[ "$cmd" = nexmark ] && { w=nexmark-$1; shift; }
mode=cpu ts=0 static= workers=1
while [ $# -gt 0 ]; do
	case $1 in
	--mode) mode=$2; shift ;;
	--task-size) ts=$2; shift ;;
	--static) static=$2; shift ;;
	--workers) workers=$2; shift ;;
	esac
	shift
done
case ",${FAKE_FAIL:-}," in *",$w:$mode,"* | *",$w:w$workers,"*) echo "saber-hx: error: fake failure of $w in $mode mode" >&2; exit 1 ;; esac
case ",${FAKE_HANG:-}," in *",$w:$mode:$ts,"*) sleep 60 ;; esac
case $mode in cpu) r=$((100000000 * workers)) ;; gpu) r=200000000 ;; *) r=250000000 ;; esac
case $static in *=cpu) r=90000000 ;; *=gpu) r=190000000 ;; esac
kinds='["cpu","gpu"]' tasks='[[10],[30]]'
[ "$mode" = cpu ] && { kinds='["cpu"]' tasks='[[40]]'; }
[ "$mode" = gpu ] && { kinds='["gpu"]' tasks='[[40]]'; }
echo "progress line"
case $w in nexmark-*) echo "{\"query\":\"${w#nexmark-}\",\"workers\":$workers,\"events_per_s\":$((2 * r)),\"tuples_per_s\":$r,\"serial_fraction\":0.25}"; exit 0 ;; esac
echo "{\"tuples_per_s\":$r,\"workers\":$workers,\"queries\":[{\"serial_fraction\":0.5},{\"serial_fraction\":0.125}],\"validated\":true,\"task_size\":$ts,\"processors\":{\"mode\":\"$mode\",\"kinds\":$kinds,\"queries\":[\"Q_$w\"],\"tasks\":$tasks,\"gpu_copy_in_us_p50\":11.5,\"gpu_kernel_us_p50\":22.5,\"gpu_copy_out_us_p50\":3.5,\"gpu_sync\":\"${SABER_HX_GPU_SYNC:-blocking}\"}}"
`

// fakeTest is a Go test binary stand-in: PASS, or what FAKE_<NAME> says.
const fakeTest = `#!/usr/bin/env bash
name=$(basename "$0" .test)
args="$*"
case $args in *-test.v*) ;; *) echo "missing -test.v" >&2; exit 3 ;; esac
case $args in *-test.timeout=*) ;; *) echo "missing -test.timeout" >&2; exit 3 ;; esac
if [ "$name" = gpu ] && [[ $args == *"-test.run ^TestCUDACopyBandwidth"* ]]; then
	echo "=== RUN   TestCUDACopyBandwidth"
	echo "    cuda_bandwidth_test.go:57:    256 KiB: host to device 20.5 GB/s, device to host 21.0 GB/s (4096 copies each)"
	echo "    cuda_bandwidth_test.go:57:   1024 KiB: host to device 40.5 GB/s, device to host 41.0 GB/s (1024 copies each)"
	echo "--- PASS: TestCUDACopyBandwidth (0.10s)"
	exit 0
fi
# Tests that read files beside the bundle's layout: the cwd is tests/<pkg>.
[ "$name" = gpu ] && { [ -f ../kernels/cuda/kernels.cu ] || { echo "--- FAIL: TestDescriptorCodes"; exit 1; }; }
v=FAKE_$(echo "$name" | tr a-z- A-Z_)
case ${!v:-pass} in
fail) echo "=== RUN   TestCUDAX"; echo "--- FAIL: TestCUDAX (0.00s)"; echo "--- PASS: TestCUDAY (0.00s)"; echo FAIL; exit 1 ;;
hang) echo "=== RUN   TestCUDAHang"; sleep 60 ;;
esac
echo "=== RUN   TestCUDAA"
echo "--- PASS: TestCUDAA (0.01s)"
echo "--- SKIP: TestCUDAB (0.00s)"
echo PASS
`

// fakeBundle makes a bundle of stand-ins around build/gpu-run.sh and a
// PATH with a fake nvidia-smi.
func fakeBundle(t *testing.T) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	run, err := os.ReadFile("../gpu-run.sh")
	require.NoError(t, err)
	self, err := os.Executable()
	require.NoError(t, err)
	files := map[string]string{
		"run.sh":                                string(run),
		"saber-hx":                              fakeSaber,
		"collect":                               "#!/bin/sh\nGPUCOLLECT_AS_MAIN=1 exec '" + self + "' \"$@\"\n",
		"tests/gpu/internal/device/device.test": fakeTest,
		"tests/gpu/gpu.test":                    fakeTest,
		"tests/engine/engine.test":              fakeTest,
		"tests/cmd/saber-hx/saber-hx.test":      fakeTest,
		"tests/kernels/cuda/kernels.cu":         "// the kernels' source, read by gpu's tests\n",
		"bin/nvidia-smi": `#!/bin/sh
case "$*" in
*--query-gpu*) echo "NVIDIA H200, 580.159.04, 143771 MiB, 5, 5, 16, 16, 1980 MHz, 1980 MHz, Enabled, Default" ;;
*) echo "==============NVSMI LOG==============" ; echo "Driver Version : 580.159.04" ;;
esac
`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o755))
	}
	return dir, filepath.Join(dir, "bin") + string(os.PathListSeparator) + os.Getenv("PATH")
}

// runSh runs the fake bundle's run.sh with env and args; it returns the
// exit status, its stdout and the results.json it wrote (nil if none).
func runSh(t *testing.T, dir, path string, env []string, args ...string) (int, string, *Results, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(filepath.Join(dir, "run.sh"), args...)
	cmd.Env = append(os.Environ(), "PATH="+path, "OUT="+out, "SIZES=1048576 262144", "REPS=2", "WORKLOADS=ysb select",
		"T_TEST=2", "T_SHORT=3", "T_RUN=2", "SCALING=", "TMPDIR="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := startRetrying(t, cmd).Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err, "stderr: %s", stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		return code, stdout.String(), nil, out
	}
	require.True(t, json.Valid(b), "results.json is JSON")
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	for _, k := range []string{"schema", "passed", "failed", "skipped", "meta", "gpu", "steps", "bandwidth", "figures", "ratios", "scaling", "runs"} {
		assert.Contains(t, raw, k)
	}
	var r Results
	require.NoError(t, json.Unmarshal(b, &r))
	return code, stdout.String(), &r, out
}

// startRetrying starts cmd, again while exec says "text file busy": a
// process another test forks while this one writes its scripts holds them
// open for writing until it execs (golang.org/issue/22315). It returns
// the command started (a copy of cmd).
func startRetrying(t *testing.T, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	for i := 0; ; i++ {
		c := exec.Command(cmd.Path, cmd.Args[1:]...)
		c.Env, c.Stdout, c.Stderr, c.SysProcAttr = cmd.Env, cmd.Stdout, cmd.Stderr, cmd.SysProcAttr
		err := c.Start()
		if errors.Is(err, syscall.ETXTBSY) && i < 100 {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		require.NoError(t, err)
		return c
	}
}

func stepOf(t *testing.T, r *Results, name string) Step {
	t.Helper()
	for _, s := range r.Steps {
		if s.Name == name {
			return s
		}
	}
	require.Failf(t, "no step", "%s in %v", name, r.Steps)
	return Step{}
}

func TestRunShAllPass(t *testing.T) {
	t.Parallel()
	dir, path := fakeBundle(t)
	code, stdout, r, out := runSh(t, dir, path, nil)
	require.NotNil(t, r, "stdout: %s", stdout)
	assert.Equal(t, 0, code, "every step passed: exit 0; stdout: %s", stdout)
	assert.True(t, r.Passed)
	assert.Empty(t, r.Failed)
	assert.Contains(t, stdout, "ALL PASSED")
	assert.Equal(t, "NVIDIA H200", r.GPU["name"])
	assert.Equal(t, "5", r.GPU["pcie_gen_current"])
	for _, f := range []string{"run.log", "results.json", "summary.txt", "nvidia-smi.txt", "logs.tar.gz"} {
		assert.FileExists(t, filepath.Join(out, f))
	}
	ents, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(ents), 8, "the device tool brings back at most 8 files")
	for _, e := range ents {
		assert.False(t, e.IsDir(), "no subfolder in $OUT: %s", e.Name())
	}

	// The order: the CUDA tests, then the measurements.
	var names []string
	for _, s := range r.Steps {
		names = append(names, s.Name)
	}
	require.GreaterOrEqual(t, len(names), 8)
	assert.Equal(t, []string{"nvidia-smi", "loader", "topology", "test-gpu-device", "test-gpu-cuda", "test-engine-cuda", "test-cmd-cuda", "bandwidth"}, names[:8])
	off := stepOf(t, r, "test-gpu-cuda")
	require.NotNil(t, off.Tests)
	assert.Equal(t, TestCounts{Pass: 1, Skip: 1, Failed: []string{}}, *off.Tests, "found its kernels' source beside it")
	assert.Equal(t, []Bandwidth{{256, 20.5, 21}, {1024, 40.5, 41}}, r.Bandwidth)

	// Every run's figure, the repetitions' medians, the ratios.
	// 2 warm-ups, 2 workloads x 2 sizes x 3 modes x 2 reps, static 2 x 2
	// kinds x 2 reps, sync 2 x 2, variants 2 x 2, depths 2 x 2, YSB's
	// shared ingestion 2.
	assert.Len(t, r.Runs, 2+24+8+4+4+4+2)
	for _, ru := range r.Runs {
		assert.Equal(t, "pass", ru.Status, ru.Step)
		assert.Positive(t, ru.TuplesPerS, ru.Step)
		if ru.Group == "static" {
			assert.Regexp(t, `^Q_(ysb|select)=(cpu|gpu)$`, ru.Static, "bound by the name the warm-up's summary gave")
		}
		if ru.Group == "sync" {
			assert.Equal(t, "spin", ru.GPU["gpu_sync"], "SABER_HX_GPU_SYNC reaches saber-hx")
		}
	}
	var matrix int
	for _, f := range r.Figures {
		assert.Equal(t, 2, f.Reps)
		assert.Len(t, f.TuplesPerS, 2)
		if f.Group == "matrix" {
			matrix++
			assert.Equal(t, 22.5, f.KernelUsP50)
		}
		if f.Mode == "hybrid" && f.Group == "matrix" {
			assert.Equal(t, 250e6, f.Median)
			assert.Equal(t, 0.75, f.GPUShare)
		}
	}
	assert.Equal(t, 12, matrix)
	require.Len(t, r.Ratios, 4)
	for _, x := range r.Ratios {
		assert.Equal(t, "gpu", x.BestSingle)
		assert.InDelta(t, 1.25, x.HybridOverBest, 1e-9)
		if x.TaskSize == 1<<20 {
			assert.InDelta(t, 250.0/190, x.HLSOverBestStatic, 1e-9)
		} else {
			assert.Zero(t, x.HLSOverBestStatic, "static runs at the first size only")
		}
	}
	summary, err := os.ReadFile(filepath.Join(out, "summary.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(summary), "hybrid/best 1.250")
	assert.Contains(t, stdout, "run.sh: exit 0 (")
}

func TestRunShFailuresAndTimeouts(t *testing.T) {
	testenv.Long(t) // a whole run.sh each, forks by the hundred: CI runs them
	t.Parallel()
	dir, path := fakeBundle(t)
	start := time.Now()
	// Limits of 1 s (the stand-ins take milliseconds): the two hangs are
	// cut after 1 s each. One repetition: what fails does not depend on
	// the repetitions (TestRunShAllPass runs two).
	code, stdout, r, out := runSh(t, dir, path, []string{"FAKE_ENGINE=fail", "FAKE_SABER_HX=hang", "FAKE_FAIL=select:gpu", "FAKE_HANG=ysb:hybrid:262144",
		"T_TEST=1", "T_RUN=1", "REPS=1"})
	require.NotNil(t, r, "stdout: %s", stdout)
	assert.Less(t, time.Since(start), 60*time.Second, "the hangs were cut by their timeouts")
	assert.Equal(t, 1, code)
	assert.False(t, r.Passed)
	assert.Contains(t, stdout, "FAILED: ")

	eng := stepOf(t, r, "test-engine-cuda")
	assert.Equal(t, "fail", eng.Status)
	assert.Equal(t, 1, eng.RC)
	assert.Equal(t, []string{"TestCUDAX"}, eng.Tests.Failed)
	assert.Equal(t, 1, eng.Tests.Pass)
	assert.Contains(t, eng.Tail, "--- FAIL: TestCUDAX")

	cmd := stepOf(t, r, "test-cmd-cuda")
	assert.Equal(t, "timeout", cmd.Status, "the hanging test binary was stopped")
	assert.Equal(t, 124, cmd.RC)
	assert.Contains(t, cmd.Command, "-test.timeout=")

	// The next steps still ran.
	assert.Equal(t, "pass", stepOf(t, r, "bandwidth").Status)
	assert.Len(t, r.Bandwidth, 2)
	assert.Equal(t, "pass", stepOf(t, r, "ysb-gpu-1048576-1").Status)
	assert.Equal(t, "pass", stepOf(t, r, "ysb-hybrid-1048576-1").Status)
	assert.Equal(t, "timeout", stepOf(t, r, "ysb-hybrid-262144-1").Status)
	assert.Equal(t, "pass", stepOf(t, r, "select-cpu-262144-1").Status)
	assert.Equal(t, "fail", stepOf(t, r, "select-gpu-1048576-1").Status)
	assert.Equal(t, "pass", stepOf(t, r, "select-hybrid-1048576-1").Status)
	assert.Contains(t, stepOf(t, r, "ysb-gpu-1048576-1").Command, "--task-size 1048576 --buffer-size 33554432")
	assert.NotContains(t, stepOf(t, r, "ysb-hybrid-1048576-1").Command, "--buffer-size", "hybrid mode: the engine's ring")
	for _, want := range []string{"test-engine-cuda", "test-cmd-cuda", "ysb-hybrid-262144-1", "select-gpu-1048576-1"} {
		assert.Contains(t, r.Failed, want)
	}
	for _, f := range r.Figures {
		if f.Workload == "select" && f.Mode == "gpu" && f.Group == "matrix" {
			assert.Equal(t, 1, f.FailedRuns)
			assert.Zero(t, f.Median)
		}
	}
	log, err := os.ReadFile(filepath.Join(out, "run.log"))
	require.NoError(t, err)
	assert.Contains(t, string(log), "fake failure of select in gpu mode", "every command's output is in run.log")
	assert.Contains(t, string(log), "=== test-cmd-cuda: timeout (exit 124")
}

func TestRunShBudgetQuickAndDryRun(t *testing.T) {
	testenv.Long(t) // a whole run.sh each, forks by the hundred: CI runs them
	t.Parallel()
	dir, path := fakeBundle(t)

	// A budget too small for anything: every step is skipped and listed,
	// and skipped tests fail the run.
	code, stdout, r, _ := runSh(t, dir, path, []string{"RUN_BUDGET_S=5"})
	require.NotNil(t, r, "stdout: %s", stdout)
	assert.Equal(t, 1, code)
	assert.False(t, r.Passed)
	assert.Contains(t, r.Skipped, "test-gpu-cuda")
	assert.Contains(t, r.Failed, "test-gpu-cuda (skipped)")
	assert.Contains(t, r.Skipped, "ysb-cpu-1048576-1")
	assert.Equal(t, "skipped", stepOf(t, r, "bandwidth").Status)

	// --quick: the measurements only; all pass.
	code, stdout, r, _ = runSh(t, dir, path, []string{"WORKLOADS=ysb", "SIZES=262144"}, "--quick")
	require.NotNil(t, r, "stdout: %s", stdout)
	assert.Equal(t, 0, code, stdout)
	for _, s := range r.Steps {
		assert.NotContains(t, s.Name, "-cuda", "--quick runs no CUDA test")
	}
	assert.Equal(t, "1", r.Meta["quick"])
	assert.Len(t, r.Runs, 1+6+4+2+2+4+2)

	// --dry-run: the plan; nothing run, nothing written to $OUT.
	code, stdout, r, out := runSh(t, dir, path, []string{"WORKLOADS=ysb select proj"}, "--dry-run")
	assert.Equal(t, 0, code, stdout)
	assert.Nil(t, r)
	assert.NoDirExists(t, out)
	assert.Contains(t, stdout, "test-gpu-cuda")
	assert.Contains(t, stdout, "-test.timeout=")
	assert.Contains(t, stdout, "--predicates 256")
	assert.Contains(t, stdout, "--attributes 16 --expr-depth 8")
	assert.Contains(t, stdout, "nothing was run")

	// A wrong argument.
	code, _, _, _ = runSh(t, dir, path, nil, "--bogus")
	assert.Equal(t, 2, code)
}

// TestRunShScalingCurve: the CPU scaling curve runs once the first task
// size's matrix is measured, one cpu-mode run per worker count (a count
// above the CPUs becomes their number, once), and results.json and the
// table have its points: Nexmark's in tuples/s, speedups over 1 worker,
// the serial fraction (a summary's largest), a failed point marked; the
// CPU variants (pinning, ingestion) follow it.
func TestRunShScalingCurve(t *testing.T) {
	testenv.Long(t) // a whole run.sh each, forks by the hundred: CI runs them
	t.Parallel()
	dir, path := fakeBundle(t)
	code, stdout, r, _ := runSh(t, dir, path, []string{"WORKLOADS=ysb", "SIZES=262144 1048576", "REPS=1", "MODES=cpu",
		"SCALING=sg2 nexmark-q5", "SCALING_WORKERS=1 2 4 64 8", "NCPU=8", "FAKE_FAIL=sg2:w4"}, "--quick")
	require.NotNil(t, r, "stdout: %s", stdout)
	assert.Equal(t, 1, code, "a scaling run failed")
	var names []string
	for _, s := range r.Steps {
		if s.Kind == "measure" {
			names = append(names, s.Name)
		}
	}
	assert.Equal(t, []string{"warmup-ysb", "ysb-cpu-262144-1", "ysb-static-cpu-262144-1", "ysb-static-gpu-262144-1",
		"scaling-sg2-w1", "scaling-sg2-w2", "scaling-sg2-w4", "scaling-sg2-w8",
		"scaling-nexmark-q5-w1", "scaling-nexmark-q5-w2", "scaling-nexmark-q5-w4", "scaling-nexmark-q5-w8",
		"pin-ysb-w6-true-1", "pin-ysb-w6-false-1", "pin-sg2-w6-true-1", "pin-sg2-w6-false-1", "pin-join-w6-true-1", "pin-join-w6-false-1",
		"ingest-ysb-w2-shared-1", "ingest-ysb-w2-workers-1", "ingest-ysb-w4-shared-1", "ingest-ysb-w4-workers-1",
		"pin-ysb-w6-true-2", "pin-ysb-w6-false-2", "pin-sg2-w6-true-2", "pin-sg2-w6-false-2", "pin-join-w6-true-2", "pin-join-w6-false-2",
		"ingest-ysb-w2-shared-2", "ingest-ysb-w2-workers-2", "ingest-ysb-w4-shared-2", "ingest-ysb-w4-workers-2",
		"ysb-cpu-1048576-1", "ysb-gpu-spin-262144-1", "ysb-gpu-REGISTER=0-262144-1",
		"ysb-gpu-depth1-262144-1", "ysb-gpu-depth8-262144-1", "ysb-gpu-ingest-shared-262144-1"}, names, "the curve, then the CPU variants it left open")
	assert.Contains(t, stepOf(t, r, "pin-sg2-w6-false-1").Command, "--workers 6 --pin false --warmup 0.5s")
	assert.Contains(t, stepOf(t, r, "pin-ysb-w6-true-1").Command, "--workers 6 --pin true")
	assert.Contains(t, stepOf(t, r, "ingest-ysb-w4-shared-2").Command, "--workers 4 --ingest shared")
	assert.Contains(t, stepOf(t, r, "scaling-nexmark-q5-w2").Command, "./saber-hx nexmark q5 --warmup 0.5s --mode cpu")
	assert.NotContains(t, stepOf(t, r, "scaling-nexmark-q5-w2").Command, "--task-size", "Nexmark's own task size")
	assert.NotContains(t, stepOf(t, r, "scaling-sg2-w2").Command, "--task-size", "the defaults: the ring grows with the workers")
	assert.Contains(t, stepOf(t, r, "scaling-sg2-w8").Command, "--workers 8 --warmup 0.5s")
	assert.Equal(t, 1, strings.Count(stepOf(t, r, "scaling-nexmark-q5-w8").Command, "--warmup"))

	want := []Scaling{
		{Workload: "sg2", Workers: 1, Unit: "tuples/s", PerS: 1e8, Speedup: 1, SerialFraction: 0.5},
		{Workload: "sg2", Workers: 2, Unit: "tuples/s", PerS: 2e8, Speedup: 2, SerialFraction: 0.5},
		{Workload: "sg2", Workers: 4, Unit: "tuples/s", Failed: true},
		{Workload: "sg2", Workers: 8, Unit: "tuples/s", PerS: 8e8, Speedup: 8, SerialFraction: 0.5},
		{Workload: "nexmark-q5", Workers: 1, Unit: "tuples/s", PerS: 1e8, Speedup: 1, SerialFraction: 0.25},
		{Workload: "nexmark-q5", Workers: 2, Unit: "tuples/s", PerS: 2e8, Speedup: 2, SerialFraction: 0.25},
		{Workload: "nexmark-q5", Workers: 4, Unit: "tuples/s", PerS: 4e8, Speedup: 4, SerialFraction: 0.25},
		{Workload: "nexmark-q5", Workers: 8, Unit: "tuples/s", PerS: 8e8, Speedup: 8, SerialFraction: 0.25},
	}
	assert.Equal(t, want, r.Scaling)
	assert.Contains(t, stdout, "== CPU scaling")
	assert.Contains(t, stdout, "nexmark-q5   tuples/s  1: 100.00 (1.00x, 0.25)  2: 200.00 (2.00x, 0.25)")
	assert.Contains(t, stdout, "4: failed")

	// The plan lists the curve; SCALING empty runs none (runSh's default).
	code, stdout, _, _ = runSh(t, dir, path, []string{"WORKLOADS=ysb", "SCALING=join", "NCPU=16"}, "--dry-run")
	assert.Equal(t, 0, code, stdout)
	for _, n := range []string{"1", "2", "4", "8", "15"} {
		assert.Contains(t, stdout, "scaling-join-w"+n+" ")
	}
}

// TestRunShKilledKeepsResults: run.sh killed in the middle of a step (the
// device's time spent) leaves a whole results.json with the steps before
// it, as collect last wrote it.
func TestRunShKilledKeepsResults(t *testing.T) {
	t.Parallel()
	dir, path := fakeBundle(t)
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(filepath.Join(dir, "run.sh"), "--quick")
	cmd.Env = append(os.Environ(), "PATH="+path, "OUT="+out, "SIZES=262144", "REPS=1", "WORKLOADS=ysb", "MODES=cpu",
		"FAKE_HANG=ysb:cpu:262144", "T_RUN=60", "SCALING=", "COLLECT_EVERY=0", "TMPDIR="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd = startRetrying(t, cmd)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	kill := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	defer kill()

	// The hanging run's log appears once the steps before it are collected.
	hanging := filepath.Join(out, "run.log")
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(hanging)
		return err == nil && bytes.Contains(b, []byte("=== ysb-cpu-262144-1 (limit"))
	}, 20*time.Second, 20*time.Millisecond)
	kill()
	<-done

	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	require.NoError(t, err)
	var r Results
	require.NoError(t, json.Unmarshal(b, &r))
	assert.Equal(t, "pass", stepOf(t, &r, "topology").Status)
	assert.Equal(t, "pass", stepOf(t, &r, "bandwidth").Status)
	for _, s := range r.Steps {
		assert.NotEqual(t, "ysb-cpu-262144-1", s.Name, "the step cut short is not recorded")
	}
	assert.FileExists(t, filepath.Join(out, "logs.tar.gz"))
}

// fakeServer is a stand-in for kafka-local and redis-server: it writes
// its process id to $FAKE_PIDS and waits to be stopped.
const fakeServer = `#!/usr/bin/env bash
echo $$ >>"$FAKE_PIDS"
exec sleep 300
`

// TestRunShPipeline: the Kafka pipeline group starts the bundle's broker
// and Redis (through the bundled loader), produces, alternates the
// baseline build with this one at each number of fetchers (capped at the
// partitions), checks the windows, stops both servers, and results.json
// has each count's median ratio over the baseline's round; a failed check
// fails the run. A bundle without the pipeline's parts says so and runs
// the rest (the other tests' bundles).
func TestRunShPipeline(t *testing.T) {
	t.Parallel()
	dir, path := fakeBundle(t)
	files := map[string]string{
		"kafka-local":                    fakeServer,
		"redis/redis-server":             fakeServer,
		"redis/lib/ld-linux-x86-64.so.2": "#!/bin/sh\n[ \"$1\" = --library-path ] || exit 3\nshift 2\nexec \"$@\"\n",
		"saber-hx-base":                  "#!/bin/sh\necho '{\"tuples_per_s\":40000000,\"workers\":1}'\n",
		"kafka-ceiling":                  "#!/bin/sh\necho 'read 9 records'; echo '{\"tuples_per_s\":500000000,\"records\":9}'\n",
		"BASE":                           "998441e 998441e482d9ab176b830be8ec053af4da779c27\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o755))
	}
	for _, fail := range []bool{false, true} {
		pids := filepath.Join(t.TempDir(), "pids")
		env := []string{"WORKLOADS=ysb", "SIZES=262144", "REPS=1", "MODES=cpu", "PIPELINE_PARTS=2", "PIPELINE_REPS=2", "FAKE_PIDS=" + pids}
		if fail {
			env = append(env, "FAKE_CHECK_FAIL=1")
		}
		code, stdout, r, _ := runSh(t, dir, path, env, "--quick")
		require.NotNil(t, r, "stdout: %s", stdout)
		if fail {
			assert.Equal(t, 1, code, stdout)
			assert.Contains(t, r.Failed, "pipeline-check")
			assert.Contains(t, stepOf(t, r, "pipeline-check").Tail, "3 windows differ")
		} else {
			assert.Equal(t, 0, code, stdout)
			assert.True(t, r.Passed, r.Failed)
		}
		var names []string
		for _, s := range r.Steps {
			if strings.HasPrefix(s.Name, "pipeline") {
				names = append(names, s.Name)
			}
		}
		assert.Equal(t, []string{"pipeline-setup", "pipeline-produce", "pipeline-base-1", "pipeline-f1-1", "pipeline-f2-1",
			"pipeline-base-2", "pipeline-f1-2", "pipeline-f2-2", "pipeline-check", "pipeline-ceiling-c1", "pipeline-ceiling-c2"},
			names, "fetchers 1 2 4 capped at 2 partitions; the ceiling with 1 client and one per partition")
		assert.Contains(t, stepOf(t, r, "pipeline-ceiling-c2").Command, "./kafka-ceiling --brokers 127.0.0.1:")
		assert.Contains(t, stepOf(t, r, "pipeline-ceiling-c2").Command, "--topic ad-events --clients 2 --json")
		ceiling := 0
		for _, f := range r.Figures {
			if f.Workload == "kafka-ceiling" {
				ceiling++
				assert.Equal(t, 5e8, f.Median, f.Extra)
			}
		}
		assert.Equal(t, 2, ceiling, "a figure per client count")
		assert.Contains(t, stdout, "ceiling: franz-go's consumer alone, decoding nothing, clients 2: 500.00 M records/s")
		assert.Contains(t, stepOf(t, r, "pipeline-f2-2").Command, "./saber-hx ysb --source kafka --brokers 127.0.0.1:")
		assert.Contains(t, stepOf(t, r, "pipeline-f2-2").Command, "--stop-at-end --json --fetchers 2")
		assert.Contains(t, stepOf(t, r, "pipeline-base-1").Command, "./saber-hx-base ysb --source kafka")
		assert.Contains(t, stepOf(t, r, "pipeline-produce").Command, "--rate 1000000 --duration 5s --partitions 2")
		want := []Pipeline{
			{Fetchers: 1, Base: "998441e", PerS: 1e8, BasePerS: 4e7, OverBase: 2.5, OverBaseMin: 2.5, OverBaseMax: 2.5, Rounds: 2},
			{Fetchers: 2, Base: "998441e", PerS: 1e8, BasePerS: 4e7, OverBase: 2.5, OverBaseMin: 2.5, OverBaseMax: 2.5, Rounds: 2},
		}
		assert.Equal(t, want, r.Pipeline)
		assert.Contains(t, stdout, "fetchers  2    100.00  baseline    40.00  2.50x (2.50-2.50, 2 rounds)")

		// Both servers were started, and stopped with the group.
		b, err := os.ReadFile(pids)
		require.NoError(t, err)
		started := strings.Fields(string(b))
		assert.Len(t, started, 2, "kafka-local and redis-server")
		for _, p := range started {
			assert.ErrorIs(t, syscall.Kill(atoi(p), 0), syscall.ESRCH, "server %s still running", p)
		}
	}
}
