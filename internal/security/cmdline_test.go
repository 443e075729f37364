package security

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCommandLine: the options a command line gives, under its names,
// the password from a file (its line ending dropped) or a variable
// (Kafka's for SASL only), a Redis URL's user taken as the user and its
// password refused; the errors name the options as the command line
// does and never show a password.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "pw")
	require.NoError(t, os.WriteFile(file, []byte("file-pw\r\n"), 0o600))
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	names := map[string]string{KafkaProtocol: "--protocol", KafkaMechanism: "--mechanism", KafkaUsername: "--user", KafkaPassword: "--password-file",
		RedisAddr: "--redis", RedisURL: "--redis", RedisUsername: "--redis-user", RedisPassword: "--redis-password-file", RedisTLS: "--redis-tls", RedisCA: "--redis-ca"}
	kafka := func(given, vars map[string]string) (Kafka, error) {
		return CommandLine{Given: given, Names: names, PasswordEnv: "PW", Lookup: env(vars)}.Kafka()
	}
	redis := func(given, vars map[string]string) (Redis, error) {
		return CommandLine{Given: given, Names: names, PasswordEnv: "RPW", Lookup: env(vars)}.Redis()
	}

	k, err := kafka(map[string]string{KafkaProtocol: "sasl_ssl", KafkaMechanism: "PLAIN", KafkaUsername: "u", KafkaPassword: file}, map[string]string{"PW": "env-pw"})
	require.NoError(t, err)
	assert.Equal(t, "file-pw", k.Password.Reveal(), "the file over the variable")
	k, err = kafka(map[string]string{KafkaProtocol: "SASL_PLAINTEXT", KafkaMechanism: "PLAIN", KafkaUsername: "u"}, map[string]string{"PW": "env-pw"})
	require.NoError(t, err)
	assert.Equal(t, "env-pw", k.Password.Reveal())
	k, err = kafka(nil, map[string]string{"PW": "env-pw"})
	require.NoError(t, err)
	assert.Equal(t, Kafka{}, k, "the variable read for SASL only")

	for _, c := range []struct {
		given map[string]string
		vars  map[string]string
		want  string
	}{
		{map[string]string{KafkaProtocol: "SASL_SSL", KafkaMechanism: "PLAIN", KafkaUsername: "u"}, nil, "--protocol = 'SASL_SSL' needs --password-file (or PW)"},
		{map[string]string{KafkaProtocol: "SASL_SSL", KafkaMechanism: "PLAIN", KafkaUsername: "u"}, map[string]string{"PW": ""}, "the environment variable PW is set but empty"},
		{map[string]string{KafkaMechanism: "PLAIN"}, nil, "option --mechanism applies to --protocol 'SASL_PLAINTEXT' or 'SASL_SSL', not 'PLAINTEXT'"},
		{map[string]string{KafkaProtocol: "SASL_SSL", KafkaPassword: filepath.Join(dir, "none")}, nil, "--password-file: open " + filepath.Join(dir, "none")},
	} {
		_, err := kafka(c.given, c.vars)
		oe, ok := err.(*OptionError)
		require.True(t, ok, "%v: %v", c.given, err)
		assert.Contains(t, oe.Msg, c.want)
	}

	r, err := redis(map[string]string{RedisAddr: "rediss://alice@db:6380/1", RedisPassword: file}, nil)
	require.NoError(t, err)
	assert.Equal(t, Redis{Addr: "db:6380", Username: "alice", Password: NewSecret("file-pw"), DB: 1, TLS: true}, r)
	r, err = redis(map[string]string{RedisAddr: "127.0.0.1:6379", RedisTLS: "true", RedisCA: "/ca.pem"}, map[string]string{"RPW": "env-pw"})
	require.NoError(t, err)
	assert.Equal(t, Redis{Addr: "127.0.0.1:6379", Password: NewSecret("env-pw"), TLS: true, CA: "/ca.pem"}, r)
	for _, c := range []struct {
		given map[string]string
		want  string
	}{
		{map[string]string{RedisAddr: "redis://u:s3cret@h:1"}, "--redis: a password in the URL is refused"},
		{map[string]string{RedisAddr: "redis://:s3cret@h:1"}, "give it in --redis-password-file or in the environment variable RPW"},
		{map[string]string{RedisAddr: "redis://a@h:1", RedisUsername: "b"}, "--redis-user: the user is given in --redis's URL already"},
		{map[string]string{RedisAddr: "h:1", RedisCA: "/ca.pem"}, "option --redis-ca applies with --redis-tls = 'true' (or a rediss:// URL)"},
		{map[string]string{RedisAddr: "redis://s3cret@h:99999"}, "option --redis: the port is not a number from 1 to 65535"},
	} {
		_, err := redis(c.given, nil)
		oe, ok := err.(*OptionError)
		require.True(t, ok, "%v: %v", c.given, err)
		assert.Contains(t, oe.Msg, c.want)
		assert.NotContains(t, oe.Msg, "s3cret")
	}
}
