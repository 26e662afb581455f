package sim

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestAppendingFileActsAsTheMemoryFile runs the same random writes and
// reads, positional and not, on a plain memory file and on one wrapped
// by appendingFile: every answer and the final contents agree. Appends at
// the end, which the wrapper turns into the memory file's Write, are most
// of them, as in a log.
func TestAppendingFileActsAsTheMemoryFile(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		plainFS, wrappedFS := vfs.NewMem(), vfs.NewMem()
		plain, err := plainFS.Create("f", vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		wrapped, err := appending(wrappedFS.Create("f", vfs.WriteCategoryUnspecified))
		if err != nil {
			t.Fatal(err)
		}
		var size int64
		for step := range 200 {
			p := make([]byte, 1+rng.IntN(40))
			for i := range p {
				p[i] = byte(rng.Uint32())
			}
			switch op := rng.IntN(10); {
			case op < 6: // append at the end, positionally
				n1, e1 := plain.WriteAt(p, size)
				n2, e2 := wrapped.WriteAt(p, size)
				same(t, seed, step, "append", n1, e1, n2, e2)
			case op < 7: // overwrite or extend past the end with a gap
				off := rng.Int64N(size + 20)
				n1, e1 := plain.WriteAt(p, off)
				n2, e2 := wrapped.WriteAt(p, off)
				same(t, seed, step, "write at", n1, e1, n2, e2)
			case op < 8:
				n1, e1 := plain.Write(p)
				n2, e2 := wrapped.Write(p)
				same(t, seed, step, "write", n1, e1, n2, e2)
			case op < 9:
				b1, b2 := make([]byte, len(p)), make([]byte, len(p))
				n1, e1 := plain.Read(b1)
				n2, e2 := wrapped.Read(b2)
				same(t, seed, step, "read", n1, e1, n2, e2)
				if !bytes.Equal(b1[:n1], b2[:n2]) {
					t.Fatalf("seed %d step %d: reads differ", seed, step)
				}
			default:
				off := rng.Int64N(size + 5)
				b1, b2 := make([]byte, len(p)), make([]byte, len(p))
				n1, e1 := plain.ReadAt(b1, off)
				n2, e2 := wrapped.ReadAt(b2, off)
				same(t, seed, step, "read at", n1, e1, n2, e2)
			}
			st, err := plain.Stat()
			if err != nil {
				t.Fatal(err)
			}
			size = st.Size()
		}
		want, _ := io.ReadAll(mustOpen(t, plainFS))
		got, _ := io.ReadAll(mustOpen(t, wrappedFS))
		if !bytes.Equal(want, got) {
			t.Fatalf("seed %d: the wrapped file holds %d bytes unlike the plain file's %d", seed, len(got), len(want))
		}
	}
}

func same(t *testing.T, seed uint64, step int, what string, n1 int, e1 error, n2 int, e2 error) {
	t.Helper()
	if n1 != n2 || (e1 == nil) != (e2 == nil) {
		t.Fatalf("seed %d step %d: %s gave %d, %v on the plain file and %d, %v wrapped", seed, step, what, n1, e1, n2, e2)
	}
}

func mustOpen(t *testing.T, fs vfs.FS) vfs.File {
	t.Helper()
	f, err := fs.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	return f
}
