package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live/status"
)

// nodeView is one node's status document, or why it could not be read.
type nodeView struct {
	info   client.NodeInfo
	status *status.Node
	err    error
}

// errNoHTTPAddr stands for a node whose status cannot be asked for.
var errNoHTTPAddr = status.ErrNoHTTPAddr

// nodeReadWait bounds the wait for each node's status: a stopped or cut
// off node costs the command this long, not its whole --timeout, and
// the other nodes' rows are printed all the same.
const nodeReadWait = 5 * time.Second

// gather reads every node's /status, concurrently, proving itself with
// auth.
func gather(ctx context.Context, cl *client.Client, auth status.Auth) []nodeView {
	return gatherNodes(ctx, cl.Nodes(), auth, nodeReadWait)
}

// gatherNodes reads the status of each of nodes at once, each read
// bounded by wait.
func gatherNodes(ctx context.Context, nodes []client.NodeInfo, auth status.Auth, wait time.Duration) []nodeView {
	targets := make([]status.Target, len(nodes))
	for i, n := range nodes {
		targets[i] = status.Target{ID: n.ID, HTTPAddr: n.HTTPAddr}
	}
	readings := status.Gather(ctx, targets, status.HTTPFetch(auth), wait)
	views := make([]nodeView, len(nodes))
	for i, r := range readings {
		views[i] = nodeView{info: nodes[i], status: r.Status, err: r.Err}
	}
	return views
}

// connectAndGather dials the cluster and reads every node's status.
func connectAndGather(args []string, name string, e env) ([]nodeView, int) {
	fs, c := newFlags(name, e)
	if pos, err := parse(fs, args); err != nil || len(pos) != 0 {
		fmt.Fprintf(e.stderr, "usage: cairn %s\n", name)
		return nil, exitUsage
	}
	auth, err := c.statusAuth()
	if err != nil {
		return nil, failure(e, "loading the TLS files", err)
	}
	ctx, cancel := c.context()
	defer cancel()
	cl, err := c.dial(ctx)
	if err != nil {
		return nil, failure(e, "connecting", err)
	}
	defer cl.Close()
	return gather(ctx, cl, auth), exitOK
}

func queueList(args []string, e env) int {
	views, code := connectAndGather(args, "queue list", e)
	if views == nil {
		return code
	}
	printQueues(e.stdout, views)
	// The queues come from the nodes that answered; say which did not,
	// so an empty or partial list is not mistaken for the whole truth.
	read := 0
	for _, v := range views {
		if v.err != nil {
			fmt.Fprintf(e.stderr, "cairn: n%d is %s: %v\n", v.info.ID, reachState(v.err), v.err)
		} else {
			read++
		}
	}
	if read == 0 {
		fmt.Fprintln(e.stderr, "cairn: no node's status could be read")
		return exitFailed
	}
	return exitOK
}

func clusterStatus(args []string, e env) int {
	views, code := connectAndGather(args, "cluster status", e)
	if views == nil {
		return code
	}
	printNodes(e.stdout, views)
	fmt.Fprintln(e.stdout)
	printQueues(e.stdout, views)
	return exitOK
}

func printNodes(w io.Writer, views []nodeView) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tCLIENT\tHTTP\tSTATE\tPEERS UP\tCLIENTS")
	var leader uint32
	var term uint64
	var notes []string
	for _, v := range views {
		if v.err != nil {
			// The table keeps one word per state; why the node could not
			// be read goes in a note under it, where a long error fits.
			state := reachState(v.err)
			fmt.Fprintf(tw, "n%d\t%s\t%s\t%s\t-\t-\n", v.info.ID, v.info.Addr, v.info.HTTPAddr, state)
			notes = append(notes, fmt.Sprintf("n%d is %s: %v", v.info.ID, state, v.err))
			continue
		}
		s := v.status
		up := 0
		for _, p := range s.Peers {
			if p.Connected {
				up++
			}
		}
		fmt.Fprintf(tw, "n%d\t%s\t%s\t%s\t%d/%d\t%d\n", s.ID, v.info.Addr, v.info.HTTPAddr, nodeState(s), up, len(s.Peers), s.Clients)
		// Every node names the leader it knows; the one of the highest
		// term is the freshest news.
		if s.MetaLeader != 0 && s.MetaTerm > term {
			leader, term = s.MetaLeader, s.MetaTerm
		}
	}
	tw.Flush()
	if leader != 0 {
		fmt.Fprintf(w, "metadata leader: n%d (term %d)\n", leader, term)
	} else {
		fmt.Fprintln(w, "metadata leader: none known")
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
}

// reachState names in one word why a node's status could not be read
// (see status.ReachState): down, unreachable, unknown or error.
func reachState(err error) string { return status.ReachState(err) }

func nodeState(s *status.Node) string {
	switch {
	case s.Draining:
		return "draining"
	case s.Started:
		return "serving"
	}
	return "starting"
}

// queueRow is one queue as the cluster reports it: the serving owner's
// view when it answered, otherwise the view with the newest metadata.
type queueRow struct {
	q         status.Queue
	fromOwner bool
}

func printQueues(w io.Writer, views []nodeView) {
	rows := map[string]*queueRow{}
	for _, v := range views {
		if v.status == nil {
			continue
		}
		for _, q := range v.status.Queues {
			r := rows[q.Name]
			owner := q.Role == "owner"
			switch {
			case r == nil, owner && !r.fromOwner, !r.fromOwner && q.Epoch > r.q.Epoch:
				rows[q.Name] = &queueRow{q: q, fromOwner: owner}
			}
		}
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, "no queues")
		return
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tOWNER\tEPOCH\tREPLICAS\tREADY\tLEASED\tDELAYED\tCONSUMERS\tRETAINED\tLAST INDEX\tCOMMIT\tCERTIFIED\tSTATE")
	for _, name := range slices.Sorted(maps.Keys(rows)) {
		r := rows[name]
		fmt.Fprintf(tw, "%s\tn%d\t%d\t%s\t%s\t%s\t%d\t%s\t%d\t%s\n", name, r.q.Owner, r.q.Epoch, nodeList(r.q.Replicas),
			depth(r.q.Depth), retained(r.q), r.q.LastIndex, commit(r), r.q.CertifiedIndex, queueState(r))
	}
	tw.Flush()
}

// depth renders the owner's counts of ready, leased and delayed messages
// and its consumers as four columns; "-" in each when no serving owner
// answered, since no other replica knows them.
func depth(d *status.Depth) string {
	if d == nil {
		return "-\t-\t-\t-"
	}
	return fmt.Sprintf("%d\t%d\t%d\t%d", d.Ready, d.Leased, d.Delayed, d.Consumers)
}

// retained describes what the reporting replica's log keeps: its size
// and the index range.
func retained(q status.Queue) string {
	if q.Segments == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%d..)", byteSize(q.RetainedBytes), q.FirstIndex)
}

// byteSize renders a byte count in binary units.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func commit(r *queueRow) string {
	if !r.fromOwner {
		return "-"
	}
	return fmt.Sprint(r.q.Commit)
}

func queueState(r *queueRow) string {
	switch {
	case r.q.Fenced != "":
		return "fenced: " + r.q.Fenced
	case r.fromOwner:
		return "active"
	case r.q.State == "recovering":
		return "recovering"
	case r.q.State == "preparing":
		return "preparing"
	}
	return r.q.State + ", owner not serving"
}

func nodeList(ids []uint32) string {
	var parts []string
	for _, id := range ids {
		parts = append(parts, fmt.Sprintf("n%d", id))
	}
	return strings.Join(parts, ",")
}
