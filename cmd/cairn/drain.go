package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live/status"
)

const nodeDrainUsage = "usage: cairn node drain N [--drain DURATION]"

// nodeDrain moves every queue node N owns to another of its replicas,
// one at a time, so that N can be stopped without a failover. N keeps
// its replicas and serves as a follower; a failover may still pick it
// as an owner until it is stopped.
func nodeDrain(args []string, e env) int {
	fs, c := newFlags("node drain", e)
	drain := fs.Duration("drain", 0, "how long each owner waits for consumers to settle what they hold (0: the node's default, 5s)")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 {
		fmt.Fprintln(e.stderr, nodeDrainUsage)
		return exitUsage
	}
	from, err := parseNodeID(pos[0])
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn: %v\n%s\n", err, nodeDrainUsage)
		return exitUsage
	}
	if code, ok := checkDrain(e, *drain); !ok {
		return code
	}
	s, code := openHandoff(c, e, *drain)
	if s == nil {
		return code
	}
	defer s.cl.Close()
	if _, err := s.node(from); err != nil {
		fmt.Fprintf(e.stderr, "cairn: %v\n", err)
		return exitUsage
	}
	view, err := s.view()
	if err != nil {
		return failure(e, "reading the cluster's status", err)
	}
	owned := ownedBy(view, from)
	if len(owned) == 0 {
		fmt.Fprintf(e.stdout, "node n%d owns no queues; nothing to move\n", from)
		return exitOK
	}
	return s.drainQueues(e, view, from, owned)
}

// drainQueues moves each of owned off node from, then reads the status
// again to say what from still owns.
func (s *handoffSession) drainQueues(e env, view *status.Cluster, from uint32, owned []status.ClusterQueue) int {
	owns := ownerCounts(view)
	count, worst := 0, exitOK
	var failed, gone []string
	for _, q := range owned {
		to, err := pickTarget(view, q, from, owns)
		var m moved
		if err == nil {
			var target client.NodeInfo
			if target, err = s.node(to); err == nil {
				m, err = s.move(q.Name, target)
			}
		}
		if se := (*client.StatusError)(nil); errors.As(err, &se) && se.Status == client.StatusNoQueue {
			// Deleted since the status was read: nothing to move, and a
			// later reading may still list it for a moment.
			fmt.Fprintf(e.stdout, "queue %s no longer exists\n", q.Name)
			gone = append(gone, q.Name)
			continue
		}
		if err != nil {
			worst = max(worst, failure(e, fmt.Sprintf("moving queue %s off n%d", q.Name, from), err))
			failed = append(failed, q.Name)
			continue
		}
		owns[from]--
		owns[to]++
		count++
		printMoved(e.stdout, q.Name, to, m)
	}
	after, err := s.view()
	if err != nil {
		return failure(e, "reading the cluster's status after the moves", err)
	}
	var left []string
	for _, q := range ownedBy(after, from) {
		if !slices.Contains(gone, q.Name) {
			left = append(left, q.Name)
		}
	}
	if len(left) == 0 && len(failed) == 0 {
		fmt.Fprintf(e.stdout, "node n%d owns no queues now: moved %d\n", from, count)
		return exitOK
	}
	summary := fmt.Sprintf("cairn: node n%d still owns %d queue(s)", from, len(left))
	if len(left) > 0 {
		summary += " (" + strings.Join(left, ", ") + ")"
	}
	summary += fmt.Sprintf(": moved %d", count)
	if len(failed) > 0 {
		summary += fmt.Sprintf(", failed to move %d (%s)", len(failed), strings.Join(failed, ", "))
	}
	fmt.Fprintln(e.stderr, summary)
	return max(worst, exitFailed)
}

// view gathers every node's status into the cluster view the dashboard
// draws, and fails only when no node could be read.
func (s *handoffSession) view() (*status.Cluster, error) {
	ctx, cancel := context.WithTimeout(context.Background(), nodeReadWait+time.Second)
	defer cancel()
	nodes := s.cl.Nodes()
	targets := make([]status.Target, len(nodes))
	for i, n := range nodes {
		targets[i] = status.Target{ID: n.ID, HTTPAddr: n.HTTPAddr}
	}
	readings := status.Gather(ctx, targets, status.HTTPFetch(s.auth), nodeReadWait)
	var errs []error
	for _, r := range readings {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("n%d is %s: %w", r.ID, reachState(r.Err), r.Err))
		}
	}
	if len(errs) == len(readings) {
		return nil, fmt.Errorf("no node's status could be read: %w", errors.Join(errs...))
	}
	c, _ := status.Build(0, time.Now(), readings, nil)
	return c, nil
}

// ownedBy lists the queues whose owner, as the metadata names it, is
// node id, by name.
func ownedBy(c *status.Cluster, id uint32) []status.ClusterQueue {
	var out []status.ClusterQueue
	for _, q := range c.Queues {
		if q.Owner == id && q.State != "deleted" {
			out = append(out, q)
		}
	}
	return out
}

// ownerCounts counts the queues each node owns, as the metadata names
// the owners.
func ownerCounts(c *status.Cluster) map[uint32]int {
	owns := map[uint32]int{}
	for _, q := range c.Queues {
		if q.State != "deleted" {
			owns[q.Owner]++
		}
	}
	return owns
}

// pickTarget chooses the replica of q to hand it to from from: of the
// others whose node the view shows serving and whose replica is not
// fenced, the one owning the fewest queues, the lowest ID among equals.
// Spreading by count keeps one drain from piling every queue on one
// node.
func pickTarget(c *status.Cluster, q status.ClusterQueue, from uint32, owns map[uint32]int) (uint32, error) {
	serving := map[uint32]bool{}
	for _, n := range c.Nodes {
		serving[n.ID] = n.State == "serving"
	}
	var best uint32
	var passed []string
	for _, r := range q.Replicas {
		switch {
		case r.Node == from:
			continue
		case !serving[r.Node]:
			passed = append(passed, fmt.Sprintf("n%d is not serving", r.Node))
			continue
		case r.Fenced != "":
			passed = append(passed, fmt.Sprintf("n%d's replica is fenced: %s", r.Node, r.Fenced))
			continue
		}
		if best == 0 || owns[r.Node] < owns[best] || (owns[r.Node] == owns[best] && r.Node < best) {
			best = r.Node
		}
	}
	if best != 0 {
		return best, nil
	}
	if len(passed) == 0 {
		return 0, fmt.Errorf("queue %s has no other replica", q.Name)
	}
	slices.Sort(passed)
	return 0, fmt.Errorf("queue %s has no other replica to take it: %s", q.Name, strings.Join(passed, "; "))
}
