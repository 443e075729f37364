package ysb

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/internal/tlstest"
)

// TestProduceSecured: Produce over SASL_SSL (SCRAM-SHA-256) writes what
// its log says, as kcat reads it over SASL_SSL; with a wrong password it
// ends at once with a *security.Error and no password in it.
func TestProduceSecured(t *testing.T) {
	t.Parallel()
	const user, pass = "producer", "pr0ducer-Pa55-never-shown"
	pki := tlstest.New(t)
	sec := kafkatest.Secure{User: user, Password: pass, TLS: pki, Mechanisms: []string{security.ScramSHA256}}
	c := kafkatest.StartSecure(t, sec, 2, "ad-events")
	k := security.Kafka{Protocol: security.SASLSSL, Mechanism: security.ScramSHA256, Username: user, Password: security.NewSecret(pass), CA: pki.CA}
	var log bytes.Buffer
	gen := GenConfig{Campaigns: 2, AdsPerCampaign: 2, Seed: 3, TuplesPerMs: 1}
	res, err := Produce(context.Background(), ProduceConfig{Brokers: []string{c.Addr}, Topic: "ad-events", Security: k, Gen: gen,
		Rate: 1000, Duration: 200 * time.Millisecond, Log: &log})
	require.NoError(t, err)
	require.Positive(t, res.Events)
	out := kafkatest.RunKcat(t, nil, append(sec.KcatArgs(t, security.ScramSHA256), "-C", "-b", c.Addr, "-t", "ad-events", "-e", "-q", "-f", "%p\t%s\n")...)
	assert.Equal(t, int(res.Events), bytes.Count(out, []byte("\n")))
	assert.Equal(t, int(res.Events), bytes.Count(log.Bytes(), []byte("\n")))

	k.Password = security.NewSecret("not-" + pass)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = Produce(ctx, ProduceConfig{Brokers: []string{c.Addr}, Topic: "ad-events", Security: k, Gen: gen, Rate: 1000, Duration: time.Hour})
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "not at once")
	assert.True(t, security.IsFailure(err), "%v", err)
	assert.Contains(t, err.Error(), "kafka broker "+c.Addr+": authentication failed")
	assert.NotContains(t, err.Error(), pass)
}
