package node

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	"github.com/cairnmq/cairn/storage"
)

// CheckpointStateMatches reports, for tests, whether the state n keeps in
// memory as the base of queue's next checkpoint build is its checkpoint's
// state with the log's records since applied: the same encoding, the same
// deduplication sets and the same history digest as the checkpoint decoded
// from disk and rolled forward record by record, and at the cut itself
// the digest the receipts vouched for. A new owner serves from that state
// instead of decoding the checkpoint, so the two must never differ. With
// no checkpoint yet, the base is the empty state rolled forward. kept
// says whether a state was in memory to compare.
func CheckpointStateMatches(n *Node, queue string) (kept bool, err error) {
	r := n.queues[queue]
	if r == nil || r.ckptState == nil {
		return false, nil
	}
	s := r.ckptState
	s.fillMaps(-1)
	if s.applied < r.ckpt.cut || s.applied > r.commitKnown {
		return true, fmt.Errorf("the state in memory is at %d, outside the checkpoint at %d and the known commit %d", s.applied, r.ckpt.cut, r.commitKnown)
	}
	if d := stateDigest(s); r.ckpt.cut > 0 && s.applied == r.ckpt.cut && d != r.ckpt.stateDigest {
		return true, fmt.Errorf("the state in memory has digest %x, the checkpoint %x", d[:8], r.ckpt.stateDigest[:8])
	}
	decoded, err := r.baseState()
	if err != nil {
		return true, err
	}
	decoded.keepSum = true
	digest := r.ckpt.digest
	if r.ckpt.cut == 0 {
		digest = r.log.BaseDigest()
	}
	rd := r.log.NewReader(r.ckpt.cut + 1)
	defer rd.Close()
	for decoded.applied < s.applied {
		page, err := rd.Next(s.applied, 1024, 1<<20)
		if err != nil || len(page) == 0 {
			return true, fmt.Errorf("reading the log after the checkpoint at %d: %v (%d records)", decoded.applied, err, len(page))
		}
		for _, rec := range page {
			dec, err := decodeRecord(rec.Type, rec.Body)
			if err != nil {
				return true, err
			}
			decoded.apply(rec.Index, dec)
			digest = digest.Next(rec.Index, rec.Type, rec.Body)
		}
	}
	if digest != r.ckptStateDigest {
		return true, fmt.Errorf("the state in memory at %d keeps history digest %x, the log's is %x", s.applied, r.ckptStateDigest[:8], digest[:8])
	}
	if !bytes.Equal(encodeState(s), encodeState(decoded)) {
		return true, fmt.Errorf("the state in memory and the decoded checkpoint rolled to %d encode differently", s.applied)
	}
	// The deduplication sets are indexes the encoding leaves out (it
	// lists the window's entries); a serving owner answers retries from
	// them, so they must agree too.
	if !s.known.equal(&decoded.known) {
		return true, fmt.Errorf("the state in memory remembers %d published and %d settled IDs, the decoded checkpoint %d and %d",
			s.known.published, s.known.settled, decoded.known.published, decoded.known.settled)
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

// PumpTurnMax is how many deliveries one pump hands out at most.
const PumpTurnMax = pumpTurnMax

// BaseFilling reports, for tests, whether the base n keeps for queue's
// next checkpoint build is a copy whose ID maps are still being filled.
func BaseFilling(n *Node, queue string) bool {
	r := n.queues[queue]
	return r != nil && r.ckptState != nil && r.ckptState.filling
}

// BuildUnderWay reports, for tests, whether n is building queue's next
// checkpoint.
func BuildUnderWay(n *Node, queue string) bool {
	r := n.queues[queue]
	return r != nil && r.build != nil
}

// BaseApplied reports, for tests, the last index the base of n's next
// build of queue has applied, and whether n keeps one.
func BaseApplied(n *Node, queue string) (uint64, bool) {
	r := n.queues[queue]
	if r == nil || r.ckptState == nil {
		return 0, false
	}
	return r.ckptState.applied, true
}

// Journaling reports, for tests, whether queue's replica on n is still
// appending a finished build's window to its journal, and how many of
// the window's entries are left to append.
func Journaling(n *Node, queue string) (pending bool, left uint64) {
	r := n.queues[queue]
	if r == nil || r.journaling == nil {
		return false, 0
	}
	job := r.journaling
	return true, job.base + uint64(job.window.len()) - job.from
}

// CheckpointAsked reports, for tests, the newest cut an owner asked n's
// replica of queue to build, the cut of its latest checkpoint, and
// whether a checkpoint is being written.
func CheckpointAsked(n *Node, queue string) (want, cut uint64, busy bool) {
	r := n.queues[queue]
	if r == nil {
		return 0, 0, false
	}
	return r.ckptWant, r.ckpt.cut, r.ckptBusy
}

// RestAfter and RestHeartbeat export the resting owner's timings (rest.go)
// for its stories.
const (
	RestAfter     = defaultRestAfter
	RestHeartbeat = restHeartbeat
	// RestHeartbeatAlone is the heartbeat of a resting owner without
	// subscribers.
	RestHeartbeatAlone = restHeartbeatAlone
	// DrainCheckpointMax is how many queues a drain may checkpoint first.
	DrainCheckpointMax = drainCheckpointMax
	// DrainHandoffsMax is how many handoffs a drain runs at once.
	DrainHandoffsMax = drainHandoffsMax
	// RecoveryPlansMax is how many recoveries the leader keeps under way
	// per candidate.
	RecoveryPlansMax = recoveryPlansMax
)

// BaseRolls reports, for tests, how many records queue's base on n
// applied from the replica's tail of decoded records and how many it
// read back from the log.
func BaseRolls(n *Node, queue string) (fromTail, fromLog uint64) {
	r := n.queues[queue]
	return r.rolled.fromTail, r.rolled.fromLog
}

// MetaProgress returns, for tests, the metadata term n is in and, when n
// leads, how far it counts follower's log as matching its own.
func MetaProgress(n *Node, follower NodeID) (term, match uint64) {
	st := n.meta.rn.Status()
	return st.GetTerm(), st.Progress[uint64(follower)].Match
}

// FenceReplica fences queue's replica on n as damage found in its storage
// would, for tests that need the damage at a chosen moment.
func FenceReplica(n *Node, queue string) {
	if r := n.queues[queue]; r != nil {
		r.fence(fmt.Errorf("%w: planted by a test", storage.ErrCorrupt))
	}
}

// SyncAtOnce is a storage host whose syncs complete within the call: the
// external tests write files as an earlier version of the node would
// have left them.
type SyncAtOnce = syncAtOnce
