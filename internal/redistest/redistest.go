// Package redistest starts a real redis-server for a test: on a free
// loopback port, without persistence, stopped when the test ends.
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
	Addr   string // host:port on 127.0.0.1
	cmd    *exec.Cmd
	log    *lockedBuffer
	exited chan error
	once   sync.Once
}

// Start starts a redis-server and returns it once it answers PING. It
// skips the test when the binary is not installed, unless RequireEnv is
// 1: then the test fails. The server is killed, and waited for, in
// t.Cleanup.
func Start(t testing.TB) *Server {
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
		s, err := start(bin, port)
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

func start(bin string, port int) (*Server, error) {
	log := &lockedBuffer{}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, log: log}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("redis-server on port %d exited (%v): %s", port, err, log.String())
		default:
		}
		if ping(s.Addr) == nil {
			s.exited = exited
			return s, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
	return nil, fmt.Errorf("redis-server on port %d did not answer PING within 10 s: %s", port, log.String())
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

// Stop kills the server and waits for it (a test of a server going
// away); Cleanup does it too.
func (s *Server) Stop() {
	s.once.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
	})
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
