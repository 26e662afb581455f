package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/wire"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// longestName returns a valid queue name of the longest length that
// ends in i, so every one differs.
func longestName(i int) string {
	suffix := fmt.Sprintf("-%d", i)
	return strings.Repeat("q", wire.MaxQueueNameLen-len(suffix)) + suffix
}

// TestMetaSnapshotAtItsQueueLimitFitsTheFileAndAFrame fills the metadata
// with as many queues as it keeps, every name and dead-letter name as
// long as names may be and every node list of a five-replica queue full,
// in a cluster of nine members, and checks that the snapshot still fits
// the snapshot file and the raft message that sends it to a follower.
func TestMetaSnapshotAtItsQueueLimitFitsTheFileAndAFrame(t *testing.T) {
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	nodes := []NodeID{1, 2, 3, 4, 5, 6, 7, 8, 9}
	for _, id := range nodes {
		addr := strings.Repeat("a", 250)
		s.members = append(s.members, Member{ID: id, Addr: addr, ClientAddr: addr, HTTPAddr: addr})
	}
	five := nodes[:5]
	for i := range maxMetaQueues {
		s.queues[longestName(i)] = &QueueMeta{
			Name: longestName(i), Incarnation: 1 << 60, HistoryID: 1 << 60, SessionID: 1 << 60,
			Policy: wire.PolicyAll, Replicas: five, Owner: 5, OwnerProcess: 1 << 60, Epoch: 1 << 60,
			State: QueueActive, Prepared: five, Activated: five, CreatedBy: proposalID{9, 1 << 60},
			Prior: five, Lost: five, CheckpointCut: 1 << 60, DedupWindow: time.Hour,
			DeadLetter: longestName(i + maxMetaQueues), MaxDeliveries: 1 << 30,
		}
	}
	data := s.encode()
	m := &metaNode{logDir: "log.18446744073709551615"}
	snap := &pb.Snapshot{Data: data, Metadata: &pb.SnapshotMetadata{
		Index: new(uint64(1 << 60)), Term: new(uint64(1 << 60)), ConfState: confStateOf(s.members)}}
	if file := len(m.encodedSnapshot(snap)); file > metaSnapshotMax {
		t.Fatalf("the snapshot file of %d queues takes %d bytes, past its limit of %d", maxMetaQueues, file, metaSnapshotMax)
	}
	msg, err := proto.Marshal(&pb.Message{Type: pb.MessageType_MsgSnap.Enum(), To: new(uint64(9)), From: new(uint64(1)),
		Term: new(uint64(1 << 60)), Snapshot: snap})
	if err != nil {
		t.Fatal(err)
	}
	frame := wire.Encode(nil, &wire.Raft{Data: msg}) // panics past wire.MaxBodySize
	t.Logf("%d queues at their longest: state %d bytes, raft message %d, frame %d (file limit %d, frame body limit %d)",
		maxMetaQueues, len(data), len(msg), len(frame), metaSnapshotMax, wire.MaxBodySize)
}

// TestMetaRefusesAQueuePastItsLimitButReusesADeletedName: the queue that
// would make one entry too many is refused with a reason, and the name of
// a deleted queue can still be used again, since its entry is kept.
func TestMetaRefusesAQueuePastItsLimitButReusesADeletedName(t *testing.T) {
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	for i := range maxMetaQueues {
		name := fmt.Sprintf("q%d", i)
		s.queues[name] = &QueueMeta{Name: name, Replicas: []NodeID{1, 2, 3}, State: QueueActive}
	}
	s.queues["q7"].State = QueueDeleted
	res := applyAll(s, newQueueCmd("one-too-many"))
	if !res.refused || !strings.Contains(res.detail, "limit") {
		t.Fatalf("a queue past the limit: %+v, want refused with the limit named", res)
	}
	if _, ok := s.queues["one-too-many"]; ok {
		t.Fatal("the refused queue is in the metadata")
	}
	if res := applyAll(s, newQueueCmd("q7")); !res.ok {
		t.Fatalf("reusing a deleted queue's name at the limit: %+v", res)
	}
}
