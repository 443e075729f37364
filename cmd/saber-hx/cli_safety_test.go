package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// safetyProgram writes a CSV input and a SQL program reading it (absolute
// paths) into a new directory and returns their paths.
func safetyProgram(t *testing.T) (dir, sqlFile, csvFile string) {
	t.Helper()
	dir = t.TempDir()
	csvFile = filepath.Join(dir, "readings.csv")
	require.NoError(t, os.WriteFile(csvFile, []byte("ts,sensor,value\n1000,1,20.5\n1500,2,150\n61000,2,300\n"), 0o644))
	sqlFile = filepath.Join(dir, "hot.sql")
	require.NoError(t, os.WriteFile(sqlFile, fmt.Appendf(nil, `CREATE SOURCE readings (ts BIGINT, sensor INT, value DOUBLE)
  WITH (connector = 'file', path = '%s', format = 'csv', header = 'true');
SELECT window_start, sensor, COUNT(*) AS n FROM TUMBLE(readings, ts, INTERVAL '1' MINUTE) GROUP BY window_start, sensor;
`, csvFile), 0o644))
	return dir, sqlFile, csvFile
}

// TestProfilesNeverReplaceOtherFiles: --cpuprofile and --memprofile naming
// the SQL program or its input are refused (exit 2) and leave the file as
// it was (they made it a profile, or emptied the input before it was
// read, and the run succeeded); one file for both profiles is refused.
func TestProfilesNeverReplaceOtherFiles(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--cpuprofile", "--memprofile"} {
		for _, which := range []string{"sql", "csv"} {
			_, sqlFile, csvFile := safetyProgram(t)
			target := map[string]string{"sql": sqlFile, "csv": csvFile}[which]
			before, err := os.ReadFile(target)
			require.NoError(t, err)
			code, _, stderr := cli(t, "run", sqlFile, "--progress-interval", "0", flag, target)
			after, err := os.ReadFile(target)
			require.NoError(t, err)
			assert.Equal(t, string(before), string(after), "%s naming the %s file", flag, which)
			assert.Equal(t, 2, code, "%s naming the %s file: %s", flag, which, stderr)
			assert.Contains(t, stderr, "exists and is not a profile")
		}
	}
	dir, sqlFile, _ := safetyProgram(t)
	p := filepath.Join(dir, "both.prof")
	code, _, stderr := cli(t, "run", sqlFile, "--progress-interval", "0", "--cpuprofile", p, "--memprofile", p)
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "is the CPU profile's file too")

	// A profile in the run's output, which does not exist yet: --output,
	// a file sink's path, ysb's --output. The rows would have been lost
	// (the profile renamed over them, or they over it).
	dir, sqlFile, csvFile := safetyProgram(t)
	out := filepath.Join(dir, "rows.csv")
	code, _, stderr = cli(t, "run", sqlFile, "--progress-interval", "0", "--output", out, "--cpuprofile", out)
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "--cpuprofile: "+out+" is an output of the run too")
	assert.NoFileExists(t, out)
	sinkSQL := filepath.Join(dir, "sink.sql")
	require.NoError(t, os.WriteFile(sinkSQL, fmt.Appendf(nil, `CREATE SOURCE readings (ts BIGINT, sensor INT, value DOUBLE)
  WITH (connector = 'file', path = '%s', format = 'csv', header = 'true');
CREATE SINK hot AS SELECT ts, sensor FROM readings WHERE value > 100 WITH (connector = 'file', path = '%s');
`, csvFile, out), 0o644))
	code, _, stderr = cli(t, "run", sinkSQL, "--progress-interval", "0", "--memprofile", out)
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "--memprofile: "+out+" is an output of the run too")
	assert.NoFileExists(t, out)
	code, _, stderr = cli(t, "ysb", "--input", csvFile, "--campaigns", csvFile, "--output", out, "--cpuprofile", out)
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "is an output of the run too")
	assert.NoFileExists(t, out)
	// Another file for the profile: the run writes both.
	code, _, stderr = cli(t, "run", sqlFile, "--progress-interval", "0", "--output", out, "--cpuprofile", filepath.Join(dir, "cpu.prof"))
	assert.Equal(t, 0, code, stderr)
	assert.FileExists(t, out)
	assert.FileExists(t, filepath.Join(dir, "cpu.prof"))
}

