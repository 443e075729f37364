package main

// The flags of secured connections: Kafka's (ysb produce, ysb --source
// kafka) and Redis's (ysb setup, ysb --source kafka, ysb check), named
// after the SQL options (RisingWave's; docs/operations.md, "Secured
// connections") and read by the same rules (security.ParseKafka,
// security.ParseRedis). A password comes from a file or an environment
// variable, never from a flag's value (a command line shows in ps and in
// the shell's history).

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/saber-hx/saber-hx/internal/security"
)

// The environment variables of the passwords, where no password file is
// given.
const (
	kafkaPasswordEnv = "SABER_HX_KAFKA_PASSWORD"
	redisPasswordEnv = "SABER_HX_REDIS_PASSWORD"
)

// kafkaFlags are the flags of each Kafka option, and how its errors
// name it.
var kafkaFlags = []struct{ option, flag, shown string }{
	{security.KafkaProtocol, "kafka-security-protocol", ""},
	{security.KafkaMechanism, "kafka-sasl-mechanism", ""},
	{security.KafkaUsername, "kafka-sasl-username", ""},
	{security.KafkaPassword, "kafka-sasl-password-file", "--kafka-sasl-password-file (or " + kafkaPasswordEnv + ")"},
	{security.KafkaCA, "kafka-ssl-ca", ""},
	{security.KafkaCert, "kafka-ssl-cert", ""},
	{security.KafkaKey, "kafka-ssl-key", ""},
	{security.KafkaEndpoint, "kafka-ssl-endpoint-identification", ""},
}

// redisFlags are the same for Redis; --redis is addr or url.
var redisFlags = []struct{ option, flag, shown string }{
	{security.RedisAddr, "redis", ""},
	{security.RedisURL, "redis", ""},
	{security.RedisUsername, "redis-user", ""},
	{security.RedisPassword, "redis-password-file", "--redis-password-file (or " + redisPasswordEnv + ")"},
	{security.RedisTLS, "redis-tls", ""},
	{security.RedisCA, "redis-ca", ""},
	{security.RedisCert, "redis-cert", ""},
	{security.RedisKey, "redis-key", ""},
	{security.RedisServerName, "redis-server-name", ""},
}

// kafkaSecFlags are the values of the Kafka flags.
type kafkaSecFlags struct{ values map[string]*string }

func (f *kafkaSecFlags) register(fs *flag.FlagSet) {
	usage := map[string]string{
		security.KafkaProtocol: "Kafka: PLAINTEXT (the default), SSL, SASL_PLAINTEXT or SASL_SSL (" + security.KafkaProtocol + ")",
		security.KafkaMechanism: "Kafka: the SASL mechanism of SASL_PLAINTEXT and SASL_SSL: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (" +
			security.KafkaMechanism + ")",
		security.KafkaUsername: "Kafka: the SASL user (" + security.KafkaUsername + ")",
		security.KafkaPassword: "Kafka: a file holding the SASL password (one trailing newline dropped); without it, the environment variable " +
			kafkaPasswordEnv + " where the protocol is SASL_*. Never a flag's value (" + security.KafkaPassword + ")",
		security.KafkaCA: "Kafka, SSL and SASL_SSL: a PEM file of the authorities that sign the brokers' certificates (default: the system's) (" +
			security.KafkaCA + ")",
		security.KafkaCert: "Kafka, SSL and SASL_SSL: the client's certificate, a PEM file, for brokers that require one (with --kafka-ssl-key) (" +
			security.KafkaCert + ")",
		security.KafkaKey: "Kafka, SSL and SASL_SSL: the client's private key, a PEM file (" + security.KafkaKey + ")",
		security.KafkaEndpoint: "Kafka, SSL and SASL_SSL: https (the default: a broker's certificate must name it) or none (the chain is checked, " +
			"not the name) (" + security.KafkaEndpoint + ")",
	}
	f.values = map[string]*string{}
	for _, k := range kafkaFlags {
		f.values[k.option] = fs.String(k.flag, "", usage[k.option])
	}
}

