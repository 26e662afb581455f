package node_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
)

// A configuration that would run a node wrongly is refused with an error
// that names what is wrong, and a sound one passes. The replication
// factor in particular must lie within the node list: a factor of zero
// would place queues nowhere, and one above the node count could never
// be met, except on a joining node, whose node list holds only the
// members it knows before the metadata's snapshot arrives.
func TestConfigValidateRefusesWhatCannotRun(t *testing.T) {
	sound := func() node.Config {
		return node.Config{
			ID: 1, Nodes: []node.NodeID{1, 2, 3}, Replicas: 3, Tick: 20 * time.Millisecond,
			Detection: node.DetectionPolicy{Mode: node.DetectHeartbeat, Interval: 100 * time.Millisecond, Grace: 300 * time.Millisecond},
		}
	}
	if err := sound().Validate(); err != nil {
		t.Fatalf("a sound configuration was refused: %v", err)
	}
	for _, factor := range []int{1, 2} {
		// Every factor from one to the node count can run: a single
		// replica is a queue without redundancy, not a mistake.
		c := sound()
		c.Replicas = factor
		if err := c.Validate(); err != nil {
			t.Fatalf("a replication factor of %d was refused: %v", factor, err)
		}
	}
	joining := sound()
	joining.Replicas, joining.Join = 5, true
	if err := joining.Validate(); err != nil {
		t.Fatalf("a joining node whose factor exceeds the nodes it knows was refused: %v", err)
	}
	many := make([]node.NodeID, 300)
	for i := range many {
		many[i] = node.NodeID(i + 1)
	}
	for _, tc := range []struct {
		name   string
		change func(*node.Config)
		want   string
	}{
		{"zero node ID", func(c *node.Config) { c.ID = 0 }, "non-zero"},
		{"ID outside the node list", func(c *node.Config) { c.ID = 4 }, "not in the node list"},
		{"replication factor zero", func(c *node.Config) { c.Replicas = 0 }, "replication factor 0"},
		{"replication factor negative", func(c *node.Config) { c.Replicas = -1 }, "replication factor -1"},
		{"replication factor above the nodes", func(c *node.Config) { c.Replicas = 4 }, "replication factor 4"},
		{"zero tick", func(c *node.Config) { c.Tick = 0 }, "tick"},
		{"deduplication window too short", func(c *node.Config) { c.DedupWindow = time.Nanosecond }, "deduplication window"},
		{"too many nodes", func(c *node.Config) { c.Nodes = many }, "at most"},
		{"unknown detection mode", func(c *node.Config) { c.Detection.Mode = 9 }, "detection mode"},
	} {
		c := sound()
		tc.change(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
}
