package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// asMain makes this test binary the command: it runs main instead of
// the tests.
const asMain = "KAFKA_LOCAL_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(runTests(m))
}

// command is the path of the command, to run as a process: a script that
// execs this test binary as the command (the process is the command's,
// signals included), where a go build of the package took about a second
// a test. It is written once, before any test runs: a script written
// while a parallel test forks is held open for writing by the child
// until it execs, and running it then fails with "text file busy"
// (golang.org/issue/22315).
var command string

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "kafka-local-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if command, err = writeCommand(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// writeCommand writes the command's script in dir.
func writeCommand(dir string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kafka-local")
	script := "#!/bin/sh\n" + asMain + "=1 exec '" + self + "' \"$@\"\n"
	return path, os.WriteFile(path, []byte(script), 0o755)
}

// build returns the path of the command (written by TestMain).
func build(t *testing.T) string {
	t.Helper()
	require.NotEmpty(t, command)
	return command
}

// TestBroker runs the command as a process, writes and reads a record
// through it, and stops it with SIGTERM.
func TestBroker(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(build(t), "--addr", "127.0.0.1:0", "--partitions", "3", "--topic", "a,b", "--topic", "c")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := false
	t.Cleanup(func() {
		if !exited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, line, "not for production")
	assert.Contains(t, line, "in memory only")
	m := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`).FindStringSubmatch(line)
	require.NotNil(t, m, "address in %q", line)
	addr := m[1]

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("new"), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DefaultProduceTopic("new"))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	td, err := kadm.NewClient(cl).ListTopics(ctx, "a", "b", "c")
	require.NoError(t, err)
	for _, name := range []string{"a", "b", "c"} {
		require.Contains(t, td, name)
		assert.Len(t, td[name].Partitions, 3, "topic %s", name)
	}

	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte("hello")}).FirstErr())
	var got []string
	for len(got) == 0 {
		fs := cl.PollFetches(ctx)
		require.NoError(t, fs.Err0())
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Key)+"="+string(r.Value)) })
	}
	assert.Equal(t, []string{"k=hello"}, got)
	td, err = kadm.NewClient(cl).ListTopics(ctx, "new")
	require.NoError(t, err)
	assert.Len(t, td["new"].Partitions, 3, "created on first use with --partitions")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err = cmd.Wait()
	exited = true
	assert.NoError(t, err, "exit 0 after SIGTERM")
}

// TestUsage: usage errors exit 2.
func TestUsage(t *testing.T) {
	t.Parallel()
	bin := build(t)
	for _, args := range [][]string{{"--partitions", "0"}, {"--nope"}, {"extra"}, {"--addr", "nocolon"}, {"--topic", ""}} {
		err := exec.Command(bin, args...).Run()
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "%v: %v", args, err)
		assert.Equal(t, 2, ee.ExitCode(), "%v", args)
	}
}

// TestDataDirRestart: with --data-dir, a broker stopped and started
// again on its address has the records it had.
func TestDataDirRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// start runs the broker on addr and returns the address it listens on
	// (its first line: a broker that cannot listen fails the test at once)
	// and a stop that returns its whole output. The first start takes a
	// free port itself: a port found free and closed before the broker
	// took it could be another test's broker by then.
	start := func(addr string) (string, func() string) {
		ctx, cancel := context.WithCancel(context.Background())
		pr, pw := io.Pipe()
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, []string{"--addr", addr, "--topic", "t", "--data-dir", dir}, pw, io.Discard)
			pw.Close()
		}()
		br := bufio.NewReader(pr)
		line, err := br.ReadString('\n')
		require.NoError(t, err, "the broker's first line")
		m := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`).FindStringSubmatch(line)
		require.NotNil(t, m, line)
		rest := make(chan string, 1)
		go func() {
			b, _ := io.ReadAll(br)
			rest <- string(b)
		}()
		return m[1], func() string {
			cancel()
			assert.Equal(t, 0, <-done)
			return line + <-rest
		}
	}
	addr, stop := start("127.0.0.1:0")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("t"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr())
	cl.Close()
	assert.Contains(t, stop(), "data kept in "+dir)

	_, stop = start(addr)
	defer stop()
	cl, err = kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	var got []string
	for len(got) == 0 {
		fs := cl.PollFetches(ctx)
		require.NoError(t, fs.Err0())
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	assert.Equal(t, []string{"before"}, got)
}
