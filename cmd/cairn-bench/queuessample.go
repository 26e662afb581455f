package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// queuesMetricsLimit bounds the /metrics exposition the many-queues
// benchmark reads: with thousands of queues the per-queue series run to
// tens of megabytes, and the Go runtime's series come after them.
const queuesMetricsLimit = 512 << 20

// queuesSample is one node's footprint: a soak's sample and the number
// of files in its data directory.
type queuesSample struct {
	nodeSample
	Files reading `json:"files"`
	// CPU is the process's user and system time so far, in clock ticks
	// of procClockTicksPerSecond.
	CPU reading `json:"cpu_ticks"`
	// cpuAt is when CPU was read.
	cpuAt time.Time
	// Syncs counts the fsyncs the node completed so far.
	Syncs reading `json:"syncs"`
}

// metricSyncs is the nodes' count of completed fsyncs.
const metricSyncs = "cairn_syncs_total"

// procClockTicksPerSecond is the unit of the CPU times in /proc/<pid>/stat
// (USER_HZ), 100 on every Linux platform Go supports.
const procClockTicksPerSecond = 100

// procCPU reads a process's user plus system time, in clock ticks, from
// root/<pid>/stat. The command name, in parentheses, may hold spaces, so
// the fields are counted from its closing parenthesis.
func procCPU(root string, pid int) reading {
	text, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return reading{}
	}
	i := bytes.LastIndexByte(text, ')')
	if i < 0 {
		return reading{}
	}
	// After the name: state (field 3) ... utime (14), stime (15).
	fields := strings.Fields(string(text[i+1:]))
	if len(fields) < 13 {
		return reading{}
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return reading{}
	}
	return known(utime + stime)
}

// sampleQueuesNode measures m as a soak does, counting the files of its
// data directory too and reading a /metrics of any size.
func sampleQueuesNode(ctx context.Context, m *member) queuesSample {
	s := queuesSample{nodeSample: nodeSample{ID: m.id}}
	if total, files, err := dirUsage(m.dataDir); err == nil {
		s.DiskBytes, s.Files = known(total), known(files)
	}
	if !m.running() {
		return s
	}
	s.RSSBytes, s.FDs = procStats(procRoot, m.cmd.Process.Pid)
	s.CPU, s.cpuAt = procCPU(procRoot, m.cmd.Process.Pid), time.Now()
	if text, err := fetchBigMetrics(ctx, m.httpAddr); err == nil {
		s.HeapBytes = metricValue(text, metricHeapBytes)
		s.Goroutines = metricValue(text, metricGoroutines)
		s.Syncs = metricValue(text, metricSyncs)
	}
	return s
}

// dirUsage sums the sizes of the regular files under dir and counts
// them; like dirBytes, it skips files that vanish during the walk.
func dirUsage(dir string) (total, files int64, err error) {
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != dir {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		total += info.Size()
		files++
		return nil
	})
	return total, files, err
}

// fetchBigMetrics is fetchMetrics with room for thousands of queues'
// series and time to render them.
func fetchBigMetrics(ctx context.Context, httpAddr string) ([]byte, error) {
	return fetchNode(ctx, "http://"+httpAddr+"/metrics", benchSecret, 30*time.Second, queuesMetricsLimit)
}

// fetchProfile records m's CPU profile for d into dir/n<id>.<phase>.cpu.pprof,
// through the node's profiling endpoint, which takes the admin secret.
func fetchProfile(ctx context.Context, m *member, dir, phase string, d time.Duration) error {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", m.httpAddr, int(d.Seconds()))
	return saveNode(ctx, url, d+30*time.Second, filepath.Join(dir, fmt.Sprintf("n%d.%s.cpu.pprof", m.id, phase)))
}

// fetchHeapProfile writes m's heap profile into dir/n<id>.heap.pprof.
func fetchHeapProfile(ctx context.Context, m *member, dir string) error {
	return saveNode(ctx, "http://"+m.httpAddr+"/debug/pprof/heap", 30*time.Second, filepath.Join(dir, fmt.Sprintf("n%d.heap.pprof", m.id)))
}

// saveNode writes what a node's admin endpoint answers at url into path.
func saveNode(ctx context.Context, url string, timeout time.Duration, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	body, cancel, err := nodeGet(ctx, url, benchAdminSecret, timeout)
	if err != nil {
		return err
	}
	defer cancel()
	defer body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
