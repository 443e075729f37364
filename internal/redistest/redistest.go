// Package redistest starts a real redis-server for a test: on a free
// loopback port, stopped when the test ends; without persistence, or
// with (StartPersistent) an append-only file written before each reply.
// A test of a server going away kills it (Stop) and may start it again on
// the same port (Restart): empty, or with every write it acknowledged.
package redistest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// RequireEnv is the environment variable that turns a missing
// redis-server from a skip into a failure (CI sets it to 1).
const RequireEnv = "SABER_HX_REQUIRE_SERVERS"

// Server is a running redis-server.
type Server struct {
	Addr string // host:port on 127.0.0.1
	bin  string
	port int
	dir  string // with persistence: its append-only file's directory
	log  *lockedBuffer

	mu     sync.Mutex
	cmd    *exec.Cmd // the running process; nil once stopped
	exited chan error
}

// Start starts a redis-server and returns it once it answers PING. It
// skips the test when the binary is not installed, unless RequireEnv is
// 1: then the test fails. The server is killed, and waited for, in
// t.Cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	return startServer(t, "")
}

// StartPersistent is Start for a server that keeps its data across Stop
// and Restart: an append-only file, fsynced before each reply, in a
// temporary directory, as a production Redis that must not lose an
// acknowledged write is configured.
func StartPersistent(t testing.TB) *Server {
	t.Helper()
	return startServer(t, t.TempDir())
}

func startServer(t testing.TB, dir string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("redis-server not found (%v) and %s=1", err, RequireEnv)
		}
		t.Skipf("redis-server not installed (%v); set %s=1 to make this a failure", err, RequireEnv)
	}
	// A port picked by the kernel then freed can be taken by another
	// process before redis binds it: try a few.
	var last error
	for range 5 {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: free port: %v", err)
		}
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), bin: bin, port: port, dir: dir, log: &lockedBuffer{}}
		err = s.start()
		if err == nil {
			t.Cleanup(s.Stop)
			return s
		}
		last = err
	}
	t.Fatalf("redistest: %v", last)
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start runs the server on s.port and waits for its PING.
func (s *Server) start() error {
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", ""}
	if s.dir != "" {
		args = append(args, "--dir", s.dir, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("redis-server on port %d exited (%v): %s", s.port, err, s.log.String())
		default:
		}
		if ping(s.Addr) == nil {
			s.mu.Lock()
			s.cmd, s.exited = cmd, exited
			s.mu.Unlock()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
	return fmt.Errorf("redis-server on port %d did not answer PING within 10 s: %s", s.port, s.log.String())
}

// ping sends an inline PING and wants +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(buf[:n], []byte("+PONG")) {
		return fmt.Errorf("PING answered %q", buf[:n])
	}
	return nil
}

// Stop kills the server (SIGKILL: a crash) and waits for it (a test of a
// server going away); Cleanup does it too. Stopping a stopped server does
// nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd, s.exited = nil, nil
}

// Restart starts a stopped server again on the same port (Addr): empty,
// as a server without persistence comes back after a crash, or from its
// append-only file (StartPersistent). It fails t if the port was taken
// meanwhile or the server does not answer; it stops the server first if
// it is running.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	// The port may still be held for a moment by the dying process'
	// socket: retry for a while.
	var err error
	for range 50 {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("redistest: restart on %s: %v", s.Addr, err)
}

// Log is what the server wrote so far (for a failing test's message).
func (s *Server) Log() string { return s.log.String() }

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
