package node_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A voter cut off while two nodes are admitted and promoted hears of
// the four configuration changes at once when it is back: one append
// carries them all, and a commit that covers all but the last. Its log
// lands, the hard state with that commit does not before it crashes.
// Restarted, it must still apply every change but the last before it
// hears from anyone: the leader appended each change only once it had
// applied the one before, so all but the last are committed. Left at the
// old commit, its configuration would be several changes behind its
// log's, and its quorums need not meet the current voters' (seed 123899:
// a member restarted two changes behind, {1,2,3} instead of {1,3,4}, was
// elected by itself and the demoted n2 and committed an entry 102 of its
// own over the one n3 and n4 had committed; it could never follow the
// metadata again, and a queue handed to it went unserved).
func TestARestartedVoterAppliesAConfigurationChangeALaterOneProvesCommitted(t *testing.T) {
	c := newCluster(t)
	lead := c.leader()
	f := node.NodeID(1)
	if f == lead {
		f = 2
	}
	c.cut[f] = true
	for i, id := range []node.NodeID{4, 5} {
		c.startJoiner(id)
		req := uint64(71 + i)
		c.request(lead, 9, &wire.AddNode{ReqID: req, Node: uint32(id), Addr: fmt.Sprintf("n%d:7400", id)})
		c.advance(time.Second)
		c.mustReply(req, wire.StatusOK)
	}
	changes := 0
	for _, e := range c.emitted {
		if e.Name == event.MetaMembership && e.node == lead {
			changes++
		}
	}
	if changes < 2 {
		t.Fatalf("the leader applied %d configuration changes while %s was cut off, want 2 or more; events:\n%v", changes, f, c.events)
	}
	if c.saw(event.MetaMembership, by(f)) {
		t.Fatalf("%s applied a configuration change while cut off", f)
	}

	// Back, f appends the changes; its hard state does not land.
	c.hold = func(s pendingSync) bool {
		st, err := s.f.Stat()
		return s.m.id == f && err == nil && st.Name() == "hardstate.tmp"
	}
	delete(c.cut, f)
	c.advance(500 * time.Millisecond)
	c.node(f).crash()
	c.hold = nil

	// Restarted, f hears from nobody: its messages and everyone else's
	// wait.
	from := len(c.emitted)
	c.node(f).start()
	for c.completeSyncs(func(m *member) bool { return m.id == f })+c.fireDue() > 0 {
	}
	applied := 0
	var since []string
	for _, e := range c.emitted[from:] {
		since = append(since, fmt.Sprintf("%s %s", e.node, e.Event))
		if e.Name == event.MetaMembership && e.node == f {
			applied++
		}
	}
	if applied < changes-1 {
		t.Fatalf("restarted %s applied %d of the %d configuration changes in its log, want at least %d: its configuration is more than one change behind; events since the restart:\n%v",
			f, applied, changes, changes-1, since)
	}
	c.settle()
	c.advance(2 * time.Second)
	if got := describeMembers(c.members(f, 80).Members); got != "1v 2v 3v 4v 5v" {
		t.Fatalf("after the restart %s lists the members as %q", f, got)
	}
}
