package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live"
	"github.com/cairnmq/cairn/live/status"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/session"
)

// clientTLSFrom builds a client's mutual TLS configuration from files
// the certs command wrote.
func clientTLSFrom(t *testing.T, caDir, certDir string) *tls.Config {
	t.Helper()
	return tlsWithCert(t, caDir, certDir, "client")
}

// tlsWithCert builds a mutual TLS configuration presenting the named
// certificate (client, admin, n1...) the certs command wrote.
func tlsWithCert(t *testing.T, caDir, certDir, name string) *tls.Config {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(caDir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(filepath.Join(certDir, name+".pem"), filepath.Join(certDir, name+"-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool}
}

// TestMutualTLS serves a two-node cluster with the certificates the
// certs command writes: peers and clients with certificates from its CA
// get in; a client whose certificate another CA signed does not.
func TestMutualTLS(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	if err := writeDevCerts(dir, 2, []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	if err := writeDevCerts(other, 1, []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	addrs := freeAddrs(t, 4)
	members := []live.Member{
		{ID: 1, PeerAddr: addrs[0], ClientAddr: addrs[1]},
		{ID: 2, PeerAddr: addrs[2], ClientAddr: addrs[3]},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rts []*live.Runtime
	for i, m := range members {
		tlsCfg, err := live.LoadTLS(filepath.Join(dir, "ca.pem"), filepath.Join(dir, m.ID.String()+".pem"), filepath.Join(dir, m.ID.String()+"-key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		rt, err := live.New(live.Config{
			Node: node.Config{ID: m.ID, Replicas: 2}, Members: members, DataDir: filepath.Join(t.TempDir(), "data"),
			ClientListen: m.ClientAddr, PeerListen: m.PeerAddr, HTTPListen: "127.0.0.1:0", TLS: tlsCfg,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
		rts = append(rts, rt)
		done := make(chan error, 1)
		go func() { done <- rt.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	dctx, dcancel := context.WithTimeout(ctx, 20*time.Second)
	defer dcancel()
	c, err := client.Dial(dctx, client.Options{TLS: clientTLSFrom(t, dir, dir)}, members[0].ClientAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	createWhenReady(t, dctx, c, "secure", client.PolicyAll)
	if _, err := c.Publish(dctx, "secure", []byte("over TLS")); err != nil {
		t.Fatalf("publish under PolicyAll (both peers must be connected over TLS): %v", err)
	}
	foreign := clientTLSFrom(t, dir, other)
	if _, err := client.Dial(dctx, client.Options{TLS: foreign, DialTimeout: 2 * time.Second}, members[0].ClientAddr); err == nil {
		t.Fatal("a client certificate from another CA was accepted")
	}
	// On the peer port, a certificate from the right CA is not enough: it
	// must name the node the dialer claims to be. Node 2 accepts dials
	// from node 1 only.
	for _, tc := range []struct{ cert, why string }{
		{"client", "a client certificate posing as node 1"},
		{"admin", "an admin certificate posing as node 1"},
		{"n2", "node 2's certificate posing as node 1"},
	} {
		if err := dialAsPeer(t, dir, tc.cert, members[1].PeerAddr, 1, 2); err == nil || !strings.Contains(err.Error(), "does not name") {
			t.Errorf("%s: handshake error %v, want a refusal naming the identity", tc.why, err)
		}
	}
	if err := dialAsPeer(t, dir, "n1", members[1].PeerAddr, 1, 2); err != nil {
		t.Errorf("node 1's own certificate was refused: %v", err)
	}
	checkCertificateRoles(t, dctx, dir, members[0].ClientAddr)
	checkHTTPS(t, dctx, dir, rts[0].HTTPAddr())
}

// checkCertificateRoles checks that the role a certificate names is the
// most it may claim: the client certificate cannot connect as an admin
// nor delete a queue, the admin certificate can, and a node's
// certificate is no client's.
func checkCertificateRoles(t *testing.T, ctx context.Context, dir, addr string) {
	t.Helper()
	short := func(cert string, admin bool) (*client.Client, error) {
		return client.Dial(ctx, client.Options{TLS: tlsWithCert(t, dir, dir, cert), Admin: admin, DialTimeout: 5 * time.Second}, addr)
	}
	if _, err := short("client", true); err == nil || !strings.Contains(err.Error(), "does not name the admin role") {
		t.Errorf("the client certificate claiming admin: %v, want a refusal", err)
	}
	if _, err := short("n1", false); err == nil || !strings.Contains(err.Error(), "is a node's") {
		t.Errorf("a node certificate on the client port: %v, want a refusal", err)
	}
	c, err := short("client", false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var se *client.StatusError
	if err := c.DeleteQueue(ctx, "secure"); !errors.As(err, &se) || !strings.Contains(se.Detail, "admin role") {
		t.Errorf("delete with the client certificate: %v, want a refusal naming the admin role", err)
	}
	admin, err := short("admin", true)
	if err != nil {
		t.Fatalf("the admin certificate: %v", err)
	}
	defer admin.Close()
	if err := admin.DeleteQueue(ctx, "secure"); err != nil {
		t.Errorf("delete with the admin certificate: %v", err)
	}
}

// checkHTTPS checks that a TLS node serves HTTP over TLS only, its open
// paths to anyone with the CA, and its status to a client certificate.
func checkHTTPS(t *testing.T, ctx context.Context, dir, addr string) {
	t.Helper()
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("a TLS node served /healthz over plain HTTP")
		}
	}
	anonymous := tlsWithCert(t, dir, dir, "client")
	anonymous.Certificates = nil
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: anonymous}}
	for path, want := range map[string]int{"/healthz": http.StatusOK, "/status": http.StatusUnauthorized} {
		resp, err := hc.Get("https://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s over TLS: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s over TLS without a certificate: %d, want %d", path, resp.StatusCode, want)
		}
	}
	if _, err := status.FetchAuth(ctx, addr, status.Auth{TLS: clientTLSFrom(t, dir, dir)}); err != nil {
		t.Errorf("status with the client certificate: %v", err)
	}
}

// dialAsPeer opens a TLS connection to a peer port with the named
// certificate and runs the session handshake as node self.
func dialAsPeer(t *testing.T, dir, cert, addr string, self, expect uint32) error {
	t.Helper()
	cfg, err := live.LoadTLS(filepath.Join(dir, "ca.pem"), filepath.Join(dir, cert+".pem"), filepath.Join(dir, cert+"-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := net.SplitHostPort(addr)
	cfg.ServerName = host
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	in := session.Initiator{Role: session.RolePeer, Self: self, Expect: expect}
	_, err = in.Handshake(bufio.NewReader(conn), conn)
	return err
}

// createWhenReady creates a queue, retrying while the metadata group is
// still electing its first leader.
func createWhenReady(t *testing.T, ctx context.Context, c *client.Client, name string, p client.Policy) {
	t.Helper()
	for {
		err := c.CreateQueue(ctx, name, p)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