// settings are the Kafka connections' settings that the flags given
// say (env: os.LookupEnv). A bad combination is a usage error naming the
// flags.
func (f *kafkaSecFlags) settings(fs *flag.FlagSet, env func(string) (string, bool)) (security.Kafka, error) {
	protocol := strings.ToUpper(*f.values[security.KafkaProtocol])
	var password string
	hasPassword := false
	get := func(option string) (string, bool) {
		if option == security.KafkaPassword {
			return password, hasPassword
		}
		for _, k := range kafkaFlags {
			if k.option == option && given(fs, k.flag) {
				return *f.values[option], true
			}
		}
		return "", false
	}
	var err error
	if given(fs, "kafka-sasl-password-file") {
		password, err = readPasswordFile("kafka-sasl-password-file", *f.values[security.KafkaPassword])
		hasPassword = true
	} else if strings.HasPrefix(protocol, "SASL_") {
		password, hasPassword, err = passwordEnv(kafkaPasswordEnv, env)
	}
	if err != nil {
		return security.Kafka{}, err
	}
	k, err := security.ParseKafka(get)
	return k, flagError(err, kafkaFlags)
}

// redisSecFlags are the values of --redis and the Redis flags.
type redisSecFlags struct {
	server, user, passwordFile, ca, cert, key, serverName string
	tls                                                   bool
}

// register registers --redis (with the command's usage) and the flags of
// its connection.
func (f *redisSecFlags) register(fs *flag.FlagSet, usage string) {
	fs.StringVar(&f.server, "redis", "", usage+": host:port, or a URL redis://[user@]host[:port][/db] (rediss:// for TLS) "+
		"whose password, if any, comes from --redis-password-file or "+redisPasswordEnv+" (one in the URL is refused)")
	fs.StringVar(&f.user, "redis-user", "", "Redis: an ACL user (default: the default user) (username)")
	fs.StringVar(&f.passwordFile, "redis-password-file", "", "Redis: a file holding the password (one trailing newline dropped): the ACL user's, "+
		"or the server's requirepass; without it, the environment variable "+redisPasswordEnv+" where set. Never a flag's value (password)")
	fs.BoolVar(&f.tls, "redis-tls", false, "Redis: connect with TLS (as a rediss:// URL does) (tls)")
	fs.StringVar(&f.ca, "redis-ca", "", "Redis, TLS: a PEM file of the authorities that sign the server's certificate (default: the system's) (tls.ca)")
	fs.StringVar(&f.cert, "redis-cert", "", "Redis, TLS: the client's certificate, a PEM file, for a server with tls-auth-clients (with --redis-key) (tls.cert)")
	fs.StringVar(&f.key, "redis-key", "", "Redis, TLS: the client's private key, a PEM file (tls.key)")
	fs.StringVar(&f.serverName, "redis-server-name", "", "Redis, TLS: the name the server's certificate must have (default: --redis's host) (tls.server_name)")
}

// settings are the Redis connection's settings that the flags given say
// (env: os.LookupEnv); --redis must be given. A bad combination, or a
// password in --redis's URL, is a usage error naming the flags.
func (f *redisSecFlags) settings(fs *flag.FlagSet, env func(string) (string, bool)) (security.Redis, error) {
	opts := map[string]string{}
	if strings.Contains(f.server, "://") {
		raw, user, err := splitRedisURL(f.server)
		if err != nil {
			return security.Redis{}, err
		}
		opts[security.RedisURL] = raw
		if user != "" {
			if given(fs, "redis-user") {
				return security.Redis{}, usagef("--redis-user: the user is given in --redis's URL already")
			}
			opts[security.RedisUsername] = user
		}
	} else {
		opts[security.RedisAddr] = f.server
	}
	for _, v := range []struct {
		flag, option, value string
	}{{"redis-user", security.RedisUsername, f.user}, {"redis-ca", security.RedisCA, f.ca}, {"redis-cert", security.RedisCert, f.cert},
		{"redis-key", security.RedisKey, f.key}, {"redis-server-name", security.RedisServerName, f.serverName}} {
		if given(fs, v.flag) {
			opts[v.option] = v.value
		}
	}
	if given(fs, "redis-tls") {
		opts[security.RedisTLS] = fmt.Sprint(f.tls)
	}
	var err error
	if given(fs, "redis-password-file") {
		opts[security.RedisPassword], err = readPasswordFile("redis-password-file", f.passwordFile)
	} else if p, ok, perr := passwordEnv(redisPasswordEnv, env); ok || perr != nil {
		opts[security.RedisPassword], err = p, perr
	}
	if err != nil {
		return security.Redis{}, err
	}
	r, err := security.ParseRedis(func(option string) (string, bool) { v, ok := opts[option]; return v, ok })
	return r, flagError(err, redisFlags)
}

