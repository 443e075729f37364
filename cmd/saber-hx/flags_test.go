package main

import (
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/gpu"
)

// TestSchedulingAndPlacementFlags: bad values exit 2 naming the valid ones,
// for both commands that run queries.
func TestSchedulingAndPlacementFlags(t *testing.T) {
	t.Parallel()
	for _, cmd := range [][]string{{"ysb"}, {"bench", "groupby"}} {
		for _, tc := range []struct {
			args []string
			want []string
		}{
			{[]string{"--policy", "lifo"}, []string{"lifo", "fcfs, static, hls"}},
			{[]string{"--switch-threshold", "0"}, []string{"--switch-threshold 0", ">= 1"}},
			{[]string{"--monitor-interval", "0s"}, []string{"--monitor-interval 0s", "> 0"}},
			{[]string{"--mode", "gpu"}, []string{"without CUDA", "-tags cuda"}},
			{[]string{"--mode", "hybrid"}, []string{"without CUDA"}},
			{[]string{"--mode", "quantum"}, []string{"cpu, gpu, hybrid"}},
			{[]string{"--policy", "static", "--static", "nonsense"}, []string{"QUERY=KIND"}},
			{[]string{"--static", "ysb=cpu"}, []string{"--static binds queries under --policy static, not --policy hls"}},
			{[]string{"--policy", "static", "--static", "ysb=gpu,groupby=gpu"}, []string{`no processor kind "gpu"`, "valid: cpu"}},
			{[]string{"--placement", "random"}, []string{"compact, spread"}},
			{[]string{"--cores", "0-x"}, []string{"--cores"}},
			{[]string{"--cores", "4000"}, []string{"placement"}},
			{[]string{"--ingest-core", "4000"}, []string{"--ingest-core 4000"}},
			{[]string{"--mem-policy", "interleave"}, []string{"default", "preferred", "bind"}},
			{[]string{"--kernel", "jit"}, []string{"auto, vector"}},
			{[]string{"--progress-interval", "-1s"}, []string{"--progress-interval -1s", "0 (no progress lines)"}},
			{[]string{"--progress-interval", "1ns"}, []string{"--progress-interval 1ns", "at least 10ms"}},
		} {
			if gpu.Built() && tc.args[0] == "--mode" && tc.args[1] != "quantum" {
				continue // a cuda build runs them (gpu_cuda_test.go)
			}
			args := append(append([]string{}, cmd...), tc.args...)
			args = append(args, "--duration", "100ms")
			code, stdout, stderr := cli(t, args...)
			assert.Equal(t, 2, code, "%v: %s", args, stderr)
			assert.Empty(t, stdout, "%v", args)
			for _, w := range tc.want {
				assert.Contains(t, stderr, w, "%v", args)
			}
		}
	}
}

// TestSummaryReportsScheduling: the JSON summary has the policy and, per
// processor kind, the tasks and bytes per query and the throughput matrix.
func TestSummaryReportsScheduling(t *testing.T) {
	t.Parallel()
	// With one processor kind the matrix averages the counters: the
	// measured entry is there however short the run (a longer one only
	// spends CPU).
	code, stdout, stderr := cli(t, "ysb", "--duration", "150ms", "--warmup", "50ms", "--workers", "2", "--json", "--policy", "hls",
		"--ingest-core", "0", "--bundle-size", "1048576")
	require.Equal(t, 0, code, stderr)
	var s struct {
		Policy     string `json:"policy"`
		Tasks      uint64 `json:"tasks"`
		Validated  bool   `json:"validated"`
		IngestCore *int   `json:"ingest_core"`
		Processors struct {
			Kinds   []string    `json:"kinds"`
			Queries []string    `json:"queries"`
			Tasks   [][]uint64  `json:"tasks"`
			Matrix  [][]float64 `json:"matrix_bytes_per_s"`
		} `json:"processors"`
	}
	require.NoError(t, json.Unmarshal([]byte(lastLine(stdout)), &s))
	assert.Equal(t, "hls", s.Policy)
	assert.True(t, s.Validated)
	assert.Equal(t, []string{"cpu"}, s.Processors.Kinds)
	assert.Equal(t, []string{"ysb"}, s.Processors.Queries)
	require.Len(t, s.Processors.Tasks, 1)
	assert.Equal(t, s.Tasks, s.Processors.Tasks[0][0], "every task ran on the CPU kind")
	assert.Positive(t, s.Processors.Matrix[0][0])
	require.NotNil(t, s.IngestCore)
	assert.Equal(t, 0, *s.IngestCore)

	code, stdout, stderr = cli(t, "bench", "proj,groupby", "--duration", "100ms", "--json", "--policy", "fcfs", "--bundle-size", "1048576")
	require.Equal(t, 0, code, stderr)
	var b struct {
		Policy     string `json:"policy"`
		Processors struct {
			Queries []string   `json:"queries"`
			Tasks   [][]uint64 `json:"tasks"`
		} `json:"processors"`
	}
	require.NoError(t, json.Unmarshal([]byte(lastLine(stdout)), &b))
	assert.Equal(t, "fcfs", b.Policy)
	assert.Len(t, b.Processors.Queries, 2)
	require.Len(t, b.Processors.Tasks, 1)
	assert.Len(t, b.Processors.Tasks[0], 2)
}