// TestOutputToDevStdout: rows to /dev/stdout leave standard output to
// them, as --output - does: the summary (--json) goes to stderr, where it
// followed the rows on stdout.
func TestOutputToDevStdout(t *testing.T) {
	t.Parallel()
	_, sqlFile, _ := safetyProgram(t)
	cmd := exec.Command(os.Args[0], "run", sqlFile, "--output", "/dev/stdout", "--json", "--progress-interval", "0")
	cmd.Env = append(os.Environ(), asCommandEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	assert.Equal(t, "window_start,sensor,n\n0,1,1\n0,2,1\n60000,2,1\n", stdout.String(), "stdout holds the CSV alone")
	assert.Contains(t, stderr.String(), `"file":`, "the JSON summary on stderr")
}

// TestTwoSourcesOfStandardInput: two sources reading standard input are
// refused (exit 2), as two queries writing stdout are: each read an
// arbitrary share of its records.
func TestTwoSourcesOfStandardInput(t *testing.T) {
	t.Parallel()
	for _, second := range []string{"connector = 'stdin', format = 'csv'", "connector = 'file', path = '/dev/stdin', format = 'csv'"} {
		text := `CREATE SOURCE a (ts BIGINT, v INT) WITH (connector = 'stdin', format = 'csv');
CREATE SOURCE b (ts BIGINT, v INT) WITH (` + second + `);
CREATE SINK x AS SELECT window_start, COUNT(*) AS n FROM TUMBLE(a, ts, INTERVAL '1' SECOND) GROUP BY window_start WITH (connector = 'print');
CREATE SINK y AS SELECT window_start, COUNT(*) AS n FROM TUMBLE(b, ts, INTERVAL '1' SECOND) GROUP BY window_start WITH (connector = 'blackhole');`
		cmd := exec.Command(os.Args[0], "run", "-e", text, "--progress-interval", "0")
		cmd.Env = append(os.Environ(), asCommandEnv+"=1")
		cmd.Stdin = strings.NewReader("1,1\n2,2\n")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		_ = cmd.Run()
		assert.Equal(t, 2, cmd.ProcessState.ExitCode(), "stdout %q stderr %q", stdout.String(), stderr.String())
		assert.Contains(t, stderr.String(), "sources a and b both read standard input")
	}
}

// TestFlagsAroundTheFile: run's and explain's flags may come before and
// after the SQL file, as bench's around its workload.
func TestFlagsAroundTheFile(t *testing.T) {
	t.Parallel()
	_, sqlFile, _ := safetyProgram(t)
	code, _, stderr := cli(t, "run", "--progress-interval", "0", sqlFile, "--workers", "1")
	assert.Equal(t, 0, code, stderr)
	code, _, stderr = cli(t, "explain", "--kernel", "vector", sqlFile, "-kernel", "auto")
	assert.Equal(t, 0, code, stderr)
	code, _, stderr = cli(t, "run", "--progress-interval", "0", sqlFile, "--workers", "1", "extra")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, `unexpected argument "extra"`)
}

// TestClosedStandardOutput: a reader of the rows on stdout that goes away
// (| head -1) ends the run quietly with 141, as SIGPIPE would, its file
// output's temporary file removed (SIGPIPE killed the process and left
// it behind).
func TestClosedStandardOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sqlFile := filepath.Join(dir, "both.sql")
	require.NoError(t, os.WriteFile(sqlFile, fmt.Appendf(nil, `CREATE SOURCE synthetic (
  timestamp BIGINT, a1 INT, a2 INT, a3 INT, a4 INT, a5 INT, a6 INT
) WITH (connector = 'generator', workload = 'proj');
SELECT a1, a2 FROM synthetic;
CREATE SINK archive AS SELECT a1 * 3 + 2 AS p1 FROM synthetic WITH (connector = 'file', path = '%s/archive.csv', format = 'csv');
`, dir), 0o644))
	cmd := exec.Command(os.Args[0], "run", sqlFile, "--duration", "5s", "--progress-interval", "0", "--workers", "1")
	cmd.Env = append(os.Environ(), asCommandEnv+"=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	buf := make([]byte, 6)
	_, err = io.ReadFull(out, buf)
	require.NoError(t, err)
	assert.Equal(t, "a1,a2\n", string(buf))
	require.NoError(t, out.Close()) // as head -1 does
	_ = cmd.Wait()
	assert.Equal(t, 141, cmd.ProcessState.ExitCode(), "stderr %q", stderr.String())
	assert.NotContains(t, stderr.String(), "broken pipe")
	left, err := filepath.Glob(filepath.Join(dir, ".archive.csv.tmp-*"))
	require.NoError(t, err)
	assert.Empty(t, left, "the file output's temporary file left behind")
	assert.NoFileExists(t, filepath.Join(dir, "archive.csv"), "a failed run commits no file")
}