// splitRedisURL takes the user out of a URL of --redis, which the URL
// gives as user@ (the connector's url option reads a lone user@ as a
// password, as redis-cli does): the URL without it, and the user. A
// password in it is refused, and named, never shown.
func splitRedisURL(raw string) (rest, user string, err error) {
	u, perr := url.Parse(raw)
	if perr != nil || u.User == nil {
		return raw, "", nil // security.ParseRedis says what is wrong, without quoting it
	}
	if _, ok := u.User.Password(); ok {
		return "", "", usagef("--redis: a password in the URL is refused (a command line shows in ps and in the shell's history): "+
			"give it in --redis-password-file or in the environment variable %s", redisPasswordEnv)
	}
	user = u.User.Username()
	u.User = nil
	return u.String(), user, nil
}

// readPasswordFile reads the password in the file of flag name: its text
// with one trailing newline (\n or \r\n) dropped, not empty.
func readPasswordFile(name, path string) (string, error) {
	if path == "" {
		return "", usagef("--%s \"\": name a file", name)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", usageError{fmt.Errorf("--%s: %w", name, err)}
	}
	p := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if p == "" {
		return "", usagef("--%s %s: the file is empty", name, path)
	}
	return p, nil
}

// passwordEnv is the password in the environment variable name, where
// set; set but empty is a usage error.
func passwordEnv(name string, env func(string) (string, bool)) (string, bool, error) {
	p, ok := env(name)
	if ok && p == "" {
		return "", false, usagef("the environment variable %s is set but empty", name)
	}
	return p, ok, nil
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
		if !strings.HasPrefix(a, "-") {
			continue
		}
		switch name {
		case "kafka-sasl-password":
			return usagef("--%s: a password is never a flag's value (a command line shows in ps and in the shell's history): "+
				"give --kafka-sasl-password-file FILE, or set %s", name, kafkaPasswordEnv)
		case "redis-password":
			return usagef("--%s: a password is never a flag's value (a command line shows in ps and in the shell's history): "+
				"give --redis-password-file FILE, or set %s", name, redisPasswordEnv)
		}
	}
	return nil
}

// flagError is a settings error of package security as the command line
// says it: a usage error whose message names the flags in place of the
// options (the SQL's hint on ${VARIABLE} dropped).
func flagError(err error, flags []struct{ option, flag, shown string }) error {
	var oe *security.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	names := map[string]string{}
	for _, f := range flags {
		names[f.option] = "--" + f.flag
		if f.shown != "" {
			names[f.option] = f.shown
		}
	}
	msg := strings.ReplaceAll(oe.Msg, " (write it as '${VARIABLE}' to read it from the environment)", "")
	words := strings.Split(msg, " ")
	for i, w := range words {
		name := strings.TrimRight(w, ",:)")
		if n, ok := names[name]; ok {
			words[i] = n + w[len(name):]
		}
	}
	return usageError{&security.OptionError{Option: oe.Option, Value: oe.Value, Msg: strings.Join(words, " ")}}
}

// parseSecured is parse for a command with the flags of secured
// connections: a password given as a flag's value is refused first.
func parseSecured(fs *flag.FlagSet, args []string) error {
	if err := refusePasswordFlags(args); err != nil {
		return err
	}
	return parse(fs, args)
}
