package node

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The watermark and the quota each make a disk full, and a full disk has
// room again only with a margin past both, so a node at the limit does
// not flap.
func TestDiskLimits(t *testing.T) {
	n := &Node{cfg: Config{DiskFreeMin: 800, DataBytesMax: 8000}}
	cases := []struct {
		used, free int64
		short      bool
		roomy      bool
	}{
		{used: 1000, free: 5000, short: false, roomy: true},
		{used: 1000, free: 799, short: true, roomy: false},
		{used: 1000, free: 850, short: false, roomy: false}, // above the watermark, inside its margin
		{used: 1000, free: 900, short: false, roomy: true},
		{used: 8001, free: 5000, short: true, roomy: false},
		{used: 7500, free: 5000, short: false, roomy: false}, // under the quota, inside its margin
		{used: 7000, free: 5000, short: false, roomy: true},
		{used: 1000, free: -1, short: false, roomy: true}, // a file system that cannot say
		{used: 1000, free: 0, short: true, roomy: false},  // nothing left at all
		{used: 1000, free: 800, short: false, roomy: false},
		{used: 8000, free: 5000, short: false, roomy: false},
	}
	for _, c := range cases {
		if got := n.diskShort(c.used, c.free) != ""; got != c.short {
			t.Errorf("used %d free %d: short %t, want %t", c.used, c.free, got, c.short)
		}
		if got := n.diskRoomy(c.used, c.free); got != c.roomy {
			t.Errorf("used %d free %d: roomy %t, want %t", c.used, c.free, got, c.roomy)
		}
	}
	off := &Node{cfg: Config{DiskFreeMin: -1}}
	if why := off.diskShort(1<<40, 0); why != "" {
		t.Errorf("with both limits off the disk is short: %s", why)
	}
}

// usageFS answers every disk-usage question with avail bytes and notes
// which path was asked about.
type usageFS struct {
	vfs.FS
	avail uint64
	asked []string
}

func (f *usageFS) GetDiskUsage(path string) (vfs.DiskUsage, error) {
	f.asked = append(f.asked, path)
	return vfs.DiskUsage{AvailBytes: f.avail}, nil
}

// fsOnlyEnv is an environment of which only the disk may be used.
type fsOnlyEnv struct {
	Env
	fs vfs.FS
}

func (e fsOnlyEnv) FS() vfs.FS { return e.fs }

// The free space a node watches is that of the file system holding its
// data directory: a data volume mounted apart from the working directory
// fills on its own, and a node that looked at "." would never refuse
// writes before it failed them. The simulator's disks cannot report
// usage, so only this test holds the path to its word.
func TestFreeSpaceIsAskedOfTheDataDirectory(t *testing.T) {
	for _, c := range []struct{ dataDir, want string }{
		{dataDir: "/var/lib/cairn", want: "/var/lib/cairn"},
		{dataDir: "", want: "."},
	} {
		fs := &usageFS{FS: vfs.NewMem(), avail: 4096}
		n := &Node{cfg: Config{DataDir: c.dataDir}, env: fsOnlyEnv{fs: fs}}
		if got := n.freeBytes(); got != 4096 {
			t.Errorf("data directory %q: %d bytes free, want 4096", c.dataDir, got)
		}
		if len(fs.asked) != 1 || fs.asked[0] != c.want {
			t.Errorf("data directory %q: usage asked of %q, want [%q]", c.dataDir, fs.asked, c.want)
		}
	}
}

// The disk is looked at once every diskCheckTicks ticks, not every tick:
// a node with many queues would spend a share of its time asking, and
// with both limits off it never asks at all.
func TestTheDiskIsCheckedOnceEveryFewTicks(t *testing.T) {
	for _, c := range []struct {
		freeMin int64
		want    int
	}{
		{freeMin: 800, want: 4},
		{freeMin: -1, want: 0},
	} {
		fs := &usageFS{FS: vfs.NewMem(), avail: 4096}
		n := &Node{cfg: Config{DiskFreeMin: c.freeMin}, env: fsOnlyEnv{fs: fs}}
		for range 4 * diskCheckTicks {
			n.checkDisk()
		}
		if len(fs.asked) != c.want || n.disk.full {
			t.Errorf("watermark %d: the disk was asked %d times in %d ticks (full %t), want %d times",
				c.freeMin, len(fs.asked), 4*diskCheckTicks, n.disk.full, c.want)
		}
	}
}
