package node

import (
	"testing"

	"github.com/cairnmq/cairn/event"
)

// Some events carry a node as text. Package event renders it without the
// NodeID type, which it cannot import, so it must render it as NodeID
// does or traces would name nodes two ways.
func TestEventsNameNodesAsNodeIDDoes(t *testing.T) {
	for _, id := range []NodeID{1, 7, 12, 1<<32 - 1} {
		if got, want := event.NodeName(uint32(id)), id.String(); got != want {
			t.Errorf("event.NodeName(%d) = %q, NodeID.String = %q", uint32(id), got, want)
		}
	}
}
