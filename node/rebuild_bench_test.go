package node

import (
	"testing"

	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// BenchmarkRebuildBacklog replays what a new owner rebuilds at failover
// when no checkpoint covers its backlog: an epoch marker and 10,000
// unacknowledged publishes of 1 KiB, read from a log on the real
// filesystem in the rebuild's pages, decoded and applied to an empty
// state. The failover benchmark's install stage holds this work. The
// records need no sync to be read back, so the log's host never syncs.
func BenchmarkRebuildBacklog(b *testing.B) {
	const backlog = 10_000
	l, err := storage.Open(vfs.Default, b.TempDir(), inertHost{}, storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	at := int64(1e18)
	appendRecord := func(r record) {
		if _, err := l.Append(r.storedType(), encodeRecord(r)); err != nil {
			b.Fatal(err)
		}
	}
	appendRecord(record{typ: recordEpochMark, epoch: 1, at: at, window: int64(2 * 60e9)})
	payload := make([]byte, 1024)
	for i := range backlog {
		appendRecord(record{typ: recordPublish, epoch: 1, id: wire.MessageID{Producer: 1, Seq: uint64(i)}, at: at + int64(i), payload: payload})
	}
	last := l.LastIndex()
	b.ReportAllocs()
	b.SetBytes(int64(backlog * len(payload)))
	for b.Loop() {
		s := newQueueState("orders")
		rd := l.NewReader(1)
		for s.applied < last {
			page, err := rd.Next(last, pageRecords, pageBytes)
			if err != nil || len(page) == 0 {
				b.Fatalf("page after %d: %v", s.applied, err)
			}
			for _, rec := range page {
				dec, err := decodeRecord(rec.Type, rec.Body)
				if err != nil {
					b.Fatal(err)
				}
				s.apply(rec.Index, dec)
			}
		}
		rd.Close()
		if len(s.messages) != backlog {
			b.Fatalf("rebuilt %d live messages, want %d", len(s.messages), backlog)
		}
	}
}
