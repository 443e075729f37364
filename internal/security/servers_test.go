package security_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/redistest"
	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/internal/tlstest"
)

const (
	user     = "saber"
	password = "Pa55-w0rd-not-shown"
)

// prompt is how soon a refused connection must be reported: well under
// any retry budget (the tests do not measure speed beyond that).
const prompt = 10 * time.Second

func sasl(mech string) security.Kafka {
	return security.Kafka{Protocol: security.SASLSSL, Mechanism: mech, Username: user, Password: security.NewSecret(password)}
}

// TestKafkaSASLSSL: a client made from the settings produces and reads
// back over SASL_SSL with each mechanism, and over SSL with a client
// certificate (mutual TLS) and without the hostname check.
func TestKafkaSASLSSL(t *testing.T) {
	t.Parallel()
	pki := tlstest.New(t)
	c := kafkatest.StartSecure(t, kafkatest.Secure{User: user, Password: password, TLS: pki}, 1, "t")
	for _, mech := range kafkatest.Mechanisms {
		t.Run(mech, func(t *testing.T) {
			t.Parallel()
			k := sasl(mech)
			k.CA = pki.CA
			roundTrip(t, k, c.Addr, mech)
		})
	}
	t.Run("mTLS", func(t *testing.T) {
		t.Parallel()
		m := kafkatest.StartSecure(t, kafkatest.Secure{TLS: pki, ClientAuth: true}, 1, "t")
		roundTrip(t, security.Kafka{Protocol: security.SSL, CA: pki.CA, Cert: pki.ClientCert, Key: pki.ClientKey, NoHostnameCheck: true}, m.Addr, "mtls")
	})
}

func roundTrip(t *testing.T, k security.Kafka, addr, value string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, g, err := k.Connect(ctx, []string{addr}, kgo.DefaultProduceTopic("t"), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).FirstErr())
	found := false
	for !found {
		fs := cl.PollFetches(ctx)
		require.NoError(t, fs.Err())
		fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == value })
	}
	assert.NoError(t, g.Failure())
}

// refused checks that err is an *Error of kind, naming the server, with
// no password in it.
func refused(t *testing.T, err error, kind security.Kind, server string) {
	t.Helper()
	var se *security.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, kind, se.Kind, "%v", err)
	assert.Contains(t, err.Error(), server)
	assert.Contains(t, err.Error(), kind.String())
	assert.NotContains(t, err.Error(), password)
	assert.True(t, security.Failed(err))
}

