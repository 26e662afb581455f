package live

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"

	"github.com/cairnmq/cairn/node"
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

// NodeCertURI is the URI a node's certificate carries, as a subject
// alternative name, to say which node it belongs to: cairn://node/ID. A
// chain from the cluster CA proves a certificate is the cluster's; this
// name proves which member holds it, so one node (or a client) cannot
// pose as another on the peer port.
func NodeCertURI(id node.NodeID) *url.URL {
	return &url.URL{Scheme: "cairn", Host: "node", Path: "/" + strconv.FormatUint(uint64(id), 10)}
}

// checkPeerIdentity requires the certificate a TLS peer presented to name
// node id.
func checkPeerIdentity(tc *tls.Conn, id node.NodeID) error {
	certs := tc.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return fmt.Errorf("the peer presented no certificate")
	}
	want := NodeCertURI(id).String()
	for _, u := range certs[0].URIs {
		if u.String() == want {
			return nil
		}
	}
	return fmt.Errorf("the peer's certificate (%q) does not name %s as %s", certs[0].Subject.CommonName, id, want)
}
