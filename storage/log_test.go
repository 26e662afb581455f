package storage_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/storage"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// logModel remembers what a test appended and what the log reported
// durable, so every reopened log can be checked against it.
type logModel struct {
	// bodies is the log as the test believes it is now.
	bodies map[uint64][]byte
	// candidates holds every body ever written at an index: after a crash
	// an undone truncation may bring old records back, which is allowed
	// as long as they were never superseded durably.
	candidates map[uint64][][]byte
	// durableBodies are records the log reported durable; a reopened log
	// must hold exactly these.
	durableBodies map[uint64][]byte
	// durable is what the current log instance reported; confirmed is the
	// highest index any instance reported and no truncation removed.
	durable   uint64
	confirmed uint64
	failed    error
}

func newModel() *logModel {
	return &logModel{bodies: make(map[uint64][]byte), candidates: make(map[uint64][][]byte), durableBodies: make(map[uint64][]byte)}
}

func (m *logModel) wrote(index uint64, body []byte) {
	m.bodies[index] = body
	m.candidates[index] = append(m.candidates[index], body)
}

func (m *logModel) truncated(k uint64) {
	for i := range m.bodies {
		if i > k {
			delete(m.bodies, i)
		}
	}
	for i := range m.durableBodies {
		if i > k {
			delete(m.durableBodies, i)
		}
	}
	m.durable, m.confirmed = min(m.durable, k), min(m.confirmed, k)
}

func (m *logModel) options(segmentSize int64) storage.Options {
	m.durable = 0
	return storage.Options{
		SegmentSize: segmentSize,
		OnDurable: func(i uint64) {
			if i < m.durable {
				panic(fmt.Sprintf("durable index went back from %d to %d", m.durable, i))
			}
			m.durable = i
			m.confirmed = max(m.confirmed, i)
			for j := uint64(1); j <= i; j++ {
				if m.durableBodies[j] == nil {
					m.durableBodies[j] = m.bodies[j]
				}
			}
		},
		OnFailed: func(err error) { m.failed = err },
	}
}

func body(rng *rand.Rand, index uint64) []byte {
	n := rng.IntN(700)
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(index) + byte(i)
	}
	return b
}

// readAllRecords reads the whole log in small pages and returns copies.
func readAllRecords(t *testing.T, l *storage.Log) []storage.Record {
	if t != nil {
		t.Helper()
	}
	r := l.NewReader(l.FirstIndex())
	defer r.Close()
	var out []storage.Record
	for {
		page, err := r.Next(l.LastIndex(), 3, 1000)
		if err != nil {
			if t == nil {
				panic(err)
			}
			t.Fatalf("reading log: %v", err)
		}
		if len(page) == 0 {
			return out
		}
		for _, rec := range page {
			out = append(out, storage.Record{Index: rec.Index, Type: rec.Type, Body: bytes.Clone(rec.Body)})
		}
	}
}

