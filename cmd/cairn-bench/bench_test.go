package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseFailoverValidates(t *testing.T) {
	c, err := parseFailover(nil, io.Discard)
	if err != nil || c.trials != 30 || c.backlog != 0 || c.traffic != "idle" || c.rate != 500 || c.warmClient != "fast" || c.logLevel != "debug" {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	for _, args := range [][]string{
		{"--traffic", "hot"}, {"--backlog", "-1"}, {"--trials", "0"}, {"--rate", "0"}, {"--keep", "some"}, {"extra"},
		{"--warm-client", "slow"}, {"--log-level", "warn"},
	} {
		if _, err := parseFailover(args, io.Discard); err == nil {
			t.Errorf("parseFailover(%q) accepted", args)
		}
	}
}

func TestReportExitCodes(t *testing.T) {
	done := trialResult{confirmed: 5}
	for i := range numInstants {
		done.set(i, time.Duration(i+1)*time.Millisecond)
	}
	slow, lost := done, done
	slow.failure = "no activation within 20s"
	lost.lost = 1
	for _, c := range []struct {
		results []trialResult
		want    int
	}{
		{[]trialResult{done, done}, exitOK},
		{[]trialResult{done, slow}, exitIncomplete},
		{[]trialResult{slow, lost}, exitLost},
	} {
		var out strings.Builder
		if got := report(&out, c.results, "SIGKILL"); got != c.want {
			t.Errorf("report = %d, want %d\n%s", got, c.want, out.String())
		}
	}
}

func TestParseHistoryEmptyTraffic(t *testing.T) {
	c, err := parseHistory(nil, io.Discard)
	if err != nil || c.emptyTraffic != "touched" {
		t.Fatalf("parseHistory() = %+v, %v: the empty cluster is touched by default", c, err)
	}
	if c, err := parseHistory([]string{"--empty-traffic", "idle"}, io.Discard); err != nil || c.emptyTraffic != "idle" {
		t.Fatalf("--empty-traffic idle = %+v, %v", c, err)
	}
	if _, err := parseHistory([]string{"--empty-traffic", "busy"}, io.Discard); err == nil {
		t.Error("--empty-traffic busy accepted")
	}
}
