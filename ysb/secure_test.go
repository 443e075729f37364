package ysb

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/redistest"
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

// TestSetupSecured: Setup writes the campaigns through a TLS connection
// with a password, and the CSV; with a wrong password it fails at once
// with a *security.Error, the CSV not written.
func TestSetupSecured(t *testing.T) {
	t.Parallel()
	const pass = "s3tup-Pa55-never-shown"
	pki := tlstest.New(t)
	srv := redistest.StartSecure(t, redistest.Secure{Password: pass, TLS: pki})
	server := security.Redis{Addr: srv.Addr, Password: security.NewSecret(pass), TLS: true, CA: pki.CA}
	gen := GenConfig{Campaigns: 3, AdsPerCampaign: 2, Seed: 7, TuplesPerMs: 1}
	csv := filepath.Join(t.TempDir(), "campaigns.csv")
	ctx := context.Background()
	res, err := Setup(ctx, SetupConfig{Server: server, Gen: gen, CampaignsCSV: csv})
	require.NoError(t, err)
	assert.Equal(t, SetupResult{Campaigns: 3, Ads: 6, InRedis: true}, res)
	c, err := LoadCampaigns(csv)
	require.NoError(t, err)
	assert.Len(t, c.AdIDs, 6)
	cl, err := server.Connect(ctx)
	require.NoError(t, err)
	defer cl.Close()
	back, camps, err := LoadCampaignsRedis(ctx, cl)
	require.NoError(t, err)
	assert.Len(t, camps, 3)
	assert.Len(t, back.AdIDs, 6)

	server.Password = security.NewSecret("not-" + pass)
	other := filepath.Join(t.TempDir(), "other.csv")
	res, err = Setup(ctx, SetupConfig{Server: server, Gen: gen, CampaignsCSV: other})
	require.Error(t, err)
	assert.False(t, res.InRedis)
	assert.True(t, security.IsFailure(err), "%v", err)
	assert.Contains(t, err.Error(), "redis "+srv.Addr+": authentication failed")
	assert.NotContains(t, err.Error(), pass)
	assert.NoFileExists(t, other)
}
