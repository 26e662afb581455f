package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cairnmq/cairn/live"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/session"
)

// certValidity is how long development certificates last.
const certValidity = 365 * 24 * time.Hour

// runCerts writes a development CA, a certificate per node and one for
// clients, for trying mutual TLS locally. The CA key is written too, so
// more certificates can be made later; guard it accordingly.
func runCerts(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cairn-node certs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "directory to write the certificates into (required)")
	nodes := fs.Int("nodes", 3, "how many node certificates")
	hosts := fs.String("hosts", "localhost,127.0.0.1,::1", "comma-separated host names and IPs the node certificates are valid for")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || *dir == "" || *nodes < 1 {
		fmt.Fprintln(stderr, "usage: cairn-node certs --dir D [--nodes 3] [--hosts localhost,127.0.0.1,::1]")
		return exitUsage
	}
	if err := writeDevCerts(*dir, *nodes, strings.Split(*hosts, ",")); err != nil {
		fmt.Fprintln(stderr, "cairn-node certs:", err)
		return exitFailed
	}
	fmt.Fprintf(stdout, `wrote ca.pem, n1.pem … n%d.pem, client.pem and admin.pem (each with a -key.pem) to %s

In node i's configuration:
  [tls]
  ca = "%[2]s/ca.pem"
  cert = "%[2]s/n1.pem"
  key = "%[2]s/n1-key.pem"

For the CLI (the admin certificate, with --admin, may also delete queues):
  cairn --ca %[2]s/ca.pem --cert %[2]s/client.pem --key %[2]s/client-key.pem publish orders hello
  cairn --ca %[2]s/ca.pem --cert %[2]s/admin.pem --key %[2]s/admin-key.pem --admin queue delete orders
`, *nodes, *dir)
	return exitOK
}

// writeDevCerts creates dir and writes the CA and every certificate.
func writeDevCerts(dir string, nodes int, hosts []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ca, caKey, err := newCA()
	if err != nil {
		return err
	}
	if err := writePair(dir, "ca", ca, caKey); err != nil {
		return err
	}
	for i := 1; i <= nodes; i++ {
		name := fmt.Sprintf("n%d", i)
		tmpl := leafTemplate("cairn node "+name, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth})
		addHosts(tmpl, hosts)
		tmpl.URIs = append(tmpl.URIs, live.NodeCertURI(node.NodeID(i)))
		if err := issue(dir, name, tmpl, ca, caKey); err != nil {
			return err
		}
	}
	for _, role := range []session.Role{session.RoleClient, session.RoleAdmin} {
		tmpl := leafTemplate("cairn "+role.String(), []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
		tmpl.URIs = append(tmpl.URIs, live.RoleCertURI(role))
		if err := issue(dir, role.String(), tmpl, ca, caKey); err != nil {
			return err
		}
	}
	return nil
}

func newCA() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "cairn development CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(certValidity),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func leafTemplate(cn string, usage []x509.ExtKeyUsage) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(certValidity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage,
	}
}

func addHosts(tmpl *x509.Certificate, hosts []string) {
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
}

// issue signs tmpl with the CA and writes name.pem and name-key.pem.
func issue(dir, name string, tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	return writePair(dir, name, cert, key)
}

// writePair writes a certificate (world-readable) and its key (owner
// only) as PEM.
func writePair(dir, name string, cert *x509.Certificate, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	if err := os.WriteFile(filepath.Join(dir, name+".pem"), certPEM, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+"-key.pem"), keyPEM, 0o600)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}