func TestAppendSyncReopen(t *testing.T) {
	fs := vfs.NewCrashableMem()
	host := &fakeHost{}
	m := newModel()
	l, err := storage.Open(fs, "log", host, m.options(4096))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := uint64(1); i <= 100; i++ {
		b := body(rng, i)
		m.wrote(i, b)
		if got, err := l.Append(7, b); err != nil || got != i {
			t.Fatalf("append %d: got index %d, err %v", i, got, err)
		}
		if i%10 == 0 {
			l.RequestSync()
		}
	}
	if m.durable >= 100 {
		t.Fatalf("durable %d before any sync completed", m.durable)
	}
	l.RequestSync()
	host.drain()
	if m.durable != 100 || l.DurableIndex() != 100 {
		t.Fatalf("durable after drain: model %d, log %d; want 100", m.durable, l.DurableIndex())
	}
	digest := l.Digest()
	l.Close()

	l2, err := storage.Open(fs.CrashClone(vfs.CrashCloneCfg{}), "log", &fakeHost{}, storage.Options{SegmentSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if l2.LastIndex() != 100 || l2.Digest() != digest {
		t.Fatalf("reopened: last %d digest %s; want 100 and %s", l2.LastIndex(), l2.Digest(), digest)
	}
	recs := readAllRecords(t, l2)
	if len(recs) != 100 {
		t.Fatalf("read %d records, want 100", len(recs))
	}
	for _, rec := range recs {
		if rec.Type != 7 || !bytes.Equal(rec.Body, m.bodies[rec.Index]) {
			t.Fatalf("record %d differs from what was appended", rec.Index)
		}
	}
}

// TestCrashAtEveryPrefix is the storage crash test: for every prefix of a
// random append/sync sequence, crash with random torn and reordered
// survivors, reopen, and check that every record reported durable is
// present and intact, that no record differs from what was appended, and
// that the log takes appends again and survives a second crash.
func TestCrashAtEveryPrefix(t *testing.T) {
	seeds := 1000
	if testing.Short() {
		seeds = 100
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		ops := drawOps(rand.New(rand.NewPCG(seed, 0)), 30)
		for prefix := 0; prefix <= len(ops); prefix++ {
			if err := crashRun(seed, ops[:prefix]); err != nil {
				t.Fatalf("seed %d prefix %d: %v", seed, prefix, err)
			}
		}
	}
}

type opKind int

const (
	opAppend opKind = iota
	opSync
	opComplete
	opTruncate
)

type op struct {
	kind  opKind
	count int
}

func drawOps(rng *rand.Rand, n int) []op {
	ops := make([]op, n)
	for i := range ops {
		switch r := rng.IntN(11); {
		case r < 5:
			ops[i] = op{kind: opAppend, count: 1 + rng.IntN(4)}
		case r < 7:
			ops[i] = op{kind: opSync}
		case r < 10:
			ops[i] = op{kind: opComplete}
		default:
			ops[i] = op{kind: opTruncate, count: 1 + rng.IntN(6)}
		}
	}
	return ops
}

var crashProfile = sim.DiskProfile{TornChance: 0.8, ReorderChance: 0.4}

// crashRun applies ops to a fresh log, then twice: crashes, reopens,
// verifies, and appends and syncs some more.
func crashRun(seed uint64, ops []op) error {
	disk := sim.NewDisk(rand.New(rand.NewPCG(seed, uint64(len(ops)))), crashProfile)
	rng := rand.New(rand.NewPCG(seed, 1000+uint64(len(ops))))
	m := newModel()
	host := &fakeHost{}
	l, err := storage.Open(disk.FS(), "data/q/log", host, m.options(2048))
	if err != nil {
		return fmt.Errorf("first open: %w", err)
	}
	for _, o := range ops {
		applyOp(l, host, m, rng, o)
	}
	for round := 0; round < 2; round++ {
		disk.Crash()
		host = &fakeHost{}
		if l, err = storage.Open(disk.FS(), "data/q/log", host, m.options(2048)); err != nil {
			return fmt.Errorf("round %d: reopen: %w", round, err)
		}
		if err := verifyLog(l, m); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		// The log as reopened is now the truth; lost unsynced records
		// give their indexes up for reuse.
		m.truncated(l.LastIndex())
		for _, rec := range readAllRecords(nil, l) {
			m.bodies[rec.Index] = rec.Body
		}
		host.drain()
		if l.DurableIndex() != l.LastIndex() {
			return fmt.Errorf("round %d: durable %d != last %d after the open-time sync", round, l.DurableIndex(), l.LastIndex())
		}
		for i := 0; i < 6; i++ {
			applyOp(l, host, m, rng, op{kind: opAppend, count: 1 + rng.IntN(3)})
			applyOp(l, host, m, rng, op{kind: opSync})
			if i%2 == 0 {
				applyOp(l, host, m, rng, op{kind: opComplete})
			}
		}
	}
	return nil
}

func applyOp(l *storage.Log, host *fakeHost, m *logModel, rng *rand.Rand, o op) {
	switch o.kind {
	case opAppend:
		entries := make([]storage.Entry, o.count)
		for i := range entries {
			index := l.LastIndex() + 1 + uint64(i)
			entries[i] = storage.Entry{Type: storage.RecordType(1 + index%5), Body: body(rng, index)}
			m.wrote(index, entries[i].Body)
		}
		if _, err := l.AppendBatch(entries); err != nil {
			panic(err)
		}
	case opSync:
		l.RequestSync()
	case opComplete:
		host.completeOne(rng)
	case opTruncate:
		last := l.LastIndex()
		k := last - min(last, uint64(o.count))
		if err := l.TruncateAfter(k); err != nil {
			panic(err)
		}
		m.truncated(k)
		if l.LastIndex() != k || l.DurableIndex() > k {
			panic(fmt.Sprintf("after TruncateAfter(%d): last %d durable %d", k, l.LastIndex(), l.DurableIndex()))
		}
	}
}

// verifyLog checks a reopened log against the model.
func verifyLog(l *storage.Log, m *logModel) error {
	if l.LastIndex() < m.confirmed {
		return fmt.Errorf("lost durable records: last index %d, confirmed %d", l.LastIndex(), m.confirmed)
	}
	r := l.NewReader(1)
	defer r.Close()
	next := uint64(1)
	for {
		page, err := r.Next(l.LastIndex(), 1+int(next%4), 900)
		if err != nil {
			return fmt.Errorf("reading at %d: %w", next, err)
		}
		if len(page) == 0 {
			break
		}
		for _, rec := range page {
			if rec.Index != next {
				return fmt.Errorf("read index %d, want %d", rec.Index, next)
			}
			if rec.Type != storage.RecordType(1+rec.Index%5) {
				return fmt.Errorf("record %d has type %d", rec.Index, rec.Type)
			}
			if want, ok := m.durableBodies[rec.Index]; ok && !bytes.Equal(rec.Body, want) {
				return fmt.Errorf("record %d differs from the version reported durable", rec.Index)
			}
			if !slices.ContainsFunc(m.candidates[rec.Index], func(b []byte) bool { return bytes.Equal(b, rec.Body) }) {
				return fmt.Errorf("record %d is not anything that was appended there", rec.Index)
			}
			next++
		}
	}
	if next != l.LastIndex()+1 {
		return fmt.Errorf("read through %d, log says last is %d", next-1, l.LastIndex())
	}
	return nil
}

func TestTruncateFrontDropsWholeSegmentsAndSurvivesReopen(t *testing.T) {
	fs := vfs.NewCrashableMem()
	host := &fakeHost{}
	m := newModel()
	l, err := storage.Open(fs, "log", host, m.options(1024))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := uint64(1); i <= 60; i++ {
		b := body(rng, i)
		m.wrote(i, b)
		if _, err := l.Append(3, b); err != nil {
			t.Fatal(err)
		}
		l.RequestSync()
		host.drain()
	}
	if l.CanTruncateFront(1) || !l.CanTruncateFront(40) {
		t.Fatalf("CanTruncateFront(1) %t, (40) %t: want false, true", l.CanTruncateFront(1), l.CanTruncateFront(40))
	}
	if err := l.TruncateFront(40); err != nil {
		t.Fatal(err)
	}
	first := l.FirstIndex()
	if l.CanTruncateFront(40) {
		t.Fatal("CanTruncateFront(40) after TruncateFront(40): nothing is left to drop before 40")
	}
	if first <= 1 || first > 40 {
		t.Fatalf("first retained index %d after TruncateFront(40); want in (1, 40]", first)
	}
	if _, err := l.NewReader(1).Next(60, 1, 1); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("reading a compacted index: %v, want ErrCompacted", err)
	}
	l.Close()
	// Without a crash the removals are simply gone; after one they may come
	// back, which is older history and harmless.
	if l1, err := storage.Open(fs, "log", &fakeHost{}, storage.Options{SegmentSize: 1024}); err != nil || l1.FirstIndex() != first {
		t.Fatalf("plain reopen: first %d err %v, want %d", l1.FirstIndex(), err, first)
	}
	l2, err := storage.Open(fs.CrashClone(vfs.CrashCloneCfg{}), "log", &fakeHost{}, storage.Options{SegmentSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if l2.FirstIndex() > first || l2.LastIndex() != 60 {
		t.Fatalf("reopened after a crash: first %d last %d; want at most %d and 60", l2.FirstIndex(), l2.LastIndex(), first)
	}
	r := l2.NewReader(first)
	for want := first; want <= 60; {
		page, err := r.Next(60, 100, 1<<20)
		if err != nil || len(page) == 0 {
			t.Fatalf("reading at %d: %d records, err %v", want, len(page), err)
		}
		for _, rec := range page {
			if rec.Index != want || !bytes.Equal(rec.Body, m.bodies[want]) {
				t.Fatalf("record %d differs after compaction and reopen", want)
			}
			want++
		}
	}
}

// A segment size is taken from a header's length up to 1 GiB, both ends
// included; outside them opening a log is a programming error and
// panics, naming the size.
func TestSegmentSizesUpToOneGiBAreTaken(t *testing.T) {
	open := func(size int64) (panicked any) {
		defer func() { panicked = recover() }()
		l, err := storage.Open(vfs.NewMem(), "log", &fakeHost{}, storage.Options{SegmentSize: size})
		if err != nil {
			t.Fatalf("segment size %d: %v", size, err)
		}
		l.Close()
		return nil
	}
	if p := open(1 << 30); p != nil {
		t.Fatalf("a segment size of 1 GiB was refused: %v", p)
	}
	if p := open(1<<30 + 1); p == nil {
		t.Fatal("a segment size past 1 GiB was taken")
	}
}

// A log that failed (or closed) drops nothing, and says so: the node
// asks CanTruncateFront before compacting, and would otherwise go on to a
// truncation that can only fail.
func TestAFailedLogCannotTruncateItsFront(t *testing.T) {
	fs := vfs.NewMem()
	host := &fakeHost{}
	m := newModel()
	l, err := storage.Open(fs, "log", host, m.options(1024))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for i := uint64(1); i <= 60; i++ {
		if _, err := l.Append(3, body(rng, i)); err != nil {
			t.Fatal(err)
		}
		l.RequestSync()
		host.drain()
	}
	if !l.CanTruncateFront(40) {
		t.Fatal("a healthy log of several sealed segments cannot drop those before 40")
	}
	l.Close()
	if l.CanTruncateFront(40) {
		t.Fatal("a closed log says it can drop segments")
	}
	if err := l.TruncateFront(40); err == nil {
		t.Fatal("a closed log truncated its front")
	}
}
