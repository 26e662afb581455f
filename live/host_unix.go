//go:build unix

package live

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/cairnmq/cairn/live/status"
)

// hostStatus reads what the machine has to spare: the file system of
// the data directory (statfs), and the load average where the system
// publishes it in /proc (Linux). Each read is one system call or one
// small file; a failed read leaves its field out.
func hostStatus(dataDir string) *status.Host {
	h := &status.Host{}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dataDir, &fs); err == nil {
		free, total := int64(fs.Bavail)*int64(fs.Bsize), int64(fs.Blocks)*int64(fs.Bsize)
		h.DiskFreeBytes, h.DiskTotalBytes = &free, &total
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if load, ok := parseLoadAvg(string(b)); ok {
			h.Load1 = &load
		}
	}
	return h
}

// parseLoadAvg reads the one-minute load average, the first field of
// /proc/loadavg ("0.52 1.16 1.92 1/345 6789").
func parseLoadAvg(text string) (float64, bool) {
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return 0, false
	}
	load, err := strconv.ParseFloat(fields[0], 64)
	return load, err == nil && load >= 0
}
