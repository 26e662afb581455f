package storage_test

import (
	"errors"
	"testing"

	"github.com/cairnmq/cairn/storage"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// sharingHost is a fakeHost whose directory syncs are shared.
type sharingHost struct {
	fakeHost
	dirs *storage.DirSyncs
}

func (h *sharingHost) DirSyncs() *storage.DirSyncs { return h.dirs }

// Requests to sync one directory that come while a sync of it is in
// flight never take that sync's answer: it may have started before their
// change. They wait, and all of them ride one sync that starts once the
// first ends. Syncs of other directories go on at once.
func TestDirectorySyncsAreSharedOnlyByRequestsThatWaited(t *testing.T) {
	fs := vfs.NewMem()
	host := &sharingHost{dirs: storage.NewDirSyncs()}
	for _, d := range []string{"data/queues", "data/meta"} {
		if err := fs.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	answered := make([]int, 5)
	ask := func(i int, dir string) {
		storage.SyncDir(fs, dir, host, func(err error) {
			if err != nil {
				t.Errorf("request %d: %v", i, err)
			}
			answered[i]++
		})
	}
	ask(0, "data/queues")
	ask(1, "data/queues")
	ask(2, "data/queues")
	ask(3, "data/meta")
	if len(host.pending) != 2 {
		t.Fatalf("%d syncs started for four requests on two directories, want 2 (one each)", len(host.pending))
	}
	host.completeOne(nil) // the first sync of queues
	if answered[0] != 1 || answered[1] != 0 || answered[2] != 0 {
		t.Fatalf("after the first sync of queues the answers are %v: want request 0 alone answered", answered)
	}
	if len(host.pending) != 2 {
		t.Fatalf("%d syncs pending after the first ended, want 2 (meta's and the next of queues)", len(host.pending))
	}
	// A request that comes while the second sync of queues runs waits for
	// a third.
	ask(4, "data/queues")
	host.completeOne(nil) // meta
	host.completeOne(nil) // the second of queues: requests 1 and 2
	if answered[1] != 1 || answered[2] != 1 || answered[3] != 1 || answered[4] != 0 {
		t.Fatalf("answers %v: want 1, 2 and 3 answered, 4 waiting", answered)
	}
	for host.completeOne(nil) {
	}
	if answered[4] != 1 || host.dirs.InFlight() != 0 {
		t.Fatalf("answers %v with %d directories in flight: want each request answered once, none left", answered, host.dirs.InFlight())
	}
}

// A directory that cannot be opened fails its requests, and a later
// request starts afresh.
func TestASharedDirectorySyncThatCannotOpenFailsItsRequests(t *testing.T) {
	fs := vfs.NewMem()
	host := &sharingHost{dirs: storage.NewDirSyncs()}
	var got error
	storage.SyncDir(fs, "missing", host, func(err error) { got = err })
	if got == nil || host.dirs.InFlight() != 0 {
		t.Fatalf("a sync of a missing directory answered %v with %d in flight, want an error and none", got, host.dirs.InFlight())
	}
	if err := fs.MkdirAll("missing", 0o755); err != nil {
		t.Fatal(err)
	}
	got = errors.New("unanswered")
	storage.SyncDir(fs, "missing", host, func(err error) { got = err })
	host.completeOne(nil)
	if got != nil {
		t.Fatalf("the directory once made: %v", got)
	}
}

// syncedNames completes every pending sync and returns the names of the
// files and directories synced, in order.
func (h *sharingHost) syncedNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for len(h.pending) > 0 {
		st, err := h.pending[0].f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, st.Name())
		h.completeOne(nil)
	}
	return names
}

// durableQueueDir makes a crashable disk with a directory q whose entry is
// durable, and a sharing host with no sync pending.
func durableQueueDir(t *testing.T) (*vfs.MemFS, *sharingHost) {
	t.Helper()
	fs := vfs.NewCrashableMem()
	host := &sharingHost{dirs: storage.NewDirSyncs()}
	storage.MakeDirs(fs, "q", host, func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	})
	host.syncedNames(t)
	return fs, host
}

// A fresh log asks for no sync until its first append, and that sync
// covers its first segment, its directory, and the parent its directory
// was made in, unless the caller says it synced that parent itself.
func TestAFreshLogsFirstSyncSkipsAParentItsCallerSynced(t *testing.T) {
	for _, told := range []bool{false, true} {
		fs, host := durableQueueDir(t)
		l, err := storage.Open(fs, "q/log", host, storage.Options{SegmentSize: 4096})
		if err != nil {
			t.Fatal(err)
		}
		if len(host.pending) != 0 {
			t.Fatalf("opening a fresh log asked for %d syncs, want none", len(host.pending))
		}
		if told {
			// The caller syncs q for a change of its own (a replica's
			// state file), which covers the log directory too.
			storage.SyncDir(fs, "q", host, func(err error) {
				if err != nil {
					t.Fatal(err)
				}
				l.DirSynced("q")
			})
			host.syncedNames(t)
		}
		if _, err := l.Append(1, []byte("first")); err != nil {
			t.Fatal(err)
		}
		l.RequestSync()
		got := host.syncedNames(t)
		want := []string{"00000000000000000001.seg.pending", "log", "q"}
		if told {
			want = want[:2]
		}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || len(got) == 3 && got[2] != want[2] {
			t.Errorf("told %v: the first sync synced %q, want %q", told, got, want)
		}
		if l.DurableIndex() != 1 {
			t.Errorf("told %v: durable to %d after the first sync, want 1", told, l.DurableIndex())
		}
		// What survives a crash now holds the record.
		reopened, err := storage.Open(fs.CrashClone(vfs.CrashCloneCfg{}), "q/log", &fakeHost{}, storage.Options{SegmentSize: 4096})
		if err != nil || reopened.LastIndex() != 1 {
			t.Fatalf("told %v: reopened after a crash: last %d, %v", told, reopened.LastIndex(), err)
		}
	}
}

// A new log that starts past the origin (after a checkpoint's cut) makes
// its start durable at once: only its first segment's header records it,
// and a log reopened without options, as an inspection does, must find it
// even if no record was ever appended.
func TestANewLogPastTheOriginRecordsItsStartAtOnce(t *testing.T) {
	fs, host := durableQueueDir(t)
	base := storage.Digest{1, 2, 3}
	l, err := storage.Open(fs, "q/log", host, storage.Options{SegmentSize: 4096, FirstIndex: 172, BaseDigest: base})
	if err != nil {
		t.Fatal(err)
	}
	if len(host.pending) == 0 {
		t.Fatal("a new log starting at 172 asked for no sync at its open")
	}
	host.syncedNames(t)
	reopened, err := storage.Open(fs.CrashClone(vfs.CrashCloneCfg{}), "q/log", &fakeHost{}, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if reopened.FirstIndex() != 172 || reopened.Digest() != base || l.Digest() != base {
		t.Fatalf("reopened without options after a crash: first %d, digest %v; want 172, %v", reopened.FirstIndex(), reopened.Digest(), base)
	}
}
