package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseFailoverFaultsAndVictims(t *testing.T) {
	c, err := parseFailover(nil, io.Discard)
	if err != nil || c.fault != faultKill || c.nodes != 3 || c.victim != victimOwner || c.peer != "" || c.peerTimeout != 30*time.Second {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	c, err = parseFailover([]string{"--fault", "stop", "--nodes", "5", "--victim", "owner+leader"}, io.Discard)
	if err != nil || !c.stop() || c.nodes != 5 || c.victim != victimOwnerLeader {
		t.Fatalf("stop, 5, owner+leader: %+v, %v", c, err)
	}
	if _, err := parseFailover([]string{"--peer", "harness --flag"}, io.Discard); err != nil {
		t.Fatalf("--peer with the defaults: %v", err)
	}
	for _, args := range [][]string{
		{"--fault", "pause"}, {"--nodes", "4"}, {"--victim", "leader"}, {"--peer-timeout", "0s"},
		{"--peer", "h", "--fault", "stop"}, {"--peer", "h", "--nodes", "5"}, {"--peer", "h", "--victim", "owner+leader"},
	} {
		if _, err := parseFailover(args, io.Discard); err == nil {
			t.Errorf("parseFailover(%q) accepted", args)
		}
	}
}

func TestHeaderAndReportNameTheFault(t *testing.T) {
	c, _ := parseFailover([]string{"--fault", "stop", "--nodes", "5"}, io.Discard)
	if h := header(c, "cairn-node"); !strings.Contains(h, "SIGSTOP") || !strings.Contains(h, "5 cairn-node processes") {
		t.Errorf("header does not name the fault and the cluster: %s", h)
	}
	var out strings.Builder
	report(&out, []trialResult{{}}, faultName(faultStop))
	if !strings.HasPrefix(out.String(), "from the SIGSTOP to") {
		t.Errorf("report does not name the fault:\n%s", out.String())
	}
}

func TestReportCountsStaleConfirmsAndLeaders(t *testing.T) {
	var ok trialResult
	for i := range numInstants {
		ok.set(i, time.Millisecond)
	}
	ok.queues, ok.ownerLed = 3, true
	ok.stale = staleOutcome{sent: 20, refused: 20}
	bad := ok
	bad.stale = staleOutcome{sent: 20, confirmed: 1, refused: 19}
	var out strings.Builder
	if code := report(&out, []trialResult{ok, ok}, "SIGSTOP"); code != exitOK {
		t.Errorf("report = %d for trials without a stale confirm\n%s", code, out.String())
	}
	for _, want := range []string{"40 publishes sent to it after the stop, 0 confirmed", "led the metadata group in 2 of 2 trials", "6 in 2 trials"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := report(&out, []trialResult{ok, bad}, "SIGSTOP"); code != exitLost {
		t.Errorf("report = %d with a stale confirm, want %d\n%s", code, exitLost, out.String())
	}
}

func TestRoundSidesAlternate(t *testing.T) {
	if got := roundSides(false, 1); !slices.Equal(got, []string{"cairn"}) {
		t.Errorf("without a peer: %v", got)
	}
	if a, b := roundSides(true, 0), roundSides(true, 1); a[0] != "cairn" || b[0] != "peer" || len(a) != 2 || len(b) != 2 {
		t.Errorf("with a peer: %v, %v", a, b)
	}
}

func TestTaskStopped(t *testing.T) {
	for stat, want := range map[string]bool{
		"1234 (cairn-node) T 1 1234":        true,
		"1234 (cairn-node) t 1 1234":        true,
		"1234 (cairn-node) S 1 1234":        false,
		"1234 (odd) name) R 1 1234":         false,
		"1234 (odd) name) T 1 1234":         true,
		"not a stat line":                   false,
		"1234 (with space) ) T 1 2 3 4 5 6": true,
	} {
		if got := taskStopped(stat); got != want {
			t.Errorf("taskStopped(%q) = %v, want %v", stat, got, want)
		}
	}
}

func TestPeerAnswers(t *testing.T) {
	a, err := parsePeerAnswer(`{"first_publish_seconds": 4.5, "first_delivery_seconds": 5}`)
	pt := peerTrialOf(a, err, 30*time.Second)
	if pt.failure != "" || pt.publish != 4500*time.Millisecond || pt.delivery != 5*time.Second {
		t.Errorf("a complete answer: %+v", pt)
	}
	for _, line := range []string{
		`{"error": "no leader"}`,
		`{"first_publish_seconds": 4.5}`,
		`{"first_publish_seconds": 4.5, "first_delivery_seconds": 31}`,
		`not json`,
	} {
		a, err := parsePeerAnswer(line)
		if pt := peerTrialOf(a, err, 30*time.Second); pt.failure == "" {
			t.Errorf("answer %s counted as a completed trial: %+v", line, pt)
		}
	}
	if a, err := parsePeerAnswer(`{"error": "no leader"}`); err == nil || a.Error == "" {
		t.Errorf("an error answer: %+v, %v", a, err)
	}
}

func TestPeerReportRatios(t *testing.T) {
	var cairn []trialResult
	for _, ms := range []int{100, 200, 300} {
		var res trialResult
		res.set(instFirstPublish, time.Duration(ms)*time.Millisecond)
		res.set(instFirstDelivery, time.Duration(ms)*time.Millisecond)
		cairn = append(cairn, res)
	}
	peers := []peerTrial{
		{publish: time.Second, delivery: 2 * time.Second},
		{publish: 2 * time.Second, delivery: 4 * time.Second},
		{publish: 3 * time.Second, delivery: 6 * time.Second},
		{failure: "timed out"},
	}
	var out strings.Builder
	peerReport(&out, cairn, peers)
	text := out.String()
	for _, want := range []string{"peer failures: 1 of 4 trials", "10.00      10.00", "20.00      20.00", "peer trial 4: FAILED: timed out"} {
		if !strings.Contains(text, want) {
			t.Errorf("peer report lacks %q:\n%s", want, text)
		}
	}
}

// fakeHarness writes a shell script standing for a peer harness and
// returns its command line.
func fakeHarness(t *testing.T, body string) string {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	path := filepath.Join(t.TempDir(), "harness")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPeerHarnessAnswersAndTimesOut(t *testing.T) {
	ctx := context.Background()
	answering := fakeHarness(t, `while read line; do echo '{"first_publish_seconds": 1.5, "first_delivery_seconds": 2.5}'; done`)
	h, err := startPeer(ctx, answering, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		a, err := h.request(ctx, "failover 0 1024 30", time.Minute)
		if pt := peerTrialOf(a, err, 30*time.Second); pt.failure != "" || pt.delivery != 2500*time.Millisecond {
			t.Errorf("answer: %+v", pt)
		}
	}
	h.close()

	// A harness that never answers: the request gives up, and closing
	// the harness ends it.
	silent := fakeHarness(t, `read line; exec sleep 60`)
	if h, err = startPeer(ctx, silent, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := h.request(ctx, "failover 0 1024 30", 100*time.Millisecond); !errors.Is(err, errPeerTimeout) {
		t.Errorf("request to a silent harness: %v, want %v", err, errPeerTimeout)
	}
	h.close()
	select {
	case <-h.done:
	default:
		t.Error("close returned with the harness still running")
	}
}
