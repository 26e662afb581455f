package live

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A removal under the data directory is done when it returns, as
// os.Remove's is: the path is gone, and the remover deletes the file
// afterwards. Leftovers of an earlier process are deleted too, and the
// answers for missing paths and non-empty directories are os's.
func TestTrashRemovesOffTheCallerWithOSSemantics(t *testing.T) {
	data := t.TempDir()
	write := func(rel string) string {
		p := filepath.Join(data, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, 1<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := os.MkdirAll(filepath.Join(data, trashDirName), 0o755); err != nil {
		t.Fatal(err)
	}
	leftover := write(filepath.Join(trashDirName, "earlier-7"))
	tfs, err := newTrashFS(data, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	segment := write("queues/q.1/log/00000000000000000001.seg")
	replica := filepath.Dir(write("queues/r.1/log/00000000000000000001.seg"))
	replica = filepath.Dir(replica)

	if err := tfs.Remove(segment); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if err := tfs.RemoveAll(replica); err != nil {
		t.Fatalf("RemoveAll: %v", err)
	}
	for _, p := range []string{segment, replica} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there after its removal returned: %v", p, err)
		}
	}
	if err := tfs.Remove(segment); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove of a missing file: %v, want a not-exist error", err)
	}
	if err := tfs.RemoveAll(segment); err != nil {
		t.Errorf("RemoveAll of a missing path: %v, want nil", err)
	}
	if err := tfs.Remove(filepath.Join(data, "queues")); err == nil {
		t.Error("Remove of a non-empty directory succeeded")
	}
	outside := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(outside, []byte("x"), 0o644)
	if err := tfs.Remove(outside); err != nil {
		t.Errorf("Remove outside the data directory: %v", err)
	}

	// Nothing was deleted on the caller: the segment and the replica wait
	// in the trash, beside the leftover, for the remover.
	if names, _ := os.ReadDir(filepath.Join(data, trashDirName)); len(names) != 3 {
		t.Fatalf("the trash holds %d entries before the remover ran, want 3", len(names))
	}
	done := make(chan struct{})
	emptied := make(chan struct{})
	go func() { tfs.empty(done); close(emptied) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		names, err := os.ReadDir(filepath.Join(data, trashDirName))
		if err != nil {
			t.Fatal(err)
		}
		if len(names) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the trash still holds %d entries", len(names))
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(done)
	<-emptied
	if _, err := os.Stat(leftover); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an earlier process's trash was kept: %v", err)
	}
}
