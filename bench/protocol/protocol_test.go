package protocol

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseDrain(t *testing.T) {
	d, err := ParseDrain("drain 100 1024 sync")
	if err != nil || d != (Drain{Messages: 100, Size: 1024, Sync: true}) {
		t.Fatalf("ParseDrain = %+v, %v", d, err)
	}
	for _, line := range []string{"", "drain", "drain 0 1 async", "drain 1 -1 async", "drain 1 1 maybe", "failover 1 1", "drain 1 1 async x"} {
		if _, err := ParseDrain(line); err == nil {
			t.Errorf("ParseDrain(%q) accepted", line)
		}
	}
}

func TestParseFailover(t *testing.T) {
	for _, c := range []struct {
		line string
		want Failover
	}{
		{"failover 0 1024", Failover{Backlog: 0, Size: 1024, Timeout: DefaultFailoverTimeout}},
		{"failover 10000 1024 12.5", Failover{Backlog: 10000, Size: 1024, Timeout: 12500 * time.Millisecond}},
	} {
		got, err := ParseFailover(c.line)
		if err != nil || got != c.want {
			t.Errorf("ParseFailover(%q) = %+v, %v; want %+v", c.line, got, err, c.want)
		}
	}
	for _, line := range []string{"failover", "failover 1", "failover -1 1", "failover 1 x", "failover 1 1 0", "failover 1 1 5000", "failover 1 1 1 1", "drain 1 1 async"} {
		if _, err := ParseFailover(line); err == nil {
			t.Errorf("ParseFailover(%q) accepted", line)
		}
	}
}

func TestParsePublish(t *testing.T) {
	got, err := ParsePublish("publish 15 3 256 1024")
	want := Publish{Window: 15 * time.Second, Warmup: 3 * time.Second, InFlight: 256, Size: 1024}
	if err != nil || got != want {
		t.Fatalf("ParsePublish = %+v, %v; want %+v", got, err, want)
	}
	if got, err := ParsePublish("publish 0.5 0 1 0"); err != nil || got.Window != 500*time.Millisecond || got.InFlight != 1 {
		t.Errorf("ParsePublish of a one-at-a-time half second = %+v, %v", got, err)
	}
	for _, line := range []string{"publish", "publish 15 3 256", "publish 0 0 1 1", "publish 15 15 1 1", "publish 15 -1 1 1",
		"publish 15 3 0 1", "publish 15 3 100000 1", "publish 15 3 1 -1", "publish 601 3 1 1", "publish x 3 1 1", "publish 15 3 1 1 1", "drain 1 1 async"} {
		if _, err := ParsePublish(line); err == nil {
			t.Errorf("ParsePublish(%q) accepted", line)
		}
	}
}

func TestParseCreate(t *testing.T) {
	got, err := ParseCreate("create 2000 16")
	if err != nil || got != (Create{Streams: 2000, Concurrency: 16}) {
		t.Fatalf("ParseCreate = %+v, %v", got, err)
	}
	for _, line := range []string{"create", "create 10", "create 0 1", "create 10 0", "create 10 11", "create 100001 1", "create x 1", "create 10 1 1", "drain 1 1 async"} {
		if _, err := ParseCreate(line); err == nil {
			t.Errorf("ParseCreate(%q) accepted", line)
		}
	}
}

func TestAnswersAreOneLine(t *testing.T) {
	for _, b := range [][]byte{
		Error(errors.New("want \"drain <messages>\"")),
		Line(FailoverAnswer{FirstPublish: 1.5, FirstDelivery: 2}),
	} {
		s := string(b)
		if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
			t.Errorf("answer %q is not one line", s)
		}
	}
	if got := string(Line(FailoverAnswer{FirstPublish: 1.5, FirstDelivery: 2})); got != "{\"first_publish_seconds\":1.5,\"first_delivery_seconds\":2}\n" {
		t.Errorf("failover answer = %q", got)
	}
	if got := string(Error(errors.New("<x>"))); got != "{\"error\":\"<x>\"}\n" {
		t.Errorf("error answer = %q", got)
	}
	if got := string(Line(PublishAnswer{Rate: 100, P50: 0.001, Confirmed: 3})); got != "{\"confirmed_per_second\":100,\"latency_p50_seconds\":0.001,\"latency_p99_seconds\":0,\"latency_max_seconds\":0,\"confirmed\":3,\"failed\":0,\"lost\":0}\n" {
		t.Errorf("publish answer = %q", got)
	}
	if Command("  failover 1 2") != "failover" || Command("") != "" {
		t.Error("Command")
	}
}
