package live

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
)

// LoadTLS reads a CA certificate and a certificate with its key (PEM
// files) and returns a configuration for mutual TLS: it presents the
// certificate, and it trusts only certificates the CA signed, both when
// it dials (RootCAs) and when it accepts (ClientCAs, required).
func LoadTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("reading CA certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("CA file %s holds no PEM certificate", caFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading certificate %s with key %s: %w", certFile, keyFile, err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// dialTLS returns the configuration for dialing addr: the shared one with
// the server name set to addr's host, which the peer's certificate must
// name.
func dialTLS(base *tls.Config, addr string) *tls.Config {
	cfg := base.Clone()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		cfg.ServerName = host
	}
	return cfg
}
