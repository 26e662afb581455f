package node

import (
	"fmt"
	"slices"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/node/recovery"
	"github.com/cairnmq/cairn/wire"
)

// The metadata's rules for a recovery plan that changes a queue's replica
// set: what a new set must keep of the old ones, and who may lead it.

// checkReplacement says why a plan's new replica set is not acceptable,
// or "": it keeps the size, holds the candidate (a member of the old set,
// or a prior member it swaps back in), does not stack on a pending
// replacement (unless it only swaps out replicas of the pending set that
// are damaged or held down, which a set that needs every replica could
// not activate without), and keeps a seal quorum of the old set, and of
// the prior set too when it stacks, so the recovery can still find every
// confirmed record and a member of both sets can lead it. A
// stacked plan leaves the prior set as it is: nothing activated in the
// pending set, so the seal still asks the prior set's quorums, which
// hold every confirmed record whichever pending member is swapped.
func checkReplacement(q *QueueMeta, c command, down map[NodeID]bool) string {
	kept := 0
	for _, m := range c.members {
		if slices.Contains(q.Replicas, m) {
			kept++
		}
	}
	dropsOnlyGone := !slices.ContainsFunc(q.Replicas, func(id NodeID) bool {
		return !slices.Contains(c.members, id) && !containsSorted(q.Lost, id) && !down[id]
	})
	switch {
	case len(q.Prior) > 0 && !dropsOnlyGone:
		return "a replacement is already pending"
	case len(c.members) != len(q.Replicas):
		return fmt.Sprintf("replica set of %d, not %d", len(c.members), len(q.Replicas))
	case !slices.Contains(c.members, c.node) || !slices.Contains(q.Replicas, c.node) && !swapsBack(q, c):
		return "candidate is not in both replica sets"
	case kept < recovery.SealQuorum(q.Policy, len(q.Replicas)) && !ownerSealsWithOutgoing(q, c, down):
		return fmt.Sprintf("keeps %d replicas, fewer than a seal quorum", kept)
	case !keepsPriorSealQuorum(q, c.members):
		return "keeps fewer than a seal quorum of the prior set"
	}
	return namedTwice(c.members)
}

// swapsBack reports whether plan c names as candidate a member of q's
// prior set that the pending set left out and c puts back in (see
// Node.swapBackSet): it holds the prior history, so it may lead the
// recovery from outside the set it replaces.
func swapsBack(q *QueueMeta, c command) bool {
	return len(q.Prior) > 0 && slices.Contains(q.Prior, c.node) && slices.Contains(c.members, c.node) && !containsSorted(q.Lost, c.node)
}

// keepsPriorSealQuorum reports whether members, proposed while a
// replacement of q is pending, keep a seal quorum of the prior set. Only
// a member of both sets can lead the pending recovery (it must hold the
// prior history), so a stacked plan that swaps prior members out one by
// one can leave a single one to lead it, and once that one is lost the
// queue has no candidate in the set: the replicas holding its confirmed
// records sit outside it, and nothing activates again (seed 876782 of
// the long sweep, a majority queue). Keeping a seal quorum keeps a
// candidate while any one replica is lost. A set that needs only one
// prior witness (the all policy) may still swap out every prior member
// but one, since it cannot activate without every member; should that
// one be lost, a prior member outside is swapped back in to lead
// (Node.swapBackSet).
func keepsPriorSealQuorum(q *QueueMeta, members []NodeID) bool {
	if len(q.Prior) == 0 || bugs.Active(bugs.StackDropsPriorQuorum) {
		return true // planted (the second condition): as before this rule
	}
	kept := 0
	for _, id := range q.Prior {
		if slices.Contains(members, id) {
			kept++
		}
	}
	return kept >= recovery.SealQuorum(q.Policy, len(q.Prior))
}

// ownerSealsWithOutgoing reports whether a replacement of an owner-only
// queue may keep fewer replicas than a seal quorum: its live owner leads
// it and every replica it swaps out is up and sound, so the seal, which
// asks the whole prior set, can reach them all. An owner-only queue's
// seal quorum is its whole set; without this a member that leaves
// holding one of its replicas could never hand it over, and would stay
// leaving for good. Should a swapped-out member fall meanwhile, the
// seal waits for it, as an owner-only queue waits for its owner.
func ownerSealsWithOutgoing(q *QueueMeta, c command, down map[NodeID]bool) bool {
	if q.Policy != wire.PolicyOwnerOnly || c.node != q.Owner || down[q.Owner] {
		return false
	}
	for _, id := range q.Replicas {
		if !slices.Contains(c.members, id) && (down[id] || containsSorted(q.Lost, id)) {
			return false
		}
	}
	return true
}

// namedTwice says which node a proposed replica set names twice, or "".
func namedTwice(members []NodeID) string {
	for i, m := range members {
		if slices.Contains(members[i+1:], m) {
			return fmt.Sprintf("%s named twice", m)
		}
	}
	return ""
}
