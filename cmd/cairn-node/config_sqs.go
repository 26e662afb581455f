package main

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live"
	"github.com/cairnmq/cairn/live/sqs"
	"github.com/cairnmq/cairn/live/status"
)

// sqsConfig is the [sqs] table: the Amazon SQS-compatible endpoint,
// served on sqs_listen when that is set. Example:
//
//	sqs_listen = "0.0.0.0:9324"
//
//	[sqs]
//	region = "us-east-1"          # requests must be signed for it
//	account_id = "000000000000"   # named in queue URLs and ARNs
//	client_cert = "client.pem"    # with [tls]: the certificate the endpoint
//	client_key = "client-key.pem" # connects to the cluster with
//	admin_cert = "admin.pem"      # optional: lets admin keys delete queues
//	admin_key = "admin-key.pem"   # (without TLS: admin_secret does)
//
//	[[sqs.keys]]
//	id = "AKIDCAIRNEXAMPLE"
//	secret_file = "sqs-app.secret"  # or secret = "..."
//	role = "client"                 # client | admin (admin may delete queues)
type sqsConfig struct {
	Region     string         `toml:"region"`
	AccountID  string         `toml:"account_id"`
	ClientCert string         `toml:"client_cert"`
	ClientKey  string         `toml:"client_key"`
	AdminCert  string         `toml:"admin_cert"`
	AdminKey   string         `toml:"admin_key"`
	Keys       []sqsKeyConfig `toml:"keys"`
}

// sqsKeyConfig is one access key the endpoint accepts.
type sqsKeyConfig struct {
	ID         string `toml:"id"`
	Secret     string `toml:"secret"`
	SecretFile string `toml:"secret_file"`
	Role       string `toml:"role"`
}

// resolve makes the table's file paths relative to base.
func (s *sqsConfig) resolve(base string) {
	paths := []*string{&s.ClientCert, &s.ClientKey, &s.AdminCert, &s.AdminKey}
	for i := range s.Keys {
		paths = append(paths, &s.Keys[i].SecretFile)
	}
	for _, p := range paths {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(base, *p)
		}
	}
}

// set reports whether any [sqs] key was given.
func (s *sqsConfig) set() bool {
	return s.Region != "" || s.AccountID != "" || s.ClientCert != "" || s.ClientKey != "" || s.AdminCert != "" ||
		s.AdminKey != "" || len(s.Keys) > 0
}

// validateSQS checks sqs_listen and the [sqs] table together.
func (fc *fileConfig) validateSQS() error {
	s := &fc.SQS
	if fc.SQSListen == "" {
		if s.set() {
			return errors.New("config: [sqs] is set but sqs_listen is empty: set sqs_listen to serve the SQS endpoint, or remove [sqs]")
		}
		return nil
	}
	if err := checkListen("sqs_listen", fc.SQSListen); err != nil {
		return err
	}
	if err := checkSQSName("sqs.region", s.Region, 64); err != nil {
		return err
	}
	if err := checkSQSName("sqs.account_id", s.AccountID, 64); err != nil {
		return err
	}
	if err := fc.validateSQSCredentials(); err != nil {
		return err
	}
	return s.validateKeys(fc.AdminSecret != "" || fc.AdminSecretFile != "" || s.AdminCert != "")
}

// validateSQSCredentials checks the cluster credentials the endpoint
// connects with: certificates under TLS, the role secrets without.
func (fc *fileConfig) validateSQSCredentials() error {
	s := &fc.SQS
	hasTLS := fc.TLS.CA != ""
	switch {
	case hasTLS && (s.ClientCert == "" || s.ClientKey == ""):
		return errors.New("config: sqs: with [tls] the endpoint needs client_cert and client_key, a certificate from the cluster CA " +
			"for the client (or admin) role, to connect to the cluster (cairn-node certs writes client.pem)")
	case !hasTLS && (s.ClientCert != "" || s.ClientKey != "" || s.AdminCert != "" || s.AdminKey != ""):
		return errors.New("config: sqs: client_cert, client_key, admin_cert and admin_key are for clusters with [tls]; " +
			"without it the endpoint connects with client_secret (and admin_secret)")
	case (s.AdminCert == "") != (s.AdminKey == ""):
		return errors.New("config: sqs: admin_cert and admin_key go together")
	}
	return nil
}

