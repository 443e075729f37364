package redistest

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/saber-hx/saber-hx/internal/tlstest"
)

// Secure is how StartSecure secures a server.
type Secure struct {
	// Password is the default user's (requirepass; "": none).
	Password string
	// Users are ACL users besides the default one.
	Users []ACLUser
	// TLS, where set, makes the server listen with TLS only (its server
	// certificate; no plaintext port); ClientAuth requires a client
	// certificate it signed (tls-auth-clients yes).
	TLS        *tlstest.PKI
	ClientAuth bool
}

// ACLUser is an ACL user: its name, password and rules (nil: every key,
// channel and command: ~* &* +@all).
type ACLUser struct {
	Name, Password string
	Rules          []string
}

// SecureServer is a running redis-server that requires a password and/or
// TLS.
type SecureServer struct {
	Addr string // host:port on 127.0.0.1: the TLS port where TLS is on
	Sec  Secure

	log  *lockedBuffer
	mu   sync.Mutex
	cmd  *exec.Cmd
	exit chan error
}

// StartSecure starts a redis-server secured as sec says, once it answers
// (a PING answered NOAUTH counts), skipping or failing t as Start does
// where redis-server is not installed; it is killed in t.Cleanup.
// Debian's redis-server (7.0) is built with TLS.
func StartSecure(t testing.TB, sec Secure) *SecureServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("redis-server not found (%v) and %s=1", err, RequireEnv)
		}
		t.Skipf("redis-server not installed (%v); set %s=1 to make this a failure", err, RequireEnv)
	}
	var last error
	for range 5 {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: free port: %v", err)
		}
		s := &SecureServer{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Sec: sec, log: &lockedBuffer{}}
		if last = s.start(bin, port); last == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatalf("redistest: %v", last)
	return nil
}

func (s *SecureServer) args(port int) []string {
	args := []string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}
	p := strconv.Itoa(port)
	if tc := s.Sec.TLS; tc != nil {
		auth := "no"
		if s.Sec.ClientAuth {
			auth = "yes"
		}
		args = append(args, "--port", "0", "--tls-port", p, "--tls-cert-file", tc.ServerCert, "--tls-key-file", tc.ServerKey,
			"--tls-ca-cert-file", tc.CA, "--tls-auth-clients", auth)
	} else {
		args = append(args, "--port", p)
	}
	if s.Sec.Password != "" {
		args = append(args, "--requirepass", s.Sec.Password)
	}
	for _, u := range s.Sec.Users {
		rules := u.Rules
		if rules == nil {
			rules = []string{"~*", "&*", "+@all"}
		}
		args = append(append(args, "--user", u.Name, "on", ">"+u.Password), rules...)
	}
	return args
}

func (s *SecureServer) start(bin string, port int) error {
	cmd := exec.Command(bin, s.args(port)...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exit := make(chan error, 1)
	go func() { exit <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exit:
			return fmt.Errorf("redis-server on port %d exited (%v): %s", port, err, s.log.String())
		default:
		}
		if s.answers() == nil {
			s.mu.Lock()
			s.cmd, s.exit = cmd, exit
			s.mu.Unlock()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exit
	return fmt.Errorf("redis-server on port %d did not answer within 10 s: %s", port, s.log.String())
}

// answers sends PING (over TLS where the server has it) and wants a
// reply: +PONG, or -NOAUTH from a server with a password.
func (s *SecureServer) answers() error {
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return err
	}
	if tc := s.Sec.TLS; tc != nil {
		cfg := tc.ClientConfig(s.Sec.ClientAuth)
		cfg.ServerName = "localhost"
		c = tls.Client(c, cfg)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(buf[:n], []byte("+PONG")) && !bytes.HasPrefix(buf[:n], []byte("-NOAUTH")) {
		return fmt.Errorf("PING answered %q", buf[:n])
	}
	return nil
}

// Stop kills the server and waits for it; Cleanup does it too.
func (s *SecureServer) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exit
	s.cmd, s.exit = nil, nil
}

// Log is what the server wrote so far.
func (s *SecureServer) Log() string { return s.log.String() }
