package security

import (
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The options of a Kafka connection's security, as RisingWave (and
// librdkafka, without the "properties." prefix) names them.
const (
	KafkaProtocol  = "properties.security.protocol"
	KafkaMechanism = "properties.sasl.mechanism"
	KafkaUsername  = "properties.sasl.username"
	KafkaPassword  = "properties.sasl.password"
	KafkaCA        = "properties.ssl.ca.location"
	KafkaCert      = "properties.ssl.certificate.location"
	KafkaKey       = "properties.ssl.key.location"
	KafkaEndpoint  = "properties.ssl.endpoint.identification.algorithm"
)

// KafkaOptions are the option names above, in that order.
var KafkaOptions = []string{KafkaProtocol, KafkaMechanism, KafkaUsername, KafkaPassword, KafkaCA, KafkaCert, KafkaKey, KafkaEndpoint}

// Kafka's security protocols and SASL mechanisms.
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"

	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

var (
	protocols  = []string{Plaintext, SSL, SASLPlaintext, SASLSSL}
	mechanisms = []string{Plain, ScramSHA256, ScramSHA512}
)

// Kafka is how a Kafka client's connections are secured. The zero
// value is PLAINTEXT: no TLS, no authentication.
type Kafka struct {
	// Protocol is PLAINTEXT ("" too), SSL, SASL_PLAINTEXT or SASL_SSL.
	Protocol string
	// Mechanism is the SASL mechanism (SASL_* only): PLAIN,
	// SCRAM-SHA-256 or SCRAM-SHA-512; Username and Password its
	// credentials.
	Mechanism string
	Username  string
	Password  Secret
	// CA is a PEM file of the authorities that sign the brokers'
	// certificates ("": the system's); Cert and Key are PEM files of
	// the client's certificate and private key, for brokers that
	// require one (mutual TLS). SSL and SASL_SSL only.
	CA, Cert, Key string
	// NoHostnameCheck: the brokers' certificates are verified against
	// the authorities but not against the brokers' names
	// (ssl.endpoint.identification.algorithm = none).
	NoHostnameCheck bool
}

// OptionError is a setting that is not valid: Msg names the option
// (Option), and says what is wrong with its value where Value is true,
// else with its being given at all.
type OptionError struct {
	Option string
	Value  bool
	Msg    string
}

func (e *OptionError) Error() string { return e.Msg }

// ParseKafka reads the options (get returns an option's value as
// written, and whether it was given) into settings, checked as Validate
// checks them. Protocol and mechanism are case-insensitive.
func ParseKafka(get func(string) (string, bool)) (Kafka, error) {
	var k Kafka
	if v, ok := get(KafkaProtocol); ok {
		k.Protocol = strings.ToUpper(v)
		if !contains(protocols, k.Protocol) {
			return k, &OptionError{KafkaProtocol, true, fmt.Sprintf("%s = '%s' is not valid (valid: %s)", KafkaProtocol, v, strings.Join(protocols, ", "))}
		}
	}
	if v, ok := get(KafkaMechanism); ok {
		k.Mechanism = strings.ToUpper(v)
		if !contains(mechanisms, k.Mechanism) {
			return k, &OptionError{KafkaMechanism, true, fmt.Sprintf("%s = '%s' is not valid (valid: %s)", KafkaMechanism, v, strings.Join(mechanisms, ", "))}
		}
	}
	// Given but empty is an error (an empty ${VAR} most likely), not
	// the absence of the option.
	for _, f := range []struct {
		opt string
		dst *string
	}{{KafkaUsername, &k.Username}, {KafkaCA, &k.CA}, {KafkaCert, &k.Cert}, {KafkaKey, &k.Key}} {
		if v, ok := get(f.opt); ok {
			if v == "" {
				return k, &OptionError{f.opt, true, fmt.Sprintf("option %s is empty", f.opt)}
			}
			*f.dst = v
		}
	}
	if v, ok := get(KafkaPassword); ok {
		if v == "" {
			return k, &OptionError{KafkaPassword, true, fmt.Sprintf("option %s is empty", KafkaPassword)}
		}
		k.Password = NewSecret(v)
	}
	if v, ok := get(KafkaEndpoint); ok {
		switch strings.ToLower(v) {
		case "https":
		case "none":
			k.NoHostnameCheck = true
		default:
			return k, &OptionError{KafkaEndpoint, true, fmt.Sprintf("%s = '%s' is not valid (valid: https, the default, or none)", KafkaEndpoint, v)}
		}
		if !k.TLS() {
			return k, &OptionError{KafkaEndpoint, false, fmt.Sprintf("option %s applies to %s 'SSL' or 'SASL_SSL', not '%s'", KafkaEndpoint, KafkaProtocol, k.protocol())}
		}
	}
	return k, k.Validate()
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func (k Kafka) protocol() string {
	if k.Protocol == "" {
		return Plaintext
	}
	return k.Protocol
}

// TLS is whether the connections use TLS (SSL, SASL_SSL).
func (k Kafka) TLS() bool { return k.Protocol == SSL || k.Protocol == SASLSSL }

// SASL is whether the connections authenticate (SASL_PLAINTEXT, SASL_SSL).
func (k Kafka) SASL() bool { return k.Protocol == SASLPlaintext || k.Protocol == SASLSSL }

// Secured is whether the settings are anything but PLAINTEXT.
func (k Kafka) Secured() bool { return k.TLS() || k.SASL() }

// Validate checks that the settings agree with one another: a known
// protocol and mechanism, SASL's mechanism, user name and password with
// a SASL protocol and only then, TLS files with a TLS protocol only, a
// client certificate with its key. Errors are *OptionError. The files
// are read by TLSConfig.
func (k Kafka) Validate() error {
	p := k.protocol()
	if !contains(protocols, p) {
		return &OptionError{KafkaProtocol, true, fmt.Sprintf("%s = '%s' is not valid (valid: %s)", KafkaProtocol, k.Protocol, strings.Join(protocols, ", "))}
	}
	if k.SASL() {
		switch {
		case k.Mechanism == "":
			return &OptionError{KafkaProtocol, true, fmt.Sprintf("%s = '%s' needs %s (%s)", KafkaProtocol, p, KafkaMechanism, strings.Join(mechanisms, ", "))}
		case !contains(mechanisms, k.Mechanism):
			return &OptionError{KafkaMechanism, true, fmt.Sprintf("%s = '%s' is not valid (valid: %s)", KafkaMechanism, k.Mechanism, strings.Join(mechanisms, ", "))}
		case k.Username == "":
			return &OptionError{KafkaProtocol, true, fmt.Sprintf("%s = '%s' needs %s", KafkaProtocol, p, KafkaUsername)}
		case !k.Password.IsSet():
			return &OptionError{KafkaProtocol, true, fmt.Sprintf("%s = '%s' needs %s (write it as '${VARIABLE}' to read it from the environment)", KafkaProtocol, p, KafkaPassword)}
		}
	} else {
		for _, f := range []struct {
			opt string
			set bool
		}{{KafkaMechanism, k.Mechanism != ""}, {KafkaUsername, k.Username != ""}, {KafkaPassword, k.Password.IsSet()}} {
			if f.set {
				return &OptionError{f.opt, false, fmt.Sprintf("option %s applies to %s 'SASL_PLAINTEXT' or 'SASL_SSL', not '%s'", f.opt, KafkaProtocol, p)}
			}
		}
	}
	if !k.TLS() {
		for _, f := range []struct {
			opt string
			set bool
		}{{KafkaCA, k.CA != ""}, {KafkaCert, k.Cert != ""}, {KafkaKey, k.Key != ""}, {KafkaEndpoint, k.NoHostnameCheck}} {
			if f.set {
				return &OptionError{f.opt, false, fmt.Sprintf("option %s applies to %s 'SSL' or 'SASL_SSL', not '%s'", f.opt, KafkaProtocol, p)}
			}
		}
	}
	switch {
	case k.Cert != "" && k.Key == "":
		return &OptionError{KafkaCert, false, fmt.Sprintf("option %s needs %s (the client's private key)", KafkaCert, KafkaKey)}
	case k.Key != "" && k.Cert == "":
		return &OptionError{KafkaKey, false, fmt.Sprintf("option %s needs %s (the client's certificate)", KafkaKey, KafkaCert)}
	}
	return nil
}

// TLSConfig is the connections' TLS configuration, its files read (nil
// where the protocol has no TLS). An unreadable file is an error naming
// it and its option.
func (k Kafka) TLSConfig() (*tls.Config, error) {
	if !k.TLS() {
		return nil, nil
	}
	return tlsFiles{ca: k.CA, cert: k.Cert, key: k.Key, caOpt: KafkaCA, certOpt: KafkaCert, keyOpt: KafkaKey,
		noHostname: k.NoHostnameCheck}.config()
}

// Opts are the kgo options that secure a client's connections as k
// says: kgo.DialTLSConfig and kgo.SASL (none for PLAINTEXT). Add a
// Guard's (Guard.Opt) to fail at once on a refused connection.
func (k Kafka) Opts() ([]kgo.Opt, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	var opts []kgo.Opt
	tc, err := k.TLSConfig()
	if err != nil {
		return nil, err
	}
	if tc != nil {
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if k.SASL() {
		opts = append(opts, kgo.SASL(k.mechanism()))
	}
	return opts, nil
}

func (k Kafka) mechanism() sasl.Mechanism {
	switch k.Mechanism {
	case ScramSHA256:
		return scram.Auth{User: k.Username, Pass: k.Password.Reveal()}.AsSha256Mechanism()
	case ScramSHA512:
		return scram.Auth{User: k.Username, Pass: k.Password.Reveal()}.AsSha512Mechanism()
	}
	return plain.Auth{User: k.Username, Pass: k.Password.Reveal()}.AsMechanism()
}

// String describes the settings, the password as ***:
// "SASL_SSL, SCRAM-SHA-256 as alice (password ***), CA /etc/ca.pem".
func (k Kafka) String() string {
	parts := []string{k.protocol()}
	if k.Mechanism != "" || k.Username != "" || k.Password.IsSet() {
		s := strings.TrimSpace(k.Mechanism + " as " + k.Username)
		if k.Password.IsSet() {
			s += " (password " + Redacted + ")"
		}
		parts = append(parts, s)
	}
	if k.CA != "" {
		parts = append(parts, "CA "+k.CA)
	} else if k.TLS() {
		parts = append(parts, "the system's CAs")
	}
	if k.Cert != "" {
		parts = append(parts, "client certificate "+k.Cert)
	}
	if k.NoHostnameCheck {
		parts = append(parts, "broker names not checked")
	}
	return strings.Join(parts, ", ")
}
