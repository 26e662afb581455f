package node_test

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A node started on a copy of another node's data directory refuses to
// start and says whose directory it is, instead of claiming raft entries
// and replicas it never held.
func TestANodeRefusesAnotherNodesDataDirectory(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 3)
	a, b := c.node(1), c.node(2)
	a.crash()
	a.fs = b.fs.CrashClone(vfsCfg)
	a.start()
	c.advance(time.Second)
	if !c.logged("n1 halted: the data directory \"\" belongs to node 2 of cluster \"\", but this is node 1") {
		t.Fatalf("n1 started on n2's data directory; events:\n%v", c.events)
	}
}

// A directory stamped for another cluster is refused the same way.
func TestANodeRefusesAnotherClustersDataDirectory(t *testing.T) {
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, SegmentSize: 4096, Cluster: "east"})
	m := c.node(3)
	m.crash()
	c.cfg.Cluster = "west"
	m.start()
	c.advance(time.Second)
	if !c.logged("n3 halted: the data directory \"\" belongs to node 3 of cluster \"east\", but this is node 3 of cluster \"west\"") {
		t.Fatalf("n3 started on another cluster's data directory; events:\n%v", c.events)
	}
}

// A node whose identity file reads back damaged refuses to start: with the
// stamp unreadable it cannot tell whose directory it is, and restamping it
// could let a misplaced directory pass as this node's.
func TestANodeRefusesADamagedIdentity(t *testing.T) {
	refusesIdentity(t, func(data []byte) []byte {
		data[len(data)-1] ^= 0x01
		return data
	}, "n1 halted: opening the data directory's identity: ")
}

// An identity file whose checksum holds but whose body is not an identity
// (written by another version, or by hand) is refused the same way.
func TestANodeRefusesAnIdentityItCannotRead(t *testing.T) {
	refusesIdentity(t, func([]byte) []byte {
		body := []byte{0xff, 0xff, 0xff}
		header := make([]byte, 16)
		copy(header, "cairnst1")
		binary.LittleEndian.PutUint32(header[8:12], uint32(len(body)))
		binary.LittleEndian.PutUint32(header[12:16], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
		return append(header, body...)
	}, "n1 halted: the data directory's identity is unreadable: ")
}

// refusesIdentity rewrites n1's identity file with rewrite while it is
// down, starts it, and requires it to halt with want.
func refusesIdentity(t *testing.T, rewrite func([]byte) []byte, want string) {
	t.Helper()
	c := newCluster(t)
	a := c.node(1)
	a.crash()
	path := a.fs.PathJoin("meta", "identity")
	writeFileT(t, a.fs, path, rewrite(readFileT(t, a.fs, path)))
	a.start()
	c.advance(time.Second)
	if !c.logged(want) {
		t.Fatalf("n1 started on a rewritten identity; want %q; events:\n%v", want, c.events)
	}
}

func readFileT(t *testing.T, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func writeFileT(t *testing.T, fs vfs.FS, path string, data []byte) {
	t.Helper()
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// A node given a data directory keeps every file under it: its disk
// holds other things too (in production, whatever else the volume holds),
// and a node whose files landed beside the directory would find none of
// them when started with it again.
func TestANodeKeepsItsFilesUnderItsDataDirectory(t *testing.T) {
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, SegmentSize: 4096, DataDir: "data"})
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 3)
	for _, id := range []node.NodeID{1, 2, 3} {
		fs := c.node(id).fs
		for _, name := range []string{"meta", "queues"} {
			if _, err := fs.Stat(fs.PathJoin("data", name)); err != nil {
				t.Errorf("n%d: no %s under its data directory: %v", id, name, err)
			}
			if _, err := fs.Stat(name); err == nil {
				t.Errorf("n%d: %s lies outside its data directory", id, name)
			}
		}
	}
}
