package node

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// syncAtOnce is a storage host whose syncs complete within the call.
type syncAtOnce struct{}

func (syncAtOnce) Sync(f vfs.File, done func(error)) { done(f.Sync()) }
func (syncAtOnce) Boundary(string)                   {}

func entriesFrom(first, n int) []recentID {
	out := make([]recentID, n)
	for i := range out {
		seq := uint64(first + i)
		out[i] = newRecentID(wire.MessageID{Producer: 3, Seq: seq}, 10+seq, int64(1000+seq), seq%2 == 0)
	}
	return out
}

func openTestJournal(t *testing.T, fs vfs.FS) *windowJournal {
	t.Helper()
	j, err := openJournal(fs, "q", syncAtOnce{}, 4096, func(err error) { t.Fatalf("journal failed: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// The journal gives back any range of the entries appended to it, across
// records and a reopen; after a crash left entries past what a checkpoint
// names, trimming cuts exactly those; dropping the front keeps whatever a
// later range still needs.
func TestWindowJournalKeepsRangesAcrossReopen(t *testing.T) {
	fs := vfs.NewMem()
	j := openTestJournal(t, fs)
	all := entriesFrom(0, 900)
	// Three builds: entries 100-399, 400-699, 700-899 (the first hundred
	// left the window before the first build). Each build's entries are
	// made durable before the next build, as journalWindow does.
	for _, r := range [][2]int{{100, 400}, {400, 700}, {700, 900}} {
		if _, err := j.appendEntries(uint64(r[0]), slices.Values(all[r[0]:r[1]])); err != nil {
			t.Fatal(err)
		}
		j.log.RequestSync()
	}
	if j.log.DurableIndex() != j.log.LastIndex() {
		t.Fatalf("journal durable to %d of %d", j.log.DurableIndex(), j.log.LastIndex())
	}
	j.log.Close()

	j = openTestJournal(t, fs)
	if j.end() != 900 || len(j.batches) < 3 {
		t.Fatalf("reopened journal ends at %d with %d batches, want 900 and at least 3", j.end(), len(j.batches))
	}
	read, err := j.read(250, 500)
	if err != nil {
		t.Fatal(err)
	}
	if got := read.slice(); len(got) != 500 || got[0] != all[250] || got[499] != all[749] {
		t.Fatalf("read 250+500 gave %d entries from %+v to %+v", len(got), got[0], got[len(got)-1])
	}
	if _, err := j.read(50, 10); !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("reading entries the journal never held: %v, want corruption", err)
	}
	if _, err := j.read(800, 200); !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("reading past the journal's end: %v, want corruption", err)
	}

	// A checkpoint names entries up to 700: the last build's are cut.
	if err := j.trimTo(700); err != nil {
		t.Fatal(err)
	}
	if err := j.trimTo(650); !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("trimming inside a batch: %v, want corruption", err)
	}
	if j.end() != 700 {
		t.Fatalf("trimmed journal ends at %d, want 700", j.end())
	}
	if _, err := j.appendEntries(700, slices.Values(all[700:800])); err != nil {
		t.Fatal(err)
	}
	if err := j.dropBefore(600); err != nil {
		t.Fatal(err)
	}
	if read, err := j.read(600, 200); err != nil || !slices.Equal(read.slice(), all[600:800]) {
		t.Fatalf("after dropping the front, entries 600-799 read back as %d entries (%v)", read.len(), err)
	}
	if j.log.FirstIndex() == 1 {
		t.Fatalf("dropping the front before entry 600 removed no segment (%d batches)", len(j.batches))
	}
	// What the journal lists in memory is what it holds: a reopen, which
	// lists the batches from the log, finds the same ones, the first of
	// them the log's first record.
	kept := slices.Clone(j.batches)
	j.log.RequestSync()
	j.log.Close()
	j = openTestJournal(t, fs)
	if !slices.Equal(j.batches, kept) || kept[0].index != j.log.FirstIndex() {
		t.Fatalf("after dropping the front the journal listed %+v; reopened, it holds %+v from record %d", kept, j.batches, j.log.FirstIndex())
	}
}

// A window kept in the journal decodes to the same state as one kept
// inline, and both forms give one digest; a window whose entries do not
// match their digest is refused.
func TestJournaledStateMatchesInline(t *testing.T) {
	s := windowState()
	s.apply(s.applied+1, record{typ: recordPublish, id: wire.MessageID{Producer: 9, Seq: 1}, at: s.clock, payload: []byte("live")})
	inline := encodeState(s)
	journaled := encodeStateJournaled(s)
	if len(journaled) >= len(inline)/100 {
		t.Fatalf("the journaled form is %d bytes of the inline %d: the window is still in it", len(journaled), len(inline))
	}
	window := s.recent.slice()
	d, err := decodeState("orders", journaled, func(n int) (windowList, error) { return listOf(window[:n]), nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := d.checkWindow(); err != nil {
		t.Fatal(err)
	}
	if again := encodeState(d); !bytes.Equal(again, inline) {
		t.Fatal("a state decoded from the journaled form encodes differently from the original")
	}
	fromInline, err := decodeState("orders", inline, nil)
	if err != nil {
		t.Fatal(err)
	}
	if stateDigest(fromInline) != stateDigest(s) || stateDigest(d) != stateDigest(s) {
		t.Fatal("the two forms of one state have different digests")
	}
	if _, err := decodeState("orders", journaled, nil); err == nil {
		t.Fatal("a journaled state decoded without its journal")
	}
	tampered := append([]recentID(nil), window...)
	tampered[7].packed++
	bad, err := decodeState("orders", journaled, func(n int) (windowList, error) { return listOf(tampered[:n]), nil })
	if err != nil {
		t.Fatal(err)
	}
	if bad.checkWindow() == nil {
		t.Fatal("a window with a changed entry matched its digest")
	}
}

// The journal rolls its segments at most every journalSegmentMax bytes,
// also when the queue log keeps its larger default: a journal that never
// rolled could never drop the entries that left the window.
func TestJournalSegmentSize(t *testing.T) {
	for _, c := range []struct{ log, want int64 }{{0, journalSegmentMax}, {64 << 20, journalSegmentMax}, {4096, 4096}} {
		if got := journalSegmentSize(c.log); got != c.want {
			t.Errorf("journal segment for a log segment of %d: %d, want %d", c.log, got, c.want)
		}
	}
}

// TestWindowEntryHashIsStable pins the window entries' hash: a
// checkpoint on disk carries the sum of its window's hashes, and a node
// that hashed differently would take every checkpoint written before it
// for a damaged one.
func TestWindowEntryHashIsStable(t *testing.T) {
	for _, c := range []struct {
		entry recentID
		want  [2]uint64
	}{
		{newRecentID(wire.MessageID{Producer: 7, Seq: 42}, 1001, 1_700_000_000_000_000_000, false), [2]uint64{0xfc2684b377fe4947, 0x6ce59ffbd10f2170}},
		{newRecentID(wire.MessageID{Producer: 1<<63 + 5, Seq: 0}, 1<<40, -3, true), [2]uint64{0xf85d52060d52fe5c, 0xf567a1cd67630f7a}},
	} {
		if got := hashRecent(c.entry); got != c.want {
			t.Errorf("hash of %+v is %#x, want %#x", c.entry, got, c.want)
		}
	}
}

// A journal whose batches overlap (a batch starting before the one ahead
// of it ends) is not one this node wrote: opening it is refused rather
// than read with two entries under one number.
func TestAJournalWithOverlappingBatchesIsRefused(t *testing.T) {
	fs := vfs.NewMem()
	j := openTestJournal(t, fs)
	all := entriesFrom(0, 400)
	for _, r := range [][2]int{{100, 300}, {250, 400}} {
		if _, err := j.appendEntries(uint64(r[0]), slices.Values(all[r[0]:r[1]])); err != nil {
			t.Fatal(err)
		}
	}
	j.log.RequestSync()
	j.log.Close()
	_, err := openJournal(fs, "q", syncAtOnce{}, 4096, func(err error) { t.Fatalf("journal failed: %v", err) })
	if err == nil || !strings.Contains(err.Error(), "before the previous batch ends at 300") {
		t.Fatalf("opening a journal whose second batch starts at 250, inside the first: %v, want a refusal", err)
	}
}
