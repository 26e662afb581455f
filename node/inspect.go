package node

import (
	"errors"
	iofs "io/fs"
	"math"
	"slices"
	"time"

	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// LogEntry is a payload-free view of one queue log record, for checkers
// and operators.
type LogEntry struct {
	Index uint64
	Type  string
	Epoch uint64
	ID    wire.MessageID // publish and settle records
	// More lists the IDs after the first that one settle record settles
	// (the acks an owner took in one turn); nil for every other record.
	More []wire.MessageID
	// At is the owner's stamp on a stamped record, Unix nanoseconds;
	// zero on records written before stamps and on other kinds.
	At int64
	// Window is the deduplication window a stamped epoch marker sets;
	// zero on every other record.
	Window time.Duration
	// Through is the last index whose messages a purge record settles;
	// zero on every other record.
	Through uint64
}

// ReplicaDump is what a replica's storage holds.
type ReplicaDump struct {
	Queue       string
	Incarnation uint64
	Epoch       uint64 // the replica's persisted epoch
	Entries     []LogEntry
	Digest      storage.Digest // history digest after the last entry
	Err         error          // why the replica could not be read, if it could not
	// Checkpoint is the replica's checkpoint, if it has one: the log's
	// entries then start at or before its cut plus one.
	Checkpoint *CheckpointDump
}

// CheckpointDump is what a replica's checkpoint holds, payload-free.
type CheckpointDump struct {
	Cut, CutEpoch uint64
	Installed     bool
	StateDigest   [32]byte
	// Live lists the unsettled messages at the cut, in publish order;
	// Published every ID ever published and Settled every ID settled by
	// then, in ID order.
	Live, Published, Settled []wire.MessageID
	// Window is the deduplication window in force at the cut, set by the
	// latest epoch marker before it (zero: none stamped).
	Window time.Duration
}

var recordNames = map[storage.RecordType]string{
	recordCreate: "create", recordPublish: "publish", recordSettle: "settle",
	recordPromote: "promote", recordDelete: "delete", recordEpochMark: "epoch-mark",
	recordPublishAt: "publish", recordSettleAt: "settle", recordEpochMarkAt: "epoch-mark",
	recordSettles: "settle", recordDeadLetter: "dead-letter", recordPurge: "purge",
	recordMovedIn: "publish",
}

// IDs lists every message the entry names: a publish's or a dead-letter
// record's, or each one a settle record settles.
func (e LogEntry) IDs() []wire.MessageID {
	if e.Type != "publish" && e.Type != "settle" && e.Type != "dead-letter" {
		return nil
	}
	return append([]wire.MessageID{e.ID}, e.More...)
}

// DumpReplicas reads every queue replica under dataDir on fs. Opening a
// log may repair a torn tail on disk, so fs should be a copy (a crash
// clone) when the node that owns it is still running.
func DumpReplicas(fs vfs.FS, dataDir string, pageRecords, pageBytes int) []ReplicaDump {
	root := fs.PathJoin(dataDir, queuesDir)
	names, err := fs.List(root)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	slices.Sort(names)
	var out []ReplicaDump
	for _, dir := range names {
		name, inc, ok := ParseReplicaDir(dir)
		if !ok {
			continue
		}
		d := dumpReplica(fs, fs.PathJoin(root, dir), name, pageRecords, pageBytes)
		d.Incarnation = inc
		out = append(out, d)
	}
	return out
}

// DumpReplica reads one queue replica, incarnation inc of queue, under
// dataDir on fs, as DumpReplicas does; ok is false when fs holds none.
// A checker that asks about one replica while the run goes on reads only
// that one.
func DumpReplica(fs vfs.FS, dataDir, queue string, inc uint64, pageRecords, pageBytes int) (d ReplicaDump, ok bool) {
	return dumpOne(fs, dataDir, queue, inc, (*storage.Log).FirstIndex, pageRecords, pageBytes)
}

// DumpReplicaTail is DumpReplica with only the last entry of the log in
// Entries (none if the log is empty): a checker that asks how far a
// replica reaches does not decode its whole history. Opening the log
// verifies every frame all the same, so a damaged log fails here as it
// does in DumpReplica.
func DumpReplicaTail(fs vfs.FS, dataDir, queue string, inc uint64) (d ReplicaDump, ok bool) {
	last := func(l *storage.Log) uint64 { return max(l.FirstIndex(), l.LastIndex()) }
	return dumpOne(fs, dataDir, queue, inc, last, 1, math.MaxInt32)
}

// dumpOne reads incarnation inc of queue under dataDir, its log from the
// index from picks on; ok is false when fs holds no such replica.
func dumpOne(fs vfs.FS, dataDir, queue string, inc uint64, from func(*storage.Log) uint64, pageRecords, pageBytes int) (d ReplicaDump, ok bool) {
	dir := fs.PathJoin(dataDir, queuesDir, replicaDirName(queue, inc))
	if _, err := fs.Stat(dir); err != nil {
		return ReplicaDump{}, false
	}
	d = readReplica(fs, dir, queue, from, pageRecords, pageBytes)
	d.Incarnation = inc
	return d, true
}

type inertHost struct{}

func (inertHost) Sync(vfs.File, func(error)) {}
func (inertHost) Boundary(string)            {}

func dumpReplica(fs vfs.FS, dir, name string, pageRecords, pageBytes int) ReplicaDump {
	return readReplica(fs, dir, name, (*storage.Log).FirstIndex, pageRecords, pageBytes)
}

// readReplica reads a replica's state, checkpoint and log from the index
// from picks on.
func readReplica(fs vfs.FS, dir, name string, from func(*storage.Log) uint64, pageRecords, pageBytes int) ReplicaDump {
	d := ReplicaDump{Queue: name}
	if _, data, err := storage.OpenStateFile(fs, dir, "replica", inertHost{}); err != nil {
		d.Err = err
		return d
	} else if len(data) >= replicaStateV1Size {
		d.Epoch = wire.NewDecoder(data[24:]).Uint64()
	}
	if d.Checkpoint, d.Err = dumpCheckpoint(fs, dir, name); d.Err != nil {
		return d
	}
	l, err := storage.Open(fs, fs.PathJoin(dir, "log"), inertHost{}, storage.Options{})
	if err != nil {
		d.Err = err
		return d
	}
	defer l.Close()
	d.Digest = l.Digest()
	rd := l.NewReader(from(l))
	defer rd.Close()
	for {
		page, err := rd.Next(math.MaxUint64, pageRecords, pageBytes)
		if err != nil {
			d.Err = err
			return d
		}
		if len(page) == 0 {
			return d
		}
		for _, rec := range page {
			r, err := decodeRecord(rec.Type, rec.Body)
			if err != nil {
				d.Err = err
				return d
			}
			e := LogEntry{Index: rec.Index, Type: recordNames[rec.Type], Epoch: r.epoch, ID: r.id, At: r.at, Window: time.Duration(r.window), Through: r.through}
			if len(r.ids) > 0 {
				e.ID = r.ids[0]
			}
			if len(r.ids) > 1 {
				e.More = r.ids[1:]
			}
			d.Entries = append(d.Entries, e)
		}
	}
}

// dumpCheckpoint reads a replica's checkpoint, if it has one.
func dumpCheckpoint(fs vfs.FS, dir, name string) (*CheckpointDump, error) {
	_, data, err := storage.OpenSizedStateFile(fs, dir, checkpointFile, inertHost{}, maxCheckpointSize)
	if err != nil || data == nil {
		return nil, err
	}
	c, err := decodeCheckpoint(data)
	if err != nil {
		return nil, err
	}
	var window func(int) (windowList, error)
	if c.journaled {
		j, err := openJournal(fs, dir, inertHost{}, journalSegmentMax, nil)
		if err != nil {
			return nil, err
		}
		defer j.log.Close()
		window = func(n int) (windowList, error) { return j.read(c.journalFrom, n) }
	}
	s, err := decodeState(name, c.state, window)
	if err == nil {
		err = s.checkWindow()
	}
	if err != nil {
		return nil, err
	}
	out := &CheckpointDump{Cut: c.cut, CutEpoch: c.cutEpoch, Installed: c.installed, StateDigest: stateDigest(s), Window: time.Duration(s.window)}
	for _, m := range sortedMessages(s) {
		out.Live = append(out.Live, m.id)
	}
	out.Published = s.known.ids(false)
	out.Settled = s.known.ids(true)
	return out, nil
}
