package storage_test

import (
	"testing"

	"github.com/cairnmq/cairn/storage"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// handleFS counts the file and directory handles open through it.
type handleFS struct {
	vfs.FS
	open int
}

// countedFile decrements its file system's count once, when closed.
type countedFile struct {
	vfs.File
	fs     *handleFS
	closed bool
}

func (f *countedFile) Close() error {
	if !f.closed {
		f.closed = true
		f.fs.open--
	}
	return f.File.Close()
}

func (fs *handleFS) count(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	fs.open++
	return &countedFile{File: f, fs: fs}, nil
}

func (fs *handleFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.count(fs.FS.Create(name, c))
}

func (fs *handleFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	return fs.count(fs.FS.Open(name, opts...))
}

func (fs *handleFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return fs.count(fs.FS.OpenReadWrite(name, c, opts...))
}

func (fs *handleFS) OpenDir(name string) (vfs.File, error) {
	return fs.count(fs.FS.OpenDir(name))
}

// TestAnIdleLogHoldsOneHandle: a node keeps a log open for every queue
// replica it holds, thousands of them, so an idle log, its appends
// durable and no reader open, may hold nothing but its writable tail.
// Directories are opened when they are synced, not kept.
func TestAnIdleLogHoldsOneHandle(t *testing.T) {
	fs := &handleFS{FS: vfs.NewMem()}
	host := &fakeHost{}
	l, err := storage.Open(fs, "q/log", host, storage.Options{SegmentSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if _, err := l.Append(1, []byte("a record long enough to fill segments quickly")); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		l.RequestSync()
		host.drain()
	}
	if l.DurableIndex() != 40 {
		t.Fatalf("durable %d, want 40", l.DurableIndex())
	}
	if fs.open != 1 {
		t.Fatalf("an idle log holds %d handles, want 1 (its active segment)", fs.open)
	}
	rd := l.NewReader(1)
	if _, err := rd.Next(40, 100, 1<<20); err != nil {
		t.Fatal(err)
	}
	rd.Close()
	l.Close()
	if fs.open != 0 {
		t.Fatalf("a closed log holds %d handles", fs.open)
	}
}

// TestARestingLogHoldsNoHandleAndWakesOnAppend: a log whose appends are
// all durable closes its writable tail when asked to rest, refuses while
// a sync is in flight, and opens the tail again for the next append,
// which lands after the records before it, durable and readable, also
// after the log is opened again.
func TestARestingLogHoldsNoHandleAndWakesOnAppend(t *testing.T) {
	fs := &handleFS{FS: vfs.NewMem()}
	host := &fakeHost{}
	l, err := storage.Open(fs, "q/log", host, storage.Options{SegmentSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	appendOne := func(body string) {
		t.Helper()
		if _, err := l.Append(1, []byte(body)); err != nil {
			t.Fatal(err)
		}
		l.RequestSync()
	}
	appendOne("first")
	if l.Rest() {
		t.Fatal("a log rested with its append's sync in flight")
	}
	host.drain()
	if !l.Rest() || fs.open != 0 {
		t.Fatalf("a resting log holds %d handles, want none", fs.open)
	}
	appendOne("second")
	if fs.open != 1 {
		t.Fatalf("a log woken by an append holds %d handles, want its tail", fs.open)
	}
	host.drain()
	if l.DurableIndex() != 2 {
		t.Fatalf("durable %d after the wake, want 2", l.DurableIndex())
	}
	l.Close()
	again, err := storage.Open(fs, "q/log", host, storage.Options{SegmentSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	rd := again.NewReader(1)
	defer rd.Close()
	recs, err := rd.Next(2, 10, 1<<20)
	if err != nil || len(recs) != 2 || string(recs[0].Body) != "first" || string(recs[1].Body) != "second" {
		t.Fatalf("after a rest and a wake the log reads %v, %v", recs, err)
	}
	again.Close()
}
