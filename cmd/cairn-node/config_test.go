package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/live"
)

const goodConfig = `
id = 2
data_dir = "data/n2"
replication = 3
log_level = "debug"
detection = "eager"
peer_secret = "0123456789abcdef-peer"
client_secret = "0123456789abcdef-client"
admin_secret = "0123456789abcdef-admin"

[listen]
client = "0.0.0.0:7002"

[[peers]]
id = 1
addr = "127.0.0.1:7101"
client_addr = "127.0.0.1:7001"

[[peers]]
id = 2
addr = "127.0.0.1:7102"
client_addr = "127.0.0.1:7002"
http_addr = "127.0.0.1:7202"

[[peers]]
id = 3
addr = "127.0.0.1:7103"
client_addr = "127.0.0.1:7003"
`

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cairn-node.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestGoodConfig(t *testing.T) {
	path := writeConfig(t, goodConfig)
	fc, err := loadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := fc.validate(); err != nil {
		t.Fatal(err)
	}
	cfg, err := fc.liveConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(filepath.Dir(path), "data", "n2"); cfg.DataDir != want {
		t.Errorf("data dir %q, want %q (relative to the file)", cfg.DataDir, want)
	}
	if cfg.ClientListen != "0.0.0.0:7002" || cfg.PeerListen != "127.0.0.1:7102" || cfg.HTTPListen != "127.0.0.1:7202" {
		t.Errorf("listen addresses %q %q %q", cfg.ClientListen, cfg.PeerListen, cfg.HTTPListen)
	}
	if cfg.Node.ID != 2 || len(cfg.Members) != 3 || string(cfg.PeerSecret) != "0123456789abcdef-peer" ||
		string(cfg.ClientSecret) != "0123456789abcdef-client" || string(cfg.AdminSecret) != "0123456789abcdef-admin" {
		t.Errorf("config %+v", cfg)
	}
	if cfg.Node.Detection.Mode != 2 {
		t.Errorf("detection %+v, want eager", cfg.Node.Detection)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	cases := []struct{ edit, old, want string }{
		{`addr = "x"`, `addr = "127.0.0.1:7102"`, `config: peers[1].addr "x": missing port`},
		{`id = 9`, `id = 2`, `config: id 9 is not among peers[].id`},
		{`log_level = "loud"`, `log_level = "debug"`, `config: log_level "loud"`},
		{"log_format = \"yaml\"\nreplication = 3", `replication = 3`, `config: log_format "yaml": want text or json`},
		{`detection = "psychic"`, `detection = "eager"`, `config: detection "psychic"`},
		{"detection = \"eager\"\nreplace_after = \"soon\"", `detection = "eager"`, `config: replace_after "soon"`},
		{"detection = \"eager\"\nrest_after = \"-2s\"", `detection = "eager"`, `config: rest_after "-2s"`},
		{"detection = \"eager\"\nshutdown_handoff = \"-1s\"", `detection = "eager"`, `config: shutdown_handoff "-1s": want a duration such as 10s, or 0s`},
		{"detection = \"eager\"\nshutdown_handoff = \"later\"", `detection = "eager"`, `config: shutdown_handoff "later"`},
		{"detection = \"eager\"\ncheckpoint_records = -5", `detection = "eager"`, `config: checkpoint_records -5`},
		{"detection = \"eager\"\nsegment_bytes = 100", `detection = "eager"`, `config: segment_bytes 100`},
		{"detection = \"eager\"\nmax_data_bytes = -1", `detection = "eager"`, `config: max_data_bytes -1`},
		{"detection = \"eager\"\ncheckpoint_interval = \"soon\"", `detection = "eager"`, `config: checkpoint_interval "soon"`},
		{"detection = \"eager\"\ndedup_window = \"500ms\"", `detection = "eager"`, `config: dedup_window "500ms": want a duration from 1s to 24h0m0s`},
		{`client_secret = "short"`, `client_secret = "0123456789abcdef-client"`, `config: client_secret: must be at least 16 bytes`},
		{`#`, `client_secret = "0123456789abcdef-client"`, `config: no authentication for clients`},
		{`#`, `peer_secret = "0123456789abcdef-peer"`, `config: no authentication for peers`},
		{`secret = "0123456789abcdef-secret"`, `admin_secret = "0123456789abcdef-admin"`, `config: secret and secret_file are no longer accepted`},
		{"client_secret_file = \"c\"\nclient_secret = \"0123456789abcdef-client\"", `client_secret = "0123456789abcdef-client"`, `config: client_secret and client_secret_file are both set`},
		{"[tls]\nca = \"ca.pem\"\ncert = \"c.pem\"\nkey = \"k.pem\"\n[listen]", `[listen]`, `config: peer_secret: with [tls] the certificates name each role`},
		{"[http]\nauth = \"everyone\"\n[listen]", `[listen]`, `config: http.auth "everyone"`},
		{"[http]\nopen = [\"metrics\"]\n[listen]", `[listen]`, `config: http.open "metrics"`},
		{"[limits]\nmax_preauth_conns = -1\n[listen]", `[listen]`, `config: limits.max_preauth_conns -1`},
		{"[limits]\nhandshake_timeout = \"off\"\n[listen]", `[listen]`, `config: limits.handshake_timeout "off"`},
		{"[limits]\nframe_read_timeout = \"soon\"\n[listen]", `[listen]`, `config: limits.frame_read_timeout "soon": want a positive duration such as 30s, or off`},
		{`client = "nowhere:port"`, `client = "0.0.0.0:7002"`, `config: listen.client "nowhere:port": port "port"`},
		{`client_addr = "0.0.0.0:7001"`, `client_addr = "127.0.0.1:7001"`, `config: peers[0].client_addr "0.0.0.0:7001": other nodes and clients cannot dial`},
		{`replication = 5`, `replication = 3`, `config: replication 5`},
		{"cluster = \"east coast\"\nreplication = 3", `replication = 3`, `config: cluster "east coast": only letters, digits`},
		{`colour = "blue"`, `replication = 3`, `config: unknown field "colour"`},
		{"[tls]\nca = \"ca.pem\"\n[listen]", `[listen]`, `config: tls needs all of ca, cert and key`},
	}
	for _, c := range cases {
		text := strings.Replace(goodConfig, c.old, c.edit, 1)
		fc, err := loadConfig(writeConfig(t, text))
		if err == nil {
			err = fc.validate()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("with %s: error %v, want it to contain %q", c.edit, err, c.want)
		}
	}
}

// durationSettingCases checks that each line, added to a good
// configuration, loads and gives the node the duration got reads back.
func durationSettingCases(t *testing.T, got func(live.Config) time.Duration, cases map[string]time.Duration) {
	t.Helper()
	for line, want := range cases {
		text := strings.Replace(goodConfig, `detection = "eager"`, "detection = \"eager\"\n"+line, 1)
		fc, err := loadConfig(writeConfig(t, text))
		if err == nil {
			err = fc.validate()
		}
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		cfg, err := fc.liveConfig(nil)
		if err != nil || got(cfg) != want {
			t.Errorf("%q: %v (%v), want %v", line, got(cfg), err, want)
		}
	}
}

func TestDedupWindowConfig(t *testing.T) {
	durationSettingCases(t, func(c live.Config) time.Duration { return c.Node.DedupWindow }, map[string]time.Duration{
		"":                     0, // the node's default applies
		`dedup_window = "10m"`: 10 * time.Minute,
	})
}

func TestReplaceAfterConfig(t *testing.T) {
	durationSettingCases(t, func(c live.Config) time.Duration { return c.Node.ReplaceAfter }, map[string]time.Duration{
		"":                      0, // the node's default applies
		`replace_after = "90s"`: 90 * time.Second,
		`replace_after = "off"`: -1,
	})
}

func TestRestAfterConfig(t *testing.T) {
	durationSettingCases(t, func(c live.Config) time.Duration { return c.Node.RestAfter }, map[string]time.Duration{
		"":                   0, // the node's default applies
		`rest_after = "30s"`: 30 * time.Second,
		`rest_after = "off"`: -1,
	})
}

func TestShutdownHandoffConfig(t *testing.T) {
	durationSettingCases(t, func(c live.Config) time.Duration { return c.ShutdownHandoff }, map[string]time.Duration{
		"":                         0, // the runtime's default applies
		`shutdown_handoff = "30s"`: 30 * time.Second,
		`shutdown_handoff = "0s"`:  -1,
		`shutdown_handoff = "0"`:   -1,
		`shutdown_handoff = "off"`: -1,
	})
}

// joinConfig is node 4 joining the cluster of goodConfig: it lists
// itself and node 1, its seed.
const joinConfig = `
id = 4
join = true
data_dir = "data/n4"
replication = 3
peer_secret = "0123456789abcdef-peer"
client_secret = "0123456789abcdef-client"

[[peers]]
id = 1
addr = "127.0.0.1:7101"
client_addr = "127.0.0.1:7001"

[[peers]]
id = 4
addr = "127.0.0.1:7104"
client_addr = "127.0.0.1:7004"
`

// TestJoinConfig checks that join = true reaches the node, that a
// joining node may ask for more replicas than the peers it lists (the
// cluster has the nodes), and that it must list a seed besides itself.
// A founding node still may not.
func TestJoinConfig(t *testing.T) {
	fc, err := loadConfig(writeConfig(t, joinConfig))
	if err != nil {
		t.Fatal(err)
	}
	if err := fc.validate(); err != nil {
		t.Fatalf("a joining node with a seed: %v", err)
	}
	cfg, err := fc.liveConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Node.Join || cfg.Node.Replicas != 3 || len(cfg.Members) != 2 {
		t.Errorf("node config %+v with %d members, want join, 3 replicas and 2 members", cfg.Node, len(cfg.Members))
	}
	alone := joinConfig[:strings.Index(joinConfig, "[[peers]]")] + joinConfig[strings.LastIndex(joinConfig, "[[peers]]"):]
	for text, want := range map[string]string{
		alone: "config: join = true needs peers to list this node and at least one seed",
		strings.Replace(joinConfig, "join = true", "join = false", 1): "config: replication 3: must be between 1 and the number of peers (2)",
	} {
		fc, err := loadConfig(writeConfig(t, text))
		if err == nil {
			err = fc.validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to contain %q", err, want)
		}
	}
	if fc, err := loadConfig(writeConfig(t, goodConfig)); err != nil || fc.Join {
		t.Errorf("a configuration without join: %v, join %v; want it to found the cluster as before", err, fc.Join)
	}
}