// validateKeys checks the access keys: at least one, each with an ID, a
// secret given once and long enough, a known role, and admin keys only
// when the endpoint has an admin credential to act on them.
func (s *sqsConfig) validateKeys(hasAdmin bool) error {
	if len(s.Keys) == 0 {
		return errors.New("config: sqs_listen is set but [[sqs.keys]] lists no access key: the endpoint would refuse every request")
	}
	for i, k := range s.Keys {
		field := fmt.Sprintf("sqs.keys[%d]", i)
		role, err := sqs.ParseRole(k.Role)
		switch {
		case err != nil:
			return fmt.Errorf("config: %s.%w", field, err)
		case checkSQSName(field+".id", k.ID, 128) != nil || k.ID == "":
			return fmt.Errorf("config: %s.id %q: want 1 to 128 letters and digits, as AWS access key IDs are", field, k.ID)
		case slices.ContainsFunc(s.Keys[:i], func(o sqsKeyConfig) bool { return o.ID == k.ID }):
			return fmt.Errorf("config: %s.id %q appears twice", field, k.ID)
		case (k.Secret == "") == (k.SecretFile == ""):
			return fmt.Errorf("config: %s: set exactly one of secret and secret_file", field)
		case k.Secret != "" && len(k.Secret) < minSecretLen:
			return fmt.Errorf("config: %s.secret: must be at least %d bytes", field, minSecretLen)
		case role == sqs.RoleAdmin && !hasAdmin:
			return fmt.Errorf("config: %s has the admin role, but the endpoint has no admin credential to act on it: "+
				"set admin_secret (or, with [tls], sqs.admin_cert and sqs.admin_key)", field)
		}
	}
	return nil
}

// checkSQSName allows letters, digits and '-', up to max characters.
func checkSQSName(field, v string, max int) error {
	if len(v) > max {
		return fmt.Errorf("config: %s %q: at most %d characters", field, v, max)
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("config: %s %q: only letters, digits and '-' are allowed, not %q", field, v, c)
		}
	}
	return nil
}

// sqsEndpoint builds the endpoint's configuration from a validated file
// and the node's runtime configuration; nil when sqs_listen is unset.
func (fc *fileConfig) sqsEndpoint(cfg live.Config, logger *slog.Logger) (*sqs.EndpointConfig, error) {
	if fc.SQSListen == "" {
		return nil, nil
	}
	s := &fc.SQS
	ec := &sqs.EndpointConfig{Listen: fc.SQSListen, TLS: cfg.TLS, Logger: logger,
		Server: sqs.Config{Region: s.Region, AccountID: s.AccountID}}
	for i, k := range s.Keys {
		secret, err := roleSecret{field: fmt.Sprintf("sqs.keys[%d].secret", i), value: k.Secret, file: k.SecretFile}.load()
		if err != nil {
			return nil, err
		}
		role, _ := sqs.ParseRole(k.Role)
		ec.Server.Keys = append(ec.Server.Keys, sqs.AccessKey{ID: k.ID, Secret: secret, Role: role})
	}
	if cfg.TLS == nil {
		ec.Client = client.Options{Secret: cfg.ClientSecret}
		ec.StatusAuth = status.Auth{Secret: cfg.ClientSecret}
		if len(cfg.AdminSecret) > 0 {
			ec.Admin = &client.Options{Secret: cfg.AdminSecret}
		}
		return ec, nil
	}
	t, err := live.LoadTLS(fc.TLS.CA, s.ClientCert, s.ClientKey)
	if err != nil {
		return nil, fmt.Errorf("config: sqs.client_cert: %w", err)
	}
	ec.Client, ec.StatusAuth = client.Options{TLS: t}, status.Auth{TLS: t}
	if s.AdminCert != "" {
		a, err := live.LoadTLS(fc.TLS.CA, s.AdminCert, s.AdminKey)
		if err != nil {
			return nil, fmt.Errorf("config: sqs.admin_cert: %w", err)
		}
		ec.Admin = &client.Options{TLS: a}
	}
	return ec, nil
}
