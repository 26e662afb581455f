package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseQueuesValidates(t *testing.T) {
	c, err := parseQueues(nil, io.Discard)
	if err != nil || c.queues != 500 || c.concurrency != 1 || c.logLevel != soakLogLevel {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	for _, args := range [][]string{
		{"--queues", "0"}, {"--concurrency", "0"}, {"--idle", "-1s"}, {"--profile-for", "10ms"}, {"extra"},
		{"--rounds", "0"}, {"--rounds", "2", "--dir", "d"},
	} {
		if _, err := parseQueues(args, io.Discard); err == nil {
			t.Errorf("parseQueues(%q) accepted", args)
		}
	}
}

func TestParseWakeValidates(t *testing.T) {
	c, err := parseWake(nil, io.Discard)
	if err != nil || c.rounds != 20 || c.idle != 3*time.Second || c.logLevel != soakLogLevel {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	for _, args := range [][]string{{"--rounds", "0"}, {"--idle", "0s"}, {"--idle", "-1s"}, {"extra"}} {
		if _, err := parseWake(args, io.Discard); err == nil {
			t.Errorf("parseWake(%q) accepted", args)
		}
	}
}

// TestProcCPUCountsFromTheNamesEnd: a command name may hold spaces and
// parentheses, so user and system time are counted from its last ')'.
func TestProcCPUCountsFromTheNamesEnd(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "42")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stat := "42 (cairn (node) x) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 9 0 1234 0 0\n"
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := procCPU(root, 42); !got.ok || got.value != 325 {
		t.Fatalf("procCPU = %+v, want 250 user + 75 system = 325", got)
	}
	if got := procCPU(root, 43); got.ok {
		t.Fatalf("procCPU of a missing process = %+v, want none", got)
	}
}

func TestPerQueueDividesTheGrowth(t *testing.T) {
	if got := perQueue(known(1000), known(21000), 10000, "B"); got != "2.00B" {
		t.Fatalf("perQueue = %q", got)
	}
	if got := perQueue(reading{}, known(5), 1, ""); got != "-" {
		t.Fatalf("perQueue without a before = %q", got)
	}
}

// TestCreateRatioComparesMedians prints the rounds' rates and the ratio
// of their medians, the lower middle for an even count.
func TestCreateRatioComparesMedians(t *testing.T) {
	var b strings.Builder
	printCreateRatio(&b, []float64{120, 150, 130, 90}, []float64{60, 50, 70, 55})
	want := "creation rates, cairn: 120.0, 150.0, 130.0, 90.0 queues/s; peer: 60.0, 50.0, 70.0, 55.0 streams/s\n" +
		"median 120.0 against 55.0: cairn / peer = 2.18\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}
