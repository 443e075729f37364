package security

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// tlsFiles are the PEM files of a client's TLS configuration, each with
// the option that named it (for errors).
type tlsFiles struct {
	ca, cert, key          string
	caOpt, certOpt, keyOpt string
	serverName             string
	// noHostname: verify the chain but not that the certificate names
	// the server (Kafka's ssl.endpoint.identification.algorithm none).
	noHostname bool
}

// config reads the files into a client's TLS configuration: the
// authorities in ca (none: the system's), the client's certificate and
// key (mutual TLS) where given.
func (f tlsFiles) config() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.serverName}
	if f.ca != "" {
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.caOpt, err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate in %s", f.caOpt, f.ca)
		}
	}
	switch {
	case f.cert != "" && f.key != "":
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, fmt.Errorf("%s %s and %s %s: %w", f.certOpt, f.cert, f.keyOpt, f.key, err)
		}
		c.Certificates = []tls.Certificate{pair}
	case f.cert != "":
		return nil, fmt.Errorf("%s needs %s (the client's private key)", f.certOpt, f.keyOpt)
	case f.key != "":
		return nil, fmt.Errorf("%s needs %s (the client's certificate)", f.keyOpt, f.certOpt)
	}
	if f.noHostname {
		roots := c.RootCAs
		// The chain is verified here, against the same roots, without
		// the name check that InsecureSkipVerify turns off with it.
		c.InsecureSkipVerify = true
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return &tls.CertificateVerificationError{Err: fmt.Errorf("the server sent no certificate")}
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			if err != nil {
				return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: err}
			}
			return nil
		}
	}
	return c, nil
}
