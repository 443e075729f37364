package redissink

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/redistest"
	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/internal/tlstest"
)

const secPass = "red1s-Pa55-never-shown"

func secret(s string) security.Secret { return security.NewSecret(s) }

// TestSecureHash: the hash sink writes through a server's password,
// as an ACL user, over TLS (the CA given), with a client certificate
// (mutual TLS), and through a rediss:// URL; the rows are read back by a
// client of its own.
func TestSecureHash(t *testing.T) {
	t.Parallel()
	pki := tlstest.New(t)
	pw := redistest.StartSecure(t, redistest.Secure{Password: secPass, Users: []redistest.ACLUser{{Name: "sink", Password: "acl-" + secPass}}})
	tlsSrv := redistest.StartSecure(t, redistest.Secure{Password: secPass, TLS: pki})
	mtls := redistest.StartSecure(t, redistest.Secure{TLS: pki, ClientAuth: true})
	url, err := security.ParseRedisURL("rediss://:" + secPass + "@" + tlsSrv.Addr + "/1")
	require.NoError(t, err)
	url.CA = pki.CA
	for name, srv := range map[string]security.Redis{
		"password":   {Addr: pw.Addr, Password: secret(secPass)},
		"ACL user":   {Addr: pw.Addr, Username: "sink", Password: secret("acl-" + secPass)},
		"TLS":        {Addr: tlsSrv.Addr, Password: secret(secPass), TLS: true, CA: pki.CA},
		"mutual TLS": {Addr: mtls.Addr, TLS: true, CA: pki.CA, Cert: pki.ClientCert, Key: pki.ClientKey},
		"rediss URL": url,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			h, err := NewHash(ctx, HashConfig{Server: srv, KeyTemplate: "cm1:{window_start}:{cat}", Columns: []string{"window_start", "cat", "cnt"},
				RetryTimeout: time.Minute})
			require.NoError(t, err)
			defer h.Close()
			h.Add(cm1Row{1000, "a", 3})
			h.Add(cm1Row{1000, "b", 4})
			require.NoError(t, h.Flush(ctx))
			cl, err := srv.Connect(ctx)
			require.NoError(t, err)
			defer cl.Close()
			m, err := cl.HGetAll(ctx, "cm1:1000:b").Result()
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"window_start": "1000", "cat": "b", "cnt": "4"}, m)
		})
	}
}

// TestSecureYSB: the YSB layout over TLS as an ACL user.
func TestSecureYSB(t *testing.T) {
	t.Parallel()
	pki := tlstest.New(t)
	srv := redistest.StartSecure(t, redistest.Secure{Password: secPass, TLS: pki, Users: []redistest.ACLUser{{Name: "ysb", Password: "y-" + secPass}}})
	r := security.Redis{Addr: srv.Addr, Username: "ysb", Password: secret("y-" + secPass), TLS: true, CA: pki.CA}
	ctx := context.Background()
	y, err := NewYSB(ctx, YSBConfig{Server: r})
	require.NoError(t, err)
	defer y.Close()
	c := [16]byte{7}
	y.Add(c, 10000, 42)
	require.NoError(t, y.Flush(ctx))
	cl, err := r.Connect(ctx)
	require.NoError(t, err)
	defer cl.Close()
	starts, counts, _ := readYSB(t, cl, c)
	assert.Equal(t, []string{"10000"}, starts)
	assert.Equal(t, map[string]string{"10000": "42"}, counts)
}

