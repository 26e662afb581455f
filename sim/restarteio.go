package sim

import (
	"fmt"
	"strings"
	"time"
)

// Read errors at a restart. Reads fail at random in a quarter of the
// seeds, at 0.05% of reads, so a read that only a restart makes (a
// checkpoint's window journal, a replica's state files, the metadata's
// hard state) almost never fails where it matters. A fifth of the
// generated queue scenarios, drawn from a stream of their own so that no
// other draw moves, crash a node once or twice and bring it back over a
// disk whose files of one class (readClass) each fail one of their first
// six reads (drawn per file: a restart reads a window journal three times
// as it opens the journal, then a fourth for the checkpoint's window): a
// bad sector that the read after it gets past. The node must stop and be
// restarted, or read again; it must not take the error for damage, which
// would fence a sound replica.

// streamRestartEIO draws a generated scenario's restarts over failing
// reads.
const streamRestartEIO = "restart-eio"

// readClass names a class of a node's files, by where they live.
type readClass int

// The classes of files a restart-eio fault fails.
const (
	readWindow readClass = 1 + iota // a replica's window journal: queues/Q/window/*
	readLog                         // a replica's log segments: queues/Q/log/*
	readState                       // a replica's small state files: queues/Q/replica, checkpoint
	readMeta                        // the metadata's files: meta/*
	readClassEnd
)

var readClassNames = [...]string{readWindow: "window", readLog: "log", readState: "state", readMeta: "meta"}

// String names the class as the scenario text writes it.
func (c readClass) String() string {
	if c >= readWindow && c < readClassEnd {
		return readClassNames[c]
	}
	return fmt.Sprintf("class(%d)", int(c))
}

// parseReadClass reads a class's name into a fault's Hit.
func parseReadClass(v string) (int, error) {
	for c := readWindow; c < readClassEnd; c++ {
		if readClassNames[c] == v {
			return int(c), nil
		}
	}
	return 0, fmt.Errorf("want one of window, log, state, meta")
}

// holds reports whether path, a file of a node's data directory, is of
// class c.
func (c readClass) holds(path string) bool {
	parts := strings.Split(path, "/")
	switch c {
	case readMeta:
		return len(parts) >= 2 && parts[0] == "meta"
	case readWindow:
		return len(parts) == 4 && parts[0] == "queues" && parts[2] == "window"
	case readLog:
		return len(parts) == 4 && parts[0] == "queues" && parts[2] == "log"
	case readState:
		return len(parts) == 3 && parts[0] == "queues"
	}
	return false
}

// drawRestartEIO adds the faults above to a generated scenario.
func drawRestartEIO(sc *Scenario) {
	r := newStream(sc.Seed, streamRestartEIO)
	if r.IntN(5) != 0 {
		return
	}
	for range pick(r, 1, 1, 2) {
		sc.Faults = append(sc.Faults, Fault{
			At:     time.Duration(r.Int64N(int64(sc.Safety))),
			Kind:   FaultRestartEIO,
			Node:   r.IntN(sc.Nodes),
			Hit:    int(pick(r, readWindow, readWindow, readLog, readState, readMeta)),
			Length: time.Duration(10+r.IntN(1500)) * time.Millisecond,
		})
	}
}

// trapReads arms, on what a crash left, one failing read for every file
// of class c: one of its first six reads from now fails with EIO, and
// every other reads as usual. Files made later are left alone. The
// traps go when the disk is calmed.
func (d *Disk) trapReads(c readClass) {
	for _, path := range walkFiles(d.mem, "") {
		if c.holds(path) {
			if d.readTraps == nil {
				d.readTraps = make(map[string]int)
			}
			d.readTraps[path] = 1 + d.rng.IntN(6)
		}
	}
}

// trappedRead reports whether a read of path is the one its trap fails,
// and counts the read toward it.
func (d *Disk) trappedRead(path string) bool {
	left, ok := d.readTraps[path]
	if !d.faulty || !ok {
		return false
	}
	if left > 1 {
		d.readTraps[path] = left - 1
		return false
	}
	delete(d.readTraps, path)
	d.stats.ReadErrors++
	d.stats.TrappedReads++
	return true
}
