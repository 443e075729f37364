package kafkatest

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/saber-hx/saber-hx/internal/tlstest"
)

// The SASL mechanisms a secure cluster offers.
var Mechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// Secure is how StartSecure secures a cluster.
type Secure struct {
	// User and Password are a superuser's, for every mechanism in
	// Mechanisms (all three where nil); no User: no SASL.
	User, Password string
	Mechanisms     []string
	// TLS, where set, makes the listener TLS with its server
	// certificate; ClientAuth requires a client certificate it signed.
	TLS        *tlstest.PKI
	ClientAuth bool
}

// Protocol is the security.protocol a client of the cluster needs.
func (s Secure) Protocol() string {
	switch {
	case s.User != "" && s.TLS != nil:
		return "SASL_SSL"
	case s.User != "":
		return "SASL_PLAINTEXT"
	case s.TLS != nil:
		return "SSL"
	}
	return "PLAINTEXT"
}

// StartSecure is Start for a cluster that requires SASL and/or TLS.
func StartSecure(t testing.TB, sec Secure, partitions int, topics ...string) *Cluster {
	t.Helper()
	opts := options(partitions, topics)
	if sec.User != "" {
		mechs := sec.Mechanisms
		if mechs == nil {
			mechs = Mechanisms
		}
		opts = append(opts, kfake.EnableSASL())
		for _, m := range mechs {
			opts = append(opts, kfake.Superuser(m, sec.User, sec.Password))
		}
	}
	if sec.TLS != nil {
		opts = append(opts, kfake.TLS(sec.TLS.ServerConfig(sec.ClientAuth)))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kafkatest: start a secure kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return &Cluster{Cluster: c, Addr: c.ListenAddrs()[0]}
}

// KcatArgs are kcat's -X options for a client of a cluster secured as
// sec says, as mechanism (one of sec's), with its client certificate
// where the cluster requires one.
func (s Secure) KcatArgs(mechanism string) []string {
	args := []string{"-X", "security.protocol=" + s.Protocol()}
	if s.User != "" {
		args = append(args, "-X", "sasl.mechanisms="+mechanism, "-X", "sasl.username="+s.User, "-X", "sasl.password="+s.Password)
	}
	if s.TLS != nil {
		args = append(args, "-X", "ssl.ca.location="+s.TLS.CA)
		if s.ClientAuth {
			args = append(args, "-X", "ssl.certificate.location="+s.TLS.ClientCert, "-X", "ssl.key.location="+s.TLS.ClientKey)
		}
	}
	return args
}
