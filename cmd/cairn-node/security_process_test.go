package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live/status"
)

// TestProcessRolesAndHTTP runs a cairn-node process and checks, through
// the real binaries, that the CLI needs the admin credential to delete a
// queue, that the HTTP status page wants a credential, and that a
// configuration with the old single secret is refused with the reason.
func TestProcessRolesAndHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	bin := t.TempDir()
	buildBinaries(t, bin)
	pc := newProcCluster(t, bin, 1, "info")
	nd := pc.nodes[0]
	pc.waitHealthy(nd, 15*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := dialCluster(t, ctx, pc.clientAddrs())
	createWhenReady(t, ctx, c, "doomed", client.PolicyMajority)
	c.Close()

	cairn := func(args ...string) (string, error) {
		args = append(args, "--addrs", nd.clientAddr, "--secret", processSecret, "--timeout", "20s")
		out, err := exec.CommandContext(ctx, filepath.Join(bin, "cairn"), args...).CombinedOutput()
		return string(out), err
	}
	if out, err := cairn("queue", "delete", "doomed"); err == nil || !strings.Contains(out, "needs the admin role") {
		t.Fatalf("cairn queue delete with the client secret: %v\n%s", err, out)
	}
	if out, err := cairn("queue", "delete", "doomed", "--admin-secret", processAdminSecret); err != nil {
		t.Fatalf("cairn queue delete with the admin secret: %v\n%s", err, out)
	}

	resp, err := http.Get("http://" + nd.httpAddr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET / without a credential: %s, want 401", resp.Status)
	}
	if _, err := status.FetchAuth(ctx, nd.httpAddr, status.Auth{Secret: []byte(processSecret)}); err != nil {
		t.Errorf("status with the client secret: %v", err)
	}
	checkSingleSecretRefused(t, bin, nd.config)
}

// checkSingleSecretRefused starts cairn-node on a copy of config that
// uses the old single secret: it must exit with a usage error naming
// the reason, before touching anything.
func checkSingleSecretRefused(t *testing.T, bin, config string) {
	t.Helper()
	text, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(string(text), "client_secret = ", "secret = ", 1)
	path := filepath.Join(t.TempDir(), "old.toml")
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(bin, "cairn-node"), "--config", path).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(string(out), "lets any client join the peer port") {
		t.Fatalf("cairn-node with the single secret: %v\n%s", err, out)
	}
}
