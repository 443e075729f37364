package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/internal/tlstest"
)

const localPass = "l0cal-Pa55-never-shown"

// startSecure runs the command in this process with args, and returns
// the address its first line names and that line; it is stopped when t
// ends (exit 0), and its standard error must not show the password.
func startSecure(t *testing.T, args ...string) (string, string) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"--addr", "127.0.0.1:0"}, args...), pw, &stderr)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		assert.Equal(t, 0, <-done)
		assert.NotContains(t, stderr.String(), localPass)
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err, stderr.String())
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	assert.NotContains(t, line, localPass)
	m := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	return m[1], line
}

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

// TestSecureBroker: with --sasl-mechanism, --sasl-user, the password
// from a file (or KAFKA_LOCAL_PASSWORD) and --tls-cert/--tls-key, the
// broker takes a SASL_SSL client of the settings (each mechanism it was
// given), and kcat over SASL_SSL reads what it wrote; a wrong password
// and a plaintext client are refused at once; its output names the
// protocol and user, never the password.
func TestSecureBroker(t *testing.T) {
	// Not parallel: KAFKA_LOCAL_PASSWORD is set for one case.
	pki := tlstest.New(t)
	pwFile := filepath.Join(t.TempDir(), "pw")
	require.NoError(t, os.WriteFile(pwFile, []byte(localPass+"\n"), 0o600))
	for _, setup := range []struct {
		name string
		env  string
		args []string
	}{
		{"password file", "", []string{"--sasl-password-file", pwFile}},
		{"environment", localPass, nil},
	} {
		t.Run(setup.name, func(t *testing.T) {
			t.Setenv(PasswordEnv, setup.env)
			args := append([]string{"--sasl-mechanism", "PLAIN,SCRAM-SHA-256,scram-sha-512", "--sasl-user", "dev",
				"--tls-cert", pki.ServerCert, "--tls-key", pki.ServerKey, "--topic", "t"}, setup.args...)
			addr, line := startSecure(t, args...)
			assert.Contains(t, line, "(SASL_SSL, PLAIN or SCRAM-SHA-256 or SCRAM-SHA-512 as user dev)")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for _, mech := range kafkatest.Mechanisms {
				k := security.Kafka{Protocol: security.SASLSSL, Mechanism: mech, Username: "dev", Password: security.NewSecret(localPass), CA: pki.CA}
				cl, _, err := k.Connect(ctx, []string{addr}, kgo.DefaultProduceTopic("t"))
				require.NoError(t, err, mech)
				require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(mech)}).FirstErr())
				cl.Close()
			}
			sec := kafkatest.Secure{User: "dev", Password: localPass, TLS: pki}
			out := kafkatest.RunKcat(t, nil, append(sec.KcatArgs(t, "SCRAM-SHA-512"), "-C", "-b", addr, "-t", "t", "-e", "-q")...)
			assert.Equal(t, strings.Join(kafkatest.Mechanisms, "\n")+"\n", string(out))

			wrong := security.Kafka{Protocol: security.SASLSSL, Mechanism: security.ScramSHA256, Username: "dev", Password: security.NewSecret("x"), CA: pki.CA}
			_, _, err := wrong.Connect(ctx, []string{addr})
			assert.ErrorContains(t, err, "authentication failed")
			_, _, err = security.Kafka{}.Connect(ctx, []string{addr})
			assert.ErrorContains(t, err, "TLS handshake failed")
			require.NoError(t, ctx.Err())
		})
	}
	t.Run("TLS only", func(t *testing.T) {
		addr, line := startSecure(t, "--tls-cert", pki.ServerCert, "--tls-key", pki.ServerKey)
		assert.Contains(t, line, "(SSL)")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cl, _, err := security.Kafka{Protocol: security.SSL, CA: pki.CA}.Connect(ctx, []string{addr})
		require.NoError(t, err)
		cl.Close()
	})
}

// TestSecureUsage: the SASL and TLS flags' usage errors exit 2 (a file
// that cannot be read, 1), and no password is a flag.
func TestSecureUsage(t *testing.T) {
	t.Setenv(PasswordEnv, "") // the cases without a password have none
	pki := tlstest.New(t)
	pwFile := filepath.Join(t.TempDir(), "pw")
	require.NoError(t, os.WriteFile(pwFile, []byte(localPass), 0o600))
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--sasl-password", localPass}, 2, "flag provided but not defined: -sasl-password"},
		{[]string{"--sasl-mechanism", "GSSAPI", "--sasl-user", "u", "--sasl-password-file", pwFile}, 2, `--sasl-mechanism "GSSAPI": want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512`},
		{[]string{"--sasl-mechanism", "PLAIN", "--sasl-password-file", pwFile}, 2, "--sasl-mechanism needs --sasl-user"},
		{[]string{"--sasl-user", "u"}, 2, "need --sasl-mechanism"},
		{[]string{"--sasl-mechanism", "PLAIN", "--sasl-user", "u"}, 2, "has no password: give --sasl-password-file, or set KAFKA_LOCAL_PASSWORD"},
		{[]string{"--sasl-mechanism", "PLAIN", "--sasl-user", "u", "--sasl-password-file", pwFile + ".missing"}, 1, "--sasl-password-file: open"},
		{[]string{"--tls-cert", pki.ServerCert}, 2, "--tls-cert and --tls-key go together"},
		{[]string{"--tls-cert", pki.ServerCert, "--tls-key", pki.CA}, 1, "--tls-cert " + pki.ServerCert + ", --tls-key " + pki.CA},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"--addr", "127.0.0.1:0"}, tc.args...), io.Discard, &stderr)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, stderr.String())
		assert.Contains(t, stderr.String(), tc.msg, "%v", tc.args)
		assert.NotContains(t, strings.ReplaceAll(stderr.String(), "-sasl-password-file", ""), localPass, "%v", tc.args)
	}
}
