package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
)

func TestParseSoakValidates(t *testing.T) {
	c, err := parseSoak(nil, io.Discard)
	if err != nil || c.rate != 1000 || c.duration != 10*time.Minute || c.interval != 30*time.Second ||
		c.size != 1024 || c.dir != "" || c.json {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	for _, args := range [][]string{
		{"--rate", "0"}, {"--duration", "0s"}, {"--interval", "-1s"}, {"--size", "0"},
		{"--size", "2000000"}, {"--in-flight", "0"}, {"extra"},
	} {
		if _, err := parseSoak(args, io.Discard); err == nil {
			t.Errorf("parseSoak(%q) accepted", args)
		}
	}
}

func TestSlope(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if s, ok := slope([]float64{0, 1, 2, 3}, []float64{2, 5, 8, 11}); !ok || !near(s, 3) {
		t.Errorf("exact line: slope %v, %v; want 3", s, ok)
	}
	// A noisy line: the least-squares slope is Sxy/Sxx = -12/5.
	if s, ok := slope([]float64{1, 2, 3, 4}, []float64{-1, -5, -5, -9}); !ok || !near(s, -2.4) {
		t.Errorf("noisy line: slope %v, %v; want -2.4", s, ok)
	}
	if _, ok := slope([]float64{1}, []float64{1}); ok {
		t.Error("one point defines no slope")
	}
	if _, ok := slope([]float64{2, 2, 2}, []float64{1, 2, 3}); ok {
		t.Error("points at one x define no slope")
	}
}

// row makes a soak row at minute m with c confirmed and one node whose
// data directory holds disk bytes (unknown if negative).
func row(m float64, c int, disk int64) soakRow {
	d := reading{}
	if disk >= 0 {
		d = known(disk)
	}
	return soakRow{elapsed: time.Duration(m * float64(time.Minute)), Confirmed: c,
		Nodes: []nodeSample{{ID: 1, DiskBytes: d, RSSBytes: known(1 << 20)}}}
}

func TestTrendsLeaveOutFirstRowAndUnknowns(t *testing.T) {
	// The first row's start-up spike and the unmeasured row must not
	// bend the fit of 100 bytes a minute, 1 byte a message.
	rows := []soakRow{row(1, 100, 1<<30), row(2, 200, 1200), row(3, 300, -1), row(4, 400, 1400), row(5, 500, 1500)}
	tr := trends(rows)
	if len(tr) != 1 {
		t.Fatalf("%d trends, want 1", len(tr))
	}
	n := tr[0]
	if !n.DiskPerMin.ok || math.Abs(n.DiskPerMin.value-100) > 1e-6 {
		t.Errorf("disk per minute %v, want +100", n.DiskPerMin)
	}
	if !n.DiskPerMsg.ok || math.Abs(n.DiskPerMsg.value-1) > 1e-9 {
		t.Errorf("disk per message %v, want +1", n.DiskPerMsg)
	}
	if !n.RSSPerMin.ok || n.RSSPerMin.value != 0 || n.FinalDisk != known(1500) {
		t.Errorf("flat RSS or final disk wrong: %+v", n)
	}
	if got := summarize(rows[:2]); got.FittedRows != 1 || got.Nodes[0].DiskPerMin.ok {
		t.Errorf("two rows leave one to fit, which defines no slope: %+v", got)
	}
}

func TestSummarizeOwner(t *testing.T) {
	rows := []soakRow{row(1, 1, 1), row(2, 2, 2), row(3, 3, 3)}
	rows[0].Owner, rows[1].Owner = 2, 0
	if s := summarize(rows); s.Owner != 2 || s.OwnerChanged {
		t.Errorf("one owner and a row without: owner %d, changed %v", s.Owner, s.OwnerChanged)
	}
	rows[2].Owner = 3
	if s := summarize(rows); s.Owner != 3 || !s.OwnerChanged {
		t.Errorf("owner moved: owner %d, changed %v", s.Owner, s.OwnerChanged)
	}
}

func TestParseVmRSS(t *testing.T) {
	status := "Name:\tcairn-node\nVmPeak:\t  900000 kB\nVmRSS:\t   22136 kB\nThreads:\t9\n"
	if got := parseVmRSS([]byte(status)); got != known(22136*1024) {
		t.Errorf("parseVmRSS = %v, want %d", got, 22136*1024)
	}
	for _, bad := range []string{"Name:\tx\n", "VmRSS:\t12 MB\n", "VmRSS:\tmany kB\n", ""} {
		if got := parseVmRSS([]byte(bad)); got.ok {
			t.Errorf("parseVmRSS(%q) = %v, want unknown", bad, got)
		}
	}
}

func TestProcStatsFakeTree(t *testing.T) {
	root := t.TempDir()
	fd := filepath.Join(root, "4242", "fd")
	if err := os.MkdirAll(fd, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"0", "1", "2", "7"} {
		if err := os.WriteFile(filepath.Join(fd, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	status := "Name:\tcairn-node\nVmRSS:\t  100 kB\n"
	if err := os.WriteFile(filepath.Join(root, "4242", "status"), []byte(status), 0o644); err != nil {
		t.Fatal(err)
	}
	rss, fds := procStats(root, 4242)
	if rss != known(102400) || fds != known(4) {
		t.Errorf("procStats = %v, %v; want 102400, 4", rss, fds)
	}
	if rss, fds := procStats(root, 1); rss.ok || fds.ok {
		t.Errorf("a process not in the tree read as %v, %v", rss, fds)
	}
}

func TestDirBytes(t *testing.T) {
	dir := t.TempDir()
	files := map[string]int{"a": 10, "q/log/1.seg": 1000, "q/state": 7}
	for name, size := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := dirBytes(dir); err != nil || n != 1017 {
		t.Errorf("dirBytes = %d, %v; want 1017", n, err)
	}
	if _, err := dirBytes(filepath.Join(dir, "absent")); err == nil {
		t.Error("a missing directory measured")
	}
}

func TestMetricValue(t *testing.T) {
	text := `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines_extra 99
go_goroutines 24
go_memstats_heap_alloc_bytes{pool="x"} 5
go_memstats_heap_alloc_bytes 2.976096e+06
go_memstats_heap_alloc_bytes_total 1
`
	if got := metricValue([]byte(text), metricGoroutines); got != known(24) {
		t.Errorf("goroutines = %v, want 24", got)
	}
	if got := metricValue([]byte(text), metricHeapBytes); got != known(2976096) {
		t.Errorf("heap = %v, want 2976096", got)
	}
	if got := metricValue([]byte(text), "go_threads"); got.ok {
		t.Errorf("absent metric read as %v", got)
	}
	if got := metricValue([]byte("go_goroutines NaN\n"), metricGoroutines); got.ok {
		t.Errorf("NaN read as %v", got)
	}
}

func TestRowFormat(t *testing.T) {
	r := soakRow{elapsed: 90*time.Second + 300*time.Millisecond, Confirmed: 45000, Acked: 44990, Backlog: 10, Owner: 2,
		Nodes: []nodeSample{
			{ID: 1, DiskBytes: known(123456789), RSSBytes: known(22134784), FDs: known(21), HeapBytes: known(2976096), Goroutines: known(25)},
			{ID: 2, DiskBytes: known(5)}, // process gone: only its disk is measured
		}}
	var ds []time.Duration
	for i := range 100 {
		ds = append(ds, time.Duration(100-i)*time.Millisecond+300*time.Microsecond)
	}
	r.setEndToEnd(ds)
	header, line := rowHeader([]int{1, 2}), r.format()
	if len(header) != len(line) {
		t.Errorf("header and row differ in width:\n%s\n%s", header, line)
	}
	fields := strings.Fields(line)
	want := strings.Fields("1m30s 45000 44990 0 0 10 n2 50.3 99.3 | 123456789 22134784 21 2976096 25 | 5 - - - -")
	if strings.Join(fields, " ") != strings.Join(want, " ") {
		t.Errorf("row\n%s\nwant the fields\n%s", line, strings.Join(want, " "))
	}
	if got := strings.Fields((soakRow{}).format()); got[6] != "-" || got[7] != "-" || got[8] != "-" {
		t.Errorf("a row without an owner or timed messages prints none: %q", got)
	}
}

func TestJSONUnknownsAreNull(t *testing.T) {
	b, err := json.Marshal(nodeSample{ID: 3, DiskBytes: known(7)})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":3,"data_dir_bytes":7,"rss_bytes":null,"open_fds":null,"heap_alloc_bytes":null,"goroutines":null}`
	if string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
	if b, _ := json.Marshal(estimate{}); string(b) != "null" {
		t.Errorf("an undefined estimate marshals as %s", b)
	}
}

func TestSoakExit(t *testing.T) {
	for _, c := range []struct {
		sum   soakSummary
		clean bool
		want  int
	}{
		{soakSummary{Confirmed: 10, Duplicates: 3, Unknown: 2}, true, exitOK},
		{soakSummary{Confirmed: 10}, false, exitIncomplete},
		{soakSummary{Confirmed: 10, Lost: 1}, false, exitLost},
	} {
		if got := soakExit(c.sum, c.clean); got != c.want {
			t.Errorf("soakExit(%+v, %v) = %d, want %d", c.sum, c.clean, got, c.want)
		}
	}
}

// A stamped body carries its publish time, which a stamped collector
// turns into an end-to-end time at the first delivery of each ID only;
// an unstamped collector times nothing.
func TestStampedBodiesAreTimedOnce(t *testing.T) {
	at := time.Now().Add(-40 * time.Millisecond)
	body := stamped(soakPayload(64), at)
	if got, ok := stampOf(body); !ok || !got.Equal(time.Unix(0, at.UnixNano())) {
		t.Fatalf("stampOf = %v, %v; want %v", got, ok, at)
	}
	if _, ok := stampOf(body[:stampBytes-1]); ok {
		t.Fatal("a body shorter than a stamp read as stamped")
	}
	if !bytes.Equal(body[stampBytes:], soakPayload(64)[stampBytes:]) {
		t.Fatal("stamping changed the body past the stamp")
	}
	for _, c := range []struct {
		stamped bool
		want    int
	}{{true, 1}, {false, 0}} {
		col := &collector{got: make(map[client.MessageID]bool), wake: make(chan struct{}, 1), stamped: c.stamped}
		id := client.MessageID{Producer: 1, Seq: 1}
		col.record(id, body)
		col.record(id, body) // a redelivery
		ds, n := col.endToEndSince(0)
		if n != c.want || len(ds) != c.want || (n == 1 && ds[0] < 40*time.Millisecond) {
			t.Errorf("stamped=%v: %d times %v, want %d of at least 40ms", c.stamped, n, ds, c.want)
		}
	}
}
