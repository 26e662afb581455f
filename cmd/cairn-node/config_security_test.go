package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/live"
)

// loadEdited loads goodConfig edited by replacing old with new, and
// returns the runtime configuration or the first error.
func loadEdited(t *testing.T, old, new string) (live.Config, error) {
	t.Helper()
	fc, err := loadConfig(writeConfig(t, strings.Replace(goodConfig, old, new, 1)))
	if err == nil {
		err = fc.validate()
	}
	if err != nil {
		return live.Config{}, err
	}
	return fc.liveConfig(nil)
}

// TestHTTPListensOnLoopbackByDefault checks that without listen.http the
// HTTP port binds loopback on http_addr's port, not http_addr's host: the
// status pages are not exposed beyond the machine unless asked for.
func TestHTTPListensOnLoopbackByDefault(t *testing.T) {
	cfg, err := loadEdited(t, `http_addr = "127.0.0.1:7202"`, `http_addr = "10.1.2.3:7202"`)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPListen != "127.0.0.1:7202" {
		t.Fatalf("HTTP listens on %q, want 127.0.0.1:7202", cfg.HTTPListen)
	}
	cfg, err = loadEdited(t, `client = "0.0.0.0:7002"`, "client = \"0.0.0.0:7002\"\nhttp = \"0.0.0.0:7202\"")
	if err != nil || cfg.HTTPListen != "0.0.0.0:7202" {
		t.Fatalf("an explicit listen.http: %q (%v), want it kept", cfg.HTTPListen, err)
	}
}

// TestRoleSecretsMustDiffer checks that one secret given for two roles is
// refused: the point of separate secrets is that a client cannot pass
// for a peer.
func TestRoleSecretsMustDiffer(t *testing.T) {
	_, err := loadEdited(t, `client_secret = "0123456789abcdef-client"`, `client_secret = "0123456789abcdef-peer"`)
	if err == nil || !strings.Contains(err.Error(), "each role needs its own") {
		t.Fatalf("the peer secret reused as the client secret: %v", err)
	}
}

// TestSecretFiles checks that secrets load from files, trimmed, relative
// to the configuration file.
func TestSecretFiles(t *testing.T) {
	text := strings.Replace(goodConfig, `peer_secret = "0123456789abcdef-peer"`, `peer_secret_file = "peer.secret"`, 1)
	path := writeConfig(t, text)
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "peer.secret"), []byte("from-a-file-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fc, err := loadConfig(path)
	if err == nil {
		err = fc.validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := fc.liveConfig(nil)
	if err != nil || string(cfg.PeerSecret) != "from-a-file-0123456789" {
		t.Fatalf("peer secret %q (%v)", cfg.PeerSecret, err)
	}
}

// TestHTTPAndLimitsConfig checks that the [http] and [limits] tables
// reach the runtime's configuration.
func TestHTTPAndLimitsConfig(t *testing.T) {
	tables := `
[http]
auth = "admin"
open = ["/healthz"]

[limits]
max_clients = 100
max_preauth_conns = 10
max_preauth_per_source = 2
max_http_conns = 5
fd_reserve = 300
handshake_timeout = "2s"
frame_read_timeout = "3s"
client_idle_timeout = "off"
http_idle_timeout = "9s"

[listen]`
	cfg, err := loadEdited(t, `[listen]`, tables)
	if err != nil {
		t.Fatal(err)
	}
	l := cfg.Limits
	if cfg.HTTPAuth != live.HTTPAuthAdmin || len(cfg.HTTPOpenPaths) != 1 || cfg.MaxClients != 100 || cfg.HandshakeTimeout != 2*time.Second ||
		l.MaxPreAuthConns != 10 || l.MaxPreAuthPerSource != 2 || l.MaxHTTPConns != 5 || l.FDReserve != 300 ||
		l.FrameReadTimeout != 3*time.Second || l.ClientIdleTimeout >= 0 || l.HTTPIdleTimeout != 9*time.Second {
		t.Fatalf("http %v %q, limits %+v", cfg.HTTPAuth, cfg.HTTPOpenPaths, l)
	}
	cfg, err = loadEdited(t, `[listen]`, "[http]\nopen = []\n[listen]")
	if err != nil || cfg.HTTPOpenPaths == nil || len(cfg.HTTPOpenPaths) != 0 {
		t.Fatalf("an empty open list: %q (%v), want nothing open", cfg.HTTPOpenPaths, err)
	}
}
