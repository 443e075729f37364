package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// asCommandEnv makes the test binary run the command line instead of the
// tests (TestMain), so that a test can signal a real saber-hx process.
const asCommandEnv = "SABER_HX_TEST_AS_COMMAND"

func TestMain(m *testing.M) {
	if os.Getenv(asCommandEnv) == "1" {
		main() // the command itself, as the binary runs it
	}
	// Most tests wait on servers and processes: more of them at once
	// than there are cores.
	os.Exit(testenv.MainParallel(m, 8))
}

// signalled is what a command that was sent a signal did.
type signalled struct {
	code           int
	stdout, stderr string
	waited         time.Duration // from the signal to the exit
}

// signalCommand starts saber-hx with args in a process of its own, waits
// for a line of its stderr containing ready, sends sig, and waits for the
// exit (at most limit after the signal; then it is killed and the test
// fails).
func signalCommand(t *testing.T, sig syscall.Signal, ready string, limit time.Duration, args ...string) signalled {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asCommandEnv+"=1")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var stderr bytes.Buffer
	found := make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(errPipe)
		signalledOnce := false
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if !signalledOnce && strings.Contains(sc.Text(), ready) {
				signalledOnce = true
				close(found)
			}
		}
		_, _ = io.Copy(io.Discard, errPipe)
	}()
	select {
	case <-found:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-copied
		_ = cmd.Wait()
		t.Fatalf("no stderr line with %q in 2 minutes:\n%s", ready, stderr.String())
	}
	sent := time.Now()
	require.NoError(t, cmd.Process.Signal(sig))
	exited := make(chan error, 1)
	go func() { <-copied; exited <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-exited:
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("%v not answered in %v:\n%s", sig, limit, stderr.String())
	}
	s := signalled{stdout: stdout.String(), stderr: stderr.String(), waited: time.Since(sent)}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		s.code = ee.ExitCode()
	} else {
		require.NoError(t, werr)
	}
	return s
}

func TestYSBInterrupted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
		name string
	}{{syscall.SIGINT, 130, "SIGINT"}, {syscall.SIGTERM, 143, "SIGTERM"}} {
		t.Run(tc.name, func(t *testing.T) {
			s := signalCommand(t, tc.sig, "measured", time.Minute, "ysb", "--duration", "10m", "--warmup", "0s", "--workers", workers, "--progress-interval", "50ms",
				"--bundle-size", "1048576", "--json")
			assert.Equal(t, tc.code, s.code, "stderr:\n%s", s.stderr)
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(lastLine(s.stdout)), &m), "stdout: %s", s.stdout)
			assert.Equal(t, true, m["interrupted"])
			assert.Equal(t, tc.name, m["signal"])
			assert.Equal(t, true, m["validated"], "every window emitted before the signal was checked")
			assert.Greater(t, m["tuples"], 0.0)
			assert.NotContains(t, s.stderr, "saber-hx: interrupted by", "the summary says it")
			assert.NotContains(t, s.stderr, "not validated")
		})
	}
}

func TestYSBInterruptedInWarmup(t *testing.T) {
	t.Parallel()
	s := signalCommand(t, syscall.SIGINT, "warm-up", time.Minute, "ysb", "--duration", "10m", "--warmup", "10m", "--workers", workers, "--progress-interval", "50ms",
		"--bundle-size", "1048576")
	assert.Equal(t, 130, s.code, "stderr:\n%s", s.stderr)
	assert.Contains(t, s.stdout, "interrupted by SIGINT")
	assert.Contains(t, s.stdout, "interrupted during the 600.000 s warm-up: nothing measured")
	assert.NotContains(t, s.stdout, "measured after")
	assert.Contains(t, s.stdout, "validated: true")
}

func TestBenchInterrupted(t *testing.T) {
	t.Parallel()
	s := signalCommand(t, syscall.SIGTERM, "bench", time.Minute, "bench", "cm1", "--duration", "10m", "--workers", workers, "--progress-interval", "50ms", "--json",
		"--bundle-size", "1048576")
	assert.Equal(t, 143, s.code, "stderr:\n%s", s.stderr)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(lastLine(s.stdout)), &m), "stdout: %s", s.stdout)
	assert.Equal(t, true, m["interrupted"])
	assert.Greater(t, m["tuples"], 0.0)
}

// TestBenchValidationInterrupted: Ctrl-C while the reference evaluator
// runs (sg1 over 100,000 tuples takes more than 20 s, the signal comes
// milliseconds after it starts) ends the command at once. (At 1,000,000
// tuples the run before the validation took seconds of CPU.)
func TestBenchValidationInterrupted(t *testing.T) {
	t.Parallel()
	s := signalCommand(t, syscall.SIGINT, "validating", 30*time.Second, "bench", "sg1", "--validate", "--validate-tuples", "100000",
		"--workers", workers, "--json")
	assert.Equal(t, 130, s.code, "stderr:\n%s", s.stderr)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(lastLine(s.stdout)), &m), "stdout: %s", s.stdout)
	assert.Equal(t, true, m["interrupted"])
	assert.Equal(t, true, m["validation_interrupted"])
	assert.Equal(t, false, m["validated"])
}
