package node

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
)

// CheckpointStateMatches reports, for tests, whether the state n's last
// checkpoint build of queue left in memory is the state its checkpoint
// holds: the digest the receipts vouched for, and the same encoding as
// the checkpoint decoded from disk. A new owner serves from that state
// instead of decoding the checkpoint, so the two must never differ.
// kept says whether a state was in memory to compare.
func CheckpointStateMatches(n *Node, queue string) (kept bool, err error) {
	r := n.queues[queue]
	if r == nil || r.ckptState == nil || r.ckpt.cut == 0 {
		return false, nil
	}
	s := r.ckptState
	if s.applied != r.ckpt.cut {
		return true, fmt.Errorf("the state in memory is at %d, the checkpoint at %d", s.applied, r.ckpt.cut)
	}
	if d := stateDigest(s); d != r.ckpt.stateDigest {
		return true, fmt.Errorf("the state in memory has digest %x, the checkpoint %x", d[:8], r.ckpt.stateDigest[:8])
	}
	decoded, err := r.baseState()
	if err != nil {
		return true, err
	}
	if !bytes.Equal(encodeState(s), encodeState(decoded)) {
		return true, fmt.Errorf("the state in memory and the decoded checkpoint encode differently")
	}
	// The deduplication sets are indexes the encoding leaves out (it
	// lists the window's entries); a serving owner answers retries from
	// them, so they must agree too.
	if !maps.Equal(s.published, decoded.published) || !maps.Equal(s.settled, decoded.settled) {
		return true, fmt.Errorf("the state in memory remembers %d published and %d settled IDs, the decoded checkpoint %d and %d",
			len(s.published), len(s.settled), len(decoded.published), len(decoded.settled))
	}
	return true, nil
}

// MovedInRemembered counts, for tests, the moves queue's owner on n
// remembers from its sources (movedin.go); -1 if n does not own it.
func MovedInRemembered(n *Node, queue string) int {
	r := n.queues[queue]
	if r == nil || r.own == nil {
		return -1
	}
	return r.own.state.movedInCount()
}

// movedInCount counts the moves every ledger of s remembers.
func (s *queueState) movedInCount() int {
	n := 0
	for _, src := range slices.SortedFunc(maps.Keys(s.movedIn), compareMoveSources) {
		n += len(s.movedIn[src].moves)
	}
	return n
}

// LostReplicas lists, for tests, the replicas of queue that the metadata
// n has applied holds lost for damaged storage.
func LostReplicas(n *Node, queue string) []NodeID {
	q := n.meta.state.queues[queue]
	if q == nil {
		return nil
	}
	return q.Lost
}
