package kafkatest

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/saber-hx/saber-hx/internal/kfakesasl"
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
	if sec.User != "" {
		// kcat, the second client, authenticates only to a broker that
		// lists SaslHandshake v0.
		var tc *tls.Config
		if sec.TLS != nil {
			tc = sec.TLS.ClientConfig(sec.ClientAuth)
			tc.ServerName = "localhost"
		}
		if err := kfakesasl.Advertise(context.Background(), c, tc); err != nil {
			t.Fatalf("kafkatest: %v", err)
		}
	}
	return &Cluster{Cluster: c, Addr: c.ListenAddrs()[0]}
}

// KcatArgs are kcat's options for a client of a cluster secured as s
// says, as mechanism (one of s's), with its client certificate where the
// cluster requires one: "-F" and a configuration file in a temporary
// directory of t, so that the password is neither on a command line nor
// in RunKcat's failure message.
func (s Secure) KcatArgs(t testing.TB, mechanism string) []string {
	t.Helper()
	conf := []string{"security.protocol=" + s.Protocol()}
	if s.User != "" {
		conf = append(conf, "sasl.mechanisms="+mechanism, "sasl.username="+s.User, "sasl.password="+s.Password)
	}
	if s.TLS != nil {
		conf = append(conf, "ssl.ca.location="+s.TLS.CA)
		if s.ClientAuth {
			conf = append(conf, "ssl.certificate.location="+s.TLS.ClientCert, "ssl.key.location="+s.TLS.ClientKey)
		}
	}
	path := filepath.Join(t.TempDir(), "kcat.conf")
	if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	return []string{"-F", path}
}
