package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live/status"
)

// statsIntervalDefault is how far apart queue stats takes its two
// gatherings: rates come from the difference between them, so it is the
// window the rates average over.
const statsIntervalDefault = time.Second

// queueStatsDoc is what queue stats prints with --json: the queues as
// the dashboard builds them, and every node with whether it was read.
type queueStatsDoc struct {
	At time.Time `json:"at"`
	// IntervalSeconds is the window the rates cover; zero when rates
	// were not measured (--interval 0).
	IntervalSeconds float64               `json:"interval_seconds"`
	Nodes           []status.ClusterNode  `json:"nodes"`
	Queues          []status.ClusterQueue `json:"queues"`
}

func queueStats(args []string, e env) int {
	fs, c := newFlags("queue stats", e)
	interval := fs.Duration("interval", statsIntervalDefault, "time between the two readings rates are computed from; 0 reads once, without rates")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	names, err := parse(fs, args)
	if err != nil || *interval < 0 {
		fmt.Fprintln(e.stderr, "usage: cairn queue stats [NAME...] [--interval D] [--json]")
		return exitUsage
	}
	for _, n := range names {
		if code, ok := checkQueueName(e, n); !ok {
			return code
		}
	}
	auth, err := c.statusAuth()
	if err != nil {
		return failure(e, "loading the TLS files", err)
	}
	ctx, cancel := c.context()
	defer cancel()
	cl, err := c.dial(ctx)
	if err != nil {
		return failure(e, "connecting", err)
	}
	defer cl.Close()
	doc, err := gatherStats(ctx, cl.Nodes(), status.HTTPFetch(auth), *interval)
	if err != nil {
		return failure(e, "reading the nodes", err)
	}
	doc.Queues = onlyQueues(doc.Queues, names)
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return failure(e, "writing JSON", err)
		}
	} else {
		printStats(e.stdout, doc)
	}
	if !slices.ContainsFunc(doc.Nodes, func(n status.ClusterNode) bool { return n.Error == "" }) {
		fmt.Fprintln(e.stderr, "cairn: no node's status could be read")
		return exitFailed
	}
	return exitOK
}

// gatherStats reads every node's status, and again interval later when
// interval is positive, and builds the queues from the last reading as
// the dashboard does, with rates over the interval.
func gatherStats(ctx context.Context, nodes []client.NodeInfo, fetch status.FetchFunc, interval time.Duration) (*queueStatsDoc, error) {
	targets := make([]status.Target, len(nodes))
	for i, n := range nodes {
		targets[i] = status.Target{ID: n.ID, HTTPAddr: n.HTTPAddr}
	}
	at := time.Now()
	cluster, sample := status.Build(0, at, status.Gather(ctx, targets, fetch, nodeReadWait), nil)
	if interval > 0 {
		select {
		case <-time.After(interval):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		at = time.Now()
		cluster, _ = status.Build(0, at, status.Gather(ctx, targets, fetch, nodeReadWait), sample)
	}
	return &queueStatsDoc{At: at, IntervalSeconds: interval.Seconds(), Nodes: cluster.Nodes, Queues: cluster.Queues}, nil
}

// onlyQueues keeps the queues named, or all of them when none is.
func onlyQueues(qs []status.ClusterQueue, names []string) []status.ClusterQueue {
	if len(names) == 0 {
		return qs
	}
	return slices.DeleteFunc(qs, func(q status.ClusterQueue) bool { return !slices.Contains(names, q.Name) })
}

// printStats prints one row per queue. Every cell is one word, so the
// table stays aligned whatever happened; what does not fit a word (a
// node that could not be read, why a replica is fenced, why rates are
// missing) goes in a note under the table.
func printStats(w io.Writer, doc *queueStatsDoc) {
	if len(doc.Queues) == 0 {
		fmt.Fprintln(w, "no queues")
	} else {
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "QUEUE\tSTATE\tOWNER\tEPOCH\tREADY\tLEASED\tDELAYED\tCONSUMERS\tPUBLISH/S\tDELIVER/S\tACK/S\tRETAINED\tCHECKPOINT AGE\tREPLICA LAG")
		for _, q := range doc.Queues {
			fmt.Fprintf(tw, "%s\t%s\tn%d\t%d\t%s\t%s\t%s\t%s\t%s\n", q.Name, statsState(q), q.Owner, q.Epoch,
				depth(q.Depth), statsRates(q.Rates), strings.ReplaceAll(byteSize(q.RetainedBytes), " ", ""),
				checkpointAge(q.CheckpointAgeSeconds), replicaLags(q.Replicas))
		}
		tw.Flush()
	}
	for _, note := range statsNotes(doc) {
		fmt.Fprintln(w, note)
	}
}

// statsState is a queue's state in one word: "active" when its owner
// serves it, "unserved" when the metadata says active but no serving
// owner answered, "fenced" when the reporting replica is, or the
// metadata's state (preparing, recovering).
func statsState(q status.ClusterQueue) string {
	switch {
	case q.Fenced != "":
		return "fenced"
	case q.Serving:
		return "active"
	case q.State == "active":
		return "unserved"
	}
	return q.State
}

// statsRates renders the publish, deliver and ack rates as three
// columns, a dash in each when there are none to show.
func statsRates(r *status.Rates) string {
	if r == nil {
		return "-\t-\t-"
	}
	return fmt.Sprintf("%.1f\t%.1f\t%.1f", r.Publish, r.Deliver, r.Ack)
}

// checkpointAge renders how long ago the checkpoint was made, to the
// second; a dash when there is none.
func checkpointAge(seconds float64) string {
	if seconds <= 0 {
		return "-"
	}
	return (time.Duration(seconds) * time.Second).String()
}

// replicaLags renders each replica and how many records it is behind
// the owner, as "n1:0,n2:3"; "?" when it is not known (no serving owner
// answered).
func replicaLags(rs []status.ReplicaLag) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		lag := "?"
		if r.Lag != nil {
			lag = strconv.FormatUint(*r.Lag, 10)
		}
		parts = append(parts, fmt.Sprintf("n%d:%s", r.Node, lag))
	}
	return strings.Join(parts, ",")
}

// statsNotes lists what the table cannot say in a word: the nodes not
// read and why, the fenced replicas and why, and why rates are missing.
func statsNotes(doc *queueStatsDoc) []string {
	var notes []string
	for _, n := range doc.Nodes {
		if n.Error != "" {
			notes = append(notes, fmt.Sprintf("n%d is %s: %s", n.ID, n.State, n.Error))
		}
	}
	for _, q := range doc.Queues {
		for _, r := range q.Replicas {
			if r.Fenced != "" {
				notes = append(notes, fmt.Sprintf("%s: the replica on n%d is fenced: %s", q.Name, r.Node, r.Fenced))
			}
		}
	}
	if doc.IntervalSeconds == 0 && len(doc.Queues) > 0 {
		notes = append(notes, "rates need two readings: run with --interval D (for example --interval 1s)")
	}
	return notes
}
