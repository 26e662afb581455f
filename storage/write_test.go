package storage_test

import (
	"bytes"
	"testing"

	"github.com/cairnmq/cairn/storage"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// fileBytes is what the files of the log in dir hold in all.
func fileBytes(t *testing.T, fs vfs.FS, dir string) int64 {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, name := range names {
		info, err := fs.Stat(fs.PathJoin(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		n += info.Size()
	}
	return n
}

// A group commit costs one write: records appended while a sync is in
// flight stay in memory, readers get them from there, and they reach the
// file together when the next sync starts.
func TestAppendsWhileASyncRunsReachTheFileTogether(t *testing.T) {
	fs := vfs.NewCrashableMem()
	host := &fakeHost{}
	m := newModel()
	l, err := storage.Open(fs, "log", host, m.options(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	host.drain()
	bodies := [][]byte{[]byte("first")}
	l.Append(7, bodies[0])
	l.RequestSync() // no sync in flight: the record goes out at once
	afterFirst := fileBytes(t, fs, "log")
	for i := range 5 {
		b := bytes.Repeat([]byte{byte('a' + i)}, 100+i)
		bodies = append(bodies, b)
		if _, err := l.Append(7, b); err != nil {
			t.Fatal(err)
		}
		l.RequestSync() // rides the next batch
	}
	if got := fileBytes(t, fs, "log"); got != afterFirst {
		t.Fatalf("the files grew from %d to %d bytes while the first sync ran", afterFirst, got)
	}
	recs := readAllRecords(t, l)
	if len(recs) != len(bodies) {
		t.Fatalf("read %d records, want %d", len(recs), len(bodies))
	}
	for i, rec := range recs {
		if !bytes.Equal(rec.Body, bodies[i]) {
			t.Fatalf("record %d reads %q, want %q", rec.Index, rec.Body, bodies[i])
		}
	}
	// The first page of that read reached into the gathered records, so
	// they went out; a read wholly within them must not write.
	written := fileBytes(t, fs, "log")
	l.Append(7, []byte("gathered"))
	r := l.NewReader(l.LastIndex())
	page, err := r.Next(l.LastIndex(), 1, 1<<10)
	r.Close()
	if err != nil || len(page) != 1 || string(page[0].Body) != "gathered" {
		t.Fatalf("reading the gathered record: %v, %v", page, err)
	}
	if got := fileBytes(t, fs, "log"); got != written {
		t.Fatalf("a read of gathered records wrote them: %d bytes, was %d", got, written)
	}
	l.RequestSync()
	host.drain()
	if m.durable != l.LastIndex() || m.failed != nil {
		t.Fatalf("durable %d of %d, failed %v", m.durable, l.LastIndex(), m.failed)
	}
	if got := fileBytes(t, fs, "log"); got <= written {
		t.Fatalf("the files hold %d bytes after the last sync, as before it", got)
	}
}

// A truncation reaching into gathered records, and segments that roll
// while records are gathered, leave the log as written: reopened, it
// holds every record up to the cut and nothing after it.
func TestGatheredRecordsTruncateAndRoll(t *testing.T) {
	fs := vfs.NewCrashableMem()
	host := &fakeHost{}
	m := newModel()
	l, err := storage.Open(fs, "log", host, m.options(600))
	if err != nil {
		t.Fatal(err)
	}
	host.drain()
	var want [][]byte
	for i := range 40 {
		b := bytes.Repeat([]byte{byte(i)}, 50+i)
		want = append(want, b)
		l.Append(7, b)
		l.RequestSync()
		if i%7 == 0 {
			host.completeOne(nil)
		}
	}
	if err := l.TruncateAfter(33); err != nil {
		t.Fatal(err)
	}
	want = want[:33]
	host.drain()
	if m.failed != nil || m.durable != 33 {
		t.Fatalf("after the cut: durable %d, failed %v", m.durable, m.failed)
	}
	l.Close()
	l, err = storage.Open(fs, "log", host, m.options(600))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	host.drain()
	recs := readAllRecords(t, l)
	if len(recs) != len(want) || l.Segments() < 3 {
		t.Fatalf("reopened: %d records in %d segments, want %d records in several", len(recs), l.Segments(), len(want))
	}
	for i, rec := range recs {
		if !bytes.Equal(rec.Body, want[i]) {
			t.Fatalf("record %d reads %d bytes of %d, want %d of %d", rec.Index, len(rec.Body), rec.Body[0], len(want[i]), want[i][0])
		}
	}
}
