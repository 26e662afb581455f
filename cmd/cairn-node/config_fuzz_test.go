package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoadConfig feeds the configuration loader arbitrary files. It must
// never panic, and a file it accepts must give the runtime a node that is
// among its members and that authenticates every connection. Seeds live
// in testdata/fuzz/FuzzLoadConfig.
func FuzzLoadConfig(f *testing.F) {
	f.Fuzz(func(t *testing.T, text string) {
		dir := t.TempDir()
		path := filepath.Join(dir, "cairn-node.toml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		fc, err := loadConfig(path)
		if err != nil {
			return
		}
		if err := fc.validate(); err != nil {
			return
		}
		// Only read files the input names inside its own directory: a
		// generated path could name any file on the machine.
		for _, p := range []string{fc.TLS.CA, fc.TLS.Cert, fc.TLS.Key, fc.PeerSecretFile, fc.ClientSecretFile, fc.AdminSecretFile} {
			if p != "" && !strings.HasPrefix(p, dir+string(filepath.Separator)) {
				return
			}
		}
		cfg, err := fc.liveConfig(nil)
		if err != nil {
			return
		}
		if cfg.Node.ID == 0 || len(cfg.Members) == 0 || (cfg.TLS == nil && len(cfg.ClientSecret) == 0) {
			t.Fatalf("accepted a configuration without a node or authentication: %+v", cfg)
		}
		if len(cfg.Members) > 1 && cfg.TLS == nil && len(cfg.PeerSecret) == 0 {
			t.Fatalf("accepted a cluster whose peers cannot authenticate: %+v", cfg)
		}
	})
}
