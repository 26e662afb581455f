package status

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
)

// Auth is how a tool proves itself to a node's HTTP port, which serves
// the status document only to a client or an admin: with the client or
// admin secret, or, when the node runs TLS, with a client certificate
// from the cluster's CA.
type Auth struct {
	// TLS, when set, makes the request over HTTPS with this
	// configuration: the cluster CA in RootCAs and, to authenticate by
	// certificate, the tool's certificate. ServerName defaults to the
	// host of the address.
	TLS *tls.Config
	// Secret, when set, is sent as a bearer token: the client or the
	// admin secret.
	Secret []byte
}

// FetchAuth reads the status document from a node's HTTP address
// (host:port), authenticating with a.
func FetchAuth(ctx context.Context, httpAddr string, a Auth) (*Node, error) {
	scheme, transport := "http", &http.Transport{DisableKeepAlives: true}
	if a.TLS != nil {
		scheme = "https"
		cfg := a.TLS.Clone()
		if host, _, err := net.SplitHostPort(httpAddr); err == nil && cfg.ServerName == "" {
			cfg.ServerName = host
		}
		transport.TLSClientConfig = cfg
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+httpAddr+"/status", nil)
	if err != nil {
		return nil, err
	}
	if len(a.Secret) > 0 {
		req.Header.Set("Authorization", "Bearer "+string(a.Secret))
	}
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status from %s: HTTP %s", httpAddr, resp.Status)
	}
	var n Node
	if err := json.NewDecoder(resp.Body).Decode(&n); err != nil {
		return nil, fmt.Errorf("status from %s: %w", httpAddr, err)
	}
	return &n, nil
}
