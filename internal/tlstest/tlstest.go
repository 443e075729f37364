// Package tlstest makes the certificates of the tests' secured servers:
// a certificate authority, a server certificate for 127.0.0.1 and
// localhost signed by it, and a client certificate (mutual TLS), with
// crypto/x509 (no openssl binary), written as PEM files in a temporary
// directory for the servers and clients that read files (redis-server,
// kcat, the connectors' settings).
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a certificate authority and the certificates it signed, as
// files in Dir and parsed.
type PKI struct {
	Dir string
	// CA is the authority's certificate (PEM file); Pool holds it.
	CA   string
	Pool *x509.CertPool
	// ServerCert and ServerKey are the server's certificate (for
	// 127.0.0.1, ::1 and localhost) and private key (PKCS #8), PEM files.
	ServerCert, ServerKey string
	// ClientCert and ClientKey are a client's (CN "saber-hx-client").
	ClientCert, ClientKey string
	// Server and Client are the same pairs, loaded.
	Server, Client tls.Certificate
}

// New makes a fresh authority and its certificates in a temporary
// directory of t (a second New is an authority the first does not
// trust: a wrong CA).
func New(t testing.TB) *PKI {
	t.Helper()
	p, err := Make(t.TempDir())
	if err != nil {
		t.Fatalf("tlstest: %v", err)
	}
	return p
}

// Make is New into dir.
func Make(dir string) (*PKI, error) {
	p := &PKI{Dir: dir}
	caKey, caCert, caPEM, err := issue(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "saber-hx test CA"},
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
	}, nil, nil)
	if err != nil {
		return nil, err
	}
	p.Pool = x509.NewCertPool()
	p.Pool.AddCert(caCert)
	if p.CA, err = write(dir, "ca.pem", caPEM); err != nil {
		return nil, err
	}
	srvKey, _, srvPEM, err := issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, caCert, caKey)
	if err != nil {
		return nil, err
	}
	if p.ServerCert, p.ServerKey, p.Server, err = writePair(dir, "server", srvPEM, srvKey); err != nil {
		return nil, err
	}
	cliKey, _, cliPEM, err := issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "saber-hx-client"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, caCert, caKey)
	if err != nil {
		return nil, err
	}
	if p.ClientCert, p.ClientKey, p.Client, err = writePair(dir, "client", cliPEM, cliKey); err != nil {
		return nil, err
	}
	return p, nil
}

// ServerConfig is a server's TLS configuration: its certificate and,
// with clientAuth, a client certificate signed by the authority required.
func (p *PKI) ServerConfig(clientAuth bool) *tls.Config {
	c := &tls.Config{Certificates: []tls.Certificate{p.Server}, MinVersion: tls.VersionTLS12}
	if clientAuth {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = p.Pool
	}
	return c
}

// ClientConfig is a client's TLS configuration trusting the authority
// (with its certificate where cert is true).
func (p *PKI) ClientConfig(cert bool) *tls.Config {
	c := &tls.Config{RootCAs: p.Pool, MinVersion: tls.VersionTLS12}
	if cert {
		c.Certificates = []tls.Certificate{p.Client}
	}
	return c
}

// issue makes a key and a certificate from tmpl, signed by parent's key
// (self-signed where parent is nil).
func issue(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, *x509.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62)); err != nil {
		return nil, nil, nil, err
	}
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	return key, cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

func writePair(dir, name string, certPEM []byte, key *ecdsa.PrivateKey) (string, string, tls.Certificate, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", tls.Certificate{}, err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	certFile, err := write(dir, name+".pem", certPEM)
	if err != nil {
		return "", "", tls.Certificate{}, err
	}
	keyFile, err := write(dir, name+"-key.pem", keyPEM)
	if err != nil {
		return "", "", tls.Certificate{}, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	return certFile, keyFile, pair, err
}

func write(dir, name string, b []byte) (string, error) {
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, b, 0o600)
}
