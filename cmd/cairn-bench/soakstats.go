package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// procRoot is where the kernel's process file system is mounted. The
// soak reads each node's RSS and open file descriptors from it, which
// only Linux offers; elsewhere those columns print "-".
const procRoot = "/proc"

// Metric names the nodes' /metrics expose through the Go collector that
// live registers: the live heap and the goroutine count.
const (
	metricHeapBytes  = "go_memstats_heap_alloc_bytes"
	metricGoroutines = "go_goroutines"
)

// heapReading is a node's Go heap as its /metrics tell it: what is
// allocated (live, or garbage not yet collected) and what the runtime
// holds free without having handed it back to the kernel (idle minus
// released), both resident.
type heapReading struct {
	alloc, idle reading
}

// Go collector metrics readHeap takes the idle heap from.
const (
	metricHeapIdle     = "go_memstats_heap_idle_bytes"
	metricHeapReleased = "go_memstats_heap_released_bytes"
)

// readHeap reads m's Go heap from its /metrics; unknown where the node
// does not answer.
func readHeap(ctx context.Context, m *member) heapReading {
	text, err := fetchMetrics(ctx, m.httpAddr)
	if err != nil {
		return heapReading{}
	}
	h := heapReading{alloc: metricValue(text, metricHeapBytes)}
	idle, released := metricValue(text, metricHeapIdle), metricValue(text, metricHeapReleased)
	if idle.ok && released.ok {
		h.idle = known(idle.value - released.value)
	}
	return h
}

// reading is one measured value, or none when it could not be measured
// (a process gone, an endpoint that did not answer, no /proc).
type reading struct {
	value int64
	ok    bool
}

// known makes a reading of v.
func known(v int64) reading { return reading{value: v, ok: true} }

// String prints the value, or "-" when there is none.
func (r reading) String() string {
	if !r.ok {
		return "-"
	}
	return strconv.FormatInt(r.value, 10)
}

// MarshalJSON writes the value, or null when there is none.
func (r reading) MarshalJSON() ([]byte, error) {
	if !r.ok {
		return []byte("null"), nil
	}
	return json.Marshal(r.value)
}

// nodeSample is what one sample measured of one node.
type nodeSample struct {
	ID         int     `json:"id"`
	DiskBytes  reading `json:"data_dir_bytes"`
	RSSBytes   reading `json:"rss_bytes"`
	FDs        reading `json:"open_fds"`
	HeapBytes  reading `json:"heap_alloc_bytes"`
	Goroutines reading `json:"goroutines"`
}

// sampleNode measures m: its data directory on disk, its process in
// /proc, and its Go runtime through its /metrics endpoint. A node whose
// process has exited still has a data directory; everything else reads
// as unknown.
func sampleNode(ctx context.Context, m *member) nodeSample {
	s := nodeSample{ID: m.id}
	if n, err := dirBytes(m.dataDir); err == nil {
		s.DiskBytes = known(n)
	}
	if !m.running() {
		return s
	}
	s.RSSBytes, s.FDs = procStats(procRoot, m.cmd.Process.Pid)
	if text, err := fetchMetrics(ctx, m.httpAddr); err == nil {
		s.HeapBytes = metricValue(text, metricHeapBytes)
		s.Goroutines = metricValue(text, metricGoroutines)
	}
	return s
}

// dirBytes sums the sizes of the regular files under dir. Files that
// vanish during the walk (a segment compacted away, a temp file renamed)
// are skipped rather than failing the sample: the node is live and
// rewrites its directory as it goes.
func dirBytes(dir string) (int64, error) {
	total, _, err := dirUsage(dir)
	return total, err
}

// procStats reads a process's resident set size from root/<pid>/status
// and counts its open file descriptors in root/<pid>/fd.
func procStats(root string, pid int) (rss, fds reading) {
	base := filepath.Join(root, strconv.Itoa(pid))
	if text, err := os.ReadFile(filepath.Join(base, "status")); err == nil {
		rss = parseVmRSS(text)
	}
	if entries, err := os.ReadDir(filepath.Join(base, "fd")); err == nil {
		fds = known(int64(len(entries)))
	}
	return rss, fds
}

// parseVmRSS finds the VmRSS line of a /proc/<pid>/status file ("VmRSS:
// 12345 kB") and returns it in bytes.
func parseVmRSS(text []byte) reading {
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return reading{}
		}
		kib, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || kib < 0 {
			return reading{}
		}
		return known(kib * 1024)
	}
	return reading{}
}

// fetchMetrics reads a node's Prometheus text exposition. /metrics is
// open by default; the client secret goes along in case the node was
// configured to close it.
func fetchMetrics(ctx context.Context, httpAddr string) ([]byte, error) {
	return fetchNode(ctx, "http://"+httpAddr+"/metrics", benchSecret, 2*time.Second, 4<<20)
}

// nodeGet asks a node's HTTP port for url with secret as bearer, and
// hands back the body of an OK answer; the caller closes it, and cancel
// ends the request's deadline of timeout.
func nodeGet(ctx context.Context, url, secret string, timeout time.Duration) (body io.ReadCloser, cancel func(), err error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, nil, fmt.Errorf("%s: HTTP %s", req.URL.Path, resp.Status)
	}
	return resp.Body, cancel, nil
}

// fetchNode reads at most limit bytes of what a node answers at url.
func fetchNode(ctx context.Context, url, secret string, timeout time.Duration, limit int64) ([]byte, error) {
	body, cancel, err := nodeGet(ctx, url, secret, timeout)
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer body.Close()
	return io.ReadAll(io.LimitReader(body, limit))
}

// metricValue finds an unlabelled sample of the metric name in a
// Prometheus text exposition and returns it rounded to an integer.
// Comment lines and other metrics that merely start with name are
// skipped.
func metricValue(text []byte, name string) reading {
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name)
		if !ok || !strings.HasPrefix(rest, " ") {
			continue
		}
		// A sample may carry a timestamp after its value.
		fields := strings.Fields(rest)
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return reading{}
		}
		return known(int64(math.Round(v)))
	}
	return reading{}
}
