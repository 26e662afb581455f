package live

import (
	"context"
	"slices"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/live/status"
	"github.com/prometheus/client_golang/prometheus"
)

// queueCollector reports per-queue series at scrape time, from the same
// view of the node's queues as /status: how much of each queue's log the
// local replica retains, where its checkpoints stand, its traffic, and,
// on the owner, the backlog, consumers and each follower's lag. It also
// reports the node's place in the metadata raft group from that view.
// Since every series is rebuilt at each scrape, a queue that goes takes
// its series with it.
//
// It also exposes the instruments the runtime's event logger derives from
// node events (eventMetrics). The runtime builds its event logger after
// registering this collector, and hands it only the logger, so the
// registry reaches those instruments the way this collector reaches the
// queues: through the runtime, at scrape time.
type queueCollector struct {
	r            *Runtime
	descs        []*prometheus.Desc
	ownerDescs   []*prometheus.Desc
	metaDescs    []*prometheus.Desc
	trafficDescs []*prometheus.Desc
	eventDescs   []*prometheus.Desc
}

// queueGauges names each per-queue gauge, in the order descs holds them.
var queueGauges = []struct {
	name, help string
}{
	{"cairn_queue_retained_bytes", "Bytes of log segments the local replica keeps."},
	{"cairn_queue_log_segments", "Log segment files the local replica keeps."},
	{"cairn_queue_first_index", "First record the local replica's log retains."},
	{"cairn_queue_last_index", "Last record of the local replica's log."},
	{"cairn_queue_checkpoint_index", "Cut of the local replica's newest checkpoint (0: none)."},
	{"cairn_queue_checkpoint_bytes", "Size of the state the local replica's newest checkpoint holds."},
	{"cairn_queue_certified_index", "Newest checkpoint cut the metadata certified (0: none)."},
	{"cairn_queue_checkpoint_age_seconds", "How long ago the local replica made its newest checkpoint (0: none or unknown)."},
	{"cairn_queue_epoch", "The queue's epoch in the metadata this node applied."},
}

// The serving owner alone knows a queue's backlog and consumers, and
// what each other replica acknowledged; the other replicas report none
// of these.
var (
	messagesDesc = prometheus.NewDesc("cairn_queue_messages",
		"Unsettled messages by state: ready (waiting for a subscriber), leased (delivered, not yet settled), delayed (waiting for their delay), dead_lettering (past the delivery limit, moving to the dead-letter queue). Serving owner only.",
		[]string{"queue", "state"}, nil)
	consumersDesc = prometheus.NewDesc("cairn_queue_consumers",
		"Subscriptions the owner serves (serving owner only).", []string{"queue"}, nil)
	heldBackDesc = prometheus.NewDesc("cairn_queue_consumers_held_back",
		"Subscriptions the owner holds back because their leases ran out with no word from their consumers (serving owner only).",
		[]string{"queue"}, nil)
	replicaLagDesc = prometheus.NewDesc("cairn_queue_replica_lag_records",
		"Records of the owner's log a replica has not acknowledged durable (owner or recovering candidate only).",
		[]string{"queue", "replica"}, nil)
)

// The node's member of the metadata raft group.
var (
	metaRoleDesc = prometheus.NewDesc("cairn_meta_role",
		"1 for this node's current raft role in the metadata group, 0 for the others.", []string{"role"}, nil)
	metaTermDesc    = prometheus.NewDesc("cairn_meta_term", "The metadata group's raft term as this node knows it.", nil, nil)
	metaCommitDesc  = prometheus.NewDesc("cairn_meta_commit_index", "Last committed index of this node's metadata raft log.", nil, nil)
	metaAppliedDesc = prometheus.NewDesc("cairn_meta_applied_index",
		"Last metadata raft log index this node applied.", nil, nil)
)

// metaRoles are the values of cairn_meta_role's label, every one
// reported at every scrape so that a role change shows as a flip rather
// than a series appearing.
var metaRoles = []string{"leader", "follower", "candidate", "pre-candidate"}

// depthStates names the states of cairn_queue_messages, in the order
// collectQueue lists them.
var depthStates = []string{"ready", "leased", "delayed", "dead_lettering"}

// trafficCounters count each queue's client traffic through this node
// since its process started (trafficCounts); rate() over them gives the
// dashboard's rates.
var trafficCounters = []struct {
	name, help string
}{
	{"cairn_queue_publish_requests_total", "Publish requests for the queue this node handed to its node."},
	{"cairn_queue_deliveries_total", "Deliveries of the queue's messages this node sent."},
	{"cairn_queue_acks_total", "Acks of the queue's messages this node received."},
	{"cairn_queue_nacks_total", "Nacks of the queue's messages this node received."},
}

