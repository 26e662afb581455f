package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
)

// TestProcessSevenNodesGrowAndShrinkUnderTraffic grows a five-node
// cluster to seven and shrinks it back to five while a majority queue
// carries steady traffic: nodes 6 and 7 join as learners (five voters
// are all the group wants), then the queue's owner and another founder
// are removed at once. Their seats go to the learners, so the group ends
// with five voters, none of the removed; every confirmed publish is
// delivered (RPO 0) and none fails.
func TestProcessSevenNodesGrowAndShrinkUnderTraffic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	mt := startMembershipTraffic(t, ctx, 5, 7)
	defer mt.close()
	pc, admin, addrs := mt.pc, mt.admin, mt.addrs

	for _, id := range []int{6, 7} {
		a := addrs[id-1]
		pc.waitHealthy(pc.startJoiner(id, a, addrs[0]), serviceBound)
		if err := admin.AddNode(ctx, client.NewNode{ID: uint32(id), PeerAddr: a.peer, ClientAddr: a.client, HTTPAddr: a.http}); err != nil {
			t.Fatalf("adding n%d: %v", id, err)
		}
	}
	waitMembers(t, ctx, admin, "n6 and n7 listed as learners", func(ms []client.Member) bool {
		return len(ms) == 7 && !ms[5].Voter && !ms[6].Voter
	})

	owner := pc.owner(ctx, membersQueue)
	other := pc.nodes[0]
	if other == owner {
		other = pc.nodes[1]
	}
	removeStart := time.Now()
	for _, nd := range []*procNode{owner, other} {
		if err := admin.RemoveNode(ctx, uint32(nd.id)); err != nil {
			t.Fatalf("removing n%d: %v", nd.id, err)
		}
	}
	gone := func(ms []client.Member, id int) bool {
		return !slices.ContainsFunc(ms, func(m client.Member) bool { return m.ID == uint32(id) })
	}
	waitMembers(t, ctx, admin, fmt.Sprintf("n%d and n%d gone, five voters left", owner.id, other.id), func(ms []client.Member) bool {
		voters := 0
		for _, m := range ms {
			if m.Voter {
				voters++
			}
		}
		return gone(ms, owner.id) && gone(ms, other.id) && len(ms) == 5 && voters == 5
	})
	t.Logf("n%d (the owner) and n%d left %v after remove-node; the learners took their seats", owner.id, other.id, time.Since(removeStart).Round(time.Millisecond))
	checkSIGTERM(t, owner)
	checkSIGTERM(t, other)

	time.Sleep(time.Second) // traffic on the five nodes that stay
	mt.finish(t)
}
