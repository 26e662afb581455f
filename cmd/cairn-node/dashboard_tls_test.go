package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnmq/cairn/live"
	"github.com/cairnmq/cairn/live/status"
	"github.com/cairnmq/cairn/node"
)

// Under TLS, a node's dashboard reads its peers' /status with its own
// node certificate, which the peers accept for that path alone: the
// cluster view shows both nodes serving, and the node certificate opens
// no other page.
func TestDashboardReadsPeersOverTLS(t *testing.T) {
	dir := t.TempDir()
	if err := writeDevCerts(dir, 2, []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	addrs := freeAddrs(t, 6)
	members := []live.Member{
		{ID: 1, PeerAddr: addrs[0], ClientAddr: addrs[1], HTTPAddr: addrs[2]},
		{ID: 2, PeerAddr: addrs[3], ClientAddr: addrs[4], HTTPAddr: addrs[5]},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, m := range members {
		tlsCfg, err := live.LoadTLS(filepath.Join(dir, "ca.pem"), filepath.Join(dir, m.ID.String()+".pem"), filepath.Join(dir, m.ID.String()+"-key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		rt, err := live.New(live.Config{
			Node: node.Config{ID: m.ID, Replicas: 2}, Members: members, DataDir: filepath.Join(t.TempDir(), "data"),
			ClientListen: m.ClientAddr, PeerListen: m.PeerAddr, HTTPListen: m.HTTPAddr, TLS: tlsCfg,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- rt.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	viewer := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLSFrom(t, dir, dir)}}
	var c status.Cluster
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := viewer.Get("https://" + members[0].HTTPAddr + "/dashboard.json")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Nodes) == 2 && c.Nodes[0].State == "serving" && c.Nodes[1].State == "serving" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dashboard over TLS shows %+v, want both nodes serving", c.Nodes)
		}
		time.Sleep(600 * time.Millisecond)
	}
	asNode := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsWithCert(t, dir, dir, "n1")}}
	for path, want := range map[string]int{"/status": http.StatusOK, "/dashboard.json": http.StatusUnauthorized, "/node": http.StatusUnauthorized} {
		resp, err := asNode.Get("https://" + members[1].HTTPAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s with a node certificate: %d, want %d", path, resp.StatusCode, want)
		}
	}
}
