package kafka

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/internal/tlstest"
	"github.com/saber-hx/saber-hx/source"
)

const (
	secUser = "reader"
	secPass = "r3ader-Pa55-never-shown"
)

// TestSecureSource: over SASL_SSL, with each mechanism, records that
// kcat wrote over SASL_SSL are read in the stream order, and the group's
// offsets are committed through the same secured connections (read back
// with a secured admin client); over SSL with a client certificate
// (mutual TLS) too.
func TestSecureSource(t *testing.T) {
	t.Parallel()
	pki := tlstest.New(t)
	sec := kafkatest.Secure{User: secUser, Password: secPass, TLS: pki}
	c := kafkatest.StartSecure(t, sec, 1)
	for _, mech := range kafkatest.Mechanisms {
		t.Run(mech, func(t *testing.T) {
			t.Parallel()
			k := security.Kafka{Protocol: security.SASLSSL, Mechanism: mech, Username: secUser, Password: security.NewSecret(secPass), CA: pki.CA}
			readSecured(t, c.Addr, "in-"+mech, k, sec.KcatArgs(t, mech))
		})
	}
	t.Run("mTLS", func(t *testing.T) {
		t.Parallel()
		sec := kafkatest.Secure{TLS: pki, ClientAuth: true}
		m := kafkatest.StartSecure(t, sec, 1)
		k := security.Kafka{Protocol: security.SSL, CA: pki.CA, Cert: pki.ClientCert, Key: pki.ClientKey}
		readSecured(t, m.Addr, "in-mtls", k, sec.KcatArgs(t, ""))
	})
}

func readSecured(t *testing.T, addr, topic string, k security.Kafka, kcat []string) {
	data := genRecords(rndOf(5), 1, 30)
	var in []byte
	for _, r := range data[0] {
		in = append(append(in, r.json()...), '\n')
	}
	kafkatest.RunKcat(t, in, append(kcat, "-P", "-b", addr, "-t", topic, "-p", "0")...)
	s, err := Open(context.Background(), Config{Brokers: []string{addr}, Topic: topic, Group: "g", Security: k,
		Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true})
	require.NoError(t, err)
	got := readAll(t, s, 16)
	assert.Equal(t, oracle(data), got, firstDiff(oracle(data), got))
	s.Done(s.Stats().Position, math.MaxInt64)
	require.NoError(t, s.Close())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, _, err := k.Connect(ctx, []string{addr})
	require.NoError(t, err)
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, "g")
	require.NoError(t, err)
	o, ok := offs.Lookup(topic, 0)
	require.True(t, ok)
	assert.Equal(t, int64(len(data[0])), o.At)
}

// TestSecureSourceRefused: brokers that refuse the source's settings
// fail Open at once, with a *security.Error naming the source and the
// broker and saying what failed, and no password in it: a wrong password
// (SCRAM), a CA that did not sign the broker's certificate, a plaintext
// source at a TLS port.
func TestSecureSourceRefused(t *testing.T) {
	t.Parallel()
	pki, other := tlstest.New(t), tlstest.New(t)
	c := kafkatest.StartSecure(t, kafkatest.Secure{User: secUser, Password: secPass, TLS: pki}, 1, "in")
	good := security.Kafka{Protocol: security.SASLSSL, Mechanism: security.ScramSHA512, Username: secUser, Password: security.NewSecret(secPass), CA: pki.CA}
	wrongPass, wrongCA := good, good
	wrongPass.Password = security.NewSecret("not-" + secPass)
	wrongCA.CA = other.CA
	for _, tc := range []struct {
		name string
		k    security.Kafka
		want string
	}{
		{"wrong password", wrongPass, "authentication failed"},
		{"wrong CA", wrongCA, "TLS handshake failed"},
		{"plaintext to TLS", security.Kafka{}, "TLS handshake failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := Open(ctx, Config{Brokers: []string{c.Addr}, Topic: "in", Group: "g", Security: tc.k, Decoder: jsonDecoder(t, source.Fail)})
			require.Error(t, err)
			require.NoError(t, ctx.Err(), "not at once")
			assert.True(t, security.IsFailure(err), "%v", err)
			assert.Contains(t, err.Error(), "kafka source in")
			assert.Contains(t, err.Error(), "kafka broker "+c.Addr)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), secPass)
		})
	}
}