// TestKafkaRefused: each way the brokers refuse the settings is an
// *Error at once (the client's ping, and kgo's own retried requests
// bound to the guard): a wrong password with each mechanism, a user the
// broker does not know, a CA that did not sign the broker's certificate,
// the broker's name not in its certificate, a plaintext client at a TLS
// port, a TLS client without SASL at a SASL_SSL listener, SASL towards a
// listener without it, and a missing client certificate.
func TestKafkaRefused(t *testing.T) {
	t.Parallel()
	pki, other := tlstest.New(t), tlstest.New(t)
	secure := kafkatest.StartSecure(t, kafkatest.Secure{User: user, Password: password, TLS: pki}, 1, "t")
	saslOnly := kafkatest.StartSecure(t, kafkatest.Secure{User: user, Password: password}, 1, "t")
	tlsOnly := kafkatest.StartSecure(t, kafkatest.Secure{TLS: pki}, 1, "t")
	mtls := kafkatest.StartSecure(t, kafkatest.Secure{TLS: pki, ClientAuth: true}, 1, "t")
	plain := kafkatest.Start(t, 1, "t")
	wrong := func(mech string) security.Kafka {
		k := sasl(mech)
		k.CA, k.Password = pki.CA, security.NewSecret("wrong-"+password)
		return k
	}
	named := func(k security.Kafka, f func(*security.Kafka)) security.Kafka { f(&k); return k }
	cases := []struct {
		name string
		addr string
		k    security.Kafka
		kind security.Kind
		hint string
	}{
		{"wrong password PLAIN", secure.Addr, wrong(security.Plain), security.AuthFailed, "wrong user name or password"},
		{"wrong password SCRAM-SHA-256", secure.Addr, wrong(security.ScramSHA256), security.AuthFailed, "wrong user name or password"},
		{"wrong password SCRAM-SHA-512", secure.Addr, wrong(security.ScramSHA512), security.AuthFailed, "wrong user name or password"},
		{"unknown user", secure.Addr, named(sasl(security.ScramSHA256), func(k *security.Kafka) { k.CA, k.Username = pki.CA, "nobody" }), security.AuthFailed, "as nobody"},
		{"wrong CA", secure.Addr, named(sasl(security.Plain), func(k *security.Kafka) { k.CA = other.CA }), security.TLSFailed, "not signed by a trusted authority"},
		{"system CAs", tlsOnly.Addr, security.Kafka{Protocol: security.SSL}, security.TLSFailed, "not signed by a trusted authority"},
		{"plaintext to TLS", tlsOnly.Addr, security.Kafka{}, security.TLSFailed, "speaks TLS on this port"},
		{"SASL_PLAINTEXT to SASL_SSL", secure.Addr, named(sasl(security.Plain), func(k *security.Kafka) { k.Protocol = security.SASLPlaintext }), security.TLSFailed, "speaks TLS"},
		{"no SASL to SASL_SSL", secure.Addr, security.Kafka{Protocol: security.SSL, CA: pki.CA}, security.AuthFailed, "requires SASL"},
		{"no SASL to SASL_PLAINTEXT", saslOnly.Addr, security.Kafka{}, security.AuthFailed, "requires SASL"},
		{"SASL to a listener without", plain.Addr, named(sasl(security.Plain), func(k *security.Kafka) { k.Protocol = security.SASLPlaintext }), security.AuthFailed, ""},
		{"no client certificate", mtls.Addr, security.Kafka{Protocol: security.SSL, CA: pki.CA}, security.TLSFailed, "client certificate"},
		// A plaintext listener that keeps the connection open on a
		// ClientHello (kfake, kafka-local) was waited out to the ping's
		// end, the client made, the error none.
		{"TLS to plaintext", plain.Addr, security.Kafka{Protocol: security.SSL, CA: pki.CA}, security.TLSFailed, "answers Kafka in plaintext"},
		{"SASL_SSL to plaintext", plain.Addr, named(sasl(security.Plain), func(k *security.Kafka) { k.CA = pki.CA }), security.TLSFailed, "answers Kafka in plaintext"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), prompt)
			defer cancel()
			cl, _, err := c.k.Connect(ctx, []string{c.addr})
			if cl != nil {
				cl.Close()
			}
			require.NoError(t, ctx.Err(), "not prompt")
			t.Log(err)
			refused(t, err, c.kind, c.addr)
			assert.Contains(t, err.Error(), c.hint)
		})
	}

	// A client used without the ping: kgo retries what the broker
	// closed during authentication, and the guard ends it.
	t.Run("retried by kgo", func(t *testing.T) {
		t.Parallel()
		k := wrong(security.ScramSHA256)
		opts, err := k.Opts()
		require.NoError(t, err)
		g := security.NewGuard(k, []string{secure.Addr})
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(secure.Addr), g.Opt(), kgo.RetryTimeout(time.Minute))...)
		require.NoError(t, err)
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		bctx, bcancel := g.Bind(ctx)
		defer bcancel()
		_, err = kadm.NewClient(cl).ListTopics(bctx)
		require.Error(t, err)
		require.NoError(t, ctx.Err(), "ended by the guard, not the deadline")
		refused(t, g.Err(err), security.AuthFailed, secure.Addr)
		select {
		case <-g.Done():
		default:
			t.Fatal("the guard is not done")
		}
	})
}

// TestKafkaDownIsNotRefused: a broker that is not there is an outage,
// not a refused connection: Connect makes the client (which
// retries), and the ping's error is no *Error.
func TestKafkaDownIsNotRefused(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Broker(t, 1)
	c := kafkatest.StartRestartable(t, 1, "t")
	c.Stop()
	k := security.Kafka{}
	ctx, cancel := context.WithTimeout(context.Background(), prompt)
	defer cancel()
	cl, g, err := k.Connect(ctx, []string{c.Addr})
	require.NoError(t, err)
	defer cl.Close()
	err = g.Ping(ctx, cl)
	require.Error(t, err)
	assert.False(t, security.Failed(err), "%v", err)
	assert.NoError(t, g.Failure())
	_ = addr
}

