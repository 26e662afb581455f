package node

import "testing"

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
