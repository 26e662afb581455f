package live

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromiumNames are the names a Chromium or Chrome binary goes by.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless_shell"}

// findChromium returns the path of a Chromium binary, or skips the test
// saying how to get one.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range chromiumNames {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Skipf("no Chromium binary found (looked for %s on PATH); install one (Debian: apt-get install chromium) to run the dashboard in a real browser",
		strings.Join(chromiumNames, ", "))
	return ""
}

// headless runs Chromium without a window on pageURL with the extra
// flags, lets the page run for budget of virtual time (its polls and
// redraws included), and returns what Chromium printed.
func headless(t *testing.T, chromium, pageURL string, budget time.Duration, flags ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{
		"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(),
		"--virtual-time-budget=" + strconv.FormatInt(budget.Milliseconds(), 10),
	}, flags...)
	cmd := exec.CommandContext(ctx, chromium, append(args, pageURL)...)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("chromium: %v\n%s", err, stderr)
	}
	return string(out)
}

// awaitDOM loads pageURL until its rendered DOM satisfies shows, a few
// times at most: on a loaded machine one gathering may find a peer slow.
// It returns the last DOM, and whether it satisfied shows.
func awaitDOM(t *testing.T, chromium, pageURL string, shows func(dom string) bool) (string, bool) {
	t.Helper()
	var dom string
	for range 3 {
		dom = headless(t, chromium, pageURL, 3*time.Second, "--dump-dom")
		if shows(dom) {
			return dom, true
		}
		time.Sleep(dashboardReuse)
	}
	return dom, false
}

// countMatches counts the matches of pattern in dom.
func countMatches(dom, pattern string) int {
	return len(regexp.MustCompile(pattern).FindAllStringIndex(dom, -1))
}

// The dashboard, loaded by a real browser from one node of a live
// three-node cluster with the client credential, draws every node and
// the queue; after the queue's owner stops, it marks that node as not
// read and draws the recovery that moved the queue, stage by stage. A
// screenshot of the page after the failover is kept with the test's
// artifacts (go test -artifacts).
func TestDashboardInBrowser(t *testing.T) {
	chromium := findChromium(t)
	nodes := dashboardCluster(t, HTTPAuthClient)
	fillQueue(t, nodes, "orders", 20)
	owner := ownerOf(t, nodes, "orders")
	var viewer *testNode
	for _, tn := range nodes {
		if tn != owner {
			viewer = tn
			break
		}
	}
	page := (&url.URL{Scheme: "http", User: url.UserPassword("operator", string(testSecret)), Host: viewer.HTTPAddr(), Path: "/dashboard"}).String()

	dom, ok := awaitDOM(t, chromium, page, func(dom string) bool {
		return countMatches(dom, `<tr data-node="\d" data-state="serving"`) == 3 && countMatches(dom, `<tr data-queue="orders"`) == 1
	})
	if !ok {
		t.Fatalf("the page does not show three serving nodes and a row for the queue:\n%s", dom)
	}

	// The timeline this test reads is a failover's: the owner stops
	// without handing its queue to another replica first.
	owner.cfg.ShutdownHandoff = -1
	owner.stop(t)
	waitFor(t, 30*time.Second, "another node to serve orders", func() bool {
		time.Sleep(dashboardReuse)
		q := clusterQueue(readCluster(t, viewer.HTTPAddr(), testSecret), "orders")
		return q != nil && q.Serving && q.Owner != uint32(owner.id) && len(q.Recoveries) > 0
	})
	ownerID := strconv.FormatUint(uint64(owner.id), 10)
	stopped := `<tr data-node="` + ownerID + `" data-state="(down|unreachable)"`
	dom, _ = awaitDOM(t, chromium, page, func(dom string) bool {
		return countMatches(dom, stopped) == 1 && countMatches(dom, `<g class="attempt" data-outcome="ok"`) > 0
	})
	if countMatches(dom, stopped) != 1 || !strings.Contains(dom, "could not be read") {
		t.Errorf("the page does not show n%s as not read, with a note why:\n%s", ownerID, dom)
	}
	if countMatches(dom, `<g class="attempt" data-outcome="ok"`) == 0 {
		t.Errorf("the page draws no completed recovery attempt:\n%s", dom)
	}
	for _, stage := range []string{"seal", "install"} {
		if countMatches(dom, `<rect class="stage" data-stage="`+stage+`"`) == 0 {
			t.Errorf("the timeline has no %s bar:\n%s", stage, dom)
		}
	}
	if countMatches(dom, `<rect class="stage lead" data-stage="dispatch"`) == 0 {
		t.Errorf("the timeline has no dispatch bar before the attempt:\n%s", dom)
	}
	shot := filepath.Join(t.ArtifactDir(), "dashboard-after-failover.png")
	headless(t, chromium, page, 3*time.Second, "--screenshot="+shot, "--window-size=1400,720", "--hide-scrollbars")
	if info, err := os.Stat(shot); err != nil || info.Size() == 0 {
		t.Errorf("no screenshot at %s: %v", shot, err)
	}
}
