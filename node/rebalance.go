package node

import (
	"slices"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
)

// Rebalance commands: an operator's request starts a rebalance, and the
// metadata leader ends it once the replicas are spread evenly. The flag
// lives in the metadata, so a new leader carries on where the old one
// stopped.
const (
	cmdRebalance   uint8 = 19
	cmdRebalanced  uint8 = 20
	rebalanceSlack       = 1 // the spread of replica counts a balanced cluster may keep
)

// onRebalance starts spreading the existing queues' replicas evenly over
// the members that stay, one replica move at a time.
func (n *Node) onRebalance(conn ConnID, m *wire.Rebalance) {
	n.meta.propose(command{kind: cmdRebalance}, 2*lifecycleTimeoutTicks, func(res result) {
		switch {
		case res.ok:
			n.reply(conn, m.ReqID, wire.StatusOK, "")
		case res.dropped:
			n.reply(conn, m.ReqID, wire.StatusUnavailable, res.detail)
		}
	})
}

// rebalanceStep runs on the metadata leader at each planning pass while a
// rebalance is under way. It moves one replica from the member that
// holds the most to the one that holds the fewest, through the
// replacement path (a recovery at the next epoch led by the owner), and
// waits for it to activate before the next; once the counts are within
// rebalanceSlack it ends the rebalance. Only members that are up and stay
// count, and an owner's own replica never moves: the owner leads the
// replacement, so a planned move (MoveOwner) must hand it on first.
func (n *Node) rebalanceStep() {
	s := n.meta.state
	if !s.rebalance || n.meta.rebalancing {
		return
	}
	var nodes []NodeID
	for _, id := range s.placeable() {
		if !s.down[id] {
			nodes = append(nodes, id)
		}
	}
	load := map[NodeID]int{}
	for _, name := range s.queueNames() {
		q := s.queues[name]
		if q.State == QueueDeleted {
			continue
		}
		if len(q.Prior) > 0 || q.State != QueueActive {
			return // a move or a recovery is under way: one at a time
		}
		for _, id := range q.Replicas {
			load[id]++
		}
	}
	if name, replicas := n.rebalanceMove(nodes, load); name != "" {
		q := s.queues[name]
		out := q.Replicas[slices.IndexFunc(q.Replicas, func(id NodeID) bool { return !slices.Contains(replicas, id) })]
		in := replicas[slices.IndexFunc(replicas, func(id NodeID) bool { return !slices.Contains(q.Replicas, id) })]
		n.emit(event.NewMetaPlanReplace(name, uint32(out), uint32(in), q.Epoch+1))
		n.proposeLife(name, command{kind: cmdStartRecovery, name: name, inc: q.Incarnation, epoch: q.Epoch, node: q.Owner, members: replicas})
		return
	}
	n.meta.rebalancing = true
	n.meta.propose(command{kind: cmdRebalanced}, lifecycleTimeoutTicks, func(result) { n.meta.rebalancing = false })
}

// rebalanceMove picks the next move: a queue on the most loaded node
// (not its owner) whose replica can go to the least loaded one, and the
// queue's new replica set; "" when the counts are within the slack or no
// queue can move.
func (n *Node) rebalanceMove(nodes []NodeID, load map[NodeID]int) (string, []NodeID) {
	if len(nodes) < 2 {
		return "", nil
	}
	byLoad := slices.Clone(nodes)
	slices.SortStableFunc(byLoad, func(a, b NodeID) int { return load[a] - load[b] })
	least, most := byLoad[0], byLoad[len(byLoad)-1]
	slack := rebalanceSlack
	if bugs.Active(bugs.RebalanceIgnoresSlack) {
		slack = 0 // planted: counts one apart move back and forth
	}
	if load[most]-load[least] <= slack {
		return "", nil
	}
	s := n.meta.state
	for _, name := range s.queueNames() {
		q := s.queues[name]
		if q.State != QueueActive || q.Policy == wire.PolicyOwnerOnly || q.Owner == most ||
			!slices.Contains(q.Replicas, most) || slices.Contains(q.Replicas, least) {
			continue
		}
		if slices.ContainsFunc(q.Replicas, func(id NodeID) bool { return s.down[id] }) {
			// A queue that lost a replica waits for its replacement. The
			// move's recovery would seal the lost replica too, so a queue
			// that needs every replica could not activate it until the
			// node came back, and nothing may be planned on top of a
			// pending move: the lost replica would stay unreplaced.
			continue
		}
		replicas := slices.Clone(q.Replicas)
		replicas[slices.Index(replicas, most)] = least
		return name, replicas
	}
	return "", nil
}
