package security

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Kind is what a refused connection failed on.
type Kind uint8

const (
	// AuthFailed: the server refused the credentials (or required some).
	AuthFailed Kind = iota + 1
	// TLSFailed: the TLS handshake failed (a certificate not trusted, a
	// client certificate missing, TLS on one side only).
	TLSFailed
)

func (k Kind) String() string {
	if k == TLSFailed {
		return "TLS handshake failed"
	}
	return "authentication failed"
}

// Error is a connection the server refused, or could not have: the same
// settings fail the same way on every attempt, so it is not retried.
type Error struct {
	Server string // "kafka broker 127.0.0.1:9092", "redis 127.0.0.1:6379"
	Kind   Kind
	Hint   string // what to check ("": nothing to add)
	Err    error  // what the client or the server said
}

// Error reads "SERVER: authentication failed (HINT): ERR" or "SERVER:
// TLS handshake failed (HINT): ERR".
func (e *Error) Error() string {
	var b strings.Builder
	if e.Server != "" {
		b.WriteString(e.Server)
		b.WriteString(": ")
	}
	b.WriteString(e.Kind.String())
	if e.Hint != "" {
		b.WriteString(" (" + e.Hint + ")")
	}
	if e.Err != nil {
		b.WriteString(": ")
		msg := e.Err.Error()
		if e.Server != "" {
			msg = strings.TrimPrefix(msg, e.Server+": ")
		}
		b.WriteString(msg)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// IsFailure is whether err is, or wraps, an *Error.
func IsFailure(err error) bool {
	_, ok := errors.AsType[*Error](err)
	return ok
}

// Failed is whether err is a refused connection: an *Error, or an error
// Classify would make one.
func Failed(err error) bool {
	if err == nil {
		return false
	}
	if IsFailure(err) {
		return true
	}
	_, _, ok := classify(err)
	return ok
}

// Classify returns err as an *Error naming server where it is a refused
// connection (a certificate not trusted, a TLS alert, a server that does
// not speak TLS; a SASL authentication refused or required; Redis's
// WRONGPASS, NOAUTH, NOPERM), else err unchanged. An *Error already is
// one.
func Classify(server string, err error) error {
	if err == nil || IsFailure(err) {
		return err
	}
	if kind, hint, ok := classify(err); ok {
		return &Error{Server: server, Kind: kind, Hint: hint, Err: err}
	}
	return err
}

func classify(err error) (Kind, string, bool) {
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return TLSFailed, hintCert(err), true
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return TLSFailed, hintCert(err), true
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return TLSFailed, hintCert(err), true
	}
	if _, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return TLSFailed, hintCert(err), true
	}
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return TLSFailed, "the server does not speak TLS on this port", true
	}
	if _, ok := errors.AsType[tls.AlertError](err); ok {
		return TLSFailed, hintAlert, true
	}
	if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Op == "remote error" {
		// A TLS alert from the server (crypto/tls reports them so).
		return TLSFailed, hintAlert, true
	}
	if ke, ok := errors.AsType[*kerr.Error](err); ok {
		switch ke {
		case kerr.SaslAuthenticationFailed, kerr.IllegalSaslState:
			return AuthFailed, "wrong user name or password, or the mechanism not enabled for the user", true
		case kerr.UnsupportedSaslMechanism:
			return AuthFailed, "the broker does not offer this SASL mechanism", true
		}
	}
	if re, ok := errors.AsType[redis.Error](err); ok {
		msg := re.Error()
		switch {
		case strings.HasPrefix(msg, "WRONGPASS"):
			return AuthFailed, "wrong user name or password", true
		case strings.HasPrefix(msg, "NOAUTH"):
			return AuthFailed, "the server requires a password", true
		case strings.HasPrefix(msg, "NOPERM"):
			return AuthFailed, "the user is not permitted this command or key by its ACL", true
		case strings.HasPrefix(msg, "ERR AUTH") || strings.Contains(msg, "without any password configured") ||
			strings.Contains(msg, "no password is set"):
			return AuthFailed, "the server has no password set, and a password was given", true
		}
	}
	return 0, "", false
}

const hintAlert = "the server refused the handshake: a client certificate missing or not trusted, or no TLS version or cipher in common"

func hintCert(err error) string {
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return "the server's certificate does not name the server: check the address, or the server name to verify"
	}
	return "the server's certificate is not signed by a trusted authority: check the CA file"
}

// closedAtOnce is whether err is a connection closed or reset by the
// server: what a plaintext client meets at a TLS port, whose server
// ends the connection when the bytes do not start a handshake.
func closedAtOnce(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// probeTimeout bounds speaksTLS.
const probeTimeout = 3 * time.Second

// speaksTLS is whether the server at addr answers a TLS handshake (any
// answer: its certificate is not checked, an alert counts).
func speaksTLS(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer raw.Close()
	host, _, _ := net.SplitHostPort(addr)
	c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, ServerName: host}) //nolint:gosec // a probe of the protocol only: nothing is sent
	err = c.HandshakeContext(ctx)
	if err == nil {
		return true
	}
	if _, ok := errors.AsType[tls.AlertError](err); ok {
		return true
	}
	oe, ok := errors.AsType[*net.OpError](err)
	return ok && oe.Op == "remote error"
}

// handshake makes a TLS connection to addr with tc, within probeTimeout,
// and closes it.
func handshake(ctx context.Context, addr string, tc *tls.Config) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	tc = tc.Clone()
	if tc.ServerName == "" {
		tc.ServerName, _, _ = net.SplitHostPort(addr)
	}
	d := tls.Dialer{Config: tc}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// speaksKafka is whether the server at addr answers a plaintext Kafka
// request (ApiVersions v0, its correlation ID read back): a listener
// without TLS.
func speaksKafka(ctx context.Context, addr string) bool {
	// Length 10; API key 18 (ApiVersions), version 0, correlation ID 7,
	// a null client ID; no body. The answer: its length, the ID.
	resp, ok := probe(ctx, addr, []byte{0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 7, 0xff, 0xff}, 8)
	return ok && binary.BigEndian.Uint32(resp[4:]) == 7
}

// speaksRESP is whether the server at addr answers an inline PING in
// plaintext (+PONG, or an error such as -NOAUTH): a Redis without TLS.
func speaksRESP(ctx context.Context, addr string) bool {
	resp, ok := probe(ctx, addr, []byte("PING\r\n"), 1)
	return ok && (resp[0] == '+' || resp[0] == '-')
}

// probe sends req to addr in plaintext and reads the first n bytes of the
// answer, within probeTimeout.
func probe(ctx context.Context, addr string, req []byte, n int) ([]byte, bool) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, false
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write(req); err != nil {
		return nil, false
	}
	resp := make([]byte, n)
	_, err = io.ReadFull(c, resp)
	return resp, err == nil
}
