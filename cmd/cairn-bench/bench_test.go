package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestSummarizeUsesNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 30; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	d := summarize(ds)
	if d.n != 30 || d.median != 15*time.Millisecond || d.p95 != 29*time.Millisecond || d.high != 30*time.Millisecond {
		t.Fatalf("summarize(1..30ms) = %+v", d)
	}
	if one := summarize(ds[:1]); one.median != 30*time.Millisecond || one.p95 != one.median {
		t.Fatalf("summarize of one value = %+v", one)
	}
}

func TestParseFailoverValidates(t *testing.T) {
	c, err := parseFailover(nil, io.Discard)
	if err != nil || c.trials != 30 || c.backlog != 0 || c.traffic != "idle" || c.rate != 500 {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	for _, args := range [][]string{
		{"--traffic", "hot"}, {"--backlog", "-1"}, {"--trials", "0"}, {"--rate", "0"}, {"--keep", "some"}, {"extra"},
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
		if got := report(&out, c.results); got != c.want {
			t.Errorf("report = %d, want %d\n%s", got, c.want, out.String())
		}
	}
}
