package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/cairnmq/cairn/live"
)

// roleSecret is one role's secret as the file gives it: inline, or the
// path of a file holding it.
type roleSecret struct {
	field      string // the inline key, e.g. "peer_secret"
	value      string
	file       string
	into       *[]byte
	neededWhen bool // the configuration is incomplete without it
}

// roleSecrets lists the three role secrets, writing into cfg when loaded.
func (fc *fileConfig) roleSecrets(cfg *live.Config) []roleSecret {
	return []roleSecret{
		{"peer_secret", fc.PeerSecret, fc.PeerSecretFile, &cfg.PeerSecret, len(fc.Peers) > 1},
		{"client_secret", fc.ClientSecret, fc.ClientSecretFile, &cfg.ClientSecret, true},
		{"admin_secret", fc.AdminSecret, fc.AdminSecretFile, &cfg.AdminSecret, false},
	}
}

// errSingleSecret explains why the former single secret is refused.
var errSingleSecret = errors.New("config: secret and secret_file are no longer accepted: one secret for peers and clients " +
	"lets any client join the peer port as a node. Set peer_secret (nodes only), client_secret and admin_secret, " +
	"each different, or their _file forms")

// validateAuth checks that connections can be authenticated: by TLS, or
// by a secret per role, each given once and long enough.
func (fc *fileConfig) validateAuth() error {
	hasTLS := fc.TLS.CA != "" || fc.TLS.Cert != "" || fc.TLS.Key != ""
	if hasTLS && (fc.TLS.CA == "" || fc.TLS.Cert == "" || fc.TLS.Key == "") {
		return errors.New("config: tls needs all of ca, cert and key")
	}
	if fc.Secret != "" || fc.SecretFile != "" {
		return errSingleSecret
	}
	var scratch live.Config
	for _, s := range fc.roleSecrets(&scratch) {
		switch {
		case hasTLS && (s.value != "" || s.file != ""):
			return fmt.Errorf("config: %s: with [tls] the certificates name each role; remove the secrets", s.field)
		case s.value != "" && s.file != "":
			return fmt.Errorf("config: %s and %s_file are both set; choose one", s.field, s.field)
		case s.value != "" && len(s.value) < minSecretLen:
			return fmt.Errorf("config: %s: must be at least %d bytes", s.field, minSecretLen)
		case !hasTLS && s.neededWhen && s.value == "" && s.file == "":
			return fmt.Errorf("config: no authentication for %s: set a [tls] table, or %s or %s_file", strings.TrimSuffix(s.field, "_secret")+"s", s.field, s.field)
		}
	}
	return nil
}

// loadAuth loads the TLS files or the role secrets into cfg.
func (fc *fileConfig) loadAuth(cfg *live.Config) error {
	if fc.TLS.CA != "" {
		t, err := live.LoadTLS(fc.TLS.CA, fc.TLS.Cert, fc.TLS.Key)
		if err != nil {
			return fmt.Errorf("config: tls: %w", err)
		}
		cfg.TLS = t
		return nil
	}
	var loaded []string
	for _, s := range fc.roleSecrets(cfg) {
		v, err := s.load()
		if err != nil {
			return err
		}
		if v != "" && slices.Contains(loaded, v) {
			return fmt.Errorf("config: %s is the same as another role's secret; each role needs its own", s.field)
		}
		loaded = append(loaded, v)
		if v != "" {
			*s.into = []byte(v)
		}
	}
	return nil
}

// maxSecretFileSize bounds a secret file.
const maxSecretFileSize = 4 << 10

// load returns the secret, reading its file if it has one.
func (s roleSecret) load() (string, error) {
	if s.file == "" {
		return s.value, nil
	}
	f, err := os.Open(s.file)
	if err != nil {
		return "", fmt.Errorf("config: %s_file: %w", s.field, err)
	}
	defer f.Close()
	// A secret is short; reading a bounded amount keeps a mistaken path
	// (a log, a device) from costing more than an error.
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFileSize+1))
	if err != nil {
		return "", fmt.Errorf("config: %s_file: %w", s.field, err)
	}
	if len(b) > maxSecretFileSize {
		return "", fmt.Errorf("config: %s_file %s: larger than %d bytes, which no secret is", s.field, s.file, maxSecretFileSize)
	}
	v := strings.TrimSpace(string(b))
	if len(v) < minSecretLen {
		return "", fmt.Errorf("config: %s_file %s: the secret must be at least %d bytes", s.field, s.file, minSecretLen)
	}
	return v, nil
}

// httpConfig is the [http] table.
type httpConfig struct {
	Auth string    `toml:"auth"`
	Open *[]string `toml:"open"`
}

var httpAuths = map[string]live.HTTPAuth{"": live.HTTPAuthClient, "client": live.HTTPAuthClient, "admin": live.HTTPAuthAdmin, "none": live.HTTPAuthNone}

func (h *httpConfig) validate() error {
	if _, ok := httpAuths[h.Auth]; !ok {
		return fmt.Errorf("config: http.auth %q: want client, admin or none", h.Auth)
	}
	if h.Open == nil {
		return nil
	}
	for _, p := range *h.Open {
		if !strings.HasPrefix(p, "/") {
			return fmt.Errorf("config: http.open %q: want a path such as /metrics", p)
		}
	}
	return nil
}

// apply sets the HTTP settings on cfg. An explicit empty open list opens
// nothing.
func (h *httpConfig) apply(cfg *live.Config) {
	cfg.HTTPAuth = httpAuths[h.Auth]
	if h.Open != nil {
		cfg.HTTPOpenPaths = append([]string{}, *h.Open...)
	}
}