// TestEngineFlagsThatWouldDoNothing: an engine flag given where it is not
// read is refused (exit 2), naming it and what it needs: they were
// accepted and ignored.
func TestEngineFlagsThatWouldDoNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--policy", "fcfs", "--monitor-interval", "2s"}, "--monitor-interval: how often hls measures the processors: needs --mode hybrid and --policy hls"},
		{[]string{"--mode", "gpu", "--gpu-emulate", "--workers", "3"}, "--workers: --mode gpu runs no CPU workers"},
		{[]string{"--mode", "gpu", "--gpu-emulate", "--placement", "spread"}, "--placement: --mode gpu runs no CPU workers"},
		{[]string{"--mode", "gpu", "--gpu-emulate", "--pin", "true"}, "--pin: --mode gpu runs no CPU workers"},
		{[]string{"--cores", "0", "--placement", "spread"}, "--placement: --cores places the workers on the CPUs it lists"},
		{[]string{"--pin", "false", "--mem-policy", "bind"}, "--mem-policy: the workers are not pinned"},
		{[]string{"--pin", "false", "--placement", "spread"}, "--placement: the workers are not pinned"},
	} {
		code, _, stderr := cli(t, append([]string{"ysb", "--duration", "100ms", "--warmup", "0s"}, c.args...)...)
		assert.Equal(t, 2, code, "%v: %s", c.args, stderr)
		assert.Contains(t, stderr, c.msg, "%v", c.args)
	}
}

// TestProgramWithoutAQuery: a program of sources alone is refused,
// saying what it lacks (it said "engine: no query").
func TestProgramWithoutAQuery(t *testing.T) {
	t.Parallel()
	code, _, stderr := cli(t, "run", "-e", "CREATE SOURCE e (ts BIGINT, v INT) WITH (connector = 'stdin', format = 'csv');")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "the program has no query: nothing reads its sources")
}

// TestHelpCommand: help COMMAND prints the command's flags (it printed
// the general help); the general help names every command.
func TestHelpCommand(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := cli(t, "help", "run")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout+stderr, "saber-hx run FILE.sql [flags]")
	assert.Contains(t, stdout+stderr, "-progress-interval duration")
	code, stdout, _ = cli(t, "help")
	assert.Equal(t, 0, code)
	for _, w := range []string{"ysb setup|produce|check", "explain", "topology", "141"} {
		assert.Contains(t, stdout, w)
	}
}

// TestClosedStandardOutputOfEveryCommand: ysb's results on stdout, and
// run's rows to /dev/stdout, whose reader went away end quietly with 141
// as run's rows to - do: with SIGPIPE taken (TestClosedStandardOutput),
// their writes failed with "broken pipe" and exit 1.
func TestClosedStandardOutputOfEveryCommand(t *testing.T) {
	t.Parallel()
	events, campaigns := generate(t, t.TempDir(), 20000)
	_, sqlFile, _ := safetyProgram(t)
	for _, args := range [][]string{
		{"ysb", "--input", events, "--campaigns", campaigns, "--output", "-", "--workers", "1"},
		{"run", sqlFile, "--output", "/dev/stdout", "--progress-interval", "0"},
	} {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), asCommandEnv+"=1")
		// A pipe whose reader is gone before the command writes at all.
		r, w, err := os.Pipe()
		require.NoError(t, err)
		require.NoError(t, r.Close())
		cmd.Stdout = w
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		require.NoError(t, w.Close())
		_ = cmd.Wait()
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		assert.True(t, ws.ExitStatus() == 141 || ws.Signaled() && ws.Signal() == syscall.SIGPIPE, "%v: exit %d, stderr %q", args[0], ws.ExitStatus(), stderr.String())
		assert.NotContains(t, stderr.String(), "broken pipe", "%v", args[0])
	}
}
