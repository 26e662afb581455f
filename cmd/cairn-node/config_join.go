package main

import (
	"errors"
	"fmt"
)

// validateReplication checks replication against the peers the file
// lists. A founding node lists the whole cluster, so replication may not
// exceed it; a joining node lists only itself and its seeds, and the
// cluster it joins has the nodes, so only the range is checked.
func (fc *fileConfig) validateReplication() error {
	if fc.Replication < 0 || (!fc.Join && fc.Replication > len(fc.Peers)) {
		return fmt.Errorf("config: replication %d: must be between 1 and the number of peers (%d)", fc.Replication, len(fc.Peers))
	}
	return nil
}

// validateJoin checks what a joining node (join = true) needs: its own
// entry in peers and at least one other, a seed, naming a node of the
// running cluster. The node's ID must be one the cluster never used;
// the cluster refuses to add it otherwise (cairn cluster add-node says
// why). A data directory that already holds the node's metadata (it
// joined before and restarts) is fine: join then changes nothing.
func (fc *fileConfig) validateJoin() error {
	if !fc.Join {
		return nil
	}
	if len(fc.Peers) < 2 {
		return errors.New("config: join = true needs peers to list this node and at least one seed node of the running cluster")
	}
	return nil
}
