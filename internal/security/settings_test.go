package security

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/tlstest"
)

func getter(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestParseKafka: the RisingWave options read into settings (case of
// protocol and mechanism free), and each inconsistent combination an
// *OptionError naming the option at fault, never the password.
func TestParseKafka(t *testing.T) {
	t.Parallel()
	k, err := ParseKafka(getter(map[string]string{
		KafkaProtocol: "sasl_ssl", KafkaMechanism: "scram-sha-512", KafkaUsername: "alice", KafkaPassword: "pw-123",
		KafkaCA: "/ca.pem", KafkaCert: "/c.pem", KafkaKey: "/k.pem", KafkaEndpoint: "NONE",
	}))
	require.NoError(t, err)
	assert.Equal(t, Kafka{Protocol: SASLSSL, Mechanism: ScramSHA512, Username: "alice", Password: NewSecret("pw-123"),
		CA: "/ca.pem", Cert: "/c.pem", Key: "/k.pem", NoHostnameCheck: true}, k)
	assert.True(t, k.TLS())
	assert.True(t, k.SASL())
	assert.Equal(t, "SASL_SSL, SCRAM-SHA-512 as alice (password ***), CA /ca.pem, client certificate /c.pem, broker names not checked", k.String())

	k, err = ParseKafka(getter(nil))
	require.NoError(t, err)
	assert.Equal(t, Kafka{}, k)
	assert.False(t, k.Secured())
	assert.Equal(t, "PLAINTEXT", k.String())

	k, err = ParseKafka(getter(map[string]string{KafkaProtocol: "SSL"}))
	require.NoError(t, err)
	assert.Equal(t, "SSL, the system's CAs", k.String())

	for _, c := range []struct {
		opts   map[string]string
		option string
		value  bool
		msg    string
	}{
		{map[string]string{KafkaProtocol: "TLS"}, KafkaProtocol, true, "is not valid (valid: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)"},
		{map[string]string{KafkaProtocol: "SASL_SSL", KafkaMechanism: "GSSAPI"}, KafkaMechanism, true, "is not valid (valid: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)"},
		{map[string]string{KafkaProtocol: "SASL_SSL", KafkaUsername: "u", KafkaPassword: "p"}, KafkaProtocol, true, "needs properties.sasl.mechanism"},
		{map[string]string{KafkaProtocol: "SASL_PLAINTEXT", KafkaMechanism: "PLAIN", KafkaPassword: "p"}, KafkaProtocol, true, "needs properties.sasl.username"},
		{map[string]string{KafkaProtocol: "SASL_PLAINTEXT", KafkaMechanism: "PLAIN", KafkaUsername: "u"}, KafkaProtocol, true, "needs properties.sasl.password"},
		{map[string]string{KafkaMechanism: "PLAIN"}, KafkaMechanism, false, "applies to properties.security.protocol 'SASL_PLAINTEXT' or 'SASL_SSL', not 'PLAINTEXT'"},
		{map[string]string{KafkaProtocol: "SSL", KafkaPassword: "p"}, KafkaPassword, false, "not 'SSL'"},
		{map[string]string{KafkaCA: "/ca.pem"}, KafkaCA, false, "applies to properties.security.protocol 'SSL' or 'SASL_SSL', not 'PLAINTEXT'"},
		{map[string]string{KafkaProtocol: "SASL_PLAINTEXT", KafkaMechanism: "PLAIN", KafkaUsername: "u", KafkaPassword: "p", KafkaEndpoint: "none"}, KafkaEndpoint, false, "applies to"},
		{map[string]string{KafkaProtocol: "SSL", KafkaEndpoint: ""}, KafkaEndpoint, true, "is not valid (valid: https, the default, or none)"},
		{map[string]string{KafkaProtocol: "SSL", KafkaCert: "/c.pem"}, KafkaCert, false, "needs properties.ssl.key.location"},
		{map[string]string{KafkaProtocol: "SSL", KafkaKey: "/k.pem"}, KafkaKey, false, "needs properties.ssl.certificate.location"},
		{map[string]string{KafkaProtocol: "SASL_SSL", KafkaMechanism: "PLAIN", KafkaUsername: "u", KafkaPassword: ""}, KafkaPassword, true, "is empty"},
		{map[string]string{KafkaProtocol: "SSL", KafkaCA: ""}, KafkaCA, true, "is empty"},
	} {
		_, err := ParseKafka(getter(c.opts))
		var oe *OptionError
		require.ErrorAs(t, err, &oe, "%v", c.opts)
		assert.Equal(t, c.option, oe.Option, "%v", c.opts)
		assert.Equal(t, c.value, oe.Value, "%v", c.opts)
		assert.Contains(t, oe.Msg, c.msg, "%v", c.opts)
		assert.NotContains(t, oe.Msg, "'p'", "%v", c.opts)
	}
}

// TestKafkaTLSFiles: the CA and the client's pair are read when the
// options are made; an unreadable or empty file is an error naming the
// option and the path.
func TestKafkaTLSFiles(t *testing.T) {
	t.Parallel()
	pki := tlstest.New(t)
	k := Kafka{Protocol: SSL, CA: pki.CA, Cert: pki.ClientCert, Key: pki.ClientKey}
	tc, err := k.TLSConfig()
	require.NoError(t, err)
	require.NotNil(t, tc.RootCAs)
	require.Len(t, tc.Certificates, 1)
	opts, err := k.Opts()
	require.NoError(t, err)
	assert.Len(t, opts, 1, "TLS, no SASL")

	missing := filepath.Join(t.TempDir(), "nope.pem")
	_, err = Kafka{Protocol: SSL, CA: missing}.Opts()
	require.Error(t, err)
	assert.Contains(t, err.Error(), KafkaCA)
	assert.Contains(t, err.Error(), missing)

	empty := filepath.Join(t.TempDir(), "empty.pem")
	require.NoError(t, os.WriteFile(empty, []byte("not a certificate\n"), 0o600))
	_, err = Kafka{Protocol: SSL, CA: empty}.Opts()
	require.ErrorContains(t, err, "no PEM certificate in "+empty)

	_, err = Kafka{Protocol: SSL, Cert: pki.ClientCert, Key: pki.CA}.Opts()
	require.Error(t, err)
	assert.Contains(t, err.Error(), KafkaKey+" "+pki.CA)

	opts, err = Kafka{Protocol: SASLPlaintext, Mechanism: ScramSHA256, Username: "u", Password: NewSecret("p")}.Opts()
	require.NoError(t, err)
	assert.Len(t, opts, 1, "SASL, no TLS")
	opts, err = Kafka{}.Opts()
	require.NoError(t, err)
	assert.Empty(t, opts)
}

// TestParseRedis: addr or url (redis:// and rediss://, user, password,
// db), the AUTH and TLS options, and the errors, which never show a
// password (a bad URL's neither).
func TestParseRedis(t *testing.T) {
	t.Parallel()
	r, err := ParseRedis(getter(map[string]string{RedisURL: "rediss://alice:pa%3Ass@db.example:6380/2", RedisCA: "/ca.pem", RedisServerName: "db"}))
	require.NoError(t, err)
	assert.Equal(t, Redis{Addr: "db.example:6380", Username: "alice", Password: NewSecret("pa:ss"), DB: 2, TLS: true, CA: "/ca.pem", ServerName: "db"}, r)
	assert.Equal(t, "rediss://alice:***@db.example:6380/2, CA /ca.pem, server name db", r.String())

	r, err = ParseRedis(getter(map[string]string{RedisURL: "redis://:only-pw@127.0.0.1"}))
	require.NoError(t, err)
	assert.Equal(t, Redis{Addr: "127.0.0.1:6379", Password: NewSecret("only-pw")}, r)
	r, err = ParseRedis(getter(map[string]string{RedisURL: "redis://only-pw@127.0.0.1:7000"}))
	require.NoError(t, err)
	assert.Equal(t, Redis{Addr: "127.0.0.1:7000", Password: NewSecret("only-pw")}, r, "a user without ':' is a password, as redis-cli reads it")

	r, err = ParseRedis(getter(map[string]string{RedisAddr: "h:1", RedisUsername: "bob", RedisPassword: "pw", RedisTLS: "TRUE", RedisCert: "/c", RedisKey: "/k"}))
	require.NoError(t, err)
	assert.Equal(t, Redis{Addr: "h:1", Username: "bob", Password: NewSecret("pw"), TLS: true, Cert: "/c", Key: "/k"}, r)
	assert.True(t, r.Secured())
	assert.Equal(t, "rediss://bob:***@h:1, client certificate /c", r.String())
	o, err := Redis{Addr: "h:1", Password: NewSecret("pw")}.Options()
	require.NoError(t, err)
	assert.Equal(t, "pw", o.Password)
	assert.Nil(t, o.TLSConfig)

	const pw = "SeCrEt-77"
	for _, c := range []struct {
		opts   map[string]string
		option string
		msg    string
	}{
		{map[string]string{RedisAddr: "h:1", RedisURL: "redis://h"}, RedisURL, "either addr or url"},
		{map[string]string{RedisURL: "http://u:" + pw + "@h:1"}, RedisURL, `the scheme is "http"`},
		{map[string]string{RedisURL: "redis://u:" + pw + "@h:port"}, RedisURL, "not a URL of the form redis://"},
		{map[string]string{RedisURL: "redis://:" + pw}, RedisURL, "not a URL of the form"},
		{map[string]string{RedisURL: "redis://:" + pw + "@:1"}, RedisURL, "no host"},
		{map[string]string{RedisURL: "redis://h:" + pw}, RedisURL, "not a URL of the form"},
		{map[string]string{RedisURL: "redis://h:0" + pw[:0] + "99999"}, RedisURL, "the port is not a number from 1 to 65535"},
		{map[string]string{RedisURL: "redis://u:" + pw + "@h:1/x"}, RedisURL, "the database (the path) is not a number"},
		{map[string]string{RedisURL: "redis://u:" + pw + "@h:1?db=2"}, RedisURL, "query"},
		{map[string]string{RedisURL: "redis://u:" + pw + "@h:1", RedisPassword: pw}, RedisPassword, "given in url already"},
		{map[string]string{RedisURL: "rediss://h:1", RedisTLS: "false"}, RedisTLS, "rediss://"},
		{map[string]string{RedisAddr: "h:1", RedisTLS: "yes"}, RedisTLS, "is not valid (valid: true, false)"},
		{map[string]string{RedisAddr: "h:1", RedisCA: "/ca"}, RedisCA, "applies with tls = 'true'"},
		{map[string]string{RedisAddr: "h:1", RedisUsername: "u"}, RedisUsername, "needs password"},
		{map[string]string{RedisAddr: "h:1", RedisTLS: "true", RedisKey: "/k"}, RedisKey, "needs tls.cert"},
		{map[string]string{RedisAddr: "h:1", RedisPassword: ""}, RedisPassword, "is empty"},
		{map[string]string{}, RedisAddr, "no Redis server"},
	} {
		_, err := ParseRedis(getter(c.opts))
		var oe *OptionError
		require.ErrorAs(t, err, &oe, "%v", c.opts)
		assert.Equal(t, c.option, oe.Option, "%v", c.opts)
		assert.Contains(t, oe.Msg, c.msg, "%v", c.opts)
		assert.NotContains(t, oe.Msg, pw, "%v", c.opts)
	}
}

// TestRedactURL: the password of a URL's user information is ***.
func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"rediss://alice:pw@h:6380/1": "rediss://alice:***@h:6380/1",
		"redis://:pw@h":              "redis://:***@h",
		"redis://pw@h":               "redis://***@h",
		"redis://h:1":                "redis://h:1",
		"redis://a:b@c@h:1":          "redis://a:***@h:1",
		"not a url @ all":            "not a url @ all",
	} {
		assert.Equal(t, want, RedactURL(in), in)
		assert.False(t, strings.Contains(RedactURL(in), "pw"), in)
	}
}