// TestRedisConnect: a client made from the settings reaches a server
// with a password, as an ACL user, over TLS (the CA given, and mutual
// TLS), through a rediss:// URL, and each refusal is an *Error at once:
// a wrong password, no password, an ACL user's wrong password, a
// command the user may not run (NOPERM, classified from the reply), a
// wrong CA, a plaintext client at the TLS port, a TLS client at a
// plaintext port, no client certificate.
func TestRedisConnect(t *testing.T) {
	t.Parallel()
	pki, other := tlstest.New(t), tlstest.New(t)
	users := []redistest.ACLUser{{Name: "alice", Password: "alice-" + password}, {Name: "limited", Password: "lim-" + password, Rules: []string{"~*", "+ping", "+get"}}}
	pw := redistest.StartSecure(t, redistest.Secure{Password: password, Users: users})
	tlsSrv := redistest.StartSecure(t, redistest.Secure{Password: password, TLS: pki})
	mtls := redistest.StartSecure(t, redistest.Secure{TLS: pki, ClientAuth: true})
	plain := redistest.Start(t)
	ok := map[string]security.Redis{
		"password":   {Addr: pw.Addr, Password: security.NewSecret(password)},
		"ACL user":   {Addr: pw.Addr, Username: "alice", Password: security.NewSecret("alice-" + password)},
		"TLS":        {Addr: tlsSrv.Addr, Password: security.NewSecret(password), TLS: true, CA: pki.CA},
		"mutual TLS": {Addr: mtls.Addr, TLS: true, CA: pki.CA, Cert: pki.ClientCert, Key: pki.ClientKey, ServerName: "localhost"},
	}
	u, err := security.ParseRedisURL("rediss://:" + password + "@" + tlsSrv.Addr + "/3")
	require.NoError(t, err)
	u.CA = pki.CA
	ok["rediss URL"] = u
	for name, r := range ok {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), prompt)
			defer cancel()
			c, err := r.Connect(ctx)
			require.NoError(t, err)
			defer c.Close()
			require.NoError(t, c.HSet(ctx, "k:"+name, "f", "v").Err())
		})
	}
	bad := []struct {
		name string
		r    security.Redis
		kind security.Kind
		hint string
	}{
		{"wrong password", security.Redis{Addr: pw.Addr, Password: security.NewSecret("x" + password)}, security.AuthFailed, "wrong user name or password"},
		{"no password", security.Redis{Addr: pw.Addr}, security.AuthFailed, "requires a password"},
		{"ACL user's wrong password", security.Redis{Addr: pw.Addr, Username: "alice", Password: security.NewSecret(password)}, security.AuthFailed, "wrong user name or password"},
		{"wrong CA", security.Redis{Addr: tlsSrv.Addr, Password: security.NewSecret(password), TLS: true, CA: other.CA}, security.TLSFailed, "not signed by a trusted authority"},
		{"wrong server name", security.Redis{Addr: tlsSrv.Addr, Password: security.NewSecret(password), TLS: true, CA: pki.CA, ServerName: "db.example"}, security.TLSFailed, "does not name the server"},
		{"plaintext to TLS", security.Redis{Addr: tlsSrv.Addr, Password: security.NewSecret(password)}, security.TLSFailed, "speaks TLS on this port"},
		{"TLS to plaintext", security.Redis{Addr: plain.Addr, TLS: true, CA: pki.CA}, security.TLSFailed, "does not speak TLS"},
		{"no client certificate", security.Redis{Addr: mtls.Addr, TLS: true, CA: pki.CA}, security.TLSFailed, ""},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), prompt)
			defer cancel()
			cl, err := c.r.Connect(ctx)
			if cl != nil {
				cl.Close()
			}
			require.NoError(t, ctx.Err(), "not prompt")
			t.Log(err)
			refused(t, err, c.kind, c.r.Addr)
			assert.Contains(t, err.Error(), c.hint)
			assert.Contains(t, err.Error(), "redis "+c.r.Addr)
		})
	}
	t.Run("NOPERM", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), prompt)
		defer cancel()
		c, err := security.Redis{Addr: pw.Addr, Username: "limited", Password: security.NewSecret("lim-" + password)}.Connect(ctx)
		require.NoError(t, err)
		defer c.Close()
		err = c.HSet(ctx, "k", "f", "v").Err()
		require.Error(t, err)
		refused(t, security.Classify("redis "+pw.Addr, err), security.AuthFailed, pw.Addr)
	})
	t.Run("down", func(t *testing.T) {
		t.Parallel()
		s := redistest.Start(t)
		s.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), prompt)
		defer cancel()
		_, err := security.Redis{Addr: s.Addr, Password: security.NewSecret(password)}.Connect(ctx)
		require.Error(t, err)
		assert.False(t, security.Failed(err), "%v", err)
		assert.True(t, strings.HasPrefix(err.Error(), "redis "+s.Addr+": ping: "), err.Error())
		assert.False(t, errors.Is(err, context.DeadlineExceeded))
	})
}