// TestTimeFlagsTakeDurations: the millisecond flags take a Go duration,
// and a bare integer stays milliseconds; what is neither, or not whole
// milliseconds, is a usage error naming the flag.
func TestTimeFlagsTakeDurations(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		arg  string
		want int64
	}{{"200ms", 200}, {"200", 200}, {"2s", 2000}, {"1m30s", 90000}, {"0", 0}, {"-5", -5}} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		var ms int64
		f := msVar(fs, &ms, "watermark-delay", 7, "delay")
		assert.Equal(t, int64(7), ms, "the default")
		require.NoError(t, fs.Parse([]string{"--watermark-delay", c.arg}), c.arg)
		assert.Equal(t, c.want, ms, c.arg)
		assert.Equal(t, c.arg != "200" && c.arg != "0" && c.arg != "-5", f.duration, c.arg)
	}
	for _, bad := range []string{"1.5ms", "soon", "10 s"} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var ms int64
		msVar(fs, &ms, "watermark-delay", 0, "delay")
		assert.Error(t, fs.Parse([]string{"--watermark-delay", bad}), bad)
	}
	for _, args := range [][]string{
		{"ysb", "check", "--redis", "127.0.0.1:1", "--events", "none", "--watermark-delay", "1.5ms"},
		{"ysb", "produce", "--brokers", "127.0.0.1:1", "--skew", "soon"},
		{"ysb", "--source", "kafka", "--watermark-delay", "x"},
	} {
		code, _, stderr := cli(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, stderr)
		assert.Contains(t, stderr, "-"+args[len(args)-2][2:], "%v", args)
	}
	// Accepted by the command: the check then fails on the missing log.
	code, _, stderr := cli(t, "ysb", "check", "--redis", "127.0.0.1:1", "--events", filepath.Join(t.TempDir(), "none"), "--watermark-delay", "200ms")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "events:", "the delay was taken; the log is what is missing")
}

// TestProgressInterval: --progress-interval sets how often the progress
// line goes to stderr while the run goes on (0: TestStartProgressOff).
// run reads a FIFO that stays empty for 400 ms (or until three lines
// came): eight intervals of 50 ms with the engine idle; ysb and bench run flat out for 300 ms, where the
// default of a second would print nothing.
func TestProgressInterval(t *testing.T) {
	t.Parallel()
	count := func(stderr, prefix string) int {
		n := 0
		for l := range strings.Lines(stderr) {
			if strings.HasPrefix(l, prefix) && strings.Contains(l, "M tuples/s") {
				n++
			}
		}
		return n
	}
	t.Run("run", func(t *testing.T) {
		t.Parallel()
		fifo := filepath.Join(t.TempDir(), "in.csv")
		require.NoError(t, syscall.Mkfifo(fifo, 0o600))
		sql := `CREATE SOURCE e (ts BIGINT, k INT) WITH (connector = 'file', path = '` + fifo + `', format = 'csv');
SELECT window_start, k, COUNT(*) AS n FROM TUMBLE(e, ts, INTERVAL '1' SECOND) GROUP BY k;`
		type result struct {
			code   int
			stderr string
		}
		done := make(chan result, 1)
		var stderr lockedBuffer
		go func() {
			code := run([]string{"run", "-e", sql, "--output", "/dev/null", "--workers", "1", "--pin=false", "--progress-interval", "50ms"}, io.Discard, &stderr)
			done <- result{code, stderr.String()}
		}()
		opened := make(chan *os.File, 1)
		go func() {
			if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				opened <- w
			}
		}()
		var w *os.File
		select {
		case w = <-opened:
		case r := <-done:
			// Unblock the writer's open before failing.
			if rd, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
				(<-opened).Close()
				rd.Close()
			}
			t.Fatalf("run ended before it read its input: exit %d: %s", r.code, r.stderr)
		}
		// Eight intervals, or, where a loaded machine starves the
		// ticker, until three lines came (at most 10 s).
		time.Sleep(400 * time.Millisecond)
		for deadline := time.Now().Add(10 * time.Second); count(stderr.String(), "run ") < 3 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		_, err := w.WriteString("1000,1\n2000,2\n")
		require.NoError(t, err)
		require.NoError(t, w.Close())
		r := <-done
		require.Equal(t, 0, r.code, r.stderr)
		assert.GreaterOrEqual(t, count(r.stderr, "run "), 3, "a line every 50 ms of 400 ms: %s", r.stderr)
	})
	for name, tc := range map[string]struct {
		args   []string
		prefix string
	}{
		"ysb":   {[]string{"ysb", "--warmup", "0s", "--bundle-size", "1048576"}, "ysb "},
		"bench": {[]string{"bench", "groupby", "--bundle-size", "1048576"}, "bench "},
	} {
		// Not pinned: runs pinned side by side in one process (the tests)
		// pin their workers to the same CPUs, and a run's progress
		// goroutine can then wait behind the others' for the whole run.
		t.Run(name, func(t *testing.T) {
			code, _, stderr := cli(t, append(tc.args, "--duration", "300ms", "--workers", "1", "--pin=false", "--progress-interval", "50ms")...)
			require.Equal(t, 0, code, stderr)
			assert.Positive(t, count(stderr, tc.prefix), "a line every 50 ms of a 300 ms run: %s", stderr)
		})
	}
}

// TestStartProgressOff: with --progress-interval 0 no progress line is
// written however long the run; with an interval, one per interval.
func TestStartProgressOff(t *testing.T) {
	t.Parallel()
	eng := idleEngine(t)
	for _, every := range []time.Duration{0, 5 * time.Millisecond} {
		var out lockedBuffer
		f := engineFlags{progress: every}
		stop := f.startProgress(&out, "test", eng, time.Now())
		// Twelve intervals, or, where a loaded machine starves the
		// ticker, until three lines came (at most 10 s).
		time.Sleep(60 * time.Millisecond)
		for deadline := time.Now().Add(10 * time.Second); every > 0 && strings.Count(out.String(), "test ") < 3 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		stop()
		if every == 0 {
			assert.Empty(t, out.String())
		} else {
			assert.GreaterOrEqual(t, strings.Count(out.String(), "test "), 3, out.String())
		}
	}
}
