package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestThroughputPeerReplacesSideB(t *testing.T) {
	c, err := parseThroughput([]string{"--peer", "jetstream-peer --nats-server nats-server"}, io.Discard)
	if err != nil || c.peer == "" {
		t.Fatalf("parseThroughput with --peer = %+v, %v", c, err)
	}
	for _, args := range [][]string{
		{"--peer", "p", "--b-bin", "node"},
		{"--peer", "p", "--b-settings", "checkpoint_records = -1"},
	} {
		if _, err := parseThroughput(args, io.Discard); err == nil {
			t.Errorf("parseThroughput(%q) accepted", args)
		}
	}
}

func TestPeerThroughputReport(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	win := func(rate float64, p50, p99, max int) windowFigures {
		return windowFigures{rate: rate, lat: percentiles{ms(p50), ms(p99), ms(max)}, confirmed: 100}
	}
	cairn := []windowFigures{win(9000, 10, 40, 90), win(12000, 8, 30, 50), win(10000, 9, 20, 60)}
	peer := []windowFigures{win(5000, 20, 80, 100), win(4000, 18, 60, 70), win(6000, 30, 90, 120)}
	f := summarizeWindows(cairn)
	if f.rate != 10000 || f.minRate != 9000 || f.maxRate != 12000 || f.p50 != ms(9) || f.p99 != ms(30) || f.max != ms(90) || f.confirmed != 300 {
		t.Fatalf("summarizeWindows = %+v", f)
	}
	var out strings.Builder
	if code := peerThroughputReport(&out, cairn, peer); code != exitOK {
		t.Fatalf("report = %d, want %d\n%s", code, exitOK, out.String())
	}
	if want := "cairn / peer: throughput (median window) 2.00; confirm latency p50 0.45, p99 0.38"; !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
	peer[1].lost = 1
	if code := peerThroughputReport(io.Discard, cairn, peer); code != exitLost {
		t.Errorf("a message lost on the peer: report = %d, want %d", code, exitLost)
	}
}

func TestThroughputProfileFlags(t *testing.T) {
	c, err := parseThroughput([]string{"--cpu-profile", "prof", "--profile-for", "5s"}, io.Discard)
	if err != nil || c.profile != "prof" || c.profileFor != 5*time.Second {
		t.Fatalf("parseThroughput with --cpu-profile = %+v, %v", c, err)
	}
	if !strings.Contains(c.sides[0].settings, "admin_secret") || strings.Contains(c.sides[1].settings, "admin_secret") {
		t.Errorf("only side A's nodes serve profiles to the bench: settings %q and %q", c.sides[0].settings, c.sides[1].settings)
	}
	for _, args := range [][]string{
		{"--cpu-profile", "prof", "--profile-for", "500ms"},
		{"--cpu-profile", "prof", "--window", "10s", "--warmup", "3s", "--profile-for", "8s"},
	} {
		if _, err := parseThroughput(args, io.Discard); err == nil {
			t.Errorf("parseThroughput(%q) accepted", args)
		}
	}
}
