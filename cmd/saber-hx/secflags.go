package main

// The flags of secured connections: Kafka's (ysb produce, ysb --source
// kafka) and Redis's (ysb setup, ysb --source kafka, ysb check), named
// after the SQL options (RisingWave's; docs/operations.md, "Secured
// connections") and read by the same rules (security.CommandLine: a
// password from a file or an environment variable, never from a flag's
// value, which shows in ps and in the shell's history).

import (
	"flag"
	"strconv"
	"strings"

	"github.com/saber-hx/saber-hx/internal/security"
)

// The environment variables of the passwords, where no password file is
// given.
const (
	kafkaPasswordEnv = "SABER_HX_KAFKA_PASSWORD"
	redisPasswordEnv = "SABER_HX_REDIS_PASSWORD"
)

// secFlag is the flag of an option, and its help.
type secFlag struct{ option, name, usage string }

var kafkaFlags = []secFlag{
	{security.KafkaProtocol, "kafka-security-protocol", "Kafka: PLAINTEXT (the default), SSL, SASL_PLAINTEXT or SASL_SSL"},
	{security.KafkaMechanism, "kafka-sasl-mechanism", "Kafka: the SASL mechanism of SASL_PLAINTEXT and SASL_SSL: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"},
	{security.KafkaUsername, "kafka-sasl-username", "Kafka: the SASL user"},
	{security.KafkaPassword, "kafka-sasl-password-file", "Kafka: a file holding the SASL password (one trailing newline dropped); without it, " +
		"the environment variable " + kafkaPasswordEnv + " where the protocol is SASL_*. Never a flag's value"},
	{security.KafkaCA, "kafka-ssl-ca", "Kafka, SSL and SASL_SSL: a PEM file of the authorities that sign the brokers' certificates (default: the system's)"},
	{security.KafkaCert, "kafka-ssl-cert", "Kafka, SSL and SASL_SSL: the client's certificate, a PEM file, for brokers that require one (with --kafka-ssl-key)"},
	{security.KafkaKey, "kafka-ssl-key", "Kafka, SSL and SASL_SSL: the client's private key, a PEM file"},
	{security.KafkaEndpoint, "kafka-ssl-endpoint-identification", "Kafka, SSL and SASL_SSL: https (the default: a broker's certificate must name it) " +
		"or none (the chain is checked, not the name)"},
}

// redisFlags are Redis's, but --redis (addr, or url), which each command
// registers with its own help.
var redisFlags = []secFlag{
	{security.RedisUsername, "redis-user", "Redis: an ACL user (default: the default user)"},
	{security.RedisPassword, "redis-password-file", "Redis: a file holding the password (one trailing newline dropped): the ACL user's, " +
		"or the server's requirepass; without it, the environment variable " + redisPasswordEnv + " where set. Never a flag's value"},
	{security.RedisTLS, "redis-tls", "Redis: connect with TLS (as a rediss:// URL does)"},
	{security.RedisCA, "redis-ca", "Redis, TLS: a PEM file of the authorities that sign the server's certificate (default: the system's)"},
	{security.RedisCert, "redis-cert", "Redis, TLS: the client's certificate, a PEM file, for a server with tls-auth-clients (with --redis-key)"},
	{security.RedisKey, "redis-key", "Redis, TLS: the client's private key, a PEM file"},
	{security.RedisServerName, "redis-server-name", "Redis, TLS: the name the server's certificate must have (default: --redis's host)"},
}

// secFlags are the values of a connection's flags, by option.
type secFlags struct {
	flags  []secFlag
	values map[string]*string
	tls    bool // --redis-tls, a boolean flag
	env    string
}

func (f *secFlags) register(fs *flag.FlagSet, flags []secFlag, env string) {
	f.flags, f.env, f.values = flags, env, map[string]*string{}
	for _, sf := range flags {
		usage := sf.usage + " (" + sf.option + ")"
		if sf.option == security.RedisTLS {
			fs.BoolVar(&f.tls, sf.name, false, usage)
			continue
		}
		f.values[sf.option] = fs.String(sf.name, "", usage)
	}
}

// registerRedis registers --redis, with the command's help, and the
// flags of its connection.
func (f *secFlags) registerRedis(fs *flag.FlagSet, usage string) *string {
	server := fs.String("redis", "", usage+": host:port, or a URL redis://[user@]host[:port][/db] (rediss:// for TLS) "+
		"whose password, if any, comes from --redis-password-file or "+redisPasswordEnv+" (one in the URL is refused)")
	f.register(fs, redisFlags, redisPasswordEnv)
	f.flags = append(f.flags, secFlag{option: security.RedisAddr, name: "redis"}, secFlag{option: security.RedisURL, name: "redis"})
	f.values[security.RedisAddr] = server
	return server
}

// settings are what the flags given say, read by security.CommandLine
// (env: os.LookupEnv); its errors are usage errors (exit 2).
func (f *secFlags) settings(fs *flag.FlagSet, env func(string) (string, bool)) security.CommandLine {
	c := security.CommandLine{Given: map[string]string{}, Names: map[string]string{}, PasswordEnv: f.env, Lookup: env}
	for _, sf := range f.flags {
		c.Names[sf.option] = "--" + sf.name
		switch {
		case !given(fs, sf.name) || sf.option == security.RedisURL:
		case sf.option == security.RedisTLS:
			c.Given[sf.option] = strconv.FormatBool(f.tls)
		default:
			c.Given[sf.option] = *f.values[sf.option]
		}
	}
	return c
}

// refusePasswordFlags refuses a password given as a flag's value
// (--kafka-sasl-password, --redis-password, as the SQL options are
// named): before the flags are parsed, so that no message quotes it.
func refusePasswordFlags(args []string) error {
	for _, a := range args {
		if a == "--" {
			return nil
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		file, env := name+"-file", kafkaPasswordEnv
		if name == "redis-password" {
			env = redisPasswordEnv
		}
		if strings.HasPrefix(a, "-") && (name == "kafka-sasl-password" || name == "redis-password") {
			return usagef("--%s: a password is never a flag's value (a command line shows in ps and in the shell's history): "+
				"give --%s FILE, or set %s", name, file, env)
		}
	}
	return nil
}

// parseSecured is parse for a command with the flags of secured
// connections: a password given as a flag's value is refused first.
func parseSecured(fs *flag.FlagSet, args []string) error {
	if err := refusePasswordFlags(args); err != nil {
		return err
	}
	return parse(fs, args)
}
