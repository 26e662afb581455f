package storage_test

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/cairnmq/cairn/storage"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// tornFrame is a frame of index with an 8-byte body, saying the file was
// synced through syncedThrough when it was written; its checksum is
// right only if valid.
func tornFrame(index uint64, syncedThrough uint32, valid bool) []byte {
	f := make([]byte, 21+8)
	binary.LittleEndian.PutUint32(f[4:8], 8)
	f[8] = 1
	binary.LittleEndian.PutUint64(f[9:17], index)
	binary.LittleEndian.PutUint32(f[17:21], syncedThrough)
	copy(f[21:], "torn tai")
	sum := crc32.Update(0, crc32.MakeTable(crc32.Castagnoli), f[4:])
	if !valid {
		sum++
	}
	binary.LittleEndian.PutUint32(f[0:4], sum)
	return f
}

// appendToSegment adds b at the end of the log's only segment.
func appendToSegment(t *testing.T, fs vfs.FS, b []byte) int64 {
	t.Helper()
	names, err := fs.List("log")
	if err != nil {
		t.Fatal(err)
	}
	var seg string
	for _, n := range names {
		if st, err := fs.Stat(fs.PathJoin("log", n)); err == nil && !st.IsDir() && st.Size() > 72 {
			seg = fs.PathJoin("log", n)
		}
	}
	f, err := fs.OpenReadWrite(seg, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, st.Size()); err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// A torn tail is told from damage by the frames after the bad one: one
// that verifies and says the file was synced past the bad frame proves
// the bad frame durable, so damaged. One that fails its checksum proves
// nothing, however its header reads: a tail torn after a frame whose
// header survived but whose body did not, followed by one whose header
// happens to claim such a mark, is still a torn tail, and the log opens
// without it.
func TestOnlyFramesThatVerifyProveATailWasSynced(t *testing.T) {
	for _, valid := range []bool{false, true} {
		fs := syncedLog(t, 3)
		end := appendToSegment(t, fs, tornFrame(4, 0, false))
		appendToSegment(t, fs, tornFrame(5, uint32(end)+29, valid))
		l, err := storage.Open(fs, "log", &fakeHost{}, storage.Options{})
		switch {
		case valid && err == nil:
			l.Close()
			t.Fatal("a verified frame past the bad one proved it synced, and the log opened over the damage")
		case !valid && err != nil:
			t.Fatalf("a frame that fails its checksum proved the torn tail synced: %v", err)
		case !valid && l.LastIndex() != 3:
			t.Fatalf("last index %d after a torn tail past 3 synced records, want 3", l.LastIndex())
		}
		if l != nil && err == nil {
			l.Close()
		}
	}
}
