package live

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/live/status"
)

// httpGet requests path from addr with the given Authorization header
// (none if empty) and returns the status code.
func httpGet(t *testing.T, addr, path, authorization string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxFor(t, 10*time.Second), http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestHTTPRequiresCredential checks who may read what on the HTTP port:
// the open paths anyone, the status pages only a client or an admin (by
// bearer token or basic-auth password), never with the peer secret.
func TestHTTPRequiresCredential(t *testing.T) {
	tn := start(t, singleConfig(t))
	basic := func(secret []byte) string {
		req, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
		req.SetBasicAuth("me", string(secret))
		return req.Header.Get("Authorization")
	}
	cases := []struct {
		path, auth string
		want       int
	}{
		{"/healthz", "", http.StatusOK},
		{"/metrics", "", http.StatusOK},
		{"/status", "", http.StatusUnauthorized},
		{"/", "", http.StatusUnauthorized},
		{"/status", "Bearer wrong-secret", http.StatusUnauthorized},
		{"/status", "Bearer " + string(testPeerSecret), http.StatusUnauthorized},
		{"/status", "Bearer " + string(testSecret), http.StatusOK},
		{"/status", "Bearer " + string(testAdminSecret), http.StatusOK},
		{"/", basic(testSecret), http.StatusOK},
	}
	for _, c := range cases {
		if got := httpGet(t, tn.HTTPAddr(), c.path, c.auth); got != c.want {
			t.Errorf("GET %s with %q: %d, want %d", c.path, c.auth, got, c.want)
		}
	}
}

// TestHTTPAuthSettings checks HTTPAuthAdmin, HTTPAuthNone and a narrower
// set of open paths.
func TestHTTPAuthSettings(t *testing.T) {
	cfg := singleConfig(t)
	cfg.HTTPAuth = HTTPAuthAdmin
	cfg.HTTPOpenPaths = []string{"/healthz"}
	tn := start(t, cfg)
	for _, c := range []struct {
		path, auth string
		want       int
	}{
		{"/metrics", "", http.StatusUnauthorized},
		{"/status", "Bearer " + string(testSecret), http.StatusForbidden},
		{"/status", "Bearer " + string(testAdminSecret), http.StatusOK},
	} {
		if got := httpGet(t, tn.HTTPAddr(), c.path, c.auth); got != c.want {
			t.Errorf("admin-only: GET %s with %q: %d, want %d", c.path, c.auth, got, c.want)
		}
	}
	cfg = singleConfig(t)
	cfg.HTTPAuth = HTTPAuthNone
	open := start(t, cfg)
	if got := httpGet(t, open.HTTPAddr(), "/status", ""); got != http.StatusOK {
		t.Errorf("HTTPAuthNone: GET /status: %d, want 200", got)
	}
}

// TestHTTPIdleConnectionsAreClosed checks the HTTP idle timeout: a
// keep-alive connection left idle after a request is closed by the node.
func TestHTTPIdleConnectionsAreClosed(t *testing.T) {
	cfg := singleConfig(t)
	cfg.Limits = Limits{HTTPIdleTimeout: 300 * time.Millisecond}
	tn := start(t, cfg)
	nc := openSilent(t, tn.HTTPAddr(), 1)[0]
	nc.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %v", err)
	}
	resp.Body.Close()
	if closedByNode([]net.Conn{nc}, 10*time.Second) != 1 {
		t.Fatal("an idle keep-alive connection was kept open")
	}
}

// TestHTTPConnectionsAreCapped opens more HTTP connections than
// MaxHTTPConns: the node closes the excess at once, keeps serving within
// the cap, and the connections it keeps are bounded by the header
// timeout, not by the flood.
func TestHTTPConnectionsAreCapped(t *testing.T) {
	const n, capped = 40, 8
	cfg := singleConfig(t)
	cfg.Limits = Limits{MaxHTTPConns: capped, HTTPReadHeaderTimeout: time.Minute, HTTPReadTimeout: time.Minute}
	tn := start(t, cfg)
	conns := openSilent(t, tn.HTTPAddr(), n)
	waitFor(t, 20*time.Second, "the refusals to be counted", func() bool {
		return counterValue(tn.m.limited.WithLabelValues(sideHTTP, "http")) >= n-capped
	})
	if closed := closedByNode(conns, 2*time.Second); closed < n-capped {
		t.Fatalf("the node closed %d of %d HTTP connections over a cap of %d", closed, n, capped)
	}
	if !tn.logsMention("side=http", "MaxHTTPConns") {
		t.Error("no log line names the HTTP connection limit")
	}
	for _, nc := range conns {
		nc.Close()
	}
	waitFor(t, 10*time.Second, "the HTTP port to serve again", func() bool {
		resp, err := http.Get("http://" + tn.HTTPAddr() + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// TestStatusPageLinksKeepTheScheme checks that the page's links to other
// nodes do not force plain HTTP, which a TLS cluster does not serve.
func TestStatusPageLinksKeepTheScheme(t *testing.T) {
	var b strings.Builder
	s := (&statusBoard{self: 1}).snapshot()
	s.Peers = append(s.Peers, status.Peer{ID: 2, HTTPAddr: "127.0.0.1:9"})
	if err := statusPage.Execute(&b, s); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "http://127.0.0.1:9") || !strings.Contains(b.String(), `href="//127.0.0.1:9/node"`) {
		t.Fatal("the page links another node with http://, which a TLS node does not serve")
	}
}