// TestSecureRefused: a server that refuses the sink's connection fails
// NewHash and NewYSB at once, even with an hour's retry budget, with a
// *security.Error naming the server and what failed, without the
// password: a wrong password, none where one is required, an ACL user's
// wrong password, a wrong CA, a plaintext sink at the TLS port.
func TestSecureRefused(t *testing.T) {
	t.Parallel()
	pki, other := tlstest.New(t), tlstest.New(t)
	pw := redistest.StartSecure(t, redistest.Secure{Password: secPass, Users: []redistest.ACLUser{{Name: "sink", Password: "acl-" + secPass}}})
	tlsSrv := redistest.StartSecure(t, redistest.Secure{Password: secPass, TLS: pki})
	for _, c := range []struct {
		name string
		srv  security.Redis
		want string
	}{
		{"wrong password", security.Redis{Addr: pw.Addr, Password: secret("x-" + secPass)}, "authentication failed"},
		{"no password", security.Redis{Addr: pw.Addr}, "authentication failed"},
		{"ACL user's wrong password", security.Redis{Addr: pw.Addr, Username: "sink", Password: secret(secPass)}, "authentication failed"},
		{"wrong CA", security.Redis{Addr: tlsSrv.Addr, Password: secret(secPass), TLS: true, CA: other.CA}, "TLS handshake failed"},
		{"plaintext to TLS", security.Redis{Addr: tlsSrv.Addr, Password: secret(secPass)}, "TLS handshake failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, herr := NewHash(ctx, HashConfig{Server: c.srv, KeyTemplate: "{a}", Columns: []string{"a"}, RetryTimeout: time.Hour})
			_, yerr := NewYSB(ctx, YSBConfig{Server: c.srv, RetryTimeout: time.Hour})
			require.NoError(t, ctx.Err(), "not at once")
			for _, err := range []error{herr, yerr} {
				require.Error(t, err)
				assert.True(t, security.IsFailure(err), "%v", err)
				assert.Contains(t, err.Error(), "redis "+c.srv.Addr+": "+c.want)
				assert.NotContains(t, err.Error(), secPass)
			}
		})
	}
}

// TestRefusedFlushNotRetried: a flush the server refuses (the ACL user
// may not HSET: NOPERM; the password changed and the connections cut
// while the sink runs: WRONGPASS on its next connection) fails at once
// with a *security.Error, though the retry budget is an hour: no outage
// is reported, and the rows stay buffered.
func TestRefusedFlushNotRetried(t *testing.T) {
	t.Parallel()
	srv := redistest.StartSecure(t, redistest.Secure{Password: secPass, Users: []redistest.ACLUser{
		{Name: "reader", Password: "r-" + secPass, Rules: []string{"~*", "+ping", "+hget"}}}})
	var mu sync.Mutex
	var logs bytes.Buffer
	logf := func(f string, a ...any) { mu.Lock(); defer mu.Unlock(); fmt.Fprintf(&logs, f+"\n", a...) }
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	h, err := NewHash(ctx, HashConfig{Server: security.Redis{Addr: srv.Addr, Username: "reader", Password: secret("r-" + secPass)},
		KeyTemplate: "{a}", Columns: []string{"a"}, RetryTimeout: time.Hour, Logger: logf})
	require.NoError(t, err, "PING is allowed")
	defer h.Close()
	h.Add(cm1Row{cat: "x"})
	err = h.Flush(ctx)
	require.Error(t, err)
	require.NoError(t, ctx.Err())
	assert.True(t, security.IsFailure(err), "%v", err)
	assert.Contains(t, err.Error(), "redis "+srv.Addr+": authentication failed")
	assert.Contains(t, err.Error(), "NOPERM")
	assert.Zero(t, h.Retries())
	assert.False(t, h.Down())
	assert.Equal(t, 1, h.Buffered())

	srvAdmin := security.Redis{Addr: srv.Addr, Password: secret(secPass)}
	y, err := NewYSB(ctx, YSBConfig{Server: srvAdmin, RetryTimeout: time.Hour, Logger: logf})
	require.NoError(t, err)
	defer y.Close()
	y.Add([16]byte{1}, 0, 1)
	require.NoError(t, y.Flush(ctx))
	admin, err := srvAdmin.Connect(ctx)
	require.NoError(t, err)
	defer admin.Close()
	require.NoError(t, admin.ConfigSet(ctx, "requirepass", "new-"+secPass).Err())
	require.NoError(t, admin.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Err())
	y.Add([16]byte{1}, 10000, 2)
	err = y.Flush(ctx)
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "not at once")
	assert.True(t, security.IsFailure(err), "%v", err)
	assert.Contains(t, err.Error(), "redis "+srv.Addr+": authentication failed")
	assert.False(t, y.Down())
	assert.Equal(t, 1, y.Buffered())
	mu.Lock()
	defer mu.Unlock()
	assert.NotContains(t, logs.String(), secPass)
}
