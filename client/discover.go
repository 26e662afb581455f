package client

import (
	"log/slog"
	"time"

	"github.com/cairnmq/cairn/client/core"
)

// learnNodes asks the cluster for its member list when a redirect names a
// node this client was never told of: one that joined after Dial. One
// question at a time; the operation that met the unknown node is retried
// by the core meanwhile, and follows the redirect once the node is known.
func (c *Client) learnNodes(now time.Time) {
	if c.learning != 0 {
		return
	}
	c.learning = c.core.MemberList(now)
}

// onMembersLearned adds every member with a client address this client
// did not know. A member without one (a founding member the client's
// first node does not list, or a node added without --client-addr)
// stays unreachable, as before.
func (c *Client) onMembersLearned(e core.Event) {
	c.learning = 0
	if e.Outcome != core.OutcomeOK {
		return
	}
	for _, m := range e.Members {
		if m.ClientAddr == "" || c.nodes[m.ID] != nil {
			continue
		}
		c.nodes[m.ID] = &nodeEntry{id: m.ID, addr: m.ClientAddr}
		c.opts.Logger.Debug("learned a node", slog.Uint64("node", uint64(m.ID)), slog.String("addr", m.ClientAddr))
	}
}
