package node

import (
	"fmt"

	"github.com/cairnmq/cairn/event"
)

// replicaRole is the part one queue replica plays on this node. A replica
// has exactly one role at a time, stored in replica.role and changed only
// by the become functions below, each of which checks that the transition
// is one of these:
//
//	preparing ──identity durable──▶ follower
//	follower  ──metadata names this node owner──▶ candidate
//	candidate ──epoch durable, or recovery activated──▶ owner
//	owner     ──a new plan names this node again──▶ candidate
//	candidate, owner ──a replica shows a newer epoch──▶ stale
//	stale     ──a new plan names this node again──▶ candidate
//	candidate, owner, stale ──metadata names another owner──▶ follower
//	any       ──storage found damaged──▶ fenced
//	any       ──metadata deletes or replaces the replica──▶ retired
//
// Messages are handled by role (stepFollower, stepWriter in the handlers):
// a follower takes appends, seals and fetches; a candidate and an owner
// write in their own epoch and take replies; a stale owner confirms
// nothing and answers its clients "fenced"; a fenced or retired replica
// takes no part at all.
type replicaRole uint8

const (
	// rolePreparing: storage exists but its identity is not yet durable;
	// the replica takes no part in anything.
	rolePreparing replicaRole = iota
	// roleFollower: takes appends, seals and fetches from the writer of
	// its epoch.
	roleFollower
	// roleCandidate: the metadata names this node owner, and it is
	// recovering the queue's history or making its epoch durable; it
	// writes in its epoch but serves no client.
	roleCandidate
	// roleOwner: serves clients in its epoch.
	roleOwner
	// roleStale: was candidate or owner, and a replica showed it a newer
	// epoch; it may confirm nothing and tells its clients who owns the
	// queue now.
	roleStale
	// roleFenced: the replica's storage is damaged; it takes no part,
	// reports itself lost, and says why (replica.fencedErr).
	roleFenced
	// roleRetired: the metadata deleted the queue or replaced this
	// replica; nothing it holds matters to this process any more.
	roleRetired
)

var roleNames = [...]string{"preparing", "follower", "candidate", "owner", "stale", "fenced", "retired"}

// String names the role.
func (r replicaRole) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("role(%d)", r)
}

// roleTransitions lists, for each role, the roles it may become.
var roleTransitions = [...][]replicaRole{
	rolePreparing: {roleFollower, roleFenced, roleRetired},
	roleFollower:  {roleCandidate, roleFenced, roleRetired},
	roleCandidate: {roleCandidate, roleOwner, roleStale, roleFollower, roleFenced, roleRetired},
	roleOwner:     {roleCandidate, roleStale, roleFollower, roleFenced, roleRetired},
	roleStale:     {roleCandidate, roleFollower, roleFenced, roleRetired},
	roleFenced:    {roleRetired},
	roleRetired:   {},
}

// become moves the replica to role to, panicking on a transition the state
// machine does not have: in every build, an impossible transition is a
// bug to stop at, not a state to carry on in.
func (r *replica) become(to replicaRole, why string) {
	from := r.role
	for _, ok := range roleTransitions[from] {
		if ok == to {
			if from == roleOwner {
				// An owner stops delivering the moment it leaves the
				// role: a later recovery's hold may count from here.
				r.follow.leaseGrantedAt = r.n.leaseClock()
			}
			r.role = to
			r.n.rouse(r)
			r.n.emit(event.NewQueueRole(r.name, from.String(), to.String(), r.epoch, why))
			return
		}
	}
	panic(fmt.Sprintf("node: queue %s: no transition from %s to %s (%s)", r.name, from, to, why))
}

// becomePrepared ends preparation: the replica's identity is
// durable, and it may follow the writer of its epoch.
func (r *replica) becomePrepared() {
	if r.role == rolePreparing {
		r.become(roleFollower, "identity durable")
	}
}

// becomeCandidate gives the replica its owner side because the metadata
// names this node owner. The state an owner serves from is built later,
// once: by a recovery from the history it installs, or by an activation
// without recovery from the log. A stale owner side is dropped first: a
// new plan starts over. It reports false if the replica cannot take part
// (damage fences it).
func (r *replica) becomeCandidate(why string) bool {
	switch r.role {
	case roleCandidate, roleOwner:
		return true
	case roleFenced, roleRetired, rolePreparing:
		return false
	case roleStale:
		r.own = nil // stopped when it went stale; a new plan starts afresh
	}
	r.own = newOwnerState(r, nil)
	r.become(roleCandidate, why)
	return true
}

// becomeOwner starts serving in the replica's epoch.
func (r *replica) becomeOwner(why string) {
	if r.own == nil {
		panic(fmt.Sprintf("node: queue %s becoming owner without an owner side", r.name))
	}
	// Its silence counts from its quorum's latest acceptance, which may
	// precede this moment (quorum.go): never from later than that.
	r.own.servingFrom = r.n.leaseClock()
	if at, ok := r.own.quorumGrantAt(); ok {
		r.own.servingFrom = at
	}
	r.become(roleOwner, why)
	r.own.resumeMoves()
}

// becomeFollower drops the owner side: another node owns the queue now.
// Clients still waiting on this one are told it is fenced, and by whom.
func (r *replica) becomeFollower(owner NodeID) {
	switch r.role {
	case roleFollower, rolePreparing, roleFenced, roleRetired:
		return
	}
	r.follow.steppedDown, r.follow.steppedCounts = 0, nil
	if r.serving() && r.own.holdOver() {
		r.follow.steppedDown, r.follow.steppedCounts = r.epoch, r.own.deliveryCounts()
	}
	r.own.stop(owner)
	r.own = nil
	r.become(roleFollower, fmt.Sprintf("%s writes in epoch %d", owner, r.epoch))
}

// fence takes a replica whose storage is damaged out of everything.
func (r *replica) fence(err error) {
	if r.role == roleFenced || r.role == roleRetired {
		return
	}
	r.fencedErr = err
	r.become(roleFenced, err.Error())
	r.n.emit(event.NewQueueFenced(r.name, err))
}

// writer reports whether the replica writes in its own epoch: a candidate
// or an owner.
func (r *replica) writer() bool { return r.role == roleCandidate || r.role == roleOwner }

// serving reports whether the replica serves clients.
func (r *replica) serving() bool { return r.role == roleOwner }

// hasOwnerSide reports whether the replica keeps an owner side: as a
// candidate, an owner, or a stale owner still answering its clients.
func (r *replica) hasOwnerSide() bool {
	return r.role == roleCandidate || r.role == roleOwner || r.role == roleStale
}

// present reports whether the replica takes part in replication and
// recovery at all: prepared, and neither fenced nor retired.
func (r *replica) present() bool {
	return r.role != rolePreparing && r.role != roleFenced && r.role != roleRetired
}
