package kafkasink

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/internal/tlstest"
)

const (
	secUser = "writer"
	secPass = "wr1ter-Pa55-never-shown"
)

// TestSecureSink: rows written over SASL_SSL, with each mechanism, and
// over SSL with a client certificate (mutual TLS), are read back by kcat
// over the same protocol: every row, with its key, in order.
func TestSecureSink(t *testing.T) {
	t.Parallel()
	pki := tlstest.New(t)
	sec := kafkatest.Secure{User: secUser, Password: secPass, TLS: pki}
	c := kafkatest.StartSecure(t, sec, 1)
	for _, mech := range kafkatest.Mechanisms {
		t.Run(mech, func(t *testing.T) {
			t.Parallel()
			k := security.Kafka{Protocol: security.SASLSSL, Mechanism: mech, Username: secUser, Password: security.NewSecret(secPass), CA: pki.CA}
			writeSecured(t, c.Addr, "out-"+mech, k, sec.KcatArgs(t, mech))
		})
	}
	t.Run("mTLS", func(t *testing.T) {
		t.Parallel()
		sec := kafkatest.Secure{TLS: pki, ClientAuth: true}
		m := kafkatest.StartSecure(t, sec, 1)
		k := security.Kafka{Protocol: security.SSL, CA: pki.CA, Cert: pki.ClientCert, Key: pki.ClientKey}
		writeSecured(t, m.Addr, "out-mtls", k, sec.KcatArgs(t, ""))
	})
}

func writeSecured(t *testing.T, addr, topic string, k security.Kafka, kcat []string) {
	keys, values := rows(40, 15)
	s, err := NewSink(context.Background(), SinkConfig{Brokers: []string{addr}, Topic: topic, Security: k})
	require.NoError(t, err)
	for i := range values {
		s.Append([]byte(keys[i]), []byte(values[i]))
		if (i+1)%15 == 0 {
			require.NoError(t, s.Flush(context.Background()))
		}
	}
	require.NoError(t, s.Flush(context.Background()))
	require.NoError(t, s.Close())
	out := kafkatest.RunKcat(t, nil, append(kcat, "-C", "-b", addr, "-t", topic, "-e", "-q", "-f", "%k\t%s\n")...)
	var want strings.Builder
	for i := range values {
		fmt.Fprintf(&want, "%s\t%s\n", keys[i], values[i])
	}
	assert.Equal(t, want.String(), string(out))
}

// TestSecureSinkRefused: brokers that refuse the sink's settings fail
// NewSink at once with a *security.Error naming the sink and the broker,
// without the password: a wrong password with each mechanism, a CA that
// did not sign the broker's certificate, a plaintext sink at a TLS port,
// a TLS sink without its client certificate where one is required.
func TestSecureSinkRefused(t *testing.T) {
	t.Parallel()
	pki, other := tlstest.New(t), tlstest.New(t)
	c := kafkatest.StartSecure(t, kafkatest.Secure{User: secUser, Password: secPass, TLS: pki}, 1, "out")
	m := kafkatest.StartSecure(t, kafkatest.Secure{TLS: pki, ClientAuth: true}, 1, "out")
	good := security.Kafka{Protocol: security.SASLSSL, Username: secUser, Password: security.NewSecret(secPass), CA: pki.CA}
	type tc struct {
		name, addr string
		k          security.Kafka
		want       string
	}
	var cases []tc
	for _, mech := range kafkatest.Mechanisms {
		k := good
		k.Mechanism, k.Password = mech, security.NewSecret(secPass+"-not")
		cases = append(cases, tc{"wrong password " + mech, c.Addr, k, "authentication failed"})
	}
	wrongCA := good
	wrongCA.Mechanism, wrongCA.CA = security.Plain, other.CA
	cases = append(cases,
		tc{"wrong CA", c.Addr, wrongCA, "TLS handshake failed"},
		tc{"plaintext to TLS", c.Addr, security.Kafka{}, "TLS handshake failed"},
		tc{"no client certificate", m.Addr, security.Kafka{Protocol: security.SSL, CA: pki.CA}, "TLS handshake failed"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := NewSink(ctx, SinkConfig{Brokers: []string{c.addr}, Topic: "out", Security: c.k})
			require.Error(t, err)
			require.NoError(t, ctx.Err(), "not at once")
			assert.True(t, security.IsFailure(err), "%v", err)
			assert.Contains(t, err.Error(), "kafka sink out")
			assert.Contains(t, err.Error(), "kafka broker "+c.addr)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), secPass)
		})
	}
}