// queueScrapeWait bounds how long a scrape waits for a busy node.
const queueScrapeWait = time.Second

// newQueueCollector builds the scrape-time collector of r's queues and
// event instruments.
func newQueueCollector(r *Runtime) *queueCollector {
	c := &queueCollector{r: r, eventDescs: eventDescs(),
		ownerDescs: []*prometheus.Desc{messagesDesc, consumersDesc, heldBackDesc, replicaLagDesc},
		metaDescs:  []*prometheus.Desc{metaRoleDesc, metaTermDesc, metaCommitDesc, metaAppliedDesc}}
	for _, g := range queueGauges {
		c.descs = append(c.descs, prometheus.NewDesc(g.name, g.help, []string{"queue"}, nil))
	}
	for _, g := range trafficCounters {
		c.trafficDescs = append(c.trafficDescs, prometheus.NewDesc(g.name, g.help, []string{"queue"}, nil))
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range slices.Concat(c.descs, c.ownerDescs, c.metaDescs, c.trafficDescs, c.eventDescs) {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A node too busy to answer in
// time contributes no queue or metadata series to this scrape; the event
// instruments are read without the node's goroutine, so they are always
// reported.
func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	if l := c.r.events; l != nil {
		l.metrics.Collect(ch)
	}
	ctx, cancel := context.WithTimeout(context.Background(), queueScrapeWait)
	defer cancel()
	s := c.r.status(ctx)
	if s.MetaRole != "" {
		collectMeta(ch, s)
	}
	for _, q := range s.Queues {
		if q.Role != "none" {
			c.collectQueue(ch, q)
		}
	}
}

// collectMeta reports the node's place in the metadata raft group.
func collectMeta(ch chan<- prometheus.Metric, s status.Node) {
	for _, role := range metaRoles {
		v := 0.0
		if role == s.MetaRole {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(metaRoleDesc, prometheus.GaugeValue, v, role)
	}
	ch <- prometheus.MustNewConstMetric(metaTermDesc, prometheus.GaugeValue, float64(s.MetaTerm))
	ch <- prometheus.MustNewConstMetric(metaCommitDesc, prometheus.GaugeValue, float64(s.MetaCommit))
	ch <- prometheus.MustNewConstMetric(metaAppliedDesc, prometheus.GaugeValue, float64(s.MetaApplied))
}

// collectQueue reports the gauges of one replica the node holds. Every
// series carries the queue's name and comes from this scrape's status
// alone, so a deleted queue's series end with the queue.
func (c *queueCollector) collectQueue(ch chan<- prometheus.Metric, q status.Queue) {
	values := []float64{float64(q.RetainedBytes), float64(q.Segments), float64(q.FirstIndex), float64(q.LastIndex),
		float64(q.CheckpointIndex), float64(q.CheckpointBytes), float64(q.CertifiedIndex), q.CheckpointAgeSeconds,
		float64(q.Epoch)}
	for i, v := range values {
		ch <- prometheus.MustNewConstMetric(c.descs[i], prometheus.GaugeValue, v, q.Name)
	}
	if d := q.Depth; d != nil {
		for i, v := range []int{d.Ready, d.Leased, d.Delayed, d.DeadLettering} {
			ch <- prometheus.MustNewConstMetric(messagesDesc, prometheus.GaugeValue, float64(v), q.Name, depthStates[i])
		}
		ch <- prometheus.MustNewConstMetric(consumersDesc, prometheus.GaugeValue, float64(d.Consumers), q.Name)
		ch <- prometheus.MustNewConstMetric(heldBackDesc, prometheus.GaugeValue, float64(d.HeldBack), q.Name)
	}
	for _, f := range q.Followers {
		ch <- prometheus.MustNewConstMetric(replicaLagDesc, prometheus.GaugeValue, float64(f.Lag(q.LastIndex)),
			q.Name, event.NodeName(f.Node))
	}
	if tr := q.Traffic; tr != nil {
		for i, v := range []uint64{tr.Published, tr.Delivered, tr.Acked, tr.Nacked} {
			ch <- prometheus.MustNewConstMetric(c.trafficDescs[i], prometheus.CounterValue, float64(v), q.Name)
		}
	}
}
