package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cairnmq/cairn/client"
)

// Membership commands. The metadata records the cluster's members; a
// node joins as a learner once an admin adds it, and leaves once its
// removal has moved every queue replica it held (see docs/membership.md).

const (
	addNodeUsage    = "usage: cairn cluster add-node --id N --addr HOST:PORT [--client-addr HOST:PORT] [--http-addr HOST:PORT]"
	removeNodeUsage = "usage: cairn cluster remove-node N [--wait DURATION]"
)

// removeWaitDefault is how long remove-node waits by default for the
// node to leave: each of its replicas is rebuilt on another node, which
// takes as long as copying that queue.
const removeWaitDefault = 10 * time.Minute

// removePoll is how often remove-node reads the member list meanwhile.
const removePoll = 500 * time.Millisecond

// clusterMembers prints the member list as the metadata records it.
func clusterMembers(args []string, e env) int {
	fs, c := newFlags("cluster members", e)
	if pos, err := parse(fs, args); err != nil || len(pos) != 0 {
		fmt.Fprintln(e.stderr, "usage: cairn cluster members")
		return exitUsage
	}
	return c.withClient(e, func(ctx context.Context, cl *client.Client) int {
		members, leader, err := cl.Members(ctx)
		if err != nil {
			return failure(e, "reading the members", err)
		}
		printMembers(e.stdout, members, leader)
		return exitOK
	})
}

// printMembers prints one row per member. A founding member of a cluster
// that recorded no addresses shows "(configured)": the nodes' own
// configurations hold its address.
func printMembers(w io.Writer, members []client.Member, leader uint32) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDRESS\tROLE\tLEAVING\tDOWN\tREPLICAS")
	for _, m := range members {
		addr := m.Addr
		if addr == "" {
			addr = "(configured)"
		}
		fmt.Fprintf(tw, "n%d\t%s\t%s\t%s\t%s\t%d\n", m.ID, addr, memberRole(m, leader), yesNo(m.Leaving), yesNo(m.Down), m.Replicas)
	}
	tw.Flush()
	if leader == 0 {
		fmt.Fprintln(w, "no metadata leader is known to the node that answered")
	}
}

// memberRole names a member's seat in the metadata group.
func memberRole(m client.Member, leader uint32) string {
	switch {
	case m.ID == leader:
		return "voter (leader)"
	case m.Voter:
		return "voter"
	}
	return "learner"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// clusterAddNode admits a node to the cluster as a learner.
func clusterAddNode(args []string, e env) int {
	fs, c := newFlags("cluster add-node", e)
	idFlag := fs.String("id", "", "the new node's ID (above every ID the cluster has used)")
	addr := fs.String("addr", "", "where the other nodes reach the new node's peer port (HOST:PORT)")
	clientAddr := fs.String("client-addr", "", "where clients reach the new node's client port (HOST:PORT); without it, clients cannot follow a queue the node comes to own")
	httpAddr := fs.String("http-addr", "", "where tools reach the new node's status and metrics port (HOST:PORT)")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 0 || *idFlag == "" || *addr == "" {
		fmt.Fprintln(e.stderr, addNodeUsage)
		return exitUsage
	}
	id, err := parseNodeID(*idFlag)
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn: --id: %v\n", err)
		return exitUsage
	}
	if host, port, err := net.SplitHostPort(*addr); err != nil || host == "" || port == "" || port == "0" {
		fmt.Fprintf(e.stderr, "cairn: --addr %q: want HOST:PORT, the address the node's peer port listens on\n", *addr)
		return exitUsage
	}
	c.admin = true
	return c.withClient(e, func(ctx context.Context, cl *client.Client) int {
		if err := cl.AddNode(ctx, client.NewNode{ID: id, PeerAddr: *addr, ClientAddr: *clientAddr, HTTPAddr: *httpAddr}); err != nil {
			return failure(e, fmt.Sprintf("adding n%d", id), err)
		}
		fmt.Fprintf(e.stdout, "added n%d at %s as a learner; it receives the metadata once it runs with join = true\n", id, *addr)
		return exitOK
	})
}

