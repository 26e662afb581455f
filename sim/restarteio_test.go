package sim

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// nodeFiles are a node's files, one or two of each class.
var nodeFiles = map[string]readClass{
	"meta/hardstate":                               readMeta,
	"meta/log.2/00000000000000000002.seg":          readMeta,
	"queues/q0.1f/checkpoint":                      readState,
	"queues/q0.1f/replica":                         readState,
	"queues/q0.1f/log/00000000000000000352.seg":    readLog,
	"queues/q0.1f/window/00000000000000000001.seg": readWindow,
	"queues/dl.2e/window/00000000000000000001.seg": readWindow,
}

func TestReadClassesTellANodesFilesApart(t *testing.T) {
	for path, want := range nodeFiles {
		for c := readWindow; c < readClassEnd; c++ {
			if got := c.holds(path); got != (c == want) {
				t.Errorf("%s holds %s: %v, want %v", c, path, got, c == want)
			}
		}
	}
	for _, path := range []string{"queues", "queues/q0.1f", "identity", "queues/q0.1f/log.old/x/y"} {
		for c := readWindow; c < readClassEnd; c++ {
			if c.holds(path) && c != readMeta {
				t.Errorf("%s holds %s, which is no file of its class", c, path)
			}
		}
	}
}

// TestARestartEIOFaultFailsOneReadOfEachFileOfItsClass: after the fault
// arms its traps, each file of its class fails exactly one of its first
// six reads and no other; files of other classes, and files made after
// the traps, read as usual; a calmed disk forgets the traps.
func TestARestartEIOFaultFailsOneReadOfEachFileOfItsClass(t *testing.T) {
	d := NewDisk(newStream(1, "test"), DiskProfile{})
	for path := range nodeFiles {
		if err := d.mem.MkdirAll(d.mem.PathDir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := d.mem.Create(path, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("sixteen bytes..."))
		f.Close()
	}
	d.trapReads(readWindow)
	read := func(path string) error {
		f, err := d.FS().Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		_, err = f.ReadAt(make([]byte, 4), 0)
		return err
	}
	for path, class := range nodeFiles {
		failed := 0
		for range 8 {
			if err := read(path); err != nil {
				if !errors.Is(err, errorfs.ErrInjected) {
					t.Fatalf("%s: %v, want the injected EIO", path, err)
				}
				failed++
			}
		}
		if want := map[bool]int{true: 1, false: 0}[class == readWindow]; failed != want {
			t.Errorf("%s (%s) failed %d of 8 reads, want %d", path, class, failed, want)
		}
	}
	if s := d.Stats(); s.TrappedReads != 2 || s.ReadErrors != 2 {
		t.Errorf("stats count %d trapped reads, %d read errors; want 2 and 2", s.TrappedReads, s.ReadErrors)
	}
	d.trapReads(readState)
	d.SetFaulty(false)
	for path, class := range nodeFiles {
		if err := read(path); err != nil && class == readState {
			t.Errorf("a calmed disk failed a read of %s: %v", path, err)
		}
	}
}

// TestRestartEIOFaultsReadAndPrintBack: a restart-eio line names its
// class of files by name, reads back to the same fault, and an unknown
// class is refused with the names it may take.
func TestRestartEIOFaultsReadAndPrintBack(t *testing.T) {
	base, _ := QueueScenario(3).MarshalText()
	const line = "fault at=1s restart-eio n2 files=window for=300ms"
	sc, err := ParseScenario(append(base, line+"\n"...))
	if err != nil {
		t.Fatal(err)
	}
	f := sc.Faults[len(sc.Faults)-1]
	if f.Kind != FaultRestartEIO || f.Node != 1 || readClass(f.Hit) != readWindow {
		t.Fatalf("parsed %+v", f)
	}
	if text, _ := sc.MarshalText(); !strings.Contains(string(text), line) {
		t.Fatalf("printed back as:\n%s", text)
	}
	_, err = ParseScenario(append(base, "fault at=1s restart-eio n2 files=disk for=300ms\n"...))
	if err == nil || !strings.Contains(err.Error(), "want one of window, log, state, meta") {
		t.Fatalf("an unknown class: %v", err)
	}
}

// TestOnlyFaultsThatBreakDataMarkADiskBroken: the history's Broken map,
// which excuses a replica's fence, holds a node after a fault that broke
// durable data on its disk, and not after a restart over failing reads,
// which breaks nothing.
func TestOnlyFaultsThatBreakDataMarkADiskBroken(t *testing.T) {
	run := func(f Fault) *History {
		sc := QueueScenarioOf(3, 3)
		sc.Faults = []Fault{f}
		return NewWorld(sc, NewQueueSystem(sc), nil).Run().History
	}
	eio := run(Fault{At: time.Second, Kind: FaultRestartEIO, Node: 1, Hit: int(readLog), Length: 300 * time.Millisecond})
	if len(eio.Broken) != 0 {
		t.Fatalf("a restart-eio fault marked disks broken: %v", eio.Broken)
	}
	damage := run(Fault{At: time.Second, Kind: FaultDamage, Node: 1, Length: 300 * time.Millisecond})
	if at, ok := damage.Broken[2]; !ok || at != time.Second || len(damage.Broken) != 1 {
		t.Fatalf("after a damage fault on n2 at 1s, broken disks are %v", damage.Broken)
	}
}