// clusterRemoveNode retires a node and, unless --wait is 0, waits until
// it has left the member list, printing its progress.
func clusterRemoveNode(args []string, e env) int {
	fs, c := newFlags("cluster remove-node", e)
	wait := fs.Duration("wait", removeWaitDefault, "how long to wait for the node to leave; 0: only mark it leaving")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 || *wait < 0 {
		fmt.Fprintln(e.stderr, removeNodeUsage)
		return exitUsage
	}
	id, err := parseNodeID(pos[0])
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn: %v\n%s\n", err, removeNodeUsage)
		return exitUsage
	}
	c.admin = true
	ctx, cancel := c.context()
	defer cancel()
	cl, err := c.dial(ctx)
	if err != nil {
		return failure(e, "connecting", err)
	}
	defer cl.Close()
	if notMember(ctx, e, cl, id) {
		return exitOK
	}
	if err := cl.RemoveNode(ctx, id); err != nil {
		// A node whose list lagged may have said it was still a member.
		if notMember(ctx, e, cl, id) {
			return exitOK
		}
		return failure(e, fmt.Sprintf("removing n%d", id), err)
	}
	fmt.Fprintf(e.stdout, "n%d is leaving: its queues move to other nodes\n", id)
	if *wait == 0 {
		return exitOK
	}
	watcher, err := c.dialOthers(id, cl.Nodes())
	if err != nil {
		return failure(e, "connecting to the nodes that stay", err)
	}
	defer watcher.Close()
	return awaitRemoval(e, watcher, id, *wait, c.timeout)
}

// notMember reports whether the member list leaves node id out, and then
// says so with the list: asking again after a removal finished is not an
// error, and a mistyped ID shows in the list.
func notMember(ctx context.Context, e env, cl *client.Client, id uint32) bool {
	members, leader, err := cl.Members(ctx)
	if err != nil || slices.ContainsFunc(members, func(m client.Member) bool { return m.ID == id }) {
		return false
	}
	fmt.Fprintf(e.stdout, "n%d is not a member: nothing to remove\n", id)
	printMembers(e.stdout, members, leader)
	return true
}

// dialOthers connects to every node but id. A removed node is not told
// that it left (the metadata group stops sending to it), so only the
// others can say it is gone.
func (c *conn) dialOthers(id uint32, nodes []client.NodeInfo) (*client.Client, error) {
	var addrs []string
	for _, n := range nodes {
		if n.ID != id && n.Addr != "" {
			addrs = append(addrs, n.Addr)
		}
	}
	others := *c
	if len(addrs) > 0 {
		others.addrs = strings.Join(addrs, ",")
	}
	ctx, cancel := c.context()
	defer cancel()
	return others.dial(ctx)
}

// awaitRemoval reads the member list until node id is gone from it,
// printing each change in its progress, for at most wait.
func awaitRemoval(e env, cl *client.Client, id uint32, wait, each time.Duration) int {
	start := time.Now()
	deadline := start.Add(wait)
	last := ""
	for {
		ctx, cancel := context.WithTimeout(context.Background(), min(each, max(time.Until(deadline), time.Second)))
		members, _, err := cl.Members(ctx)
		cancel()
		now := ""
		switch i := slices.IndexFunc(members, func(m client.Member) bool { return m.ID == id }); {
		case err != nil:
			now = "the member list cannot be read: " + err.Error()
		case i < 0:
			fmt.Fprintf(e.stdout, "n%d has left the cluster (%v); it may be stopped\n", id, time.Since(start).Round(time.Millisecond))
			return exitOK
		default:
			now = removalProgress(members[i])
		}
		if now != last {
			fmt.Fprintf(e.stdout, "n%d: %s\n", id, now)
			last = now
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(e.stderr, "cairn: n%d is still a member after %v (%s); the removal goes on: run cairn cluster members to follow it\n", id, wait, last)
			return exitFailed
		}
		time.Sleep(removePoll)
	}
}

// removalProgress describes where a leaving member's removal stands.
func removalProgress(m client.Member) string {
	role := "learner"
	if m.Voter {
		role = "voter"
	}
	left := strconv.Itoa(m.Replicas) + " replicas left"
	if m.Replicas == 1 {
		left = "1 replica left"
	}
	parts := []string{left, role}
	if m.Replicas == 0 && m.Voter {
		parts = append(parts, "its vote moves to another node before it leaves the metadata group")
	}
	if m.Down {
		parts = append(parts, "down")
	}
	if !m.Leaving {
		parts = append(parts, "not marked leaving")
	}
	return strings.Join(parts, ", ")
}

// rebalanceUsage is the rebalance command's usage line.
const rebalanceUsage = "usage: cairn cluster rebalance"

// clusterRebalance starts spreading the existing queues' replicas over
// the members; the metadata leader moves them one at a time and ends the
// rebalance by itself. It prints the member list as it stands.
func clusterRebalance(args []string, e env) int {
	fs, c := newFlags("cluster rebalance", e)
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 0 {
		fmt.Fprintln(e.stderr, rebalanceUsage)
		return exitUsage
	}
	c.admin = true
	return c.withClient(e, func(ctx context.Context, cl *client.Client) int {
		if err := cl.Rebalance(ctx); err != nil {
			return failure(e, "starting a rebalance", err)
		}
		fmt.Fprintln(e.stdout, "rebalance started: replicas move one at a time; `cairn cluster members` shows the counts")
		if members, leader, err := cl.Members(ctx); err == nil {
			printMembers(e.stdout, members, leader)
		}
		return exitOK
	})
}
